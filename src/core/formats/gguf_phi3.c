/*
 * gguf_phi3.c — a phi3 GGUF file (llama.cpp's convert_hf_to_gguf.py of a
 * Phi3ForCausalLM: Phi-3, Phi-3.5-mini, Phi-4-mini) read as the Hugging
 * Face checkpoint.  The llama keys (gguf_model.c) under phi3.*, and:
 *   phi3.rope.dimension_count       int(partial_rotary_factor · hidden) // heads
 *   phi3.attention.sliding_window   sliding_window (0: none)
 *   rope_factors_long.weight,       longrope's long_factor and short_factor,
 *   rope_factors_short.weight       F32, one per rotated pair (their values
 *                                   read by the caller: tfm_gguf_longrope_set)
 *   phi3.rope.scaling.original_context_length  original_max_position_embeddings
 *   phi3.rope.scaling.attn_factor   the attention factor √(1 + ln s / ln orig)
 * Tensors: attn_qkv (qkv_proj) and ffn_up (gate_up_proj) fused, their rows
 * as Hugging Face's (Phi-3 rotates NeoX-style: nothing permuted), no
 * output.weight when the head is tied (Phi-4-mini).
 */
#include <math.h>
#include <string.h>

#include "gguf_internal.h"
#include "tfm/gguf_quants.h"
#include "tfm/limits.h"

const char *const tfm_gguf_phi3_top[][2] = {
	{"token_embd.weight", "model.embed_tokens.weight"},
	{"output_norm.weight", "model.norm.weight"},
	{"output.weight", "lm_head.weight"},
	{"rope_factors_long.weight", "rope_factors_long.weight"},
	{"rope_factors_short.weight", "rope_factors_short.weight"},
	{NULL, NULL}
};

const char *const tfm_gguf_phi3_blk[][2] = {
	{"attn_norm.weight", "input_layernorm.weight"},
	{"attn_qkv.weight", "self_attn.qkv_proj.weight"},
	{"attn_output.weight", "self_attn.o_proj.weight"},
	{"ffn_norm.weight", "post_attention_layernorm.weight"},
	{"ffn_up.weight", "mlp.gate_up_proj.weight"},
	{"ffn_down.weight", "mlp.down_proj.weight"},
	{NULL, NULL}
};

/* a rope factors tensor: F32, half the rotated width */
static int
factors_tensor(const tfm_gguf_file *f, const char *name, int half, tfm_status *st)
{
	const tfm_gguf_tensor *t = tfm_gguf_find_tensor(f, name);

	if (!t)
		return tfm_status_set(st, TFM_EBADFILE, "%s is missing (a phi3 file with one of the rope factor tensors has both)",
							  name);
	if (t->type != TFM_GGML_F32 || t->ndim != 1 || t->ne[0] != (uint64_t) half)
		return tfm_status_set(st, TFM_EBADFILE, "%s must be F32 and hold %d values, one per rotated pair of a head",
							  name, half);
	return TFM_OK;
}

int
tfm_gguf_phi3_params(tfm_hf_params *p, const tfm_gguf_file *f, int rope_dims, int64_t ctx,
					 tfm_status *st)
{
	int			hd,
				window = 0,
				rc;
	double		attn = 0.0;

	p->arch = TFM_HF_PHI3;
	p->gguf_neox = true;
	if (p->heads < 1 || p->d_model % p->heads != 0)
		return tfm_status_set(st, TFM_EBADFILE, "phi3.attention.head_count must divide phi3.embedding_length");
	hd = p->d_model / p->heads;
	if (rope_dims == 0)
		rope_dims = hd;
	if (rope_dims < 2 || rope_dims > hd || rope_dims % 2 != 0)
		return tfm_status_set(st, TFM_EUNSUPPORTED, "phi3.rope.dimension_count %d is not an even number up to the head size %d",
							  rope_dims, hd);
	p->rope_dim = rope_dims;
	if ((rc = tfm_gguf_get_range(&window, f, "phi3.attention.sliding_window", false, 0, 1 << 30, st)) != 0)
		return rc;
	if (window > 0 && window < p->max_len)
		p->attn_window = window;
	if (!tfm_gguf_find_tensor(f, "rope_factors_long.weight") &&
		!tfm_gguf_find_tensor(f, "rope_factors_short.weight"))
		return TFM_OK;			/* Phi-3 4k: unscaled */
	if (rope_dims / 2 > TFM_ROPE_FACTORS_MAX)
		return tfm_status_set(st, TFM_EUNSUPPORTED, "longrope over %d rotated values is more than tfm's %d pairs",
							  rope_dims, TFM_ROPE_FACTORS_MAX);
	if ((rc = factors_tensor(f, "rope_factors_long.weight", rope_dims / 2, st)) != 0 ||
		(rc = factors_tensor(f, "rope_factors_short.weight", rope_dims / 2, st)) != 0)
		return rc;
	p->rope_type = TFM_ROPE_LONGROPE;
	p->rope_n_short = p->rope_n_long = rope_dims / 2;
	p->rope_orig_max = 0;
	if ((rc = tfm_gguf_get_range(&p->rope_orig_max, f, "phi3.rope.scaling.original_context_length", true,
								 2, TFM_ROPE_ORIG_MAX, st)) != 0 ||
		(rc = tfm_gguf_get_float(&attn, f, "phi3.rope.scaling.attn_factor", false, st)) != 0)
		return rc;
	if (!tfm_gguf_find(f, "phi3.rope.scaling.attn_factor"))
	{
		/* the converter's (and transformers') default from the context's ratio */
		double		s = (double) ctx / p->rope_orig_max;

		attn = s > 1.0 ? sqrt(1.0 + log(s) / log((double) p->rope_orig_max)) : 1.0;
	}
	if (!(attn >= 1.0 && attn <= TFM_ROPE_ATTN_FACTOR_MAX))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "phi3.rope.scaling.attn_factor %g is not between 1 and %d",
							  attn, TFM_ROPE_ATTN_FACTOR_MAX);
	p->rope_attn_factor = (float) attn;
	return TFM_OK;
}

int
tfm_gguf_longrope_set(tfm_hf_params *p, const float *lf, const float *sf, int n, tfm_status *st)
{
	if (p->rope_type != TFM_ROPE_LONGROPE || n != p->rope_n_long || n > TFM_ROPE_FACTORS_MAX)
		return tfm_status_set(st, TFM_EBADFILE, "rope factors: %d values, not %d", n, p->rope_n_long);
	for (int i = 0; i < n; i++)
		if (!(lf[i] > 0.0f && lf[i] <= (float) TFM_ROPE_FACTOR_MAX) ||
			!(sf[i] > 0.0f && sf[i] <= (float) TFM_ROPE_FACTOR_MAX))
			return tfm_status_set(st, TFM_EBADFILE, "rope factor %d (long %g, short %g) is not greater than 0 and at most %d",
								  i, (double) lf[i], (double) sf[i], TFM_ROPE_FACTOR_MAX);
	memcpy(p->rope_long, lf, sizeof(float) * n);
	memcpy(p->rope_short, sf, sizeof(float) * n);
	return TFM_OK;
}
