/*
 * jobs.c — jobs' rows in schema tfm: tfm.job_defs (one per job),
 * tfm.job_queue (keys the triggers on a source enqueue) and tfm.job_errors
 * (rows that failed).  The SQL runs as the owner of schema tfm with a
 * pinned search_path (tfm_as_owner_begin), inside the caller's SPI
 * connection; what a job reads from its source and writes to its
 * destination runs as the job's owner instead (sql/jobs/job.c).
 *
 * Keys are text[]: each key column's text form, in key order.  The texts
 * of dates, times and floats depend on settings, so every section that
 * makes or reads key texts pins them (tfm_job_pin_key_settings).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/memutils.h"

#include "tfm/limits.h"
#include "storage/jobs/jobs.h"
#include "storage/models/model_row.h"

void
tfm_job_pin_key_settings(void)
{
	(void) set_config_option("datestyle", "ISO, MDY", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("timezone", "UTC", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

static void
begin(TfmAsOwner *as)
{
	tfm_as_owner_begin(as);
	tfm_job_pin_key_settings();
}

/*
 * One statement over the jobs' catalog rows, as the schema's owner, with
 * the key settings pinned; rows read or changed (SPI_tuptable holds what
 * it returned).
 */
static int64
exec_as_owner(const char *sql, int nargs, Oid *types, Datum *args, const char *nulls, int expect,
			  const char *err)
{
	TfmAsOwner	as;
	int64		n;

	begin(&as);
	n = (int64) tfm_spi_exec(sql, nargs, types, args, nulls, false, 0, expect, err);
	tfm_as_owner_end(&as);
	return n;
}

static int
text_array(Datum d, char ***out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	*out = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		(*out)[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
	return n;
}

bool
tfm_job_read(const char *name, TfmJob *job, bool missing_ok)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	MemoryContext cxt = CurrentMemoryContext;
	HeapTuple	tup;
	TupleDesc	td;
	bool		isnull;

	memset(job, 0, sizeof(*job));
	tfm_check_name("job", name);
	if (exec_as_owner("SELECT id, name, owner::oid, source::oid, destination::oid, key_columns, "
							  "key_types, input, model, task, options::text, search_path, "
							  "state = 'paused', coalesce((options->>'batch')::int, " CppAsString2(TFM_JOB_BATCH_DEFAULT) "), "
							  "coalesce((options->>'reprocess_stale')::bool, true), "
							  "coalesce((options->>'chunk_tokens')::int, 0), "
							  "coalesce((options->>'chunk_overlap')::int, 0), "
							  "coalesce(model_id, 0), coalesce(alias_id, 0) "
							  "FROM tfm.job_defs WHERE name = $1",
							  1, types, args, NULL, SPI_OK_SELECT, "cannot read tfm.job_defs") == 0)
	{
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job \"%s\" does not exist", name)));
	}
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		int			nt;

		job->id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		job->name = SPI_getvalue(tup, td, 2);
		job->owner = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
		job->source = DatumGetObjectId(SPI_getbinval(tup, td, 4, &isnull));
		job->dest = DatumGetObjectId(SPI_getbinval(tup, td, 5, &isnull));
		job->nkeys = text_array(SPI_getbinval(tup, td, 6, &isnull), &job->key_cols);
		nt = text_array(SPI_getbinval(tup, td, 7, &isnull), &job->key_types);
		if (nt != job->nkeys)
			elog(ERROR, "tfm.job_defs: job \"%s\" has %d key columns and %d key types", name,
				 job->nkeys, nt);
		job->input = SPI_getvalue(tup, td, 8);
		job->model = SPI_getvalue(tup, td, 9);
		job->task = SPI_getvalue(tup, td, 10);
		job->options = SPI_getvalue(tup, td, 11);
		job->search_path = SPI_getvalue(tup, td, 12);
		job->paused = DatumGetBool(SPI_getbinval(tup, td, 13, &isnull));
		job->batch = DatumGetInt32(SPI_getbinval(tup, td, 14, &isnull));
		job->reprocess_stale = DatumGetBool(SPI_getbinval(tup, td, 15, &isnull));
		job->chunk_tokens = DatumGetInt32(SPI_getbinval(tup, td, 16, &isnull));
		job->chunk_overlap = DatumGetInt32(SPI_getbinval(tup, td, 17, &isnull));
		job->model_id = DatumGetInt32(SPI_getbinval(tup, td, 18, &isnull));
		job->alias_id = DatumGetInt32(SPI_getbinval(tup, td, 19, &isnull));
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(SPI_tuptable);
	return true;
}

