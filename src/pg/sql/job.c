/*
 * job.c — jobs: a source table's rows turned into a destination table of
 * model outputs, kept current.
 *
 *   tfm_job_create(name, source, input, model, task, destination, options)
 *   CALL tfm_job_run(name, batches)
 *   tfm_job_pause(name), tfm_job_resume(name), tfm_job_drop(name, drop_destination)
 *
 * Creating a job creates the destination (the source's primary-key columns,
 * with chunk, chunk_start, chunk_end for an embedding job that chunks,
 * output, model_version, updated_at; owned by the job's owner, who is the
 * creator), two triggers on the source (sql/job_trigger.c: each changed
 * row's key, and TRUNCATE, into tfm.job_queue; an UPDATE only when it sets
 * a column the input reads or a key column, found by PostgreSQL's analysis
 * of the input: update_columns) and queues every existing
 * key (the backfill is the queue), all in the creating transaction: a row
 * committed before it is in the backfill, one after it fires the trigger.
 *
 * tfm_job_run (tfm_job_run_batches, job.h, for callers in C) drains the
 * queue in batches, one transaction each, through statements prepared once
 * per run: claim keys (storage/jobs.c: FOR UPDATE SKIP LOCKED, then each
 * key's advisory lock), read the source rows and evaluate the input
 * expression, call the task's text[] function once for the batch inside an
 * INSERT ... ON CONFLICT into the destination (one output per key, or per
 * (key, chunk) with tfm_embed_chunks, never two; a key's chunks past its
 * last deleted in the same statement), delete the outputs of rows that are
 * gone, record failures in tfm.job_errors, COMMIT.  A cancel rolls back the
 * batch in flight only: its keys are back in the queue.
 *
 * The run loop, tfm_job_run_batches, is also what tfm's background
 * workers run (runtime/job_worker.c; module.c hands it to them).
 *
 * Rights: everything that reads the source, evaluates the input or calls
 * the model runs as the job's owner (SetUserIdAndSecContext, as a
 * security-restricted operation: the owner's code cannot SET ROLE back to
 * whoever runs the job), with the search_path the job was created with;
 * only the queue, errors and job rows are written as the owner of schema
 * tfm.  Running, pausing or dropping a job needs the owner's privileges.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "tfm/limits.h"
#include "runtime/job_worker.h"
#include "sql/args.h"
#include "sql/embed_chunks.h"
#include "sql/job.h"
#include "storage/jobs.h"

/* ---- SQL fragments -------------------------------------------------------- */

static char *
rel_sql(Oid rel, const char *what, const char *job)
{
	char	   *rn = get_rel_name(rel);

	if (rn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the %s table of job \"%s\" no longer exists", what, job),
				 errhint("Drop the job with tfm_job_drop.")));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(rel)), rn);
}

/* the schema of tfm's functions: the calling function's own (set by each entry point) */
static const char *fn_schema;

static void
set_fn_schema(FunctionCallInfo fcinfo)
{
	fn_schema = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
	fn_schema = MemoryContextStrdup(TopMemoryContext, fn_schema);
}

static const char *
ext_schema(void)
{
	return fn_schema;
}

/* "k1", "k2" (with a prefix: d."k1", ...) */
static char *
key_list(const TfmJob *j, const char *prefix)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%s%s%s", i ? ", " : "", prefix, quote_identifier(j->key_cols[i]));
	return s.data;
}

/* tfm_k.c1::type1 AS "k1", ... */
static char *
key_casts(const TfmJob *j)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%stfm_k.c%d::%s AS %s", i ? ", " : "", i + 1, j->key_types[i],
						 quote_identifier(j->key_cols[i]));
	return s.data;
}

/* pg_catalog.unnest($first::text[]), ... (for ROWS FROM) */
static char *
key_params(const TfmJob *j, int first)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%spg_catalog.unnest($%d::text[])", i ? ", " : "", first + i);
	return s.data;
}

/* c1, c2, ... */
static char *
key_aliases(const TfmJob *j)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%sc%d", i ? ", " : "", i + 1);
	return s.data;
}

/* the source rows of keys $1.. ($1 the first key column's texts): ord, found, input */
static char *
fetch_sql(const TfmJob *j, const char *src)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "SELECT tfm_k.ord, tfm_s.found, tfm_s.input "
					 "FROM ROWS FROM (%s) WITH ORDINALITY AS tfm_k(%s, ord) "
					 "LEFT JOIN LATERAL (SELECT true AS found, (%s\n)::text AS input FROM %s WHERE ",
					 key_params(j, 1), key_aliases(j), j->input, src);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%s%s = tfm_k.c%d::%s", i ? " AND " : "",
						 quote_identifier(j->key_cols[i]), i + 1, j->key_types[i]);
	appendStringInfoString(&s, ") tfm_s ON true");
	return s.data;
}

static const char *
output_type(const char *task)
{
	if (strcmp(task, "embed") == 0)
		return "real[]";
	if (strcmp(task, "predict_proba") == 0)
		return "jsonb";
	return "text";
}

/*
 * The batch's outputs into the destination, upserted by key: $1 model,
 * $2 version, $3 options, $4 inputs text[], $5.. the keys' texts.
 */
