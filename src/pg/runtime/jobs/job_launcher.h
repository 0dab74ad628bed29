/*
 * job_launcher.h — the launcher of tfm's background job workers
 * (job_launcher.c): one background worker, connected to no database,
 * registered by job_slots.c when shared_preload_libraries names tfm; it
 * starts workers in the databases whose jobs have work.
 */
#ifndef TFM_PG_RUNTIME_JOB_LAUNCHER_H
#define TFM_PG_RUNTIME_JOB_LAUNCHER_H

#include "postgres.h"

/* the launcher's entry point (bgw_function_name, set by job_slots.c) */
PGDLLEXPORT void tfm_job_launcher_main(Datum arg);

#endif							/* TFM_PG_RUNTIME_JOB_LAUNCHER_H */
