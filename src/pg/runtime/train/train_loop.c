/*
 * train_loop.c — one training run: the epoch loop, its steps and batches,
 * validation and keeping the best (see train_run.h), shared by tfm_train
 * and tfm_fit.  Its arguments: train_options.c; its plan: train_plan.c; its
 * progress, result rows and saves: train_report.c.
 *
 * Design
 * ------
 * The query is read through a cursor in chunks of tfm.train_chunk_rows rows
 * (8192), so memory depends on the chunk, not on the table.  Each chunk's
 * training examples are shuffled (seeded), grouped by length in windows of
 * a few batches (little padding) and the batches run in shuffled order; an
 * 'lm' model instead draws windows of max_len + 1 tokens at seeded random
 * offsets from the chunk's token stream (rows' tokens each followed by
 * <eos>, the last max_len tokens of the previous chunk carried over), as
 * many windows as the chunk has tokens / max_len.  `epochs` counts passes
 * over the query.
 *
 * Between two chunks the whole state of the run is in TrainRun (optimizer,
 * schedule, RNG, rows read, carry, sums): that is where tfm_fit's hook
 * checkpoints, and where a resumed run re-enters, re-reading the query from
 * the row after the last one consumed.  With the rows in the same order the
 * chunks, shuffles and steps are the same ones, so the weights are too.
 *
 * Held-out rows (val_fraction; by default the task's fraction, chosen by a
 * hash of each row's tokens, train_data.c) are read before the first step,
 * up to TFM_VAL_MAX examples or TFM_VAL_MAX_TOKENS tokens (the default:
 * TFM_VAL_AUTO_MAX_ROWS, TFM_VAL_AUTO_MAX_TOKENS, and none when fewer than
 * TFM_VAL_AUTO_MIN would be held out), and scored at the end of every epoch
 * and, in a run of few long epochs, every eval_every steps.  keep => 'best'
 * (the default) keeps a copy of the best evaluation's parameters in memory
 * and saves it at the end in place of the last; after `patience`
 * evaluations without improvement the run stops early.
 *
 * The plan: how many passes over the training rows the budget allows
 * (epochs, or what max_steps or time_limit leave of them at the measured
 * speed) sets the dropout of a model created without one and the weight
 * decay of a run without one (tfm_train_regularisation), until step
 * TFM_PLAN_FIXED_STEP; after that the plan stays as it is (train_plan.c).
 *
 * A loss or gradient that stops being finite ends training with a WARNING
 * after saving the last good weights (the step that failed is not applied);
 * reaching time_limit or max_steps ends it with a NOTICE after a save.  Both
 * return normally, so the saves commit.
 *
 * Progress: NOTICE lines while training, and a status line in
 * pg_stat_activity.query of the training backend (see tfm.progress;
 * train_report.c).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tfm/lowp.h"
#include "runtime/train/train_run.h"
#include "runtime/train/task_rows.h"
#include "runtime/train/train_plan.h"
#include "runtime/train/train_report.h"
#include "runtime/runtime.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/* ---- steps --------------------------------------------------------------- */

static void evaluate_mid_epoch(TrainRun *run);

