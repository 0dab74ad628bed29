/*
 * job.c — jobs: a source table's rows turned into a destination table of
 * model outputs, kept current.
 *
 *   tfm_job_create(name, source, input, model, task, destination, options)
 *   CALL tfm_job_run(name, batches)
 *   tfm_job_pause(name), tfm_job_resume(name), tfm_job_drop(name, drop_destination)
 *
 * The wrappers: creating a job is runtime/jobs/job_create.c's (the checks, the
 * destination, the triggers, the backfill), running one runtime/jobs/job_run.c's
 * (the batches, one transaction each; also what tfm's background workers
 * run), its triggers sql/jobs/job_trigger.c's.  Running, pausing or dropping a
 * job needs the owner's privileges; a job's triggers are dropped as the
 * owner of schema tfm, its destination with the caller's rights.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "runtime/jobs/job_create.h"
#include "runtime/jobs/job_run.h"
#include "runtime/jobs/job_slots.h"
#include "sql/args.h"
#include "sql/infer/embed_chunks.h"
#include "storage/jobs/jobs.h"

/* the quoted schema of the calling function: tfm's */
static const char *
fn_schema(FunctionCallInfo fcinfo)
{
	return quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
}

PG_FUNCTION_INFO_V1(tfm_job_run);
Datum
tfm_job_run(PG_FUNCTION_ARGS)
{
	CallContext *call = (CallContext *) fcinfo->context;
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	const char *schema = fn_schema(fcinfo);

	if (call == NULL || !IsA(call, CallContext) || call->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("tfm_job_run cannot run inside a transaction block"),
				 errdetail("tfm_job_run commits after every batch."),
				 errhint("CALL tfm_job_run outside BEGIN ... COMMIT and not from a function.")));
	tfm_job_run_batches(name, schema, PG_ARGISNULL(1) ? -1 : PG_GETARG_INT32(1), true, 0, NULL);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_job_create);
Datum
tfm_job_create(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *input = tfm_text_arg(fcinfo, 2, "input");
	char	   *model = tfm_text_arg(fcinfo, 3, "model");
	char	   *task = tfm_text_arg(fcinfo, 4, "task");
	Jsonb	   *options;

	TFM_ARG_NOT_NULL(1, "source");
	options = PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6);
	PG_RETURN_OID(tfm_job_make(fn_schema(fcinfo), name, PG_GETARG_OID(1), input, model, task,
							   !PG_ARGISNULL(5), PG_ARGISNULL(5) ? InvalidOid : PG_GETARG_OID(5),
							   options, tfm_check_chunking));
}

/* ---- pause, resume, drop -------------------------------------------------- */

static void
set_state(FunctionCallInfo fcinfo, bool paused)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	TfmJob		job;

	SPI_connect();
	tfm_job_read(name, &job, false);
	tfm_job_check_owner(&job, paused ? "pause" : "resume");
	tfm_job_set_state(job.id, paused);
	SPI_finish();
	if (!paused)
		tfm_job_workers_wake_at_commit();
}

PG_FUNCTION_INFO_V1(tfm_job_pause);
Datum
tfm_job_pause(PG_FUNCTION_ARGS)
{
	set_state(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_job_resume);
Datum
tfm_job_resume(PG_FUNCTION_ARGS)
{
	set_state(fcinfo, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_job_drop);
Datum
tfm_job_drop(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	bool		drop_dest = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	TfmJob		job;

	SPI_connect();
	tfm_job_read(name, &job, false);
	tfm_job_check_owner(&job, "drop");
	/* the job's rows before the source's triggers: runs lock in this order */
	tfm_job_delete(job.id);
	if (get_rel_name(job.source) != NULL)
	{
		/* DROP TRIGGER needs the table's ownership: as the owner of schema tfm */
		char	   *src = tfm_job_rel_sql(job.source, "source", name);
		TfmAsOwner	as;

		tfm_as_owner_begin(&as);
		if (SPI_execute(psprintf("DROP TRIGGER IF EXISTS tfm_job_%d ON %s", job.id, src), false, 0) != SPI_OK_UTILITY ||
			SPI_execute(psprintf("DROP TRIGGER IF EXISTS tfm_job_%d_truncate ON %s", job.id, src), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot drop the triggers of job \"%s\"", name);
		tfm_as_owner_end(&as);
	}
	if (drop_dest && get_rel_name(job.dest) != NULL)
	{
		/* with the caller's rights, as DROP TABLE would */
		if (SPI_execute(psprintf("DROP TABLE %s", tfm_job_rel_sql(job.dest, "destination", name)), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot drop the destination of job \"%s\"", name);
	}
	SPI_finish();
	PG_RETURN_VOID();
}