static char *
compute_sql(const TfmJob *j, const char *dest)
{
	StringInfoData s;
	const char *ns = ext_schema();
	const char *keys = key_list(j, "");

	initStringInfo(&s);
	if (j->chunk_tokens > 0)
	{
		/*
		 * A text's windows, upserted by (key, chunk); the key's chunks past
		 * its last are deleted (a text that got shorter): the DELETE sees
		 * the rows as they were before the INSERT and touches none it writes.
		 */
		const char *ekeys = key_list(j, "tfm_e.");

		appendStringInfo(&s, "WITH tfm_e AS (SELECT %s, tfm_o.chunk, tfm_o.chunk_start, tfm_o.chunk_end, tfm_o.embedding "
						 "FROM ROWS FROM (%s) WITH ORDINALITY AS tfm_k(%s, ord) "
						 "JOIN %s.tfm_embed_chunks($1, $4, ($3->>'chunk_tokens')::int, "
						 "coalesce(($3->>'chunk_overlap')::int, 0)) AS tfm_o ON tfm_o.ord = tfm_k.ord), ",
						 key_casts(j), key_params(j, 5), key_aliases(j), ns);
		appendStringInfo(&s, "tfm_w AS (INSERT INTO %s AS tfm_d (%s, chunk, chunk_start, chunk_end, output, "
						 "model_version, updated_at) SELECT %s, chunk, chunk_start, chunk_end, embedding, $2, "
						 "pg_catalog.now() FROM tfm_e ON CONFLICT (%s, chunk) DO UPDATE SET "
						 "chunk_start = excluded.chunk_start, chunk_end = excluded.chunk_end, "
						 "output = excluded.output, model_version = excluded.model_version, "
						 "updated_at = excluded.updated_at RETURNING 1), ",
						 dest, keys, ekeys, keys);
		appendStringInfo(&s, "tfm_x AS (DELETE FROM %s AS tfm_d USING (SELECT %s, max(chunk) AS last FROM tfm_e "
						 "GROUP BY %s) AS tfm_m WHERE (%s) = (%s) AND tfm_d.chunk > tfm_m.last) "
						 "SELECT count(*) FROM tfm_w",
						 dest, key_list(j, ""), key_list(j, ""), key_list(j, "tfm_d."), key_list(j, "tfm_m."));
		return s.data;
	}
	appendStringInfo(&s, "INSERT INTO %s AS tfm_d (%s, output, model_version, updated_at) SELECT %s, ",
					 dest, keys, key_casts(j));
	if (strcmp(j->task, "embed") == 0)
		appendStringInfo(&s, "tfm_o.embedding, $2, pg_catalog.now() "
						 "FROM ROWS FROM (%s) WITH ORDINALITY AS tfm_k(%s, ord) "
						 "JOIN %s.tfm_embed($1, $4) AS tfm_o ON tfm_o.ord = tfm_k.ord",
						 key_params(j, 5), key_aliases(j), ns);
	else if (strcmp(j->task, "predict_proba") == 0)
		appendStringInfo(&s, "(SELECT pg_catalog.jsonb_object_agg(p.label, p.probability) "
						 "FROM %s.tfm_predict_proba($1, tfm_k.input) p), $2, pg_catalog.now() "
						 "FROM ROWS FROM (pg_catalog.unnest($4::text[]), %s) AS tfm_k(input, %s)",
						 ns, key_params(j, 5), key_aliases(j));
	else
	{
		const char *call;

		if (strcmp(j->task, "classify") == 0)
			call = psprintf("%s.tfm_classify($1, $4)", ns);
		else if (strcmp(j->task, "generate") == 0)
			call = psprintf("%s.tfm_generate($1, $4, max_tokens => ($3->>'max_tokens')::int, "
							"temperature => ($3->>'temperature')::real, top_k => ($3->>'top_k')::int, "
							"top_p => ($3->>'top_p')::real, seed => ($3->>'seed')::bigint, "
							"stop => $3->>'stop')", ns);
		else
			call = psprintf("%s.tfm_translate($1, $4, beam => ($3->>'beam')::int, "
							"length_penalty => ($3->>'length_penalty')::real, "
							"max_tokens => ($3->>'max_tokens')::int)", ns);
		appendStringInfo(&s, "tfm_k.o, $2, pg_catalog.now() FROM ROWS FROM (%s, pg_catalog.unnest(%s)) AS tfm_k(%s, o)",
						 key_params(j, 5), call, key_aliases(j));
	}
	appendStringInfo(&s, " ON CONFLICT (%s) DO UPDATE SET output = excluded.output, "
					 "model_version = excluded.model_version, updated_at = excluded.updated_at", keys);
	return s.data;
}

/* delete the outputs of keys $1.. */
static char *
delete_sql(const TfmJob *j, const char *dest)
{
	return psprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM ROWS FROM (%s) AS tfm_k(%s))",
					dest, key_list(j, ""), key_casts(j), key_params(j, 1), key_aliases(j));
}

/* ---- running as the job's owner ------------------------------------------- */

typedef struct JobAs
{
	Oid			uid;
	int			sec;
	int			nest;
} JobAs;