static void
run_step(TrainRun *run, TfmBatchBuf *micro, int n)
{
	tfm_batch	bs[TFM_ACCUMULATE_MAX];
	double		loss;
	int			count;
	tfm_step_status st;

	CHECK_FOR_INTERRUPTS();
	for (int i = 0; i < n; i++)
	{
		bs[i] = micro[i].b;
		/* the batch's workspace is sized before anything is allocated for it */
		tfm_batch_check(run->m, &bs[i], true, "training", run->row.name,
						run->batch_tokens > 0 ? "batch_tokens or the sequence length" :
						"batch_size or the sequence length");
	}
	st = tfm_trainer_step(&run->tr, bs, n, &loss, &count);
	if (st == TFM_STEP_BADID)
		tfm_check_pass(TFM_EBADID, run->row.name);
	if (st == TFM_STEP_NOMEM)
		tfm_report(ERROR, TFM_ENOMEM, psprintf("out of memory training model \"%s\"", run->row.name),
				   NULL, "Use a smaller batch_size, or accumulate over micro-batches.");
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
		tfm_run_fit_to_time(run);
	if (run->max_steps > 0 && run->tr.step >= run->max_steps)
		run->stop = true;
	if (run->time_limit_us > 0 && GetCurrentTimestamp() - run->clock_start >= run->time_limit_us)
		run->stop = true;
	if (run->eval_every > 0 && run->tr.step % run->eval_every == 0 && !run->stop)
		evaluate_mid_epoch(run);
	tfm_run_progress(run, false);
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

/* the largest element shuffle moves: an example */
#define SHUFFLE_MAX 128
StaticAssertDecl(sizeof(TfmExample) <= SHUFFLE_MAX, "shuffle's buffer holds an example");

static void
shuffle(void *base, int n, size_t size, tfm_rng *rng)
{
	char	   *a = base;
	char		tmp[SHUFFLE_MAX];

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
	TfmBatchBuf micro[TFM_ACCUMULATE_MAX];
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
			tfm_batch_classify(&micro[nm++], ex + start, cnt, run->rd.sp.pad, run->rd.kind);
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
	TfmBatchBuf micro[TFM_ACCUMULATE_MAX];
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
			int64		need = run->val_stream_len + ex[i].nsrc + (ex[i].cont ? 0 : 1);

			if (run->val_stream == NULL)
				run->val_stream = palloc(sizeof(int32) * TFM_VAL_MAX_TOKENS);
			if (need > TFM_VAL_MAX_TOKENS)
				break;
			memcpy(run->val_stream + run->val_stream_len, ex[i].src, sizeof(int32) * ex[i].nsrc);
			if (!ex[i].cont)
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
			if (ex[i].types)
			{
				e->types = palloc(sizeof(int32) * ex[i].nsrc);
				memcpy(e->types, ex[i].types, sizeof(int32) * ex[i].nsrc);
			}
			if (ex[i].tags)
			{
				e->tags = palloc(sizeof(int32) * ex[i].nsrc);
				memcpy(e->tags, ex[i].tags, sizeof(int32) * ex[i].nsrc);
			}
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * The next chunk of rows, read into the chunk context, which is current on
 * return (*old: the caller's); its held-out rows kept if keep.  False at the
 * end of the rows.
 */
static bool
read_chunk(TrainRun *run, bool keep, TfmExample **train, int *ntrain, MemoryContext *old)
{
	TfmExample *val;
	int			nval;
	bool		more;

	CHECK_FOR_INTERRUPTS();
	MemoryContextReset(run->chunk_cxt);
	*old = MemoryContextSwitchTo(run->chunk_cxt);
	more = tfm_reader_next(&run->rd, train, ntrain, &val, &nval);
	if (more && keep && nval > 0)
		keep_val(run, val, nval);
	return more;
}

/*
 * mean loss and (classify) accuracy of the held-out rows: of their labels;
 * a one-logit model's score on the right side of 0.5; a token classifier's
 * labelled tokens; a question-answering window's start and end both
 * exact (task_rows.c)
 */
static void
validate(TrainRun *run, double *val_loss, double *val_acc)
{
	tfm_model  *m = run->m;
	const tfm_config *c = &m->cfg;
	double		sum = 0.0;
	int64		count = 0,
				correct = 0,
				graded = 0;
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
			tfm_batch_check(m, &bb.b, false, "validating", run->row.name, "the sequence length");
			tfm_check_pass(tfm_model_forward(m, &bb.b, false, 0), run->row.name);
			sum += tfm_check_loss(tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &n), &n, NULL);
			count += n;
			pos += t;
		}
	}
	else
	{
		for (int i = 0, cnt = 0; i < run->nval; i += cnt)
		{
			TfmBatchBuf bb;
			int			n;

			CHECK_FOR_INTERRUPTS();
			cnt = Min(64, run->nval - i);
			for (;;)
			{
				/* a batch too large for tfm.work_mem: fewer rows */
				if (c->task == TFM_TASK_CLASSIFY)
					tfm_batch_classify(&bb, run->val + i, cnt, run->rd.sp.pad, run->rd.kind);
				else
					tfm_batch_seq2seq(&bb, run->val + i, cnt, &run->rd.sp);
				if (cnt == 1 || tfm_work_mem_fits(m, tfm_pass_bytes(m, bb.b.B, bb.b.T, bb.b.Tt,
																	  false, false)))
					break;
				cnt /= 2;
			}
			tfm_batch_check(m, &bb.b, false, "validating", run->row.name, "the sequence length");
			tfm_check_pass(tfm_model_forward(m, &bb.b, false, 0), run->row.name);
			if (c->task == TFM_TASK_CLASSIFY)
				tfm_task_grade(m, &bb, run->rd.kind, &correct, &graded);
			sum += tfm_check_loss(tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &n), &n, NULL);
			count += n;
		}
		if (c->task == TFM_TASK_CLASSIFY && graded > 0)
			*val_acc = (double) correct / graded;
	}
	if (count > 0)
		*val_loss = sum / count;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* keep => 'best': better accuracy, or (ties, no accuracy) lower loss */
