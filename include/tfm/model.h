/*
 * model.h — a transformer from one config: the encoder classifier, the
 * decoder-only language model and the encoder-decoder (see doc/model.md for
 * every tensor's name and shape).
 *
 * Parameters, gradients and the optimizer's moments share one layout: one
 * allocation each, with named tensors carved out of it at fixed offsets
 * (tfm_param_info).  Activations live in a workspace sized for the largest
 * batch seen, so a step allocates nothing once warm.
 */
#ifndef TFM_MODEL_H
#define TFM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/layers.h"
#include "tfm/limits.h"
#include "tfm/status.h"

/* the serialized format of a model's tensors; bump on any layout change */
#define TFM_FORMAT_VERSION 1

typedef enum tfm_task
{
	TFM_TASK_CLASSIFY = 0,
	TFM_TASK_LM = 1,
	TFM_TASK_SEQ2SEQ = 2
} tfm_task;

typedef enum tfm_norm
{
	TFM_NORM_POST = 0,
	TFM_NORM_PRE = 1
} tfm_norm;

typedef enum tfm_positions
{
	TFM_POS_LEARNED = 0,
	TFM_POS_SINUSOIDAL = 1,
	TFM_POS_ROPE = 2,			/* rotary, applied to queries and keys (llama) */
	TFM_POS_RELATIVE = 3		/* T5's bucketed relative position bias in the attention */
} tfm_positions;

/* a llama block's gated feed-forward: act(gate) ⊙ up */
typedef enum tfm_gated_act
{
	TFM_GATED_SILU = 0,			/* SwiGLU (Llama, Qwen2, Mistral, Phi-3) */
	TFM_GATED_GELU_TANH = 1		/* GeGLU with GELU's tanh form (Gemma) */
} tfm_gated_act;

/* block architecture: tfm's own, or Llama's (layers_llama.h, llama_block.c) */
typedef enum tfm_arch
{
	TFM_ARCH_TFM = 0,
	TFM_ARCH_LLAMA = 1,			/* RMSNorm, rotary, SwiGLU, grouped-query, no biases
								 * but optionally q/k/v's (qkv_bias, Qwen2) */
	TFM_ARCH_T5 = 2				/* T5's encoder-decoder (t5_block.c): RMSNorm, relative
								 * position bias, unscaled scores, no biases */
} tfm_arch;

typedef enum tfm_pooling
{
	TFM_POOL_MEAN = 0,
	TFM_POOL_CLS = 1
} tfm_pooling;

