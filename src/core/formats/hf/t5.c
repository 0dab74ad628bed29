/*
 * t5.c — T5 (T5ForConditionalGeneration: T5, T5 v1.1, Flan-T5, mT5) for the
 * Hugging Face import: the config.json keys, the tfm_config (an
 * encoder-decoder of tfm's T5 blocks, model/t5_block.c) and the tensors;
 * no prefix; S is encoder or decoder, s enc or dec; qd = num_heads · d_kv:
 *   shared.weight (V, d)                                -> tok_emb
 *   encoder.embed_tokens.weight, decoder.embed_tokens.weight  the same table
 *                                                          (when saved): shape checked
 *   S.block.0.layer.0.SelfAttention.relative_attention_bias.weight (buckets, h)
 *                                                       -> s.rel_bias
 *   S.block.N.layer.0.SelfAttention.q / k / v.weight (qd, d) -> s.N.attn.qkv.w
 *                                                          columns [0, qd), [qd, 2qd), [2qd, 3qd)
 *   S.block.N.layer.0.SelfAttention.o.weight (d, qd)    -> s.N.attn.out.w, transposed
 *   S.block.N.layer.0.layer_norm.weight                 -> s.N.ln1.g
 *   decoder.block.N.layer.1.EncDecAttention.q.weight    -> dec.N.cross.q.w, transposed
 *   decoder.block.N.layer.1.EncDecAttention.k / v.weight -> dec.N.cross.kv.w columns
 *                                                          [0, qd), [qd, 2qd)
 *   decoder.block.N.layer.1.EncDecAttention.o.weight    -> dec.N.cross.out.w, transposed
 *   decoder.block.N.layer.1.layer_norm.weight           -> dec.N.lnx.g
 *   S.block.N.layer.F.DenseReluDense.wi.weight (f, d)   -> s.N.ff1.w, transposed
 *     (gated: wi_0 and wi_1 -> ff1.w columns [0, f), [f, 2f))  (F: 1 encoder, 2 decoder)
 *   S.block.N.layer.F.DenseReluDense.wo.weight (d, f)   -> s.N.ff2.w, transposed
 *   S.block.N.layer.F.layer_norm.weight                 -> s.N.ln2.g
 *   S.final_layer_norm.weight                           -> s.ln_f.g
 *   lm_head.weight (V, d)                               as for GPT-2 (gpt2.c; T5 v1.0 ties it)
 */
#include <stdio.h>

#include "hf_family.h"

static const hf_keys t5_keys = {"d_model", "num_heads", "num_layers", "n_positions", "d_ff",
"layer_norm_epsilon"};

/* T5: an encoder-decoder of T5 blocks, without dropout (inference is exact) */
static void
t5_config(tfm_config *cfg, const tfm_hf_params *p)
{
	hf_base_config(cfg, p, TFM_TASK_SEQ2SEQ);
	cfg->arch = TFM_ARCH_T5;
	cfg->norm = TFM_NORM_PRE;
	cfg->positions = TFM_POS_RELATIVE;
	cfg->activation = p->activation;
	cfg->ff_gated = p->ff_gated;
	cfg->head_size = p->head_dim;
	cfg->rel_buckets = p->rel_buckets;
	cfg->rel_max_distance = p->rel_max_distance;
	cfg->pad_id = p->pad_id;
	cfg->dropout = 0.0f;
	cfg->attn_dropout = 0.0f;
}

/* one T5 stack's tensors (decoder: with its cross-attention) */
static void
t5_stack_entries(hf_builder *b, const tfm_config *c, bool decoder)
{
	const char *S = decoder ? "decoder" : "encoder",
			   *s = decoder ? "dec" : "enc";
	char		hfl[32],
				n[96],
				t[48];
	int64_t		d = c->d_model,
				f = c->d_ff,
				qd = tfm_config_q_dim(c);
	int			L = decoder ? c->dec_layers : c->enc_layers;
	const char *ff = decoder ? "layer.2." : "layer.1.";

	snprintf(hfl, sizeof(hfl), "%s.block", S);
	snprintf(n, sizeof(n), "%s.embed_tokens.weight", S);
	hf_add(b, n, false, TFM_HF_BUFFER, "", 2, c->vocab, d, 0, 0);
	snprintf(n, sizeof(n), "%s.block.0.layer.0.SelfAttention.relative_attention_bias.weight", S);
	snprintf(t, sizeof(t), "%s.rel_bias", s);
	hf_add(b, n, false, TFM_HF_COPY, t, 2, c->rel_buckets, c->heads, 0, 0);
	for (int i = 0; i < L; i++)
	{
		char		hf[64];

#define T5L(hfn, tf, use, nd, a, bb, c0) hf_add_layer(b, hfl, i, hfn, s, tf, use, nd, a, bb, c0)
#define FF(x) (snprintf(hf, sizeof(hf), "%s%s", ff, x), hf)
		T5L("layer.0.SelfAttention.q.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, 0);
		T5L("layer.0.SelfAttention.k.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, qd);
		T5L("layer.0.SelfAttention.v.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, 2 * qd);
		T5L("layer.0.SelfAttention.o.weight", "attn.out.w", TFM_HF_TRANSPOSE, 2, d, qd, 0);
		T5L("layer.0.layer_norm.weight", "ln1.g", TFM_HF_COPY, 1, d, 0, 0);
		if (decoder)
		{
			T5L("layer.1.EncDecAttention.q.weight", "cross.q.w", TFM_HF_TRANSPOSE, 2, qd, d, 0);
			T5L("layer.1.EncDecAttention.k.weight", "cross.kv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, 0);
			T5L("layer.1.EncDecAttention.v.weight", "cross.kv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, qd);
			T5L("layer.1.EncDecAttention.o.weight", "cross.out.w", TFM_HF_TRANSPOSE, 2, d, qd, 0);
			T5L("layer.1.layer_norm.weight", "lnx.g", TFM_HF_COPY, 1, d, 0, 0);
		}
		if (c->ff_gated)
		{
			T5L(FF("DenseReluDense.wi_0.weight"), "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, 0);
			T5L(FF("DenseReluDense.wi_1.weight"), "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, f);
		}
		else
			T5L(FF("DenseReluDense.wi.weight"), "ff1.w", TFM_HF_TRANSPOSE, 2, f, d, 0);
		T5L(FF("DenseReluDense.wo.weight"), "ff2.w", TFM_HF_TRANSPOSE, 2, d, f, 0);
		T5L(FF("layer_norm.weight"), "ln2.g", TFM_HF_COPY, 1, d, 0, 0);
#undef FF
#undef T5L
	}
	snprintf(n, sizeof(n), "%s.final_layer_norm.weight", S);
	snprintf(t, sizeof(t), "%s.ln_f.g", s);
	hf_add(b, n, false, TFM_HF_COPY, t, 1, d, 0, 0, 0);
}

static void
t5_entries(hf_builder *b, const tfm_config *c)
{
	hf_add(b, "shared.weight", false, TFM_HF_COPY, "tok_emb", 2, c->vocab, c->d_model, 0, 0);
	t5_stack_entries(b, c, false);
	t5_stack_entries(b, c, true);
	hf_add_lm_head(b, c);
}

const hf_family hf_t5 = {&t5_keys, t5_config, t5_entries};
