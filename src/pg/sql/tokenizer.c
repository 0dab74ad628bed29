/*
 * tokenizer_sql.c — tokenizers in SQL: the training aggregate, import,
 * storage in tfm.tokenizers / tfm.vocab / tfm.merges, a per-backend cache,
 * and tfm_tokenize / tfm_detokenize / tfm_tokens / tfm_tokenizer_drop.
 *
 * The aggregate counts pre-tokens in its transition state (parallel-safe:
 * partial states are serialized, sent to the leader and merged).  Its final
 * function learns the vocabulary, but it may run under a Gather node, while
 * the leader is in parallel mode and cannot write.  So it only arms a
 * pending store, which an ExecutorFinish hook performs once the executor
 * has left parallel mode, in the same statement and transaction.  A pending
 * store that never happens (an error) is dropped at transaction end.
 *
 * Tokenizers never change once stored (drop and train again to replace
 * one), so the cache keys them by their row id, revalidated once per
 * statement by name.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "tfm/tokenizer.h"
#include "tfm_pg.h"
#include "runtime/rows.h"

#define TFM_TOK_CACHE_MAX 8

/* ---- errors from the core ------------------------------------------------ */

static void
tok_check(int status, const tfm_tok_err *err, const char *doing)
{
	int			code;

	if (status == TFM_TOK_OK)
		return;
	switch (status)
	{
		case TFM_TOK_ENOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case TFM_TOK_EVOCAB:
		case TFM_TOK_EARG:
			code = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		case TFM_TOK_EFORMAT:
			code = ERRCODE_INVALID_TEXT_REPRESENTATION;
			break;
		case TFM_TOK_ERANGE:
			code = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
			break;
		case TFM_TOK_ELIMIT:
			code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		case TFM_TOK_ECANCEL:
			code = ERRCODE_QUERY_CANCELED;
			break;
		default:
			code = ERRCODE_INTERNAL_ERROR;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s: %s", doing,
					err && err->msg[0] ? err->msg : tfm_tok_status_name(status))));
}

/* ---- objects owned by memory contexts ------------------------------------ */

typedef struct TokOwner
{
	MemoryContextCallback cb;
	tfm_tokenizer *tok;
	tfm_tok_counter *counter;
} TokOwner;

static void
tok_owner_fire(void *arg)
{
	TokOwner   *o = arg;

	if (o->tok)
		tfm_tok_free(o->tok);
	if (o->counter)
		tfm_tok_counter_free(o->counter);
	o->tok = NULL;
	o->counter = NULL;
}

static TokOwner *
tok_owner(MemoryContext cxt)
{
	TokOwner   *o = MemoryContextAllocZero(cxt, sizeof(TokOwner));

	o->cb.func = tok_owner_fire;
	o->cb.arg = o;
	MemoryContextRegisterResetCallback(cxt, &o->cb);
	return o;
}

/* ---- storage ------------------------------------------------------------- */

/*
 * read_only: from the aggregate's transition function, which may run in a
 * parallel worker.  Otherwise the check takes a new snapshot and command id,
 * so it also sees what this statement stored a moment ago.
 */
static bool
tokenizer_exists(const char *name, bool read_only)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	bool		found;

	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT 1 FROM tfm.tokenizers WHERE name = $1", 1, types, args,
						  NULL, read_only, 1);
	found = SPI_processed > 0;
	tfm_spi_finish_owner(&as);
	return found;
}

static void
check_new_name(const char *name, bool read_only)
{
	tfm_check_new_name("tokenizer", name);
	if (tokenizer_exists(name, read_only))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("tokenizer \"%s\" already exists", name),
				 errhint("Drop it first with tfm_tokenizer_drop('%s').", name)));
}

static char *
summary(const char *name, const tfm_tokenizer *t)
{
	tfm_tok_info info;

	tfm_tok_get_info(&info, t);
	if (info.n_merges > 0)
		return psprintf("tokenizer \"%s\": %s, %d ids, %d merges", name,
						tfm_tok_kind_name(info.kind), info.vocab_size, info.n_merges);
	return psprintf("tokenizer \"%s\": %s, %d ids", name, tfm_tok_kind_name(info.kind),
					info.vocab_size);
}

