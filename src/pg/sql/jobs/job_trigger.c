/*
 * job_trigger.c — tfm.job_enqueue(), the trigger a job puts on its source
 * (runtime/jobs/job_create.c creates it): after an INSERT, UPDATE or DELETE of a row it
 * enqueues the row's key (an UPDATE that changes the key: the old key
 * too), after a TRUNCATE a NULL key.  No model call, no read of the
 * destination: the keys go to tfm.job_queue (storage/jobs/job_queue.c).
 *
 * Arguments: the job's id, then the key columns' names.  The trigger only
 * acts on the job's own source (a trigger someone else puts on another
 * table with a job's id enqueues nothing).
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

#include "storage/jobs/job_queue.h"
#include "storage/jobs/jobs.h"

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

/*
 * The keys of a row trigger's row (an UPDATE's new row, and its old row in
 * *old_key): their texts before any setting changes; a key with dates,
 * times or floats again with the settings the runner reads them with.
 */
static void
row_keys(TriggerData *trig, Datum *key, Datum *old_key)
{
	Trigger    *tg = trig->tg_trigger;
	TupleDesc	td = RelationGetDescr(trig->tg_relation);
	bool		update = TRIGGER_FIRED_BY_UPDATE(trig->tg_event);
	bool		plain = true;

	*old_key = (Datum) 0;
	*key = row_key(tg, td, update ? trig->tg_newtuple : trig->tg_trigtuple, &plain);
	if (update)
		*old_key = row_key(tg, td, trig->tg_trigtuple, &plain);
	if (!plain)
	{
		int			nest = NewGUCNestLevel();

		tfm_job_pin_key_settings();
		*key = row_key(tg, td, update ? trig->tg_newtuple : trig->tg_trigtuple, &plain);
		if (update)
			*old_key = row_key(tg, td, trig->tg_trigtuple, &plain);
		AtEOXact_GUC(false, nest);
	}
}

PG_FUNCTION_INFO_V1(tfm_job_enqueue);
Datum
tfm_job_enqueue(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;
	Trigger    *tg;
	int32		job_id;

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

	if (!TRIGGER_FIRED_FOR_ROW(trig->tg_event))
		tfm_job_queue_push(job_id, RelationGetRelid(trig->tg_relation), 1,
						   (Datum[]) {(Datum) 0}, (bool[]) {true});	/* TRUNCATE */
	else
	{
		Datum		keys[2];
		bool		nulls[2] = {false, false};
		bool		key_changed;

		row_keys(trig, &keys[0], &keys[1]);
		key_changed = TRIGGER_FIRED_BY_UPDATE(trig->tg_event) &&
			!datumIsEqual(keys[0], keys[1], false, -1);
		tfm_job_queue_push(job_id, RelationGetRelid(trig->tg_relation), key_changed ? 2 : 1,
						   keys, nulls);
	}
	return PointerGetDatum(NULL);
}