typedef struct tfm_config
{
	int			task;			/* tfm_task */
	int			vocab;			/* (source) vocabulary */
	int			tgt_vocab;		/* seq2seq target vocabulary, 0 = shared */
	int			d_model;
	int			heads;
	int			enc_layers;		/* classify, seq2seq */
	int			dec_layers;		/* lm, seq2seq */
	int			d_ff;
	int			max_len;
	int			n_classes;		/* classify */
	int			norm;			/* tfm_norm */
	int			positions;		/* tfm_positions */
	int			activation;		/* tfm_activation */
	int			pooling;		/* tfm_pooling, classify */
	int			tie;			/* output projection tied to the embedding */
	int			scale_embeddings;	/* multiply embeddings by √d_model */
	int			pad_id;			/* -1: no padding token (imported models) */
	float		dropout;		/* after sub-layers, in FF, on embeddings */
	float		attn_dropout;	/* on attention weights */
	float		ln_eps;			/* layer norm epsilon; 0 = TFM_LN_EPS (1e-5) */
	/* fields added for Llama; 0 keeps tfm's own blocks */
	int			arch;			/* tfm_arch */
	int			kv_heads;		/* key/value heads; 0 = heads */
	float		rope_theta;		/* rotary base (positions rope) */
	int			qkv_bias;		/* llama: q/k/v projections have a bias (Qwen2) */
	int			gated_act;		/* llama: the gate's activation, tfm_gated_act (Gemma: GeGLU) */
	/* Gemma 2 (llama blocks); 0 everywhere = none of it */
	int			post_norms;		/* RMSNorm (post_attn.g, post_ff.g) on the attention's and the
								 * feed-forward's outputs before their residual sums */
	float		attn_scale;		/* the attention scores' scale; 0 = 1/√(head size) */
	float		attn_softcap;	/* scores c·tanh(s/c) before the softmax; 0 none */
	float		final_softcap;	/* output logits c·tanh(z/c); 0 none */
	int			head_size;		/* llama: a head's width; 0 = d_model / heads (Gemma's head_dim) */
	/* BERT-family encoders (classify only); 0 everywhere = tfm's own encoder */
	int			type_vocab;		/* rows of type_emb; type 0 is added to every position */
	int			emb_norm;		/* layer norm emb_ln on the summed embeddings */
	int			pos_offset;		/* row of pos_emb for position 0 (RoBERTa: 2) */
	int			cls_pre;		/* tfm_cls_pre: a dense layer between pooling and cls */
	int			token_head;		/* tfm_token_head: cls.* also read every token's top
								 * row (token classification, question answering) */
	/* Marian (imported encoder-decoders); 0 everywhere = tfm's own */
	int			sinus_halves;	/* sinusoidal positions with sin in the first half of the
								 * columns and cos in the second, not interleaved */
	int			out_bias;		/* lm, seq2seq: the logits' bias out.b (final_logits_bias) */
	/* T5 (arch t5, positions relative; head_size is d_kv); 0 everywhere = none of it */
	int			rel_buckets;	/* relative_attention_num_buckets */
	int			rel_max_distance;	/* relative_attention_max_distance */
	int			ff_gated;		/* feed-forward act(x·wi_0) ⊙ (x·wi_1) (gated-gelu: GeGLU) */
	/* rotary scaling (llama blocks, tfm_rope_type); 0 everywhere = none */
	int			rope_type;		/* TFM_ROPE_LLAMA3: Llama 3.1's per-frequency scaling */
	float		rope_factor;	/* factor */
	float		rope_low_freq;	/* low_freq_factor */
	float		rope_high_freq; /* high_freq_factor */
	int			rope_orig_max;	/* original_max_position_embeddings */
	/* Qwen3 (llama blocks): RMSNorm of each query and key head (q_norm.g, k_norm.g, s wide)
	 * before the rotation; 0 = none */
	int			qk_norm;
	/* SmolLM3 (llama blocks): layer i has no rotary positions (NoPE) when
	 * (i + 1) % nope_interval == 0; 0 = every layer rotates */
	int			nope_interval;
	/* a sliding window (llama blocks): a query sees its last attn_window keys, in every
	 * layer (window_pattern 0: Mistral, Phi-3) or in the layers i with
	 * (i + 1) % window_pattern != 0 (Gemma 2: 2); 0 = none */
	int			attn_window;
	int			window_pattern;
	/* Gemma 3 (llama blocks): the windowed layers rotate with this base, unscaled
	 * (rope_local_base_freq), the others with rope_theta and rope_type's scaling;
	 * 0 = every layer as the others */
	float		rope_local_theta;
	/* Phi-4-mini (llama blocks, partial_rotary_factor): each head rotates its first
	 * rope_dim values only (even, at most the head size); 0 = all of them */
	int			rope_dim;
	/* longrope (TFM_ROPE_LONGROPE, Phi-3.5 and Phi-4-mini): inv_i = 1/(f_i·θ^(2i/r)), r the
	 * rotated width, f rope_short while a pass's sequence is at most rope_orig_max long,
	 * rope_long past it (tfm_config_rope_long); cos and sin times rope_attn_factor */
	float		rope_attn_factor;
	float		rope_short[TFM_ROPE_FACTORS_MAX];	/* r/2 of them */
	float		rope_long[TFM_ROPE_FACTORS_MAX];
} tfm_config;