static void
store_tokenizer(const char *name, const tfm_tokenizer *t, int32 min_count, Oid owner)
{
	TfmAsOwner	as;
	tfm_tok_info info;
	tfm_tok_err err;
	Datum	   *pieces;
	Datum	   *lefts,
			   *rights;
	StringInfoData opts;
	int32		id;
	bool		isnull;

	tfm_tok_get_info(&info, t);
	initStringInfo(&opts);
	appendStringInfo(&opts, "{\"format_version\": %d, \"flags\": %u, \"n_merges\": %d, "
					 "\"min_count\": %d, \"pad_id\": %d, \"specials\": [",
					 info.format_version, info.flags, info.n_merges, min_count,
					 info.special_ids[TFM_TOK_PAD]);
	for (int i = 0; i < TFM_TOK_N_SPECIALS; i++)
		appendStringInfo(&opts, "%s%d", i ? ", " : "", info.special_ids[i]);
	appendStringInfoString(&opts, "]}");

	pieces = palloc(sizeof(Datum) * info.vocab_size);
	for (int32 i = 0; i < info.vocab_size; i++)
	{
		const uint8_t *b;
		size_t		len;
		bytea	   *p;

		tok_check(tfm_tok_piece(&b, &len, t, i, &err), &err, "cannot store the tokenizer");
		p = palloc(VARHDRSZ + len);
		SET_VARSIZE(p, VARHDRSZ + len);
		memcpy(VARDATA(p), b, len);
		pieces[i] = PointerGetDatum(p);
	}
	lefts = palloc(sizeof(Datum) * Max(info.n_merges, 1));
	rights = palloc(sizeof(Datum) * Max(info.n_merges, 1));
	for (int32 r = 0; r < info.n_merges; r++)
	{
		int32_t		l,
					rr,
					res;

		tok_check(tfm_tok_merge(&l, &rr, &res, t, r, &err), &err, "cannot store the tokenizer");
		lefts[r] = Int32GetDatum(l);
		rights[r] = Int32GetDatum(rr);
	}

	tfm_spi_connect_owner(&as);
	{
		Oid			types[5] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, OIDOID};
		Datum		args[5];

		args[0] = CStringGetTextDatum(name);
		args[1] = CStringGetTextDatum(tfm_tok_kind_name(info.kind));
		args[2] = Int32GetDatum(info.vocab_size);
		args[3] = CStringGetTextDatum(opts.data);
		args[4] = ObjectIdGetDatum(owner);
		if (SPI_execute_with_args("INSERT INTO tfm.tokenizers (name, kind, vocab_size, options, owner) "
								  "VALUES ($1, $2, $3, $4::jsonb, $5::regrole) RETURNING id",
								  5, types, args, NULL, false, 1) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "cannot insert into tfm.tokenizers");
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	{
		Oid			types[2] = {INT4OID, BYTEAARRAYOID};
		Datum		args[2];

		args[0] = Int32GetDatum(id);
		args[1] = PointerGetDatum(construct_array(pieces, info.vocab_size, BYTEAOID, -1, false,
												  TYPALIGN_INT));
		if (SPI_execute_with_args("INSERT INTO tfm.vocab (tokenizer_id, id, piece) "
								  "SELECT $1, (u.i - 1)::int, u.p FROM unnest($2) WITH ORDINALITY AS u(p, i)",
								  2, types, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "cannot insert into tfm.vocab");
	}
	if (info.n_merges > 0)
	{
		Oid			types[3] = {INT4OID, INT4ARRAYOID, INT4ARRAYOID};
		Datum		args[3];

		args[0] = Int32GetDatum(id);
		args[1] = PointerGetDatum(construct_array(lefts, info.n_merges, INT4OID, 4, true, TYPALIGN_INT));
		args[2] = PointerGetDatum(construct_array(rights, info.n_merges, INT4OID, 4, true, TYPALIGN_INT));
		if (SPI_execute_with_args("INSERT INTO tfm.merges (tokenizer_id, rank, left_id, right_id) "
								  "SELECT $1, (u.i - 1)::int, u.l, u.r "
								  "FROM unnest($2, $3) WITH ORDINALITY AS u(l, r, i)",
								  3, types, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "cannot insert into tfm.merges");
	}
	tfm_spi_finish_owner(&as);
}

/* ---- the per-backend cache ----------------------------------------------- */

typedef struct TokEntry
{
	bool		used;
	char	   *name;			/* TopMemoryContext: names have no length limit */
	int32		id;
	tfm_tokenizer *tok;
	tfm_tok_info info;
	TfmStamp	stamp;
	Oid			checked_user;	/* the role the stamp's use check was for */
	uint64		last_use;
} TokEntry;

static TokEntry tok_cache[TFM_TOK_CACHE_MAX];
static uint64 tok_clock = 0;

static void
tok_evict(TokEntry *e)
{
	if (e->used && e->tok)
		tfm_tok_free(e->tok);
	if (e->name)
		pfree(e->name);
	memset(e, 0, sizeof(*e));
}

/* read a tokenizer's rows and rebuild it */
static tfm_tokenizer *
tok_load(const char *name, int32 *idp)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	tfm_tok_info info;
	tfm_tok_err err;
	tfm_tokenizer *tok = NULL;
	HeapTuple	tup;
	TupleDesc	td;
	bool		isnull;
	int32		id;
	char	   *kind;
	const uint8_t **pieces;
	size_t	   *lens;
	int32_t    *ml = NULL,
			   *mr = NULL;
	int			status;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT id, kind, vocab_size, (options->>'format_version')::int, "
							  "(options->>'flags')::int, (options->>'n_merges')::int, "
							  "ARRAY(SELECT jsonb_array_elements_text(options->'specials')::int) "
							  "FROM tfm.tokenizers WHERE name = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.tokenizers");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tokenizer \"%s\" does not exist", name)));
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	memset(&info, 0, sizeof(info));
	id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	kind = TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
	tfm_tok_kind_parse(&info.kind, kind);
	info.vocab_size = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
	info.format_version = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
	info.flags = (uint32) DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
	info.n_merges = DatumGetInt32(SPI_getbinval(tup, td, 6, &isnull));
	{
		ArrayType  *sp = DatumGetArrayTypeP(SPI_getbinval(tup, td, 7, &isnull));

		if (ArrayGetNItems(ARR_NDIM(sp), ARR_DIMS(sp)) != TFM_TOK_N_SPECIALS)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tokenizer \"%s\" has a malformed list of special ids", name)));
		memcpy(info.special_ids, ARR_DATA_PTR(sp), sizeof(info.special_ids));
	}

	pieces = palloc0(sizeof(uint8_t *) * Max(info.vocab_size, 1));
	lens = palloc0(sizeof(size_t) * Max(info.vocab_size, 1));
	args[0] = Int32GetDatum(id);
	types[0] = INT4OID;
	if (SPI_execute_with_args("SELECT id, piece FROM tfm.vocab WHERE tokenizer_id = $1",
							  1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "cannot read tfm.vocab");
	if ((int64) SPI_processed != info.vocab_size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("tokenizer \"%s\" has %lld pieces for %d ids", name,
						(long long) SPI_processed, info.vocab_size)));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		i = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
		bytea	   *p = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));

		if (i < 0 || i >= info.vocab_size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tokenizer \"%s\" has a piece for id %d, outside its vocabulary", name, i)));
		pieces[i] = (const uint8_t *) VARDATA_ANY(p);
		lens[i] = VARSIZE_ANY_EXHDR(p);
	}
	if (info.n_merges > 0)
	{
		SPITupleTable *vt = SPI_tuptable;

		ml = palloc(sizeof(int32_t) * info.n_merges);
		mr = palloc(sizeof(int32_t) * info.n_merges);
		if (SPI_execute_with_args("SELECT left_id, right_id FROM tfm.merges WHERE tokenizer_id = $1 "
								  "ORDER BY rank", 1, types, args, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "cannot read tfm.merges");
		if ((int64) SPI_processed != info.n_merges)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tokenizer \"%s\" has %lld merges, its row says %d", name,
							(long long) SPI_processed, info.n_merges)));
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			ml[r] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
			mr[r] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));
		}
		(void) vt;
	}
	status = tfm_tok_load(&tok, &info, pieces, lens, ml, mr, &err);
	tfm_spi_finish_owner(&as);
	tok_check(status, &err, psprintf("cannot load tokenizer \"%s\"", name));
	*idp = id;
	return tok;
}

