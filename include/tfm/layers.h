/*
 * layers.h — forward and backward of every transformer layer, as free
 * functions over float buffers (llm.c style): outputs first, then inputs,
 * then sizes.  They neither allocate, print nor fail.
 *
 * Backward functions ACCUMULATE (+=) into their gradient outputs; the
 * training step zeroes all gradients once per step.  A NULL gradient output
 * means "not needed".  Sizes: B batch, T (Tq, Tk) sequence lengths, d model
 * width, h heads, s = d/h head size, V vocabulary, N = B·T rows.
 * Row-major everywhere; a weight W of a linear layer is (in, out).
 */
#ifndef TFM_LAYERS_H
#define TFM_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/lowp.h"

/* ---- embeddings and positions (embedding.c) ---- */

/*
 * out[b,t] = tok[ids[b,t]]·scale + pos[pos0 + t]; pos may be NULL.  tok has
 * V rows: returns 0, or -1 (out untouched) if an id is outside 0 .. V-1.
 */
int			tfm_embedding_forward(float *out, const int32_t *ids, const float *tok, int V,
								  const float *pos, float scale,
								  int B, int T, int d, int pos0);
/* the gradients of the above; -1 (nothing written) if an id is outside 0 .. V-1 */
int			tfm_embedding_backward(float *dtok, float *dpos, const float *dout,
								   const int32_t *ids, int V, float scale,
								   int B, int T, int d, int pos0);
/* the first index i < n with ids[i] outside 0 .. V-1 (ignore is allowed), or -1 */
long		tfm_ids_find_bad(const int32_t *ids, size_t n, int V, int ignore);
/* the fixed sinusoidal table, rows pos0 .. pos0+n-1 */
void		tfm_sinusoid_table(float *out, int n, int d, int pos0);
/* Marian's layout of the same values: sin(pos·ω_i) in columns i < d/2, cos(pos·ω_i) in d/2 + i */
void		tfm_sinusoid_table_halves(float *out, int n, int d, int pos0);

/* ---- linear layer (linear.c) ---- */

/*
 * W's packed bf16/int8 copy (the core's model/precision.c makes them), or
 * NULL: the products run at fp32.
 */
typedef struct tfm_lowp_entry tfm_lowp_entry;

/* out(N,o) = inp(N,i)·W(i,o) + b; b may be NULL */
void		tfm_linear_forward(float *out, const float *inp, const float *W,
							   const float *b, int N, int in, int o,
							   const tfm_lowp_entry *packed);
void		tfm_linear_backward(float *dinp, float *dW, float *db,
								const float *dout, const float *inp, const float *W,
								int N, int in, int o, const tfm_lowp_entry *packed);
/* the same, but dinp = dout·Wᵀ is written, not added to (no zeroing first) */
void		tfm_linear_backward_set(float *dinp, float *dW, float *db,
									const float *dout, const float *inp, const float *W,
									int N, int in, int o, const tfm_lowp_entry *packed);

/* ---- layer norm (layernorm.c), eps 1e-5 or as given ---- */

#define TFM_LN_EPS 1e-5f

void		tfm_layernorm_forward(float *out, float *mean, float *rstd,
								  const float *inp, const float *g, const float *b,
								  int N, int d);
void		tfm_layernorm_forward_eps(float *out, float *mean, float *rstd,
									  const float *inp, const float *g, const float *b,
									  int N, int d, float eps);
/* sum = x + z (a residual without dropout), out = LN(sum): the two calls' bits in one sweep */
void		tfm_add_layernorm_forward_eps(float *out, float *mean, float *rstd, float *sum,
										  const float *x, const float *z, const float *g,
										  const float *b, int N, int d, float eps);
void		tfm_layernorm_backward(float *dinp, float *dg, float *db,
								   const float *dout, const float *inp,
								   const float *g, const float *mean,
								   const float *rstd, int N, int d);

/* ---- activations (activation.c) ---- */

typedef enum tfm_activation
{
	TFM_ACT_RELU = 0,
	TFM_ACT_GELU = 1,			/* exact: ½x(1 + erf(x/√2)) */
	TFM_ACT_GELU_TANH = 2,		/* GPT-2's gelu_new: ½x(1 + tanh(√(2/π)(x + 0.044715x³))) */
	TFM_ACT_SILU = 3			/* x·σ(x) (Marian's "swish") */
} tfm_activation;

