/*
 * job_slots.c — the shared memory of tfm's background job workers (a slot
 * per worker, job_slots.h), their registration from _PG_init (the
 * launcher, job_launcher.c; hooks for shared memory and utility
 * statements), waking the launcher when a job becomes active, and the
 * slots as rows of the view tfm.job_workers.
 *
 * DROP DATABASE, ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE
 * need their database free of sessions: a ProcessUtility hook ends the
 * workers there first and keeps the launcher out of it for BLOCK_TIME.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/pg_compat.h"
#include "runtime/jobs/job_slots.h"
#include "runtime/runtime.h"

JobShared  *tfm_job_shared = NULL;

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
	tfm_job_shared = ShmemInitStruct("tfm job workers", shared_size(), &found);
	if (!found)
	{
		memset(tfm_job_shared, 0, shared_size());
		SpinLockInit(&tfm_job_shared->mutex);
		tfm_job_shared->launcher_pgprocno = -1;
		tfm_job_shared->nslots = tfm_job_workers;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
wake_launcher(void)
{
	int			procno;

	SpinLockAcquire(&tfm_job_shared->mutex);
	tfm_job_shared->generation++;
	procno = tfm_job_shared->launcher_pgprocno;
	SpinLockRelease(&tfm_job_shared->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

static void
wake_at_commit(XactEvent event, void *arg)
{
	(void) arg;
	if (event == XACT_EVENT_COMMIT && wake_pending && tfm_job_shared != NULL)
		wake_launcher();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_pending = false;
}

void
tfm_job_workers_wake_at_commit(void)
{
	if (tfm_job_shared == NULL)
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

	SpinLockAcquire(&tfm_job_shared->mutex);
	for (int i = 1; i < MAX_BLOCKED; i++)
		if (tfm_job_shared->blocked[i].until < tfm_job_shared->blocked[oldest].until)
			oldest = i;
	tfm_job_shared->blocked[oldest].db = db;
	tfm_job_shared->blocked[oldest].until = until;
	for (int i = 0; i < tfm_job_shared->nslots; i++)
	{
		JobSlot    *s = &tfm_job_shared->slots[i];

		if (s->in_use && s->dboid == db)
		{
			s->leave = true;
			if (s->pid != 0)
				kill(s->pid, SIGTERM);
		}
	}
	SpinLockRelease(&tfm_job_shared->mutex);
}

static void
utility_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			 ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *queryEnv,
			 DestReceiver *dest, QueryCompletion *qc)
{
	Oid			db = database_needed_free(pstmt->utilityStmt);

	/* only for who may run the command (each needs the database's ownership) */
	if (OidIsValid(db) && tfm_job_shared != NULL && object_ownercheck(DatabaseRelationId, db, GetUserId()))
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
tfm_job_workers_init(void)
{
	BackgroundWorker bgw;

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

	if (tfm_job_shared == NULL)
		return 0;
	for (int i = 0; i < tfm_job_shared->nslots && n < max; i++)
	{
		JobSlot		s;

		SpinLockAcquire(&tfm_job_shared->mutex);
		s = tfm_job_shared->slots[i];
		SpinLockRelease(&tfm_job_shared->mutex);
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
		rows[n][6] = TimestampTzGetDatum(s.running ? s.run_since : s.idle_since);
		nulls[n][6] = s.pid == 0;
		n++;
	}
	return n;
}