/* the tokenizer called name, from the cache (valid for the current call) */
static TokEntry *
tok_get(const char *name)
{
	TfmAsOwner	as;
	TokEntry   *e = NULL;
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		args[2];
	int32		id = -1;
	bool		may_use = false;
	bool		isnull;

	tfm_check_name("tokenizer", name);
	for (int i = 0; i < TFM_TOK_CACHE_MAX; i++)
		if (tok_cache[i].used && strcmp(tok_cache[i].name, name) == 0)
			e = &tok_cache[i];
	if (e && tfm_stamp_is_now(&e->stamp) && e->checked_user == GetUserId())
	{
		e->last_use = ++tok_clock;
		return e;
	}
	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(GetUserId());
	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT id, tfm.may_use_tokenizer(id, $2) FROM tfm.tokenizers WHERE name = $1",
						  2, types, args, NULL, true, 1);
	if (SPI_processed > 0)
	{
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		may_use = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	tfm_spi_finish_owner(&as);
	if (id < 0)
	{
		if (e)
			tok_evict(e);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tokenizer \"%s\" does not exist", name)));
	}
	if (!may_use)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for tokenizer \"%s\": use privilege required", name),
				 errhint("The owner of the tokenizer, or of a model that uses it, can grant use.")));
	if (!e || e->id != id)
	{
		TokOwner   *own = tok_owner(CurrentMemoryContext);

		if (e)
			tok_evict(e);
		own->tok = tok_load(name, &id);
		for (int i = 0; i < TFM_TOK_CACHE_MAX && !e; i++)
			if (!tok_cache[i].used)
				e = &tok_cache[i];
		if (!e)
		{
			e = &tok_cache[0];
			for (int i = 1; i < TFM_TOK_CACHE_MAX; i++)
				if (tok_cache[i].last_use < e->last_use)
					e = &tok_cache[i];
			tok_evict(e);
		}
		e->used = true;
		e->name = MemoryContextStrdup(TopMemoryContext, name);
		e->id = id;
		e->tok = own->tok;
		own->tok = NULL;
		tfm_tok_get_info(&e->info, e->tok);
	}
	tfm_stamp_now(&e->stamp);
	e->checked_user = GetUserId();
	e->last_use = ++tok_clock;
	return e;
}

/* ---- services for models ------------------------------------------------- */

void
tfm_tokenizer_specials(const char *name, TfmSpecials *sp)
{
	TokEntry   *e = tok_get(name);

	sp->pad = e->info.special_ids[TFM_TOK_PAD];
	sp->unk = e->info.special_ids[TFM_TOK_UNK];
	sp->bos = e->info.special_ids[TFM_TOK_BOS];
	sp->eos = e->info.special_ids[TFM_TOK_EOS];
	sp->cls = e->info.special_ids[TFM_TOK_CLS];
	sp->sep = e->info.special_ids[TFM_TOK_SEP];
}

static int32 *
encode(TokEntry *e, const char *text, size_t len, uint32 flags, size_t max_length, int *n)
{
	size_t		cap = tfm_tok_encode_bound(len, flags);
	int32	   *ids;
	size_t		got;
	tfm_tok_err err;

	/* max_length only lowers the bound (it may be 2^31 - 1 for a short text) */
	if (max_length > 0 && max_length < cap)
		cap = max_length;

	if (cap > MaxAllocHugeSize / sizeof(int32))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("text too long to tokenize")));
	tfm_work_mem_require(sizeof(int32) * cap + tfm_tok_encode_scratch_bytes(e->tok, len),
						 psprintf("tokenizing a text of %zu bytes", len), "split the text");
	ids = palloc_extended(sizeof(int32) * Max(cap, 1), MCXT_ALLOC_HUGE);
	/* a long text ends at a cancel or statement_timeout (encoded again if nothing was raised) */
	tfm_tok_set_poll(e->tok, tfm_interrupt_pending, NULL);
	for (;;)
	{
		int			st = tfm_tok_encode(ids, NULL, cap, &got, e->tok, text, len, flags,
										max_length, &err);

		if (st != TFM_TOK_ECANCEL)
		{
			tok_check(st, &err, "cannot tokenize");
			break;
		}
		CHECK_FOR_INTERRUPTS();
	}
	*n = (int) got;
	return ids;
}

