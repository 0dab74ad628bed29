/*
 * train.c — tfm_train(model, query, ...): train a model on a query's rows.
 *
 * Design
 * ------
 * The query is read through a cursor in chunks of TFM_CHUNK_ROWS rows, so
 * memory depends on the chunk, not on the table.  Each chunk's training
 * examples are shuffled (seeded), grouped by length in windows of a few
 * batches (little padding) and the batches run in shuffled order; an 'lm'
 * model instead draws windows of max_len + 1 tokens at seeded random offsets
 * from the chunk's token stream (rows' tokens each followed by <eos>, the
 * last max_len tokens of the previous chunk carried over), as many windows
 * as the chunk has tokens / max_len.  `epochs` counts passes over the query.
 *
 * Held-out rows (val_fraction) are kept, up to TFM_VAL_MAX examples or
 * TFM_VAL_MAX_TOKENS tokens, and scored at the end of every epoch.
 *
 * Saves and transactions: the weights are written to tfm.tensors at the end
 * of every epoch, in the statement's transaction: if the statement fails or
 * is cancelled, everything it saved rolls back and the model is exactly as
 * it was before the call.  A loss or gradient that stops being finite ends
 * training with a WARNING after saving the last good weights (the step that
 * failed is not applied); reaching time_limit or max_steps ends it with a
 * NOTICE after a save.  Both return normally, so the saves commit.
 *
 * Progress: NOTICE lines while training, and a status line in
 * pg_stat_activity.query of the training backend (see tfm.progress).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "tfm/train.h"
#include "tfm_pg.h"
#include "train_data.h"

#define TFM_CHUNK_ROWS      8192
#define TFM_VAL_MAX         50000
#define TFM_VAL_MAX_TOKENS  2000000
#define TFM_MAX_BATCH       65536
#define TFM_MAX_EPOCHS      1000000000
#define TFM_MAX_ACCUMULATE  64

/* argument positions */
enum
{
	A_MODEL, A_QUERY, A_EPOCHS, A_BATCH, A_LR, A_WARMUP, A_SCHEDULE, A_WD, A_CLIP,
	A_SMOOTH, A_VAL, A_SEED, A_TIME, A_MAX_STEPS, A_ACCUM, A_BATCH_TOKENS
};

typedef struct TrainRun
{
	TfmModelRow row;
	tfm_model  *m;
	tfm_trainer tr;
	TfmReader	rd;
	int			epochs;
	int			batch;
	int			accumulate;
	int			batch_tokens;	/* > 0: batches by padded tokens, not rows */
	int64		max_steps;
	int64		time_limit_us;	/* 0 = none */
	bool		warmup_auto;	/* warmup not given: it follows total_steps */
	TimestampTz started;
	double		fit_base_s;		/* elapsed at the first fit (step 5), < 0 before */
	int64		epoch_total;	/* the steps the epochs need (estimate), 0 = unknown */
	TimestampTz epoch_started;
	TimestampTz last_notice;
	TimestampTz last_status;
	int64		steps_per_epoch_est;
	/* this epoch */
	double		loss_sum;
	int64		loss_count;
	int64		tokens;
	int64		epoch_steps;
	int			epoch;
	bool		stop;			/* time limit, max_steps or non-finite */
	bool		nonfinite;
	/* validation set */
	TfmExample *val;
	int			nval;
	int32	   *val_stream;		/* lm */
	int64		val_stream_len;
	MemoryContext val_cxt;
} TrainRun;

static double
elapsed_s(TimestampTz since)
{
	return (double) (GetCurrentTimestamp() - since) / 1e6;
}

/*
 * The schedule's length is known (or re-estimated): set it, capped by
 * max_steps, and, unless the user gave warmup, the default warmup with it
 * (5 % of the steps; 10 % up to 4000 for inverse_sqrt).
 */
static void
set_total_steps(TrainRun *run, tfm_train_opts *o, int64 total)
{
	if (run->max_steps > 0 && (total == 0 || run->max_steps < total))
		total = run->max_steps;
	o->total_steps = total;
	if (run->warmup_auto)
		o->warmup = o->schedule == TFM_SCHED_INVSQRT ? Min(4000, Max(1, total / 10)) : Max(1, total / 20);
}

/* ---- options ------------------------------------------------------------- */

