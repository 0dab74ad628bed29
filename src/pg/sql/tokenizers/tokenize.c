/*
 * tokenize.c — tokenizers in SQL: tfm_tokenizer_import (GPT-2's files),
 * tfm_tokenizer_drop, tfm_tokenize, tfm_detokenize and tfm_tokens (a NULL
 * tokenizer or input answers NULL, no rows: args.h).  The
 * training aggregate is tokenizer_agg.c; the rows, storage/tokenizers/tokenizers.c;
 * the cache, runtime/cache/tokenizer_cache.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "tfm/tokenizer.h"
#include "runtime/rows.h"
#include "sql/args.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/tokenizers/tokenizers.h"
#include "storage/roles/roles.h"

PG_FUNCTION_INFO_V1(tfm_tokenizer_import);
Datum
tfm_tokenizer_import(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *kind = tfm_text_arg(fcinfo, 1, "kind");
	text	   *vocab,
			   *merges;
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status err;

	tfm_check_new_name("tokenizer", name);
	TFM_ARG_NOT_NULL(2, "vocab");
	TFM_ARG_NOT_NULL(3, "merges");
	vocab = PG_GETARG_TEXT_PP(2);
	merges = PG_GETARG_TEXT_PP(3);
	if (strcmp(kind, "bpe") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tfm imports kind \"bpe\" (GPT-2's encoder.json and vocab.bpe), not \"%s\"", kind)));
	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_import_gpt2(&own->tok, VARDATA_ANY(vocab), VARSIZE_ANY_EXHDR(vocab),
								  VARDATA_ANY(merges), VARSIZE_ANY_EXHDR(merges), &err),
			  &err, "cannot import the vocabulary");
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
	PG_RETURN_TEXT_P(cstring_to_text(tfm_tokenizer_summary(name, own->tok)));
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_drop);
Datum
tfm_tokenizer_drop(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");

	tfm_check_tokenizer_owner("drop", name);
	tfm_tokenizer_delete(name);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_tokenize);
Datum
tfm_tokenize(PG_FUNCTION_ARGS)
{
	char	   *name;
	text	   *t;
	uint32		flags = 0;
	int			max_length = 0;
	int			n;
	int32	   *ids;
	Datum	   *d;
	TfmCachedTokenizer *e;

	/* not STRICT: NULL add_bos, add_eos, max_length are the defaults */
	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "tokenizer");
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
	e = tfm_tokenizer_cached(name);
	ids = tfm_tokenizer_encode_with(e, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), flags, (size_t) max_length, &n);
	d = palloc_extended(sizeof(Datum) * Max(n, 1), MCXT_ALLOC_HUGE);
	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum(ids[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT));
}

PG_FUNCTION_INFO_V1(tfm_detokenize);
Datum
tfm_detokenize(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "tokenizer");
	ArrayType  *a;
	int			n;
	TfmCachedTokenizer *e;

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
	e = tfm_tokenizer_cached(name);
	PG_RETURN_TEXT_P(tfm_tokenizer_detokenize(e, (const int32 *) ARR_DATA_PTR(a), n));
}

PG_FUNCTION_INFO_V1(tfm_tokens);
Datum
tfm_tokens(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "tokenizer");
	text	   *t;
	TfmCachedTokenizer *e;
	int			n;
	int32	   *ids;
	MemoryContext rowcxt;

	TFM_ARG_NOT_NULL(1, "input");
	t = PG_GETARG_TEXT_PP(1);
	InitMaterializedSRF(fcinfo, 0);
	e = tfm_tokenizer_cached(name);
	ids = tfm_tokenizer_encode_with(e, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), 0, 0, &n);
	/* each row's piece text is built in a context reset per row (a 10 MB
	 * text has millions of tokens; the tuplestore keeps its own copy) */
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tfm_tokens row", ALLOCSET_SMALL_SIZES);
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		const uint8_t *b;
		size_t		len;
		tfm_status err;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		tfm_raise(tfm_tok_piece(&b, &len, e->tok, ids[i], &err), &err, "cannot read a piece");
		old = MemoryContextSwitchTo(rowcxt);
		values[0] = Int32GetDatum(i + 1);
		values[1] = Int32GetDatum(ids[i]);
		values[2] = PointerGetDatum(tfm_piece_text(b, len));
		MemoryContextSwitchTo(old);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(rowcxt);
	}
	MemoryContextDelete(rowcxt);
	return (Datum) 0;
}