static bool
is_better(const TrainRun *run, double acc, double loss)
{
	if (isnan(loss) && isnan(acc))
		return false;
	if (run->best_epoch == 0)
		return true;
	if (!isnan(acc) && !isnan(run->best_acc))
	{
		if (acc != run->best_acc)
			return acc > run->best_acc;
		return loss < run->best_loss;
	}
	return loss < run->best_loss;
}

/* ---- setup --------------------------------------------------------------- */

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

static void
free_trainer(void *tr)
{
	tfm_trainer_free(tr);
}

/* the reader's settings and the run's contexts */
static void
setup_data(TrainRun *run)
{
	MemoryContext old = MemoryContextSwitchTo(run->cxt);
	bool		dflt = run->val_source != TFM_VAL_GIVEN;

	run->rd.val_max_rows = dflt ? TFM_VAL_AUTO_MAX_ROWS : TFM_VAL_MAX;
	run->rd.val_max_tokens = dflt ? TFM_VAL_AUTO_MAX_TOKENS : TFM_VAL_MAX_TOKENS;
	run->val_cxt = AllocSetContextCreate(run->cxt, "tfm validation set", ALLOCSET_DEFAULT_SIZES);
	run->chunk_cxt = AllocSetContextCreate(run->cxt, "tfm training chunk", ALLOCSET_DEFAULT_SIZES);
	run->carry = palloc(sizeof(int32) * (run->row.cfg.max_len + 1));
	MemoryContextSwitchTo(old);
}

/* the optimizer */
static void
setup_trainer(TrainRun *run, const tfm_train_opts *o)
{
	MemoryContext old = MemoryContextSwitchTo(run->cxt);

	if (o->precision == TFM_PREC_BF16 && !tfm_lowp_bf16_native())
		ereport(NOTICE,
				(errmsg("bf16 training of model \"%s\" runs without native bf16 instructions (%s kernels), no faster than fp32",
						run->row.name, tfm_lowp_bf16_kernel()),
				 errdetail("%s.", tfm_lowp_reason()),
				 errhint("bf16 training pays off where the CPU has AMX-BF16 or AVX512_BF16; see tfm_info().")));
	if (tfm_trainer_init(&run->tr, run->m, o) != 0)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the optimizer of model \"%s\"", run->row.name);
	run->tr_guard = tfm_guard(free_trainer, &run->tr);
	MemoryContextSwitchTo(old);
}

/* forget the validation set read so far */
static void
drop_val(TrainRun *run)
{
	MemoryContextReset(run->val_cxt);
	run->val = NULL;
	run->nval = 0;
	run->val_stream = NULL;
	run->val_stream_len = 0;
}

