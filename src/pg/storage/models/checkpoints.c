/*
 * checkpoints.c — an interrupted tfm_fit run's rows, as the owner of schema
 * tfm: one row of tfm.checkpoints per model (the run's query, options and
 * state record) and one row of tfm.checkpoint_tensors per tensor (Adam's
 * moments m and v and, with keep => 'best', the best epoch's values, as raw
 * float4 bytea, bit for bit).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "storage/models/checkpoints.h"

static bytea *
floats_bytea(const float *x, size_t n)
{
	Size		nbytes = VARHDRSZ + n * sizeof(float);
	bytea	   *b = palloc_extended(nbytes, MCXT_ALLOC_HUGE);

	SET_VARSIZE(b, nbytes);
	memcpy(VARDATA(b), x, n * sizeof(float));
	return b;
}

static void
write_tensors(int32 model_id, const TfmCheckpointTensors *t)
{
	static const char *upsert =
		"INSERT INTO tfm.checkpoint_tensors (model_id, name, adam_m, adam_v, best) "
		"VALUES ($1, $2, $3, $4, $5) ON CONFLICT (model_id, name) DO UPDATE SET "
		"adam_m = EXCLUDED.adam_m, adam_v = EXCLUDED.adam_v, best = EXCLUDED.best";
	Oid			types[5] = {INT4OID, TEXTOID, BYTEAOID, BYTEAOID, BYTEAOID};
	const tfm_model *m = t->m;
	SPIPlanPtr	plan = SPI_prepare(upsert, 5, types);

	if (!plan)
		elog(ERROR, "cannot prepare the checkpoint upsert: %s", SPI_result_code_string(SPI_result));
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		Datum		args[5];
		char		nulls[5] = "     ";
		bytea	   *mb = floats_bytea(t->adam_m + p->offset, p->size);
		bytea	   *vb = floats_bytea(t->adam_v + p->offset, p->size);
		bytea	   *bb = NULL;

		CHECK_FOR_INTERRUPTS();
		args[0] = Int32GetDatum(model_id);
		args[1] = CStringGetTextDatum(p->name);
		args[2] = PointerGetDatum(mb);
		args[3] = PointerGetDatum(vb);
		if (t->best)
		{
			bb = floats_bytea(t->best + p->offset, p->size);
			args[4] = PointerGetDatum(bb);
		}
		else
		{
			args[4] = (Datum) 0;
			nulls[4] = 'n';
		}
		if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "cannot write the checkpoint of tensor \"%s\"", p->name);
		pfree(mb);
		pfree(vb);
		if (bb)
			pfree(bb);
	}
	SPI_freeplan(plan);
}

void
tfm_checkpoint_store(const TfmCheckpointRow *c, const TfmCheckpointTensors *t)
{
	static const char *upsert =
		"INSERT INTO tfm.checkpoints (model_id, run_started, model_version, epoch, rows_done, "
		"steps, query, options, state, pid, started_by) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, pg_backend_pid(), $10::regrole) "
		"ON CONFLICT (model_id) DO UPDATE SET run_started = EXCLUDED.run_started, "
		"model_version = EXCLUDED.model_version, epoch = EXCLUDED.epoch, "
		"rows_done = EXCLUDED.rows_done, steps = EXCLUDED.steps, query = EXCLUDED.query, "
		"options = EXCLUDED.options, state = EXCLUDED.state, pid = EXCLUDED.pid, "
		"started_by = EXCLUDED.started_by, saved_at = clock_timestamp()";
	Oid			types[10] = {INT4OID, TIMESTAMPTZOID, INT8OID, INT4OID, INT8OID, INT8OID,
	TEXTOID, TEXTOID, BYTEAOID, OIDOID};
	Datum		args[10];
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	args[0] = Int32GetDatum(c->model_id);
	args[1] = TimestampTzGetDatum(c->run_started);
	args[2] = Int64GetDatum(c->model_version);
	args[3] = Int32GetDatum(c->epoch);
	args[4] = Int64GetDatum(c->rows_done);
	args[5] = Int64GetDatum(c->steps);
	args[6] = CStringGetTextDatum(c->query);
	args[7] = CStringGetTextDatum(c->options);
	args[8] = PointerGetDatum(c->state);
	args[9] = ObjectIdGetDatum(as.save_uid);	/* the role whose query this is */
	tfm_spi_exec(upsert, 10, types, args, NULL, false, 0, SPI_OK_INSERT,
				 "cannot write tfm.checkpoints");
	write_tensors(c->model_id, t);
	tfm_spi_finish_owner(&as);
}