/* the rotary frequencies: θ's alone, or rescaled (rope.c, tfm_rope_inv_freq) */
typedef enum tfm_rope_type
{
	TFM_ROPE_DEFAULT = 0,
	TFM_ROPE_LLAMA3 = 1,		/* wavelengths past orig_max/low_freq divided by factor,
								 * those under orig_max/high_freq kept, smoothly between */
	TFM_ROPE_LINEAR = 2,		/* every frequency divided by factor (Gemma 3's global layers) */
	TFM_ROPE_LONGROPE = 3		/* per-frequency short or long factors, cos/sin scaled (Phi-3.5) */
} tfm_rope_type;

/* does layer i of a llama config go without rotary positions (SmolLM3's NoPE layers)? */
static inline int
tfm_config_nope(const tfm_config *c, int layer)
{
	return c->nope_interval > 0 && (layer + 1) % c->nope_interval == 0;
}

/* the sliding window of layer i of a llama config (0: it attends to every key) */
static inline int
tfm_config_window(const tfm_config *c, int layer)
{
	if (c->attn_window <= 0 || (c->window_pattern > 0 && (layer + 1) % c->window_pattern == 0))
		return 0;
	return c->attn_window;
}

/*
 * the rotary inverse frequencies of layer `layer` of a llama config:
 * inv (tfm_config_rope_dim / 2) for a pass over a sequence seq_len long
 * (its last position + 1: longrope's choice of factors, rope_freqs.c)
 */
void		tfm_config_rope_freqs(float *inv, const tfm_config *c, int layer, int seq_len);

/* does a pass over seq_len positions take longrope's long factors?  (transformers'
 * longrope update: the sequence, max(position_ids) + 1, past original_max_position_embeddings) */
static inline int
tfm_config_rope_long(const tfm_config *c, int seq_len)
{
	return c->rope_type == TFM_ROPE_LONGROPE && seq_len > c->rope_orig_max;
}

/* cos and sin's factor (longrope's attention factor; 1 otherwise) */
static inline float
tfm_config_rope_scale(const tfm_config *c)
{
	return c->rope_type == TFM_ROPE_LONGROPE && c->rope_attn_factor > 0.0f ? c->rope_attn_factor : 1.0f;
}

/* key/value heads, a head's width, the queries' and the keys' widths, and the fused Q|K|V projection's width */
static inline int
tfm_config_kv_heads(const tfm_config *c)
{
	return c->kv_heads > 0 ? c->kv_heads : c->heads;
}

static inline int
tfm_config_head_size(const tfm_config *c)
{
	return c->head_size > 0 ? c->head_size : c->d_model / c->heads;
}

/* the rotated width of a head: rope_dim (partial_rotary_factor), or the whole head */
static inline int
tfm_config_rope_dim(const tfm_config *c)
{
	return c->rope_dim > 0 ? c->rope_dim : tfm_config_head_size(c);
}

/* heads · head size: d_model unless head_size says otherwise (the attention's output width) */
static inline int
tfm_config_q_dim(const tfm_config *c)
{
	return c->head_size > 0 ? c->heads * c->head_size : c->d_model;
}

static inline int
tfm_config_kv_dim(const tfm_config *c)
{
	return tfm_config_kv_heads(c) * tfm_config_head_size(c);
}

static inline int
tfm_config_qkv_width(const tfm_config *c)
{
	return tfm_config_q_dim(c) + 2 * tfm_config_kv_dim(c);
}

/* the first feed-forward projection's width: Llama's is gate | up */
static inline int
tfm_config_ff1_width(const tfm_config *c)
{
	return c->arch == TFM_ARCH_LLAMA || c->ff_gated ? 2 * c->d_ff : c->d_ff;
}

/* the scale of the decoder's top output before a tied head (T5: d_model^-½), else 1 */
float		tfm_config_out_scale(const tfm_config *c);

