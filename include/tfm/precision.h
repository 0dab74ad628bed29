/*
 * precision.h — low-precision products for a whole model: every matrix a
 * forward pass multiplies by (attention and feed-forward projections, the
 * classifier and the output head, tied or not) packed into bf16 or int8
 * (tfm/lowp.h) and used by the linear layers.
 *
 * Inference: packed once (tfm_model_set_precision), used while an inference
 * pass of that model runs.  Training passes never use these, and training
 * a model first drops them (tfm_model_set_precision(m, TFM_PREC_FP32)).
 *
 * Mixed-precision training (tfm_model_set_train_precision, bf16 only):
 * each matrix packed twice, W for the forward product and Wᵀ for the input
 * gradient dX = dY·Wᵀ, from the fp32 master weights once per optimizer step
 * (tfm_model_train_repack, which the trainer calls before each step's first
 * forward pass); the weight gradient dW += Xᵀ·dY rounds X (read transposed
 * in place) and dY per product.  The gradients and the optimizer stay fp32.
 *
 * Either way attention's products, softmax, norms, the loss and the
 * residual stream stay fp32, and every product sums in fp32.
 */
#ifndef TFM_PRECISION_H
#define TFM_PRECISION_H

#include <stdbool.h>

#include "tfm/lowp.h"
#include "tfm/model.h"

typedef enum tfm_precision
{
	TFM_PREC_FP32 = 0,
	TFM_PREC_BF16 = 1,
	TFM_PREC_INT8 = 2
} tfm_precision;

const char *tfm_precision_name(tfm_precision p);

/*
 * Pack the model's matrices for p (nothing to do if they already are;
 * TFM_PREC_FP32 frees the packed copies).  Returns 0, or -1 if memory could
 * not be had (the model is then left at fp32).
 */
int			tfm_model_set_precision(tfm_model *m, tfm_precision p);
/* the same, asking stop(arg) before each matrix: non-zero stops packing and
 * returns -2 with the model left at fp32 (a cancel; nothing is leaked) */
int			tfm_model_set_precision_polled(tfm_model *m, tfm_precision p,
										   int (*stop) (void *arg), void *arg);
tfm_precision tfm_model_precision(const tfm_model *m);
/* bytes of packed weights the model holds */
size_t		tfm_model_precision_bytes(const tfm_model *m);

/*
 * Packed copies shared between processes.  The inference copies of a model
 * at p are one block of tfm_model_precision_block_bytes(m, p) bytes whose
 * layout depends only on the configuration: tfm_model_precision_block is
 * that block of a packed model (to write to a file), and
 * tfm_model_set_precision_from lays m's copies over such a block (a
 * read-only mapping of the file) without packing; release(block, arg) is
 * called when the copies go (also at once on failure, -1; a NULL release
 * is refused: the block is never the model's to free).
 */
size_t		tfm_model_precision_block_bytes(const tfm_model *m, tfm_precision p);
const void *tfm_model_precision_block(const tfm_model *m);
int			tfm_model_set_precision_from(tfm_model *m, tfm_precision p, void *block,
										 void (*release) (void *block, void *arg), void *arg);
void		tfm_model_precision_free(tfm_model *m);

/*
 * Mixed-precision training: TFM_PREC_BF16 allocates the packed copies
 * (filled by the next repack), TFM_PREC_FP32 frees them.  Returns 0, -1 if
 * memory could not be had (the model then trains at fp32), -2 for a
 * precision training does not have (int8).
 */
int			tfm_model_set_train_precision(tfm_model *m, tfm_precision p);
tfm_precision tfm_model_train_precision(const tfm_model *m);
/* round the current fp32 weights into the training copies (if any) */
void		tfm_model_train_repack(tfm_model *m);

/*
 * For the forward and backward code: make m's packed weights the ones
 * linear layers use until restored — the inference ones, or (training) the
 * training ones; NULL or a model without them: none.  Returns what was
 * active before.
 */
typedef const struct tfm_lowp_set *tfm_lowp_scope;
tfm_lowp_scope tfm_precision_activate(const tfm_model *m);
tfm_lowp_scope tfm_precision_activate_training(const tfm_model *m);
void		tfm_precision_restore(tfm_lowp_scope prev);
/* the precision of the pass under way: fp32 outside a bf16/int8 scope */
tfm_precision tfm_precision_in_effect(void);

/*
 * out (N × o) = inp (N × in) · W + b through W's packed copy if the active
 * set has one; false (nothing done) otherwise.
 */
bool		tfm_precision_linear(float *out, const float *inp, const float *W,
								 const float *b, int N, int in, int o);
/* the same, then act (NULL for none) over out, fused into the product where it can be */
bool		tfm_precision_linear_act(float *out, const float *inp, const float *W,
									 const float *b, int N, int in, int o, tfm_row_fn act);
/*
 * The backward products of that layer through the active training set:
 * dinp (N × in) = beta_in·dinp + dout (N × o)·Wᵀ and dW += inpᵀ·dout (either
 * may be NULL); dW is laid out as W is stored — (in, o), or (o, in) for a
 * tied output head packed from the embedding (its gradient is doutᵀ·inp).
 * False (nothing done) if W has no training copy or memory ran out.
 */
bool		tfm_precision_linear_backward(float *dinp, float beta_in, float *dW,
										  const float *dout, const float *inp,
										  const float *W, int N, int in, int o);

#endif							/* TFM_PRECISION_H */
