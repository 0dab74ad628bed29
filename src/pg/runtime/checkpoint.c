/*
 * checkpoint.c — the state of a tfm_fit run between two chunks, so an
 * interrupted run can go on bit for bit where its last checkpoint left it.
 *
 * A checkpoint is the model's weights (tfm.tensors, saved by the caller in
 * the same transaction: tfm.checkpoints.model_version is the version they
 * took) plus:
 *   - tfm.checkpoints: one row per model holding the run's query, its
 *     resolved options (jsonb, for people) and `state`, a versioned binary
 *     record of everything else: the options as the run uses them, the
 *     optimizer's and trainer's steps, the schedule's position and
 *     estimates, the shuffling RNG, the epoch, the rows read in it and the
 *     reader's counters, the lm carry tokens, the epoch's running sums, and
 *     the best epoch's scores;
 *   - tfm.checkpoint_tensors: per tensor, Adam's moments m and v and (keep
 *     => 'best') the best epoch's values, as raw float4 bytea.
 * The row exists from a run's first checkpoint until it finishes: a row is
 * an interrupted (or still running) run.  Floats are stored bit for bit.
 *
 * State layout (network byte order, pq_send*), version 3 (version 1, read
 * too, lacks the precision: its runs are fp32; versions 1 and 2 lack the
 * plan: their runs go on without early stopping, with the model's dropout):
 *   int32 magic 'TFMC', int32 version,
 *   options: int32 epochs, batch, accumulate, batch_tokens, keep, chunk_rows;
 *            int64 max_steps, time_limit_us; int8 warmup_auto; float4 val_fraction;
 *            optimizer: float4 lr; int32 schedule; int64 warmup, total_steps;
 *            float4 clip, label_smoothing, beta1, beta2, eps, weight_decay;
 *            int8 decoupled; int64 seed; int32 precision (0 fp32, 1 bf16),
 *   trainer: int64 step, adam_step; float4 last_lr; float8 last_norm,
 *   schedule: int64 rows, steps_per_epoch_est, epoch_total; float8 fit_base_s;
 *             int64 elapsed_us,
 *   epoch: int32 epoch; int8 at_epoch_start; int64 rows_done, val_rows,
 *          val_tokens, skipped_null, truncated; float8 loss_sum;
 *          int64 loss_count, tokens, epoch_steps; float8 epoch_secs;
 *          int32 checkpoints; int8 stop, nonfinite,
 *   rng: 4 × int64,
 *   carry: int32 n, n × int32,
 *   best: int32 best_epoch; float8 best_acc, best_loss,
 *   plan (3): int32 patience, val_source; int64 val_units; int8 auto_dropout,
 *             auto_wd; float8 planned_passes; float4 dropout; int64 eval_every,
 *   evaluations (3): int32 best_checkpoint; int64 best_step; int32 evaluations,
 *             since_best; int64 last_eval_step; float8 last_val_loss,
 *             last_val_acc; int8 early_stop.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "runtime/checkpoint.h"

#define TFM_CHECKPOINT_MAGIC 0x54464D43	/* 'TFMC' */

static const char *const schedule_names[] = {"constant", "linear", "cosine", "inverse_sqrt"};

static const char *
schedule_name(tfm_schedule s)
{
	switch (s)
	{
		case TFM_SCHED_CONSTANT:
			return schedule_names[0];
		case TFM_SCHED_LINEAR:
			return schedule_names[1];
		case TFM_SCHED_COSINE:
			return schedule_names[2];
		case TFM_SCHED_INVSQRT:
			return schedule_names[3];
	}
	return "unknown";
}

/* ---- the state record ---------------------------------------------------- */

