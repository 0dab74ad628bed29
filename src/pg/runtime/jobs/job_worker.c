/*
 * job_worker.c — a tfm background job worker (started by the launcher,
 * job_launcher.c, into a slot of job_slots.h).
 *
 * It connects to its slot's database and loops: each active job runs for
 * up to WORKER_BATCHES batches through the run loop of CALL tfm_job_run
 * (job_run.c, one transaction per batch), as the job's owner in a
 * security-restricted context; when no job had work it sleeps
 * tfm.job_naptime on its latch.  An ERROR in a job's run is logged, its
 * message written to the job's last_error, and the job is tried again
 * after a pause that doubles up to MAX_BACKOFF.  It leaves when its
 * database has no tfm or no active job, when it is a second idle worker in
 * its database, or when asked (the launcher, a DROP DATABASE).  SIGTERM
 * ends it (the batch in flight rolls back), SIGHUP reloads the settings, a
 * cancel (pg_cancel_backend) ends the run in progress like an ERROR.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/pg_compat.h"
#include "runtime/jobs/job_run.h"
#include "runtime/jobs/job_slots.h"
#include "runtime/jobs/job_worker.h"
#include "runtime/runtime.h"
#include "storage/jobs/job_list.h"

#define WORKER_BATCHES	16		/* batches of one job before the next job's turn */
#define MAX_BACKOFF		(300 * 1000)	/* ms: the longest pause after a job's errors */

/* what a worker remembers of a job: its errors' pause, the version it last checked */
typedef struct JobMemo
{
	int32		id;				/* hash key */
	int			fails;
	TimestampTz retry_at;
	int64		checked_version;
} JobMemo;

static JobSlot *my_slot = NULL;

static void
job_context(void *arg)
{
	errcontext("tfm job worker running job \"%s\"", (const char *) arg);
}

static void
worker_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	SpinLockAcquire(&tfm_job_shared->mutex);
	my_slot->pid = 0;
	my_slot->running = false;
	SpinLockRelease(&tfm_job_shared->mutex);
}

static void
worker_leave(LeftReason why)
{
	SpinLockAcquire(&tfm_job_shared->mutex);
	my_slot->left = why;
	SpinLockRelease(&tfm_job_shared->mutex);
	proc_exit(0);
}

/*
 * The slot while a run starts (job: its name) and after it ended (job:
 * NULL; worked: it committed batches).  An idle worker's runs come and go
 * every naptime: the slot keeps the job that last had work, and the time
 * since which the worker had none.
 */
static void
set_running(const char *job, bool worked)
{
	static char last[NAMEDATALEN * 2];
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&tfm_job_shared->mutex);
	my_slot->running = job != NULL;
	if (job != NULL)
	{
		strlcpy(last, my_slot->job, sizeof(last));
		strlcpy(my_slot->job, job, sizeof(my_slot->job));
		my_slot->run_since = now;
	}
	else if (worked)
		my_slot->idle_since = now;
	else
		strlcpy(my_slot->job, last, sizeof(my_slot->job));
	SpinLockRelease(&tfm_job_shared->mutex);
}

/*
 * The worker's own statements resolve names in pg_catalog only, whatever
 * a database's or a role's default search_path says: set for the session
 * at the start of every transaction the worker begins (a job's code runs
 * as its owner with the job's search_path, and every setting it makes is
 * rolled back when its section ends: job_run.c, tfm_job_owner_end).
 */
static void
pin_worker_settings(void)
{
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
}

/* this database's active jobs and the schema of tfm's functions; -1 without tfm */
static int
list_jobs(MemoryContext cxt, TfmJobRef **jobs, char **schema)
{
	int			n = -1;

	StartTransactionCommand();
	pin_worker_settings();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	*schema = tfm_job_ext_schema();
	if (*schema != NULL)
	{
		*schema = MemoryContextStrdup(cxt, *schema);
		n = tfm_job_list_active(cxt, jobs);
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	return n;
}

static void
record_error(const TfmJobRef *j, const ErrorData *ed)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		tfm_job_record_run_error(j->id, psprintf("%s (SQLSTATE %s)", ed->message,
												 unpack_sql_state(ed->sqlerrcode)));
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
}

/*
 * One run of job j as its owner (at most WORKER_BATCHES batches).  False
 * after an ERROR: logged, recorded in the job's last_error, the transaction
 * rolled back.
 */
