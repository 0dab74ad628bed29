/*
 * job_trigger.c — tfm.job_enqueue(), the trigger a job puts on its source
 * (sql/job.c creates it): after an INSERT, UPDATE or DELETE of a row it
 * enqueues the row's key (an UPDATE that changes the key: the old key
 * too), after a TRUNCATE a NULL key.  No model call, no read of the
 * destination: one INSERT into tfm.job_queue through a saved plan, as the
 * owner of schema tfm (the queue is written by tfm's functions only).
 *
 * Arguments: the job's id, then the key columns' names.  The trigger only
 * acts on the job's own source (a trigger someone else puts on another
 * table with a job's id enqueues nothing); the job's source is read once
 * per backend.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "storage/jobs.h"

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
	if (SPI_execute_with_args("SELECT source::oid FROM tfm.job_defs WHERE id = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.job_defs");
	if (SPI_processed == 0)
		return InvalidOid;
	source = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (source_cache_n == SOURCE_CACHE)
		source_cache_n = 0;
	source_cache[source_cache_n].job_id = job_id;
	source_cache[source_cache_n].source = source;
	source_cache_n++;
	return source;
}

/* the type's text form needs no pinned settings (integers, text, uuid, ...) */
static bool
plain_key_type(Oid t)
{
	switch (t)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case UUIDOID:
		case OIDOID:
		case NUMERICOID:
		case BOOLOID:
		case NAMEOID:
			return true;
		default:
			return false;
	}
}

/* the key of tup as a text[] */
static Datum
row_key(Trigger *tg, TupleDesc td, HeapTuple tup, bool *plain)
{
	int			n = tg->tgnargs - 1;
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		int			att = SPI_fnumber(td, tg->tgargs[i + 1]);
		char	   *v;

		if (att <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("tfm job trigger %s: column \"%s\" of the key is not in the table",
							tg->tgname, tg->tgargs[i + 1]),
					 errhint("Drop the job with tfm_job_drop and create it again.")));
		if (!plain_key_type(TupleDescAttr(td, att - 1)->atttypid))
			*plain = false;
		v = SPI_getvalue(tup, td, att);
		elems[i] = v ? CStringGetTextDatum(v) : CStringGetTextDatum("");
	}
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
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

PG_FUNCTION_INFO_V1(tfm_job_enqueue);
Datum
tfm_job_enqueue(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;
	Trigger    *tg;
	TupleDesc	td;
	TfmAsOwner	as;
	int32		job_id;
	bool		plain = true;
	Datum		key = (Datum) 0,
				old_key = (Datum) 0;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tfm.job_enqueue() is a trigger function")));
	tg = trig->tg_trigger;
	if (tg->tgnargs < 2 || !TRIGGER_FIRED_AFTER(trig->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tfm.job_enqueue() runs after a change, with a job's id and key columns")));
	job_id = pg_strtoint32(tg->tgargs[0]);
	td = RelationGetDescr(trig->tg_relation);

	/* the keys' texts, before any setting changes (a plain key's need none) */
	if (TRIGGER_FIRED_FOR_ROW(trig->tg_event))
	{
		key = row_key(tg, td, TRIGGER_FIRED_BY_UPDATE(trig->tg_event) ? trig->tg_newtuple
					  : trig->tg_trigtuple, &plain);
		if (TRIGGER_FIRED_BY_UPDATE(trig->tg_event))
			old_key = row_key(tg, td, trig->tg_trigtuple, &plain);
		if (!plain)
		{
			/* dates, times and floats: their texts with the settings the runner reads them with */
			int			nest = NewGUCNestLevel();

			tfm_job_pin_key_settings();
			key = row_key(tg, td, TRIGGER_FIRED_BY_UPDATE(trig->tg_event) ? trig->tg_newtuple
						  : trig->tg_trigtuple, &plain);
			if (TRIGGER_FIRED_BY_UPDATE(trig->tg_event))
				old_key = row_key(tg, td, trig->tg_trigtuple, &plain);
			AtEOXact_GUC(true, nest);
		}
	}

	SPI_connect();
	tfm_as_owner_begin(&as);
	if (job_source(job_id) == RelationGetRelid(trig->tg_relation))
	{
		if (!TRIGGER_FIRED_FOR_ROW(trig->tg_event))
			enqueue(job_id, (Datum) 0, true);	/* TRUNCATE */
		else
		{
			enqueue(job_id, key, false);
			if (TRIGGER_FIRED_BY_UPDATE(trig->tg_event) &&
				!datumIsEqual(key, old_key, false, -1))
				enqueue(job_id, old_key, false);
		}
	}
	tfm_as_owner_end(&as);
	SPI_finish();
	return PointerGetDatum(NULL);
}
