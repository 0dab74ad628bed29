/*
 * job.h — running a job's batches from C (job.c): what CALL tfm_job_run
 * does, for a caller such as a background worker.
 */
#ifndef TFM_PG_JOB_H
#define TFM_PG_JOB_H

#include "postgres.h"

typedef struct TfmJobRunStats
{
	int64		done;			/* rows whose outputs were written */
	int64		deleted;		/* outputs removed (rows gone) */
	int64		failed;			/* rows recorded in tfm.job_errors */
	int			batches;		/* batches committed */
	bool		paused;			/* the job was paused: nothing done */
} TfmJobRunStats;

/*
 * Runs up to max_batches batches (-1: until the queue is empty) of the job
 * called name, each claimed, computed, written and COMMITTED on its own;
 * stops early when the job is paused or dropped meanwhile.  The caller
 * must be in a transaction that may be committed from inside (a CALL
 * outside a transaction block, or a background worker's own transaction
 * with a snapshot, not in a transaction block), as a role with the job
 * owner's privileges; the work runs as the job's owner.  Errors other than
 * a row's are raised (the batch in flight is rolled back; its keys stay
 * queued).  stats may be NULL.
 */
void		tfm_job_run_batches(const char *name, int max_batches, TfmJobRunStats *stats);

#endif							/* TFM_PG_JOB_H */
