/*
 * inference_precision.h — which precision inference runs at
 * (inference_precision.c): the setting tfm.precision, a model's own
 * default, the CPU's kernels.
 */
#ifndef TFM_PG_INFERENCE_PRECISION_H
#define TFM_PG_INFERENCE_PRECISION_H

#include "postgres.h"

#include "storage/models/models.h"

/* the precision a model's inference runs at now (row NULL: no model in
 * particular), and why */
tfm_precision tfm_inference_precision(const TfmModelRow *row, const char **why);
/* pack (or unpack) a model for the precision its inference uses now */
void		tfm_apply_precision(tfm_model *m, const TfmModelRow *row);
/* values[0..4] of tfm_info(): precision, why, bf16 kernel, int8 kernel, kernel reason */
void		tfm_precision_info(Datum *values);

#endif							/* TFM_PG_INFERENCE_PRECISION_H */
