/*
 * job_create.c — a new job (tfm_job_make, job_create.h; tfm_job_create in
 * sql/jobs/job.c reads the arguments): the checks of its name, task, source,
 * model, options and input expression, then the destination (the source's
 * primary-key columns, with chunk, chunk_start, chunk_end for an embedding
 * job that chunks, output, model_version, updated_at; owned by the job's
 * owner, who is the creator; or a given one, where an embedding job's
 * pgvector column has the model's dimensions: check_vector_output), two
 * triggers on the source (sql/jobs/job_trigger.c:
 * each changed row's key, and TRUNCATE, into tfm.job_queue; an UPDATE only
 * when it sets a column the input reads or a key column, found by
 * PostgreSQL's analysis of the input: update_columns) and every existing
 * key queued (the backfill is the queue), all in the creating transaction:
 * a row committed before it is in the backfill, one after it fires the
 * trigger.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
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
#include "runtime/infer/json_constraint.h"
#include "runtime/jobs/job_create.h"
#include "runtime/jobs/job_run.h"
#include "runtime/jobs/job_slots.h"
#include "storage/jobs/jobs.h"
#include "storage/models/models.h"

/* ---- tfm_job_create ------------------------------------------------------- */

static const char *const tasks[] = {"embed", "classify", "predict_proba", "generate", "translate",
"entities", "extract"};

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
check_chunking(Jsonb *options, const char *task, const TfmModelRow *row, TfmJob *job,
			   TfmChunkingCheck check_window)
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
	check_window(row, ct, co_null ? 0 : co);
	job->chunk_tokens = ct;
	job->chunk_overlap = co_null ? 0 : co;
}

/* the options' names and values checked; returns the batch */
static int
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
							  "  WHEN 'entities' THEN ARRAY['aggregation'] "
							  "  WHEN 'extract' THEN ARRAY['schema', 'max_tokens', 'temperature', 'seed'] "
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
						 "top_p, seed, stop; translate: beam, length_penalty, max_tokens; entities: "
						 "aggregation; extract: schema, max_tokens, temperature, seed).")));
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
		return batch;
	}
}

/*
 * An entities job's aggregation and an extract job's schema (required),
 * checked now rather than at the first batch (options may be NULL: {})
 */
static void
check_task_options(Jsonb *options, const char *task)
{
	bool		isnull;
	Datum		v;

	if (strcmp(task, "entities") != 0 && strcmp(task, "extract") != 0)
		return;
	if (options != NULL &&
		SPI_execute_with_args("SELECT $1->'schema', $1->>'aggregation'", 1, (Oid[]) {JSONBOID},
							  (Datum[]) {JsonbPGetDatum(options)}, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot check the options");
	if (strcmp(task, "extract") == 0)
	{
		v = options ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull) : (Datum) 0;
		if (options == NULL || isnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a job of task extract needs the option schema"),
					 errhint("options => '{\"schema\": {...}}': the JSON schema tfm_extract follows.")));
		(void) tfm_json_schema_compile(DatumGetJsonbP(v));
		return;
	}
	if (options == NULL)
		return;
	v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (!isnull)
	{
		char	   *a = TextDatumGetCString(v);

		if (strcmp(a, "none") != 0 && strcmp(a, "simple") != 0 && strcmp(a, "first") != 0 &&
			strcmp(a, "max") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown aggregation \"%s\"", a),
					 errhint("It is one of none, simple, first and max.")));
	}
}

static void
check_model_task(const TfmModelRow *row, const char *task, const char *model)
{
	const char *need = NULL;

	if (strcmp(task, "classify") == 0 || strcmp(task, "predict_proba") == 0 ||
		strcmp(task, "entities") == 0)
		need = "classify";
	else if (strcmp(task, "generate") == 0 || strcmp(task, "extract") == 0)
		need = "lm";
	else if (strcmp(task, "translate") == 0)
		need = "seq2seq";
	if (need != NULL && strcmp(row->task, need) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", not \"%s\", which %s %s job needs",
						model, row->task, need, strchr("aeiou", task[0]) ? "an" : "a", task)));
	if (strcmp(task, "entities") == 0 && row->cfg.token_head != TFM_TOKEN_HEAD_TAGS)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is not a token classifier (...ForTokenClassification), which an entities job needs",
						model)));
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

