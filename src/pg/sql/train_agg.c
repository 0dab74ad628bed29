/*
 * train_agg.c — tfm_train_agg(model, input, label [, options]): one epoch
 * of mini-batch training over the rows an aggregate sees, in their order
 * (so `ORDER BY random()` shuffles).  Batches are formed in the transition
 * function; the final function trains on the last partial batch, saves the
 * weights (in the statement's transaction, like tfm_train), records the
 * epoch in tfm.history and returns its metrics.  The aggregate is PARALLEL
 * UNSAFE: it writes.
 *
 * Options (jsonb, PostgreSQL 15 aggregates take no named arguments):
 * batch_size, lr, warmup (steps), weight_decay, clip, label_smoothing,
 * seed.  The learning rate warms up linearly, then stays constant (the
 * number of rows is not known in advance).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tfm/train.h"
#include "sql/args.h"
#include "runtime/rows.h"
#include "runtime/train_data.h"

typedef struct TrainAggState
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
} TrainAggState;

/*
 * One aggregate trains one model at a time in a backend: two states over
 * the same model (for example `(tfm_train_agg(...)).*`, which makes one
 * aggregate call per column) would train two copies and race to save.
 */
static char active_model[TFM_NAME_MAX + 1];

static void
state_free(void *arg)
{
	TrainAggState *st = arg;

	if (st->trainer_ready)
		tfm_trainer_free(&st->tr);
	st->trainer_ready = false;
	if (strcmp(active_model, st->row.name) == 0)
		active_model[0] = '\0';
}

static double
opt_num(Jsonb *opts, const char *key, double dflt, double lo, double hi)
{
	JsonbValue	k,
			   *v;
	double		x;

	if (opts == NULL)
		return dflt;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&opts->root, JB_FOBJECT, &k);
	if (v == NULL)
		return dflt;
	if (v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a number", key)));
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (!(x >= lo && x <= hi))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be between %g and %g", key, lo, hi)));
	return x;
}

static void
check_option_names(Jsonb *opts)
{
	static const char *known[] = {"batch_size", "lr", "warmup", "weight_decay", "clip",
	"label_smoothing", "seed"};
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));
	it = JsonbIteratorInit(&opts->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		bool		ok = false;

		if (tok != WJB_KEY)
			continue;
		for (int i = 0; i < (int) lengthof(known); i++)
			if (v.val.string.len == (int) strlen(known[i]) &&
				strncmp(v.val.string.val, known[i], v.val.string.len) == 0)
				ok = true;
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown option \"%.*s\"", v.val.string.len, v.val.string.val),
					 errhint("Options are batch_size, lr, warmup, weight_decay, clip, label_smoothing and seed.")));
	}
}

