/*
 * train_stream.h — one epoch of mini-batch training over rows handed in one
 * at a time, in their order (train_stream.c): tfm_train_agg's state.
 */
#ifndef TFM_TRAIN_STREAM_H
#define TFM_TRAIN_STREAM_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "tfm/train.h"
#include "runtime/rows.h"
#include "runtime/train/train_data.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

typedef struct TfmStream
{
	TfmModelRow row;
	tfm_model  *m;
	TfmGuard   *guard;
	tfm_trainer tr;
	bool		trainer_ready;
	MemoryContextCallback cb;
	TfmSpecials sp;
	int			batch;
	TfmExample *buf;
	int			nbuf;
	MemoryContext buf_cxt;
	int64		rows,
				skipped,
				truncated;
	double		loss_sum;
	int64		loss_count,
				tokens;
	TimestampTz started;
} TfmStream;

/*
 * A stream over classifier name, taken out of the cache, in cxt (one per
 * backend at a time); o and st->batch receive tfm_train's defaults for a
 * classifier at a constant rate.
 */
TfmStream  *tfm_stream_take(const char *name, MemoryContext cxt, tfm_train_opts *o);
/* the optimizer over options o and the batch buffer, in cxt; the clock starts */
void		tfm_stream_start(TfmStream *st, const tfm_train_opts *o, MemoryContext cxt);
/* a row (label NULL: a NULL input or label, skipped); a full batch trains */
void		tfm_stream_add(TfmStream *st, Datum input, Oid type, text *label);
/*
 * The last partial batch, then the weights saved and a tfm.history row;
 * the model goes back to the cache.  The mean loss and the seconds; false
 * (nothing trained or saved) when every row had a NULL input or label.
 */
bool		tfm_stream_finish(TfmStream *st, double *loss, double *secs);

#endif							/* TFM_TRAIN_STREAM_H */
