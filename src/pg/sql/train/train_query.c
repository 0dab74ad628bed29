/*
 * train_query.c — tfm_train(model, query, ...): train a model on a query's rows in
 * one statement (the run itself: runtime/train/train_loop.c).
 *
 * Saves and transactions: the weights are written to tfm.tensors at the end
 * of every epoch, in the statement's transaction: if the statement fails or
 * is cancelled, everything it saved rolls back and the model is exactly as
 * it was before the call.  CALL tfm_fit (fit.c) is the form that commits as
 * it goes.  The result has one row per epoch; `kept` marks the epoch whose
 * weights the model holds at the end (keep => 'last' or 'best').
 */
#include "postgres.h"

#include <math.h>

#include "executor/spi.h"
#include "funcapi.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "runtime/train/checkpoint.h"
#include "runtime/train/train_options.h"
#include "runtime/train/train_run.h"
#include "sql/args.h"
#include "runtime/runtime.h"

#define A_KEEP A_TRAIN_NARGS
#define A_PRECISION (A_TRAIN_NARGS + 1)
#define A_PATIENCE (A_TRAIN_NARGS + 2)
#define A_CHECKPOINT_ACTS (A_TRAIN_NARGS + 3)

PG_FUNCTION_INFO_V1(tfm_train);
Datum
tfm_train(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = tfm_text_arg(fcinfo, A_MODEL, "model");
	char	   *query = tfm_text_arg(fcinfo, A_QUERY, "query");
	TrainRun   *run = palloc0(sizeof(TrainRun));
	tfm_train_opts o;

	InitMaterializedSRF(fcinfo, 0);
	tfm_backend_ready();
	run->cxt = CurrentMemoryContext;
	run->fn_name = "tfm_train";
	run->query = query;
	tfm_run_take_model(run, model);
	tfm_run_options(fcinfo, run, &o, A_KEEP, A_PRECISION, PG_NARGS() > A_PATIENCE ? A_PATIENCE : -1);
	o.checkpoint_activations = tfm_checkpoint_activations_arg(fcinfo, A_CHECKPOINT_ACTS, false);

	SPI_connect();
	tfm_checkpoint_forget(&run->row);
	tfm_run_begin(run, &o);
	tfm_run_loop(run);
	tfm_run_finish(run, tfm_progress);
	SPI_finish();
	pgstat_report_activity(STATE_RUNNING, "tfm_train: done");

	for (int i = 0; i < run->nresults; i++)
	{
		const TrainEpoch *e = &run->results[i];
		Datum		values[12];
		bool		nulls[12] = {false, false, false, false, false, false, false, false,
		false, false, false, false};

		values[0] = Int32GetDatum(e->epoch);
		values[1] = Int64GetDatum(e->steps);
		values[2] = Float8GetDatum(e->train_loss);
		values[3] = Float8GetDatum(e->val_loss);
		values[4] = Float8GetDatum(e->val_acc);
		values[5] = Float8GetDatum(e->tokens_per_s);
		values[6] = Float8GetDatum(e->seconds);
		values[7] = BoolGetDatum(e->epoch == run->kept_epoch && e->checkpoint == run->kept_checkpoint);
		values[8] = Int64GetDatum(e->val_rows);
		values[9] = Float4GetDatum(e->dropout);
		values[10] = Float4GetDatum(e->weight_decay);
		values[11] = CStringGetTextDatum(e->note);
		nulls[2] = isnan(e->train_loss);
		nulls[3] = isnan(e->val_loss);
		nulls[4] = isnan(e->val_acc);
		/* (older definitions take the first 7 or 8) */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	/* the trained model goes back to the cache under its new version */
	tfm_run_end(run);
	return (Datum) 0;
}