void
tfm_run_begin(TrainRun *run, tfm_train_opts *o)
{
	tfm_run_fit_default_batch(run);
	tfm_reader_init(&run->rd, &run->row, run->query);
	run->rows = count_rows(run->query);
	if (run->rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the training query returned no rows")));
	setup_data(run);

	/* the held-out rows, before the first step; the default only if enough */
	tfm_run_read_val(run);
	if (run->val_source == TFM_VAL_AUTO &&
		(run->val_units < TFM_VAL_AUTO_MIN ||
		 run->val_units > 2.0 * run->rd.val_fraction * run->rd.val_candidates))
	{
		drop_val(run);
		run->val_units = 0;
		run->rd.val_fraction = 0.0f;
		run->val_source = TFM_VAL_TOO_FEW;
	}

	/* the schedule's length: from the rows, or the token estimate (lm) */
	if (run->row.cfg.task == TFM_TASK_LM || run->batch_tokens > 0)
		run->steps_per_epoch_est = 0;	/* known after the first chunk */
	else
		run->steps_per_epoch_est =
			Max(1, (int64) ceil(run->rows * (1.0 - run->rd.val_fraction) / run->batch / run->accumulate));
	run->warmup_auto = o->warmup < 0;
	run->epoch_total = run->steps_per_epoch_est * run->epochs;
	run->fit_base_s = -1.0;
	tfm_run_set_total_steps(run, o, run->epoch_total);
	setup_trainer(run, o);
	run->steps_before = 0;
	run->started = GetCurrentTimestamp();
	run->clock_start = run->started;
	run->last_notice = run->started;
	tfm_rng_seed(&run->rng, o->seed);
	run->epoch = 1;
}

void
tfm_run_begin_resumed(TrainRun *run, const tfm_train_opts *o)
{
	tfm_reader_init(&run->rd, &run->row, run->query);
	setup_data(run);
	setup_trainer(run, o);
	run->last_notice = GetCurrentTimestamp();
}

void
tfm_run_read_val(TrainRun *run)
{
	TfmExample *train;
	int			ntrain;

	run->val_units = 0;
	if (run->rd.val_fraction <= 0.0f)
		return;
	tfm_reader_open(&run->rd);
	for (;;)
	{
		MemoryContext old;
		bool		more = read_chunk(run, true, &train, &ntrain, &old);

		MemoryContextSwitchTo(old);
		if (!more)
			break;
	}
	run->val_units = run->rd.val_rows;
	tfm_reader_close(&run->rd);
	MemoryContextReset(run->chunk_cxt);
}

/* ---- epochs -------------------------------------------------------------- */

static void
train_chunk(TrainRun *run, TfmExample *train, int ntrain)
{
	if (run->row.cfg.task == TFM_TASK_LM)
	{
		int64		len = run->ncarry;
		int32	   *stream;

		for (int i = 0; i < ntrain; i++)
			len += train[i].nsrc + (train[i].cont ? 0 : 1);
		stream = palloc_extended(sizeof(int32) * Max(len, 1), MCXT_ALLOC_HUGE);
		if (run->ncarry)
			memcpy(stream, run->carry, sizeof(int32) * run->ncarry);
		len = run->ncarry;
		for (int i = 0; i < ntrain; i++)
		{
			memcpy(stream + len, train[i].src, sizeof(int32) * train[i].nsrc);
			len += train[i].nsrc;
			if (!train[i].cont)
				stream[len++] = run->rd.sp.eos;
		}
		/* first chunk: estimate the schedule's length from tokens per row */
		if (run->tr.o.total_steps == 0 || (run->epoch == 1 && run->steps_per_epoch_est == 0))
		{
			double		per_row = (double) (len - run->ncarry) / Max(1, run->rd.row_number);
			int64		est = (int64) ceil(per_row * run->rows / run->row.cfg.max_len /
										   run->batch / run->accumulate);

			run->steps_per_epoch_est = Max(1, est);
			run->epoch_total = run->steps_per_epoch_est * run->epochs;
			tfm_run_set_total_steps(run, &run->tr.o, run->epoch_total);
		}
		train_stream(run, stream, len, &run->rng);
		/* carry the tail over so windows can cross chunks */
		run->ncarry = Min(len, (int64) run->row.cfg.max_len);
		memcpy(run->carry, stream + len - run->ncarry, sizeof(int32) * run->ncarry);
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
				Max(1, (int64) ceil(1.1 * tok / ntrain * run->rows * (1.0 - run->rd.val_fraction) /
									run->batch_tokens / run->accumulate));
			run->epoch_total = run->steps_per_epoch_est * run->epochs;
			tfm_run_set_total_steps(run, &run->tr.o, run->epoch_total);
		}
		train_examples(run, train, ntrain, &run->rng);
	}
}

