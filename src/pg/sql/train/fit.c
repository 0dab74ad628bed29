/*
 * fit.c — CALL tfm_fit(model, query, <tfm_train's options>, checkpoint_every,
 * resume, keep): training that survives a cancel.
 *
 * A procedure, called outside a transaction block, so it may commit as it
 * goes (SPI_connect_ext(SPI_OPT_NONATOMIC) and SPI_commit, which in
 * PostgreSQL 15 starts the next transaction itself).  It commits a
 * checkpoint (runtime/train/checkpoint.c) at the end of every epoch and at the first
 * chunk boundary (tfm.train_chunk_rows rows, 8192) after checkpoint_every
 * has passed since the last one.  A cancel, statement_timeout, a lost
 * connection or a crash then loses only the work since the last checkpoint,
 * and resume => true goes on from it.
 *
 * Across a commit: the run's state lives in a memory context under the
 * CALL's portal context (which outlives the commits; an ERROR deletes it,
 * and with it the model and optimizer, through their guards); the SPI
 * cursor over the query does not survive, so it is opened again and the
 * rows already consumed are skipped (the query must return its rows in the
 * same order each time: add an ORDER BY).  After a commit no snapshot is
 * active: one is pushed for the next transaction's reads and popped before
 * the next commit.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "runtime/train/checkpoint.h"
#include "runtime/train/train_options.h"
#include "runtime/train/train_report.h"
#include "runtime/train/train_run.h"
#include "sql/args.h"
#include "runtime/runtime.h"

/* tfm_fit's arguments after tfm_train's */
#define A_EVERY   A_TRAIN_NARGS
#define A_RESUME  (A_TRAIN_NARGS + 1)
#define A_KEEP    (A_TRAIN_NARGS + 2)
#define A_PRECISION (A_TRAIN_NARGS + 3)
#define A_PATIENCE (A_TRAIN_NARGS + 4)
#define A_CHECKPOINT_ACTS (A_TRAIN_NARGS + 5)

typedef struct FitState
{
	int64		every_us;		/* checkpoint_every */
	TimestampTz last;			/* the last checkpoint (or the start) */
	bool		pushed;			/* a snapshot of ours is active */
} FitState;

static int64
interval_us(const Interval *iv)
{
	if (iv->month < 0 || iv->day < 0 || iv->month > 12 * 100 || iv->day > 36500)
		return -1;
	return iv->time + (int64) iv->day * USECS_PER_DAY +
		(int64) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
}

/* end this transaction and start the next, with a snapshot for its reads */
static void
commit(FitState *fs)
{
	if (fs->pushed)
		PopActiveSnapshot();
	fs->pushed = false;
	SPI_commit();
	PushActiveSnapshot(GetTransactionSnapshot());
	fs->pushed = true;
}

/*
 * Between chunks: a checkpoint if checkpoint_every has passed; at an
 * epoch's end (its weights and history row just saved): always.
 */
static void
fit_hook(TrainRun *run, bool epoch_end)
{
	FitState   *fs = run->hook_arg;
	int64		rows = run->rd.row_number;

	if (!epoch_end && GetCurrentTimestamp() - fs->last < fs->every_us)
		return;
	if (!epoch_end)
	{
		TrainEpoch	e;

		tfm_reader_close(&run->rd);
		tfm_run_figures(run, &e);
		run->checkpoints++;
		tfm_run_save(run, &e, run->checkpoints);
	}
	tfm_checkpoint_write(run, epoch_end);
	SPI_freeplan(run->rd.plan);
	run->rd.plan = NULL;
	commit(fs);
	fs->last = GetCurrentTimestamp();

	/* the query's plan and (mid-epoch) cursor again, at the next row */
	tfm_reader_init(&run->rd, &run->row, run->query);
	if (!epoch_end)
	{
		int64		val_rows = run->rd.val_rows,
					val_tokens = run->rd.val_tokens,
					skipped_null = run->rd.skipped_null,
					truncated = run->rd.truncated;

		tfm_reader_open_at(&run->rd, rows);
		run->rd.val_rows = val_rows;
		run->rd.val_tokens = val_tokens;
		run->rd.skipped_null = skipped_null;
		run->rd.truncated = truncated;
	}
}

/*
 * The arguments, checked before anything runs (they need no transaction):
 * the query (NULL: a resume's own), checkpoint_every, keep and the
 * precision; then the call must be a CALL outside a transaction block.
 */