/* the classifier's optional dense layer after pooling (cls.pre.w, cls.pre.b) */
typedef enum tfm_cls_pre
{
	TFM_CLS_PRE_NONE = 0,
	TFM_CLS_PRE_TANH = 1,		/* BERT's pooler, RoBERTa's classifier.dense */
	TFM_CLS_PRE_RELU = 2		/* DistilBERT's pre_classifier */
} tfm_cls_pre;

/*
 * A classifier whose head reads every token (tfm_batch.token_logits): the
 * cls.* layer on each token's top row, no pre-classifier layer.  Its
 * pooled logits (the first token's) are not a prediction of the text.
 */
typedef enum tfm_token_head
{
	TFM_TOKEN_HEAD_NONE = 0,
	TFM_TOKEN_HEAD_TAGS = 1,	/* a label per token (...ForTokenClassification) */
	TFM_TOKEN_HEAD_SPANS = 2	/* a start and an end logit per token
								 * (...ForQuestionAnswering's qa_outputs) */
} tfm_token_head;

/* the layer norm epsilon a config means */
static inline float
tfm_config_ln_eps(const tfm_config *c)
{
	return c->ln_eps > 0.0f ? c->ln_eps : TFM_LN_EPS;
}

typedef struct tfm_param_info
{
	char		name[48];
	int			ndim;
	int			dims[2];
	size_t		offset;			/* in floats, from the start of the block */
	size_t		size;			/* in floats */
	bool		decay;			/* weight decay applies (matrices) */
} tfm_param_info;

/* pointers to one block's tensors; cross-attention ones are NULL if absent */
typedef struct tfm_block_w
{
	float	   *qkv_w,			/* (d, 3d) */
			   *qkv_b,			/* (3d) */
			   *attn_out_w,		/* (d, d) */
			   *attn_out_b,		/* (d) */
			   *ln1_g,
			   *ln1_b;			/* (d) */
	float	   *cq_w,			/* (d, d) */
			   *cq_b,			/* (d) */
			   *ckv_w,			/* (d, 2d) */
			   *ckv_b,			/* (2d) */
			   *cout_w,			/* (d, d) */
			   *cout_b,			/* (d) */
			   *lnx_g,
			   *lnx_b;			/* (d) */
	float	   *ff1_w,			/* (d, f) */
			   *ff1_b,			/* (f) */
			   *ff2_w,			/* (f, d) */
			   *ff2_b,			/* (d) */
			   *ln2_g,
			   *ln2_b;			/* (d) */
	float	   *post_attn_g,
			   *post_ff_g;		/* (d) llama blocks with post_norms (Gemma 2) */
	float	   *q_norm_g,
			   *k_norm_g;		/* (s) llama blocks with qk_norm (Qwen3) */
} tfm_block_w;

/* pointers to all tensors of a model (parameters, or their gradients) */
typedef struct tfm_weights
{
	float	   *tok_emb;		/* (V, d) */
	float	   *tgt_emb;		/* (Vt, d) seq2seq with its own target vocabulary */
	float	   *pos_emb;		/* (pos_offset + max_len, d) learned, encoder or LM stack */
	float	   *type_emb;		/* (type_vocab, d) token types (BERT) */
	float	   *emb_ln_g,
			   *emb_ln_b;		/* (d) embedding layer norm (BERT family) */
	float	   *cls_pre_w;		/* (d, d) dense layer after pooling */
	float	   *cls_pre_b;		/* (d) */
	float	   *dec_pos_emb;	/* (max_len, d) learned, seq2seq decoder */
	float	   *out_w;			/* (d, V) untied output projection */
	float	   *cls_w;			/* (d, C) */
	float	   *cls_b;			/* (C) */
	float	   *enc_lnf_g,
			   *enc_lnf_b;		/* (d) pre-LN only */
	float	   *dec_lnf_g,
			   *dec_lnf_b;		/* (d) pre-LN only */
	tfm_block_w *enc;			/* [enc_layers] */
	tfm_block_w *dec;			/* [dec_layers] */
	float	   *out_b;			/* (V) the logits' bias (out_bias) */
	float	   *enc_rel_bias,
			   *dec_rel_bias;	/* (rel_buckets, heads) T5's relative position bias */
} tfm_weights;