static void
check_positive_int(int v, const char *what, int hi)
{
	if (v < 1 || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %d, not %d", what, hi, v)));
}

static void
parse_options(FunctionCallInfo fcinfo, TrainRun *run, tfm_train_opts *o)
{
	const tfm_config *c = &run->row.cfg;
	bool		pre = c->norm == TFM_NORM_PRE;

	memset(o, 0, sizeof(*o));
	run->epochs = PG_ARGISNULL(A_EPOCHS) ? 1 : PG_GETARG_INT32(A_EPOCHS);
	check_positive_int(run->epochs, "epochs", TFM_MAX_EPOCHS);
	switch (c->task)
	{
		case TFM_TASK_CLASSIFY:
			run->batch = 32;
			/* an imported BERT-family encoder fine-tunes at BERT's usual 5e-5 */
			o->lr = c->emb_norm ? 5e-5f : pre ? 1e-3f : 5e-4f;
			o->schedule = TFM_SCHED_COSINE;
			o->beta1 = 0.9f;
			o->beta2 = 0.999f;
			o->weight_decay = 0.01f;
			run->rd.val_fraction = 0.1f;
			break;
		case TFM_TASK_LM:
			run->batch = 64;
			o->lr = 2e-3f;
			o->schedule = TFM_SCHED_COSINE;
			o->beta1 = 0.9f;
			o->beta2 = 0.99f;
			o->weight_decay = 0.01f;
			run->rd.val_fraction = 0.0f;
			break;
		case TFM_TASK_SEQ2SEQ:
			run->batch = 64;
			o->lr = 1.5e-3f;
			o->schedule = TFM_SCHED_INVSQRT;
			o->beta1 = 0.9f;
			o->beta2 = 0.98f;
			o->weight_decay = 0.01f;
			o->label_smoothing = 0.1f;
			run->rd.val_fraction = 0.0f;
			break;
	}
	o->eps = 1e-8f;
	o->decoupled = true;
	if (!PG_ARGISNULL(A_BATCH))
	{
		run->batch = PG_GETARG_INT32(A_BATCH);
		check_positive_int(run->batch, "batch_size", TFM_MAX_BATCH);
	}
	if (!PG_ARGISNULL(A_LR))
	{
		o->lr = PG_GETARG_FLOAT4(A_LR);
		if (!(o->lr > 0.0f && o->lr <= 10.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lr must be greater than 0 and at most 10")));
	}
	o->warmup = -1;
	if (!PG_ARGISNULL(A_WARMUP))
	{
		o->warmup = PG_GETARG_INT32(A_WARMUP);
		if (o->warmup < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("warmup must not be negative")));
	}
	if (!PG_ARGISNULL(A_SCHEDULE))
	{
		char	   *s = text_to_cstring(PG_GETARG_TEXT_PP(A_SCHEDULE));

		if (strcmp(s, "constant") == 0)
			o->schedule = TFM_SCHED_CONSTANT;
		else if (strcmp(s, "linear") == 0)
			o->schedule = TFM_SCHED_LINEAR;
		else if (strcmp(s, "cosine") == 0)
			o->schedule = TFM_SCHED_COSINE;
		else if (strcmp(s, "inverse_sqrt") == 0)
			o->schedule = TFM_SCHED_INVSQRT;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown schedule \"%s\"", s),
					 errhint("Valid schedules are constant, linear, cosine and inverse_sqrt.")));
	}
	if (!PG_ARGISNULL(A_WD))
	{
		o->weight_decay = PG_GETARG_FLOAT4(A_WD);
		if (!(o->weight_decay >= 0.0f && o->weight_decay <= 1.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weight_decay must be between 0 and 1")));
	}
	o->clip = PG_ARGISNULL(A_CLIP) ? 1.0f : PG_GETARG_FLOAT4(A_CLIP);
	if (!(o->clip >= 0.0f) || isinf(o->clip))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("clip must be 0 (no clipping) or a positive norm")));
	if (!PG_ARGISNULL(A_SMOOTH))
	{
		o->label_smoothing = PG_GETARG_FLOAT4(A_SMOOTH);
		if (!(o->label_smoothing >= 0.0f && o->label_smoothing < 1.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("label_smoothing must be at least 0 and less than 1")));
	}
	if (!PG_ARGISNULL(A_VAL))
	{
		run->rd.val_fraction = PG_GETARG_FLOAT4(A_VAL);
		if (!(run->rd.val_fraction >= 0.0f && run->rd.val_fraction < 1.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("val_fraction must be at least 0 and less than 1")));
	}
	o->seed = PG_ARGISNULL(A_SEED) ? 42 : (uint64) PG_GETARG_INT64(A_SEED);
	run->rd.seed = o->seed;
	if (!PG_ARGISNULL(A_TIME))
	{
		Interval   *iv = PG_GETARG_INTERVAL_P(A_TIME);

		if (iv->month > 12 * 100 || iv->day > 36500 || iv->month < 0 || iv->day < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time_limit must be positive and at most 100 years")));
		run->time_limit_us = iv->time + (int64) iv->day * USECS_PER_DAY +
			(int64) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
		if (run->time_limit_us <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time_limit must be positive")));
	}
	run->max_steps = PG_ARGISNULL(A_MAX_STEPS) ? 0 : PG_GETARG_INT64(A_MAX_STEPS);
	if (run->max_steps < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_steps must not be negative")));
	run->accumulate = PG_ARGISNULL(A_ACCUM) ? 1 : PG_GETARG_INT32(A_ACCUM);
	check_positive_int(run->accumulate, "accumulate", TFM_MAX_ACCUMULATE);
	run->batch_tokens = c->task == TFM_TASK_SEQ2SEQ && PG_ARGISNULL(A_BATCH) ? 8000 : 0;
	if (PG_NARGS() > A_BATCH_TOKENS && !PG_ARGISNULL(A_BATCH_TOKENS))
	{
		if (c->task == TFM_TASK_LM)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("an lm model's batches are batch_size windows of max_len tokens; batch_tokens does not apply")));
		run->batch_tokens = PG_GETARG_INT32(A_BATCH_TOKENS);
		check_positive_int(run->batch_tokens, "batch_tokens", 16777216);
	}
	run->rd.head_tail = true;
	run->rd.chunk_rows = TFM_CHUNK_ROWS;
	run->rd.val_max_rows = TFM_VAL_MAX;
	run->rd.val_max_tokens = TFM_VAL_MAX_TOKENS;
}

