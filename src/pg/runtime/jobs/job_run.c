/*
 * job_run.c — a job's run: its queue drained in batches, one transaction
 * each, through statements prepared once per run (tfm_job_run_batches,
 * job_run.h): claim keys (storage/jobs/jobs.c: FOR UPDATE SKIP LOCKED, then
 * each key's advisory lock), read the source rows and evaluate the input
 * expression, call the task's text[] function once for the batch inside an
 * INSERT ... ON CONFLICT into the destination (one output per key, or per
 * (key, chunk) with tfm_embed_chunks, never two; a key's chunks past its
 * last deleted in the same statement), delete the outputs of rows that are
 * gone, record failures in tfm.job_errors, COMMIT.  A cancel rolls back the
 * batch in flight only: its keys are back in the queue.  CALL tfm_job_run
 * (sql/jobs/job.c) and tfm's background workers (job_worker.c) run it.
 *
 * Rights: everything that reads the source, evaluates the input or calls
 * the model runs as the job's owner (SetUserIdAndSecContext, as a
 * security-restricted operation: the owner's code cannot SET ROLE back to
 * whoever runs the job), with the search_path the job was created with;
 * only the queue, errors and job rows are written as the owner of schema
 * tfm.  Running a job needs the owner's privileges.
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
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "tfm/limits.h"
#include "runtime/jobs/job_run.h"
#include "runtime/runtime.h"
#include "storage/jobs/jobs.h"
#include "storage/models/models.h"


/* ---- SQL fragments -------------------------------------------------------- */

char *
tfm_job_rel_sql(Oid rel, const char *what, const char *job)
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

void
tfm_job_use_schema(const char *schema)
{
	if (fn_schema == NULL || strcmp(fn_schema, schema) != 0)
		fn_schema = MemoryContextStrdup(TopMemoryContext, schema);
}

static const char *
ext_schema(void)
{
	return fn_schema;
}

/* "k1", "k2" (with a prefix: d."k1", ...) */
char *
tfm_job_key_list(const TfmJob *j, const char *prefix)
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

/*
 * The source rows of keys $1.. ($1 the first key column's texts): ord,
 * found, input.  OFFSET 0 keeps the subquery per key: pulled up into the
 * join, a non-strict input (a CASE, a coalesce) became a placeholder that
 * a hash join computed on every row of the source, so each batch read the
 * whole table and one row's error (22012) failed every key of the batch.
 */
char *
tfm_job_fetch_sql(const TfmJob *j, const char *src)
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
	appendStringInfoString(&s, " OFFSET 0) tfm_s ON true");
	return s.data;
}

const char *
tfm_job_output_type(const char *task)
{
	if (strcmp(task, "embed") == 0)
		return "real[]";
	if (strcmp(task, "predict_proba") == 0 || strcmp(task, "entities") == 0 ||
		strcmp(task, "extract") == 0)
		return "jsonb";
	return "text";
}

/*
 * The batch's outputs into the destination, upserted by key: $1 model,
 * $2 version, $3 options, $4 inputs text[], $5.. the keys' texts.
 */
char *
tfm_job_compute_sql(const TfmJob *j, const char *dest)
{
	StringInfoData s;
	const char *ns = ext_schema();
	const char *keys = tfm_job_key_list(j, "");

	initStringInfo(&s);
	if (j->chunk_tokens > 0)
	{
		/*
		 * A text's windows, upserted by (key, chunk); the key's chunks past
		 * its last are deleted (a text that got shorter): the DELETE sees
		 * the rows as they were before the INSERT and touches none it writes.
		 */
		const char *ekeys = tfm_job_key_list(j, "tfm_e.");

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
						 dest, tfm_job_key_list(j, ""), tfm_job_key_list(j, ""), tfm_job_key_list(j, "tfm_d."), tfm_job_key_list(j, "tfm_m."));
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
	else if (strcmp(j->task, "entities") == 0)
		/* a text's entities in its order, as tfm_entities gives them (none: []; NULL: NULL) */
		appendStringInfo(&s, "CASE WHEN tfm_k.input IS NOT NULL THEN (SELECT "
						 "COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('entity', e.entity, "
						 "'label', e.label, 'score', e.score, 'start', e.start_char, 'end', e.end_char) "
						 "ORDER BY e.n), '[]') FROM %s.tfm_entities($1, tfm_k.input, "
						 "COALESCE($3->>'aggregation', 'simple')) WITH ORDINALITY AS "
						 "e(entity, label, score, start_char, end_char, n)) END, $2, pg_catalog.now() "
						 "FROM ROWS FROM (pg_catalog.unnest($4::text[]), %s) AS tfm_k(input, %s)",
						 ns, key_params(j, 5), key_aliases(j));
	else if (strcmp(j->task, "extract") == 0)
		appendStringInfo(&s, "%s.tfm_extract($1, tfm_k.input, $3->'schema', "
						 "max_tokens => ($3->>'max_tokens')::int, temperature => ($3->>'temperature')::real, "
						 "seed => ($3->>'seed')::bigint), $2, pg_catalog.now() "
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
char *
tfm_job_delete_sql(const TfmJob *j, const char *dest)
{
	return psprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM ROWS FROM (%s) AS tfm_k(%s))",
					dest, tfm_job_key_list(j, ""), key_casts(j), key_params(j, 1), key_aliases(j));
}

