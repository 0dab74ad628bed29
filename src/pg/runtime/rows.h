/*
 * rows.h — column values to token ids (rows.c): a model's specials, a
 * column's ids, a classifier's input.
 */
#ifndef TFM_ROWS_H
#define TFM_ROWS_H

#include "postgres.h"

#include "tfm/tokenizer.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"


/* a model's specials, checked with tfm_check_specials */
void		tfm_model_specials(const TfmModelRow *row, TfmSpecials *sp);
/* ERROR (invalid_parameter_value) naming the id and the vocabulary size if a
 * special the model's task uses is not a row of its vocabulary */
void		tfm_check_specials(const char *model, const tfm_config *c, const TfmSpecials *sp);
bool		tfm_column_is_ids(Oid type);
bool		tfm_column_is_text(Oid type);
/* ids of one value (palloc'd, *len of them) */
int32	   *tfm_datum_ids(Datum d, Oid type, const TfmModelRow *row, bool target, int *len);

/*
 * A classifier's input: <cls> first when it pools on it, then cut to
 * max_len by the model's truncation (tfm/truncate.h; the <cls> is always
 * kept); counts a cut in *truncated if not NULL.
 */
int32	   *tfm_classifier_input(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids,
								 int n, int *out_n, int64 *truncated);

/*
 * Errors unless row's labels can be learned from (text, label) rows one
 * at a time (tfm_train_agg): an imported cross-encoder's one logit is a
 * score, not a choice between labels; a token head reads spans.
 */
void		tfm_check_labels_trainable(const TfmModelRow *row);

#endif							/* TFM_ROWS_H */