/* rows the query returns (for the schedule's length) */
static int64
count_rows(const char *query)
{
	StringInfoData sql;
	int64		n;
	bool		isnull;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT count(*) FROM (%s) AS tfm_rows", tfm_subquery(query));
	if (SPI_execute(sql.data, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot count the training rows");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/* ---- progress ------------------------------------------------------------ */

static void
report_progress(TrainRun *run, bool force)
{
	TimestampTz now = GetCurrentTimestamp();
	double		loss = run->loss_count ? run->loss_sum / run->loss_count : NAN;
	double		secs = elapsed_s(run->started);
	int64		total = run->tr.o.total_steps;
	double		eta = run->tr.step > 0 && total > run->tr.step ?
		secs / run->tr.step * (total - run->tr.step) : 0;
	char		status[256];

	if (force || now - run->last_status >= USECS_PER_SEC)
	{
		snprintf(status, sizeof(status),
				 "tfm_train %s: epoch %d/%d step %lld/%lld loss %.4f lr %.2e %.0f tokens/s eta %.0fs",
				 run->row.name, run->epoch, run->epochs, (long long) run->tr.step,
				 (long long) total, loss, run->tr.last_lr,
				 run->tokens / Max(elapsed_s(run->epoch_started), 1e-9), eta);
		pgstat_report_activity(STATE_RUNNING, status);
		run->last_status = now;
	}
	if (tfm_progress && (force || now - run->last_notice >= 10 * USECS_PER_SEC))
	{
		ereport(NOTICE,
				(errmsg("%s: epoch %d step %lld/%lld loss %.4f lr %.2e %.0f tokens/s eta %.0f s",
						run->row.name, run->epoch, (long long) run->tr.step, (long long) total,
						loss, run->tr.last_lr, run->tokens / Max(elapsed_s(run->epoch_started), 1e-9),
						eta)));
		run->last_notice = now;
	}
}

/* ---- steps --------------------------------------------------------------- */

/*
 * Fit the schedule to the time budget: at step 5 from the speed so far
 * (shrinking the estimate only: the first steps pay for reading the first
 * chunk and touching the workspace), then at step 50 and every 250 steps
 * from the speed since step 5, either way, so a run ends annealed at its
 * time limit rather than at a stale estimate.
 */
static void
fit_schedule_to_time(TrainRun *run)
{
	double		secs,
				per_step;
	int64		fit;

	if (run->time_limit_us == 0 || run->tr.step < 5)
		return;
	secs = elapsed_s(run->started);
	if (run->fit_base_s < 0.0)
	{
		run->fit_base_s = secs;
		per_step = secs / run->tr.step;
	}
	else
		per_step = (secs - run->fit_base_s) / (run->tr.step - 5);
	if (per_step <= 0.0)
		return;
	fit = run->tr.step + (int64) ((run->time_limit_us / 1e6 - secs) / per_step);
	if (run->epoch_total > 0 && fit > run->epoch_total)
		fit = run->epoch_total;		/* the epochs end first */
	fit = Max(fit, run->tr.step + 1);
	if (run->tr.step > 5 || fit < run->tr.o.total_steps || run->tr.o.total_steps == 0)
		set_total_steps(run, &run->tr.o, fit);
}

static void
run_step(TrainRun *run, TfmBatchBuf *micro, int n)
{
	tfm_batch	bs[TFM_MAX_ACCUMULATE];
	double		loss;
	int			count;
	tfm_step_status st;

	CHECK_FOR_INTERRUPTS();
	for (int i = 0; i < n; i++)
		bs[i] = micro[i].b;
	st = tfm_trainer_step(&run->tr, bs, n, &loss, &count);
	if (st == TFM_STEP_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory training model \"%s\"", run->row.name),
				 errhint("Use a smaller batch_size, or accumulate over micro-batches.")));
	if (st == TFM_STEP_NONFINITE)
	{
		ereport(WARNING,
				(errmsg("training of model \"%s\" stopped at step %lld: the loss or gradient is not finite",
						run->row.name, (long long) run->tr.step + 1),
				 errdetail("The weights of the last good step are saved."),
				 errhint("Lower lr, raise warmup, or clip gradients.")));
		run->stop = true;
		run->nonfinite = true;
		return;
	}
	run->loss_sum += loss;
	run->loss_count += count;
	for (int i = 0; i < n; i++)
		run->tokens += micro[i].tokens;
	run->epoch_steps++;
	if (run->tr.step == 5 || run->tr.step == 50 || run->tr.step % 250 == 0)
		fit_schedule_to_time(run);
	if (run->max_steps > 0 && run->tr.step >= run->max_steps)
		run->stop = true;
	if (run->time_limit_us > 0 && GetCurrentTimestamp() - run->started >= run->time_limit_us)
		run->stop = true;
	report_progress(run, false);
}

/* an example's padded size in a batch: its longest side */
static inline int
example_tokens(const TfmExample *e)
{
	return Max(e->nsrc, e->ntgt + (e->tgt ? 1 : 0));
}

static int
cmp_len(const void *a, const void *b)
{
	const TfmExample *x = a,
			   *y = b;
	int			lx = example_tokens(x),
				ly = example_tokens(y);

	/* by the padded length batch_tokens counts, so a batch's rows share it */
	if (lx != ly)
		return lx < ly ? -1 : 1;
	if (x->nsrc != y->nsrc)
		return x->nsrc < y->nsrc ? -1 : 1;
	return x->ntgt < y->ntgt ? -1 : (x->ntgt > y->ntgt);
}

static void
shuffle(void *base, int n, size_t size, tfm_rng *rng)
{
	char	   *a = base;
	char		tmp[64];

	Assert(size <= sizeof(tmp));
	for (int i = n - 1; i > 0; i--)
	{
		int			j = (int) tfm_rng_below(rng, (uint64) i + 1);

		memcpy(tmp, a + i * size, size);
		memcpy(a + i * size, a + j * size, size);
		memcpy(a + j * size, tmp, size);
	}
}

/*
 * Cut a chunk into batches: batch_size rows from windows of 16 batches
 * sorted by length, or (batch_tokens) as many length-sorted rows as fit in
 * batch_tokens padded tokens.  Fills starts[] (nb + 1 entries).
 */
static int
cut_batches(TrainRun *run, TfmExample *ex, int n, int *starts)
{
	int			nb = 0;

	if (run->batch_tokens > 0)
	{
		int			i = 0;

		qsort(ex, n, sizeof(TfmExample), cmp_len);
		while (i < n)
		{
			int			longest = 0,
						j = i;

			starts[nb++] = i;
			while (j < n)
			{
				int			l = Max(longest, example_tokens(&ex[j]));

				if (j > i && (int64) l * (j - i + 1) > run->batch_tokens)
					break;
				longest = l;
				j++;
			}
			i = j;
		}
	}
	else
	{
		int			B = run->batch,
					window = B * 16;

		/* group by length within windows of 16 batches: little padding */
		for (int w = 0; w < n; w += window)
			qsort(ex + w, Min(window, n - w), sizeof(TfmExample), cmp_len);
		for (int i = 0; i < n; i += B)
			starts[nb++] = i;
	}
	starts[nb] = n;
	return nb;
}

/* classify / seq2seq: one chunk's examples → steps */
static void
train_examples(TrainRun *run, TfmExample *ex, int n, tfm_rng *rng)
{
	int		   *starts = palloc(sizeof(int) * (n + 1));
	int		   *order;
	int			nb;
	TfmBatchBuf micro[TFM_MAX_ACCUMULATE];
	int			nm = 0;

	shuffle(ex, n, sizeof(TfmExample), rng);
	nb = cut_batches(run, ex, n, starts);
	order = palloc(sizeof(int) * nb);
	for (int i = 0; i < nb; i++)
		order[i] = i;
	shuffle(order, nb, sizeof(int), rng);
	for (int i = 0; i < nb && !run->stop; i++)
	{
		int			start = starts[order[i]];
		int			cnt = starts[order[i] + 1] - start;

		if (run->row.cfg.task == TFM_TASK_CLASSIFY)
			tfm_batch_classify(&micro[nm++], ex + start, cnt, run->rd.sp.pad);
		else
			tfm_batch_seq2seq(&micro[nm++], ex + start, cnt, &run->rd.sp);
		if (nm == run->accumulate || i == nb - 1)
		{
			run_step(run, micro, nm);
			nm = 0;
		}
	}
}

/* lm: windows of a chunk's stream → steps */
static void
train_stream(TrainRun *run, const int32 *stream, int64 len, tfm_rng *rng)
{
	int			T = run->row.cfg.max_len;
	int			B = run->batch;
	int64		windows,
				done = 0;
	int64	   *offsets;
	TfmBatchBuf micro[TFM_MAX_ACCUMULATE];
	int			nm = 0;

	if (len < 2)
		return;
	if (len < T + 1)
		T = (int) len - 1;
	windows = Max(1, (len - 1) / T);
	offsets = palloc(sizeof(int64) * B);
	while (done < windows && !run->stop)
	{
		int			b = (int) Min((int64) B, windows - done);

		for (int i = 0; i < b; i++)
			offsets[i] = (int64) tfm_rng_below(rng, (uint64) (len - T));
		tfm_batch_lm(&micro[nm++], stream, offsets, b, T);
		done += b;
		if (nm == run->accumulate || done >= windows)
		{
			run_step(run, micro, nm);
			nm = 0;
		}
	}
}

/* ---- validation ---------------------------------------------------------- */

static void
keep_val(TrainRun *run, TfmExample *ex, int n)
{
	MemoryContext old = MemoryContextSwitchTo(run->val_cxt);

	if (run->row.cfg.task == TFM_TASK_LM)
	{
		for (int i = 0; i < n && run->val_stream_len < TFM_VAL_MAX_TOKENS; i++)
		{
			int64		need = run->val_stream_len + ex[i].nsrc + 1;

			if (run->val_stream == NULL)
				run->val_stream = palloc(sizeof(int32) * TFM_VAL_MAX_TOKENS);
			if (need > TFM_VAL_MAX_TOKENS)
				break;
			memcpy(run->val_stream + run->val_stream_len, ex[i].src, sizeof(int32) * ex[i].nsrc);
			run->val_stream[need - 1] = run->rd.sp.eos;
			run->val_stream_len = need;
		}
	}
	else
	{
		if (run->val == NULL)
			run->val = palloc(sizeof(TfmExample) * TFM_VAL_MAX);
		for (int i = 0; i < n && run->nval < TFM_VAL_MAX; i++)
		{
			TfmExample *e = &run->val[run->nval++];

			*e = ex[i];
			e->src = palloc(sizeof(int32) * ex[i].nsrc);
			memcpy(e->src, ex[i].src, sizeof(int32) * ex[i].nsrc);
			if (ex[i].tgt)
			{
				e->tgt = palloc(sizeof(int32) * ex[i].ntgt);
				memcpy(e->tgt, ex[i].tgt, sizeof(int32) * ex[i].ntgt);
			}
		}
	}
	MemoryContextSwitchTo(old);
}

/* mean loss and (classify) accuracy of the held-out rows */
static void
validate(TrainRun *run, double *val_loss, double *val_acc)
{
	tfm_model  *m = run->m;
	const tfm_config *c = &m->cfg;
	double		sum = 0.0;
	int64		count = 0,
				correct = 0;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm validation",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	*val_loss = NAN;
	*val_acc = NAN;
	if (c->task == TFM_TASK_LM)
	{
		int			T = c->max_len;
		int64		pos = 0;

		while (pos + 1 < run->val_stream_len)
		{
			int			t = (int) Min((int64) T, run->val_stream_len - 1 - pos);
			int64		off = pos;
			TfmBatchBuf bb;
			int			n;

			CHECK_FOR_INTERRUPTS();
			tfm_batch_lm(&bb, run->val_stream, &off, 1, t);
			if (tfm_model_forward(m, &bb.b, false, 0) != 0)
				elog(ERROR, "out of memory in validation");
			sum += tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &n);
			count += n;
			pos += t;
		}
	}
	else
	{
		for (int i = 0; i < run->nval; i += 64)
		{
			int			cnt = Min(64, run->nval - i);
			TfmBatchBuf bb;
			int			n;

			CHECK_FOR_INTERRUPTS();
			if (c->task == TFM_TASK_CLASSIFY)
				tfm_batch_classify(&bb, run->val + i, cnt, run->rd.sp.pad);
			else
				tfm_batch_seq2seq(&bb, run->val + i, cnt, &run->rd.sp);
			if (tfm_model_forward(m, &bb.b, false, 0) != 0)
				elog(ERROR, "out of memory in validation");
			if (c->task == TFM_TASK_CLASSIFY)
				for (int b = 0; b < cnt; b++)
				{
					const float *z = m->logits + (size_t) b * c->n_classes;
					int			best = 0;

					for (int k = 1; k < c->n_classes; k++)
						if (z[k] > z[best])
							best = k;
					correct += best == bb.labels[b];
				}
			sum += tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &n);
			count += n;
		}
		if (c->task == TFM_TASK_CLASSIFY && run->nval > 0)
			*val_acc = (double) correct / run->nval;
	}
	if (count > 0)
		*val_loss = sum / count;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* ---- epochs -------------------------------------------------------------- */

