/*
 * job_versions.c — tfm.job_versions(job_id), the outputs_by_version column
 * of view tfm.jobs: a job's destination's outputs counted by model version.
 *
 * Any role reads tfm.jobs, and the destination is another role's table, so
 * nothing of the destination's owner may run with the reader's rights (nor
 * with a superuser's): the count runs as the job's owner, as a
 * security-restricted operation with search_path pg_catalog, in a
 * subtransaction whose every setting is rolled back — a row-security
 * policy or a table turned into a view runs as its owner, as it would for
 * the job itself.  The result is NULL, never an error, when the reader may
 * not SELECT the destination (checked in the catalog, running nothing),
 * when it is gone or no longer a table, or when the owner's count fails.
 * A cancel still ends it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "runtime/job_run.h"
#include "storage/storage.h"

/* the destination's outputs by version, counted as owner; NULL on an error of the owner's */
static Jsonb *
count_as_owner(Oid owner, Oid dest)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner resowner = CurrentResourceOwner;
	TfmJob		j;
	Jsonb	   *volatile result = NULL;

	memset(&j, 0, sizeof(j));
	j.owner = owner;
	j.search_path = "pg_catalog, pg_temp";
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		TfmJobAs	as;
		char	   *sql;

		sql = psprintf("SELECT coalesce(jsonb_object_agg(coalesce(v::text, 'none'), n), '{}') "
					   "FROM (SELECT model_version AS v, count(*) AS n FROM %s GROUP BY 1) s",
					   quote_qualified_identifier(get_namespace_name(get_rel_namespace(dest)),
												  get_rel_name(dest)));
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		tfm_job_owner_begin(&j, &as);
		if (SPI_execute(sql, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "cannot count the outputs of a job");
		tfm_job_owner_end(&as);
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			result = isnull ? NULL : DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = resowner;
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = resowner;
		/* a cancel, a timeout, a shutdown: not the owner's count failing */
		if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION ||
			ERRCODE_TO_CATEGORY(ed->sqlerrcode) == ERRCODE_INSUFFICIENT_RESOURCES)
			ReThrowError(ed);
		result = NULL;
	}
	PG_END_TRY();
	return result;
}

PG_FUNCTION_INFO_V1(tfm_job_versions);
Datum
tfm_job_versions(PG_FUNCTION_ARGS)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1];
	TfmOwnerRow r;
	Oid			owner = InvalidOid,
				dest = InvalidOid;
	char		relkind;
	Jsonb	   *res;

	args[0] = Int32GetDatum(PG_GETARG_INT32(0));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (tfm_owner_row_read(&r, "SELECT owner::oid, destination::oid FROM tfm.job_defs WHERE id = $1",
						   1, types, args, true, "cannot read tfm.job_defs"))
	{
		bool		isnull;

		owner = DatumGetObjectId(tfm_owner_row_col(&r, 1, &isnull));
		dest = DatumGetObjectId(tfm_owner_row_col(&r, 2, &isnull));
	}
	tfm_owner_row_end(&r);
	SPI_finish();
	if (!OidIsValid(dest))
		PG_RETURN_NULL();
	/* the catalog alone: the reader's right, the relation's kind and column */
	relkind = get_rel_relkind(dest);
	if ((relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		pg_class_aclcheck(dest, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		pg_class_aclcheck(dest, owner, ACL_SELECT) != ACLCHECK_OK ||
		pg_namespace_aclcheck(get_rel_namespace(dest), owner, ACL_USAGE) != ACLCHECK_OK ||
		get_attnum(dest, "model_version") == InvalidAttrNumber)
		PG_RETURN_NULL();
	res = count_as_owner(owner, dest);
	if (res == NULL)
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(res);
}