static Datum
cstring_array(char **s, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(s[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

int32
tfm_job_insert(const TfmJob *job)
{
	Oid			types[14] = {TEXTOID, OIDOID, OIDOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID,
	TEXTOID, TEXTOID, OIDOID, TEXTOID, TEXTOID, BOOLOID, INT4OID, INT4OID};
	Datum		args[14];
	char		nulls[14];
	bool		isnull;
	int32		id;

	args[0] = CStringGetTextDatum(job->name);
	args[1] = ObjectIdGetDatum(job->owner);
	args[2] = ObjectIdGetDatum(job->source);
	args[3] = cstring_array(job->key_cols, job->nkeys);
	args[4] = cstring_array(job->key_types, job->nkeys);
	args[5] = CStringGetTextDatum(job->input);
	args[6] = CStringGetTextDatum(job->model);
	args[7] = CStringGetTextDatum(job->task);
	args[8] = ObjectIdGetDatum(job->dest);
	args[9] = CStringGetTextDatum(job->options);
	args[10] = CStringGetTextDatum(job->search_path);
	args[11] = BoolGetDatum(job->paused);
	args[12] = Int32GetDatum(job->model_id);
	args[13] = Int32GetDatum(job->alias_id);
	memset(nulls, ' ', sizeof(nulls));
	if (job->alias_id == 0)
		nulls[13] = 'n';
	exec_as_owner("INSERT INTO tfm.job_defs (name, owner, source, key_columns, key_types, "
				  "input, model, task, destination, options, search_path, state, model_id, alias_id) "
				  "VALUES ($1, $2::regrole, $3::regclass, $4, $5, $6, $7, $8, $9::regclass, "
				  "$10::jsonb, $11, CASE WHEN $12 THEN 'paused' ELSE 'active' END, $13, $14) "
				  "RETURNING id",
				  14, types, args, nulls, SPI_OK_INSERT_RETURNING, "cannot write tfm.job_defs");
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return id;
}

void
tfm_job_set_state(int32 id, bool paused)
{
	Oid			types[2] = {INT4OID, BOOLOID};
	Datum		args[2] = {Int32GetDatum(id), BoolGetDatum(paused)};

	exec_as_owner("UPDATE tfm.job_defs SET state = CASE WHEN $2 THEN 'paused' ELSE 'active' END "
				  "WHERE id = $1", 2, types, args, NULL, SPI_OK_UPDATE, "cannot write tfm.job_defs");
}

/*
 * The job's row held (FOR KEY SHARE) until the end of this transaction: a
 * run takes it first in each of its transactions, before the queue, the
 * source or the destination, and tfm_job_drop deletes the row first, so a
 * drop waits for the batch in flight and a run's next batch waits for the
 * drop — never one holding what the other waits for (the source's lock
 * that DROP TRIGGER takes, the queue's rows).  False when the row is gone.
 */
bool
tfm_job_hold(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(id)};

	return exec_as_owner("SELECT 1 FROM tfm.job_defs WHERE id = $1 FOR KEY SHARE", 1, types, args, NULL,
						 SPI_OK_SELECT, "cannot lock tfm.job_defs") > 0;
}

void
tfm_job_delete(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(id)};

	/* the job's row first: it waits for a batch in flight (tfm_job_hold) */
	exec_as_owner("DELETE FROM tfm.job_defs WHERE id = $1", 1, types, args, NULL, SPI_OK_DELETE,
				  "cannot delete job rows");
	exec_as_owner("DELETE FROM tfm.job_queue WHERE job_id = $1", 1, types, args, NULL, SPI_OK_DELETE,
				  "cannot delete job rows");
	exec_as_owner("DELETE FROM tfm.job_errors WHERE job_id = $1", 1, types, args, NULL, SPI_OK_DELETE,
				  "cannot delete job rows");
}

/*
 * Keys into the job's queue, given as one text[] per key column ($2.., n
 * keys each, in queue order): one row per key (column key), skipping a key
 * already queued when skip_queued, or one row per job->batch keys (chunks:
 * column keys, a two-dimensional text[], a key a row).  Only the given
 * values are read here: what reads the job's tables runs as its owner
 * (runtime/jobs/job_run.c, enqueue_from).  Returns the keys queued.
 */
static int64
enqueue(const TfmJob *job, const Datum *cols, bool chunks, bool skip_queued)
{
	int			nk = job->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 2));
	Datum	   *args = palloc(sizeof(Datum) * (nk + 2));
	StringInfoData key,
				from,
				sql;
	int64		n;

	initStringInfo(&key);
	initStringInfo(&from);
	initStringInfo(&sql);
	types[0] = INT4OID;
	args[0] = Int32GetDatum(job->id);
	for (int c = 0; c < nk; c++)
	{
		types[c + 1] = TEXTARRAYOID;
		args[c + 1] = cols[c];
		appendStringInfo(&key, "%sk.k%d", c ? ", " : "", c);
		appendStringInfo(&from, "%sunnest($%d)", c ? ", " : "", c + 2);
	}
	types[nk + 1] = INT4OID;
	args[nk + 1] = Int32GetDatum(Max(job->batch, 1));
	appendStringInfo(&sql, chunks ? "INSERT INTO tfm.job_queue (job_id, keys) SELECT $1, array_agg(ARRAY[%s] ORDER BY k.o) "
					 : "INSERT INTO tfm.job_queue (job_id, key) SELECT $1, ARRAY[%s] ", key.data);
	appendStringInfo(&sql, "FROM ROWS FROM (%s) WITH ORDINALITY AS k(", from.data);
	for (int c = 0; c < nk; c++)
		appendStringInfo(&sql, "k%d, ", c);
	appendStringInfoString(&sql, "o)");
	if (chunks)
		appendStringInfo(&sql, " GROUP BY (k.o - 1) / $%d ORDER BY (k.o - 1) / $%d", nk + 2, nk + 2);
	else
	{
		if (skip_queued)
			appendStringInfo(&sql, " WHERE NOT EXISTS (SELECT FROM tfm.job_queue q "
							 "WHERE q.job_id = $1 AND q.key = ARRAY[%s])", key.data);
		appendStringInfoString(&sql, " ORDER BY k.o");
	}
	n = exec_as_owner(sql.data, nk + 2, types, args, NULL, SPI_OK_INSERT, "cannot write tfm.job_queue");
	if (chunks)
		n = ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(cols[0])), ARR_DIMS(DatumGetArrayTypeP(cols[0])));
	return n;
}