static bytea *
state_bytes(TrainRun *run, bool epoch_end)
{
	StringInfoData b;
	const tfm_train_opts *o = &run->tr.o;
	bytea	   *out;

	initStringInfo(&b);
	pq_sendint32(&b, TFM_CHECKPOINT_MAGIC);
	pq_sendint32(&b, TFM_CHECKPOINT_VERSION);
	/* options */
	pq_sendint32(&b, run->epochs);
	pq_sendint32(&b, run->batch);
	pq_sendint32(&b, run->accumulate);
	pq_sendint32(&b, run->batch_tokens);
	pq_sendint32(&b, (int32) run->keep);
	pq_sendint32(&b, run->rd.chunk_rows);
	pq_sendint64(&b, run->max_steps);
	pq_sendint64(&b, run->time_limit_us);
	pq_sendint8(&b, run->warmup_auto);
	pq_sendfloat4(&b, run->rd.val_fraction);
	pq_sendfloat4(&b, o->lr);
	pq_sendint32(&b, (int32) o->schedule);
	pq_sendint64(&b, o->warmup);
	pq_sendint64(&b, o->total_steps);
	pq_sendfloat4(&b, o->clip);
	pq_sendfloat4(&b, o->label_smoothing);
	pq_sendfloat4(&b, o->beta1);
	pq_sendfloat4(&b, o->beta2);
	pq_sendfloat4(&b, o->eps);
	pq_sendfloat4(&b, o->weight_decay);
	pq_sendint8(&b, o->decoupled);
	pq_sendint64(&b, (int64) o->seed);
	pq_sendint32(&b, (int32) o->precision);
	/* trainer */
	pq_sendint64(&b, run->tr.step);
	pq_sendint64(&b, run->tr.opt.step);
	pq_sendfloat4(&b, run->tr.last_lr);
	pq_sendfloat8(&b, run->tr.last_norm);
	/* schedule */
	pq_sendint64(&b, run->rows);
	pq_sendint64(&b, run->steps_per_epoch_est);
	pq_sendint64(&b, run->epoch_total);
	pq_sendfloat8(&b, run->fit_base_s);
	pq_sendint64(&b, GetCurrentTimestamp() - run->clock_start);
	/* epoch */
	pq_sendint32(&b, epoch_end ? run->epoch + 1 : run->epoch);
	pq_sendint8(&b, epoch_end);
	pq_sendint64(&b, epoch_end ? 0 : run->rd.row_number);
	pq_sendint64(&b, run->rd.val_rows);
	pq_sendint64(&b, run->rd.val_tokens);
	pq_sendint64(&b, run->rd.skipped_null);
	pq_sendint64(&b, run->rd.truncated);
	pq_sendfloat8(&b, run->loss_sum);
	pq_sendint64(&b, run->loss_count);
	pq_sendint64(&b, run->tokens);
	pq_sendint64(&b, run->epoch_steps);
	pq_sendfloat8(&b, run->epoch_secs_before +
				  (double) (GetCurrentTimestamp() - run->epoch_started) / 1e6);
	pq_sendint32(&b, run->checkpoints);
	pq_sendint8(&b, run->stop);
	pq_sendint8(&b, run->nonfinite);
	for (int i = 0; i < 4; i++)
		pq_sendint64(&b, (int64) run->rng.s[i]);
	pq_sendint32(&b, epoch_end ? 0 : (int32) run->ncarry);
	for (int i = 0; !epoch_end && i < run->ncarry; i++)
		pq_sendint32(&b, run->carry[i]);
	pq_sendint32(&b, run->best_epoch);
	pq_sendfloat8(&b, run->best_acc);
	pq_sendfloat8(&b, run->best_loss);
	pq_sendint32(&b, run->patience);
	pq_sendint32(&b, (int32) run->val_source);
	pq_sendint64(&b, run->val_units);
	pq_sendint8(&b, run->auto_dropout);
	pq_sendint8(&b, run->auto_wd);
	pq_sendfloat8(&b, run->planned_passes);
	pq_sendfloat4(&b, run->m->cfg.dropout);
	pq_sendint64(&b, run->eval_every);
	pq_sendint32(&b, run->best_checkpoint);
	pq_sendint64(&b, run->best_step);
	pq_sendint32(&b, run->evaluations);
	pq_sendint32(&b, run->since_best);
	pq_sendint64(&b, run->last_eval_step);
	pq_sendfloat8(&b, run->last_val_loss);
	pq_sendfloat8(&b, run->last_val_acc);
	pq_sendint8(&b, run->early_stop);

	out = palloc(VARHDRSZ + b.len);
	SET_VARSIZE(out, VARHDRSZ + b.len);
	memcpy(VARDATA(out), b.data, b.len);
	pfree(b.data);
	return out;
}

/* the state's fields for the rest of the restore */
typedef struct Restored
{
	int64		tr_step,
				adam_step;
	float		last_lr;
	double		last_norm;
	int64		elapsed_us;
	bool		at_epoch_start;
	int64		rows_done,
				val_rows,
				val_tokens,
				skipped_null,
				truncated;
	int32	   *carry;
	int			ncarry;
	float		dropout;		/* the run's (its plan's, or the model's) */
} Restored;

