/*
 * job.h — running a job's batches from C (job.c): what CALL tfm_job_run
 * does, for a caller such as tfm's background workers (module.c hands this
 * function to them as their TfmJobRunner; runtime/job_worker.h holds that
 * type and TfmJobRunResult).
 */
#ifndef TFM_PG_SQL_JOB_H
#define TFM_PG_SQL_JOB_H

#include "postgres.h"

#include "runtime/job_worker.h"

/*
 * Runs up to max_batches batches (-1: until the queue is empty) of the job
 * called name, each claimed, computed, written and COMMITTED on its own
 * through statements prepared once for the run; stops early when the job
 * is paused or dropped meanwhile.  The caller must be in a transaction that
 * may be committed from inside (a CALL outside a transaction block, or a
 * background worker's own transaction, not in a transaction block; without
 * an active snapshot the run pushes its own), as a role with the job
 * owner's privileges; the work runs as the job's owner.  schema is the
 * quoted schema of tfm's functions (NULL: found in pg_extension);
 * check_stale: first queue again the outputs of another model version (a
 * worker asks only when the version moved).  Errors other than a row's
 * are raised (the batch in flight is rolled back; its keys stay queued).
 * result may be NULL.
 */
void		tfm_job_run_batches(const char *name, const char *schema, int max_batches,
								bool check_stale, TfmJobRunResult *result);

#endif							/* TFM_PG_SQL_JOB_H */
