/*
 * job_worker.h — tfm's background job workers, present when
 * shared_preload_libraries names tfm: a launcher that starts workers in the
 * databases whose jobs have work (job_launcher.c), and workers that run the
 * jobs' batches with each job's owner's rights (job_worker.c), over slots
 * of shared memory (job_slots.c, job_slots.h).
 *
 * The run loop itself, shared with CALL tfm_job_run, is job_run.c's.
 */
#ifndef TFM_PG_RUNTIME_JOB_WORKER_H
#define TFM_PG_RUNTIME_JOB_WORKER_H

#include "postgres.h"

#include "runtime/runtime.h"

/* what one run of a job did */
typedef struct TfmJobRunResult
{
	int64		done;			/* outputs written */
	int64		deleted;		/* outputs removed */
	int64		failed;			/* rows recorded in tfm.job_errors */
	int			batches;		/* batches committed */
	bool		more;			/* stopped at max_batches: work may be left */
	bool		paused;			/* the job was paused: nothing done */
} TfmJobRunResult;


/* _PG_init while preloading: shared memory, hooks and the launcher */
void		tfm_job_workers_init(void);
/* a job became active (created, resumed): wake the launcher at commit */
void		tfm_job_workers_wake_at_commit(void);
/* the slots' rows for tfm.job_workers: pid, database, job, state, batches, rows, since */
int			tfm_job_workers_rows(Datum (*rows)[7], bool (*nulls)[7], int max);

/* the background workers' entry points (bgw_function_name) */
PGDLLEXPORT void tfm_job_launcher_main(Datum arg);
PGDLLEXPORT void tfm_job_worker_main(Datum arg);

#endif							/* TFM_PG_RUNTIME_JOB_WORKER_H */