int64
tfm_job_enqueue_keys(const TfmJob *job, const Datum *cols, bool skip_queued)
{
	return enqueue(job, cols, false, skip_queued);
}

int64
tfm_job_enqueue_chunks(const TfmJob *job, const Datum *cols)
{
	return enqueue(job, cols, true, false);
}

int64
tfm_job_model_now(const TfmJob *job, char **name, int32 *id)
{
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(job->model_id), Int32GetDatum(job->alias_id)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;
	int64		v = -1;
	static char *sql = NULL;

	if (name)
		*name = NULL;
	if (id)
		*id = 0;
	if (sql == NULL)
	{
		StringInfoData q;
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&q);
		appendStringInfoString(&q, "SELECT m.version, m.name, m.id FROM tfm.models m WHERE m.id = ");
		tfm_model_of_job_sql(&q, "$1", "$2");
		MemoryContextSwitchTo(old);
		sql = q.data;
	}
	if (exec_as_owner(sql, 2, types, args, NULL, SPI_OK_SELECT, "cannot read tfm.models") > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;

		v = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		if (name)
			*name = MemoryContextStrdup(cxt, TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull)));
		if (id)
			*id = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return v;
}

int32
tfm_job_alias_id(const char *alias)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(alias)};
	bool		isnull;
	int32		id = 0;

	if (exec_as_owner("SELECT id FROM tfm.aliases WHERE name = $1", 1, types, args, NULL,
					  SPI_OK_SELECT, "cannot read tfm.aliases") > 0)
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return id;
}