/* ---- running as the job's owner ------------------------------------------- */

void
tfm_job_owner_begin(const TfmJob *j, TfmJobAs *s)
{
	GetUserIdAndSecContext(&s->uid, &s->sec);
	SetUserIdAndSecContext(j->owner, s->sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	s->nest = NewGUCNestLevel();
	(void) set_config_option("search_path", j->search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	tfm_job_pin_key_settings();
}

/*
 * The owner's code may have SET anything (search_path, tfm.precision, ...):
 * every setting goes back to what it was, as PostgreSQL does after running
 * another role's code (index builds, REFRESH MATERIALIZED VIEW).  Keeping a
 * plain SET (AtEOXact_GUC(true, ...)) let a job's input leave its
 * search_path to a superuser's session or to a worker's own queries.
 */
void
tfm_job_owner_end(TfmJobAs *s)
{
	AtEOXact_GUC(false, s->nest);
	SetUserIdAndSecContext(s->uid, s->sec);
}

/* ---- queueing keys read from the job's tables ------------------------------ */

#define ENQUEUE_CHUNK	8192	/* keys read, then queued, at a time */
StaticAssertDecl(TFM_JOB_BATCH_MAX <= ENQUEUE_CHUNK, "a backfill fetches whole batches");

/*
 * Queue the keys a query over the job's source or destination returns (one
 * text column per key column): the query runs as the job's owner (its
 * code, a view's or a policy's, never runs with tfm's rights), through a
 * cursor, and each chunk of keys goes into the queue as the owner of schema
 * tfm (storage/jobs/jobs.c).  Returns the keys queued.
 */
static int64
enqueue_from(const TfmJob *j, const char *sql, int nargs, Oid *types, Datum *args, bool skip_queued)
{
	int			nk = j->nkeys;
	Datum	   *cols = palloc(sizeof(Datum) * nk);
	Datum	   *texts = palloc(sizeof(Datum) * ENQUEUE_CHUNK);
	int64		total = 0;
	/* a backfill's fetch: whole chunks of batch keys (batch <= ENQUEUE_CHUNK) */
	int			fetch = skip_queued ? ENQUEUE_CHUNK : Max(1, ENQUEUE_CHUNK / Max(j->batch, 1)) * Max(j->batch, 1);
	Portal		portal;
	TfmJobAs	as;

	tfm_job_owner_begin(j, &as);
	portal = SPI_cursor_open_with_args(NULL, sql, nargs, types, args, NULL, true, 0);
	tfm_job_owner_end(&as);
	for (;;)
	{
		uint64		n;

		CHECK_FOR_INTERRUPTS();
		tfm_job_owner_begin(j, &as);
		SPI_cursor_fetch(portal, true, fetch);
		tfm_job_owner_end(&as);
		n = SPI_processed;
		if (n == 0)
			break;
		for (int c = 0; c < nk; c++)
		{
			for (uint64 r = 0; r < n; r++)
			{
				bool		isnull;

				texts[r] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, c + 1, &isnull);
				if (isnull)
					elog(ERROR, "job \"%s\": a key column is NULL", j->name);
			}
			cols[c] = PointerGetDatum(construct_array(texts, (int) n, TEXTOID, -1, false, TYPALIGN_INT));
		}
		/* a backfill in chunks (one queue row per batch); stale outputs key by key, skipping those queued */
		total += skip_queued ? tfm_job_enqueue_keys(j, cols, true) : tfm_job_enqueue_chunks(j, cols);
		SPI_freetuptable(SPI_tuptable);
		for (int c = 0; c < nk; c++)
			pfree(DatumGetPointer(cols[c]));
	}
	SPI_freetuptable(SPI_tuptable);
	tfm_job_owner_begin(j, &as);
	SPI_cursor_close(portal);
	tfm_job_owner_end(&as);
	return total;
}

/* the key columns as text: s."k1"::text, ... */
static char *
key_texts(const TfmJob *j, const char *prefix)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < j->nkeys; i++)
		appendStringInfo(&s, "%s%s%s::text", i ? ", " : "", prefix, quote_identifier(j->key_cols[i]));
	return s.data;
}

