/*
 * job_worker.h — a tfm background job worker (job_worker.c): started by the
 * launcher (job_launcher.c) into a slot of shared memory (job_slots.h), it
 * runs the jobs of one database with each job's owner's rights through
 * job_run.c's run loop, the one CALL tfm_job_run uses.
 */
#ifndef TFM_PG_RUNTIME_JOB_WORKER_H
#define TFM_PG_RUNTIME_JOB_WORKER_H

#include "postgres.h"

/* the worker's entry point (bgw_function_name, set by job_launcher.c) */
PGDLLEXPORT void tfm_job_worker_main(Datum arg);

#endif							/* TFM_PG_RUNTIME_JOB_WORKER_H */
