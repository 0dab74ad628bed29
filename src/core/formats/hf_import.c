/*
 * hf_import.c — the table of a Hugging Face checkpoint's tensors for each
 * architecture tfm imports, and the checks and conversions that store them
 * in a tfm model (see tfm/hf_import.h).
 *
 * GPT-2 (GPT2LMHeadModel), tfm's pre-LN decoder exactly:
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
 *
 * BERT and RoBERTa (prefix "bert." / "roberta."), tfm's post-LN encoder
 * with the BERT-family options of model.h; nn.Linear weights are (out, in)
 * and are transposed:
 *   embeddings.word_embeddings.weight (V, d)         -> tok_emb
 *   embeddings.position_embeddings.weight (P, d)     -> pos_emb (RoBERTa: P =
 *                                                      pad + 1 + max_len rows)
 *   embeddings.token_type_embeddings.weight (Tv, d)  -> type_emb
 *   embeddings.LayerNorm.weight / bias               -> emb_ln.g / b
 *   encoder.layer.N.attention.self.query / key / value .weight (d, d), .bias
 *                                                    -> enc.N.attn.qkv.w / b, thirds Q | K | V
 *   encoder.layer.N.attention.output.dense.*         -> enc.N.attn.out.*
 *   encoder.layer.N.attention.output.LayerNorm.*     -> enc.N.ln1.*
 *   encoder.layer.N.intermediate.dense.* (f, d)      -> enc.N.ff1.*
 *   encoder.layer.N.output.dense.* (d, f)            -> enc.N.ff2.*
 *   encoder.layer.N.output.LayerNorm.*               -> enc.N.ln2.*
 *   embeddings.position_ids (1, P)                   a buffer: ignored
 * with a head (...ForSequenceClassification): BERT's pooler.dense.* ->
 * cls.pre.* (tanh) and classifier.* -> cls.*; RoBERTa's classifier.dense.*
 * -> cls.pre.* (tanh) and classifier.out_proj.* -> cls.*.  Without one,
 * pooler.dense.* (BertModel, RobertaModel) is accepted and ignored: the
 * model pools by the mean, and its cls.* is a new head.
 * DistilBERT (prefix "distilbert."): embeddings.word_embeddings,
 * position_embeddings, LayerNorm as above (no token types);
 * transformer.layer.N.attention.q_lin / k_lin / v_lin / out_lin,
 * sa_layer_norm -> ln1, ffn.lin1 / lin2 -> ff1 / ff2, output_layer_norm ->
 * ln2; head: pre_classifier.* -> cls.pre.* (ReLU), classifier.* -> cls.*.
 *
 * Llama (LlamaForCausalLM), tfm's llama blocks (llama_block.c); every
 * name but lm_head.weight may carry the "model." prefix:
 *   embed_tokens.weight (V, d)                 -> tok_emb
 *   layers.N.input_layernorm.weight (d)        -> dec.N.ln1.g
 *   layers.N.self_attn.q_proj.weight (h·s, d)  -> dec.N.attn.qkv.w columns [0, h·s)
 *   layers.N.self_attn.k_proj.weight (kv·s, d) -> columns [h·s, h·s + kv·s)
 *   layers.N.self_attn.v_proj.weight (kv·s, d) -> columns [h·s + kv·s, h·s + 2·kv·s)
 *   layers.N.self_attn.o_proj.weight (d, h·s)  -> dec.N.attn.out.w, transposed
 *   (s: head_dim, d / h unless the config says otherwise)
 *   layers.N.post_attention_layernorm.weight   -> dec.N.ln2.g
 *   layers.N.mlp.gate_proj.weight (f, d)       -> dec.N.ff1.w columns [0, f)
 *   layers.N.mlp.up_proj.weight (f, d)         -> dec.N.ff1.w columns [f, 2f)
 *   layers.N.mlp.down_proj.weight (d, f)       -> dec.N.ff2.w, transposed
 *   norm.weight (d)                            -> dec.ln_f.g
 *   lm_head.weight (V, d)                      as for GPT-2
 *   layers.N.self_attn.rotary_emb.inv_freq     buffer of older checkpoints
 *                                              (recomputed from rope_theta)
 * Qwen2 (Qwen2ForCausalLM, qkv_bias): the same, and
 *   layers.N.self_attn.q_proj.bias (h·s)       -> dec.N.attn.qkv.b [0, d)
 *   layers.N.self_attn.k_proj.bias (kv·s)      -> [d, d + kv·s)
 *   layers.N.self_attn.v_proj.bias (kv·s)      -> [d + kv·s, d + 2·kv·s)
 * Mistral (MistralForCausalLM): Llama's names exactly.
 * Phi-3 (Phi3ForCausalLM, TFM_HF_PHI3): Llama's, but q/k/v and gate/up fused,
 * in tfm's own order:
 *   layers.N.self_attn.qkv_proj.weight (d + 2·kv·s, d) -> dec.N.attn.qkv.w, transposed
 *   layers.N.mlp.gate_up_proj.weight (2f, d)            -> dec.N.ff1.w, transposed
 * Gemma (GemmaForCausalLM, gemma): Llama's names; its RMSNorm computes
 * x·(1 + w), so every norm weight is stored plus 1 (input_layernorm,
 * post_attention_layernorm, norm); the head is tied.
 * Gemma 2 (Gemma2ForCausalLM, post_norms): Gemma's, but four norms a layer,
 * post_attention_layernorm now on the attention's output:
 *   layers.N.input_layernorm.weight            -> dec.N.ln1.g (plus 1)
 *   layers.N.post_attention_layernorm.weight   -> dec.N.post_attn.g (plus 1)
 *   layers.N.pre_feedforward_layernorm.weight  -> dec.N.ln2.g (plus 1)
 *   layers.N.post_feedforward_layernorm.weight -> dec.N.post_ff.g (plus 1)
 *
 * T5 (T5ForConditionalGeneration, TFM_HF_T5), tfm's T5 blocks
 * (model/t5_block.c); no prefix; S is encoder or decoder, s enc or dec;
 * qd = num_heads · d_kv:
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
 *   lm_head.weight (V, d)                               as for GPT-2 (T5 v1.0 ties it)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/hf_import.h"

/* the config.json names of the hyper-parameters every architecture checks */
typedef struct hf_keys
{
	const char *d_model,
			   *heads,
			   *layers,
			   *max_len,
			   *d_ff,
			   *ln_eps;
} hf_keys;

