/*
 * job_queue.c — what tfm.job_enqueue() (sql/jobs/job_trigger.c) writes: one row
 * of tfm.job_queue per key, through a plan saved for the backend, as the
 * owner of schema tfm (the queue is written by tfm's functions only).  The
 * job's source is read once per backend, so a trigger someone puts on
 * another table with a job's id enqueues nothing.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "catalog/partition.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "storage/jobs/job_queue.h"
#include "storage/storage.h"

#define SOURCE_CACHE 64

static struct
{
	int32		job_id;
	Oid			source;
}			source_cache[SOURCE_CACHE];
static int	source_cache_n;
static SPIPlanPtr insert_plan;

/* the job's source, InvalidOid if there is no such job (in an SPI connection, as the catalog's owner) */
static Oid
job_source(int32 job_id)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job_id)};
	bool		isnull;
	Oid			source = InvalidOid;

	for (int i = 0; i < source_cache_n; i++)
		if (source_cache[i].job_id == job_id)
			return source_cache[i].source;
	if (tfm_spi_exec("SELECT source::oid FROM tfm.job_defs WHERE id = $1",
					 1, types, args, NULL, true, 1, SPI_OK_SELECT,
					 "cannot read tfm.job_defs") == 0)
		return InvalidOid;
	source = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (source_cache_n == SOURCE_CACHE)
		source_cache_n = 0;
	source_cache[source_cache_n].job_id = job_id;
	source_cache[source_cache_n].source = source;
	source_cache_n++;
	return source;
}

/* relid is the source, or a partition of it (a partitioned source's row triggers fire on the partition) */
static bool
is_source(Oid source, Oid relid)
{
	List	   *up;
	bool		found;

	if (!OidIsValid(source))
		return false;
	if (source == relid)
		return true;
	if (!get_rel_relispartition(relid))
		return false;
	up = get_partition_ancestors(relid);
	found = list_member_oid(up, source);
	list_free(up);
	return found;
}

static void
enqueue(int32 job_id, Datum key, bool isnull)
{
	Datum		args[2] = {Int32GetDatum(job_id), key};
	char		nulls[2] = {' ', isnull ? 'n' : ' '};

	if (insert_plan == NULL)
	{
		Oid			types[2] = {INT4OID, TEXTARRAYOID};
		SPIPlanPtr	p = SPI_prepare("INSERT INTO tfm.job_queue (job_id, key) VALUES ($1, $2)", 2, types);

		if (p == NULL)
			elog(ERROR, "cannot prepare the insert into tfm.job_queue");
		SPI_keepplan(p);
		insert_plan = p;
	}
	if (SPI_execute_plan(insert_plan, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "cannot write tfm.job_queue");
}

void
tfm_job_queue_push(int32 job_id, Oid relid, int n, const Datum *keys, const bool *isnull)
{
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	if (is_source(job_source(job_id), relid))
		for (int i = 0; i < n; i++)
			enqueue(job_id, keys[i], isnull[i]);
	tfm_spi_finish_owner(&as);
}
