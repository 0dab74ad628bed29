/*
 * gguf_gpt2.c — a gpt2 GGUF file (llama.cpp's convert_hf_to_gguf.py of a
 * GPT2LMHeadModel) read as the Hugging Face checkpoint: gpt2.* metadata as
 * a config.json's n_embd, n_layer, n_head, n_positions, n_inner and
 * layer_norm_epsilon, and its tensor names.  (The converter stores the
 * Conv1D weights transposed, as (out, in): gguf_model.c transposes them
 * back.)
 */
#include <string.h>

#include "gguf_internal.h"
#include "tfm/limits.h"

const char *const tfm_gguf_gpt2_top[][2] = {
	{"token_embd.weight", "transformer.wte.weight"},
	{"position_embd.weight", "transformer.wpe.weight"},
	{"output_norm.weight", "transformer.ln_f.weight"},
	{"output_norm.bias", "transformer.ln_f.bias"},
	{"output.weight", "lm_head.weight"},
	{NULL, NULL}
};

const char *const tfm_gguf_gpt2_blk[][2] = {
	{"attn_norm.weight", "ln_1.weight"},
	{"attn_norm.bias", "ln_1.bias"},
	{"attn_qkv.weight", "attn.c_attn.weight"},
	{"attn_qkv.bias", "attn.c_attn.bias"},
	{"attn_output.weight", "attn.c_proj.weight"},
	{"attn_output.bias", "attn.c_proj.bias"},
	{"ffn_norm.weight", "ln_2.weight"},
	{"ffn_norm.bias", "ln_2.bias"},
	{"ffn_up.weight", "mlp.c_fc.weight"},
	{"ffn_up.bias", "mlp.c_fc.bias"},
	{"ffn_down.weight", "mlp.c_proj.weight"},
	{"ffn_down.bias", "mlp.c_proj.bias"},
	{NULL, NULL}
};

int
tfm_gguf_gpt2_params(tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st)
{
	const int	big = 1 << 30;
	const tfm_gguf_tensor *emb = tfm_gguf_find_tensor(f, "token_embd.weight");
	double		eps;
	int			rc;

	p->arch = TFM_HF_GPT2;
	if ((rc = tfm_gguf_get_range(&p->d_model, f, "gpt2.embedding_length", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->layers, f, "gpt2.block_count", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->d_ff, f, "gpt2.feed_forward_length", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->heads, f, "gpt2.attention.head_count", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->max_len, f, "gpt2.context_length", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_float(&eps, f, "gpt2.attention.layer_norm_epsilon", true, st)) != 0)
		return rc;
	p->ln_eps = (float) eps;
	if (!emb || emb->ndim != 2 || emb->ne[0] != (uint64_t) p->d_model || emb->ne[1] > (uint64_t) big)
		return tfm_status_set(st, TFM_EBADFILE, "token_embd.weight is missing or not (%d, vocab)",
							  p->d_model);
	p->vocab = (int) emb->ne[1];
	/* llama.cpp's converter writes the tied head again as output.weight: then untied */
	p->tie = tfm_gguf_find_tensor(f, "output.weight") == NULL;
	return TFM_OK;
}