static const hf_keys gpt2_keys = {"n_embd", "n_head", "n_layer", "n_positions", "n_inner",
"layer_norm_epsilon"};
static const hf_keys bert_keys = {"hidden_size", "num_attention_heads", "num_hidden_layers",
"max_position_embeddings", "intermediate_size", "layer_norm_eps"};
static const hf_keys llama_keys = {"hidden_size", "num_attention_heads", "num_hidden_layers",
"max_position_embeddings", "intermediate_size", "rms_norm_eps"};
static const hf_keys marian_keys = {"d_model", "encoder_attention_heads", "encoder_layers",
"max_position_embeddings", "encoder_ffn_dim", "layer_norm_eps"};
static const hf_keys t5_keys = {"d_model", "num_heads", "num_layers", "n_positions", "d_ff",
"layer_norm_epsilon"};

/* the message of the last refusal (valid until the next call) */
static char hf_msg[160];

static bool
out_of_range(int v, int lo, int hi, const char *key, int msg_lo, int msg_hi)
{
	if (v >= lo && v <= hi)
		return false;
	snprintf(hf_msg, sizeof(hf_msg), "%s must be between %d and %d", key, msg_lo, msg_hi);
	return true;
}

#define RANGE(v, key, L) out_of_range(v, L##_MIN, L##_MAX, key, L##_MIN, L##_MAX)

static const char *
refuse(const char *fmt, const char *a, const char *b)
{
	snprintf(hf_msg, sizeof(hf_msg), fmt, a, b);
	return hf_msg;
}

/*
 * The one validator of a config.json's hyper-parameters (in the order the
 * messages name them), against the limits of tfm/limits.h; the tfm_config
 * made from them is then checked by tfm_config_check like any other.
 */
static const char *
check_params(const tfm_hf_params *p, const hf_keys *k)
{
	bool		llama = p->arch == TFM_HF_LLAMA || p->arch == TFM_HF_PHI3;
	bool		marian = p->arch == TFM_HF_MARIAN;
	bool		t5 = p->arch == TFM_HF_T5;
	bool		bert = p->arch != TFM_HF_GPT2 && !llama && !marian && !t5;

	if (RANGE(p->d_model, k->d_model, TFM_D_MODEL) || RANGE(p->heads, k->heads, TFM_HEADS))
		return hf_msg;
	if (p->d_model % p->heads != 0 && !t5)	/* T5's heads are d_kv wide */
		return refuse("%s must divide %s", k->heads, k->d_model);
	if (t5)
	{
		if (p->head_dim < 1 || (int64_t) p->heads * p->head_dim > TFM_D_MODEL_MAX)
			return "d_kv · num_heads must be between 1 and " TFM_STR(TFM_D_MODEL_MAX);
		if (RANGE(p->dec_layers, "num_decoder_layers", TFM_LAYERS) ||
			RANGE(p->rel_buckets, "relative_attention_num_buckets", TFM_REL_BUCKETS) ||
			RANGE(p->rel_max_distance, "relative_attention_max_distance", TFM_REL_MAX_DISTANCE))
			return hf_msg;
	}
	if (llama)
	{
		if (p->kv_heads < 1 || p->kv_heads > p->heads || p->heads % p->kv_heads != 0)
			return "num_key_value_heads must divide num_attention_heads";
		if ((p->head_dim > 0 ? p->head_dim : p->d_model / p->heads) % 2 != 0)
			return "the head size (head_dim, or hidden_size / num_attention_heads) must be even";
		if (p->head_dim < 0 || (int64_t) p->heads * p->head_dim > TFM_D_MODEL_MAX)
			return "head_dim · num_attention_heads must be at most " TFM_STR(TFM_D_MODEL_MAX);
	}
	if (RANGE(p->layers, k->layers, TFM_LAYERS))
		return hf_msg;
	if (marian && RANGE(p->dec_layers, "decoder_layers", TFM_LAYERS))
		return hf_msg;
	if (bert && (p->pos_offset < TFM_POS_OFFSET_MIN || p->pos_offset > TFM_POS_OFFSET_MAX))
		return "pad_token_id is out of range for RoBERTa's position offset";
	if (bert && p->pos_offset)
	{
		/* RoBERTa's positions start at pad_token_id + 1 */
		if (p->max_len - p->pos_offset < TFM_LEN_MIN || p->max_len - p->pos_offset > TFM_LEN_MAX)
		{
			snprintf(hf_msg, sizeof(hf_msg), "%s must be between pad_token_id + %d and pad_token_id + %d",
					 k->max_len, TFM_LEN_MIN + 1, TFM_LEN_MAX + 1);
			return hf_msg;
		}
	}
	else if (RANGE(p->max_len, k->max_len, TFM_LEN))
		return hf_msg;
	if (RANGE(p->vocab, "vocab_size", TFM_VOCAB))
		return hf_msg;
	/* GPT-2's n_inner may be 0: 4·n_embd */
	if (out_of_range(p->d_ff, p->arch == TFM_HF_GPT2 ? 0 : TFM_D_FF_MIN, TFM_D_FF_MAX, k->d_ff,
					 TFM_D_FF_MIN, TFM_D_FF_MAX))
		return hf_msg;
	if (marian && (p->pad_id < 0 || p->pad_id >= p->vocab))
		return "pad_token_id must be below vocab_size";
	if (bert)
	{
		if (RANGE(p->type_vocab, "type_vocab_size", TFM_TYPE_VOCAB))
			return hf_msg;
		if (p->pad_id < 0 || p->pad_id >= p->vocab)
			return "pad_token_id must be below vocab_size";
		if (p->n_classes < TFM_CLASSES_MIN || p->n_classes > TFM_CLASSES_MAX)
			return "id2label must name between " TFM_STR(TFM_CLASSES_MIN) " and "
				TFM_STR(TFM_CLASSES_MAX) " labels";
	}
	if (!(p->ln_eps > 0.0f && p->ln_eps <= (float) TFM_LN_EPS_MAX))
		return refuse("%s must be greater than 0 and at most %s", k->ln_eps, TFM_STR(TFM_LN_EPS_MAX));
	if (llama)
	{
		if (!(p->rope_theta >= (float) TFM_ROPE_THETA_MIN && p->rope_theta <= (float) TFM_ROPE_THETA_MAX))
			return TFM_RANGE_TEXT("rope_theta", TFM_ROPE_THETA);
	}
	else if (!(p->dropout >= 0.0f && p->dropout < 1.0f) ||
			 !(p->attn_dropout >= 0.0f && p->attn_dropout < 1.0f))
		return "dropout probabilities must be at least 0 and less than 1";
	return NULL;
}

