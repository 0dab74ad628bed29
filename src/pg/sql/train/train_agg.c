/*
 * train_agg.c — tfm_train_agg(model, input, label [, options]): one epoch
 * of mini-batch training over the rows an aggregate sees, in their order
 * (so `ORDER BY random()` shuffles).  Batches are formed in the transition
 * function; the final function trains on the last partial batch, saves the
 * weights (in the statement's transaction, like tfm_train), records the
 * epoch in tfm.history and returns its metrics.  The aggregate is PARALLEL
 * UNSAFE: it writes.
 *
 * The training itself is runtime/train/train_stream.c's.
 *
 * Options (jsonb, PostgreSQL 15 aggregates take no named arguments):
 * batch_size, lr, warmup (steps), weight_decay, clip, label_smoothing,
 * seed, checkpoint_activations (true or false).  The learning rate warms up linearly, then stays constant (the
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

#include "sql/args.h"
#include "runtime/train/train_stream.h"

/* the value of option key, or NULL */
static JsonbValue *
opt_find(Jsonb *opts, const char *key)
{
	JsonbValue	k;

	if (opts == NULL)
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(&opts->root, JB_FOBJECT, &k);
}

static double
opt_num(Jsonb *opts, const char *key, double dflt, double lo, double hi)
{
	JsonbValue *v = opt_find(opts, key);
	double		x;

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

/* a true/false option (absent: dflt) */
static bool
opt_bool(Jsonb *opts, const char *key, bool dflt)
{
	JsonbValue *v = opt_find(opts, key);

	if (v == NULL)
		return dflt;
	if (v->type != jbvBool)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be true or false", key)));
	return v->val.boolean;
}

static void
check_option_names(Jsonb *opts)
{
	static const char *known[] = {"batch_size", "lr", "warmup", "weight_decay", "clip",
	"label_smoothing", "seed", "checkpoint_activations"};
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
					 errhint("Options are batch_size, lr, warmup, weight_decay, clip, label_smoothing, seed and checkpoint_activations.")));
	}
}

/* the first row: the model taken and the options (argument 4) checked */
static TfmStream *
state_new(FunctionCallInfo fcinfo, MemoryContext aggcxt)
{
	char	   *name = tfm_text_arg(fcinfo, 1, "model");
	Jsonb	   *opts = PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_JSONB_P(4) : NULL;
	TfmStream  *st;
	tfm_train_opts o;

	if (opts)
		check_option_names(opts);
	st = tfm_stream_take(name, aggcxt, &o);
	st->batch = (int) opt_num(opts, "batch_size", st->batch, 1, TFM_BATCH_MAX);
	o.lr = (float) opt_num(opts, "lr", o.lr, 1e-12, TFM_LR_MAX);
	o.warmup = (int64) opt_num(opts, "warmup", o.warmup, 0, 1e9);
	o.weight_decay = (float) opt_num(opts, "weight_decay", o.weight_decay, 0, TFM_WEIGHT_DECAY_MAX);
	o.clip = (float) opt_num(opts, "clip", o.clip, 0, 1e9);
	o.label_smoothing = (float) opt_num(opts, "label_smoothing", o.label_smoothing, 0, 0.999);
	o.seed = (uint64) opt_num(opts, "seed", (double) o.seed, 0, 9e15);
	o.checkpoint_activations = opt_bool(opts, "checkpoint_activations", false);
	tfm_stream_start(st, &o, aggcxt);
	return st;
}

PG_FUNCTION_INFO_V1(tfm_train_agg_step);
Datum
tfm_train_agg_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	TfmStream  *st;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "tfm_train_agg_step called in non-aggregate context");
	st = PG_ARGISNULL(0) ? state_new(fcinfo, aggcxt) : (TfmStream *) PG_GETARG_POINTER(0);
	tfm_stream_add(st, PG_GETARG_DATUM(2), get_fn_expr_argtype(fcinfo->flinfo, 2),
				   PG_ARGISNULL(2) || PG_ARGISNULL(3) ? NULL : PG_GETARG_TEXT_PP(3));
	PG_RETURN_POINTER(st);
}

PG_FUNCTION_INFO_V1(tfm_train_agg_final);
Datum
tfm_train_agg_final(PG_FUNCTION_ARGS)
{
	TfmStream  *st;
	TupleDesc	tupdesc;
	Datum		v[7];
	bool		nulls[7] = {false, false, false, true, true, false, false};
	double		secs,
				loss;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();		/* no rows: nothing trained */
	st = (TfmStream *) PG_GETARG_POINTER(0);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!tfm_stream_finish(st, &loss, &secs))
		PG_RETURN_NULL();		/* only NULL rows: as no rows, nothing trained */
	v[0] = Int32GetDatum(1);
	v[1] = Int64GetDatum(st->tr.step);
	v[2] = Float8GetDatum(loss);
	v[5] = Float8GetDatum(st->tokens / Max(secs, 1e-9));
	v[6] = Float8GetDatum(secs);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), v, nulls)));
}
