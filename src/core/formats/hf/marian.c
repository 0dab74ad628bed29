/*
 * marian.c — Marian (MarianMTModel: opus-mt, a post-LN encoder-decoder) for
 * the Hugging Face import: the config.json keys, the tfm_config and the
 * tensors (prefix "model." but for lm_head and final_logits_bias):
 *   shared.weight, encoder.embed_tokens.weight, decoder.embed_tokens.weight,
 *   lm_head.weight (V, d)            one tensor under any of its names -> tok_emb
 *   final_logits_bias (1, V)         -> out.b (absent: zeros)
 *   encoder/decoder.embed_positions.weight (P, d)   the fixed sinusoids: ignored
 *   encoder.layers.N.self_attn.q/k/v_proj.*         -> enc.N.attn.qkv.*, thirds
 *   encoder.layers.N.self_attn.out_proj.*           -> enc.N.attn.out.*
 *   encoder.layers.N.self_attn_layer_norm.*         -> enc.N.ln1.*
 *   encoder.layers.N.fc1.* (f, d), fc2.* (d, f)     -> enc.N.ff1.*, ff2.*
 *   encoder.layers.N.final_layer_norm.*             -> enc.N.ln2.*
 *   decoder.layers.N.*: the same into dec.N, and
 *   decoder.layers.N.encoder_attn.q_proj.*          -> dec.N.cross.q.*
 *   decoder.layers.N.encoder_attn.k/v_proj.*        -> dec.N.cross.kv.*, halves
 *   decoder.layers.N.encoder_attn.out_proj.*        -> dec.N.cross.out.*
 *   decoder.layers.N.encoder_attn_layer_norm.*      -> dec.N.lnx.*
 */
#include <stdio.h>

#include "hf_family.h"

static const hf_keys marian_keys = {"d_model", "encoder_attention_heads", "encoder_layers",
"max_position_embeddings", "encoder_ffn_dim", "layer_norm_eps"};

/*
 * Marian: tfm's post-LN encoder-decoder with sinusoidal positions in
 * halves, one embedding for the source, the target and the head, and the
 * logits' bias; the decoder starts from the pad id (the caller's bos)
 */
static void
marian_config(tfm_config *cfg, const tfm_hf_params *p)
{
	hf_base_config(cfg, p, TFM_TASK_SEQ2SEQ);
	cfg->norm = TFM_NORM_POST;
	cfg->positions = TFM_POS_SINUSOIDAL;
	cfg->sinus_halves = 1;
	cfg->activation = p->activation;
	cfg->scale_embeddings = p->scale_embedding;
	cfg->tie = 1;
	cfg->tgt_vocab = 0;
	cfg->pad_id = p->pad_id;
	cfg->out_bias = 1;
}

/* Marian's attention of layer i: q|k|v into the fused qkv, or (cross) q and k|v apart */
static void
marian_attention(hf_builder *b, const char *hfl, int i, const char *tfl, bool cross, int64_t d)
{
	const char *hf = cross ? "encoder_attn" : "self_attn";
	char		n[64];

#define W(proj, tf, use, nd, a, bb, col) \
	do { snprintf(n, sizeof(n), "%s.%s", hf, proj); \
		 hf_add_layer(b, hfl, i, n, tfl, tf, use, nd, a, bb, col); } while (0)
	if (cross)
	{
		W("q_proj.weight", "cross.q.w", TFM_HF_TRANSPOSE, 2, d, d, 0);
		W("q_proj.bias", "cross.q.b", TFM_HF_COPY, 1, d, 0, 0);
		W("k_proj.weight", "cross.kv.w", TFM_HF_SLICE, 2, d, d, 0);
		W("k_proj.bias", "cross.kv.b", TFM_HF_SLICE, 1, d, 0, 0);
		W("v_proj.weight", "cross.kv.w", TFM_HF_SLICE, 2, d, d, d);
		W("v_proj.bias", "cross.kv.b", TFM_HF_SLICE, 1, d, 0, d);
		W("out_proj.weight", "cross.out.w", TFM_HF_TRANSPOSE, 2, d, d, 0);
		W("out_proj.bias", "cross.out.b", TFM_HF_COPY, 1, d, 0, 0);
	}
	else
	{
		W("q_proj.weight", "attn.qkv.w", TFM_HF_SLICE, 2, d, d, 0);
		W("q_proj.bias", "attn.qkv.b", TFM_HF_SLICE, 1, d, 0, 0);
		W("k_proj.weight", "attn.qkv.w", TFM_HF_SLICE, 2, d, d, d);
		W("k_proj.bias", "attn.qkv.b", TFM_HF_SLICE, 1, d, 0, d);
		W("v_proj.weight", "attn.qkv.w", TFM_HF_SLICE, 2, d, d, 2 * d);
		W("v_proj.bias", "attn.qkv.b", TFM_HF_SLICE, 1, d, 0, 2 * d);
		W("out_proj.weight", "attn.out.w", TFM_HF_TRANSPOSE, 2, d, d, 0);
		W("out_proj.bias", "attn.out.b", TFM_HF_COPY, 1, d, 0, 0);
	}
#undef W
	snprintf(n, sizeof(n), "%s_layer_norm.weight", hf);
	hf_add_layer(b, hfl, i, n, tfl, cross ? "lnx.g" : "ln1.g", TFM_HF_COPY, 1, d, 0, 0);
	snprintf(n, sizeof(n), "%s_layer_norm.bias", hf);
	hf_add_layer(b, hfl, i, n, tfl, cross ? "lnx.b" : "ln1.b", TFM_HF_COPY, 1, d, 0, 0);
}

static void
marian_entries(hf_builder *b, const tfm_config *c)
{
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len;
	tfm_hf_entry *e;

	hf_add(b, "shared.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	hf_add(b, "encoder.embed_tokens.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	hf_add(b, "decoder.embed_tokens.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	hf_add(b, "lm_head.weight", false, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	e = hf_add(b, "final_logits_bias", false, TFM_HF_COPY, "out.b", 2, 1, V, 0, 0);
	if (e)
		e->required = false;
	hf_add(b, "encoder.embed_positions.weight", true, TFM_HF_BUFFER, "", 2, P, d, 0, 0);
	hf_add(b, "decoder.embed_positions.weight", true, TFM_HF_BUFFER, "", 2, P, d, 0, 0);
	for (int s = 0; s < 2; s++)
	{
		const char *hfl = s ? "decoder.layers" : "encoder.layers",
				   *tfl = s ? "dec" : "enc";

		for (int i = 0; i < (s ? c->dec_layers : c->enc_layers); i++)
		{
			marian_attention(b, hfl, i, tfl, false, d);
			if (s)
				marian_attention(b, hfl, i, tfl, true, d);
#define L(hf, tf, use, nd, a, bb) hf_add_layer(b, hfl, i, hf, tfl, tf, use, nd, a, bb, 0)
			L("fc1.weight", "ff1.w", TFM_HF_TRANSPOSE, 2, f, d);
			L("fc1.bias", "ff1.b", TFM_HF_COPY, 1, f, 0);
			L("fc2.weight", "ff2.w", TFM_HF_TRANSPOSE, 2, d, f);
			L("fc2.bias", "ff2.b", TFM_HF_COPY, 1, d, 0);
			L("final_layer_norm.weight", "ln2.g", TFM_HF_COPY, 1, d, 0);
			L("final_layer_norm.bias", "ln2.b", TFM_HF_COPY, 1, d, 0);
#undef L
		}
	}
}

const hf_family hf_marian = {&marian_keys, marian_config, marian_entries};
