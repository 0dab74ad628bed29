/*
 * job_workers.c — tfm_job_workers(): tfm's background job workers as rows
 * (the view tfm.job_workers): which worker runs what, in which database.
 * No rows unless tfm is in shared_preload_libraries with tfm.job_workers > 0.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/tuplestore.h"

#include "runtime/jobs/job_slots.h"

PG_FUNCTION_INFO_V1(tfm_job_workers_list);
Datum
tfm_job_workers_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		(*rows)[7];
	bool		(*nulls)[7];
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	rows = palloc(sizeof(*rows) * 64);
	nulls = palloc(sizeof(*nulls) * 64);
	n = tfm_job_workers_rows(rows, nulls, 64);
	for (int i = 0; i < n; i++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[i], nulls[i]);
	return (Datum) 0;
}
