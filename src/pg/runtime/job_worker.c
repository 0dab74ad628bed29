/*
 * job_worker.c — tfm's background job workers, when shared_preload_libraries
 * names tfm and tfm.job_workers > 0.
 *
 * The launcher (one background worker, connected to no database) lists the
 * databases every tfm.job_naptime and starts job workers (dynamic
 * background workers) in slots of shared memory, at most tfm.job_workers:
 * one in each database not known to be without active jobs, and one more
 * in a database whose workers are all busy (several workers split a job's
 * queue through FOR UPDATE SKIP LOCKED: a parallel backfill).  When every
 * slot is taken and a database waits, a worker idle for ten naptimes is
 * asked to leave its database.
 *
 * A worker connects to its database and loops: each active job runs for up
 * to WORKER_BATCHES batches through the run loop of CALL tfm_job_run (a
 * TfmJobRunner, one transaction per batch), as the job's owner in a
 * security-restricted context; when no job had work it sleeps
 * tfm.job_naptime on its latch.  An ERROR in a job's run is logged, its
 * message written to the job's last_error, and the job is tried again
 * after a pause that doubles up to MAX_BACKOFF.  A worker leaves when its
 * database has no tfm or no active job (the launcher then looks again after
 * RECHECK, or at once when a job is created or resumed there), when it is
 * a second idle worker in its database, or when asked.  SIGTERM ends a
 * worker (the batch in flight rolls back), SIGHUP reloads the settings,
 * a cancel (pg_cancel_backend) ends the run in progress like an ERROR.
 *
 * DROP DATABASE, ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE
 * need their database free of sessions: a ProcessUtility hook ends the
 * workers there first and keeps the launcher out of it for BLOCK_TIME.
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "runtime/job_worker.h"
#include "storage/job_list.h"

#define WORKER_BATCHES	16		/* batches of one job before the next job's turn */
#define MAX_BACKOFF		(300 * 1000)	/* ms: the longest pause after a job's errors */
#define RECHECK			(30 * 1000) /* ms: a database without active jobs, looked at again */
#define BLOCK_TIME		(10 * 1000) /* ms: the launcher stays out of a database being dropped */
#define IDLE_YIELD		10		/* naptimes idle before giving the slot to a waiting database */
#define MAX_BLOCKED		8

/* why a worker left (for the launcher) */
typedef enum
{
	LEFT_NONE = 0,
	LEFT_NO_JOBS,				/* no tfm or no active job: look again after RECHECK */
	LEFT_EXTRA,					/* a second idle worker */
	LEFT_ASKED					/* the launcher or a DROP DATABASE asked */
} LeftReason;

typedef struct JobSlot
{
	bool		in_use;			/* taken by the launcher until the worker has stopped */
	Oid			dboid;
	pid_t		pid;			/* 0 until started and after it stopped */
	int			pgprocno;		/* its latch */
	bool		running;		/* in a job's run (else idle) */
	bool		busy;			/* its last round left work */
	bool		leave;			/* asked to leave */
	LeftReason	left;
	char		job[NAMEDATALEN * 2];	/* the job it runs or last ran */
	int64		batches;
	int64		rows;
	TimestampTz since;			/* this run's start, or idle since */
} JobSlot;

typedef struct JobShared
{
	slock_t		mutex;
	int			launcher_pgprocno;	/* -1 while no launcher */
	uint32		generation;		/* bumped when a job becomes active */
	struct
	{
		Oid			db;
		TimestampTz until;
	}			blocked[MAX_BLOCKED];
	int			nslots;
	JobSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} JobShared;

static JobShared *shared = NULL;
static TfmJobRunner runner = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;
static ProcessUtility_hook_type prev_utility = NULL;
static bool wake_pending = false;
static bool wake_registered = false;

static Size
shared_size(void)
{
	return add_size(offsetof(JobShared, slots), mul_size(sizeof(JobSlot), tfm_job_workers));
}

static void
shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(shared_size());
}