static bool
run_job(const TfmJobRef *j, const char *schema, bool check_stale, TfmJobRunResult *res)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			uid;
	int			sec;
	volatile bool ok = true;
	ErrorContextCallback ctx;
	TimestampTz started;

	GetUserIdAndSecContext(&uid, &sec);
	started = GetCurrentTimestamp();
	set_running(j->name, true);
	pgstat_report_activity(STATE_RUNNING, psprintf("tfm job worker: %s", j->name));
	PG_TRY();
	{
		StartTransactionCommand();
		MemoryContextSwitchTo(cxt);
		pin_worker_settings();
		/* the job's owner, never the worker's superuser: as SECURITY DEFINER code runs */
		SetUserIdAndSecContext(j->owner, sec | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		ctx.callback = job_context;
		ctx.arg = j->name;
		ctx.previous = error_context_stack;
		error_context_stack = &ctx;
		tfm_job_run_batches(j->name, schema, WORKER_BATCHES, check_stale, tfm_job_batch_timeout, res);
		error_context_stack = ctx.previous;
		SetUserIdAndSecContext(uid, sec);
		CommitTransactionCommand();
		MemoryContextSwitchTo(cxt);
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		ed = CopyErrorData();
		if (ed->sqlerrcode == ERRCODE_QUERY_CANCELED && tfm_job_batch_timeout > 0 &&
			GetCurrentTimestamp() - started >= (int64) tfm_job_batch_timeout * 1000)
			ed->message = psprintf("a batch ran longer than tfm.job_batch_timeout (%d ms): %s",
								   tfm_job_batch_timeout, ed->message);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		SetUserIdAndSecContext(uid, sec);
		MemoryContextSwitchTo(cxt);
		/* a job dropped since the list was read: nothing to record */
		if (ed->sqlerrcode != ERRCODE_UNDEFINED_OBJECT)
			record_error(j, ed);
		ok = false;
	}
	PG_END_TRY();
	/* session-level advisory locks the job's code took are not the next job's */
	LockReleaseSession(USER_LOCKMETHOD);
	set_running(NULL, ok && res->batches > 0);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

/* another worker in my database with a lower slot number */
static bool
another_worker_here(void)
{
	bool		found = false;

	SpinLockAcquire(&tfm_job_shared->mutex);
	for (JobSlot *s = tfm_job_shared->slots; s < my_slot; s++)
		found |= s->in_use && s->dboid == my_slot->dboid && !s->leave;
	SpinLockRelease(&tfm_job_shared->mutex);
	return found;
}

/* one round over the active jobs; *more when a run stopped with work left */
static bool
worker_round(MemoryContext cxt, HTAB *memos, bool *more)
{
	TfmJobRef  *jobs = NULL;
	char	   *schema = NULL;
	int			n;
	bool		worked = false;

	*more = false;
	n = list_jobs(cxt, &jobs, &schema);
	if (n <= 0)
		worker_leave(LEFT_NO_JOBS);
	for (int i = 0; i < n; i++)
	{
		TfmJobRef  *j = &jobs[i];
		bool		found;
		JobMemo    *m = hash_search(memos, &j->id, HASH_ENTER, &found);
		TfmJobRunResult res;
		TimestampTz now = GetCurrentTimestamp();

		if (!found)
		{
			m->fails = 0;
			m->retry_at = 0;
			m->checked_version = -2;
		}
		if (m->retry_at > now)
			continue;
		if (my_slot->leave)
			worker_leave(LEFT_ASKED);
		if (run_job(j, schema, m->checked_version != j->model_version, &res))
		{
			m->fails = 0;
			m->retry_at = 0;
			m->checked_version = j->model_version;
			worked |= res.batches > 0;
			*more |= res.more;
			SpinLockAcquire(&tfm_job_shared->mutex);
			my_slot->batches += res.batches;
			my_slot->rows += res.done + res.failed + res.deleted;
			SpinLockRelease(&tfm_job_shared->mutex);
		}
		else
		{
			int64		pause = (int64) tfm_job_naptime << Min(m->fails, 20);

			m->fails++;
			m->retry_at = TimestampTzPlusMilliseconds(now, Min(pause, MAX_BACKOFF));
		}
		CHECK_FOR_INTERRUPTS();
	}
	return worked;
}

void
tfm_job_worker_main(Datum arg)
{
	int			slotno = DatumGetInt32(arg);
	MemoryContext loop_cxt;
	HASHCTL		hc;
	HTAB	   *memos;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	my_slot = &tfm_job_shared->slots[slotno];
	BackgroundWorkerInitializeConnectionByOid(my_slot->dboid, InvalidOid, 0);
	SpinLockAcquire(&tfm_job_shared->mutex);
	my_slot->pid = MyProcPid;
	my_slot->pgprocno = MyProcNumber;
	my_slot->idle_since = GetCurrentTimestamp();
	SpinLockRelease(&tfm_job_shared->mutex);
	before_shmem_exit(worker_exit, (Datum) 0);
	pgstat_report_appname("tfm job worker");

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "tfm job worker", ALLOCSET_DEFAULT_SIZES);
	memset(&hc, 0, sizeof(hc));
	hc.keysize = sizeof(int32);
	hc.entrysize = sizeof(JobMemo);
	memos = hash_create("tfm job worker jobs", 64, &hc, HASH_ELEM | HASH_BLOBS);

	for (;;)
	{
		volatile bool worked = false;
		bool		more = false;

		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		PG_TRY();
		{
			CHECK_FOR_INTERRUPTS();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			if (my_slot->leave)
				worker_leave(LEFT_ASKED);
			worked = worker_round(loop_cxt, memos, &more);
		}
		PG_CATCH();
		{
			/* an error outside a job's run (a cancel while idle, reading the job list) */
			MemoryContextSwitchTo(loop_cxt);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			worked = false;
		}
		PG_END_TRY();
		SpinLockAcquire(&tfm_job_shared->mutex);
		my_slot->busy = more;
		SpinLockRelease(&tfm_job_shared->mutex);
		if (worked)
			continue;
		if (another_worker_here())
			worker_leave(LEFT_EXTRA);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 tfm_job_naptime, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