int32 *
tfm_tokenizer_encode(const char *name, const char *text, size_t len, int *n)
{
	TokEntry   *e = tok_get(name);

	/* a Llama tokenizer's post-processor puts <s> before every text */
	return encode(e, text, len, (e->info.flags & TFM_TOK_INFO_TEXT_BOS) ? TFM_TOK_ADD_BOS : 0, 0, n);
}

/* ---- the aggregate ------------------------------------------------------- */

typedef struct TokAgg
{
	char	   *name;
	char	   *kind;			/* as given on the first row, NULL if not given */
	int32		vocab_size;		/* as given on the first row, -1 if not given */
	TokOwner   *own;			/* holds the counter */
} TokAgg;

/* t's bytes equal the string s */
static bool
text_is(text *t, const char *s)
{
	size_t		n = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == n && memcmp(VARDATA_ANY(t), s, n) == 0;
}

static TokAgg *
agg_new(MemoryContext aggcxt, const char *name, const tfm_tok_options *opt)
{
	TokAgg	   *st = MemoryContextAllocZero(aggcxt, sizeof(TokAgg));
	tfm_tok_err err;

	st->name = MemoryContextStrdup(aggcxt, name);
	st->vocab_size = -1;
	st->own = tok_owner(aggcxt);
	if (opt)
		tok_check(tfm_tok_counter_create(&st->own->counter, opt, &err), &err,
				  "cannot train the tokenizer");
	return st;
}

static MemoryContext
agg_context(FunctionCallInfo fcinfo, const char *fn)
{
	MemoryContext aggcxt;
	int			how = AggCheckCallContext(fcinfo, &aggcxt);

	if (how == 0)
		elog(ERROR, "%s called in non-aggregate context", fn);
	/* a window would call the final function once per row: one store each */
	if (how == AGG_CONTEXT_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tfm_tokenizer_train cannot be used as a window function")));
	return aggcxt;
}

static void
kind_differs(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("the tokenizer kind must be the same on every row")));
}