static void
bad_state(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the checkpoint of model \"%s\" is damaged", name),
			 errhint("Start afresh with CALL tfm_fit(...) without resume.")));
}

static void
read_state(TrainRun *run, tfm_train_opts *o, Restored *r, bytea *state)
{
	StringInfoData b;
	int			version;

	b.data = VARDATA_ANY(state);
	b.len = VARSIZE_ANY_EXHDR(state);
	b.maxlen = b.len;
	b.cursor = 0;
	if (b.len < 8 || (uint32) pq_getmsgint(&b, 4) != TFM_CHECKPOINT_MAGIC)
		bad_state(run->row.name);
	version = pq_getmsgint(&b, 4);
	if (version < 1 || version > TFM_CHECKPOINT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the checkpoint of model \"%s\" has state version %d, this tfm reads version %d",
						run->row.name, version, TFM_CHECKPOINT_VERSION),
				 errhint("Start afresh with CALL tfm_fit(...) without resume.")));
	memset(o, 0, sizeof(*o));
	memset(r, 0, sizeof(*r));
	run->epochs = pq_getmsgint(&b, 4);
	run->batch = pq_getmsgint(&b, 4);
	run->accumulate = pq_getmsgint(&b, 4);
	run->batch_tokens = pq_getmsgint(&b, 4);
	run->keep = (TfmKeep) pq_getmsgint(&b, 4);
	run->rd.chunk_rows = pq_getmsgint(&b, 4);
	run->max_steps = pq_getmsgint64(&b);
	run->time_limit_us = pq_getmsgint64(&b);
	run->warmup_auto = pq_getmsgbyte(&b) != 0;
	run->rd.val_fraction = pq_getmsgfloat4(&b);
	o->lr = pq_getmsgfloat4(&b);
	o->schedule = (tfm_schedule) pq_getmsgint(&b, 4);
	o->warmup = pq_getmsgint64(&b);
	o->total_steps = pq_getmsgint64(&b);
	o->clip = pq_getmsgfloat4(&b);
	o->label_smoothing = pq_getmsgfloat4(&b);
	o->beta1 = pq_getmsgfloat4(&b);
	o->beta2 = pq_getmsgfloat4(&b);
	o->eps = pq_getmsgfloat4(&b);
	o->weight_decay = pq_getmsgfloat4(&b);
	o->decoupled = pq_getmsgbyte(&b) != 0;
	o->seed = (uint64) pq_getmsgint64(&b);
	o->precision = version >= 2 ? (tfm_precision) pq_getmsgint(&b, 4) : TFM_PREC_FP32;
	if (o->precision != TFM_PREC_FP32 && o->precision != TFM_PREC_BF16)
		bad_state(run->row.name);
	r->tr_step = pq_getmsgint64(&b);
	r->adam_step = pq_getmsgint64(&b);
	r->last_lr = pq_getmsgfloat4(&b);
	r->last_norm = pq_getmsgfloat8(&b);
	run->rows = pq_getmsgint64(&b);
	run->steps_per_epoch_est = pq_getmsgint64(&b);
	run->epoch_total = pq_getmsgint64(&b);
	run->fit_base_s = pq_getmsgfloat8(&b);
	r->elapsed_us = pq_getmsgint64(&b);
	run->epoch = pq_getmsgint(&b, 4);
	r->at_epoch_start = pq_getmsgbyte(&b) != 0;
	r->rows_done = pq_getmsgint64(&b);
	r->val_rows = pq_getmsgint64(&b);
	r->val_tokens = pq_getmsgint64(&b);
	r->skipped_null = pq_getmsgint64(&b);
	r->truncated = pq_getmsgint64(&b);
	run->loss_sum = pq_getmsgfloat8(&b);
	run->loss_count = pq_getmsgint64(&b);
	run->tokens = pq_getmsgint64(&b);
	run->epoch_steps = pq_getmsgint64(&b);
	run->epoch_secs_before = pq_getmsgfloat8(&b);
	run->checkpoints = pq_getmsgint(&b, 4);
	run->stop = pq_getmsgbyte(&b) != 0;
	run->nonfinite = pq_getmsgbyte(&b) != 0;
	for (int i = 0; i < 4; i++)
		run->rng.s[i] = (uint64) pq_getmsgint64(&b);
	r->ncarry = pq_getmsgint(&b, 4);
	if (r->ncarry < 0 || r->ncarry > run->row.cfg.max_len)
		bad_state(run->row.name);
	r->carry = palloc(sizeof(int32) * (r->ncarry + 1));
	for (int i = 0; i < r->ncarry; i++)
		r->carry[i] = pq_getmsgint(&b, 4);
	run->best_epoch = pq_getmsgint(&b, 4);
	run->best_acc = pq_getmsgfloat8(&b);
	run->best_loss = pq_getmsgfloat8(&b);
	r->dropout = run->row.cfg.dropout;
	run->val_source = TFM_VAL_GIVEN;
	run->best_step = -1;
	if (version >= 3)
	{
		run->patience = pq_getmsgint(&b, 4);
		run->val_source = (TfmValSource) pq_getmsgint(&b, 4);
		run->val_units = pq_getmsgint64(&b);
		run->auto_dropout = pq_getmsgbyte(&b) != 0;
		run->auto_wd = pq_getmsgbyte(&b) != 0;
		run->planned_passes = pq_getmsgfloat8(&b);
		r->dropout = pq_getmsgfloat4(&b);
		run->eval_every = pq_getmsgint64(&b);
		run->best_checkpoint = pq_getmsgint(&b, 4);
		run->best_step = pq_getmsgint64(&b);
		run->evaluations = pq_getmsgint(&b, 4);
		run->since_best = pq_getmsgint(&b, 4);
		run->last_eval_step = pq_getmsgint64(&b);
		run->last_val_loss = pq_getmsgfloat8(&b);
		run->last_val_acc = pq_getmsgfloat8(&b);
		run->early_stop = pq_getmsgbyte(&b) != 0;
	}
	pq_getmsgend(&b);
	if (run->patience < 0 || (int) run->val_source < 0 || (int) run->val_source > 2 ||
		!(r->dropout >= 0.0f && r->dropout < 1.0f) || run->eval_every < 0)
		bad_state(run->row.name);
	if (run->epochs < 1 || run->batch < 1 || run->accumulate < 1 || run->accumulate > TFM_ACCUMULATE_MAX ||
		run->rd.chunk_rows < 1 || run->epoch < 1 || r->rows_done < 0 ||
		(int) o->schedule < 0 || (int) o->schedule > 3 || run->best_epoch < 0)
		bad_state(run->row.name);
}