/* out = act(inp·W + b): the activation fused into a bf16 product where it can be */
void		tfm_linear_act_forward(float *out, const float *inp, const float *W,
								   const float *b, int N, int in, int o, tfm_activation act,
								   const tfm_lowp_entry *packed);
/*
 * out = act(inp·W + b) (act NULL: none) with each output row a function of
 * its input row alone, bit for bit whatever N is (a varlen pass: many
 * texts' rows in one matrix, each text's result its one-text result): the
 * row-exact products of tfm_gemm_rows, or of W's packed copy
 * (tfm_lowp_linear_rows).
 */
void		tfm_linear_rows_forward(float *out, const float *inp, const float *W,
									const float *b, int N, int in, int o,
									const tfm_activation *act, const tfm_lowp_entry *packed);
/* the function tfm_activation_forward runs on each piece (one thread, out may be inp) */
tfm_row_fn	tfm_activation_fn(tfm_activation act);
void		tfm_activation_forward(float *out, const float *inp, size_t n,
								   tfm_activation act);
void		tfm_activation_backward(float *dinp, const float *dout,
									const float *inp, size_t n,
									tfm_activation act);
/* g = g ⊙ f'(inp): the backward pass written over its own input */
void		tfm_activation_backward_inplace(float *g, const float *inp, size_t n,
											tfm_activation act);

/* ---- dropout (dropout.c): inverted, masks from a counter-based hash ---- */

/* out = inp ⊙ keep / (1-p); out may be inp; p = 0 copies */
void		tfm_dropout_forward(float *out, const float *inp, size_t n,
								float p, uint64_t key);
void		tfm_dropout_backward(float *dinp, const float *dout, size_t n,
								 float p, uint64_t key);
/* residual: out = x + dropout(y) */
void		tfm_residual_forward(float *out, const float *x, const float *y,
								 size_t n, float p, uint64_t key);
/* elementwise loops split into chunks of this many floats among threads */
#define TFM_EW_CHUNK 16384

/* x = 0;  dst = src;  dst += src  (n floats, on the core's threads) */
void		tfm_zero(float *x, size_t n);
void		tfm_copy(float *dst, const float *src, size_t n);
void		tfm_add_into(float *dst, const float *src, size_t n);
/* x *= s (n floats; nothing to do when s is 1) */
void		tfm_scale(float *x, size_t n, float s);

/* dx += dout; dy += dropout'(dout); either may be NULL */
void		tfm_residual_backward(float *dx, float *dy, const float *dout,
								  size_t n, float p, uint64_t key);

/* ---- multi-head scaled dot-product attention (attention.c) ---- */

/*
 * Grouped-query attention: with kvh < h key/value heads, query head j reads
 * key/value head j / (h / kvh) (kvh divides h).
 */
/*
 * Views into fused buffers: q row r of batch b is q + b·bsq + r·rsq (bsq 0
 * means Tq·rsq), head j at columns j·s; likewise k, v and out.  key_pad
 * (batch stride bspad, default Tk; 1 = pad; may be NULL) hides keys; causal hides key positions after the
 * query's (query r sits at position Tk - Tq + r).  probs (B, h, Tq, Tk) keeps
 * the softmax for the backward pass.  Both passes need scratch of
 * tfm_attention_scratch floats.
 */
typedef struct tfm_attn_shape
{
	int			B,
				Tq,
				Tk,
				h,
				s;
	ptrdiff_t	rsq,
				rsk,
				rsv,
				rso;
	/* batch strides (in floats; in bytes for the pad mask); 0 = T · row stride */
	ptrdiff_t	bsq,
				bsk,
				bsv,
				bso,
				bspad;
	int			causal;
	float		p_drop;
	uint64_t	key;
	int			kvh;			/* key/value heads (grouped-query); 0 = h */
	bool		lowp;			/* a bf16/int8 pass: the faster softmax may be taken */
	float		scale;			/* the scores' scale; 0 = 1/√s */
	float		softcap;		/* scores c·tanh(S/c) before the softmax (Gemma 2); 0 none;
								 * only without dropout */
	int			window;			/* causal only: query at position i sees keys j with
								 * i − j < window (Mistral's sliding window); 0 none */
	const float *bias;			/* (h, Tq, Tk) added to the scaled scores before the
								 * softmax (T5's position bias), the same for every
								 * batch row; NULL none (not with softcap) */
	float	   *dscores;		/* backward: (B, h, Tq, Tk) receives (=) the gradient of
								 * the scores (so of bias, summed over B); NULL none */
} tfm_attn_shape;