static void
vocab_size_differs(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("vocab_size must be the same on every row")));
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_count);
Datum
tfm_tokenizer_count(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "tfm_tokenizer_count");
	TokAgg	   *st = PG_ARGISNULL(0) ? NULL : (TokAgg *) PG_GETARG_POINTER(0);
	char	   *name;
	text	   *t;
	tfm_tok_err err;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the tokenizer name must not be NULL")));
	if (PG_NARGS() > 3 && PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the tokenizer kind must not be NULL")));
	if (PG_NARGS() > 4 && PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("vocab_size must not be NULL")));
	if (st == NULL && PG_ARGISNULL(2))
		PG_RETURN_NULL();		/* NULL rows are skipped: only NULLs is no rows */
	if (st == NULL)
	{
		tfm_tok_options opt;
		tfm_tok_kind kind = TFM_TOK_BPE;
		char	   *k = NULL;

		name = text_to_cstring(PG_GETARG_TEXT_PP(1));
		check_new_name(name, true);
		if (PG_NARGS() > 3)
		{
			k = text_to_cstring(PG_GETARG_TEXT_PP(3));
			if (tfm_tok_kind_parse(&kind, k) != TFM_TOK_OK)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown tokenizer kind \"%s\"", k),
						 errhint("Valid kinds are byte, char, word, bpe and wordpiece.")));
		}
		tfm_tok_options_init(&opt, kind);
		if (PG_NARGS() > 4)
		{
			opt.vocab_size = PG_GETARG_INT32(4);
			if (opt.vocab_size < TFM_TOK_MIN_VOCAB_SIZE || opt.vocab_size > TFM_TOK_MAX_VOCAB_SIZE)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("vocab_size must be between %d and %d, not %d",
								TFM_TOK_MIN_VOCAB_SIZE, TFM_TOK_MAX_VOCAB_SIZE, opt.vocab_size)));
		}
		st = agg_new(aggcxt, name, &opt);
		if (k)
			st->kind = MemoryContextStrdup(aggcxt, k);
		if (PG_NARGS() > 4)
			st->vocab_size = opt.vocab_size;
	}
	else
	{
		/* the options are the first row's: every row must give the same */
		if (!text_is(PG_GETARG_TEXT_PP(1), st->name))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the tokenizer name must be the same on every row")));
		if (st->kind && !text_is(PG_GETARG_TEXT_PP(3), st->kind))
		{
			/* another spelling of the same kind is the same kind */
			tfm_tok_kind k1,
						k2;

			if (tfm_tok_kind_parse(&k1, st->kind) != TFM_TOK_OK ||
				tfm_tok_kind_parse(&k2, text_to_cstring(PG_GETARG_TEXT_PP(3))) != TFM_TOK_OK ||
				k1 != k2)
				kind_differs();
		}
		if (st->vocab_size >= 0 && PG_GETARG_INT32(4) != st->vocab_size)
			vocab_size_differs();
	}
	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(st);	/* NULL rows are skipped */
	t = PG_GETARG_TEXT_PP(2);
	CHECK_FOR_INTERRUPTS();
	tok_check(tfm_tok_counter_add(st->own->counter, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &err),
			  &err, "cannot count the row");
	PG_RETURN_POINTER(st);
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_combine);
Datum
tfm_tokenizer_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "tfm_tokenizer_combine");
	TokAgg	   *a = PG_ARGISNULL(0) ? NULL : (TokAgg *) PG_GETARG_POINTER(0);
	TokAgg	   *b = PG_ARGISNULL(1) ? NULL : (TokAgg *) PG_GETARG_POINTER(1);
	tfm_tok_err err;

	if (b == NULL)
		PG_RETURN_POINTER(a);
	if (a == NULL)
	{
		/* copy b into the aggregate context */
		tfm_tok_options opt;

		tfm_tok_counter_get_options(&opt, b->own->counter);
		a = agg_new(aggcxt, b->name, &opt);
	}
	if (strcmp(a->name, b->name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tokenizer name must be the same on every row")));
	{
		/* workers whose rows each agree may still disagree with each other */
		tfm_tok_options oa,
					ob;

		tfm_tok_counter_get_options(&oa, a->own->counter);
		tfm_tok_counter_get_options(&ob, b->own->counter);
		if (oa.kind != ob.kind)
			kind_differs();
		if (oa.vocab_size != ob.vocab_size)
			vocab_size_differs();
	}
	CHECK_FOR_INTERRUPTS();
	tok_check(tfm_tok_counter_merge(a->own->counter, b->own->counter, &err), &err,
			  "cannot combine partial counts");
	PG_RETURN_POINTER(a);
}

/* serialized state: int32 name length, name, int64 counter length, counter image */
PG_FUNCTION_INFO_V1(tfm_tokenizer_serialize);
Datum
tfm_tokenizer_serialize(PG_FUNCTION_ARGS)
{
	TokAgg	   *st = (TokAgg *) PG_GETARG_POINTER(0);
	size_t		n = tfm_tok_counter_serialized_size(st->own->counter);
	size_t		nl = strlen(st->name);
	bytea	   *out;
	char	   *p;
	tfm_tok_err err;
	int32		nl32 = (int32) nl;
	int64		n64 = (int64) n;

	(void) agg_context(fcinfo, "tfm_tokenizer_serialize");
	out = palloc_extended(VARHDRSZ + 4 + nl + 8 + n, MCXT_ALLOC_HUGE);
	SET_VARSIZE(out, VARHDRSZ + 4 + nl + 8 + n);
	p = VARDATA(out);
	memcpy(p, &nl32, 4);
	memcpy(p + 4, st->name, nl);
	memcpy(p + 4 + nl, &n64, 8);
	tok_check(tfm_tok_counter_serialize((uint8_t *) p + 12 + nl, n, st->own->counter, &err),
			  &err, "cannot serialize partial counts");
	PG_RETURN_BYTEA_P(out);
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_deserialize);
Datum
tfm_tokenizer_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "tfm_tokenizer_deserialize");
	bytea	   *in = PG_GETARG_BYTEA_PP(0);
	const char *p = VARDATA_ANY(in);
	size_t		total = VARSIZE_ANY_EXHDR(in);
	int32		nl;
	int64		n;
	TokAgg	   *st;
	tfm_tok_err err;
	char	   *name;

	if (total < 12)
		elog(ERROR, "malformed tokenizer counting state");
	memcpy(&nl, p, 4);
	if (nl < 0 || (size_t) nl + 12 > total)
		elog(ERROR, "malformed tokenizer counting state");
	memcpy(&n, p + 4 + nl, 8);
	if (n < 0 || (size_t) n != total - 12 - nl)
		elog(ERROR, "malformed tokenizer counting state");
	name = pnstrdup(p + 4, nl);
	st = agg_new(aggcxt, name, NULL);
	tok_check(tfm_tok_counter_deserialize(&st->own->counter, (const uint8_t *) p + 12 + nl,
										  (size_t) n, &err),
			  &err, "cannot read partial counts");
	PG_RETURN_POINTER(st);
}

/* stores armed by the final function, done by the ExecutorFinish hook */
typedef struct PendingStore
{
	char	   *name;
	tfm_tokenizer *tok;
	int32		min_count;
	Oid			owner;			/* the role that ran the aggregate */
	int			nest_level;		/* of the (sub)transaction that armed it */
	struct PendingStore *next;
} PendingStore;

static PendingStore *pending = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;
static bool callbacks_registered = false;

static void
drop_pending(void)
{
	while (pending)
	{
		PendingStore *p = pending;

		pending = p->next;
		tfm_tok_free(p->tok);
		pfree(p->name);
		pfree(p);
	}
}

static void
pending_xact_callback(XactEvent event, void *arg)
{
	(void) arg;
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
	{
		/* the memory is TopMemoryContext's; free the core objects */
		drop_pending();
	}
}

/*
 * A subtransaction that fails after the final function ran (a later error
 * in the same statement, caught by a PL/pgSQL exception block or rolled
 * back to a savepoint) must take its stores with it; one that commits hands
 * them to its parent.
 */
static void
pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	PendingStore **pp = &pending;

	(void) mySubid;
	(void) parentSubid;
	(void) arg;
	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	while (*pp)
	{
		PendingStore *p = *pp;

		if (p->nest_level < level)
			pp = &p->next;
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			p->nest_level = level - 1;
			pp = &p->next;
		}
		else
		{
			*pp = p->next;
			tfm_tok_free(p->tok);
			pfree(p->name);
			pfree(p);
		}
	}
}

static void
store_pending(void)
{
	bool		pushed = false;

	if (pending && !IsInParallelMode() && !ActiveSnapshotSet())
	{
		/* ExecutorFinish may run from portal cleanup, without a snapshot */
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	while (pending && !IsInParallelMode())
	{
		PendingStore *p = pending;
		TokOwner   *own = tok_owner(CurrentMemoryContext);
		char	   *name = pstrdup(p->name);
		int32		min_count = p->min_count;
		Oid			owner = p->owner;

		/* from here on an error frees the tokenizer with the context */
		pending = p->next;
		own->tok = p->tok;
		pfree(p->name);
		pfree(p);
		if (tokenizer_exists(name, false))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("tokenizer \"%s\" already exists", name)));
		store_tokenizer(name, own->tok, min_count, owner);
		tfm_tok_free(own->tok);
		own->tok = NULL;
	}
	if (pushed)
		PopActiveSnapshot();
}