static char *
fit_args(FunctionCallInfo fcinfo, bool resume, FitState *fs)
{
	CallContext *call = (CallContext *) fcinfo->context;
	char	   *query = NULL;

	if (!resume || !PG_ARGISNULL(A_QUERY))
		query = tfm_text_arg(fcinfo, A_QUERY, "query");
	fs->every_us = 10 * 60 * USECS_PER_SEC;
	if (!PG_ARGISNULL(A_EVERY))
	{
		fs->every_us = interval_us(PG_GETARG_INTERVAL_P(A_EVERY));
		if (fs->every_us <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("checkpoint_every must be positive and at most 100 years")));
	}
	if (!PG_ARGISNULL(A_KEEP))
		(void) tfm_keep_arg(fcinfo, A_KEEP);
	(void) tfm_train_precision_arg(fcinfo, A_PRECISION);
	(void) tfm_patience_arg(fcinfo, PG_NARGS() > A_PATIENCE ? A_PATIENCE : -1);
	if (call == NULL || !IsA(call, CallContext) || call->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("tfm_fit cannot run inside a transaction block"),
				 errdetail("tfm_fit commits a checkpoint as it goes."),
				 errhint("CALL tfm_fit outside BEGIN ... COMMIT and not from a function, "
						 "or use SELECT * FROM tfm_train(...), which runs in one transaction.")));
	return query;
}

/* the run from model's interrupted run (resume), or a fresh one */
static void
fit_begin(FunctionCallInfo fcinfo, TrainRun *run, const char *model, const char *query,
		  bool resume)
{
	tfm_train_opts o;

	if (resume)
	{
		/* compares the query and the starting role before running anything */
		tfm_checkpoint_resume(run, query);
		/* a resumed run keeps its precision: another one is an error, NULL takes it */
		if (PG_NARGS() > A_PRECISION && !PG_ARGISNULL(A_PRECISION) &&
			tfm_train_precision_arg(fcinfo, A_PRECISION) != run->tr.o.precision)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\"'s interrupted run trains at %s precision", model,
							tfm_precision_name(run->tr.o.precision)),
					 errhint("Resume with train_precision => NULL (or the run's own), or start afresh without resume.")));
		/* NULL keeps the run's checkpointing; either value trains the same weights */
		tfm_trainer_set_checkpointing(&run->tr,
									  tfm_checkpoint_activations_arg(fcinfo, A_CHECKPOINT_ACTS,
																	 run->tr.o.checkpoint_activations));
		ereport(NOTICE,
				(errmsg("resuming the run of model \"%s\" at epoch %d after %lld steps",
						model, run->epoch, (long long) run->tr.step)));
	}
	else
	{
		run->query = pstrdup(query);	/* in run_cxt, which outlives the commits */
		tfm_run_options(fcinfo, run, &o, A_KEEP, A_PRECISION, PG_NARGS() > A_PATIENCE ? A_PATIENCE : -1);
		o.checkpoint_activations = tfm_checkpoint_activations_arg(fcinfo, A_CHECKPOINT_ACTS, false);
		tfm_checkpoint_forget(&run->row);
		tfm_run_begin(run, &o);
	}
}

PG_FUNCTION_INFO_V1(tfm_fit);
Datum
tfm_fit(PG_FUNCTION_ARGS)
{
	char	   *model = tfm_text_arg(fcinfo, A_MODEL, "model");
	bool		resume = !PG_ARGISNULL(A_RESUME) && PG_GETARG_BOOL(A_RESUME);
	FitState	fs;
	char	   *query = fit_args(fcinfo, resume, &fs);
	MemoryContext run_cxt,
				old;
	TrainRun   *run;

	run_cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm_fit run", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(run_cxt);
	run = palloc0(sizeof(TrainRun));
	run->cxt = run_cxt;
	run->fn_name = "tfm_fit";
	tfm_backend_ready();
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect_ext failed");
	MemoryContextSwitchTo(run_cxt);
	fs.pushed = false;
	tfm_run_take_model(run, model);
	fit_begin(fcinfo, run, model, query, resume);
	run->hook = fit_hook;
	run->hook_arg = &fs;
	fs.last = GetCurrentTimestamp();
	tfm_run_loop(run);
	tfm_run_finish(run, true);
	tfm_checkpoint_delete(&run->row);
	if (fs.pushed)
		PopActiveSnapshot();
	SPI_finish();
	pgstat_report_activity(STATE_RUNNING, "tfm_fit: done");
	tfm_run_end(run);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(run_cxt);
	PG_RETURN_VOID();
}
