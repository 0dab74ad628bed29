/*
 * gguf_gemma3.c — a gemma3 GGUF file (llama.cpp's convert_hf_to_gguf.py of
 * a Gemma3ForCausalLM: Gemma 3 270M, 1B, 4B, 12B, 27B, the text part)
 * read as the Hugging Face checkpoint.  The llama keys (gguf_model.c) under
 * gemma3.*, the head's width attention.key_length (value_length the same)
 * as for qwen3, and what llama.cpp's gemma3 reads or fixes itself, where
 * the file has no key for it:
 *   gemma3.attention.sliding_window   sliding_window (required, as llama.cpp's)
 *   the local layers                  i with (i + 1) % 6 != 0 (llama.cpp's
 *                                     fixed pattern; a file may give
 *                                     gemma3.attention.sliding_window_pattern)
 *   the local layers' rotary base     10000 (gemma3.rope.freq_base_swa if given)
 *   gemma3.rope.freq_base             rope_theta of the global layers (1e6
 *                                     when absent, Gemma3TextConfig's)
 *   gemma3.rope.scaling.type linear,  rope_scaling {"rope_type": "linear"}
 *   gemma3.rope.scaling.factor        of the global layers (4B and larger)
 *   the attention's scale             query_pre_attn_scalar^-½ with llama.cpp's
 *                                     query_pre_attn_scalar: the head's width,
 *                                     but embedding_length / head_count for
 *                                     62 layers (27B), as the published configs
 *   gemma3.final_logit_softcapping    0 (none) when absent, as published
 * Gemma's embedding scale √d and GeGLU are the architecture's.  Tensors:
 * Gemma 2's four norms a layer and Qwen3's q/k norms under llama.cpp's
 * names, rows as Hugging Face's (Gemma rotates NeoX-style: nothing
 * permuted), no output.weight (the head is tied).  The converter stores
 * every norm weight plus 1 (Gemma's RMSNorm multiplies by 1 + w, ggml's by
 * w): tfm_gguf_gemma3_norms takes the 1 off again, giving Hugging Face's w.
 */
#include <math.h>
#include <string.h>

#include "gguf_internal.h"
#include "tfm/limits.h"
#include "tfm/model.h"

const char *const tfm_gguf_gemma3_top[][2] = {
	{"token_embd.weight", "model.embed_tokens.weight"},
	{"output_norm.weight", "model.norm.weight"},
	{"output.weight", "lm_head.weight"},
	{NULL, NULL}
};

const char *const tfm_gguf_gemma3_blk[][2] = {
	{"attn_norm.weight", "input_layernorm.weight"},
	{"attn_q.weight", "self_attn.q_proj.weight"},
	{"attn_k.weight", "self_attn.k_proj.weight"},
	{"attn_v.weight", "self_attn.v_proj.weight"},
	{"attn_q_norm.weight", "self_attn.q_norm.weight"},
	{"attn_k_norm.weight", "self_attn.k_norm.weight"},
	{"attn_output.weight", "self_attn.o_proj.weight"},
	{"post_attention_norm.weight", "post_attention_layernorm.weight"},
	{"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
	{"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
	{"ffn_gate.weight", "mlp.gate_proj.weight"},
	{"ffn_up.weight", "mlp.up_proj.weight"},
	{"ffn_down.weight", "mlp.down_proj.weight"},
	{NULL, NULL}
};

int
tfm_gguf_gemma3_params(tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st)
{
	const char *s;
	size_t		slen;
	int			rc,
				window = 0,
				pattern = 6;
	double		local = 10000.0,
				factor = 1.0,
				cap = 0.0,
				scalar;

	p->gemma = p->gemma2 = true;
	p->qk_norm = true;
	p->gguf_neox = true;		/* the converter permutes q and k only for llama */
	if ((rc = tfm_gguf_get_range(&window, f, "gemma3.attention.sliding_window", true, 1, 1 << 30, st)) != 0 ||
		(rc = tfm_gguf_get_range(&pattern, f, "gemma3.attention.sliding_window_pattern", false, 1,
								 TFM_LAYERS_MAX, st)) != 0 ||
		(rc = tfm_gguf_get_float(&local, f, "gemma3.rope.freq_base_swa", false, st)) != 0 ||
		(rc = tfm_gguf_get_float(&cap, f, "gemma3.final_logit_softcapping", false, st)) != 0)
		return rc;
	if (tfm_gguf_find(f, "gemma3.attn_logit_softcapping"))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "gemma3.attn_logit_softcapping is not supported (Gemma 3 has none)");
	if (!(cap == 0.0 || (cap >= 1.0 && cap <= 1e6)))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "gemma3.final_logit_softcapping %g is not 0 or between 1 and 1000000",
							  cap);
	p->final_softcap = (float) cap;
	if (!(local >= TFM_ROPE_THETA_MIN && local <= TFM_ROPE_THETA_MAX))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "gemma3.rope.freq_base_swa %g is not between %g and %g",
							  local, (double) TFM_ROPE_THETA_MIN, (double) TFM_ROPE_THETA_MAX);
	if (pattern > 1)
	{
		p->window_pattern = pattern;
		p->attn_window = window < p->max_len ? window : p->max_len;
		p->rope_local_theta = (float) local;
	}
	/* rope scaling: linear (the global layers'), or none */
	if (tfm_gguf_get_str(&s, &slen, f, "gemma3.rope.scaling.type", false, NULL) == TFM_OK &&
		tfm_gguf_find(f, "gemma3.rope.scaling.type") && !(slen == 4 && memcmp(s, "none", 4) == 0))
	{
		if (!(slen == 6 && memcmp(s, "linear", 6) == 0))
			return tfm_status_set(st, TFM_EUNSUPPORTED, "gemma3 rope scaling \"%.*s\" is not supported (tfm reads linear and none)",
								  (int) tfm_utf8_cut(s, slen < 32 ? slen : 32), s);
		if ((rc = tfm_gguf_get_float(&factor, f, "gemma3.rope.scaling.factor", true, st)) != 0)
			return rc;
		if (!(factor >= 1.0 && factor <= TFM_ROPE_FACTOR_MAX))
			return tfm_status_set(st, TFM_EUNSUPPORTED, "gemma3.rope.scaling.factor %g is not between 1 and %d",
								  factor, TFM_ROPE_FACTOR_MAX);
		if (factor != 1.0)
		{
			p->rope_type = TFM_ROPE_LINEAR;
			p->rope_factor = (float) factor;
		}
	}
	/* llama.cpp's query_pre_attn_scalar (its f_attention_scale) */
	scalar = p->layers == 62 ? (double) (p->d_model / p->heads) : (double) p->head_dim;
	if (!(scalar >= 1.0))
		return tfm_status_set(st, TFM_EBADFILE, "gemma3: no attention scale from a head of width %g", scalar);
	p->attn_scale = (float) pow(scalar, -0.5);
	return TFM_OK;
}

bool
tfm_gguf_gemma3_norm(const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	static const char sfx[] = "norm.weight";

	return p->gemma && t->name_len >= sizeof(sfx) - 1 &&
		strcmp(t->name + t->name_len - (sizeof(sfx) - 1), sfx) == 0;
}

void
tfm_gguf_gemma3_norms(float *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		v[i] -= 1.0f;
}
