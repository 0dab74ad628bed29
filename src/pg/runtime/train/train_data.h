/*
 * train_data.h — the training data pipeline: a query's rows, read through a
 * cursor in bounded chunks, turned into examples and then into batches for
 * each task.  Memory is bounded by the chunk size, not the table size.
 */
#ifndef TFM_TRAIN_DATA_H
#define TFM_TRAIN_DATA_H

#include "postgres.h"

#include "executor/spi.h"

#include "tfm/model.h"
#include "tfm/rng.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"
#include "runtime/train/train_rows.h"


/* a query made safe to wrap as a subquery (no trailing ';' or comment) */
char	   *tfm_subquery(const char *query);

/* check the query's columns for the model's task and prepare it */
void		tfm_reader_init(TfmReader *r, const TfmModelRow *row, const char *query);
void		tfm_reader_open(TfmReader *r);
/* the same, skipping the first rows rows */
void		tfm_reader_open_at(TfmReader *r, int64 rows);
void		tfm_reader_close(TfmReader *r);
/*
 * Read up to chunk_rows rows into examples: train rows into *train, held-out
 * rows into *val.  A row is held out when a hash of its (first column's)
 * tokens falls below val_fraction; an lm row is cut into sequences of
 * max_len tokens, each held out by the hash of its own tokens, and the
 * training pieces between them are examples of their own.  Returns false at
 * the end of the query.
 */
bool		tfm_reader_next(TfmReader *r, TfmExample **train, int *ntrain,
							TfmExample **val, int *nval);

/* classify (rows of kind: TfmRowKind) and seq2seq batches from examples */
void		tfm_batch_classify(TfmBatchBuf *bb, const TfmExample *ex, int n, int pad, int kind);
void		tfm_batch_seq2seq(TfmBatchBuf *bb, const TfmExample *ex, int n, const TfmSpecials *sp);
/* lm: B windows of T+1 tokens starting at offsets[] in stream */
void		tfm_batch_lm(TfmBatchBuf *bb, const int32 *stream, const int64 *offsets,
						 int B, int T);
/*
 * the summed loss (nats) of one window of w + 1 tokens of stream from pos,
 * without training; its predicted tokens in *cnt.  doing and name for a
 * window too long; pass_model names the model in a failed pass (or NULL)
 */
double		tfm_lm_window_loss(tfm_model *m, const int32 *stream, int64 pos, int w,
							   const char *doing, const char *name, const char *pass_model,
							   int *cnt);

#endif							/* TFM_TRAIN_DATA_H */
