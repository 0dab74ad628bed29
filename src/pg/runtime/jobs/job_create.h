/*
 * job_create.h — a new job (job_create.c): what tfm_job_create (sql/jobs/job.c)
 * does once it has read its arguments.
 */
#ifndef TFM_PG_RUNTIME_JOB_CREATE_H
#define TFM_PG_RUNTIME_JOB_CREATE_H

#include "postgres.h"

#include "storage/models/models.h"
#include "utils/jsonb.h"

/* checks chunk_tokens / chunk_overlap against the model (tfm_check_chunking, sql/infer/embed_chunks.h) */
typedef void (*TfmChunkingCheck) (const TfmModelRow *row, int chunk_tokens, int chunk_overlap);

/*
 * Creates job name over table source: checks the name, the task, the
 * source, the model, the options (check_window for an embedding job's
 * chunking), the source's primary key and the input expression (prepared
 * as the creator, who becomes the job's owner); creates the destination
 * (unless has_dest: dest_rel, checked), the job's row, its triggers, and
 * queues every key now in the source.  schema: the quoted schema of tfm's
 * functions.  Returns the destination.
 */
Oid			tfm_job_make(const char *schema, char *name, Oid source, char *input, char *model,
						 char *task, bool has_dest, Oid dest_rel, Jsonb *options,
						 TfmChunkingCheck check_window);

#endif							/* TFM_PG_RUNTIME_JOB_CREATE_H */
