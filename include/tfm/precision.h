/*
 * precision.h — low-precision products for a whole model: every matrix a
 * forward pass multiplies by (attention and feed-forward projections, the
 * classifier and the output head, tied or not) packed into bf16, int8 or int4
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
#include <stdint.h>

#include "tfm/lowp.h"
#include "tfm/kept_block.h"
#include "tfm/model.h"

const char *tfm_precision_name(tfm_precision p);

/*
 * A checkpoint's own precision (source_precision.c): each tensor's values
 * added at the precision its stored type runs at without loss beyond the
 * type's own (tensors of fewer than 2 dimensions are not counted); the
 * result is the precision of most of the matrices' values, fp32 if none.
 */
typedef struct tfm_source_tally
{
	uint64_t	values[5];		/* indexed by tfm_precision */
} tfm_source_tally;
void		tfm_source_tally_add(tfm_source_tally *t, tfm_precision p, int ndim, uint64_t n_values);
tfm_precision tfm_source_tally_result(const tfm_source_tally *t);

/*
 * Pack the model's matrices for p (nothing to do if they already are;
 * TFM_PREC_FP32 frees the packed copies).  Returns 0, or TFM_ENOMEM if
 * memory could not be had (the model is then left at fp32).
 */
int			tfm_model_set_precision(tfm_model *m, tfm_precision p);
/* the same, asking stop(arg) before each matrix: non-zero stops packing and
 * returns TFM_ECANCELED with the model left at fp32 (nothing is leaked) */
int			tfm_model_set_precision_polled(tfm_model *m, tfm_precision p,
										   int (*stop) (void *arg), void *arg);
tfm_precision tfm_model_precision(const tfm_model *m);
/* bytes of packed weights the model holds */
size_t		tfm_model_precision_bytes(const tfm_model *m);

/*
 * fp32 panels: a classifier's (TFM_ARCH_TFM) matrices packed once for the
 * row-exact products of its varlen passes at fp32 (tfm_gemm_rows_packed:
 * the same bits as packing each product's B per call, without the copy).
 * They cost one more copy of those matrices (tfm_model_rows_bytes, about
 * the encoder's weights; the embeddings are not copied), and they are
 * read as they were packed: whoever changes the weights (training) drops
 * them first (tfm_model_drop_rows; tfm_model_set_precision to a packed
 * precision drops them too).  0; 0 with nothing done for another task or
 * architecture; TFM_ELIMIT when they would take more than max_bytes (0: no
 * bound), TFM_ENOMEM (either way the passes then pack per product).
 */
int			tfm_model_pack_rows(tfm_model *m, size_t max_bytes);
void		tfm_model_drop_rows(tfm_model *m);
size_t		tfm_model_rows_bytes(const tfm_model *m);

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

/*
 * Mixed-precision training: TFM_PREC_BF16 allocates the packed copies
 * (filled by the next repack), TFM_PREC_FP32 frees them.  Returns 0,
 * TFM_ENOMEM if memory could not be had (the model then trains at fp32),
 * TFM_EUNSUPPORTED for a precision training does not have (int8, int4).
 */
int			tfm_model_set_train_precision(tfm_model *m, tfm_precision p);
tfm_precision tfm_model_train_precision(const tfm_model *m);
/* round the current fp32 weights into the training copies (if any) */
void		tfm_model_train_repack(tfm_model *m);

/* is k the columns of a matrix a packing of m holds (K inputs, a multiple of its type's
 * block, col0 + cols ≤ its outputs)? */
bool		tfm_model_int4_fits(const tfm_model *m, const tfm_int4_kept *k);
/*
 * the matrix whose columns k covers (as tfm_model_int4_fits): its outputs
 * in *N and whether it is stored (N, K), the tied head's embedding (column
 * j is then W[j·K ..]), rather than (K, N) (column j is W[k·N + j]); false
 * if k fits none
 */
bool		tfm_model_kept_matrix(const tfm_model *m, const tfm_int4_kept *k, int *N, bool *transposed);
/*
 * m keeps copies of the n blocks (n = 0: none; replaces the ones before,
 * and drops int4 copies packed without them): 0, TFM_EINVAL (one does not
 * fit, nothing changed) or TFM_ENOMEM.
 */
int			tfm_model_keep_int4(tfm_model *m, const tfm_int4_kept *k, int n);
/*
 * as tfm_model_keep_int4, without copying: the blocks stay where k says
 * (a mapping that lives as long as m, released with its parameter block)
 */
int			tfm_model_keep_kept_view(tfm_model *m, const tfm_int4_kept *k, int n);
/* columns of kept blocks m holds (0: none) */
long		tfm_model_int4_kept_columns(const tfm_model *m);

#endif							/* TFM_PRECISION_H */