/* ---- tensors ------------------------------------------------------------- */

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
write_tensors(TrainRun *run)
{
	static const char *upsert =
		"INSERT INTO tfm.checkpoint_tensors (model_id, name, adam_m, adam_v, best) "
		"VALUES ($1, $2, $3, $4, $5) ON CONFLICT (model_id, name) DO UPDATE SET "
		"adam_m = EXCLUDED.adam_m, adam_v = EXCLUDED.adam_v, best = EXCLUDED.best";
	Oid			types[5] = {INT4OID, TEXTOID, BYTEAOID, BYTEAOID, BYTEAOID};
	const tfm_model *m = run->m;
	SPIPlanPtr	plan = SPI_prepare(upsert, 5, types);

	if (!plan)
		elog(ERROR, "cannot prepare the checkpoint upsert: %s", SPI_result_code_string(SPI_result));
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		Datum		args[5];
		char		nulls[5] = "     ";
		bytea	   *mb = floats_bytea(run->tr.opt.m + p->offset, p->size);
		bytea	   *vb = floats_bytea(run->tr.opt.v + p->offset, p->size);
		bytea	   *bb = NULL;

		CHECK_FOR_INTERRUPTS();
		args[0] = Int32GetDatum(run->row.id);
		args[1] = CStringGetTextDatum(p->name);
		args[2] = PointerGetDatum(mb);
		args[3] = PointerGetDatum(vb);
		if (run->best_epoch > 0 && run->best_params)
		{
			bb = floats_bytea(run->best_params + p->offset, p->size);
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

static void
copy_floats(TrainRun *run, const char *tensor, Datum d, float *dst, size_t n)
{
	bytea	   *b = DatumGetByteaPP(d);

	if (VARSIZE_ANY_EXHDR(b) != n * sizeof(float))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of tensor \"%s\" of model \"%s\" does not match its config",
						tensor, run->row.name)));
	memcpy(dst, VARDATA_ANY(b), n * sizeof(float));
}