#undef RANGE

/* what every architecture's config sets alike */
static void
base_config(tfm_config *cfg, const tfm_hf_params *p, tfm_task task)
{
	tfm_config_defaults(cfg, task);
	cfg->vocab = p->vocab;
	cfg->d_model = p->d_model;
	cfg->heads = p->heads;
	cfg->d_ff = p->d_ff;
	cfg->max_len = p->max_len;
	cfg->tie = p->tie;
	cfg->scale_embeddings = 0;
	cfg->dropout = p->dropout;
	cfg->attn_dropout = p->attn_dropout;
	cfg->ln_eps = p->ln_eps;
}

static void
bert_config(tfm_config *cfg, const tfm_hf_params *p)
{
	base_config(cfg, p, TFM_TASK_CLASSIFY);
	cfg->enc_layers = p->layers;
	cfg->dec_layers = 0;
	cfg->max_len = p->max_len - p->pos_offset;
	cfg->n_classes = p->n_classes;
	cfg->norm = TFM_NORM_POST;
	cfg->positions = TFM_POS_LEARNED;
	cfg->activation = TFM_ACT_GELU;
	cfg->pooling = p->head ? TFM_POOL_CLS : TFM_POOL_MEAN;
	cfg->tie = 1;
	cfg->pad_id = p->pad_id;
	cfg->type_vocab = p->arch == TFM_HF_DISTILBERT ? 0 : p->type_vocab;
	cfg->emb_norm = 1;
	cfg->pos_offset = p->arch == TFM_HF_ROBERTA ? p->pos_offset : 0;
	cfg->cls_pre = !p->head ? TFM_CLS_PRE_NONE :
		p->arch == TFM_HF_DISTILBERT ? TFM_CLS_PRE_RELU : TFM_CLS_PRE_TANH;
}

static void
llama_config(tfm_config *cfg, const tfm_hf_params *p)
{
	base_config(cfg, p, TFM_TASK_LM);
	cfg->arch = TFM_ARCH_LLAMA;
	cfg->kv_heads = p->kv_heads == p->heads ? 0 : p->kv_heads;
	cfg->dec_layers = p->layers;
	cfg->enc_layers = 0;
	cfg->norm = TFM_NORM_PRE;
	cfg->positions = TFM_POS_ROPE;
	cfg->rope_theta = p->rope_theta;
	cfg->qkv_bias = p->qkv_bias;
	/* a head_dim other than d / heads (Gemma 7B's and Gemma 2's) */
	cfg->head_size = p->head_dim > 0 && p->head_dim * p->heads != p->d_model ? p->head_dim : 0;
	/* Gemma: GeGLU, and embeddings times √d (HF's normalizer, a float of the embedding's dtype) */
	cfg->gated_act = p->gemma ? TFM_GATED_GELU_TANH : TFM_GATED_SILU;
	cfg->scale_embeddings = p->gemma;
	/* Gemma 2: norms on both sub-layers' outputs, its attention's scale and the soft caps */
	cfg->post_norms = p->gemma2;
	cfg->attn_scale = p->gemma2 ? p->attn_scale : 0.0f;
	cfg->attn_softcap = p->gemma2 ? p->attn_softcap : 0.0f;
	cfg->final_softcap = p->gemma2 ? p->final_softcap : 0.0f;
	cfg->pad_id = -1;			/* ids are the checkpoint's; nothing is padding */
	cfg->dropout = 0.0f;
	cfg->attn_dropout = 0.0f;
}