static void
owner_begin(const TfmJob *j, JobAs *s)
{
	GetUserIdAndSecContext(&s->uid, &s->sec);
	SetUserIdAndSecContext(j->owner, s->sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	s->nest = NewGUCNestLevel();
	(void) set_config_option("search_path", j->search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	tfm_job_pin_key_settings();
}

static void
owner_end(JobAs *s)
{
	AtEOXact_GUC(true, s->nest);
	SetUserIdAndSecContext(s->uid, s->sec);
}

static void
check_job_owner(const TfmJob *j, const char *doing)
{
	if (!has_privs_of_role(GetUserId(), j->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s job \"%s\"", doing, j->name),
				 errdetail("Only the job's owner (%s), its members and superusers may.",
						   GetUserNameFromId(j->owner, true) ? GetUserNameFromId(j->owner, true) : "?")));
}

/* errors a row may cause (recorded, the job goes on); others stop the run */
static bool
row_error(int code)
{
	switch (ERRCODE_TO_CATEGORY(code))
	{
		case ERRCODE_DATA_EXCEPTION:
		case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
		case ERRCODE_FEATURE_NOT_SUPPORTED:
		case ERRCODE_PLPGSQL_ERROR:
		case ERRCODE_CARDINALITY_VIOLATION:
		case ERRCODE_EXTERNAL_ROUTINE_EXCEPTION:
		case ERRCODE_EXTERNAL_ROUTINE_INVOCATION_EXCEPTION:
		case ERRCODE_SQL_ROUTINE_EXCEPTION:
			return true;
		default:
			return false;
	}
}

/* fn(arg) in a subtransaction; false with the error's message and code if it failed */
static bool
try_sub(void (*fn) (void *), void *arg, char **msg, int *code)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (!row_error(ed->sqlerrcode))
			ReThrowError(ed);
		*msg = ed->message;
		*code = ed->sqlerrcode;
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* ---- a batch -------------------------------------------------------------- */

typedef struct Batch
{
	const TfmJob *job;
	SPIPlanPtr	fetch;			/* saved plans (prepare_batch_plans) */
	SPIPlanPtr	compute;
	SPIPlanPtr	delete;
	int64		version;
	int			n;				/* keys */
	Datum	   *keys;			/* text[] each */
	Datum	  **cols;			/* cols[c][i]: key i's column c, text */
	/* per key */
	bool	   *found;
	char	  **input;
	char	  **error;
	int		   *code;
	/* the subset a call works on: idx[0..m) */
	int		   *idx;
	int			m;
} Batch;

static Datum
col_array(Batch *b, int c)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(b->m, 1));

	for (int i = 0; i < b->m; i++)
		d[i] = b->cols[c][b->idx[i]];
	return PointerGetDatum(construct_array(d, b->m, TEXTOID, -1, false, TYPALIGN_INT));
}

/* the keys of idx[0..m) as text[] per key column into args[first..] */
static void
key_args(Batch *b, Datum *args, int first)
{
	for (int c = 0; c < b->job->nkeys; c++)
		args[first + c] = col_array(b, c);
}

/*
 * The batch's statements, prepared once per run as the job's owner (its
 * search_path and rights) and kept across the run's commits; free with
 * free_batch_plans.  Arguments: fetch the key columns' text[]s; compute
 * $1 model, $2 version, $3 options, $4 inputs, then the key columns;
 * delete the key columns.
 */
static void
prepare_batch_plans(Batch *b, const char *src, const char *dest)
{
	const TfmJob *j = b->job;
	int			nk = j->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (4 + nk));
	JobAs		as;

	types[0] = TEXTOID;
	types[1] = INT8OID;
	types[2] = JSONBOID;
	for (int i = 3; i < 4 + nk; i++)
		types[i] = TEXTARRAYOID;
	owner_begin(j, &as);
	if ((b->fetch = SPI_prepare(fetch_sql(j, src), nk, types + 4)) == NULL ||
		(b->compute = SPI_prepare(compute_sql(j, dest), 4 + nk, types)) == NULL ||
		(b->delete = SPI_prepare(delete_sql(j, dest), nk, types + 4)) == NULL ||
		SPI_keepplan(b->fetch) != 0 || SPI_keepplan(b->compute) != 0 || SPI_keepplan(b->delete) != 0)
		elog(ERROR, "cannot prepare the statements of job \"%s\": %s", j->name,
			 SPI_result_code_string(SPI_result));
	owner_end(&as);
}

static void
free_batch_plans(Batch *b)
{
	if (b->fetch)
		SPI_freeplan(b->fetch);
	if (b->compute)
		SPI_freeplan(b->compute);
	if (b->delete)
		SPI_freeplan(b->delete);
	b->fetch = b->compute = b->delete = NULL;
}