static void
save_epoch(TrainRun *run, int64 steps_before, double train_loss, double val_loss,
		   double val_acc, double tps, double secs)
{
	Oid			types[9] = {INT4OID, TIMESTAMPTZOID, INT4OID, INT8OID, FLOAT8OID, FLOAT8OID,
	FLOAT8OID, FLOAT8OID, FLOAT8OID};
	Datum		args[9];
	char		nulls[9] = "         ";
	TfmAsOwner	as;

	tfm_catalog_save(&run->row, run->m, run->tr.step - steps_before);
	args[0] = Int32GetDatum(run->row.id);
	args[1] = TimestampTzGetDatum(run->started);
	args[2] = Int32GetDatum(run->epoch);
	args[3] = Int64GetDatum(run->tr.step);
	args[4] = Float8GetDatum(train_loss);
	args[5] = Float8GetDatum(val_loss);
	args[6] = Float8GetDatum(val_acc);
	args[7] = Float8GetDatum(tps);
	args[8] = Float8GetDatum(secs);
	for (int i = 4; i <= 6; i++)
		if (isnan(DatumGetFloat8(args[i])))
			nulls[i] = 'n';
	tfm_as_owner_begin(&as);
	if (SPI_execute_with_args("INSERT INTO tfm.history (model_id, run_started, epoch, steps, "
							  "train_loss, val_loss, val_accuracy, tokens_per_s, seconds) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
							  9, types, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "cannot write tfm.history");
	tfm_as_owner_end(&as);
}

static void
free_trainer(void *tr)
{
	tfm_trainer_free(tr);
}

PG_FUNCTION_INFO_V1(tfm_train);
Datum
tfm_train(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = tfm_text_arg(fcinfo, A_MODEL, "model");
	char	   *query = tfm_text_arg(fcinfo, A_QUERY, "query");
	TrainRun   *run = palloc0(sizeof(TrainRun));
	MemoryContext fn_cxt = CurrentMemoryContext;
	tfm_train_opts o;
	TfmGuard   *guard;
	TfmGuard   *tr_guard;
	MemoryContext chunk_cxt;
	tfm_rng		rng;
	int64		rows;
	int64		steps_before;

	SetSingleFuncCall(fcinfo, 0);
	tfm_backend_ready();
	run->m = tfm_cache_take(model, &run->row);
	guard = tfm_guard_model(run->m);
	parse_options(fcinfo, run, &o);

	SPI_connect();
	tfm_reader_init(&run->rd, &run->row, query);
	rows = count_rows(query);
	if (rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the training query returned no rows")));

	/* the schedule's length: from the rows, or the token estimate (lm) */
	if (run->row.cfg.task == TFM_TASK_LM || run->batch_tokens > 0)
		run->steps_per_epoch_est = 0;	/* known after the first chunk */
	else
		run->steps_per_epoch_est =
			Max(1, (int64) ceil(rows * (1.0 - run->rd.val_fraction) / run->batch / run->accumulate));
	run->warmup_auto = o.warmup < 0;
	run->epoch_total = run->steps_per_epoch_est * run->epochs;
	run->fit_base_s = -1.0;
	set_total_steps(run, &o, run->epoch_total);
	if (tfm_trainer_init(&run->tr, run->m, &o) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory for the optimizer of model \"%s\"", model)));
	{
		/* in the function's own context: SPI_finish must not free the guard */
		MemoryContext spi_cxt = MemoryContextSwitchTo(fn_cxt);

		tr_guard = tfm_guard(free_trainer, &run->tr);
		MemoryContextSwitchTo(spi_cxt);
	}
	steps_before = 0;
	run->started = GetCurrentTimestamp();
	run->last_notice = run->started;
	run->val_cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm validation set",
										 ALLOCSET_DEFAULT_SIZES);
	chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm training chunk",
									  ALLOCSET_DEFAULT_SIZES);
	tfm_rng_seed(&rng, o.seed);

	for (run->epoch = 1; run->epoch <= run->epochs && !run->stop; run->epoch++)
	{
		TimestampTz epoch_start = GetCurrentTimestamp();
		TfmExample *train,
				   *val;
		int			ntrain,
					nval;
		int32	   *carry = NULL;
		int32	   *carry_buf = NULL;
		int64		ncarry = 0;
		int64		epoch_tokens = 0;
		double		train_loss,
					val_loss,
					val_acc,
					secs;
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};

		run->epoch_started = epoch_start;
		run->loss_sum = 0;
		run->loss_count = 0;
		run->tokens = 0;
		run->epoch_steps = 0;
		tfm_reader_open(&run->rd);
		for (;;)
		{
			MemoryContext old;
			bool		more;

			MemoryContextReset(chunk_cxt);
			old = MemoryContextSwitchTo(chunk_cxt);
			if (carry)
			{
				int32	   *c2 = palloc(sizeof(int32) * ncarry);

				memcpy(c2, carry, sizeof(int32) * ncarry);
				carry = c2;
			}
			more = tfm_reader_next(&run->rd, &train, &ntrain, &val, &nval);
			if (!more)
			{
				MemoryContextSwitchTo(old);
				break;
			}
			if (run->epoch == 1 && nval > 0)
				keep_val(run, val, nval);
			if (run->row.cfg.task == TFM_TASK_LM)
			{
				int64		len = ncarry;
				int32	   *stream;

				for (int i = 0; i < ntrain; i++)
					len += train[i].nsrc + 1;
				stream = palloc_extended(sizeof(int32) * Max(len, 1), MCXT_ALLOC_HUGE);
				if (ncarry)
					memcpy(stream, carry, sizeof(int32) * ncarry);
				len = ncarry;
				for (int i = 0; i < ntrain; i++)
				{
					memcpy(stream + len, train[i].src, sizeof(int32) * train[i].nsrc);
					len += train[i].nsrc;
					stream[len++] = run->rd.sp.eos;
				}
				epoch_tokens += len - ncarry;
				/* first chunk: estimate the schedule's length from tokens per row */
				if (run->tr.o.total_steps == 0 || (run->epoch == 1 && run->steps_per_epoch_est == 0))
				{
					double		per_row = (double) (len - ncarry) / Max(1, run->rd.row_number);
					int64		est = (int64) ceil(per_row * rows / run->row.cfg.max_len /
												   run->batch / run->accumulate);

					run->steps_per_epoch_est = Max(1, est);
					run->epoch_total = run->steps_per_epoch_est * run->epochs;
					set_total_steps(run, &run->tr.o, run->epoch_total);
				}
				train_stream(run, stream, len, &rng);
				/* carry the tail over so windows can cross chunks */
				ncarry = Min(len, (int64) run->row.cfg.max_len);
				MemoryContextSwitchTo(old);
				if (carry_buf == NULL)
					carry_buf = MemoryContextAlloc(run->val_cxt, sizeof(int32) * (run->row.cfg.max_len + 1));
				carry = carry_buf;
				memcpy(carry, stream + len - ncarry, sizeof(int32) * ncarry);
				old = MemoryContextSwitchTo(chunk_cxt);
			}
			else if (ntrain > 0)
			{
				if (run->batch_tokens > 0 && run->epoch == 1 && run->steps_per_epoch_est == 0)
				{
					/* the schedule's length from this chunk's tokens per row */
					double		tok = 0;

					for (int i = 0; i < ntrain; i++)
						tok += example_tokens(&train[i]);
					run->steps_per_epoch_est =
						Max(1, (int64) ceil(1.1 * tok / ntrain * rows * (1.0 - run->rd.val_fraction) /
											run->batch_tokens / run->accumulate));
					run->epoch_total = run->steps_per_epoch_est * run->epochs;
					set_total_steps(run, &run->tr.o, run->epoch_total);
				}
				train_examples(run, train, ntrain, &rng);
			}
			MemoryContextSwitchTo(old);
			if (run->stop)
				break;
		}
		tfm_reader_close(&run->rd);
		if (run->epoch == 1 && run->rd.skipped_null > 0)
			ereport(NOTICE,
					(errmsg("%lld rows with a NULL value were skipped",
							(long long) run->rd.skipped_null)));
		if (run->epoch == 1 && run->rd.truncated > 0)
			ereport(NOTICE,
					(errmsg("%lld sequences longer than max_len (%d) were truncated",
							(long long) run->rd.truncated, run->row.cfg.max_len)));
		if (run->epoch_steps == 0 && !run->nonfinite)
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("no training rows: every row was NULL or held out for validation")));

		/*
		 * The first epoch's real step count sets the schedule's length (with
		 * a time limit, the cap on the next fits to the time).
		 */
		if (run->epoch == 1 && !run->stop)
		{
			int64		total = run->tr.step * run->epochs;

			run->epoch_total = total;
			if (run->max_steps > 0 && run->max_steps < total)
				total = run->max_steps;
			if (run->time_limit_us == 0)
				run->tr.o.total_steps = total;
		}

		/* end of epoch: validate, save, record */
		secs = elapsed_s(epoch_start);
		train_loss = run->loss_count ? run->loss_sum / run->loss_count : NAN;
		validate(run, &val_loss, &val_acc);
		save_epoch(run, steps_before, train_loss, val_loss, val_acc,
				   run->tokens / Max(secs, 1e-9), secs);
		steps_before = run->tr.step;
		report_progress(run, true);

		values[0] = Int32GetDatum(run->epoch);
		values[1] = Int64GetDatum(run->tr.step);
		values[2] = Float8GetDatum(train_loss);
		values[3] = Float8GetDatum(val_loss);
		values[4] = Float8GetDatum(val_acc);
		values[5] = Float8GetDatum(run->tokens / Max(secs, 1e-9));
		values[6] = Float8GetDatum(secs);
		nulls[2] = isnan(train_loss);
		nulls[3] = isnan(val_loss);
		nulls[4] = isnan(val_acc);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		(void) epoch_tokens;
	}
	if (run->stop && !run->nonfinite)
		ereport(NOTICE,
				(errmsg("training of model \"%s\" stopped after %lld steps (%s)", model,
						(long long) run->tr.step,
						run->max_steps > 0 && run->tr.step >= run->max_steps ? "max_steps" : "time_limit")));
	SPI_finish();
	pgstat_report_activity(STATE_RUNNING, "tfm_train: done");
	tfm_trainer_free(&run->tr);
	tfm_guard_release(tr_guard);
	/* the trained model goes back to the cache under its new version */
	tfm_model_trim(run->m);
	tfm_cache_put(&run->row, run->m);
	tfm_guard_release(guard);
	return (Datum) 0;
}
