/*
 * tokenizer_agg.c — tfm_tokenizer_train, the aggregate that learns a
 * tokenizer from a query's texts.
 *
 * The aggregate counts pre-tokens in its transition state (parallel-safe:
 * partial states are serialized, sent to the leader and merged).  Its final
 * function learns the vocabulary, but it may run under a Gather node, while
 * the leader is in parallel mode and cannot write.  So it only arms a
 * pending store, which an ExecutorFinish hook performs once the executor
 * has left parallel mode, in the same statement and transaction.  A pending
 * store that never happens (an error) is dropped at transaction end.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "tfm/tokenizer.h"
#include "storage/tokenizers/tokenizers.h"
#include "sql/tokenizers/tokenizer_agg.h"

typedef struct TokAgg
{
	char	   *name;
	char	   *kind;			/* as given on the first row, NULL if not given */
	int32		vocab_size;		/* as given on the first row, -1 if not given */
	TfmTokOwner *own;		/* holds the counter */
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
	tfm_status err;

	st->name = MemoryContextStrdup(aggcxt, name);
	st->vocab_size = -1;
	st->own = tfm_tok_owner(aggcxt);
	if (opt)
		tfm_raise(tfm_tok_counter_create(&st->own->counter, opt, &err), &err,
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

/* the first row: a new state with its name and options, checked */
static TokAgg *
first_row(FunctionCallInfo fcinfo, MemoryContext aggcxt)
{
	TokAgg	   *st;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	tfm_tok_options opt;
	tfm_tok_kind kind = TFM_TOK_BPE;
	char	   *k = NULL;

	tfm_tokenizer_check_new(name, true);
	if (PG_NARGS() > 3)
	{
		k = text_to_cstring(PG_GETARG_TEXT_PP(3));
		if (tfm_tok_kind_parse(&kind, k) != TFM_OK)
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
	return st;
}

/* a later row: the options are the first row's, and every row must give the same */
static void
same_options(FunctionCallInfo fcinfo, const TokAgg *st)
{
	if (!text_is(PG_GETARG_TEXT_PP(1), st->name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tokenizer name must be the same on every row")));
	if (st->kind && !text_is(PG_GETARG_TEXT_PP(3), st->kind))
	{
		/* another spelling of the same kind is the same kind */
		tfm_tok_kind k1,
					k2;

		if (tfm_tok_kind_parse(&k1, st->kind) != TFM_OK ||
			tfm_tok_kind_parse(&k2, text_to_cstring(PG_GETARG_TEXT_PP(3))) != TFM_OK ||
			k1 != k2)
			kind_differs();
	}
	if (st->vocab_size >= 0 && PG_GETARG_INT32(4) != st->vocab_size)
		vocab_size_differs();
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_count);
Datum
tfm_tokenizer_count(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = agg_context(fcinfo, "tfm_tokenizer_count");
	TokAgg	   *st = PG_ARGISNULL(0) ? NULL : (TokAgg *) PG_GETARG_POINTER(0);
	text	   *t;
	tfm_status err;

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
		st = first_row(fcinfo, aggcxt);
	else
		same_options(fcinfo, st);
	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(st);	/* NULL rows are skipped */
	t = PG_GETARG_TEXT_PP(2);
	CHECK_FOR_INTERRUPTS();
	tfm_raise(tfm_tok_counter_add(st->own->counter, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &err),
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
	tfm_status err;

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
	tfm_raise(tfm_tok_counter_merge(a->own->counter, b->own->counter, &err), &err,
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
	tfm_status err;
	int32		nl32 = (int32) nl;
	int64		n64 = (int64) n;

	(void) agg_context(fcinfo, "tfm_tokenizer_serialize");
	out = palloc_extended(VARHDRSZ + 4 + nl + 8 + n, MCXT_ALLOC_HUGE);
	SET_VARSIZE(out, VARHDRSZ + 4 + nl + 8 + n);
	p = VARDATA(out);
	memcpy(p, &nl32, 4);
	memcpy(p + 4, st->name, nl);
	memcpy(p + 4 + nl, &n64, 8);
	tfm_raise(tfm_tok_counter_serialize((uint8_t *) p + 12 + nl, n, st->own->counter, &err),
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
	tfm_status err;
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
	tfm_raise(tfm_tok_counter_deserialize(&st->own->counter, (const uint8_t *) p + 12 + nl,
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
		TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
		char	   *name = pstrdup(p->name);
		int32		min_count = p->min_count;
		Oid			owner = p->owner;

		/* from here on an error frees the tokenizer with the context */
		pending = p->next;
		own->tok = p->tok;
		pfree(p->name);
		pfree(p);
		if (tfm_tokenizer_exists(name, false))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("tokenizer \"%s\" already exists", name)));
		tfm_tokenizer_store(name, own->tok, min_count, owner);
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
	 * stop (it frees everything and returns TFM_ECANCELED), then take the
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
	TfmTokOwner *own;
	tfm_status err;
	tfm_tok_options opt;
	PendingStore *p;
	char	   *result;

	(void) agg_context(fcinfo, "tfm_tokenizer_finish");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();		/* no rows: nothing learned, nothing stored */
	st = (TokAgg *) PG_GETARG_POINTER(0);
	own = tfm_tok_owner(CurrentMemoryContext);
	{
		int			rc = tfm_tok_train(&own->tok, st->own->counter, train_progress, NULL, &err);

		if (rc == TFM_ECANCELED)
			CHECK_FOR_INTERRUPTS();
		tfm_raise(rc, &err, psprintf("cannot train tokenizer \"%s\"", st->name));
	}
	tfm_tok_counter_get_options(&opt, st->own->counter);
	result = tfm_tokenizer_summary(st->name, own->tok);
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
