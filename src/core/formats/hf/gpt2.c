/*
 * gpt2.c — GPT-2 (GPT2LMHeadModel) for the Hugging Face import: its
 * config.json keys, its tfm_config (tfm's pre-LN decoder exactly) and its
 * tensors:
 *   wte.weight (V, d)               -> tok_emb
 *   wpe.weight (n_positions, d)     -> pos_emb
 *   h.N.ln_1.weight / bias (d)      -> dec.N.ln1.g / b
 *   h.N.attn.c_attn.weight (d, 3d)  -> dec.N.attn.qkv.w   (Conv1D: (in, out), [Q|K|V])
 *   h.N.attn.c_attn.bias (3d)       -> dec.N.attn.qkv.b
 *   h.N.attn.c_proj.weight (d, d)   -> dec.N.attn.out.w
 *   h.N.ln_2.*                      -> dec.N.ln2.*
 *   h.N.mlp.c_fc.weight (d, f)      -> dec.N.ff1.w, .bias -> ff1.b
 *   h.N.mlp.c_proj.weight (f, d)    -> dec.N.ff2.w, .bias -> ff2.b
 *   ln_f.weight / bias              -> dec.ln_f.g / b
 *   lm_head.weight (V, d)           tied: absent, or equal to wte.weight;
 *                                   untied: -> out.w, transposed
 *   h.N.attn.bias, h.N.attn.masked_bias   buffers of older checkpoints
 *                                   (the causal mask): shape checked, ignored
 * Every name may carry the "transformer." prefix (GPT2LMHeadModel saves
 * it; checkpoints converted from GPT2Model do not).
 */
#include <stdio.h>

#include "hf_family.h"

static const hf_keys gpt2_keys = {"n_embd", "n_head", "n_layer", "n_positions", "n_inner",
"layer_norm_epsilon"};

static void
gpt2_config(tfm_config *cfg, const tfm_hf_params *p)
{
	hf_base_config(cfg, p, TFM_TASK_LM);
	cfg->d_ff = p->d_ff > 0 ? p->d_ff : 4 * p->d_model;
	cfg->norm = TFM_NORM_PRE;
	cfg->positions = TFM_POS_LEARNED;
	cfg->activation = TFM_ACT_GELU_TANH;
	cfg->pad_id = -1;			/* GPT-2 has no padding token */
}

static void
gpt2_entries(hf_builder *b, const tfm_config *c)
{
	char		n[96];
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len;

	hf_add(b, "wte.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	hf_add(b, "wpe.weight", true, TFM_HF_COPY, "pos_emb", 2, P, d, 0, 0);
	for (int i = 0; i < c->dec_layers; i++)
	{
#define L(hf, tf, nd, a, bb) hf_add_layer(b, "h", i, hf, "dec", tf, TFM_HF_COPY, nd, a, bb, 0)
		L("ln_1.weight", "ln1.g", 1, d, 0);
		L("ln_1.bias", "ln1.b", 1, d, 0);
		L("attn.c_attn.weight", "attn.qkv.w", 2, d, 3 * d);
		L("attn.c_attn.bias", "attn.qkv.b", 1, 3 * d, 0);
		L("attn.c_proj.weight", "attn.out.w", 2, d, d);
		L("attn.c_proj.bias", "attn.out.b", 1, d, 0);
		L("ln_2.weight", "ln2.g", 1, d, 0);
		L("ln_2.bias", "ln2.b", 1, d, 0);
		L("mlp.c_fc.weight", "ff1.w", 2, d, f);
		L("mlp.c_fc.bias", "ff1.b", 1, f, 0);
		L("mlp.c_proj.weight", "ff2.w", 2, f, d);
		L("mlp.c_proj.bias", "ff2.b", 1, d, 0);
#undef L
		snprintf(n, sizeof(n), "h.%d.attn.bias", i);
		hf_add(b, n, true, TFM_HF_BUFFER, "", 4, 1, 1, P, P);
		snprintf(n, sizeof(n), "h.%d.attn.masked_bias", i);
		hf_add(b, n, true, TFM_HF_BUFFER, "", 0, 0, 0, 0, 0);
	}
	hf_add(b, "ln_f.weight", true, TFM_HF_COPY, "dec.ln_f.g", 1, d, 0, 0, 0);
	hf_add(b, "ln_f.bias", true, TFM_HF_COPY, "dec.ln_f.b", 1, d, 0, 0, 0);
	hf_add_lm_head(b, c);
}

const hf_family hf_gpt2 = {&gpt2_keys, gpt2_config, gpt2_entries};