static void
fetch_fn(void *arg)
{
	Batch	   *b = arg;
	Datum	   *args = palloc(sizeof(Datum) * b->job->nkeys);
	MemoryContext cxt = CurrentMemoryContext;
	JobAs		as;

	key_args(b, args, 0);
	owner_begin(b->job, &as);
	if (SPI_execute_plan(b->fetch, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "cannot read the source of job \"%s\"", b->job->name);
	owner_end(&as);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		ord = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		int			i = b->idx[ord - 1];
		MemoryContext old;

		b->found[i] = !isnull && DatumGetBool(SPI_getbinval(tup, td, 2, &isnull)) && !isnull;
		old = MemoryContextSwitchTo(cxt);
		b->input[i] = SPI_getvalue(tup, td, 3);
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(SPI_tuptable);
}

static void
compute_fn(void *arg)
{
	Batch	   *b = arg;
	Datum	   *args = palloc(sizeof(Datum) * (4 + b->job->nkeys));
	Datum	   *in = palloc(sizeof(Datum) * Max(b->m, 1));
	JobAs		as;

	for (int i = 0; i < b->m; i++)
		in[i] = CStringGetTextDatum(b->input[b->idx[i]]);
	args[0] = CStringGetTextDatum(b->job->model);
	args[1] = Int64GetDatum(b->version);
	args[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(b->job->options));
	args[3] = PointerGetDatum(construct_array(in, b->m, TEXTOID, -1, false, TYPALIGN_INT));
	key_args(b, args, 4);
	owner_begin(b->job, &as);
	/* a job that chunks writes through a WITH ... SELECT */
	if (SPI_execute_plan(b->compute, args, NULL, false, 0) !=
		(b->job->chunk_tokens > 0 ? SPI_OK_SELECT : SPI_OK_INSERT))
		elog(ERROR, "cannot write the destination of job \"%s\"", b->job->name);
	owner_end(&as);
}

static void
delete_outputs(Batch *b)
{
	Datum	   *args = palloc(sizeof(Datum) * b->job->nkeys);
	JobAs		as;

	if (b->m == 0)
		return;
	key_args(b, args, 0);
	owner_begin(b->job, &as);
	if (SPI_execute_plan(b->delete, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "cannot delete from the destination of job \"%s\"", b->job->name);
	owner_end(&as);
}

typedef struct RunCounts
{
	int64		done,
				deleted,
				failed;
	char	   *last_error;
} RunCounts;

/* fn over the keys idx[0..m) at once; if a row's error stops it, key by key */
static void
each_or_all(Batch *b, void (*fn) (void *), int *idx, int m)
{
	char	   *msg;
	int			code;

	b->idx = idx;
	b->m = m;
	if (m == 0 || try_sub(fn, b, &msg, &code))
		return;
	for (int k = 0; k < m; k++)
	{
		int			one = idx[k];

		b->idx = &one;
		b->m = 1;
		if (!try_sub(fn, b, &msg, &code))
		{
			b->error[one] = msg;
			b->code[one] = code;
		}
	}
}

static void
run_batch(Batch *b, RunCounts *rc)
{
	int			n = b->n;
	int		   *all = palloc(sizeof(int) * n),
			   *ok = palloc(sizeof(int) * n),
			   *gone = palloc(sizeof(int) * n);
	int			nok = 0,
				ngone = 0,
				nfail = 0;

	for (int i = 0; i < n; i++)
		all[i] = i;
	b->found = palloc0(sizeof(bool) * n);
	b->input = palloc0(sizeof(char *) * n);
	b->error = palloc0(sizeof(char *) * n);
	b->code = palloc0(sizeof(int) * n);

	/* the rows and their inputs (an error in the expression: key by key) */
	each_or_all(b, fetch_fn, all, n);
	for (int i = 0; i < n; i++)
	{
		if (b->error[i] == NULL && b->found[i] && b->input[i] == NULL)
		{
			b->error[i] = "the input is NULL";
			b->code[i] = ERRCODE_NULL_VALUE_NOT_ALLOWED;
		}
		if (b->error[i] != NULL || !b->found[i])
			gone[ngone++] = i;	/* no output: the row is gone or failed */
		else
			ok[nok++] = i;
	}
	/* one call of the task's function for the batch (a row's error: row by row) */
	each_or_all(b, compute_fn, ok, nok);
	for (int k = 0; k < nok; k++)
		if (b->error[ok[k]] != NULL)
			gone[ngone++] = ok[k];
		else
			rc->done++;
	b->idx = gone;
	b->m = ngone;
	delete_outputs(b);
	for (int i = 0; i < n; i++)
	{
		if (b->error[i] != NULL)
		{
			tfm_job_record_error(b->job, b->keys[i], b->error[i], b->code[i]);
			rc->last_error = b->error[i];
			nfail++;
		}
		else if (!b->found[i])
			rc->deleted++;
	}
	rc->failed += nfail;
}

/* split the keys' text[] into columns */
static void
batch_keys(Batch *b)
{
	int			nk = b->job->nkeys;

	b->cols = palloc(sizeof(Datum *) * nk);
	for (int c = 0; c < nk; c++)
		b->cols[c] = palloc(sizeof(Datum) * Max(b->n, 1));
	for (int i = 0; i < b->n; i++)
	{
		Datum	   *e;
		bool	   *nulls;
		int			ne;

		deconstruct_array(DatumGetArrayTypeP(b->keys[i]), TEXTOID, -1, false, TYPALIGN_INT,
						  &e, &nulls, &ne);
		if (ne != nk)
			elog(ERROR, "job \"%s\": a queued key has %d values, not %d", b->job->name, ne, nk);
		for (int c = 0; c < nk; c++)
			b->cols[c][i] = e[c];
	}
}

/* ---- tfm_job_run ---------------------------------------------------------- */

static void
commit(volatile bool *pushed)
{
	if (*pushed)
		PopActiveSnapshot();
	*pushed = false;
	SPI_commit();
	PushActiveSnapshot(GetTransactionSnapshot());
	*pushed = true;
}

/*
 * The run loop (see job.h; a TfmJobRunner, runtime/job_worker.h): CALL
 * tfm_job_run and tfm's background workers (given to them by module.c).
 */
void
tfm_job_run_batches(const char *name, const char *schema, int max_batches, bool check_stale,
					TfmJobRunResult *result)
{
	MemoryContext run_cxt,
				batch_cxt,
				old;
	TfmJob		job;
	RunCounts	rc = {0, 0, 0, NULL};
	volatile bool pushed = false;
	volatile int batches = 0;
	volatile bool more = false;
	TimestampTz start = GetCurrentTimestamp();
	double		secs;
	Batch		b;

	if (max_batches == 0 || max_batches < -1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batches must be positive")));
	run_cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm_job_run", ALLOCSET_DEFAULT_SIZES);
	batch_cxt = AllocSetContextCreate(run_cxt, "tfm_job_run batch", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(run_cxt);
	tfm_backend_ready();
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect_ext failed");
	MemoryContextSwitchTo(run_cxt);
	/* a background worker has no CALL's portal snapshot: our own, popped at the first commit */
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	if (schema == NULL)
	{
		/* called from C without the schema: the extension's, from pg_extension */
		if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
						"JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'tfm'",
						true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "extension tfm is not installed in this database");
		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	}
	/* kept past this run (the statements built later read it) */
	if (fn_schema == NULL || strcmp(fn_schema, schema) != 0)
		fn_schema = MemoryContextStrdup(TopMemoryContext, schema);

	tfm_job_read(name, &job, false);
	check_job_owner(&job, "run");
	memset(&b, 0, sizeof(b));
	b.job = &job;
	if (job.paused)
		ereport(NOTICE,
				(errmsg("job \"%s\" is paused: nothing done", name),
				 errhint("Resume it with tfm_job_resume('%s').", name)));
	else
	{
		char	   *src = rel_sql(job.source, "source", name);
		char	   *dest = rel_sql(job.dest, "destination", name);

		/* the saved plans go at the end, or at an error */
		PG_TRY();
		{
			prepare_batch_plans(&b, src, dest);
			/* a TRUNCATE of the source: the outputs of rows no longer there go */
			if (tfm_job_take_truncates(&job))
			{
				JobAs		as;
				StringInfoData s;

				initStringInfo(&s);
				appendStringInfo(&s, "DELETE FROM %s d WHERE NOT EXISTS (SELECT FROM %s s WHERE ", dest, src);
				for (int i = 0; i < job.nkeys; i++)
					appendStringInfo(&s, "%ss.%s = d.%s", i ? " AND " : "",
									 quote_identifier(job.key_cols[i]), quote_identifier(job.key_cols[i]));
				appendStringInfoChar(&s, ')');
				owner_begin(&job, &as);
				if (SPI_execute(s.data, false, 0) != SPI_OK_DELETE)
					elog(ERROR, "cannot delete from the destination of job \"%s\"", name);
				rc.deleted += SPI_processed;
				owner_end(&as);
			}
			/* outputs of another model version: again (a worker checks when the version moved) */
			if (check_stale && job.reprocess_stale)
			{
				int64		v = tfm_job_model_version(&job);
				int64		n = v < 0 ? 0 : tfm_job_enqueue_stale(&job, dest, v);

				if (n > 0)
					ereport(NOTICE,
							(errmsg("job \"%s\": %lld outputs of another version of model \"%s\" queued again",
									name, (long long) n, job.model)));
			}
			commit(&pushed);

			for (;;)
			{
				bool		paused;
				TfmJob		now;

				MemoryContextReset(batch_cxt);
				MemoryContextSwitchTo(batch_cxt);
				CHECK_FOR_INTERRUPTS();
				/* pausing from another session stops the run here */
				tfm_job_read(name, &now, true);
				paused = now.id != job.id || now.paused;
				if (paused)
					break;
				b.version = tfm_job_model_version(&job);
				b.n = tfm_job_claim(&job, job.batch, &b.keys);
				if (b.n == 0)
					break;
				batch_keys(&b);
				{
					RunCounts	one = {0, 0, 0, NULL};

					run_batch(&b, &one);
					rc.done += one.done;
					rc.deleted += one.deleted;
					rc.failed += one.failed;
					tfm_job_count(&job, one.done, one.deleted, one.failed, one.last_error,
								  start, rc.done + rc.failed);
				}
				pgstat_report_activity(STATE_RUNNING,
									   psprintf("tfm_job_run %s: %lld done, %lld deleted, %lld failed",
												name, (long long) rc.done, (long long) rc.deleted,
												(long long) rc.failed));
				MemoryContextSwitchTo(run_cxt);
				commit(&pushed);
				batches++;
				if (max_batches > 0 && batches >= max_batches)
				{
					more = true;
					break;
				}
			}
		}
		PG_CATCH();
		{
			free_batch_plans(&b);
			PG_RE_THROW();
		}
		PG_END_TRY();
		free_batch_plans(&b);
	}
	MemoryContextSwitchTo(run_cxt);
	if (pushed)
		PopActiveSnapshot();
	SPI_finish();
	secs = (GetCurrentTimestamp() - start) / 1e6;
	if (!job.paused)
		ereport(NOTICE,
				(errmsg("job \"%s\": %lld rows done, %lld outputs deleted, %lld rows failed in %d batches",
						name, (long long) rc.done, (long long) rc.deleted, (long long) rc.failed, batches),
				 errdetail_log("%.1f s, %.0f rows/s", secs, secs > 0 ? (rc.done + rc.failed) / secs : 0.0)));
	pgstat_report_activity(STATE_RUNNING, "tfm_job_run: done");
	MemoryContextSwitchTo(old);
	MemoryContextDelete(run_cxt);
	if (result)
	{
		result->done = rc.done;
		result->deleted = rc.deleted;
		result->failed = rc.failed;
		result->batches = batches;
		result->more = more;
		result->paused = job.paused;
	}
}

PG_FUNCTION_INFO_V1(tfm_job_run);
Datum
tfm_job_run(PG_FUNCTION_ARGS)
{
	CallContext *call = (CallContext *) fcinfo->context;
	char	   *name = tfm_text_arg(fcinfo, 0, "name");

	set_fn_schema(fcinfo);
	if (call == NULL || !IsA(call, CallContext) || call->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("tfm_job_run cannot run inside a transaction block"),
				 errdetail("tfm_job_run commits after every batch."),
				 errhint("CALL tfm_job_run outside BEGIN ... COMMIT and not from a function.")));
	tfm_job_run_batches(name, fn_schema, PG_ARGISNULL(1) ? -1 : PG_GETARG_INT32(1), true, NULL);
	PG_RETURN_VOID();
}

/* ---- tfm_job_create ------------------------------------------------------- */

static const char *const tasks[] = {"embed", "classify", "predict_proba", "generate", "translate"};

/* the input must be one expression: SELECT (<input>)::text parses to one target and nothing else */
/*
 * The columns an UPDATE must set for the job to care: the columns the
 * input expression reads (pulled from the analyzed SELECT input FROM
 * source: its Vars of the source), then the key columns, as "a", "b".
 * NULL (the trigger fires on every UPDATE) when unsure: the input reads
 * the whole row, a system column or has a subquery, or the source has a
 * BEFORE UPDATE row trigger (it may change a column the UPDATE does not
 * set).  Run as the owner, in an SPI connection.
 */
static char *
update_columns(const TfmJob *j, const char *src)
{
	SPIPlanPtr	plan;
	List	   *sources;
	Query	   *q;
	Bitmapset  *cols = NULL;
	Relation	rel;
	bool		before_update;
	StringInfoData s;
	int			k;

	rel = table_open(j->source, AccessShareLock);
	before_update = rel->trigdesc != NULL && rel->trigdesc->trig_update_before_row;
	table_close(rel, AccessShareLock);
	if (before_update)
		return NULL;

	plan = SPI_prepare(psprintf("SELECT (%s\n)::text FROM %s", j->input, src), 0, NULL);
	if (plan == NULL)
		return NULL;
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		return NULL;
	if (list_length(((CachedPlanSource *) linitial(sources))->query_list) != 1)
		return NULL;
	q = linitial_node(Query, ((CachedPlanSource *) linitial(sources))->query_list);
	if (q->hasSubLinks || list_length(q->rtable) != 1 ||
		rt_fetch(1, q->rtable)->rtekind != RTE_RELATION || rt_fetch(1, q->rtable)->relid != j->source)
		return NULL;
	pull_varattnos((Node *) q->targetList, 1, &cols);
	for (int i = 0; i < j->nkeys; i++)
	{
		AttrNumber	a = get_attnum(j->source, j->key_cols[i]);

		if (a == InvalidAttrNumber)
			return NULL;
		cols = bms_add_member(cols, a - FirstLowInvalidHeapAttributeNumber);
	}

	initStringInfo(&s);
	k = -1;
	while ((k = bms_next_member(cols, k)) >= 0)
	{
		AttrNumber	a = k + FirstLowInvalidHeapAttributeNumber;

		if (a <= 0)
			return NULL;		/* the whole row or a system column */
		appendStringInfo(&s, "%s%s", s.len ? ", " : "",
						 quote_identifier(get_attname(j->source, a, false)));
	}
	return s.data;
}

static void
check_expression(const char *input)
{
	char	   *sql = psprintf("SELECT (%s\n)::text", input);
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	SelectStmt *sel;

	if (list_length(raw) != 1 || !IsA(((RawStmt *) linitial(raw))->stmt, SelectStmt))
		goto bad;
	sel = (SelectStmt *) ((RawStmt *) linitial(raw))->stmt;
	if (list_length(sel->targetList) != 1 || sel->fromClause != NIL || sel->whereClause != NULL ||
		sel->groupClause != NIL || sel->havingClause != NULL || sel->windowClause != NIL ||
		sel->sortClause != NIL || sel->limitCount != NULL || sel->limitOffset != NULL ||
		sel->lockingClause != NIL || sel->withClause != NULL || sel->op != SETOP_NONE ||
		sel->distinctClause != NIL || sel->intoClause != NULL || sel->valuesLists != NIL)
		goto bad;
	return;
bad:
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("the input of a job must be one SQL expression over a row of its source"),
			 errdetail("Given: %s", input)));
}