bool
tfm_checkpoint_fetch(int32 model_id, TfmCheckpointRow *c)
{
	TfmOwnerRow r;
	bool		isnull;

	memset(c, 0, sizeof(*c));
	c->model_id = model_id;
	if (tfm_owner_row_read(&r, "SELECT model_version, run_started, query, state, "
						   "EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = c.pid "
						   "        AND a.pid <> pg_backend_pid() AND a.state = 'active' "
						   "        AND a.query LIKE 'tfm\\_fit %'), started_by "
						   "FROM tfm.checkpoints c WHERE model_id = $1",
						   1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)}, true,
						   "cannot read tfm.checkpoints"))
	{
		MemoryContext old = MemoryContextSwitchTo(r.cxt);

		c->model_version = DatumGetInt64(tfm_owner_row_col(&r, 1, &isnull));
		c->run_started = DatumGetTimestampTz(tfm_owner_row_col(&r, 2, &isnull));
		c->query = TextDatumGetCString(tfm_owner_row_col(&r, 3, &isnull));
		c->state = DatumGetByteaPCopy(tfm_owner_row_col(&r, 4, &isnull));
		c->running = DatumGetBool(tfm_owner_row_col(&r, 5, &isnull));
		c->started_by = DatumGetObjectId(tfm_owner_row_col(&r, 6, &isnull));
		MemoryContextSwitchTo(old);
	}
	tfm_owner_row_end(&r);
	return r.tup != NULL;
}

static void
copy_floats(const char *model, const char *tensor, Datum d, float *dst, size_t n)
{
	bytea	   *b = DatumGetByteaPP(d);

	if (VARSIZE_ANY_EXHDR(b) != n * sizeof(float))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of tensor \"%s\" of model \"%s\" does not match its config",
						tensor, model)));
	memcpy(dst, VARDATA_ANY(b), n * sizeof(float));
}

void
tfm_checkpoint_fetch_tensors(int32 model_id, const char *model, const TfmCheckpointTensors *t)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(model_id)};
	const tfm_model *m = t->m;
	int			seen = 0;
	uint64		n;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	n = tfm_spi_exec("SELECT name, adam_m, adam_v, best FROM tfm.checkpoint_tensors "
					 "WHERE model_id = $1", 1, types, args, NULL, true, 0, SPI_OK_SELECT,
					 "cannot read tfm.checkpoint_tensors");
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		n1,
					n2,
					n3,
					n4;
		char	   *name = TextDatumGetCString(SPI_getbinval(tup, td, 1, &n1));
		Datum		dm = SPI_getbinval(tup, td, 2, &n2);
		Datum		dv = SPI_getbinval(tup, td, 3, &n3);
		Datum		db = SPI_getbinval(tup, td, 4, &n4);
		const tfm_param_info *p = tfm_model_find(m, name);

		CHECK_FOR_INTERRUPTS();
		if (!p || n2 || n3 || (t->best && n4))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the checkpoint of model \"%s\" does not match its config at tensor \"%s\"",
							model, name)));
		copy_floats(model, name, dm, t->adam_m + p->offset, p->size);
		copy_floats(model, name, dv, t->adam_v + p->offset, p->size);
		if (t->best)
			copy_floats(model, name, db, t->best + p->offset, p->size);
		seen++;
	}
	tfm_spi_finish_owner(&as);
	if (seen != m->n_tensors)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of model \"%s\" holds %d of its %d tensors",
						model, seen, m->n_tensors)));
}

bool
tfm_checkpoint_remove(int32 model_id, char **epoch, char **steps)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(model_id)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		found;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	found = tfm_spi_exec("DELETE FROM tfm.checkpoints WHERE model_id = $1 "
						 "RETURNING epoch, steps", 1, types, args, NULL, false, 0,
						 SPI_OK_DELETE_RETURNING, "cannot write tfm.checkpoints") > 0;
	if (found && epoch)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;

		*epoch = MemoryContextStrdup(cxt, SPI_getvalue(tup, td, 1));
		*steps = MemoryContextStrdup(cxt, SPI_getvalue(tup, td, 2));
	}
	tfm_spi_finish_owner(&as);
	return found;
}
