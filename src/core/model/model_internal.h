/*
 * model_internal.h — the model's activation workspace and the block-level
 * passes shared by the files of src/core/model and by decode/decode.c.
 * Not public API.
 */
#ifndef TFM_MODEL_INTERNAL_H
#define TFM_MODEL_INTERNAL_H

#include "tfm/model.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"
#include "../kernels/lowp/lowp_set.h"

/*
 * The packed copies of a block's matrices (NULL: fp32), beside its
 * tfm_block_w, and of the model's: an index into one set of packed weights
 * (model/precision.c fills it as it packs, the set owns it).
 */
typedef struct tfm_block_packed
{
	const tfm_lowp_entry *qkv,
			   *attn_out,
			   *cq,
			   *ckv,
			   *cout,
			   *ff1,
			   *ff2;
} tfm_block_packed;

typedef struct tfm_packed_w
{
	tfm_block_packed *enc,		/* enc_layers */
			   *dec;			/* dec_layers */
	const tfm_lowp_entry *head,	/* the output head (the embedding when tied) */
			   *cls,
			   *cls_pre;		/* training sets only */
} tfm_packed_w;

/* the index of a set of packed weights (NULL: none, fp32) */
static inline const tfm_packed_w *
tfm_packed_of(const struct tfm_lowp_set *s)
{
	return s ? (const tfm_packed_w *) s->index : NULL;
}

/* what one block keeps from its forward pass for its backward pass */
typedef struct tfm_block_acts
{
	const float *in;			/* (N, d) block input, owned by the previous stage */
	float	   *u1,				/* (N, d) pre-LN: ln1(in) */
			   *ln1_mean,
			   *ln1_rstd,		/* (N) */
			   *qkv,			/* (N, 3d) */
			   *probs,			/* (B, h, T, T) */
			   *cat,			/* (N, d) heads concatenated */
			   *r1,				/* (N, d) in + drop(attn) */
			   *x1,				/* (N, d) post-LN: ln1(r1) */
			   *qk_pre,			/* (N, h·s + kv·s) queries and keys before their norms (Qwen3) */
			   *qk_rstd;		/* (N, h + kv) each head's rstd of those norms */
	float	   *u2,				/* cross-attention: same pattern */
			   *lnx_mean,
			   *lnx_rstd,
			   *cq,				/* (N, d) */
			   *ckv,			/* (B·Ts, 2d) */
			   *cprobs,			/* (B, h, T, Ts) */
			   *ccat,
			   *r2,
			   *x2;
	float	   *u3,				/* feed-forward */
			   *ln2_mean,
			   *ln2_rstd,
			   *hpre,			/* (N, f) before the activation */
			   *hact,			/* (N, f) after it */
			   *hd,				/* (N, f) after dropout (training only) */
			   *r3,
			   *out;			/* (N, d) post-LN: ln2(r3) */
} tfm_block_acts;

/*
 * A decoder's key/value cache (decode.c): for each layer the self-attention
 * keys and values of every position so far, and for seq2seq the
 * cross-attention keys|values of the encoder memory, computed once.
 */
typedef struct tfm_kv_layer
{
	float	   *k,
			   *v;				/* (B, cap, d) */
	float	   *ckv;			/* (B, Ts, 2d) or NULL */
} tfm_kv_layer;

typedef struct tfm_kv
{
	int			B,
				cap,			/* positions the cache holds */
				len;			/* positions filled */
	uint8_t    *pad;			/* (B, cap) 1 = pad key */
	tfm_kv_layer *layers;
	float	   *probs,			/* (B, h, nmax, cap) scratch */
			   *cprobs,			/* (B, h, nmax, Ts) scratch */
			   *scratch;		/* self-attention's, for up to cap keys */
	int			scratch_threads;	/* threads it is sized for */
} tfm_kv;

/* the shape of one stack's pass */
typedef struct tfm_stack_pass
{
	int			B,
				T;
	const uint8_t *pad;			/* (B, T) 1 = pad */
	bool		causal;
	const float *mem;			/* (B·Ts, d) cross-attention memory or NULL */
	const uint8_t *mem_pad;		/* (B, Ts) */
	int			Ts;
	bool		training;
	bool		keep_acts;		/* keep what a backward pass reads (attention weights,
								 * pre-activations): not in an inference-only workspace */
	uint64_t	key;			/* dropout key of this stack */
	tfm_kv	   *kv;				/* decoding with a cache, or NULL */
	const int32_t *pos;			/* (B·T) rotary positions; NULL = 0 .. T-1 */
	int			rope_len;		/* longrope: the sequence's length that picks the factors;
								 * 0 = its last position + 1 (tfm_pass_rope_len) */
	const tfm_block_packed *packed;	/* per layer, the matrices' packed copies; NULL: fp32 */
	const tfm_block_packed *panels; /* a varlen pass at fp32: per layer, the matrices'
									 * panels (tfm_model_pack_rows); NULL: none */
	/*
	 * varlen (B 1, T the rows of all): seg texts of seg_len[i] rows each,
	 * one after the other; attention within each, and every product
	 * row-exact (tfm_linear_rows_forward)
	 */
	const int  *seg_len;
	int			seg;
	/* T5 (t5_block.c): the stack's position bias, shared by its layers */
	const float *bias;			/* (h, T, keys) */
	float	   *dscores;		/* backward scratch: (B, h, T, T) the scores' gradient */
	float	   *dbias;			/* backward: (h, T, T) accumulates the bias's gradient */
} tfm_stack_pass;