/*
 * The stores run SQL through SPI, whose statements come back through this
 * hook: those must not store the rest of the list (re-entered, a store
 * would run between another's existence check and its insert).
 */
static bool storing = false;

static void
tfm_executor_finish(QueryDesc *qd)
{
	if (prev_executor_finish)
		prev_executor_finish(qd);
	else
		standard_ExecutorFinish(qd);
	if (pending && !storing)
	{
		storing = true;
		PG_TRY();
		{
			store_pending();
		}
		PG_FINALLY();
		{
			storing = false;
		}
		PG_END_TRY();
	}
}

void		tfm_tokenizer_init_hooks(void);
void
tfm_tokenizer_init_hooks(void)
{
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = tfm_executor_finish;
}

static int
train_progress(void *arg, int32_t done, int32_t target)
{
	(void) arg;
	(void) done;
	(void) target;
	/*
	 * Training holds malloc'd state, so no longjmp from here: ask the core to
	 * stop (it frees everything and returns TFM_TOK_ECANCEL), then take the
	 * interrupt.  Only a cancel or termination stops it: other interrupts
	 * stay pending and must not fail the aggregate.
	 */
	return INTERRUPTS_PENDING_CONDITION() && (QueryCancelPending || ProcDiePending) ? 1 : 0;
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_finish);
Datum
tfm_tokenizer_finish(PG_FUNCTION_ARGS)
{
	TokAgg	   *st;
	TokOwner   *own;
	tfm_tok_err err;
	tfm_tok_options opt;
	PendingStore *p;
	char	   *result;

	(void) agg_context(fcinfo, "tfm_tokenizer_finish");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();		/* no rows: nothing learned, nothing stored */
	st = (TokAgg *) PG_GETARG_POINTER(0);
	own = tok_owner(CurrentMemoryContext);
	{
		int			rc = tfm_tok_train(&own->tok, st->own->counter, train_progress, NULL, &err);

		if (rc == TFM_TOK_ECANCEL)
			CHECK_FOR_INTERRUPTS();
		tok_check(rc, &err, psprintf("cannot train tokenizer \"%s\"", st->name));
	}
	tfm_tok_counter_get_options(&opt, st->own->counter);
	result = summary(st->name, own->tok);
	if (!callbacks_registered)
	{
		RegisterXactCallback(pending_xact_callback, NULL);
		RegisterSubXactCallback(pending_subxact_callback, NULL);
		callbacks_registered = true;
	}
	p = MemoryContextAllocZero(TopMemoryContext, sizeof(PendingStore));
	p->name = MemoryContextStrdup(TopMemoryContext, st->name);
	p->tok = own->tok;
	p->min_count = opt.min_count;
	p->owner = GetUserId();
	p->nest_level = GetCurrentTransactionNestLevel();
	own->tok = NULL;
	p->next = pending;
	pending = p;
	PG_RETURN_TEXT_P(cstring_to_text(result));
}

/* ---- import, drop -------------------------------------------------------- */

PG_FUNCTION_INFO_V1(tfm_tokenizer_import);
Datum
tfm_tokenizer_import(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *kind = tfm_text_arg(fcinfo, 1, "kind");
	text	   *vocab,
			   *merges;
	TokOwner   *own = tok_owner(CurrentMemoryContext);
	tfm_tok_err err;

	tfm_check_new_name("tokenizer", name);
	TFM_ARG_NOT_NULL(2, "vocab");
	TFM_ARG_NOT_NULL(3, "merges");
	vocab = PG_GETARG_TEXT_PP(2);
	merges = PG_GETARG_TEXT_PP(3);
	if (strcmp(kind, "bpe") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tfm imports kind \"bpe\" (GPT-2's encoder.json and vocab.bpe), not \"%s\"", kind)));
	check_new_name(name, false);
	tok_check(tfm_tok_import_gpt2(&own->tok, VARDATA_ANY(vocab), VARSIZE_ANY_EXHDR(vocab),
								  VARDATA_ANY(merges), VARSIZE_ANY_EXHDR(merges), &err),
			  &err, "cannot import the vocabulary");
	store_tokenizer(name, own->tok, 0, GetUserId());
	PG_RETURN_TEXT_P(cstring_to_text(summary(name, own->tok)));
}

/*
 * For tfm_import: a GPT-2 byte-level BPE from encoder.json and vocab.bpe
 * texts (built from a tokenizer.json), stored under name; returns the
 * number of ids before tfm's specials.
 */
int32
tfm_tokenizer_import_gpt2(const char *name, const char *enc, size_t enc_len,
						  const char *bpe, size_t bpe_len)
{
	TokOwner   *own = tok_owner(CurrentMemoryContext);
	tfm_tok_err err;
	tfm_tok_info info;

	check_new_name(name, false);
	tok_check(tfm_tok_import_gpt2(&own->tok, enc, enc_len, bpe, bpe_len, &err),
			  &err, "cannot import the tokenizer");
	store_tokenizer(name, own->tok, 0, GetUserId());
	tfm_tok_get_info(&info, own->tok);
	return info.vocab_size - TFM_TOK_N_SPECIALS;
}

