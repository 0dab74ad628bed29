/*
 * job_versions.c — tfm.job_versions(job_id), the outputs_by_version column
 * of view tfm.jobs: a job's destination's outputs counted by model version.
 *
 * Any role reads tfm.jobs, and the destination is another role's table, so
 * the count runs no code at all: no query, no policy, no rule, no
 * operator — it reads the table's rows itself (a heap scan under the
 * reader's snapshot, model_version read as the bigint it is).  So neither
 * a row-security policy nor a table turned into a view can run its
 * owner's code with the reader's rights, raise an error, or make the read
 * wait on its code.  NULL, never an error, when the reader may not SELECT
 * the destination (checked in the catalog), when it is gone or not a plain
 * table, when row security could hide some of its rows from the reader,
 * when model_version is not a bigint, or when the table is locked
 * (ACCESS EXCLUSIVE) by another session.  A cancel ends it.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "storage/storage.h"

typedef struct VersionCount
{
	int64		version;		/* hash key */
	int64		n;
} VersionCount;

static int
cmp_version(const void *a, const void *b)
{
	int64		x = (*(VersionCount *const *) a)->version,
				y = (*(VersionCount *const *) b)->version;

	return x < y ? -1 : x > y;
}

/* {"<version>": n, ..., "none": n} of the rows of rel, read under the active snapshot */
static Jsonb *
count_versions(Relation rel, AttrNumber att)
{
	HASHCTL		hc;
	HTAB	   *counts;
	TableScanDesc scan;
	TupleTableSlot *slot;
	int64		none = 0,
				rows = 0;
	HASH_SEQ_STATUS seq;
	VersionCount *e,
			  **sorted;
	long		nv;
	StringInfoData s;

	memset(&hc, 0, sizeof(hc));
	hc.keysize = sizeof(int64);
	hc.entrysize = sizeof(VersionCount);
	hc.hcxt = CurrentMemoryContext;
	counts = hash_create("tfm job versions", 16, &hc, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, att, &isnull);

		if ((++rows & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (isnull)
			none++;
		else
		{
			int64		v = DatumGetInt64(d);
			bool		found;

			e = hash_search(counts, &v, HASH_ENTER, &found);
			e->n = found ? e->n + 1 : 1;
		}
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	nv = hash_get_num_entries(counts);
	sorted = palloc(sizeof(VersionCount *) * Max(nv, 1));
	nv = 0;
	hash_seq_init(&seq, counts);
	while ((e = hash_seq_search(&seq)) != NULL)
		sorted[nv++] = e;
	qsort(sorted, nv, sizeof(VersionCount *), cmp_version);
	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	for (long i = 0; i < nv; i++)
		appendStringInfo(&s, "%s\"" INT64_FORMAT "\": " INT64_FORMAT, i ? ", " : "",
						 sorted[i]->version, sorted[i]->n);
	if (none > 0)
		appendStringInfo(&s, "%s\"none\": " INT64_FORMAT, nv ? ", " : "", none);
	appendStringInfoChar(&s, '}');
	hash_destroy(counts);
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data)));
}

PG_FUNCTION_INFO_V1(tfm_job_versions);
Datum
tfm_job_versions(PG_FUNCTION_ARGS)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1];
	TfmOwnerRow r;
	Oid			dest = InvalidOid;
	AttrNumber	att;
	Relation	rel;
	Jsonb	   *res;

	args[0] = Int32GetDatum(PG_GETARG_INT32(0));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (tfm_owner_row_read(&r, "SELECT destination::oid FROM tfm.job_defs WHERE id = $1",
						   1, types, args, true, "cannot read tfm.job_defs"))
	{
		bool		isnull;

		dest = DatumGetObjectId(tfm_owner_row_col(&r, 1, &isnull));
	}
	tfm_owner_row_end(&r);
	SPI_finish();
	/* the catalog alone: the relation's kind, the reader's right, the column */
	if (!OidIsValid(dest) || get_rel_relkind(dest) != RELKIND_RELATION ||
		pg_class_aclcheck(dest, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		PG_RETURN_NULL();
	att = get_attnum(dest, "model_version");
	if (att == InvalidAttrNumber || get_atttype(dest, att) != INT8OID)
		PG_RETURN_NULL();
	/* never wait for another session's lock */
	if (!ConditionalLockRelationOid(dest, AccessShareLock))
		PG_RETURN_NULL();
	rel = try_table_open(dest, NoLock);
	if (rel == NULL || rel->rd_rel->relkind != RELKIND_RELATION ||
		/* rows a policy could hide from the reader: not counted for them */
		check_enable_rls(dest, InvalidOid, true) == RLS_ENABLED)
	{
		if (rel)
			table_close(rel, NoLock);
		UnlockRelationOid(dest, AccessShareLock);
		PG_RETURN_NULL();
	}
	res = count_versions(rel, att);
	table_close(rel, AccessShareLock);
	PG_RETURN_JSONB_P(res);
}