size_t		tfm_attention_scratch(const tfm_attn_shape *sh, int threads);
void		tfm_attention_forward(float *out, float *probs,
								  const float *q, const float *k, const float *v,
								  const uint8_t *key_pad,
								  const tfm_attn_shape *sh, float *scratch);
/* dout row stride is sh->rso; dq/dk/dv use rsq/rsk/rsv */
void		tfm_attention_backward(float *dq, float *dk, float *dv,
								   const float *dout, const float *probs,
								   const float *q, const float *k, const float *v,
								   const tfm_attn_shape *sh, float *scratch);
/*
 * "avx512", "avx2" or "portable": the path attention's products and
 * softmax take here (kernels/attention/attention_kernels.c; TFM_ATTN_KERNELS)
 */
const char *tfm_attn_kernels(void);

/* ---- pooling (pooling.c) ---- */

/* mean over positions whose id != pad_id; a row of pads only pools to 0 */
void		tfm_mean_pool_forward(float *out, const float *inp, const int32_t *ids,
								  int pad_id, int B, int T, int d);
void		tfm_mean_pool_backward(float *dinp, const float *dout,
								   const int32_t *ids, int pad_id,
								   int B, int T, int d);
/* the vector at position 0 (the <cls> token) */
void		tfm_cls_pool_forward(float *out, const float *inp, int B, int T, int d);
void		tfm_cls_pool_backward(float *dinp, const float *dout, int B, int T, int d);

/* ---- loss (loss.c) ---- */

/*
 * Cross-entropy with label smoothing eps, as nn.CrossEntropyLoss:
 * per row (1-eps)·(-log p_y) + eps·mean_c(-log p_c); rows whose target is
 * ignore_index count for nothing.  Returns the SUM of the row losses and
 * stores the number of counted rows in *count.  If dlogits is not NULL it
 * receives (overwrites) grad_scale · d(sum)/d(logits) (ignored rows get 0).
 * A target outside 0 .. V-1 (other than ignore_index) is refused before
 * anything is read or written: NaN is returned and *count is -1.
 */
double		tfm_cross_entropy(float *dlogits, int *count, const float *logits,
							  const int32_t *targets, int N, int V,
							  int ignore_index, float eps, float grad_scale);

/* the label of a token a token classifier learns nothing from (Hugging Face's -100) */
#define TFM_LABEL_IGNORE (-100)

/*
 * Binary cross-entropy on one logit per row, as nn.BCEWithLogitsLoss (a
 * cross-encoder's relevance, sentence-transformers' CrossEncoder default
 * for one label): per row max(z, 0) - z·y + log(1 + e^-|z|) against a
 * target y in [0, 1].  Returns the SUM over the N rows (*count = N); if
 * dlogits is not NULL it receives grad_scale · (sigmoid(z) - y) (may be
 * logits itself).  A target outside [0, 1] or not finite is refused before
 * anything is written: NaN and *count -1.
 */
double		tfm_bce_logits(float *dlogits, int *count, const float *logits,
						   const float *targets, int N, float grad_scale);

/*
 * An extractive question-answering head's loss, as
 * ...ForQuestionAnswering's: logits (B·T, 2) hold each token's start and
 * end logit; per row (CE(start logits, spans[2b]) + CE(end logits,
 * spans[2b + 1])) / 2, each softmax over the row's T positions but those
 * whose pad flag is set (padding of a batch: a row's loss is the one it has
 * alone).  Returns the SUM over the B rows (*count = B); dlogits (may be
 * logits itself) receives grad_scale · d(sum)/d(logits), 0 at pads.  A
 * target outside 0 .. T-1 or on a pad is refused before anything is
 * written: NaN and *count -1.
 */
double		tfm_span_cross_entropy(float *dlogits, int *count, const float *logits,
								   const int32_t *spans, const uint8_t *pad, int B, int T,
								   float grad_scale);

/* in-place softmax of each row of x (N, V) */
void		tfm_softmax_rows(float *x, int N, int V);

#endif							/* TFM_LAYERS_H */
