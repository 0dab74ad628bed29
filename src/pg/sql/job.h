/*
 * job.h — the jobs' run loop (job.c) as a plain C entry point: the body of
 * CALL tfm_job_run, which module.c also gives to the background workers
 * (runtime/job_worker.h describes the arguments).
 */
#ifndef TFM_PG_SQL_JOB_H
#define TFM_PG_SQL_JOB_H

#include "runtime/job_worker.h"

void		tfm_job_run_batches(const char *name, const char *schema, int max_batches,
								bool check_stale, TfmJobRunResult *result);

#endif							/* TFM_PG_SQL_JOB_H */