struct tfm_workspace
{
	float	   *arena;
	size_t		floats;
	int			B,
				T,
				Tt;				/* capacity */
	bool		training;		/* capacity includes backward buffers */
	bool		probs;			/* and every layer's attention weights */
	bool		checkpoint;		/* one block's activations for all layers, each
								 * layer its own output (checkpointing) */
	bool		pass_training;	/* the last forward pass used dropout */
	uint64_t	pass_key;		/* and this dropout key */
	const int32_t *pass_types;	/* and these token types (NULL: type 0) */
	tfm_block_acts *enc,
			   *dec;
	float	   *enc_x,			/* (B·T, d) embeddings of the encoder / LM input */
			   *dec_x;			/* (B·Tt, d) */
	uint8_t    *enc_pad,
			   *dec_pad;
	float	   *enc_top,		/* (B·T, d) after enc.ln_f (pre-LN) */
			   *enc_lnf_mean,
			   *enc_lnf_rstd,
			   *dec_top,
			   *dec_lnf_mean,
			   *dec_lnf_rstd;
	float	   *pooled,			/* (B, d) */
			   *logits;			/* (rows, V or C); becomes dlogits in backward */
	float	   *capped;			/* (rows, V) training with final_softcap: the capped
								 * logits, for their backward pass */
	float	   *sub_out;		/* (rows, d) sub-layer output before dropout */
	float	   *emb_raw,		/* (B·T, d) embeddings before emb_ln (emb_norm) */
			   *emb_mean,
			   *emb_rstd;		/* (B·T) */
	float	   *pre_out;		/* (B, d) classifier's dense layer output (cls_pre) */
	/* backward scratch */
	float	   *g_a,
			   *g_b,			/* (rows, d) between blocks */
			   *g_x,
			   *g_y,
			   *g_t,
			   *g_u,			/* (rows, d) */
			   *g_h,			/* (rows, f) */
			   *g_qkv,			/* (rows, 3d) */
			   *g_ckv,			/* (B·Ts, 2d) */
			   *g_mem,			/* (B·Ts, d) */
			   *attn_scratch;
	float	   *enc_bias,		/* T5: (h, T, T) the encoder's position bias */
			   *dec_bias,		/* (h, Tt, Tt) the decoder's */
			   *g_scores,		/* training: (B, h, Tmax, Tmax) a layer's score gradients */
			   *g_enc_bias,		/* (h, T, T) the encoder bias's gradient, all layers */
			   *g_dec_bias;		/* (h, Tt, Tt) the decoder's */
	float	   *sinus;			/* sinusoidal table, sinus_rows rows */
	int			sinus_rows;
	int			threads;
};

void		tfm_point_weights(const tfm_config *cfg, tfm_weights *w, float *base);
int			tfm_model_alloc_grads(tfm_model *m);
void		tfm_workspace_free(tfm_workspace *ws);
int			tfm_workspace_reserve(tfm_model *m, int B, int T, int Tt, bool training,
								  bool probs);

/* model_forward.c: embeddings and the encoder stack alone (decode.c) */
/* 0, or -1 if an id is outside the table's vocabulary (nothing read) */
int			tfm_embed_tokens(tfm_model *m, float *out, const int32_t *ids, const float *tok,
							 const float *pos, int B, int T, int pos0);
/* NULL if an id is outside the vocabulary */
const float *tfm_encode_stack(tfm_model *m, const int32_t *src, int B, int Ts);

/* the sizes a block's passes work with */
typedef struct tfm_block_sizes
{
	int			d,				/* d_model */
				f,				/* d_ff */
				N,				/* rows: B · T */
				s,				/* a head's size */
				kvd,			/* a row's keys (as many values): kv_heads · s */
				qd,				/* a row's queries, the attention's output: heads · s */
				qw;				/* a row of queries|keys|values: qd + 2 · kvd */
	size_t		nd;				/* N · d */
	float		eps;			/* the norms' epsilon */
} tfm_block_sizes;