typedef struct tfm_batch
{
	int			B;
	int			T;				/* encoder / LM length */
	const int32_t *input;		/* (B, T) encoder input or LM input */
	int			Tt;				/* seq2seq decoder length */
	const int32_t *dec_input;	/* (B, Tt) seq2seq: <bos> + target */
	const int32_t *target;		/* lm (B, T); seq2seq (B, Tt); pad = ignored */
	const int32_t *labels;		/* classify (B) */
	const float *scores;		/* classify with one logit, instead of labels: (B)
								 * targets in [0, 1] of a binary cross-entropy on
								 * the logit (tfm_bce_logits: a cross-encoder) */
	const int32_t *token_labels;	/* a token_head tags classifier: (B, T) each
								 * token's label, TFM_LABEL_IGNORE where none */
	const int32_t *spans;		/* a token_head spans model: (B, 2) each row's start
								 * and end token (tfm_span_cross_entropy) */
	/*
	 * classify inference, varlen: B texts of lens[i] ids each, concatenated
	 * in input (no padding; T is the longest).  Their rows share the
	 * linear layers', norms' and activations' products, attention runs on
	 * each text's own rows, and each text's logits and pooled vector are
	 * bit for bit what a varlen pass of it alone gives.  NULL: (B, T) padded.
	 */
	const int  *lens;
	const int32_t *types;		/* BERT-family encoder: token type ids laid out
								 * as input ((B, T), or concatenated with lens;
								 * a pair's second segment 1), or NULL for
								 * type 0 everywhere */
	float	   *token_logits;	/* a varlen pass of a token_head classifier: the
								 * caller's (rows, n_classes) buffer, each row's
								 * head logits (N: the sum of lens), or NULL */
	bool		keep_attention; /* inference: keep every layer's attention weights
								 * for tfm_model_attention (a workspace for
								 * training always keeps them) */
} tfm_batch;

typedef struct tfm_workspace tfm_workspace;

