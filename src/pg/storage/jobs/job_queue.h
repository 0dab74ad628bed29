/*
 * job_queue.h — the trigger's side of tfm.job_queue (job_queue.c): the keys
 * a change of a job's source enqueues.  The rest of the jobs' rows:
 * jobs.h.
 */
#ifndef TFM_PG_STORAGE_JOB_QUEUE_H
#define TFM_PG_STORAGE_JOB_QUEUE_H

#include "postgres.h"

/*
 * Enqueue n keys (text[]; isnull: a TRUNCATE's NULL key) for job job_id, if
 * the job exists and its source is the table relid; otherwise nothing.
 * Runs as the owner of schema tfm in an SPI connection of its own.
 */
void		tfm_job_queue_push(int32 job_id, Oid relid, int n, const Datum *keys,
							   const bool *isnull);

#endif							/* TFM_PG_STORAGE_JOB_QUEUE_H */