static bool
has_val(const TrainRun *run)
{
	return run->nval > 0 || run->val_stream_len > 1;
}

/*
 * Score the held-out rows into e (once per step: an epoch's end right after
 * a mid-epoch evaluation reuses it), keep the best, count the evaluations
 * without improvement and stop the run when patience runs out.
 */
static void
evaluate(TrainRun *run, TrainEpoch *e)
{
	char		what[96];

	if (!has_val(run))
		return;
	if (run->evaluations > 0 && run->last_eval_step == run->tr.step)
	{
		e->val_loss = run->last_val_loss;
		e->val_acc = run->last_val_acc;
		return;
	}
	validate(run, &e->val_loss, &e->val_acc);
	run->evaluations++;
	run->last_eval_step = run->tr.step;
	run->last_val_loss = e->val_loss;
	run->last_val_acc = e->val_acc;
	if (is_better(run, e->val_acc, e->val_loss))
	{
		if (run->keep == TFM_KEEP_BEST)
		{
			if (run->best_params == NULL)
				run->best_params = MemoryContextAllocExtended(run->cxt, sizeof(float) * run->m->n_floats,
															  MCXT_ALLOC_HUGE);
			memcpy(run->best_params, run->m->params, sizeof(float) * run->m->n_floats);
		}
		run->best_epoch = run->epoch;
		run->best_checkpoint = e->checkpoint;
		run->best_step = run->tr.step;
		run->best_acc = e->val_acc;
		run->best_loss = e->val_loss;
		run->since_best = 0;
		tfm_run_note_add(e->note, "the best evaluation so far");
		return;
	}
	run->since_best++;
	if (run->patience > 0 && run->since_best >= run->patience && !run->stop)
	{
		snprintf(what, sizeof(what), "early stop: %d evaluations without improvement (patience %d)",
				 run->since_best, run->patience);
		run->early_stop = true;
		run->stop = true;
	}
	else
		snprintf(what, sizeof(what), "%d evaluation%s without improvement", run->since_best,
				 run->since_best == 1 ? "" : "s");
	tfm_run_note_add(e->note, what);
}

/* every eval_every steps: a result and history row (no save of the weights) */
static void
evaluate_mid_epoch(TrainRun *run)
{
	TrainEpoch	e;

	if (!has_val(run))
		return;
	tfm_run_figures(run, &e);
	e.checkpoint = ++run->checkpoints;
	evaluate(run, &e);
	tfm_run_add_result(run, &e);
	tfm_run_add_history(run, &e, e.checkpoint);
}

static void
end_epoch(TrainRun *run)
{
	TrainEpoch	e;

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
	 * The first epoch's real step count sets the schedule's length (with a
	 * time limit, the cap on the next fits to the time).
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

	/* validate, keep the best, save, record (the note counts the NULL rows) */
	tfm_run_figures(run, &e);
	if (run->rd.skipped_null > 0)
		tfm_run_note_add(e.note, psprintf("%lld rows with a NULL value skipped",
										  (long long) run->rd.skipped_null));
	evaluate(run, &e);
	tfm_run_save(run, &e, 0);
	tfm_run_progress(run, true);
	tfm_run_add_result(run, &e);
}

void
tfm_run_loop(TrainRun *run)
{
	for (; run->epoch <= run->epochs && !run->stop; run->epoch++)
	{
		if (run->resume_epoch)
			run->resume_epoch = false;	/* sums, carry and reader restored */
		else
		{
			run->epoch_started = GetCurrentTimestamp();
			run->epoch_secs_before = 0;
			run->loss_sum = 0;
			run->loss_count = 0;
			run->tokens = 0;
			run->epoch_steps = 0;
			run->checkpoints = 0;
			run->ncarry = 0;
			tfm_reader_open(&run->rd);
		}
		for (;;)
		{
			TfmExample *train;
			int			ntrain;
			MemoryContext old;
			bool		more = read_chunk(run, false, &train, &ntrain, &old);

			if (more)
				train_chunk(run, train, ntrain);
			MemoryContextSwitchTo(old);
			if (!more || run->stop)
				break;
			if (run->hook)
				run->hook(run, false);
		}
		MemoryContextReset(run->chunk_cxt);
		end_epoch(run);
		if (run->hook)
			run->hook(run, true);
	}
}

