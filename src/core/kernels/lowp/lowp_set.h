/*
 * lowp_set.h — a set of packed bf16/int8/int4 weights and the linear products
 * through one of its entries (internal to src/core).  model/precision.c
 * packs a model's matrices into a set and indexes the entries by block
 * (model_internal.h); a pass hands each linear layer its matrix's entry
 * (NULL: fp32), and the product runs on the packed copy.  Kernel level:
 * nothing here knows a model.
 */
#ifndef TFM_LOWP_SET_H
#define TFM_LOWP_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/blas.h"
#include "tfm/lowp.h"

/* columns col0 .. col0 + cols - 1 of a matrix as a GGUF file's blocks
 * (TFM_PREC_GGUF: ggml type, each column's row of blocks in turn) */
typedef struct tfm_kq_part
{
	uint32_t	type;
	int			col0,
				cols;
	const uint8_t *blocks;
} tfm_kq_part;

/* one fp32 matrix W (K × N) and its packed copies */
typedef struct tfm_lowp_entry
{
	struct tfm_lowp_set *set;	/* its set: the precision, the work buffers */
	const float *W;				/* the fp32 weight it stands for */
	int			K,
				N;
	bool		transposed;		/* W stored (N, K): the tied head's embedding */
	tfm_bf16_weights b;
	tfm_bf16_weights bt;		/* training: Wᵀ (N × K), for dX = dY·Wᵀ */
	tfm_int8_weights q;
	tfm_int4_weights q4;
	const tfm_kq_part *kq;		/* TFM_PREC_GGUF: the parts covering its N columns */
	int			n_kq;			/* (0: not covered, the product runs fp32) */
	const float *p32;			/* an fp32 set (tfm_model_pack_rows): W packed for
								 * tfm_gemm_rows_packed; NULL in the others */
} tfm_lowp_entry;

struct tfm_lowp_set
{
	tfm_precision prec;
	bool		training;		/* W and Wᵀ, repacked per optimizer step */
	int			n;
	tfm_lowp_entry *e;
	char	   *packed;			/* one block for every entry */
	size_t		packed_bytes;
	/* a borrowed block (tfm_model_set_precision_from): released, not freed */
	void		(*release) (void *block, void *arg);
	void	   *release_arg;
	/*
	 * the products' work buffers, grown on demand: one a thread of a
	 * parallel region (tfm_model_forward_lanes), [0] outside one
	 */
	void	   *work[TFM_MAX_THREADS];
	size_t		work_cap[TFM_MAX_THREADS];
	void	   *act;			/* training: an activation packed as W (dW) */
	size_t		act_cap;
	void	   *index;			/* its owner's index of the entries (malloc'd, freed with it) */
	tfm_kq_part *parts;			/* TFM_PREC_GGUF: every entry's parts (malloc'd) */
};

/* frees s (NULL: nothing), its block released or freed */
void		tfm_lowp_set_free(struct tfm_lowp_set *s);

/*
 * out (N × o) = inp (N × in) · W + b through e, W's packed copy; false
 * (nothing done) if e is NULL or not of W (in × o): the caller then does
 * the fp32 product.
 */
bool		tfm_lowp_linear(const tfm_lowp_entry *e, float *out, const float *inp,
							const float *b, int N, int in, int o);
/* the same, then act (NULL for none) over out, fused into the product where it can be */
bool		tfm_lowp_linear_act(const tfm_lowp_entry *e, float *out, const float *inp,
								const float *b, int N, int in, int o, tfm_row_fn act);
/*
 * tfm_lowp_linear_act with each row of out a function of its row of inp
 * alone, the same bits whatever N is: false (nothing done) where W's
 * packed copy has no such product at N rows, or where the caller's fp32
 * row-exact product (tfm_gemm_rows) stands in for it at every N (bf16 on
 * AVX2, as tfm_lowp_linear_act does for batches).
 */
bool		tfm_lowp_linear_rows(const tfm_lowp_entry *e, float *out, const float *inp,
								 const float *b, int N, int in, int o, tfm_row_fn act);
/*
 * The backward products of that layer through e, an entry of a training
 * set: dinp (N × in) = beta_in·dinp + dout (N × o)·Wᵀ and dW += inpᵀ·dout
 * (either may be NULL); dW is laid out as W is stored — (in, o), or (o, in)
 * for a tied output head packed from the embedding (its gradient is
 * doutᵀ·inp).  False (nothing done) if e is NULL, not a training copy of a
 * matrix (in × o), or memory ran out.
 */
bool		tfm_lowp_linear_backward(const tfm_lowp_entry *e, float *dinp, float beta_in,
									 float *dW, const float *dout, const float *inp,
									 int N, int in, int o);

/* n rounded up to a multiple of 64 (the packed copies' alignment) */
static inline size_t
tfm_lowp_align64(size_t n)
{
	return (n + 63) & ~(size_t) 63;
}

#endif							/* TFM_LOWP_SET_H */