/* chunk_tokens and chunk_overlap: an embedding job's, within the model's window */
static void
check_chunking(Jsonb *options, const char *task, const TfmModelRow *row, TfmJob *job)
{
	Oid			types[1] = {JSONBOID};
	Datum		args[1] = {JsonbPGetDatum(options)};
	bool		ct_null,
				co_null;
	int			ct,
				co;

	if (SPI_execute_with_args("SELECT ($1->>'chunk_tokens')::int, ($1->>'chunk_overlap')::int",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot check the options");
	ct = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &ct_null));
	co = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &co_null));
	if (ct_null && co_null)
		return;
	if (strcmp(task, "embed") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a job of task %s cannot chunk its texts", task),
				 errhint("chunk_tokens and chunk_overlap are options of embedding jobs.")));
	if (ct_null)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_overlap needs chunk_tokens")));
	tfm_check_chunking(row, ct, co_null ? 0 : co);
	job->chunk_tokens = ct;
	job->chunk_overlap = co_null ? 0 : co;
}

static void
check_options(Jsonb *options, const char *task)
{
	Oid			types[2] = {JSONBOID, TEXTOID};
	Datum		args[2] = {JsonbPGetDatum(options), CStringGetTextDatum(task)};
	char	   *bad;

	if (SPI_execute_with_args("SELECT CASE WHEN jsonb_typeof($1) <> 'object' THEN 'options must be a JSON object' "
							  "ELSE (SELECT string_agg(k, ', ') FROM jsonb_object_keys($1) k WHERE k <> ALL ("
							  "  ARRAY['batch', 'reprocess_stale', 'chunk_tokens', 'chunk_overlap'] || CASE $2 "
							  "  WHEN 'generate' THEN ARRAY['max_tokens', 'temperature', 'top_k', 'top_p', 'seed', 'stop'] "
							  "  WHEN 'translate' THEN ARRAY['beam', 'length_penalty', 'max_tokens'] "
							  "  ELSE '{}'::text[] END)) END",
							  2, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot check the options");
	bad = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (bad != NULL && strncmp(bad, "options", 7) == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s", bad)));
	if (bad != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown option for a job of task %s: %s", task, bad),
				 errhint("A job takes batch, reprocess_stale, chunk_tokens and chunk_overlap (embed), and "
						 "the options of its task's function (generate: max_tokens, temperature, top_k, "
						 "top_p, seed, stop; translate: beam, length_penalty, max_tokens).")));
	/* the values' types and ranges: cast now rather than at the first batch */
	if (SPI_execute_with_args("SELECT coalesce(($1->>'batch')::int, " CppAsString2(TFM_JOB_BATCH_DEFAULT) "), "
							  "coalesce(($1->>'reprocess_stale')::bool, true), "
							  "($1->>'max_tokens')::int, ($1->>'temperature')::real, ($1->>'top_k')::int, "
							  "($1->>'top_p')::real, ($1->>'seed')::bigint, ($1->>'beam')::int, "
							  "($1->>'length_penalty')::real",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot check the options");
	{
		bool		isnull;
		int			batch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		if (batch < TFM_JOB_BATCH_MIN || batch > TFM_JOB_BATCH_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a job's batch must be between %d and %d, not %d",
							TFM_JOB_BATCH_MIN, TFM_JOB_BATCH_MAX, batch)));
	}
}

static void
check_model_task(const TfmModelRow *row, const char *task, const char *model)
{
	const char *need = NULL;

	if (strcmp(task, "classify") == 0 || strcmp(task, "predict_proba") == 0)
		need = "classify";
	else if (strcmp(task, "generate") == 0)
		need = "lm";
	else if (strcmp(task, "translate") == 0)
		need = "seq2seq";
	if (need != NULL && strcmp(row->task, need) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", not \"%s\", which a %s job needs",
						model, row->task, need, task)));
}