void
tfm_run_finish(TrainRun *run, bool report_kept)
{
	int			last = run->epoch - 1;
	char		why[96];

	run->kept_epoch = last;
	run->kept_checkpoint = 0;
	/* the default 'best' without held-out rows is quietly 'last' */
	if (run->keep == TFM_KEEP_BEST && run->best_epoch == 0 && last > 0 && run->keep_given)
		ereport(NOTICE,
				(errmsg("model \"%s\" keeps its last epoch's weights: no epoch was validated",
						run->row.name),
				 errhint("keep => 'best' compares epochs on held-out rows: set val_fraction above 0.")));
	else if (run->keep == TFM_KEEP_BEST && run->best_epoch > 0 && run->best_step != run->tr.step)
	{
		memcpy(run->m->params, run->best_params, sizeof(float) * run->m->n_floats);
		tfm_catalog_save(&run->row, run->m, 0);
		run->kept_epoch = run->best_epoch;
		run->kept_checkpoint = run->best_checkpoint;
	}
	if (run->keep == TFM_KEEP_BEST && run->best_epoch > 0)
		snprintf(why, sizeof(why), "kept: the best of %d evaluations", run->evaluations);
	else if (run->keep == TFM_KEEP_BEST)
		snprintf(why, sizeof(why), "kept: the last (nothing held out to compare)");
	else
		snprintf(why, sizeof(why), "kept: the last (keep => 'last')");
	for (int i = 0; i < run->nresults; i++)
		if (run->results[i].epoch == run->kept_epoch &&
			run->results[i].checkpoint == run->kept_checkpoint)
			tfm_run_note_add(run->results[i].note, why);
	if (report_kept && last > 0)
	{
		if (run->kept_checkpoint > 0)
			ereport(NOTICE,
					(errmsg("model \"%s\" keeps the weights of step %lld, in epoch %d of %d (the best validated)",
							run->row.name, (long long) run->best_step, run->kept_epoch, last)));
		else
			ereport(NOTICE,
					(errmsg("model \"%s\" keeps the weights of epoch %d of %d (%s)", run->row.name,
							run->kept_epoch, last,
							run->keep == TFM_KEEP_BEST && run->best_epoch > 0 ? "the best validated" : "the last")));
	}
	if (last > 0)
		tfm_history_mark_kept(run->row.id, run->started, run->kept_epoch, run->kept_checkpoint, why);
	if (run->stop && !run->nonfinite)
		ereport(NOTICE,
				(errmsg("training of model \"%s\" stopped after %lld steps (%s)", run->row.name,
						(long long) run->tr.step,
						run->early_stop ? "early stopping: no better validation in patience evaluations" :
						run->max_steps > 0 && run->tr.step >= run->max_steps ? "max_steps" : "time_limit")));
}

/* after the last save: the optimizer goes, the model back to the cache with its own dropout */
void
tfm_run_end(TrainRun *run)
{
	tfm_trainer_free(&run->tr);
	tfm_guard_release(run->tr_guard);
	tfm_model_trim(run->m);
	run->m->cfg.dropout = run->row.cfg.dropout;
	run->m->cfg.attn_dropout = run->row.cfg.attn_dropout;
	tfm_cache_put(&run->row, run->m);
	tfm_guard_release(run->m_guard);
}

/* take the model out of the cache for training (train privilege) */
void
tfm_run_take_model(TrainRun *run, const char *name)
{
	MemoryContext old = MemoryContextSwitchTo(run->cxt);

	run->m = tfm_cache_take(name, &run->row);
	run->m_guard = tfm_guard_model(run->m);
	MemoryContextSwitchTo(old);
}
