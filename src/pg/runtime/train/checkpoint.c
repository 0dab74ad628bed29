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
 * This file makes and reads the state record and checks a resume; the rows
 * are read and written by storage/models/checkpoints.c.
 *
 * State layout (network byte order, pq_send*), version 4 (version 1, read
 * too, lacks the precision: its runs are fp32; versions 1 and 2 lack the
 * plan: their runs go on without early stopping, with the model's dropout;
 * versions 1 to 3 lack checkpoint_activations: their runs keep every
 * layer's activations):
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
 *             last_val_acc; int8 early_stop,
 *   memory (4): int8 checkpoint_activations.
 */
#include "postgres.h"

#include <math.h>

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "runtime/train/checkpoint.h"
#include "runtime/train/train_plan.h"
#include "storage/models/checkpoints.h"
#include "storage/models/models.h"

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
	pq_sendint8(&b, o->checkpoint_activations);

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
	if (version >= 4)
		o->checkpoint_activations = pq_getmsgbyte(&b) != 0;
	pq_getmsgend(&b);
	if (run->patience < 0 || (int) run->val_source < 0 || (int) run->val_source > 2 ||
		!(r->dropout >= 0.0f && r->dropout < 1.0f) || run->eval_every < 0)
		bad_state(run->row.name);
	if (run->epochs < 1 || run->batch < 1 || run->accumulate < 1 || run->accumulate > TFM_ACCUMULATE_MAX ||
		run->rd.chunk_rows < 1 || run->epoch < 1 || r->rows_done < 0 ||
		(int) o->schedule < 0 || (int) o->schedule > 3 || run->best_epoch < 0)
		bad_state(run->row.name);
}

/* the optimizer's moments and the best epoch's values, as stored */
static TfmCheckpointTensors
run_tensors(TrainRun *run)
{
	TfmCheckpointTensors t;

	t.m = run->m;
	t.adam_m = run->tr.opt.m;
	t.adam_v = run->tr.opt.v;
	t.best = run->best_epoch > 0 ? run->best_params : NULL;	/* NULL unless keep => 'best' */
	return t;
}

/* ---- the checkpoint's life ----------------------------------------------- */

void
tfm_checkpoint_forget(const TfmModelRow *row)
{
	char	   *epoch,
			   *steps;

	if (tfm_checkpoint_remove(row->id, &epoch, &steps))
		ereport(NOTICE,
				(errmsg("model \"%s\" was last trained by an interrupted run; this run starts afresh",
						row->name),
				 errdetail("Its last checkpoint, in epoch %s after %s steps, is discarded now.",
						   epoch, steps),
				 errhint("To continue such a run instead, CALL tfm_fit('%s', query, resume => true) before training the model otherwise.",
						 row->name)));
}

void
tfm_checkpoint_delete(const TfmModelRow *row)
{
	(void) tfm_checkpoint_remove(row->id, NULL, NULL);
}

/* the resolved options, as jsonb text for people */
static char *
options_json(const TrainRun *run)
{
	const tfm_train_opts *o = &run->tr.o;

	return psprintf("{\"epochs\": %d, \"batch_size\": %d, \"lr\": %.9g, \"warmup\": %lld, "
					"\"warmup_auto\": %s, \"schedule\": \"%s\", \"weight_decay\": %.9g, "
					"\"clip\": %.9g, \"label_smoothing\": %.9g, \"val_fraction\": %.9g, "
					"\"seed\": %lld, \"time_limit_s\": %.6f, \"max_steps\": %lld, "
					"\"accumulate\": %d, \"batch_tokens\": %d, \"keep\": \"%s\", "
					"\"chunk_rows\": %d, \"precision\": \"%s\", \"patience\": %d, "
					"\"dropout\": %.9g, \"checkpoint_activations\": %s}",
					run->epochs, run->batch, o->lr, (long long) o->warmup,
					run->warmup_auto ? "true" : "false", schedule_name(o->schedule),
					o->weight_decay, o->clip, o->label_smoothing, run->rd.val_fraction,
					(long long) o->seed, run->time_limit_us / 1e6, (long long) run->max_steps,
					run->accumulate, run->batch_tokens,
					run->keep == TFM_KEEP_BEST ? "best" : "last", run->rd.chunk_rows,
					tfm_precision_name(o->precision), run->patience, run->m->cfg.dropout,
					o->checkpoint_activations ? "true" : "false");
}

void
tfm_checkpoint_write(TrainRun *run, bool epoch_end)
{
	TfmCheckpointRow c;
	TfmCheckpointTensors t = run_tensors(run);

	memset(&c, 0, sizeof(c));
	c.model_id = run->row.id;
	c.run_started = run->started;
	c.model_version = run->row.version;
	c.epoch = epoch_end ? run->epoch + 1 : run->epoch;
	c.rows_done = epoch_end ? 0 : run->rd.row_number;
	c.steps = run->tr.step;
	c.query = run->query;
	c.options = options_json(run);
	c.state = state_bytes(run, epoch_end);
	tfm_checkpoint_store(&c, &t);
	pfree(c.options);
	pfree(c.state);
}

void
tfm_checkpoint_resume(TrainRun *run, const char *query)
{
	tfm_train_opts o;
	Restored	r;
	TfmCheckpointRow c;
	TfmCheckpointTensors t;

	if (!tfm_checkpoint_fetch(run->row.id, &c))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" has no interrupted run to resume", run->row.name),
				 errhint("CALL tfm_fit without resume starts a run.")));
	if (c.running)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("the run of model \"%s\" is still going", run->row.name),
				 errhint("See tfm.progress; resume a run once it has stopped.")));
	/*
	 * The stored query runs as the role resuming: only the role that started
	 * the run resumes it without naming the query itself.
	 */
	if (query == NULL && c.started_by != GetUserId())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the interrupted run of model \"%s\" was started by another role", run->row.name),
				 errdetail("Its query would run with your rights."),
				 errhint("Resume it as that role, or pass the query yourself: CALL tfm_fit('%s', query, resume => true).",
						 run->row.name)));
	run->started = c.run_started;
	run->query = MemoryContextStrdup(run->cxt, c.query);
	/* before anything runs: a query given must be the run's own, to the byte */
	if (query != NULL && strcmp(query, run->query) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query differs from the one of model \"%s\"'s interrupted run",
						run->row.name),
				 errdetail("The interrupted run read: %s", run->query),
				 errhint("Resume with the same query, or with query => NULL.")));
	if (c.model_version != run->row.version)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" was saved since its interrupted run's last checkpoint", run->row.name),
				 errdetail("The checkpoint holds version %lld of the weights; the model is at version %lld.",
						   (long long) c.model_version, (long long) run->row.version),
				 errhint("Start afresh with CALL tfm_fit(...) without resume.")));
	read_state(run, &o, &r, c.state);

	/* the optimizer as it was */
	tfm_run_begin_resumed(run, &o);
	run->tr.step = r.tr_step;
	run->tr.opt.step = r.adam_step;
	run->tr.last_lr = r.last_lr;
	run->tr.last_norm = r.last_norm;
	run->steps_before = r.tr_step;
	run->clock_start = GetCurrentTimestamp() - r.elapsed_us;
	/* the best evaluation's weights: kept only with keep => 'best' */
	if (run->best_epoch > 0 && run->keep == TFM_KEEP_BEST)
		run->best_params = MemoryContextAllocExtended(run->cxt, sizeof(float) * run->m->n_floats,
													  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	t = run_tensors(run);
	tfm_checkpoint_fetch_tensors(run->row.id, run->row.name, &t);

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
