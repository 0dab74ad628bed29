/*
 * job_list.c — the background job workers' reads and writes of a
 * database's catalog: whether tfm 0.4 or later is installed, the active
 * jobs with their model's current version, and the error that ended a
 * worker's run of a job (tfm.job_defs.last_error).  The queue, the batches
 * and the rows' errors are storage/jobs/jobs.c's, through the run loop.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "storage/jobs/job_list.h"
#include "storage/models/model_row.h"
#include "storage/storage.h"

char *
tfm_job_ext_schema(void)
{
	/* every name and operator qualified: immune to the session's search_path */
	if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
					"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
					"WHERE e.extname OPERATOR(pg_catalog.=) 'tfm' AND pg_catalog.to_regclass('tfm.job_defs') IS NOT NULL",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read pg_extension");
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

int
tfm_job_list_active(MemoryContext cxt, TfmJobRef **jobs)
{
	TfmAsOwner	as;
	StringInfoData sql;
	int			n;

	tfm_as_owner_begin(&as);
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT j.id, j.name, j.owner::oid, coalesce((SELECT m.version FROM tfm.models m "
						   "WHERE m.id = ");
	tfm_model_of_job_sql(&sql, "j.model_id", "j.alias_id");
	appendStringInfoString(&sql, "), -1) FROM tfm.job_defs j WHERE j.state = 'active' ORDER BY j.id");
	n = (int) tfm_spi_exec(sql.data, 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT, "cannot read tfm.job_defs");
	tfm_as_owner_end(&as);
	*jobs = MemoryContextAlloc(cxt, sizeof(TfmJobRef) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		isnull;
		TfmJobRef  *j = &(*jobs)[i];

		j->id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		j->name = MemoryContextStrdup(cxt, SPI_getvalue(tup, td, 2));
		j->owner = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
		j->model_version = DatumGetInt64(SPI_getbinval(tup, td, 4, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

void
tfm_job_record_run_error(int32 id, const char *message)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2] = {Int32GetDatum(id), CStringGetTextDatum(message)};
	TfmAsOwner	as;

	tfm_as_owner_begin(&as);
	(void) tfm_spi_exec("UPDATE tfm.job_defs SET last_error = $2, last_error_at = now() WHERE id = $1",
						2, types, args, NULL, false, 0, SPI_OK_UPDATE, "cannot write tfm.job_defs");
	tfm_as_owner_end(&as);
}