static inline tfm_block_sizes
tfm_block_sizes_of(const tfm_config *c, const tfm_stack_pass *p)
{
	return (tfm_block_sizes) {
		.d = c->d_model,
		.f = c->d_ff,
		.N = p->B * p->T,
		.s = tfm_config_head_size(c),
		.kvd = tfm_config_kv_dim(c),
		.qd = tfm_config_q_dim(c),
		.qw = tfm_config_qkv_width(c),
		.nd = (size_t) p->B * p->T * c->d_model,
		.eps = tfm_config_ln_eps(c),
	};
}

/*
 * A block's passes (block.c: the transformer's; llama_block.c: Llama's,
 * RMSNorm, rotary, grouped-query, SwiGLU).  Forward: in (N, d) to a->out,
 * keeping in a what backward reads.  Backward: dout, the gradient w.r.t.
 * the block's output (destroyed); dx receives (=) the gradient w.r.t. its
 * input; dmem accumulates cross-attention memory grads (none in Llama).
 */
typedef void tfm_block_forward_fn(const tfm_config *c, const tfm_block_w *w,
								  tfm_block_acts *a, tfm_workspace *ws,
								  const float *in, const tfm_stack_pass *p, int layer);
typedef void tfm_block_backward_fn(const tfm_config *c, const tfm_block_w *w,
								   tfm_block_w *g, const tfm_block_acts *a,
								   tfm_workspace *ws, float *dout, float *dx,
								   float *dmem, const tfm_stack_pass *p, int layer);

tfm_block_forward_fn tfm_block_forward,
			tfm_llama_block_forward,
			tfm_t5_block_forward;
tfm_block_backward_fn tfm_block_backward,
			tfm_llama_block_backward,
			tfm_t5_block_backward;

/* the passes of the model's architecture */
static inline tfm_block_forward_fn *
tfm_arch_block_forward(const tfm_config *c)
{
	return c->arch == TFM_ARCH_LLAMA ? tfm_llama_block_forward :
		c->arch == TFM_ARCH_T5 ? tfm_t5_block_forward : tfm_block_forward;
}

static inline tfm_block_backward_fn *
tfm_arch_block_backward(const tfm_config *c)
{
	return c->arch == TFM_ARCH_LLAMA ? tfm_llama_block_backward :
		c->arch == TFM_ARCH_T5 ? tfm_t5_block_backward : tfm_block_backward;
}

/* the cross-attention's query width (T5: heads · d_kv; else d_model) */
static inline int
tfm_config_cross_dim(const tfm_config *c)
{
	return c->arch == TFM_ARCH_T5 ? tfm_config_q_dim(c) : c->d_model;
}

/*
 * A block's self-attention, a->qkv -> a->cat: rows of qw floats (d of
 * queries, then kw of keys and kw of values).  Decoding (p->kv), this
 * step's keys and values are appended to the cache of the layer and the
 * queries attend over it; sh (from the block) is set for the cache.
 */
void		tfm_block_self_attention(tfm_block_acts *a, tfm_workspace *ws,
									 const tfm_stack_pass *p, int layer, tfm_attn_shape *sh,
									 int d, int kw, int qw);

/* dropout keys per site */
enum
{
	SITE_EMB = 0,
	SITE_ATTN_P,
	SITE_ATTN_OUT,
	SITE_CROSS_P,
	SITE_CROSS_OUT,
	SITE_FF_H,
	SITE_FF_OUT
};

static inline uint64_t
site_key(uint64_t stack_key, int layer, int site)
{
	return tfm_subkey(stack_key, (uint64_t) layer * 16 + site);
}

/* a sinusoidal model's position table, rows 0 .. n-1, in its layout (Marian's: halves) */
static inline void
tfm_config_sinusoids(const tfm_config *c, float *out, int n)
{
	if (c->sinus_halves)
		tfm_sinusoid_table_halves(out, n, c->d_model, 0);
	else
		tfm_sinusoid_table(out, n, c->d_model, 0);
}

/* logits (rows, V) += the output bias out.b of a model with out_bias */
static inline void
tfm_add_out_bias(const tfm_model *m, float *logits, int rows, int V)
{
	if (!m->cfg.out_bias)
		return;
	for (int r = 0; r < rows; r++)
		for (int v = 0; v < V; v++)
			logits[(size_t) r * V + v] += m->w.out_b[v];
}

/* the decoder's length in a batch: a language model's input, else the target's */
static inline int
tfm_model_dec_len(const tfm_config *c, int T, int Tt)
{
	return c->task == TFM_TASK_LM ? T : Tt;
}

#endif							/* TFM_MODEL_INTERNAL_H */
