/*
 * train_stream.c — one epoch of mini-batch training over rows handed in one
 * at a time (tfm_train_agg's transition function), in their order: a
 * batch trains as soon as it is full, the last partial one at the end,
 * then the weights are saved (in the statement's transaction, like
 * tfm_train) with a row of tfm.history.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "runtime/train/train_stream.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/*
 * One aggregate trains one model at a time in a backend: two states over
 * the same model (for example `(tfm_train_agg(...)).*`, which makes one
 * aggregate call per column) would train two copies and race to save.
 */
static char active_model[TFM_NAME_MAX + 1];

static void
state_free(void *arg)
{
	TfmStream *st = arg;

	if (st->trainer_ready)
		tfm_trainer_free(&st->tr);
	st->trainer_ready = false;
	if (strcmp(active_model, st->row.name) == 0)
		active_model[0] = '\0';
}

TfmStream *
tfm_stream_take(const char *name, MemoryContext cxt, tfm_train_opts *o)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TfmStream  *st = palloc0(sizeof(TfmStream));
	float		val_fraction;

	if (active_model[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tfm_train_agg is already training model \"%s\" in this statement", active_model),
				 errhint("Call it once per statement, e.g. SELECT (r).* FROM (SELECT tfm_train_agg(...) AS r FROM t) s.")));
	tfm_backend_ready();
	st->m = tfm_cache_take(name, &st->row);
	st->guard = tfm_guard_model(st->m);
	if (st->row.cfg.task != TFM_TASK_CLASSIFY)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("tfm_train_agg trains classifiers; model \"%s\" has task \"%s\"",
						name, st->row.task),
				 errhint("Use tfm_train for other tasks.")));
	tfm_check_labels_trainable(&st->row);
	tfm_model_specials(&st->row, &st->sp);
	/* tfm_train's defaults for a classifier, at a constant rate without warmup (a stream) */
	tfm_train_defaults(&st->row.cfg, o, &st->batch, &val_fraction);
	o->schedule = TFM_SCHED_CONSTANT;
	MemoryContextSwitchTo(old);
	return st;
}

void
tfm_stream_start(TfmStream *st, const tfm_train_opts *o, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);

	if (tfm_trainer_init(&st->tr, st->m, o) != 0)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the optimizer of model \"%s\"", st->row.name);
	st->trainer_ready = true;
	st->cb.func = state_free;
	st->cb.arg = st;
	MemoryContextRegisterResetCallback(cxt, &st->cb);
	strlcpy(active_model, st->row.name, sizeof(active_model));
	st->buf = palloc(sizeof(TfmExample) * st->batch);
	st->buf_cxt = AllocSetContextCreate(cxt, "tfm_train_agg batch", ALLOCSET_DEFAULT_SIZES);
	st->started = GetCurrentTimestamp();
	MemoryContextSwitchTo(old);
}

static int
label_index(const TfmModelRow *row, const char *label)
{
	for (int i = 0; i < row->n_labels; i++)
		if (strcmp(row->labels[i], label) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("label \"%s\" is not one of model \"%s\"'s labels", label, row->name)));
	return -1;
}

static void
flush(TfmStream *st)
{
	TfmBatchBuf bb;
	tfm_batch	b;
	double		loss;
	int			count;
	tfm_step_status s;

	if (st->nbuf == 0)
		return;
	CHECK_FOR_INTERRUPTS();
	tfm_batch_classify(&bb, st->buf, st->nbuf, st->sp.pad, TFM_ROWS_LABEL);
	b = bb.b;
	s = tfm_trainer_step(&st->tr, &b, 1, &loss, &count);
	if (s == TFM_STEP_BADID)
		tfm_check_pass(TFM_EBADID, st->row.name);
	if (s == TFM_STEP_NOMEM)
		tfm_raise_code(TFM_ENOMEM, "out of memory training model \"%s\"", st->row.name);
	if (s == TFM_STEP_NONFINITE)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("training of model \"%s\" diverged: the loss or gradient is not finite",
						st->row.name),
				 errdetail("Nothing of this epoch is saved."),
				 errhint("Lower lr or clip gradients.")));
	st->loss_sum += loss;
	st->loss_count += count;
	st->tokens += bb.tokens;
	st->nbuf = 0;
	MemoryContextReset(st->buf_cxt);
}

void
tfm_stream_add(TfmStream *st, Datum input, Oid type, text *label)
{
	MemoryContext old;
	TfmExample *ex;
	int			n;
	int32	   *ids;
	char	   *lab;

	st->rows++;
	if (label == NULL)
	{
		st->skipped++;
		return;
	}
	old = MemoryContextSwitchTo(st->buf_cxt);
	lab = text_to_cstring(label);
	ids = tfm_datum_ids(input, type, &st->row, false, &n);
	ex = &st->buf[st->nbuf];
	memset(ex, 0, sizeof(*ex));
	ex->label = label_index(&st->row, lab);
	ex->src = tfm_classifier_input(&st->row, &st->sp, ids, n, &ex->nsrc, &st->truncated);
	st->nbuf++;
	MemoryContextSwitchTo(old);
	if (st->nbuf == st->batch)
		flush(st);
}

/* the optimizer freed, the model back in the cache (its version as saved) */
static void
give_back(TfmStream *st)
{
	tfm_trainer_free(&st->tr);
	st->trainer_ready = false;
	tfm_model_trim(st->m);
	tfm_cache_put(&st->row, st->m);
	tfm_guard_release(st->guard);
}

bool
tfm_stream_finish(TfmStream *st, double *loss, double *secs)
{
	TfmHistoryRow h;

	flush(st);
	if (st->skipped > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " rows with a NULL input or label were skipped", st->skipped)));
	if (st->tr.step == 0)
	{
		/* every row skipped: nothing trained or saved, the model back as it was */
		give_back(st);
		return false;
	}
	if (st->truncated > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " sequences longer than max_len (%d) were truncated",
						st->truncated, st->row.cfg.max_len)));
	*secs = (double) (GetCurrentTimestamp() - st->started) / 1e6;
	*loss = st->loss_count ? st->loss_sum / st->loss_count : NAN;
	tfm_catalog_save(&st->row, st->m, st->tr.step);
	h.model_id = st->row.id;
	h.run_started = st->started;
	h.epoch = 1;
	h.steps = st->tr.step;
	h.train_loss = *loss;
	h.val_loss = NAN;
	h.val_acc = NAN;
	h.tokens_per_s = st->tokens / Max(*secs, 1e-9);
	h.seconds = *secs;
	h.checkpoint = 0;
	h.rows_done = -1;
	h.val_rows = -1;
	h.dropout = st->m->cfg.dropout;
	h.weight_decay = st->tr.o.weight_decay;
	h.note = NULL;
	tfm_history_add(&h);
	/* the trained model goes back to the cache under its new version */
	give_back(st);
	return true;
}