/*
 * For tfm_import: a SentencePiece-style BPE (Llama 2's tokenizer.json) from
 * its pieces and merges, stored under name; returns the number of ids
 * before tfm's specials.
 */
int32
tfm_tokenizer_import_spiece(const char *name, const uint8_t *const *pieces, const size_t *lens,
							int32 n, const int32_t *merge_lr, int32 n_merges, int32 unk,
							int32 bos, int32 eos, bool text_bos)
{
	TokOwner   *own = tok_owner(CurrentMemoryContext);
	tfm_tok_err err;

	check_new_name(name, false);
	tok_check(tfm_tok_import_spiece(&own->tok, pieces, lens, n, merge_lr, n_merges, unk, bos, eos,
									text_bos, &err),
			  &err, "cannot import the tokenizer");
	store_tokenizer(name, own->tok, 0, GetUserId());
	return n;
}

/*
 * For tfm_import: a tokenizer.json's byte-level BPE (RoBERTa, Llama 3,
 * SmolLM) from its pieces and merges, stored under name; the stored
 * tokenizer's special ids go to special_ids.  Returns the number of ids
 * before tfm's added specials.
 */
int32
tfm_tokenizer_import_hf_bpe(const char *name, const uint8_t *const *pieces, const size_t *lens,
							const uint8_t *literal, int32 n, const int32_t *merge_lr,
							int32 n_merges, const int32_t *specials, uint32 flags,
							int32_t *special_ids)
{
	TokOwner   *own = tok_owner(CurrentMemoryContext);
	tfm_tok_err err;
	tfm_tok_info info;

	check_new_name(name, false);
	tok_check(tfm_tok_import_hf_bpe(&own->tok, pieces, lens, literal, n, merge_lr, n_merges,
									specials, flags, &err),
			  &err, "cannot import the tokenizer");
	store_tokenizer(name, own->tok, 0, GetUserId());
	tfm_tok_get_info(&info, own->tok);
	memcpy(special_ids, info.special_ids, sizeof(info.special_ids));
	return n;
}

/* a tokenizer built from its rows' parts (tfm_tok_load), stored as name */
void
tfm_tokenizer_store_pieces(const char *name, const tfm_tok_info *info,
						   const uint8 *const *pieces, const size_t *lens)
{
	TokOwner   *own = tok_owner(CurrentMemoryContext);
	tfm_tok_err err;

	check_new_name(name, false);
	tok_check(tfm_tok_load(&own->tok, info, pieces, lens, NULL, NULL, &err),
			  &err, "cannot import the tokenizer");
	store_tokenizer(name, own->tok, 0, GetUserId());
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_drop);
Datum
tfm_tokenizer_drop(PG_FUNCTION_ARGS)
{
	TfmAsOwner	as;
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};

	tfm_check_tokenizer_owner(name);
	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT name FROM tfm.models WHERE tokenizer = $1 OR target_tokenizer = $1 "
						  "ORDER BY name LIMIT 1", 1, types, args, NULL, true, 1);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("tokenizer \"%s\" is used by model \"%s\"", name,
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Drop the models that use it first.")));
	if (SPI_execute_with_args("DELETE FROM tfm.tokenizers WHERE name = $1", 1, types, args,
							  NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "cannot delete from tfm.tokenizers");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("tokenizer \"%s\" does not exist", name)));
	tfm_spi_finish_owner(&as);
	PG_RETURN_VOID();
}

/* ---- tokenize, detokenize, tokens ---------------------------------------- */

PG_FUNCTION_INFO_V1(tfm_tokenize);
Datum
tfm_tokenize(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "tokenizer");
	text	   *t;
	uint32		flags = 0;
	int			max_length = 0;
	int			n;
	int32	   *ids;
	Datum	   *d;
	TokEntry   *e;

	TFM_ARG_NOT_NULL(1, "input");
	t = PG_GETARG_TEXT_PP(1);
	if (!PG_ARGISNULL(2) && PG_GETARG_BOOL(2))
		flags |= TFM_TOK_ADD_BOS;
	if (!PG_ARGISNULL(3) && PG_GETARG_BOOL(3))
		flags |= TFM_TOK_ADD_EOS;
	if (!PG_ARGISNULL(4))
	{
		max_length = PG_GETARG_INT32(4);
		if (max_length < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_length must be positive, not %d", max_length)));
	}
	e = tok_get(name);
	ids = encode(e, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), flags, (size_t) max_length, &n);
	d = palloc_extended(sizeof(Datum) * Max(n, 1), MCXT_ALLOC_HUGE);
	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum(ids[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT));
}

/* PostgreSQL text cannot hold NUL: a decoded U+0000 becomes U+FFFD */
static text *
without_nul(text *t)
{
	const char *p = VARDATA(t);
	size_t		len = VARSIZE(t) - VARHDRSZ,
				nul = 0;
	text	   *out;
	char	   *q;

	for (size_t i = 0; i < len; i++)
		nul += p[i] == '\0';
	if (nul == 0)
		return t;
	out = palloc_extended(VARHDRSZ + len + 2 * nul, MCXT_ALLOC_HUGE);
	q = VARDATA(out);
	for (size_t i = 0; i < len; i++)
	{
		if (p[i] == '\0')
		{
			*q++ = (char) 0xEF;
			*q++ = (char) 0xBF;
			*q++ = (char) 0xBD;
		}
		else
			*q++ = p[i];
	}
	SET_VARSIZE(out, VARHDRSZ + len + 2 * nul);
	pfree(t);
	return out;
}

