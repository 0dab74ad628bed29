/*
 * jobs.h — jobs' rows in schema tfm (jobs.c): tfm.job_defs, the queue of
 * keys the triggers fill (tfm.job_queue) and the rows that failed
 * (tfm.job_errors).  Every function here runs its SQL as the owner of
 * schema tfm (the catalog is written by tfm's functions only) inside the
 * caller's SPI connection.
 */
#ifndef TFM_PG_STORAGE_JOBS_H
#define TFM_PG_STORAGE_JOBS_H

#include "postgres.h"

#include "storage/storage.h"
#include "datatype/timestamp.h"

typedef struct TfmJob
{
	int32		id;
	char	   *name;
	Oid			owner;
	Oid			source;
	Oid			dest;
	int			nkeys;
	char	  **key_cols;		/* the source's primary-key columns, in key order */
	char	  **key_types;		/* format_type of each */
	char	   *input;			/* the SQL expression over a source row */
	char	   *model;			/* as given at creation: a model or an alias */
	int32		model_id;		/* the model the job was created with */
	int32		alias_id;		/* 0, or the alias it was created through (its model may move) */
	char	   *task;
	char	   *options;		/* jsonb, as text */
	char	   *search_path;	/* the creator's, for the input expression */
	bool		paused;
	int			batch;			/* options' batch (TFM_JOB_BATCH_DEFAULT) */
	bool		reprocess_stale;	/* options' reprocess_stale (true) */
	int			chunk_tokens;	/* options' chunk_tokens (0: one output per row) */
	int			chunk_overlap;	/* options' chunk_overlap (0) */
} TfmJob;

/* a job's row (in the current memory context); false if none and missing_ok */
bool		tfm_job_read(const char *name, TfmJob *job, bool missing_ok);
/* the id of a new job row */
int32		tfm_job_insert(const TfmJob *job);
void		tfm_job_set_state(int32 id, bool paused);
/* deletes the job's row, queue and errors */
void		tfm_job_delete(int32 id);
bool		tfm_job_hold(int32 id);
/* enqueue keys given as one text[] per key column; returns how many (see jobs.c) */
int64		tfm_job_enqueue_keys(const TfmJob *job, const Datum *cols, bool skip_queued);
/* the same, job->batch keys a queue row (a backfill's chunks); returns how many keys */
int64		tfm_job_enqueue_chunks(const TfmJob *job, const Datum *cols);
/*
 * The job's model as it is now: the model it was created with (by id:
 * renames and others' models of the same name change nothing), or the
 * model its alias deploys now.  Its current name into *name (may be NULL),
 * its id into *id (may be NULL); returns its version, -1 if it is gone.
 */
int64		tfm_job_model_now(const TfmJob *job, char **name, int32 *id);
/* the id of the alias of that name (0: none) */
int32		tfm_job_alias_id(const char *alias);
/* the same without the name: the version only */
int64		tfm_job_model_version(const TfmJob *job);
/* take the job's truncate markers: true if the source was truncated */
bool		tfm_job_take_truncates(const TfmJob *job);

/*
 * Claim the oldest chunk of keys a backfill queued, or else up to n keys of
 * the queue (FOR UPDATE SKIP LOCKED, so two runners never take the same
 * entry), deleting them and the other queue entries of the same keys that
 * no runner holds, and the keys' old errors; then take the
 * transaction-level advisory locks of the keys (job id, hash of the key) in
 * one pass, so two runners never process one key at once: a key another
 * runner holds is queued again and left out (when every key is held, the
 * locks are waited for, in hash order).  Returns the distinct keys (text[]
 * datums) in *keys.
 */
int			tfm_job_claim(const TfmJob *job, int n, Datum **keys);
/* a row that failed: its key, message and SQLSTATE in tfm.job_errors */
void		tfm_job_record_error(const TfmJob *job, Datum key, const char *message, int sqlerrcode);
/* add to the counters; last_error when not NULL */
void		tfm_job_count(const TfmJob *job, int64 done, int64 deleted, int64 failed,
						  const char *last_error, TimestampTz run_started, int64 run_rows);

/* pin the settings that key texts depend on (DateStyle, ...) in a GUC nest level */
void		tfm_job_pin_key_settings(void);

#endif							/* TFM_PG_STORAGE_JOBS_H */
