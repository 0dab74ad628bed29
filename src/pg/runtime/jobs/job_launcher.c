/*
 * job_launcher.c — the launcher of tfm's background job workers (one
 * background worker, connected to no database, registered by job_slots.c).
 *
 * Every tfm.job_naptime it lists the databases and starts job workers
 * (job_worker.c; dynamic background workers) into free slots, at most
 * tfm.job_workers: one in each database not known to be without active
 * jobs, and one more in a database whose workers are all busy (several
 * workers split a job's queue through FOR UPDATE SKIP LOCKED: a parallel
 * backfill).  A worker that left because its database has no tfm or no
 * active job makes the launcher leave that database be for RECHECK, or
 * until a job is created or resumed somewhere.  When every slot is taken
 * and a database waits, the worker idle longest (at least IDLE_YIELD
 * naptimes) is asked to leave.
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
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/pg_compat.h"
#include "runtime/jobs/job_launcher.h"
#include "runtime/jobs/job_slots.h"
#include "runtime/runtime.h"

#define RECHECK			(30 * 1000) /* ms: a database without active jobs, looked at again */
#define IDLE_YIELD		10		/* naptimes idle before giving the slot to a waiting database */

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
	for (int i = 0; i < tfm_job_shared->nslots; i++)
	{
		JobSlot    *s = &tfm_job_shared->slots[i];
		pid_t		pid;
		LeftReason	left;
		Oid			db;
		bool		stale;

		if (!s->in_use)
			continue;
		if (handles[i] != NULL ? GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED
			: s->pid != 0)
			continue;			/* running (one without a handle: a dead launcher's) */
		SpinLockAcquire(&tfm_job_shared->mutex);
		left = s->left;
		db = s->dboid;
		/* a job became active after it started: what it found is out of date */
		stale = s->generation != tfm_job_shared->generation;
		memset(s, 0, sizeof(*s));
		SpinLockRelease(&tfm_job_shared->mutex);
		if (handles[i] != NULL)
			pfree(handles[i]);
		handles[i] = NULL;
		if ((left == LEFT_NO_JOBS || left == LEFT_NONE) && !stale)
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
	JobSlot    *s = &tfm_job_shared->slots[slotno];
	MemoryContext old;
	bool		ok;

	SpinLockAcquire(&tfm_job_shared->mutex);
	memset(s, 0, sizeof(*s));
	s->in_use = true;
	s->dboid = db;
	s->generation = tfm_job_shared->generation;
	SpinLockRelease(&tfm_job_shared->mutex);
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
		SpinLockAcquire(&tfm_job_shared->mutex);
		s->in_use = false;
		SpinLockRelease(&tfm_job_shared->mutex);
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

	SpinLockAcquire(&tfm_job_shared->mutex);
	for (int i = 0; i < MAX_BLOCKED; i++)
		b |= tfm_job_shared->blocked[i].db == db && tfm_job_shared->blocked[i].until > now;
	SpinLockRelease(&tfm_job_shared->mutex);
	return b;
}

/* ask the worker idle longest (at least IDLE_YIELD naptimes) to leave */
static void
ask_idle_to_leave(TimestampTz now)
{
	int			best = -1,
				procno = -1;
	TimestampTz limit = TimestampTzPlusMilliseconds(now, -(int64) IDLE_YIELD * tfm_job_naptime);

	SpinLockAcquire(&tfm_job_shared->mutex);
	for (int i = 0; i < tfm_job_shared->nslots; i++)
	{
		JobSlot    *s = &tfm_job_shared->slots[i];

		if (s->in_use && s->pid != 0 && !s->running && !s->leave && s->idle_since < limit &&
			(best < 0 || s->idle_since < tfm_job_shared->slots[best].idle_since))
			best = i;
	}
	if (best >= 0)
	{
		tfm_job_shared->slots[best].leave = true;
		procno = tfm_job_shared->slots[best].pgprocno;
	}
	SpinLockRelease(&tfm_job_shared->mutex);
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
		SpinLockAcquire(&tfm_job_shared->mutex);
		for (int i = 0; i < tfm_job_shared->nslots; i++)
		{
			JobSlot    *s = &tfm_job_shared->slots[i];

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
		SpinLockRelease(&tfm_job_shared->mutex);
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

	handles = MemoryContextAllocZero(TopMemoryContext, sizeof(BackgroundWorkerHandle *) * tfm_job_shared->nslots);
	memset(&hc, 0, sizeof(hc));
	hc.keysize = sizeof(Oid);
	hc.entrysize = sizeof(DbNote);
	notes = hash_create("tfm job launcher databases", 64, &hc, HASH_ELEM | HASH_BLOBS);
	cxt = AllocSetContextCreate(TopMemoryContext, "tfm job launcher", ALLOCSET_DEFAULT_SIZES);

	SpinLockAcquire(&tfm_job_shared->mutex);
	tfm_job_shared->launcher_pgprocno = MyProcNumber;
	seen_generation = tfm_job_shared->generation;
	/* the workers of a launcher that died: asked to stop, their slots freed when they have */
	for (int i = 0; i < tfm_job_shared->nslots; i++)
		if (tfm_job_shared->slots[i].in_use)
		{
			tfm_job_shared->slots[i].leave = true;
			if (tfm_job_shared->slots[i].pid != 0)
				kill(tfm_job_shared->slots[i].pid, SIGTERM);
		}
	SpinLockRelease(&tfm_job_shared->mutex);

	while (!ShutdownRequestPending)
	{
		uint32		gen;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		SpinLockAcquire(&tfm_job_shared->mutex);
		gen = tfm_job_shared->generation;
		SpinLockRelease(&tfm_job_shared->mutex);
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
	SpinLockAcquire(&tfm_job_shared->mutex);
	tfm_job_shared->launcher_pgprocno = -1;
	SpinLockRelease(&tfm_job_shared->mutex);
	proc_exit(0);
}