static void
check_table_privilege(Oid rel, Oid role, AclMode mode, const char *priv, const char *why)
{
	if (pg_class_aclcheck(rel, role, mode) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s: %s privilege required", get_rel_name(rel), priv),
				 errdetail("%s", why)));
}

/* the source's primary key into job->key_cols / key_types (with their collations) */
static void
read_primary_key(TfmJob *job)
{
	Oid			types[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(job->source)};

	if (tfm_spi_exec("SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) "
							  "|| CASE WHEN a.attcollation <> t.typcollation THEN ' COLLATE ' "
							  "|| pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.collname) ELSE '' END "
							  "FROM pg_catalog.pg_index i "
							  "JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
							  "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
							  "LEFT JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation "
							  "LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace "
							  "WHERE i.indrelid = $1 AND i.indisprimary "
							  "ORDER BY pg_catalog.array_position(i.indkey::int2[], a.attnum)",
							  1, types, args, NULL, true, 0, SPI_OK_SELECT, "cannot read the primary key") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s has no primary key", get_rel_name(job->source)),
				 errdetail("A job keys its outputs by the source's primary key.")));
	job->nkeys = (int) SPI_processed;
	job->key_cols = palloc(sizeof(char *) * job->nkeys);
	job->key_types = palloc(sizeof(char *) * job->nkeys);
	for (int i = 0; i < job->nkeys; i++)
	{
		job->key_cols[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		job->key_types[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
}

/* the type alone (the cast in key_casts takes no COLLATE) */
static char *
type_only(const char *t)
{
	const char *c = strstr(t, " COLLATE ");

	return c ? pnstrdup(t, c - t) : pstrdup(t);
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
	TfmJob		job;
	TfmModelRow row;
	char		relkind;
	char	   *src,
			   *dest,
			   *upd_cols = NULL,
			  **col_defs;
	bool		known = false;
	JobAs		as;
	int64		queued;
	Oid			owner = GetUserId();

	TFM_ARG_NOT_NULL(1, "source");
	set_fn_schema(fcinfo);
	options = PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6);
	tfm_check_new_name("job", name);
	for (int i = 0; i < (int) lengthof(tasks); i++)
		known |= strcmp(task, tasks[i]) == 0;
	if (!known)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown job task \"%s\"", task),
				 errhint("Tasks: embed, classify, predict_proba, generate, translate.")));
	if (RecoveryInProgress() || XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot create job \"%s\" in a read-only transaction or on a standby", name)));

	memset(&job, 0, sizeof(job));
	job.name = name;
	job.owner = owner;
	job.source = PG_GETARG_OID(1);
	job.input = input;
	job.model = model;
	job.task = task;
	job.search_path = pstrdup(GetConfigOption("search_path", false, false));
	relkind = get_rel_relkind(job.source);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the source of a job must be a table")));
	check_table_privilege(job.source, owner, ACL_SELECT, "SELECT",
						  "A job reads its source with its owner's rights.");
	check_table_privilege(job.source, owner, ACL_TRIGGER, "TRIGGER",
						  "A job puts triggers on its source to follow its changes.");
	tfm_catalog_lookup(model, &row, false);
	tfm_check_model_privilege(&row, TFM_PRIV_USE);
	check_model_task(&row, task, model);

	SPI_connect();
	if (SPI_execute_with_args("SELECT 1 FROM tfm.job_defs WHERE name = $1", 1,
							  (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(name)}, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.job_defs");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("job \"%s\" already exists", name)));
	if (options != NULL)
	{
		check_options(options, task);
		check_chunking(options, task, &row, &job);
		job.options = JsonbToCString(NULL, &options->root, VARSIZE(options));
	}
	else
		job.options = "{}";
	read_primary_key(&job);
	col_defs = job.key_types;
	job.key_types = palloc(sizeof(char *) * job.nkeys);
	for (int i = 0; i < job.nkeys; i++)
		job.key_types[i] = type_only(col_defs[i]);
	src = rel_sql(job.source, "source", name);
	check_expression(input);

	/* the input reads the source as the owner: refused now if it cannot */
	owner_begin(&job, &as);
	{
		Oid		   *kt = palloc(sizeof(Oid) * job.nkeys);

		for (int i = 0; i < job.nkeys; i++)
			kt[i] = TEXTARRAYOID;
		if (SPI_prepare(fetch_sql(&job, src), job.nkeys, kt) == NULL)
			elog(ERROR, "cannot prepare the input of job \"%s\": %s", name, SPI_result_code_string(SPI_result));
		upd_cols = update_columns(&job, src);
	}
	owner_end(&as);

	/* the destination */
	if (PG_ARGISNULL(5))
	{
		StringInfoData s;
		Oid			nsp = get_rel_namespace(job.source);

		if (strlen(name) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("job name \"%s\" is too long for a table name", name),
					 errhint("Give a destination table, or a name of at most %d bytes.", NAMEDATALEN - 1)));
		initStringInfo(&s);
		appendStringInfo(&s, "CREATE TABLE %s (", quote_qualified_identifier(get_namespace_name(nsp), name));
		for (int i = 0; i < job.nkeys; i++)
			appendStringInfo(&s, "%s %s NOT NULL, ", quote_identifier(job.key_cols[i]), col_defs[i]);
		if (job.chunk_tokens > 0)
			appendStringInfoString(&s, "chunk integer NOT NULL, chunk_start integer NOT NULL, "
								   "chunk_end integer NOT NULL, ");
		appendStringInfo(&s, "output %s, model_version bigint, updated_at timestamptz NOT NULL DEFAULT now(), "
						 "PRIMARY KEY (%s%s))", output_type(task), key_list(&job, ""),
						 job.chunk_tokens > 0 ? ", chunk" : "");
		if (SPI_execute(s.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot create the destination of job \"%s\"", name);
		CommandCounterIncrement();
		job.dest = get_relname_relid(name, nsp);
		if (!OidIsValid(job.dest))
			elog(ERROR, "the destination of job \"%s\" was not created", name);
	}
	else
	{
		job.dest = PG_GETARG_OID(5);
		if (get_rel_relkind(job.dest) != RELKIND_RELATION && get_rel_relkind(job.dest) != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("the destination of a job must be a table")));
		if (job.dest == job.source)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a job's destination must not be its source")));
		check_table_privilege(job.dest, owner, ACL_SELECT, "SELECT", "A job writes its destination with its owner's rights.");
		check_table_privilege(job.dest, owner, ACL_INSERT, "INSERT", "A job writes its destination with its owner's rights.");
		check_table_privilege(job.dest, owner, ACL_UPDATE, "UPDATE", "A job writes its destination with its owner's rights.");
		check_table_privilege(job.dest, owner, ACL_DELETE, "DELETE", "A job writes its destination with its owner's rights.");
	}
	dest = rel_sql(job.dest, "destination", name);
	{
		/* the writes to the destination: its columns and a unique key on the key columns */
		Oid			types[12];
		int			na = 4 + job.nkeys;
		SPIPlanPtr	upsert;

		types[0] = TEXTOID;
		types[1] = INT8OID;
		types[2] = JSONBOID;
		for (int i = 3; i < na && i < 12; i++)
			types[i] = TEXTARRAYOID;
		if (na > 12)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a job's source may have at most 8 key columns")));
		owner_begin(&job, &as);
		if ((upsert = SPI_prepare(compute_sql(&job, dest), na, types)) == NULL ||
			SPI_prepare(delete_sql(&job, dest), job.nkeys, types + 4) == NULL)
			elog(ERROR, "cannot prepare the writes of job \"%s\"", name);
		/* planned now: a destination without a unique key on the key columns (and chunk) fails here */
		ReleaseCachedPlan(SPI_plan_get_cached_plan(upsert), NULL);
		owner_end(&as);
	}

	job.id = tfm_job_insert(&job);
	{
		/* the triggers, with the creator's TRIGGER privilege */
		StringInfoData targs;
		char	   *sql;

		initStringInfo(&targs);
		appendStringInfo(&targs, "'%d'", job.id);
		for (int i = 0; i < job.nkeys; i++)
			appendStringInfo(&targs, ", %s", quote_literal_cstr(job.key_cols[i]));
		sql = psprintf("CREATE TRIGGER tfm_job_%d AFTER INSERT OR UPDATE%s%s OR DELETE ON %s "
					   "FOR EACH ROW EXECUTE FUNCTION tfm.job_enqueue(%s)", job.id,
					   upd_cols ? " OF " : "", upd_cols ? upd_cols : "", src, targs.data);
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot create the trigger of job \"%s\"", name);
		sql = psprintf("CREATE TRIGGER tfm_job_%d_truncate AFTER TRUNCATE ON %s "
					   "FOR EACH STATEMENT EXECUTE FUNCTION tfm.job_enqueue(%s)", job.id, src, targs.data);
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot create the trigger of job \"%s\"", name);
	}
	/* the backfill: every key now in the source */
	queued = tfm_job_enqueue_all(&job, src);
	SPI_finish();
	ereport(NOTICE,
			(errmsg("job \"%s\": %lld rows queued", name, (long long) queued),
			 errhint("CALL tfm_job_run('%s') processes them.", name)));
	tfm_job_workers_wake_at_commit();
	PG_RETURN_OID(job.dest);
}

