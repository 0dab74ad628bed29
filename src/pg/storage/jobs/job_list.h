/*
 * job_list.h — what tfm's background job workers read and write in a
 * database's catalog (job_list.c): whether tfm is installed there, its
 * active jobs, and a job's last error.  Each runs inside the caller's SPI
 * connection.
 */
#ifndef TFM_PG_STORAGE_JOB_LIST_H
#define TFM_PG_STORAGE_JOB_LIST_H

#include "postgres.h"

/* an active job, as a worker sees it */
typedef struct TfmJobRef
{
	int32		id;
	char	   *name;
	Oid			owner;
	int64		model_version;	/* the model's (or alias's) current version; -1 if none */
} TfmJobRef;

/*
 * The quoted schema of tfm's functions in this database, or NULL when tfm
 * is not installed there or is older than 0.4 (no tfm.job_defs).
 */
char	   *tfm_job_ext_schema(void);
/* the active jobs, in id order, allocated in cxt; returns how many */
int			tfm_job_list_active(MemoryContext cxt, TfmJobRef **jobs);
/* a run of job id that ended in an error: message into last_error */
void		tfm_job_record_run_error(int32 id, const char *message);

#endif							/* TFM_PG_STORAGE_JOB_LIST_H */
