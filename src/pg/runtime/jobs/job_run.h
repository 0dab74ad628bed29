/*
 * job_run.h — running a job's batches (job_run.c): the run loop behind
 * CALL tfm_job_run (sql/jobs/job.c) and tfm's background workers
 * (job_worker.c), and the pieces of it that creating a job (job_create.c)
 * and pausing or dropping one (sql/jobs/job.c) share: the job's tables as SQL,
 * the statements a batch runs, running as the job's owner.
 */
#ifndef TFM_PG_RUNTIME_JOB_RUN_H
#define TFM_PG_RUNTIME_JOB_RUN_H

#include "postgres.h"

#include "storage/jobs/jobs.h"

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
 * batch_timeout_ms > 0: each batch (and the run's start) is cancelled past
 * that long, as statement_timeout would (the workers: one job's code
 * cannot hold them).  result may be NULL.
 */
void		tfm_job_run_batches(const char *name, const char *schema, int max_batches,
								bool check_stale, int batch_timeout_ms, TfmJobRunResult *result);

/* the quoted schema of tfm's functions, which the statements built later name (kept for the session) */
void		tfm_job_use_schema(const char *schema);
/* a job's table (what: "source" or "destination") as schema.name; ERROR (42P01) if it is gone */
char	   *tfm_job_rel_sql(Oid rel, const char *what, const char *job);
/* the key columns "k1", "k2" (with a prefix: d."k1", ...) */
char	   *tfm_job_key_list(const TfmJob *j, const char *prefix);
/* the type of the destination's output column for a task */
const char *tfm_job_output_type(const char *task);
/* a batch's statements: read the source rows, compute and upsert, delete the outputs of gone rows */
char	   *tfm_job_fetch_sql(const TfmJob *j, const char *src);
char	   *tfm_job_compute_sql(const TfmJob *j, const char *dest);
char	   *tfm_job_delete_sql(const TfmJob *j, const char *dest);

/* running as the job's owner, with its search_path, as a security-restricted operation */
typedef struct TfmJobAs
{
	Oid			uid;
	int			sec;
	int			nest;
} TfmJobAs;
void		tfm_job_owner_begin(const TfmJob *j, TfmJobAs *s);
void		tfm_job_owner_end(TfmJobAs *s);
/*
 * Queue every key of the source (job creation's backfill), or the keys of
 * the destination's outputs of another model version than version (not
 * those already queued); each reads the table as the job's owner.
 * Returns the keys queued.
 */
int64		tfm_job_enqueue_all(const TfmJob *j, const char *src);
int64		tfm_job_enqueue_stale(const TfmJob *j, const char *dest, int64 version);
/* ERROR (42501) unless the current user has the privileges of the job's owner; doing: "run", ... */
void		tfm_job_check_owner(const TfmJob *j, const char *doing);

#endif							/* TFM_PG_RUNTIME_JOB_RUN_H */
