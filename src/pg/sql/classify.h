/*
 * classify.h — classifier inference shared by classify.c and evaluate.c.
 */
#ifndef TFM_CLASSIFY_H
#define TFM_CLASSIFY_H

#include "sql/args.h"

/* the model, checked to be a classifier */
tfm_model  *tfm_get_classifier(const char *name, const TfmModelRow **rowp);
/* a value's ids as the classifier reads them (<cls>, truncation) */
int32	   *tfm_classifier_ids(const TfmModelRow *row, Datum d, Oid type, int *n);
/*
 * n inputs through batched forward passes; probs (n × labels) and pooled
 * (n × d_model) may be NULL.
 */
void		tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids,
							   const int *lens, int n, float *probs, float *pooled);
/*
 * The same, each pass holding inputs of one length only: nothing padded,
 * so each input's results are those of its own pass, bit for bit (more,
 * smaller passes when lengths vary).
 */
void		tfm_classifier_run_unpadded(tfm_model *m, const TfmModelRow *row, int32 **ids,
										const int *lens, int n, float *probs, float *pooled);

#endif							/* TFM_CLASSIFY_H */