static void
shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("tfm job workers", shared_size(), &found);
	if (!found)
	{
		memset(shared, 0, shared_size());
		SpinLockInit(&shared->mutex);
		shared->launcher_pgprocno = -1;
		shared->nslots = tfm_job_workers;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
wake_launcher(void)
{
	int			procno;

	SpinLockAcquire(&shared->mutex);
	shared->generation++;
	procno = shared->launcher_pgprocno;
	SpinLockRelease(&shared->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

static void
wake_at_commit(XactEvent event, void *arg)
{
	(void) arg;
	if (event == XACT_EVENT_COMMIT && wake_pending && shared != NULL)
		wake_launcher();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_pending = false;
}

void
tfm_job_workers_wake_at_commit(void)
{
	if (shared == NULL)
		return;
	if (!wake_registered)
	{
		RegisterXactCallback(wake_at_commit, NULL);
		wake_registered = true;
	}
	wake_pending = true;
}

/* ---- the database a DDL statement needs free of sessions ------------------ */

static Oid
database_needed_free(Node *stmt)
{
	const char *name = NULL;

	if (IsA(stmt, DropdbStmt))
		name = ((DropdbStmt *) stmt)->dbname;
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		name = ((RenameStmt *) stmt)->subname;
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *d = lfirst_node(DefElem, lc);

			if (strcmp(d->defname, "template") == 0 && d->arg != NULL)
				name = defGetString(d);
		}
	}
	return name ? get_database_oid(name, true) : InvalidOid;
}

/* end the workers in db and keep the launcher out of it for BLOCK_TIME */
static void
leave_database(Oid db)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), BLOCK_TIME);
	int			oldest = 0;

	SpinLockAcquire(&shared->mutex);
	for (int i = 1; i < MAX_BLOCKED; i++)
		if (shared->blocked[i].until < shared->blocked[oldest].until)
			oldest = i;
	shared->blocked[oldest].db = db;
	shared->blocked[oldest].until = until;
	for (int i = 0; i < shared->nslots; i++)
	{
		JobSlot    *s = &shared->slots[i];

		if (s->in_use && s->dboid == db)
		{
			s->leave = true;
			if (s->pid != 0)
				kill(s->pid, SIGTERM);
		}
	}
	SpinLockRelease(&shared->mutex);
}

static void
utility_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			 ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *queryEnv,
			 DestReceiver *dest, QueryCompletion *qc)
{
	Oid			db = database_needed_free(pstmt->utilityStmt);

	if (OidIsValid(db) && shared != NULL)
	{
		leave_database(db);
		/* CountOtherDBBackends waits up to 5 s for them; most leave in milliseconds */
	}
	if (prev_utility)
		prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
}

/* ---- registration --------------------------------------------------------- */

void
tfm_job_workers_init(TfmJobRunner run)
{
	BackgroundWorker bgw;

	runner = run;
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = utility_hook;

	if (tfm_job_workers + 1 > max_worker_processes)
		ereport(LOG,
				(errmsg("tfm.job_workers is %d but max_worker_processes is %d", tfm_job_workers,
						max_worker_processes),
				 errhint("tfm's launcher and its job workers take %d background worker slots; "
						 "raise max_worker_processes.", tfm_job_workers + 1)));
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 10;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "tfm");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "tfm_job_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "tfm job launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "tfm job launcher");
	RegisterBackgroundWorker(&bgw);
}

/* ---- the view ------------------------------------------------------------- */

int
tfm_job_workers_rows(Datum (*rows)[7], bool (*nulls)[7], int max)
{
	int			n = 0;

	if (shared == NULL)
		return 0;
	for (int i = 0; i < shared->nslots && n < max; i++)
	{
		JobSlot		s;

		SpinLockAcquire(&shared->mutex);
		s = shared->slots[i];
		SpinLockRelease(&shared->mutex);
		if (!s.in_use)
			continue;
		memset(nulls[n], false, sizeof(nulls[n]));
		rows[n][0] = Int32GetDatum((int32) s.pid);
		nulls[n][0] = s.pid == 0;
		rows[n][1] = ObjectIdGetDatum(s.dboid);
		rows[n][2] = CStringGetTextDatum(s.job);
		nulls[n][2] = s.job[0] == '\0';
		rows[n][3] = CStringGetTextDatum(s.pid == 0 ? "starting" : s.running ? "running" : "idle");
		rows[n][4] = Int64GetDatum(s.batches);
		rows[n][5] = Int64GetDatum(s.rows);
		rows[n][6] = TimestampTzGetDatum(s.since);
		nulls[n][6] = s.since == 0;
		n++;
	}
	return n;
}

/* ---- the worker ----------------------------------------------------------- */

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
	SpinLockAcquire(&shared->mutex);
	my_slot->pid = 0;
	my_slot->running = false;
	SpinLockRelease(&shared->mutex);
}

static void
worker_leave(LeftReason why)
{
	SpinLockAcquire(&shared->mutex);
	my_slot->left = why;
	SpinLockRelease(&shared->mutex);
	proc_exit(0);
}

static void
set_running(const char *job, bool running)
{
	SpinLockAcquire(&shared->mutex);
	my_slot->running = running;
	if (job != NULL)
		strlcpy(my_slot->job, job, sizeof(my_slot->job));
	my_slot->since = GetCurrentTimestamp();
	SpinLockRelease(&shared->mutex);
}