int64
tfm_job_model_version(const TfmJob *job)
{
	return tfm_job_model_now(job, NULL, NULL);
}

bool
tfm_job_take_truncates(const TfmJob *job)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job->id)};

	return exec_as_owner("DELETE FROM tfm.job_queue WHERE id IN (SELECT id FROM tfm.job_queue "
						 "WHERE job_id = $1 AND key IS NULL AND keys IS NULL FOR UPDATE SKIP LOCKED)",
						 1, types, args, NULL, SPI_OK_DELETE, "cannot write tfm.job_queue") > 0;
}

/* the fourth field of the keys' advisory lock tags (SQL's advisory locks use 1 and 2) */
#define TFM_JOB_KEY_LOCK_CLASS	0x7466	/* "tf" (a uint16) */

/*
 * The claim's statements, saved for the backend (planned once, run as the
 * owner of schema tfm with search_path pinned).
 *
 * A chunk: the oldest queue row holding a backfill's keys that no other
 * runner holds, locked and deleted as one row; whether the job has queue
 * rows of single keys, or errors, that the chunk's keys may have too.
 */
static const char *chunk_take_sql =
"WITH c AS (SELECT ctid AS t, keys FROM tfm.job_queue WHERE job_id = $1 AND keys IS NOT NULL "
"           ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED), "
"d AS (DELETE FROM tfm.job_queue q WHERE q.ctid = (SELECT t FROM c)) "
"SELECT keys, EXISTS (SELECT FROM tfm.job_queue q WHERE q.job_id = $1 AND q.key IS NOT NULL), "
"       EXISTS (SELECT FROM tfm.job_errors x WHERE x.job_id = $1) FROM c";

/*
 * Then, only if there are any, the single-key rows of the chunk's keys
 * ($2, a row of $3 texts a key) that no runner holds, and their errors, go.
 */
static const char *chunk_tidy_sql =
"WITH k AS (SELECT array_agg(u.v ORDER BY u.o) AS key FROM unnest($2::text[]) WITH ORDINALITY AS u(v, o) "
"           GROUP BY (u.o - 1) / $3), "
/* each found through the (job_id, key) index */
"dup AS (SELECT o.t FROM k, LATERAL (SELECT q.ctid AS t FROM tfm.job_queue q "
"        WHERE q.job_id = $1 AND q.key = k.key FOR UPDATE SKIP LOCKED) o), "
"d AS (DELETE FROM tfm.job_queue q WHERE q.ctid = ANY (ARRAY(SELECT t FROM dup))) "
"DELETE FROM tfm.job_errors x USING k WHERE x.job_id = $1 AND x.key = k.key";

/*
 * Single keys (enqueued by the triggers): up to $2 queue rows, oldest
 * first, with the other rows of the same keys that no runner holds, and
 * the keys' errors; each key once.
 */
static const char *claim_keys_sql =
"WITH c AS (SELECT ctid AS t, id, key FROM tfm.job_queue WHERE job_id = $1 AND key IS NOT NULL "
"           ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED), "
"dup AS (SELECT o.t FROM c, LATERAL (SELECT q.ctid AS t FROM tfm.job_queue q "
"        WHERE q.job_id = $1 AND q.key = c.key AND q.id <> c.id FOR UPDATE SKIP LOCKED) o), "
/* queue rows are never updated: their ctids stay theirs while locked */
"d AS (DELETE FROM tfm.job_queue q WHERE q.ctid = ANY (ARRAY(SELECT t FROM c UNION ALL SELECT t FROM dup))), "
"e AS (DELETE FROM tfm.job_errors x USING c WHERE x.job_id = $1 AND x.key = c.key) "
"SELECT DISTINCT key FROM c";

static SPIPlanPtr
claim_plan(SPIPlanPtr *saved, const char *sql, int nargs, Oid *types)
{
	if (*saved == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, nargs, types);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "cannot prepare the claim from tfm.job_queue: %s",
				 SPI_result_code_string(SPI_result));
		*saved = p;
	}
	return *saved;
}

typedef struct ClaimedKey
{
	int32		hash;
	int			index;			/* in the claim's result */
} ClaimedKey;

