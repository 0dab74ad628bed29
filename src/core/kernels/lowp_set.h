/*
 * lowp_set.h — a set of packed bf16/int8 weights and the linear products
 * through it (internal to src/core).  model/precision.c packs a model's
 * matrices into a set; a forward or backward pass makes the model's set
 * the active one for its duration (tfm_lowp_activate ... tfm_lowp_restore),
 * and the linear layers look their weight up in it by the fp32 matrix's
 * address: found, the product runs on the packed copy; not found, the
 * caller does the fp32 product.  Kernel level: nothing here knows a model.
 */
#ifndef TFM_LOWP_SET_H
#define TFM_LOWP_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "tfm/lowp.h"

/* one fp32 matrix W (K × N) and its packed copies */
typedef struct tfm_lowp_entry
{
	const float *W;				/* the fp32 weight it stands for */
	int			K,
				N;
	bool		transposed;		/* W stored (N, K): the tied head's embedding */
	tfm_bf16_weights b;
	tfm_bf16_weights bt;		/* training: Wᵀ (N × K), for dX = dY·Wᵀ */
	tfm_int8_weights q;
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
	void	   *work;			/* the products' work buffer, grown on demand */
	size_t		work_cap;
	void	   *act;			/* training: an activation packed as W (dW) */
	size_t		act_cap;
};

/* frees s (NULL: nothing), its block released or freed; no longer active */
void		tfm_lowp_set_free(struct tfm_lowp_set *s);

/* make s (NULL: none) the set the products use; returns the one before */
const struct tfm_lowp_set *tfm_lowp_activate(const struct tfm_lowp_set *s);
void		tfm_lowp_restore(const struct tfm_lowp_set *prev);
/* the precision of the pass under way: fp32 outside a bf16/int8 set */
tfm_precision tfm_lowp_in_effect(void);

/*
 * out (N × o) = inp (N × in) · W + b through W's packed copy if the active
 * set has one; false (nothing done) otherwise.
 */
bool		tfm_lowp_linear(float *out, const float *inp, const float *W,
							const float *b, int N, int in, int o);
/* the same, then act (NULL for none) over out, fused into the product where it can be */
bool		tfm_lowp_linear_act(float *out, const float *inp, const float *W,
								const float *b, int N, int in, int o, tfm_row_fn act);
/*
 * The backward products of that layer through the active training set:
 * dinp (N × in) = beta_in·dinp + dout (N × o)·Wᵀ and dW += inpᵀ·dout (either
 * may be NULL); dW is laid out as W is stored — (in, o), or (o, in) for a
 * tied output head packed from the embedding (its gradient is doutᵀ·inp).
 * False (nothing done) if W has no training copy or memory ran out.
 */
bool		tfm_lowp_linear_backward(float *dinp, float beta_in, float *dW,
									 const float *dout, const float *inp,
									 const float *W, int N, int in, int o);

/* n rounded up to a multiple of 64 (the packed copies' alignment) */
static inline size_t
tfm_lowp_align64(size_t n)
{
	return (n + 63) & ~(size_t) 63;
}

#endif							/* TFM_LOWP_SET_H */