static void
read_tensors(TrainRun *run)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(run->row.id)};
	tfm_model  *m = run->m;
	int			seen = 0;
	TfmAsOwner	as;
	/* the best evaluation's weights: kept only with keep => 'best' */
	bool		best = run->best_epoch > 0 && run->keep == TFM_KEEP_BEST;

	if (best)
		run->best_params = MemoryContextAllocExtended(run->cxt, sizeof(float) * m->n_floats,
													  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT name, adam_m, adam_v, best FROM tfm.checkpoint_tensors "
							  "WHERE model_id = $1", 1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.checkpoint_tensors");
	for (uint64 i = 0; i < SPI_processed; i++)
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
		if (!p || n2 || n3 || (best && n4))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the checkpoint of model \"%s\" does not match its config at tensor \"%s\"",
							run->row.name, name)));
		copy_floats(run, name, dm, run->tr.opt.m + p->offset, p->size);
		copy_floats(run, name, dv, run->tr.opt.v + p->offset, p->size);
		if (best)
			copy_floats(run, name, db, run->best_params + p->offset, p->size);
		seen++;
	}
	tfm_spi_finish_owner(&as);
	if (seen != m->n_tensors)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the checkpoint of model \"%s\" holds %d of its %d tensors",
						run->row.name, seen, m->n_tensors)));
}

/* ---- the checkpoint's life ----------------------------------------------- */

void
tfm_checkpoint_forget(const TfmModelRow *row)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(row->id)};
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("DELETE FROM tfm.checkpoints WHERE model_id = $1 "
							  "RETURNING run_started::text, epoch, steps",
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "cannot read tfm.checkpoints");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;

		ereport(NOTICE,
				(errmsg("model \"%s\" was last trained by an interrupted run; this run starts afresh",
						row->name),
				 errdetail("Its last checkpoint, in epoch %s after %s steps, is discarded now.",
						   SPI_getvalue(tup, td, 2), SPI_getvalue(tup, td, 3)),
				 errhint("To continue such a run instead, CALL tfm_fit('%s', query, resume => true) before training the model otherwise.",
						 row->name)));
	}
	tfm_spi_finish_owner(&as);
}

void
tfm_checkpoint_delete(const TfmModelRow *row)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(row->id)};
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("DELETE FROM tfm.checkpoints WHERE model_id = $1",
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "cannot write tfm.checkpoints");
	tfm_spi_finish_owner(&as);
}

void
tfm_checkpoint_write(TrainRun *run, bool epoch_end)
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
	const tfm_train_opts *o = &run->tr.o;
	char	   *options;
	TfmAsOwner	as;

	/* from here on, allocations go with the SPI connection */
	tfm_spi_connect_owner(&as);
	options = psprintf("{\"epochs\": %d, \"batch_size\": %d, \"lr\": %.9g, \"warmup\": %lld, "
					   "\"warmup_auto\": %s, \"schedule\": \"%s\", \"weight_decay\": %.9g, "
					   "\"clip\": %.9g, \"label_smoothing\": %.9g, \"val_fraction\": %.9g, "
					   "\"seed\": %lld, \"time_limit_s\": %.6f, \"max_steps\": %lld, "
					   "\"accumulate\": %d, \"batch_tokens\": %d, \"keep\": \"%s\", "
					   "\"chunk_rows\": %d, \"precision\": \"%s\", \"patience\": %d, "
					   "\"dropout\": %.9g}",
					   run->epochs, run->batch, o->lr, (long long) o->warmup,
					   run->warmup_auto ? "true" : "false", schedule_name(o->schedule),
					   o->weight_decay, o->clip, o->label_smoothing, run->rd.val_fraction,
					   (long long) o->seed, run->time_limit_us / 1e6, (long long) run->max_steps,
					   run->accumulate, run->batch_tokens,
					   run->keep == TFM_KEEP_BEST ? "best" : "last", run->rd.chunk_rows,
					   tfm_precision_name(o->precision), run->patience, run->m->cfg.dropout);
	args[0] = Int32GetDatum(run->row.id);
	args[1] = TimestampTzGetDatum(run->started);
	args[2] = Int64GetDatum(run->row.version);
	args[3] = Int32GetDatum(epoch_end ? run->epoch + 1 : run->epoch);
	args[4] = Int64GetDatum(epoch_end ? 0 : run->rd.row_number);
	args[5] = Int64GetDatum(run->tr.step);
	args[6] = CStringGetTextDatum(run->query);
	args[7] = CStringGetTextDatum(options);
	args[8] = PointerGetDatum(state_bytes(run, epoch_end));
	args[9] = ObjectIdGetDatum(as.save_uid);	/* the role whose query this is */
	if (SPI_execute_with_args(upsert, 10, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "cannot write tfm.checkpoints");
	write_tensors(run);
	tfm_spi_finish_owner(&as);
}