PG_FUNCTION_INFO_V1(tfm_detokenize);
Datum
tfm_detokenize(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "tokenizer");
	ArrayType  *a;
	int			n;
	TokEntry   *e;
	size_t		cap,
				got;
	text	   *out;
	tfm_tok_err err;

	TFM_ARG_NOT_NULL(1, "ids");
	a = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("ids must be a one-dimensional array")));
	if (ARR_HASNULL(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ids must not contain NULL")));
	n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	e = tok_get(name);
	{
		/*
		 * Room for these ids, not for n of the longest piece (GPT-2: 387
		 * bytes an id): each piece (U+FFFD for <unk>) and a separator, 3
		 * bytes for any byte that is replaced; at most what a text holds
		 * (a longer result fails in the core).  Ids out of range count
		 * nothing here: the core reports them.
		 */
		const int32 *ids = (const int32 *) ARR_DATA_PTR(a);
		uint64		raw = 0,
					least = 0;

		for (int i = 0; i < n; i++)
		{
			const uint8_t *b;
			size_t		len;
			bool		special = false;

			if (tfm_tok_piece(&b, &len, e->tok, ids[i], NULL) != TFM_TOK_OK)
				continue;
			raw += Max(len, 3) + 1;
			for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
				special |= ids[i] == e->info.special_ids[k];
			if (!special)
				least += len;
		}
		if (least > MaxAllocSize - VARHDRSZ)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the text of these %d ids would be longer than a text can be (1 GB)", n)));
		cap = (size_t) Min(raw * 3, (uint64) (MaxAllocSize - VARHDRSZ));
	}
	out = palloc_extended(VARHDRSZ + Max(cap, 1), MCXT_ALLOC_HUGE);
	tok_check(tfm_tok_decode(VARDATA(out), cap, &got, e->tok, (const int32_t *) ARR_DATA_PTR(a),
							 n, TFM_TOK_DECODE_REPLACE, &err),
			  &err, "cannot detokenize");
	SET_VARSIZE(out, VARHDRSZ + got);
	out = without_nul(out);
	PG_RETURN_TEXT_P(out);
}

/* a piece as text: valid UTF-8 as is, other bytes as \xNN */
static text *
piece_text(const uint8_t *b, size_t len)
{
	StringInfoData s;
	size_t		i = 0;

	initStringInfo(&s);
	while (i < len)
	{
		int			l = pg_utf_mblen(b + i);

		if (b[i] != 0 && i + l <= len && pg_utf8_islegal(b + i, l))
		{
			appendBinaryStringInfo(&s, (const char *) b + i, l);
			i += l;
		}
		else
			appendStringInfo(&s, "\\x%02X", b[i++]);
	}
	return cstring_to_text_with_len(s.data, s.len);
}

PG_FUNCTION_INFO_V1(tfm_tokens);
Datum
tfm_tokens(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "tokenizer");
	text	   *t;
	TokEntry   *e;
	int			n;
	int32	   *ids;
	MemoryContext rowcxt;

	TFM_ARG_NOT_NULL(1, "input");
	t = PG_GETARG_TEXT_PP(1);
	SetSingleFuncCall(fcinfo, 0);
	e = tok_get(name);
	ids = encode(e, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), 0, 0, &n);
	/* each row's piece text is built in a context reset per row (a 10 MB
	 * text has millions of tokens; the tuplestore keeps its own copy) */
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tfm_tokens row", ALLOCSET_SMALL_SIZES);
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		const uint8_t *b;
		size_t		len;
		tfm_tok_err err;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		tok_check(tfm_tok_piece(&b, &len, e->tok, ids[i], &err), &err, "cannot read a piece");
		old = MemoryContextSwitchTo(rowcxt);
		values[0] = Int32GetDatum(i + 1);
		values[1] = Int32GetDatum(ids[i]);
		values[2] = PointerGetDatum(piece_text(b, len));
		MemoryContextSwitchTo(old);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(rowcxt);
	}
	MemoryContextDelete(rowcxt);
	return (Datum) 0;
}

/* ---- the core tokenizer for other parts of the SQL layer ----------------- */

/* valid for the current call only (the cache owns it) */
tfm_tokenizer *
tfm_tokenizer_get(const char *name)
{
	return tok_get(name)->tok;
}

/* the piece of an id as text (bytes that are not UTF-8 as \xNN) */
text *
tfm_tokenizer_piece_text(const char *name, int32 id)
{
	const uint8_t *b;
	size_t		len;
	tfm_tok_err err;

	tok_check(tfm_tok_piece(&b, &len, tok_get(name)->tok, id, &err), &err, "cannot read a piece");
	return piece_text(b, len);
}

/* the text of ids (specials dropped, invalid UTF-8 replaced) */
text *
tfm_tokenizer_decode(const char *name, const int32 *ids, int n)
{
	return tfm_tokenizer_decode_flags(name, ids, n, 0);
}

/* the same; continuation keeps a SentencePiece tokenizer's first space (generated text) */
text *
tfm_tokenizer_decode_flags(const char *name, const int32 *ids, int n, bool continuation)
{
	TokEntry   *e = tok_get(name);
	uint32		flags = TFM_TOK_DECODE_REPLACE | (continuation ? TFM_TOK_DECODE_CONTINUE : 0);
	size_t		cap = tfm_tok_decode_bound(e->tok, n, flags),
				got;
	text	   *out = palloc_extended(VARHDRSZ + Max(cap, 1), MCXT_ALLOC_HUGE);
	tfm_tok_err err;

	tok_check(tfm_tok_decode(VARDATA(out), cap, &got, e->tok, ids, n, flags, &err),
			  &err, "cannot detokenize");
	SET_VARSIZE(out, VARHDRSZ + got);
	out = without_nul(out);
	return out;
}
