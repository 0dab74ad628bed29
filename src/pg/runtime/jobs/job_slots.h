/*
 * job_slots.h — tfm's background job workers as the rest of tfm sees them
 * (job_slots.c: shared memory, registration from _PG_init, the hooks that
 * wake the launcher, the rows of tfm.job_workers), and their shared state
 * between job_slots.c, job_launcher.c and job_worker.c: one slot per
 * worker, taken by the launcher and filled in by the worker.
 */
#ifndef TFM_PG_RUNTIME_JOB_SLOTS_H
#define TFM_PG_RUNTIME_JOB_SLOTS_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/spin.h"


#define BLOCK_TIME		(10 * 1000) /* ms: the launcher stays out of a database being dropped */
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
	uint32		generation;		/* JobShared's when the worker was started */
	char		job[NAMEDATALEN * 2];	/* the job it runs, or the last that had work */
	int64		batches;
	int64		rows;
	TimestampTz run_since;		/* the current run's start */
	TimestampTz idle_since;		/* its last batch (or its start) */
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

extern JobShared *tfm_job_shared;	/* NULL unless preloaded with tfm.job_workers > 0 */

/* _PG_init while preloading: shared memory, hooks and the launcher */
void		tfm_job_workers_init(void);
/* a job became active (created, resumed): wake the launcher at commit */
void		tfm_job_workers_wake_at_commit(void);
/* the slots' rows for tfm.job_workers: pid, database, job, state, batches, rows, since */
int			tfm_job_workers_rows(Datum (*rows)[7], bool (*nulls)[7], int max);

#endif							/* TFM_PG_RUNTIME_JOB_SLOTS_H */