/* the destination a job creates: the source's key columns, then its own, in the source's schema */
static Oid
create_destination(TfmJob *job, char **col_defs)
{
	const char *name = job->name;
	StringInfoData s;
	Oid			nsp = get_rel_namespace(job->source);
	Oid			dest;

	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("job name \"%s\" is too long for a table name", name),
				 errhint("Give a destination table, or a name of at most %d bytes.", NAMEDATALEN - 1)));
	initStringInfo(&s);
	appendStringInfo(&s, "CREATE TABLE %s (", quote_qualified_identifier(get_namespace_name(nsp), name));
	for (int i = 0; i < job->nkeys; i++)
		appendStringInfo(&s, "%s %s NOT NULL, ", quote_identifier(job->key_cols[i]), col_defs[i]);
	if (job->chunk_tokens > 0)
		appendStringInfoString(&s, "chunk integer NOT NULL, chunk_start integer NOT NULL, "
							   "chunk_end integer NOT NULL, ");
	appendStringInfo(&s, "output %s, model_version bigint, updated_at timestamptz NOT NULL DEFAULT now(), "
					 "PRIMARY KEY (%s%s))", tfm_job_output_type(job->task), tfm_job_key_list(job, ""),
					 job->chunk_tokens > 0 ? ", chunk" : "");
	if (SPI_execute(s.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "cannot create the destination of job \"%s\"", name);
	CommandCounterIncrement();
	dest = get_relname_relid(name, nsp);
	if (!OidIsValid(dest))
		elog(ERROR, "the destination of job \"%s\" was not created", name);
	return dest;
}

/* a given destination: a table, not the source, that the owner may write */
static void
check_destination(const TfmJob *job, Oid owner)
{
	if (get_rel_relkind(job->dest) != RELKIND_RELATION && get_rel_relkind(job->dest) != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the destination of a job must be a table")));
	if (job->dest == job->source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job's destination must not be its source")));
	check_table_privilege(job->dest, owner, ACL_SELECT, "SELECT", "A job writes its destination with its owner's rights.");
	check_table_privilege(job->dest, owner, ACL_INSERT, "INSERT", "A job writes its destination with its owner's rights.");
	check_table_privilege(job->dest, owner, ACL_UPDATE, "UPDATE", "A job writes its destination with its owner's rights.");
	check_table_privilege(job->dest, owner, ACL_DELETE, "DELETE", "A job writes its destination with its owner's rights.");
}

/*
 * An embedding job's output column of one of pgvector's types (vector(n),
 * halfvec(n), sparsevec(n), or a domain over one): pgvector's assignment
 * cast from real[] converts each output as it is written; n must be the
 * model's embedding size, checked now rather than at every row.  The type
 * is pgvector's when it belongs to extension vector (a type of that name
 * elsewhere is not).  Its typmod is n (-1: any size, not checked).
 */
static void
check_vector_output(const TfmJob *job, const char *dest, int dims)
{
	AttrNumber	att = get_attnum(job->dest, "output");
	Oid			type,
				coll,
				ext;
	int32		typmod;
	char	   *extname;

	if (strcmp(job->task, "embed") != 0 || att == InvalidAttrNumber)
		return;					/* other tasks, or no output column: planning the writes says why */
	get_atttypetypmodcoll(job->dest, att, &type, &typmod, &coll);
	type = getBaseTypeAndTypmod(type, &typmod);
	ext = getExtensionOfObject(TypeRelationId, type);
	extname = OidIsValid(ext) ? get_extension_name(ext) : NULL;
	if (extname == NULL || strcmp(extname, "vector") != 0 || typmod < 0 || typmod == dims)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column \"output\" of destination %s is %s, but model \"%s\" gives embeddings of %d dimensions",
					dest, format_type_with_typemod(type, typmod), job->model, dims),
			 errhint("Make the column %s(%d), or give the job a model of %d dimensions.",
					 format_type_be(type), dims, typmod)));
}

/* the writes to the destination, prepared and planned as the owner: its columns and a unique key fit */
static void
prepare_writes(const TfmJob *job, const char *dest)
{
	const char *name = job->name;
	TfmJobAs	as;
	Oid			types[12];
	int			na = 4 + job->nkeys;
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
	tfm_job_owner_begin(job, &as);
	if ((upsert = SPI_prepare(tfm_job_compute_sql(job, dest), na, types)) == NULL ||
		SPI_prepare(tfm_job_delete_sql(job, dest), job->nkeys, types + 4) == NULL)
		elog(ERROR, "cannot prepare the writes of job \"%s\"", name);
	/* planned now: a destination without a unique key on the key columns (and chunk) fails here */
	ReleaseCachedPlan(SPI_plan_get_cached_plan(upsert), NULL);
	tfm_job_owner_end(&as);
}