typedef struct tfm_model
{
	tfm_config	cfg;
	int			n_tensors;
	tfm_param_info *info;
	size_t		n_floats;		/* floats in the parameter block (tensors padded) */
	size_t		n_params;		/* parameters in all */
	float	   *params;
	/*
	 * Set when the parameter block is borrowed (a read-only mapping shared by
	 * processes): tfm_model_free calls it instead of free().  Such a model is
	 * for inference only.
	 */
	void		(*release_params) (float *params, void *arg);
	void	   *release_arg;
	float	   *grads;			/* NULL until the first backward pass */
	struct tfm_lowp_set *lowp;	/* packed matrices for bf16/int8 inference (precision.c) */
	struct tfm_lowp_set *lowp_train;	/* bf16 copies for mixed-precision training */
	struct tfm_lowp_set *rows32;	/* fp32 matrices packed for the row-exact products
									 * of varlen passes (tfm_model_pack_rows) */
	tfm_weights w;
	tfm_weights g;
	tfm_workspace *ws;
	tfm_workspace **lanes;		/* tfm_model_forward_lanes: lane t's workspace
								 * (t ≥ 1; lane 0 takes ws), or NULL */
	/*
	 * A workspace grown for a new batch shape covers the old shapes too
	 * unless that union would take more than ws_limit bytes (0: no limit);
	 * then it fits the new shape alone.  A host sets it to the limit it
	 * checks tfm_model_workspace_bytes against.
	 */
	size_t		ws_limit;
	/*
	 * Activation checkpointing: a training pass keeps only each block's
	 * input (the previous block's output) and recomputes the block's forward
	 * pass, into one block's activations shared by every layer, just before
	 * its backward pass: memory for one block instead of one per layer, for
	 * about one more forward pass (dropout replays the same masks, so the
	 * gradients are the plain backward's, bit for bit).  tfm_trainer_init
	 * sets it from its options.
	 */
	bool		checkpoint_activations;
	/* outputs of the last forward pass */
	float	   *logits;			/* classify (B, C), a token_head's padded pass (B·T, C);
								 * lm (B·T, V); seq2seq (B·Tt, V) */
	float	   *pooled;			/* classify (B, d) */
	float	   *hidden;			/* top of the last stack (rows, d) */
	float	   *memory;			/* seq2seq: top encoder output (B·T, d) */
	/*
	 * Called on the calling thread between blocks of every pass, never from
	 * a parallel region, so a host can notice a cancel request within a
	 * fraction of a step (it may leave the pass by longjmp: the passes keep
	 * nothing but their workspace, and the optimizer step never polls).
	 * tfm_model_init and tfm_hf_load_tensor call it too.
	 */
	void		(*poll) (void *arg);
	void	   *poll_arg;
	/*
	 * Set on the lanes' copies of the model only (tfm_model_forward_lanes,
	 * whose threads must not call poll): read between blocks of a varlen
	 * pass, nonzero stops it with TFM_ECANCELED.  NULL everywhere else.
	 */
	const volatile int *stop;
	/* int4 blocks kept as a file gave them (tfm/precision.h; NULL: none) */
	struct tfm_int4_kept_set *int4_kept;
	/*
	 * Tensors whose float32 values were never made (tfm/kept_block.h:
	 * tfm_model_leave_absent): per tensor 1 = its values are only the kept
	 * blocks', read through them at gguf; NULL: every value is in params.
	 * absent_floats counts their values; floats_made the values made from
	 * blocks since (tfm_model_make_floats).
	 */
	uint8_t    *absent;
	/* how they are made (tfm_model_make_floats, set with absent): precision.c
	 * calls it when the model leaves gguf, without depending on absent_floats.c */
	int			(*make_floats) (struct tfm_model *m);
	size_t		absent_floats;
	size_t		floats_made;
	size_t		params_mapped;	/* params is an anonymous mapping of that many bytes
								 * (its untouched pages take no memory), else 0 */
} tfm_model;

/* NULL if valid, else a message naming the problem */
const char *tfm_config_check(const tfm_config *cfg);
/* defaults for a task (sizes from TRAINING-NOTES' reference recipes) */
void		tfm_config_defaults(tfm_config *cfg, tfm_task task);
/* the tensor list of a config; returns the count, fills *info (malloc'd) */
int			tfm_config_tensors(const tfm_config *cfg, tfm_param_info **info,
							   size_t *n_floats);

/* allocate (NULL on out-of-memory); parameters are zero until init or load */
tfm_model  *tfm_model_create(const tfm_config *cfg);
void		tfm_model_free(tfm_model *m);
/*
 * A model over a parameter block the caller provides (n_floats + 16 floats,
 * 64-byte aligned, laid out as tfm_config_tensors says), released by
 * release(params, arg) when the model is freed.  NULL on out-of-memory (the
 * block is then not released).
 */
tfm_model  *tfm_model_create_borrowed(const tfm_config *cfg, float *params,
									  void (*release) (float *params, void *arg), void *arg);
/* initial weights; calls m->poll (if set) between tensors and every 2^20 values */
void		tfm_model_init(tfm_model *m, uint64_t seed);
/* tfm_model_init's values for the tensors which[i] names only (NULL: all) */
void		tfm_model_init_some(tfm_model *m, uint64_t seed, const bool *which);
const tfm_param_info *tfm_model_find(const tfm_model *m, const char *name);
/*
 * Bytes a pass over a batch shape allocates (an upper bound, to check before
 * allocating): the activation workspace, its sinusoid table and, with
 * TFM_WS_LOWP, the work buffers of bf16/int8 products (TFM_WS_INT4: of
 * int4's; tfm_decoder_bytes counts bf16/int8's only).  Not counted: the
 * parameters, their gradients and the optimizer's moments (proportional to
 * the parameters, not to the batch).  Tt: seq2seq decoder length.
 */