void
tfm_checkpoint_resume(TrainRun *run, const char *query)
{
	bool		query_given = query != NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(run->row.id)};
	MemoryContext cxt = CurrentMemoryContext;
	tfm_train_opts o;
	Restored	r;
	bytea	   *state;
	int64		version;
	bool		isnull;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT model_version, run_started, query, state, "
							  "EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = c.pid "
							  "        AND a.pid <> pg_backend_pid() AND a.state = 'active' "
							  "        AND a.query LIKE 'tfm\\_fit %'), started_by "
							  "FROM tfm.checkpoints c WHERE model_id = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.checkpoints");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" has no interrupted run to resume", run->row.name),
				 errhint("CALL tfm_fit without resume starts a run.")));
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;
		MemoryContext old;

		if (DatumGetBool(SPI_getbinval(tup, td, 5, &isnull)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the run of model \"%s\" is still going", run->row.name),
					 errhint("See tfm.progress; resume a run once it has stopped.")));
		/*
		 * The stored query runs as the role resuming: only the role that
		 * started the run resumes it without naming the query itself.
		 */
		if (!query_given &&
			DatumGetObjectId(SPI_getbinval(tup, td, 6, &isnull)) != as.save_uid)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the interrupted run of model \"%s\" was started by another role", run->row.name),
					 errdetail("Its query would run with your rights."),
					 errhint("Resume it as that role, or pass the query yourself: CALL tfm_fit('%s', query, resume => true).",
							 run->row.name)));
		version = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		run->started = DatumGetTimestampTz(SPI_getbinval(tup, td, 2, &isnull));
		run->query = MemoryContextStrdup(run->cxt,
										 TextDatumGetCString(SPI_getbinval(tup, td, 3, &isnull)));
		/* before anything runs: a query given must be the run's own, to the byte */
		if (query_given && strcmp(query, run->query) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the query differs from the one of model \"%s\"'s interrupted run",
							run->row.name),
					 errdetail("The interrupted run read: %s", run->query),
					 errhint("Resume with the same query, or with query => NULL.")));
		old = MemoryContextSwitchTo(cxt);
		state = DatumGetByteaPCopy(SPI_getbinval(tup, td, 4, &isnull));
		MemoryContextSwitchTo(old);
	}
	tfm_spi_finish_owner(&as);
	if (version != run->row.version)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" was saved since its interrupted run's last checkpoint", run->row.name),
				 errdetail("The checkpoint holds version %lld of the weights; the model is at version %lld.",
						   (long long) version, (long long) run->row.version),
				 errhint("Start afresh with CALL tfm_fit(...) without resume.")));
	read_state(run, &o, &r, state);

	/* the optimizer as it was */
	tfm_run_begin_resumed(run, &o);
	run->tr.step = r.tr_step;
	run->tr.opt.step = r.adam_step;
	run->tr.last_lr = r.last_lr;
	run->tr.last_norm = r.last_norm;
	run->steps_before = r.tr_step;
	run->clock_start = GetCurrentTimestamp() - r.elapsed_us;
	read_tensors(run);

	/* the run's dropout, and its validation set read again */
	tfm_run_apply_dropout(run, r.dropout);
	tfm_run_read_val(run);

	/* where the data was: the row after the last one consumed */
	if (!r.at_epoch_start)
	{
		tfm_reader_open_at(&run->rd, r.rows_done);
		run->rd.val_rows = r.val_rows;
		run->rd.val_tokens = r.val_tokens;
		run->rd.skipped_null = r.skipped_null;
		run->rd.truncated = r.truncated;
		run->ncarry = r.ncarry;
		memcpy(run->carry, r.carry, sizeof(int32) * r.ncarry);
		run->epoch_started = GetCurrentTimestamp();
		run->resume_epoch = true;
	}
}
