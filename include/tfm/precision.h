/*
 * precision.h — low-precision inference for a whole model: every matrix a
 * forward pass multiplies by (attention and feed-forward projections, the
 * classifier and the output head, tied or not) packed once into bf16 or
 * int8 (tfm/lowp.h), and used by the linear layers while an inference pass
 * of that model runs.  Training passes never use them, and training a
 * model first drops them (tfm_model_set_precision(m, TFM_PREC_FP32)).
 * Attention's products, softmax, norms and the residual stream stay fp32.
 */
#ifndef TFM_PRECISION_H
#define TFM_PRECISION_H

#include <stdbool.h>

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
tfm_precision tfm_model_precision(const tfm_model *m);
/* bytes of packed weights the model holds */
size_t		tfm_model_precision_bytes(const tfm_model *m);
void		tfm_model_precision_free(tfm_model *m);

/*
 * For the forward code: make m's packed weights the ones linear layers use
 * (NULL: none) until the next call; returns the previous model.
 */
const tfm_model *tfm_precision_activate(const tfm_model *m);
/*
 * out (N × o) = inp (N × in) · W + b through W's packed copy if the active
 * model has one; false (nothing done) otherwise.
 */
bool		tfm_precision_linear(float *out, const float *inp, const float *W,
								 const float *b, int N, int in, int o);

#endif							/* TFM_PRECISION_H */