#define TFM_WS_TRAINING  1		/* backward buffers and every layer's attention weights */
#define TFM_WS_ATTENTION 2		/* attention weights kept for tfm_model_attention */
#define TFM_WS_LOWP      4		/* products at bf16 or int8 */
#define TFM_WS_CHECKPOINT 8		/* with TFM_WS_TRAINING: one block's activations
								 * (m->checkpoint_activations) */
#define TFM_WS_INT4      16		/* products at int4: its fp32 weight tiles (up to 4 MB) */
size_t		tfm_model_workspace_bytes(const tfm_config *cfg, int B, int T, int Tt,
									  int flags, int threads);

/* a pass's failures: TFM_ENOMEM and TFM_EBADID of tfm/status.h */

/*
 * Forward pass; fills m->logits (and pooled / hidden / memory).  training
 * enables dropout with masks derived from dropout_key.  Returns 0,
 * TFM_ENOMEM (-1) if memory for the workspace could not be had, or
 * TFM_EBADID (-2) if an input id is not a row of its embedding.  A varlen
 * batch (lens) must be a classifier's inference pass (not training, no
 * keep_attention) with every length in 1..T: else -1.
 */
int			tfm_model_forward(tfm_model *m, const tfm_batch *batch,
							  bool training, uint64_t dropout_key);

/*
 * n varlen inference passes of a classifier (b[i].lens set) at once, on up
 * to tfm_get_threads() threads, each running whole passes on a workspace
 * of its own (a lane; about tfm_model_workspace_bytes of its batch's shape
 * at one thread, kept for the next call).  Pass i's logits (B, n_classes)
 * go to logits[i] and its pooled vectors (B, d_model) to pooled[i] (either
 * array, or an element, may be NULL; a token head's rows go to its
 * batch's token_logits), the same bits as tfm_model_forward of it alone.
 * m->poll is not called: where stop (the host's cancel flag, or NULL)
 * reads nonzero between two blocks, the passes stop with TFM_ECANCELED
 * (the caller then polls, and runs again those that stopped if that did
 * not end the call).  Pass i's status to status[i] (status may be NULL);
 * returns 0, or the lowest status among the passes (the others still ran).
 */
int			tfm_model_forward_lanes(tfm_model *m, const tfm_batch *b, int n,
									float *const *logits, float *const *pooled,
									const volatile int *stop, int *status);
/* frees the lanes' workspaces (tfm_model_free and tfm_model_trim do) */
void		tfm_model_free_lanes(tfm_model *m);
/* the bytes of the activation workspaces m keeps between passes: its own and its lanes' */
size_t		tfm_model_held_bytes(const tfm_model *m);

/*
 * Loss of the last forward pass against the batch's targets: returns the sum
 * of per-target losses and the number of targets; with backward, also
 * accumulates grad_scale · d(sum)/d(params) into m->grads (allocating them on
 * first use).  Returns NaN if memory could not be had; NaN with *count -1
 * (nothing read or written) if a target other than the pad id is outside
 * the output vocabulary.
 */
double		tfm_model_loss_backward(tfm_model *m, const tfm_batch *batch,
									float label_smoothing, bool backward,
									float grad_scale, int *count);

void		tfm_model_zero_grad(tfm_model *m);
/* free what only training needs (gradients, the training workspace) */
void		tfm_model_trim(tfm_model *m);

/*
 * After a forward pass: the attention weights of one layer, (B, heads, Tq,
 * Tk).  decoder picks the decoder stack (lm, seq2seq); cross its
 * cross-attention (seq2seq).  NULL if there is no such layer.
 */
const float *tfm_model_attention(const tfm_model *m, int layer, bool decoder, bool cross);

#endif							/* TFM_MODEL_H */