/* this database's active jobs and the schema of tfm's functions; -1 without tfm */
static int
list_jobs(MemoryContext cxt, TfmJobRef **jobs, char **schema)
{
	int			n = -1;

	StartTransactionCommand();
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

	GetUserIdAndSecContext(&uid, &sec);
	set_running(j->name, true);
	pgstat_report_activity(STATE_RUNNING, psprintf("tfm job worker: %s", j->name));
	PG_TRY();
	{
		StartTransactionCommand();
		MemoryContextSwitchTo(cxt);
		/* the job's owner, never the worker's superuser: as SECURITY DEFINER code runs */
		SetUserIdAndSecContext(j->owner, sec | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		ctx.callback = job_context;
		ctx.arg = j->name;
		ctx.previous = error_context_stack;
		error_context_stack = &ctx;
		runner(j->name, schema, WORKER_BATCHES, check_stale, res);
		error_context_stack = ctx.previous;
		SetUserIdAndSecContext(uid, sec);
		CommitTransactionCommand();
		MemoryContextSwitchTo(cxt);
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
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
	set_running(NULL, false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

/* another worker in my database with a lower slot number */
static bool
another_worker_here(void)
{
	bool		found = false;

	SpinLockAcquire(&shared->mutex);
	for (JobSlot *s = shared->slots; s < my_slot; s++)
		found |= s->in_use && s->dboid == my_slot->dboid && !s->leave;
	SpinLockRelease(&shared->mutex);
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
			SpinLockAcquire(&shared->mutex);
			my_slot->batches += res.batches;
			my_slot->rows += res.done + res.failed + res.deleted;
			SpinLockRelease(&shared->mutex);
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
	my_slot = &shared->slots[slotno];
	BackgroundWorkerInitializeConnectionByOid(my_slot->dboid, InvalidOid, 0);
	SpinLockAcquire(&shared->mutex);
	my_slot->pid = MyProcPid;
	my_slot->pgprocno = MyProc->pgprocno;
	my_slot->since = GetCurrentTimestamp();
	SpinLockRelease(&shared->mutex);
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
		SpinLockAcquire(&shared->mutex);
		my_slot->busy = more;
		SpinLockRelease(&shared->mutex);
		if (worked)
			continue;
		if (another_worker_here())
			worker_leave(LEFT_EXTRA);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 tfm_job_naptime, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ---- the launcher --------------------------------------------------------- */

/* a database without active jobs, and until when the launcher leaves it be */
typedef struct DbNote
{
	Oid			db;				/* hash key */
	TimestampTz until;
} DbNote;

static BackgroundWorkerHandle **handles;

/* the databases a worker may connect to */
static List *
list_databases(void)
{
	List	   *dbs = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database d = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!d->datallowconn || d->datistemplate || database_is_invalid_form(d))
			continue;
		old = MemoryContextSwitchTo(cxt);
		dbs = lappend_oid(dbs, d->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return dbs;
}

/* slots whose worker stopped become free; a worker that found no jobs notes its database */
static void
reap(HTAB *notes, TimestampTz now)
{
	for (int i = 0; i < shared->nslots; i++)
	{
		JobSlot    *s = &shared->slots[i];
		pid_t		pid;
		LeftReason	left;
		Oid			db;

		if (!s->in_use)
			continue;
		if (handles[i] != NULL ? GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED
			: s->pid != 0)
			continue;			/* running (one without a handle: a dead launcher's) */
		SpinLockAcquire(&shared->mutex);
		left = s->left;
		db = s->dboid;
		memset(s, 0, sizeof(*s));
		SpinLockRelease(&shared->mutex);
		if (handles[i] != NULL)
			pfree(handles[i]);
		handles[i] = NULL;
		if (left == LEFT_NO_JOBS || left == LEFT_NONE)
		{
			/* LEFT_NONE: it failed to start or died; do not retry at once either */
			DbNote	   *note = hash_search(notes, &db, HASH_ENTER, NULL);

			note->until = TimestampTzPlusMilliseconds(now, left == LEFT_NO_JOBS ? RECHECK : 10 * tfm_job_naptime);
		}
	}
}

static bool
start_worker(int slotno, Oid db)
{
	BackgroundWorker bgw;
	JobSlot    *s = &shared->slots[slotno];
	MemoryContext old;
	bool		ok;

	SpinLockAcquire(&shared->mutex);
	memset(s, 0, sizeof(*s));
	s->in_use = true;
	s->dboid = db;
	SpinLockRelease(&shared->mutex);
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "tfm");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "tfm_job_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "tfm job worker %d", slotno);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "tfm job worker");
	bgw.bgw_main_arg = Int32GetDatum(slotno);
	bgw.bgw_notify_pid = MyProcPid;
	old = MemoryContextSwitchTo(TopMemoryContext);	/* the handle outlives the round */
	ok = RegisterDynamicBackgroundWorker(&bgw, &handles[slotno]);
	MemoryContextSwitchTo(old);
	if (!ok)
	{
		SpinLockAcquire(&shared->mutex);
		s->in_use = false;
		SpinLockRelease(&shared->mutex);
		handles[slotno] = NULL;
		ereport(WARNING,
				(errmsg("tfm could not start a job worker: no free background worker slot"),
				 errhint("Raise max_worker_processes (tfm takes tfm.job_workers + 1).")));
		return false;
	}
	return true;
}

static bool
blocked(Oid db, TimestampTz now)
{
	bool		b = false;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < MAX_BLOCKED; i++)
		b |= shared->blocked[i].db == db && shared->blocked[i].until > now;
	SpinLockRelease(&shared->mutex);
	return b;
}

/* ask the worker idle longest (at least IDLE_YIELD naptimes) to leave */
static void
ask_idle_to_leave(TimestampTz now)
{
	int			best = -1,
				procno = -1;
	TimestampTz limit = TimestampTzPlusMilliseconds(now, -(int64) IDLE_YIELD * tfm_job_naptime);

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nslots; i++)
	{
		JobSlot    *s = &shared->slots[i];

		if (s->in_use && s->pid != 0 && !s->running && !s->leave && s->since < limit &&
			(best < 0 || s->since < shared->slots[best].since))
			best = i;
	}
	if (best >= 0)
	{
		shared->slots[best].leave = true;
		procno = shared->slots[best].pgprocno;
	}
	SpinLockRelease(&shared->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

static void
launcher_round(HTAB *notes, int *next)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *dbs;
	int			ndb;

	reap(notes, now);
	if (RecoveryInProgress())
		return;
	dbs = list_databases();
	ndb = list_length(dbs);
	for (int k = 0; k < ndb; k++)
	{
		int			at = (*next + k) % ndb;
		Oid			db = list_nth_oid(dbs, at);
		DbNote	   *note = hash_search(notes, &db, HASH_FIND, NULL);
		int			nw = 0,
					nbusy = 0,
					free_slot = -1;

		if (blocked(db, now) || (note != NULL && note->until > now))
			continue;
		SpinLockAcquire(&shared->mutex);
		for (int i = 0; i < shared->nslots; i++)
		{
			JobSlot    *s = &shared->slots[i];

			if (!s->in_use)
			{
				if (free_slot < 0)
					free_slot = i;
				continue;
			}
			if (s->dboid != db)
				continue;
			nw++;
			nbusy += s->busy && !s->leave;
		}
		SpinLockRelease(&shared->mutex);
		if (nw > 0 && nbusy < nw)
			continue;			/* covered, and not all busy */
		if (free_slot < 0)
		{
			if (nw == 0)
				ask_idle_to_leave(now);
			continue;
		}
		if (start_worker(free_slot, db))
			*next = (at + 1) % ndb;
	}
	list_free(dbs);
}

void
tfm_job_launcher_main(Datum arg)
{
	HASHCTL		hc;
	HTAB	   *notes;
	MemoryContext cxt;
	uint32		seen_generation;
	int			next = 0;

	(void) arg;
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("tfm job launcher");

	handles = MemoryContextAllocZero(TopMemoryContext, sizeof(BackgroundWorkerHandle *) * shared->nslots);
	memset(&hc, 0, sizeof(hc));
	hc.keysize = sizeof(Oid);
	hc.entrysize = sizeof(DbNote);
	notes = hash_create("tfm job launcher databases", 64, &hc, HASH_ELEM | HASH_BLOBS);
	cxt = AllocSetContextCreate(TopMemoryContext, "tfm job launcher", ALLOCSET_DEFAULT_SIZES);

	SpinLockAcquire(&shared->mutex);
	shared->launcher_pgprocno = MyProc->pgprocno;
	seen_generation = shared->generation;
	/* the workers of a launcher that died: asked to stop, their slots freed when they have */
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].in_use)
		{
			shared->slots[i].leave = true;
			if (shared->slots[i].pid != 0)
				kill(shared->slots[i].pid, SIGTERM);
		}
	SpinLockRelease(&shared->mutex);

	while (!ShutdownRequestPending)
	{
		uint32		gen;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		SpinLockAcquire(&shared->mutex);
		gen = shared->generation;
		SpinLockRelease(&shared->mutex);
		if (gen != seen_generation)
		{
			/* a job became active somewhere: look at every database again */
			HASH_SEQ_STATUS hs;
			DbNote	   *note;

			seen_generation = gen;
			hash_seq_init(&hs, notes);
			while ((note = hash_seq_search(&hs)) != NULL)
				(void) hash_search(notes, &note->db, HASH_REMOVE, NULL);
		}
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(cxt);
		launcher_round(notes, &next);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 tfm_job_naptime, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	SpinLockAcquire(&shared->mutex);
	shared->launcher_pgprocno = -1;
	SpinLockRelease(&shared->mutex);
	proc_exit(0);
}