/* the triggers on the source, with the creator's TRIGGER privilege */
static void
create_triggers(const TfmJob *job, const char *src, const char *upd_cols)
{
	const char *name = job->name;
	StringInfoData targs;
	char	   *sql;

	initStringInfo(&targs);
	appendStringInfo(&targs, "'%d'", job->id);
	for (int i = 0; i < job->nkeys; i++)
		appendStringInfo(&targs, ", %s", quote_literal_cstr(job->key_cols[i]));
	sql = psprintf("CREATE TRIGGER tfm_job_%d AFTER INSERT OR UPDATE%s%s OR DELETE ON %s "
				   "FOR EACH ROW EXECUTE FUNCTION tfm.job_enqueue(%s)", job->id,
				   upd_cols ? " OF " : "", upd_cols ? upd_cols : "", src, targs.data);
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "cannot create the trigger of job \"%s\"", name);
	sql = psprintf("CREATE TRIGGER tfm_job_%d_truncate AFTER TRUNCATE ON %s "
				   "FOR EACH STATEMENT EXECUTE FUNCTION tfm.job_enqueue(%s)", job->id, src, targs.data);
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "cannot create the trigger of job \"%s\"", name);
}

/*
 * tfm_job_create below its argument checks (see job_create.h).
 */
Oid
tfm_job_make(const char *schema, char *name, Oid source, char *input, char *model, char *task,
			 bool has_dest, Oid dest_rel, Jsonb *options, TfmChunkingCheck check_window)
{
	TfmJob		job;
	TfmModelRow row;
	char		relkind;
	char	   *src,
			   *dest,
			   *upd_cols = NULL,
			  **col_defs;
	bool		known = false;
	TfmJobAs	as;
	int64		queued;
	Oid			owner = GetUserId();

	tfm_job_use_schema(schema);
	tfm_check_new_name("job", name);
	for (int i = 0; i < (int) lengthof(tasks); i++)
		known |= strcmp(task, tasks[i]) == 0;
	if (!known)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown job task \"%s\"", task),
				 errhint("Tasks: embed, classify, predict_proba, generate, translate, entities, extract.")));
	if (RecoveryInProgress() || XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot create job \"%s\" in a read-only transaction or on a standby", name)));

	memset(&job, 0, sizeof(job));
	job.name = name;
	job.owner = owner;
	job.source = source;
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
	/* bound by id (a model), or through the alias it was named by */
	job.model_id = row.id;
	if (strcmp(row.name, model) != 0)
		job.alias_id = tfm_job_alias_id(model);
	if (SPI_execute_with_args("SELECT 1 FROM tfm.job_defs WHERE name = $1", 1,
							  (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(name)}, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.job_defs");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("job \"%s\" already exists", name)));
	/* the backfill is queued in chunks of a batch */
	job.batch = TFM_JOB_BATCH_DEFAULT;
	if (options != NULL)
	{
		job.batch = check_options(options, task);
		check_chunking(options, task, &row, &job, check_window);
		job.options = JsonbToCString(NULL, &options->root, VARSIZE(options));
	}
	else
		job.options = "{}";
	check_task_options(options, task);
	read_primary_key(&job);
	col_defs = job.key_types;
	job.key_types = palloc(sizeof(char *) * job.nkeys);
	for (int i = 0; i < job.nkeys; i++)
		job.key_types[i] = type_only(col_defs[i]);
	src = tfm_job_rel_sql(job.source, "source", name);
	check_expression(input);

	/* the input reads the source as the owner: refused now if it cannot */
	tfm_job_owner_begin(&job, &as);
	{
		Oid		   *kt = palloc(sizeof(Oid) * job.nkeys);

		for (int i = 0; i < job.nkeys; i++)
			kt[i] = TEXTARRAYOID;
		if (SPI_prepare(tfm_job_fetch_sql(&job, src), job.nkeys, kt) == NULL)
			elog(ERROR, "cannot prepare the input of job \"%s\": %s", name, SPI_result_code_string(SPI_result));
		upd_cols = update_columns(&job, src);
	}
	tfm_job_owner_end(&as);

	/* the destination */
	if (!has_dest)
		job.dest = create_destination(&job, col_defs);
	else
	{
		job.dest = dest_rel;
		check_destination(&job, owner);
	}
	dest = tfm_job_rel_sql(job.dest, "destination", name);
	check_vector_output(&job, dest, row.cfg.d_model);
	prepare_writes(&job, dest);

	job.id = tfm_job_insert(&job);
	create_triggers(&job, src, upd_cols);
	/* the backfill: every key now in the source */
	queued = tfm_job_enqueue_all(&job, src);
	SPI_finish();
	ereport(NOTICE,
			(errmsg("job \"%s\": %lld rows queued", name, (long long) queued),
			 errhint("CALL tfm_job_run('%s') processes them.", name)));
	tfm_job_workers_wake_at_commit();
	return job.dest;
}