int64
tfm_job_enqueue_all(const TfmJob *j, const char *src)
{
	return enqueue_from(j, psprintf("SELECT %s FROM %s s", key_texts(j, "s."), src), 0, NULL, NULL,
						false);
}

int64
tfm_job_enqueue_stale(const TfmJob *j, const char *dest, int64 version)
{
	Oid			types[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(version)};

	/* DISTINCT: a job that chunks has several outputs per key */
	return enqueue_from(j, psprintf("SELECT DISTINCT %s FROM %s d WHERE d.model_version IS DISTINCT FROM $1",
									key_texts(j, "d."), dest), 1, types, args, true);
}

void
tfm_job_check_owner(const TfmJob *j, const char *doing)
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
	char	   *model_name;		/* the job's model's name now (tfm_job_model_now) */
	int32		model_id;		/* and its id, which that name must still resolve to */
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
	TfmJobAs		as;

	types[0] = TEXTOID;
	types[1] = INT8OID;
	types[2] = JSONBOID;
	for (int i = 3; i < 4 + nk; i++)
		types[i] = TEXTARRAYOID;
	tfm_job_owner_begin(j, &as);
	if ((b->fetch = SPI_prepare(tfm_job_fetch_sql(j, src), nk, types + 4)) == NULL ||
		(b->compute = SPI_prepare(tfm_job_compute_sql(j, dest), 4 + nk, types)) == NULL ||
		(b->delete = SPI_prepare(tfm_job_delete_sql(j, dest), nk, types + 4)) == NULL ||
		SPI_keepplan(b->fetch) != 0 || SPI_keepplan(b->compute) != 0 || SPI_keepplan(b->delete) != 0)
		elog(ERROR, "cannot prepare the statements of job \"%s\": %s", j->name,
			 SPI_result_code_string(SPI_result));
	tfm_job_owner_end(&as);
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
	TfmJobAs		as;

	key_args(b, args, 0);
	tfm_job_owner_begin(b->job, &as);
	if (SPI_execute_plan(b->fetch, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "cannot read the source of job \"%s\"", b->job->name);
	tfm_job_owner_end(&as);
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
	bool	   *nulls = palloc(sizeof(bool) * Max(b->m, 1));
	int			dims[1] = {b->m},
				lbs[1] = {1};
	TfmJobAs		as;

	/* a NULL input is a NULL element: the task's function answers NULL */
	for (int i = 0; i < b->m; i++)
	{
		nulls[i] = b->input[b->idx[i]] == NULL;
		in[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(b->input[b->idx[i]]);
	}
	args[0] = CStringGetTextDatum(b->model_name);
	args[1] = Int64GetDatum(b->version);
	args[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(b->job->options));
	args[3] = PointerGetDatum(b->m == 0 ? construct_empty_array(TEXTOID) :
							  construct_md_array(in, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT));
	key_args(b, args, 4);
	tfm_job_owner_begin(b->job, &as);
	/* the model called by its name now must be the job's: a rename in between errs */
	tfm_catalog_expect_id = b->model_id;
	PG_TRY();
	{
		/* a job that chunks writes through a WITH ... SELECT */
		if (SPI_execute_plan(b->compute, args, NULL, false, 0) !=
			(b->job->chunk_tokens > 0 ? SPI_OK_SELECT : SPI_OK_INSERT))
			elog(ERROR, "cannot write the destination of job \"%s\"", b->job->name);
	}
	PG_FINALLY();
	{
		tfm_catalog_expect_id = 0;
	}
	PG_END_TRY();
	tfm_job_owner_end(&as);
}

static void
delete_outputs(Batch *b)
{
	Datum	   *args = palloc(sizeof(Datum) * b->job->nkeys);
	TfmJobAs		as;

	if (b->m == 0)
		return;
	key_args(b, args, 0);
	tfm_job_owner_begin(b->job, &as);
	if (SPI_execute_plan(b->delete, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "cannot delete from the destination of job \"%s\"", b->job->name);
	tfm_job_owner_end(&as);
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

	/*
	 * The rows and their inputs (an error in the expression: key by key).
	 * A NULL input is no error (doc/reference.md, NULLs): its output is
	 * NULL, or, for a job that chunks, it has no chunks (its old ones go).
	 */
	each_or_all(b, fetch_fn, all, n);
	for (int i = 0; i < n; i++)
	{
		if (b->error[i] != NULL || !b->found[i])
			gone[ngone++] = i;	/* no output: the row is gone or failed */
		else if (b->input[i] == NULL && b->job->chunk_tokens > 0)
		{
			gone[ngone++] = i;
			rc->done++;
		}
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
 * The run loop (see job_run.h): CALL tfm_job_run (sql/jobs/job.c) and tfm's
 * background workers (job_worker.c).
 */
void
tfm_job_run_batches(const char *name, const char *schema, int max_batches, bool check_stale,
					int batch_timeout_ms, TfmJobRunResult *result)
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
	if (batch_timeout_ms > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, batch_timeout_ms);
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
						"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
						"WHERE e.extname OPERATOR(pg_catalog.=) 'tfm'",
						true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "extension tfm is not installed in this database");
		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	}
	/* kept past this run (the statements built later read it) */
	tfm_job_use_schema(schema);

	tfm_job_read(name, &job, false);
	tfm_job_check_owner(&job, "run");
	/* before the queue, the source or the destination: a drop's order */
	if (!tfm_job_hold(job.id))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job \"%s\" does not exist", name)));
	memset(&b, 0, sizeof(b));
	b.job = &job;
	if (job.paused)
		ereport(NOTICE,
				(errmsg("job \"%s\" is paused: nothing done", name),
				 errhint("Resume it with tfm_job_resume('%s').", name)));
	else
	{
		char	   *src = tfm_job_rel_sql(job.source, "source", name);
		char	   *dest = tfm_job_rel_sql(job.dest, "destination", name);

		/* the saved plans go at the end, or at an error */
		PG_TRY();
		{
			prepare_batch_plans(&b, src, dest);
			/* a TRUNCATE of the source: the outputs of rows no longer there go */
			if (tfm_job_take_truncates(&job))
			{
				TfmJobAs		as;
				StringInfoData s;

				initStringInfo(&s);
				appendStringInfo(&s, "DELETE FROM %s d WHERE NOT EXISTS (SELECT FROM %s s WHERE ", dest, src);
				for (int i = 0; i < job.nkeys; i++)
					appendStringInfo(&s, "%ss.%s = d.%s", i ? " AND " : "",
									 quote_identifier(job.key_cols[i]), quote_identifier(job.key_cols[i]));
				appendStringInfoChar(&s, ')');
				tfm_job_owner_begin(&job, &as);
				if (SPI_execute(s.data, false, 0) != SPI_OK_DELETE)
					elog(ERROR, "cannot delete from the destination of job \"%s\"", name);
				rc.deleted += SPI_processed;
				tfm_job_owner_end(&as);
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
				paused = now.id != job.id || now.paused || !tfm_job_hold(job.id);
				if (paused)
					break;
				b.version = tfm_job_model_now(&job, &b.model_name, &b.model_id);
				if (b.version < 0)
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("the model of job \"%s\" no longer exists", name),
							 errdetail("The job runs the model it was created with (\"%s\"), "
									   "whatever its name now; it was dropped, or the alias dropped.",
									   job.model),
							 errhint("Drop the job and create it again with the model to run.")));
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
				/* the next batch's time starts now */
				if (batch_timeout_ms > 0)
					enable_timeout_after(STATEMENT_TIMEOUT, batch_timeout_ms);
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
	if (batch_timeout_ms > 0)
		disable_timeout(STATEMENT_TIMEOUT, false);
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