static int
cmp_claimed(const void *a, const void *b)
{
	const ClaimedKey *x = a,
			   *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static bool
lock_key(const TfmJob *job, int32 hash, bool wait)
{
	LOCKTAG		tag;

	/*
	 * tfm's own class (an advisory lock tag whose fourth field no SQL
	 * function takes): no role can hold a job's keys with pg_advisory_lock
	 * and stall its runs.
	 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) job->id, (uint32) hash, TFM_JOB_KEY_LOCK_CLASS);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * The keys' advisory locks in one pass, in hash order: a key another runner
 * holds (it is processing that key now, perhaps from a row as it was before
 * the change that queued ours) is queued again, one row, and left out.  If
 * every key is held elsewhere, the locks are waited for instead (in hash
 * order, so two runners never wait for each other in a circle), so that a
 * runner does not spin on keys it cannot take.  Returns the keys kept,
 * compacted to the front of keys.
 */
static int
lock_keys(const TfmJob *job, Datum *keys, int32 *hashes, int count)
{
	ClaimedKey *order = palloc(sizeof(ClaimedKey) * count);
	bool	   *held = palloc(sizeof(bool) * count);
	int			kept = 0,
				n = 0;

	for (int i = 0; i < count; i++)
	{
		order[i].hash = hashes[i];
		order[i].index = i;
	}
	qsort(order, count, sizeof(ClaimedKey), cmp_claimed);
	for (int i = 0; i < count; i++)
	{
		/* keys of one hash share a lock */
		bool		h = i > 0 && order[i].hash == order[i - 1].hash
			? held[order[i - 1].index] : lock_key(job, order[i].hash, false);

		held[order[i].index] = h;
		kept += h;
	}
	if (kept == 0)
	{
		for (int i = 0; i < count; i++)
			if (i == 0 || order[i].hash != order[i - 1].hash)
				(void) lock_key(job, order[i].hash, true);
		return count;
	}
	for (int i = 0; i < count; i++)
	{
		if (held[i])
			keys[n++] = keys[i];
		else
		{
			Oid			types[2] = {INT4OID, TEXTARRAYOID};
			Datum		args[2] = {Int32GetDatum(job->id), keys[i]};

			(void) tfm_spi_exec("INSERT INTO tfm.job_queue (job_id, key) VALUES ($1, $2)", 2, types, args,
								NULL, false, 0, SPI_OK_INSERT, "cannot write tfm.job_queue");
		}
	}
	return n;
}

/* the lock hash of a key: hashtext(key::text) */
static int32
key_hash(FmgrInfo *array_out, Datum key)
{
	char	   *s = OutputFunctionCall(array_out, key);
	int32		h = (int32) DatumGetUInt32(hash_any((unsigned char *) s, strlen(s)));

	pfree(s);
	return h;
}

/* the oldest chunk no other runner holds: its keys into *keys (in cxt); 0 if none */
static int
claim_chunk(const TfmJob *job, MemoryContext cxt, Datum **keys)
{
	static SPIPlanPtr take = NULL,
				tidy = NULL;
	Oid			types[3] = {INT4OID, TEXTARRAYOID, INT4OID};
	Datum		args[3] = {Int32GetDatum(job->id), (Datum) 0, Int32GetDatum(job->nkeys)};
	HeapTuple	tup;
	TupleDesc	td;
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;
	bool		isnull,
				singles,
				errors;
	int			ne,
				n;

	if (SPI_execute_plan(claim_plan(&take, chunk_take_sql, 1, types), args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "cannot claim from tfm.job_queue");
	if (SPI_processed == 0)
		return 0;
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	a = DatumGetArrayTypePCopy(SPI_getbinval(tup, td, 1, &isnull));
	singles = DatumGetBool(SPI_getbinval(tup, td, 2, &isnull));
	errors = DatumGetBool(SPI_getbinval(tup, td, 3, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (ARR_NDIM(a) != 2 || ARR_DIMS(a)[1] != job->nkeys || ARR_HASNULL(a))
		elog(ERROR, "job \"%s\": a queued chunk of keys is not a %d-column array", job->name, job->nkeys);
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &ne);
	n = ARR_DIMS(a)[0];
	*keys = MemoryContextAlloc(cxt, sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		(*keys)[i] = PointerGetDatum(construct_array(elems + (size_t) i * job->nkeys, job->nkeys, TEXTOID, -1,
													 false, TYPALIGN_INT));
		MemoryContextSwitchTo(old);
	}
	if (singles || errors)
	{
		args[1] = PointerGetDatum(a);
		if (SPI_execute_plan(claim_plan(&tidy, chunk_tidy_sql, 3, types), args, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "cannot claim from tfm.job_queue");
	}
	return n;
}

int
tfm_job_claim(const TfmJob *job, int n, Datum **keys)
{
	static SPIPlanPtr keys_plan = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	TfmAsOwner	as;
	int			count;
	int32	   *hashes;
	FmgrInfo	array_out;

	begin(&as);
	/* a backfill's chunk first (queued before what the triggers queue since), else single keys */
	count = claim_chunk(job, cxt, keys);
	if (count == 0)
	{
		Oid			types[2] = {INT4OID, INT4OID};
		Datum		args[2] = {Int32GetDatum(job->id), Int32GetDatum(n)};

		if (SPI_execute_plan(claim_plan(&keys_plan, claim_keys_sql, 2, types), args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "cannot claim from tfm.job_queue");
		count = (int) SPI_processed;
		*keys = MemoryContextAlloc(cxt, sizeof(Datum) * Max(count, 1));
		for (int i = 0; i < count; i++)
		{
			bool		isnull;
			Datum		k = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			(*keys)[i] = PointerGetDatum(DatumGetArrayTypePCopy(k));
			MemoryContextSwitchTo(old);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	hashes = palloc(sizeof(int32) * Max(count, 1));
	fmgr_info(F_ARRAY_OUT, &array_out);
	for (int i = 0; i < count; i++)
		hashes[i] = key_hash(&array_out, (*keys)[i]);
	if (count > 0)
		count = lock_keys(job, *keys, hashes, count);
	tfm_as_owner_end(&as);
	return count;
}

void
tfm_job_record_error(const TfmJob *job, Datum key, const char *message, int sqlerrcode)
{
	Oid			types[4] = {INT4OID, TEXTARRAYOID, TEXTOID, TEXTOID};
	Datum		args[4];

	args[0] = Int32GetDatum(job->id);
	args[1] = key;
	args[2] = CStringGetTextDatum(message);
	args[3] = CStringGetTextDatum(unpack_sql_state(sqlerrcode));
	exec_as_owner("INSERT INTO tfm.job_errors (job_id, key, message, sqlstate) "
				  "VALUES ($1, $2, $3, $4) ON CONFLICT (job_id, key) DO UPDATE "
				  "SET message = excluded.message, sqlstate = excluded.sqlstate, at = now()",
				  4, types, args, NULL, SPI_OK_INSERT, "cannot write tfm.job_errors");
}

void
tfm_job_count(const TfmJob *job, int64 done, int64 deleted, int64 failed, const char *last_error,
			  TimestampTz run_started, int64 run_rows)
{
	Oid			types[7] = {INT4OID, INT8OID, INT8OID, INT8OID, TEXTOID, TIMESTAMPTZOID, INT8OID};
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', last_error ? ' ' : 'n', ' ', ' '};

	args[0] = Int32GetDatum(job->id);
	args[1] = Int64GetDatum(done);
	args[2] = Int64GetDatum(deleted);
	args[3] = Int64GetDatum(failed);
	args[4] = last_error ? CStringGetTextDatum(last_error) : (Datum) 0;
	args[5] = TimestampTzGetDatum(run_started);
	args[6] = Int64GetDatum(run_rows);
	exec_as_owner("UPDATE tfm.job_defs SET rows_done = rows_done + $2, "
				  "rows_deleted = rows_deleted + $3, rows_failed = rows_failed + $4, "
				  "last_error = coalesce($5, last_error), "
				  "last_error_at = CASE WHEN $5 IS NULL THEN last_error_at ELSE now() END, "
				  "last_run_at = clock_timestamp(), run_started_at = $6, run_rows = $7 WHERE id = $1",
				  7, types, args, nulls, SPI_OK_UPDATE, "cannot write tfm.job_defs");
}