/* T5: an encoder-decoder of T5 blocks, without dropout (inference is exact) */
static void
t5_config(tfm_config *cfg, const tfm_hf_params *p)
{
	base_config(cfg, p, TFM_TASK_SEQ2SEQ);
	cfg->arch = TFM_ARCH_T5;
	cfg->enc_layers = p->layers;
	cfg->dec_layers = p->dec_layers;
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

static void
gpt2_config(tfm_config *cfg, const tfm_hf_params *p)
{
	base_config(cfg, p, TFM_TASK_LM);
	cfg->dec_layers = p->layers;
	cfg->enc_layers = 0;
	cfg->d_ff = p->d_ff > 0 ? p->d_ff : 4 * p->d_model;
	cfg->norm = TFM_NORM_PRE;
	cfg->positions = TFM_POS_LEARNED;
	cfg->activation = TFM_ACT_GELU_TANH;
	cfg->pad_id = -1;			/* GPT-2 has no padding token */
}

/*
 * Marian: tfm's post-LN encoder-decoder with sinusoidal positions in
 * halves, one embedding for the source, the target and the head, and the
 * logits' bias; the decoder starts from the pad id (the caller's bos)
 */
static void
marian_config(tfm_config *cfg, const tfm_hf_params *p)
{
	base_config(cfg, p, TFM_TASK_SEQ2SEQ);
	cfg->enc_layers = p->layers;
	cfg->dec_layers = p->dec_layers;
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

const char *
tfm_hf_config(tfm_config *cfg, const tfm_hf_params *p)
{
	const char *bad;

	if (p->arch == TFM_HF_BERT || p->arch == TFM_HF_ROBERTA || p->arch == TFM_HF_DISTILBERT)
	{
		if ((bad = check_params(p, &bert_keys)) != NULL)
			return bad;
		bert_config(cfg, p);
	}
	else if (p->arch == TFM_HF_LLAMA || p->arch == TFM_HF_PHI3)
	{
		if ((bad = check_params(p, &llama_keys)) != NULL)
			return bad;
		llama_config(cfg, p);
	}
	else if (p->arch == TFM_HF_T5)
	{
		if ((bad = check_params(p, &t5_keys)) != NULL)
			return bad;
		t5_config(cfg, p);
	}
	else if (p->arch == TFM_HF_GPT2)
	{
		if ((bad = check_params(p, &gpt2_keys)) != NULL)
			return bad;
		gpt2_config(cfg, p);
	}
	else if (p->arch == TFM_HF_MARIAN)
	{
		if ((bad = check_params(p, &marian_keys)) != NULL)
			return bad;
		marian_config(cfg, p);
	}
	else
		return "unknown architecture";
	return tfm_config_check(cfg);
}

typedef struct builder
{
	tfm_hf_map *map;
	int			cap;
	bool		failed;
} builder;

static tfm_hf_entry *
add(builder *b, const char *name, bool prefixable, tfm_hf_use use, const char *target,
	int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
	tfm_hf_entry *e;

	if (b->failed)
		return NULL;
	if (b->map->n == b->cap)
	{
		int			cap = b->cap ? 2 * b->cap : 64;
		tfm_hf_entry *ne = realloc(b->map->entries, sizeof(tfm_hf_entry) * cap);

		if (!ne)
		{
			b->failed = true;
			return NULL;
		}
		b->map->entries = ne;
		b->cap = cap;
	}
	e = &b->map->entries[b->map->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->target, sizeof(e->target), "%s", target);
	e->prefixable = prefixable;
	e->required = use != TFM_HF_BUFFER && use != TFM_HF_TIED && use != TFM_HF_SHARED;
	e->use = use;
	e->ndim = ndim;
	e->dims[0] = d0;
	e->dims[1] = d1;
	e->dims[2] = d2;
	e->dims[3] = d3;
	return e;
}

/* layer i's tensor "<hfl>.<i>.<hf>" into "<tfl>.<i>.<tf>" (col0: its first
 * column in a fused target, else 0) */
static void
add_layer(builder *b, const char *hfl, int i, const char *hf, const char *tfl, const char *tf,
		  tfm_hf_use use, int ndim, int64_t d0, int64_t d1, int64_t col0)
{
	char		n[96],
				t[48];
	tfm_hf_entry *e;

	snprintf(n, sizeof(n), "%s.%d.%s", hfl, i, hf);
	snprintf(t, sizeof(t), "%s.%d.%s", tfl, i, tf);
	e = add(b, n, true, use, t, ndim, d0, d1, 0, 0);
	if (e)
		e->col0 = col0;
}

/* the output projection: tied to the token embedding or its own */
static void
add_lm_head(builder *b, const tfm_config *c)
{
	if (c->tie)
		add(b, "lm_head.weight", false, TFM_HF_TIED, "tok_emb", 2, c->vocab, c->d_model, 0, 0);
	else
		add(b, "lm_head.weight", false, TFM_HF_TRANSPOSE, "out.w", 2, c->vocab, c->d_model, 0, 0);
}

static void
gpt2_entries(builder *b, const tfm_config *c)
{
	char		n[96];
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len;

	add(b, "wte.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	add(b, "wpe.weight", true, TFM_HF_COPY, "pos_emb", 2, P, d, 0, 0);
	for (int i = 0; i < c->dec_layers; i++)
	{
#define L(hf, tf, nd, a, bb) add_layer(b, "h", i, hf, "dec", tf, TFM_HF_COPY, nd, a, bb, 0)
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
		add(b, n, true, TFM_HF_BUFFER, "", 4, 1, 1, P, P);
		snprintf(n, sizeof(n), "h.%d.attn.masked_bias", i);
		add(b, n, true, TFM_HF_BUFFER, "", 0, 0, 0, 0, 0);
	}
	add(b, "ln_f.weight", true, TFM_HF_COPY, "dec.ln_f.g", 1, d, 0, 0, 0);
	add(b, "ln_f.bias", true, TFM_HF_COPY, "dec.ln_f.b", 1, d, 0, 0, 0);
	add_lm_head(b, c);
}

static void
bert_entries(builder *b, const tfm_config *c, tfm_hf_arch arch)
{
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len + c->pos_offset,
				C = c->n_classes;
	bool		distil = arch == TFM_HF_DISTILBERT;
	bool		head = c->cls_pre != TFM_CLS_PRE_NONE;

	add(b, "embeddings.word_embeddings.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	add(b, "embeddings.position_embeddings.weight", true, TFM_HF_COPY, "pos_emb", 2, P, d, 0, 0);
	if (!distil)
		add(b, "embeddings.token_type_embeddings.weight", true, TFM_HF_COPY, "type_emb", 2,
			c->type_vocab, d, 0, 0);
	add(b, "embeddings.LayerNorm.weight", true, TFM_HF_COPY, "emb_ln.g", 1, d, 0, 0, 0);
	add(b, "embeddings.LayerNorm.bias", true, TFM_HF_COPY, "emb_ln.b", 1, d, 0, 0, 0);
	add(b, "embeddings.position_ids", true, TFM_HF_BUFFER, "", 2, 1, P, 0, 0);
	for (int i = 0; i < c->enc_layers; i++)
	{
		const char *L = distil ? "transformer.layer" : "encoder.layer";

#define E(hf, tf, use, nd, a, bb) add_layer(b, L, i, hf, "enc", tf, use, nd, a, bb, 0)
		/* q/k/v (or q_lin/k_lin/v_lin) into thirds of the fused qkv */
#define S(hf, tf, nd, a, bb, col) add_layer(b, L, i, hf, "enc", tf, TFM_HF_SLICE, nd, a, bb, col)
		S(distil ? "attention.q_lin.weight" : "attention.self.query.weight", "attn.qkv.w", 2, d, d, 0);
		S(distil ? "attention.q_lin.bias" : "attention.self.query.bias", "attn.qkv.b", 1, d, 0, 0);
		S(distil ? "attention.k_lin.weight" : "attention.self.key.weight", "attn.qkv.w", 2, d, d, d);
		S(distil ? "attention.k_lin.bias" : "attention.self.key.bias", "attn.qkv.b", 1, d, 0, d);
		S(distil ? "attention.v_lin.weight" : "attention.self.value.weight", "attn.qkv.w", 2, d, d, 2 * d);
		S(distil ? "attention.v_lin.bias" : "attention.self.value.bias", "attn.qkv.b", 1, d, 0, 2 * d);
		E(distil ? "attention.out_lin.weight" : "attention.output.dense.weight", "attn.out.w",
		  TFM_HF_TRANSPOSE, 2, d, d);
		E(distil ? "attention.out_lin.bias" : "attention.output.dense.bias", "attn.out.b",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "sa_layer_norm.weight" : "attention.output.LayerNorm.weight", "ln1.g",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "sa_layer_norm.bias" : "attention.output.LayerNorm.bias", "ln1.b",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "ffn.lin1.weight" : "intermediate.dense.weight", "ff1.w", TFM_HF_TRANSPOSE, 2, f, d);
		E(distil ? "ffn.lin1.bias" : "intermediate.dense.bias", "ff1.b", TFM_HF_COPY, 1, f, 0);
		E(distil ? "ffn.lin2.weight" : "output.dense.weight", "ff2.w", TFM_HF_TRANSPOSE, 2, d, f);
		E(distil ? "ffn.lin2.bias" : "output.dense.bias", "ff2.b", TFM_HF_COPY, 1, d, 0);
		E(distil ? "output_layer_norm.weight" : "output.LayerNorm.weight", "ln2.g", TFM_HF_COPY, 1, d, 0);
		E(distil ? "output_layer_norm.bias" : "output.LayerNorm.bias", "ln2.b", TFM_HF_COPY, 1, d, 0);
#undef E
#undef S
	}
	if (!head)
	{
		/* a base model's pooler (BertModel, RobertaModel): not used by mean pooling */
		if (!distil)
		{
			add(b, "pooler.dense.weight", true, TFM_HF_BUFFER, "", 2, d, d, 0, 0);
			add(b, "pooler.dense.bias", true, TFM_HF_BUFFER, "", 1, d, 0, 0, 0);
		}
		return;
	}
	switch (arch)
	{
		case TFM_HF_BERT:
			add(b, "pooler.dense.weight", true, TFM_HF_TRANSPOSE, "cls.pre.w", 2, d, d, 0, 0);
			add(b, "pooler.dense.bias", true, TFM_HF_COPY, "cls.pre.b", 1, d, 0, 0, 0);
			add(b, "classifier.weight", false, TFM_HF_TRANSPOSE, "cls.w", 2, C, d, 0, 0);
			add(b, "classifier.bias", false, TFM_HF_COPY, "cls.b", 1, C, 0, 0, 0);
			break;
		case TFM_HF_ROBERTA:
			add(b, "classifier.dense.weight", false, TFM_HF_TRANSPOSE, "cls.pre.w", 2, d, d, 0, 0);
			add(b, "classifier.dense.bias", false, TFM_HF_COPY, "cls.pre.b", 1, d, 0, 0, 0);
			add(b, "classifier.out_proj.weight", false, TFM_HF_TRANSPOSE, "cls.w", 2, C, d, 0, 0);
			add(b, "classifier.out_proj.bias", false, TFM_HF_COPY, "cls.b", 1, C, 0, 0, 0);
			break;
		default:
			add(b, "pre_classifier.weight", false, TFM_HF_TRANSPOSE, "cls.pre.w", 2, d, d, 0, 0);
			add(b, "pre_classifier.bias", false, TFM_HF_COPY, "cls.pre.b", 1, d, 0, 0, 0);
			add(b, "classifier.weight", false, TFM_HF_TRANSPOSE, "cls.w", 2, C, d, 0, 0);
			add(b, "classifier.bias", false, TFM_HF_COPY, "cls.b", 1, C, 0, 0, 0);
			break;
	}
}

/* Qwen2's q/k/v biases of layer i into thirds of the fused attn.qkv.b */
static void
qwen2_bias_entries(builder *b, const tfm_config *c, int i)
{
	static const char *const proj[3] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
	"self_attn.v_proj.bias"};
	int64_t		qd = tfm_config_q_dim(c),
				kvd = tfm_config_kv_dim(c),
				col[3] = {0, qd, qd + kvd};

	for (int k = 0; k < 3; k++)
		add_layer(b, "layers", i, proj[k], "dec", "attn.qkv.b", TFM_HF_SLICE, 1,
				  k == 0 ? qd : kvd, 0, col[k]);
}

/*
 * The Llama family's tensors; gemma: norm gains stored plus 1; fused (Phi-3):
 * one q|k|v and one gate|up matrix
 */
static void
llama_entries(builder *b, const tfm_config *c, bool fused, bool gemma)
{
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				s = tfm_config_head_size(c),
				qd = tfm_config_q_dim(c),
				kvd = tfm_config_kv_dim(c);
	tfm_hf_use	norm = gemma ? TFM_HF_COPY_PLUS1 : TFM_HF_COPY;

	add(b, "embed_tokens.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	for (int i = 0; i < c->dec_layers; i++)
	{
#define L(hf, tf, use, nd, a, bb, c0) add_layer(b, "layers", i, hf, "dec", tf, use, nd, a, bb, c0)
		L("input_layernorm.weight", "ln1.g", norm, 1, d, 0, 0);
		if (fused)
			L("self_attn.qkv_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd + 2 * kvd, d, 0);
		else
		{
			L("self_attn.q_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, qd, d, 0);
			L("self_attn.k_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, kvd, d, qd);
			L("self_attn.v_proj.weight", "attn.qkv.w", TFM_HF_TRANSPOSE_COLS, 2, kvd, d, qd + kvd);
		}
		L("self_attn.o_proj.weight", "attn.out.w", TFM_HF_TRANSPOSE, 2, d, qd, 0);
		if (c->post_norms)		/* Gemma 2 */
		{
			L("post_attention_layernorm.weight", "post_attn.g", norm, 1, d, 0, 0);
			L("pre_feedforward_layernorm.weight", "ln2.g", norm, 1, d, 0, 0);
			L("post_feedforward_layernorm.weight", "post_ff.g", norm, 1, d, 0, 0);
		}
		else
			L("post_attention_layernorm.weight", "ln2.g", norm, 1, d, 0, 0);
		if (fused)
			L("mlp.gate_up_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, 2 * f, d, 0);
		else
		{
			L("mlp.gate_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, 0);
			L("mlp.up_proj.weight", "ff1.w", TFM_HF_TRANSPOSE_COLS, 2, f, d, f);
		}
		L("mlp.down_proj.weight", "ff2.w", TFM_HF_TRANSPOSE, 2, d, f, 0);
		L("self_attn.rotary_emb.inv_freq", "", TFM_HF_BUFFER, 1, s / 2, 0, 0);
#undef L
		if (c->qkv_bias)
			qwen2_bias_entries(b, c, i);
	}
	add(b, "norm.weight", true, norm, "dec.ln_f.g", 1, d, 0, 0, 0);
	add_lm_head(b, c);
}

/* Marian's attention of layer i: q|k|v into the fused qkv, or (cross) q and k|v apart */
static void
marian_attention(builder *b, const char *hfl, int i, const char *tfl, bool cross, int64_t d)
{
	const char *hf = cross ? "encoder_attn" : "self_attn";
	char		n[64];

#define W(proj, tf, use, nd, a, bb, col) \
	do { snprintf(n, sizeof(n), "%s.%s", hf, proj); \
		 add_layer(b, hfl, i, n, tfl, tf, use, nd, a, bb, col); } while (0)
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
	add_layer(b, hfl, i, n, tfl, cross ? "lnx.g" : "ln1.g", TFM_HF_COPY, 1, d, 0, 0);
	snprintf(n, sizeof(n), "%s_layer_norm.bias", hf);
	add_layer(b, hfl, i, n, tfl, cross ? "lnx.b" : "ln1.b", TFM_HF_COPY, 1, d, 0, 0);
}

/*
 * MarianMTModel (prefix "model." but for lm_head and final_logits_bias):
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
static void
marian_entries(builder *b, const tfm_config *c)
{
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len;
	tfm_hf_entry *e;

	add(b, "shared.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	add(b, "encoder.embed_tokens.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	add(b, "decoder.embed_tokens.weight", true, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	add(b, "lm_head.weight", false, TFM_HF_SHARED, "tok_emb", 2, V, d, 0, 0);
	e = add(b, "final_logits_bias", false, TFM_HF_COPY, "out.b", 2, 1, V, 0, 0);
	if (e)
		e->required = false;
	add(b, "encoder.embed_positions.weight", true, TFM_HF_BUFFER, "", 2, P, d, 0, 0);
	add(b, "decoder.embed_positions.weight", true, TFM_HF_BUFFER, "", 2, P, d, 0, 0);
	for (int s = 0; s < 2; s++)
	{
		const char *hfl = s ? "decoder.layers" : "encoder.layers",
				   *tfl = s ? "dec" : "enc";

		for (int i = 0; i < (s ? c->dec_layers : c->enc_layers); i++)
		{
			marian_attention(b, hfl, i, tfl, false, d);
			if (s)
				marian_attention(b, hfl, i, tfl, true, d);
#define L(hf, tf, use, nd, a, bb) add_layer(b, hfl, i, hf, tfl, tf, use, nd, a, bb, 0)
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

/* one T5 stack's tensors (decoder: with its cross-attention) */
static void
t5_stack_entries(builder *b, const tfm_config *c, bool decoder)
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
	add(b, n, false, TFM_HF_BUFFER, "", 2, c->vocab, d, 0, 0);
	snprintf(n, sizeof(n), "%s.block.0.layer.0.SelfAttention.relative_attention_bias.weight", S);
	snprintf(t, sizeof(t), "%s.rel_bias", s);
	add(b, n, false, TFM_HF_COPY, t, 2, c->rel_buckets, c->heads, 0, 0);
	for (int i = 0; i < L; i++)
	{
		char		hf[64];

#define T5L(hfn, tf, use, nd, a, bb, c0) add_layer(b, hfl, i, hfn, s, tf, use, nd, a, bb, c0)
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
	add(b, n, false, TFM_HF_COPY, t, 1, d, 0, 0, 0);
}

static void
t5_entries(builder *b, const tfm_config *c)
{
	add(b, "shared.weight", false, TFM_HF_COPY, "tok_emb", 2, c->vocab, c->d_model, 0, 0);
	t5_stack_entries(b, c, false);
	t5_stack_entries(b, c, true);
	add_lm_head(b, c);
}

tfm_hf_map *
tfm_hf_map_create(tfm_hf_arch arch, const tfm_config *cfg)
{
	builder		b = {0};

	b.map = calloc(1, sizeof(tfm_hf_map));
	if (!b.map)
		return NULL;
	b.map->arch = arch;
	switch (arch)
	{
		case TFM_HF_GPT2:
			b.map->prefix = "transformer.";
			gpt2_entries(&b, cfg);
			break;
		case TFM_HF_BERT:
			b.map->prefix = "bert.";
			bert_entries(&b, cfg, arch);
			break;
		case TFM_HF_ROBERTA:
			b.map->prefix = "roberta.";
			bert_entries(&b, cfg, arch);
			break;
		case TFM_HF_DISTILBERT:
			b.map->prefix = "distilbert.";
			bert_entries(&b, cfg, arch);
			break;
		case TFM_HF_LLAMA:
		case TFM_HF_PHI3:
			b.map->prefix = "model.";
			llama_entries(&b, cfg, arch == TFM_HF_PHI3, cfg->gated_act == TFM_GATED_GELU_TANH);
			break;
		case TFM_HF_MARIAN:
			b.map->prefix = "model.";
			marian_entries(&b, cfg);
			break;
		case TFM_HF_T5:
			b.map->prefix = NULL;
			t5_entries(&b, cfg);
			break;
	}
	b.map->seen = calloc(b.map->n + 1, sizeof(bool));
	if (b.failed || !b.map->seen)
	{
		tfm_hf_map_free(b.map);
		return NULL;
	}
	return b.map;
}

uint64_t
tfm_hf_map_min_values(const tfm_hf_map *map)
{
	uint64_t	n = 0;

	for (int i = 0; i < map->n; i++)
	{
		const tfm_hf_entry *e = &map->entries[i];
		uint64_t	v = 1;

		/* the names of one shared tensor (consecutive entries) count once */
		if ((!e->required && e->use != TFM_HF_SHARED) || e->use == TFM_HF_BUFFER ||
			e->use == TFM_HF_TIED ||
			(e->use == TFM_HF_SHARED && i > 0 && map->entries[i - 1].use == TFM_HF_SHARED))
			continue;
		for (int k = 0; k < e->ndim; k++)
			v *= e->dims[k] >= 0 ? (uint64_t) e->dims[k] : 0;
		n += v;
	}
	return n;
}

void
tfm_hf_map_free(tfm_hf_map *map)
{
	if (!map)
		return;
	free(map->entries);
	free(map->seen);
	free(map->tied);
	free(map);
}

tfm_hf_entry *
tfm_hf_match(tfm_hf_map *map, const char *name, size_t len)
{
	size_t		pl = map->prefix ? strlen(map->prefix) : 0;

	for (int i = 0; i < map->n; i++)
	{
		tfm_hf_entry *e = &map->entries[i];
		size_t		el = strlen(e->name);

		if (len == el && memcmp(name, e->name, el) == 0)
			return e;
		if (e->prefixable && pl > 0 && len == pl + el &&
			memcmp(name, map->prefix, pl) == 0 && memcmp(name + pl, e->name, el) == 0)
			return e;
	}
	return NULL;
}

/* the a × b matrix src, transposed: out[j · ldo + i] = src[i · b + j] */
static void
transpose_into(float *out, size_t ldo, const float *src, size_t a, size_t b)
{
	for (size_t i = 0; i < a; i++)
		for (size_t j = 0; j < b; j++)
			out[j * ldo + i] = src[i * b + j];
}

static void
shape_str(char *buf, size_t len, int ndim, const int64_t *d64, const uint64_t *du)
{
	size_t		o = 0;

	o += snprintf(buf + o, len - o, "[");
	for (int i = 0; i < ndim && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? ", " : "",
					  d64 ? (long long) d64[i] : (long long) du[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

int
tfm_hf_load_tensor(tfm_model *m, tfm_hf_map *map, tfm_hf_entry *e,
				   const tfm_st_tensor *t, const uint8_t *src, char *err, size_t errlen)
{
	const tfm_param_info *p = NULL;
	bool		shape_ok = t->ndim == e->ndim;
	size_t		n = (size_t) t->n_values;
	float	   *dst,
			   *tmp = NULL;
	size_t		bad;
	tfm_status	se;

	if (map->seen[e - map->entries])
	{
		snprintf(err, errlen, "tensor \"%s\" appears twice (with and without the prefix \"%s\")",
				 e->name, map->prefix ? map->prefix : "");
		return -1;
	}
	map->seen[e - map->entries] = true;
	for (int i = 0; shape_ok && i < e->ndim; i++)
		if (e->dims[i] >= 0 && (uint64_t) e->dims[i] != t->dims[i])
			shape_ok = false;
	if (!shape_ok)
	{
		char		want[96],
					got[160];

		shape_str(want, sizeof(want), e->ndim, e->dims, NULL);
		shape_str(got, sizeof(got), t->ndim, NULL, t->dims);
		snprintf(err, errlen, "tensor \"%s\" has shape %s, the config implies %s",
				 t->name, got, want);
		return -1;
	}
	if (e->use == TFM_HF_BUFFER)
		return 0;
	if (!tfm_st_dtype_is_float(t->dtype))
	{
		snprintf(err, errlen, "tensor \"%s\" has dtype %s; weights must be F32, F16 or BF16",
				 t->name, tfm_st_dtype_name(t->dtype) ? tfm_st_dtype_name(t->dtype) : "?");
		return -1;
	}
	p = tfm_model_find(m, e->target);
	if (p && e->use == TFM_HF_SLICE)
	{
		/* a 2-D (out, in) into columns col0.. of (in, width); 1-D into col0.. */
		size_t		width = p->ndim == 2 ? (size_t) p->dims[1] : (size_t) p->dims[0];
		size_t		rows = t->ndim == 2 ? (size_t) t->dims[1] : 1;
		size_t		cols = (size_t) t->dims[0];

		if (t->ndim != p->ndim || rows != (size_t) (p->ndim == 2 ? p->dims[0] : 1) ||
			e->col0 < 0 || (size_t) e->col0 + cols > width)
			p = NULL;
	}
	else if (p && e->use == TFM_HF_TRANSPOSE_COLS)
	{
		/* a 2-D (a, b) into columns col0 .. col0+a-1 of (b, width) */
		if (p->ndim != 2 || (uint64_t) p->dims[0] != t->dims[1] ||
			e->col0 < 0 || (uint64_t) e->col0 + t->dims[0] > (uint64_t) p->dims[1])
			p = NULL;
	}
	else if (p && p->size != n)
		p = NULL;
	if (!p)
	{
		snprintf(err, errlen, "tensor \"%s\" has no place in the model. Please report a bug.",
				 t->name);
		return -1;
	}
	if (e->use == TFM_HF_COPY || e->use == TFM_HF_COPY_PLUS1)
		dst = m->params + p->offset;
	else
	{
		tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
		if (!tmp)
		{
			snprintf(err, errlen, "out of memory converting tensor \"%s\"", t->name);
			return -1;
		}
		dst = tmp;
	}
	if (tfm_st_tensor_to_f32(dst, t, src, (size_t) (t->end - t->begin), &se) != TFM_OK)
	{
		snprintf(err, errlen, "%s", se.msg);
		free(tmp);
		return -1;
	}
	if (tfm_st_find_nonfinite(&bad, dst, n))
	{
		snprintf(err, errlen, "tensor \"%s\" holds %s at index %zu", t->name,
				 isnan(dst[bad]) ? "NaN" : "an infinity", bad);
		free(tmp);
		return -1;
	}
	if (e->use == TFM_HF_COPY_PLUS1)
	{
		for (size_t i = 0; i < n; i++)
			dst[i] += 1.0f;
	}
	else if (e->use == TFM_HF_SLICE)
	{
		/* file (cols = out features, rows = in features) -> tfm row r, column col0 + c */
		size_t		width = p->ndim == 2 ? (size_t) p->dims[1] : (size_t) p->dims[0];

		transpose_into(m->params + p->offset + e->col0, width, tmp, (size_t) t->dims[0],
					   t->ndim == 2 ? (size_t) t->dims[1] : 1);
		free(tmp);
	}
	else if (e->use == TFM_HF_TRANSPOSE)
	{
		/* (a, b) in the file -> (b, a) in tfm */
		transpose_into(m->params + p->offset, (size_t) t->dims[0], tmp, (size_t) t->dims[0],
					   (size_t) t->dims[1]);
		free(tmp);
	}
	else if (e->use == TFM_HF_TRANSPOSE_COLS)
	{
		/* (a, b) in the file -> columns col0 .. col0+a-1 of a (b, width) tensor */
		transpose_into(m->params + p->offset + (size_t) e->col0, (size_t) p->dims[1], tmp,
					   (size_t) t->dims[0], (size_t) t->dims[1]);
		free(tmp);
	}
	else if (e->use == TFM_HF_TIED)
	{
		free(map->tied);
		map->tied = tmp;
		map->tied_entry = e;
	}
	else if (e->use == TFM_HF_SHARED)
	{
		/* the first name to come fills the tensor; every other must hold the same */
		float	   *target = m->params + p->offset;
		bool		same = !map->shared_loaded || memcmp(target, tmp, sizeof(float) * n) == 0;

		if (!map->shared_loaded)
			memcpy(target, tmp, sizeof(float) * n);
		map->shared_loaded = true;
		free(tmp);
		if (!same)
		{
			snprintf(err, errlen, "tensor \"%s\" differs from the embedding it is tied to "
					 "(Marian's shared, encoder, decoder and output embeddings are one)", t->name);
			return -1;
		}
	}
	return 0;
}

int
tfm_hf_finish(const tfm_model *m, const tfm_hf_map *map, char *err, size_t errlen)
{
	for (int i = 0; i < map->n; i++)
		if (map->entries[i].use == TFM_HF_SHARED && !map->shared_loaded)
		{
			snprintf(err, errlen, "tensor \"%s%s\" is missing (or any of its tied names)",
					 map->entries[i].prefixable && map->prefix ? map->prefix : "",
					 map->entries[i].name);
			return -1;
		}
	for (int i = 0; i < map->n; i++)
		if (map->entries[i].required && !map->seen[i])
		{
			snprintf(err, errlen, "tensor \"%s%s\" is missing",
					 map->entries[i].prefixable && map->prefix ? map->prefix : "",
					 map->entries[i].name);
			return -1;
		}
	if (map->tied)
	{
		const tfm_param_info *p = tfm_model_find(m, map->tied_entry->target);

		if (!p || memcmp(map->tied, m->params + p->offset, sizeof(float) * p->size) != 0)
		{
			snprintf(err, errlen, "tensor \"%s\" differs from the embedding it is tied to "
					 "(tie_word_embeddings is true)", map->tied_entry->name);
			return -1;
		}
	}
	return 0;
}