static TrainAggState *
state_new(FunctionCallInfo fcinfo, MemoryContext aggcxt)
{
	char	   *name = tfm_text_arg(fcinfo, 1, "model");
	Jsonb	   *opts = PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_JSONB_P(4) : NULL;
	MemoryContext old = MemoryContextSwitchTo(aggcxt);
	TrainAggState *st = palloc0(sizeof(TrainAggState));
	tfm_train_opts o;
	float		val_fraction;

	if (opts)
		check_option_names(opts);
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
	tfm_model_specials(&st->row, &st->sp);
	/* tfm_train's defaults for a classifier, at a constant rate without warmup (a stream) */
	tfm_train_defaults(&st->row.cfg, &o, &st->batch, &val_fraction);
	o.schedule = TFM_SCHED_CONSTANT;
	st->batch = (int) opt_num(opts, "batch_size", st->batch, 1, TFM_BATCH_MAX);
	o.lr = (float) opt_num(opts, "lr", o.lr, 1e-12, TFM_LR_MAX);
	o.warmup = (int64) opt_num(opts, "warmup", o.warmup, 0, 1e9);
	o.weight_decay = (float) opt_num(opts, "weight_decay", o.weight_decay, 0, TFM_WEIGHT_DECAY_MAX);
	o.clip = (float) opt_num(opts, "clip", o.clip, 0, 1e9);
	o.label_smoothing = (float) opt_num(opts, "label_smoothing", o.label_smoothing, 0, 0.999);
	o.seed = (uint64) opt_num(opts, "seed", (double) o.seed, 0, 9e15);
	if (tfm_trainer_init(&st->tr, st->m, &o) != 0)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the optimizer of model \"%s\"", name);
	st->trainer_ready = true;
	st->cb.func = state_free;
	st->cb.arg = st;
	MemoryContextRegisterResetCallback(aggcxt, &st->cb);
	strlcpy(active_model, st->row.name, sizeof(active_model));
	st->buf = palloc(sizeof(TfmExample) * st->batch);
	st->buf_cxt = AllocSetContextCreate(aggcxt, "tfm_train_agg batch", ALLOCSET_DEFAULT_SIZES);
	st->started = GetCurrentTimestamp();
	MemoryContextSwitchTo(old);
	return st;
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
flush(TrainAggState *st)
{
	TfmBatchBuf bb;
	tfm_batch	b;
	double		loss;
	int			count;
	tfm_step_status s;

	if (st->nbuf == 0)
		return;
	CHECK_FOR_INTERRUPTS();
	tfm_batch_classify(&bb, st->buf, st->nbuf, st->sp.pad);
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

PG_FUNCTION_INFO_V1(tfm_train_agg_step);
Datum
tfm_train_agg_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	TrainAggState *st;
	MemoryContext old;
	TfmExample *ex;
	int			n;
	int32	   *ids;
	char	   *label;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "tfm_train_agg_step called in non-aggregate context");
	st = PG_ARGISNULL(0) ? state_new(fcinfo, aggcxt) : (TrainAggState *) PG_GETARG_POINTER(0);
	st->rows++;
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
	{
		st->skipped++;
		PG_RETURN_POINTER(st);
	}
	old = MemoryContextSwitchTo(st->buf_cxt);
	label = text_to_cstring(PG_GETARG_TEXT_PP(3));
	ids = tfm_datum_ids(PG_GETARG_DATUM(2), get_fn_expr_argtype(fcinfo->flinfo, 2), &st->row,
						false, &n);
	ex = &st->buf[st->nbuf];
	memset(ex, 0, sizeof(*ex));
	ex->label = label_index(&st->row, label);
	ex->src = tfm_classifier_input(&st->row, &st->sp, ids, n, &ex->nsrc, true, &st->truncated);
	st->nbuf++;
	MemoryContextSwitchTo(old);
	if (st->nbuf == st->batch)
		flush(st);
	PG_RETURN_POINTER(st);
}

PG_FUNCTION_INFO_V1(tfm_train_agg_final);
Datum
tfm_train_agg_final(PG_FUNCTION_ARGS)
{
	TrainAggState *st;
	TupleDesc	tupdesc;
	Datum		v[7];
	bool		nulls[7] = {false, false, false, true, true, false, false};
	double		secs,
				loss;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();		/* no rows: nothing trained */
	st = (TrainAggState *) PG_GETARG_POINTER(0);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	flush(st);
	if (st->tr.step == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("no training rows: every row had a NULL input or label")));
	if (st->skipped > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " rows with a NULL input or label were skipped", st->skipped)));
	if (st->truncated > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " sequences longer than max_len (%d) were truncated",
						st->truncated, st->row.cfg.max_len)));
	secs = (double) (GetCurrentTimestamp() - st->started) / 1e6;
	loss = st->loss_count ? st->loss_sum / st->loss_count : NAN;
	tfm_catalog_save(&st->row, st->m, st->tr.step);
	{
		TfmHistoryRow h;

		h.model_id = st->row.id;
		h.run_started = st->started;
		h.epoch = 1;
		h.steps = st->tr.step;
		h.train_loss = loss;
		h.val_loss = NAN;
		h.val_acc = NAN;
		h.tokens_per_s = st->tokens / Max(secs, 1e-9);
		h.seconds = secs;
		h.checkpoint = 0;
		h.rows_done = -1;
		tfm_history_add(&h);
	}
	tfm_trainer_free(&st->tr);
	st->trainer_ready = false;
	/* the trained model goes back to the cache under its new version */
	tfm_model_trim(st->m);
	tfm_cache_put(&st->row, st->m);
	tfm_guard_release(st->guard);

	v[0] = Int32GetDatum(1);
	v[1] = Int64GetDatum(st->tr.step);
	v[2] = Float8GetDatum(loss);
	v[5] = Float8GetDatum(st->tokens / Max(secs, 1e-9));
	v[6] = Float8GetDatum(secs);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), v, nulls)));
}