/* ---- pause, resume, drop -------------------------------------------------- */

static void
set_state(FunctionCallInfo fcinfo, bool paused)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	TfmJob		job;

	SPI_connect();
	tfm_job_read(name, &job, false);
	check_job_owner(&job, paused ? "pause" : "resume");
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
	check_job_owner(&job, "drop");
	if (get_rel_name(job.source) != NULL)
	{
		/* DROP TRIGGER needs the table's ownership: as the owner of schema tfm */
		char	   *src = rel_sql(job.source, "source", name);
		TfmAsOwner	as;

		tfm_as_owner_begin(&as);
		if (SPI_execute(psprintf("DROP TRIGGER IF EXISTS tfm_job_%d ON %s", job.id, src), false, 0) != SPI_OK_UTILITY ||
			SPI_execute(psprintf("DROP TRIGGER IF EXISTS tfm_job_%d_truncate ON %s", job.id, src), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot drop the triggers of job \"%s\"", name);
		tfm_as_owner_end(&as);
	}
	tfm_job_delete(job.id);
	if (drop_dest && get_rel_name(job.dest) != NULL)
	{
		/* with the caller's rights, as DROP TABLE would */
		if (SPI_execute(psprintf("DROP TABLE %s", rel_sql(job.dest, "destination", name)), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "cannot drop the destination of job \"%s\"", name);
	}
	SPI_finish();
	PG_RETURN_VOID();
}
