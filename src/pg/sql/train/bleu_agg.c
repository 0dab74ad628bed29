/*
 * bleu_agg.c — corpus BLEU in SQL: the aggregates tfm_bleu and
 * tfm_bleu_details (sacreBLEU 2.x defaults) and tfm_bleu_tokenize.
 *
 * The aggregate's state is the ten sufficient statistics of corpus BLEU as
 * a bigint[] (see include/tfm/bleu.h for their order): the transition
 * function tokenizes and counts one row, the combine function adds two
 * states element by element, the final function scores.  A SQL type as
 * state needs no serialize functions for parallel plans, but users can
 * call the support functions directly with any array, so every entry point
 * checks the state it is given (check_state).
 *
 * Rows with a NULL hypothesis or a NULL reference (text or text[]) are
 * skipped, as aggregates skip NULL inputs; a query with no other row gives
 * NULL (the state starts NULL).  References that are NULL or '' inside a
 * text[] are ignored, as sacreBLEU ignores None and "" references; a row
 * left without one is an error, as in sacreBLEU.
 *
 * Text is tokenized as UTF-8: in a database of another encoding it is
 * converted first (so that e.g. U+00A0 counts as whitespace, as it does in
 * Python) and tfm_bleu_tokenize converts its result back; SQL_ASCII bytes
 * are taken as they are.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "miscadmin.h"
#include "tfm/bleu.h"
#include "base/base.h"
#include "sql/args.h"
#include "runtime/train/evaluate.h"
#include "runtime/bleu_stats.h"

/* ---- checks and conversions ---------------------------------------------- */


/* a count's status: the SQLSTATE is the code's (tfm_report), the words tfm_bleu's */
static void
bleu_check(int status, size_t bytes)
{
	switch (status)
	{
		case TFM_OK:
			return;
		case TFM_ENOMEM:
			tfm_report(ERROR, status, "out of memory",
					   psprintf("Failed on a row of %zu bytes while counting its n-grams.", bytes),
					   NULL);
			break;
		case TFM_ELIMIT:
			tfm_report(ERROR, status, "too many tokens in one row for tfm_bleu",
					   "A hypothesis and its references may hold at most 4294967294 tokens.",
					   NULL);
			break;
		case TFM_ERANGE:
			tfm_report(ERROR, status, "tfm_bleu statistics out of range for type bigint",
					   NULL, NULL);
			break;
		case TFM_EINVAL:
			tfm_report(ERROR, status, "no usable reference for a hypothesis",
					   "References that are NULL or empty strings are ignored, as sacreBLEU ignores them; each row needs at least one other.",
					   NULL);
			break;
	}
	elog(ERROR, "tfm_bleu: unexpected status %d", status);
}

/*
 * The state array's counts, after checking that it is what the transition
 * function builds: ten non-NULL bigints that could be a sum of row counts.
 */
static int64 *
check_state(ArrayType *a)
{
	int64	   *s;

	if (ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] != TFM_BLEU_N_STATS || ARR_HASNULL(a) ||
		ARR_ELEMTYPE(a) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid tfm_bleu state"),
				 errdetail("The state is an array of %d bigint statistics without NULLs.",
						   TFM_BLEU_N_STATS)));
	s = (int64 *) ARR_DATA_PTR(a);
	if (tfm_bleu_stats_check(s) != TFM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid tfm_bleu state"),
				 errdetail("The statistics are inconsistent: a count is negative, sys_len differs from the unigram total, totals grow with the order, or matches exceed totals.")));
	return s;
}

static ArrayType *
make_state(const int64 *s)
{
	Datum		d[TFM_BLEU_N_STATS];

	for (int i = 0; i < TFM_BLEU_N_STATS; i++)
		d[i] = Int64GetDatum(s[i]);
	return construct_array(d, TFM_BLEU_N_STATS, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						   TYPALIGN_DOUBLE);
}

/*
 * In an aggregate the state belongs to the aggregate's memory context:
 * update it in place (as float8_accum does).  Called directly (or with no
 * state yet), return a new array and leave the argument alone.
 */
static ArrayType *
new_state(FunctionCallInfo fcinfo, ArrayType *state, const int64 *stats)
{
	if (state != NULL && AggCheckCallContext(fcinfo, NULL))
	{
		memcpy(ARR_DATA_PTR(state), stats, sizeof(int64) * TFM_BLEU_N_STATS);
		return state;
	}
	return make_state(stats);
}

/* the database encoding is not UTF-8: texts are converted (SQL_ASCII: taken as is) */
static bool
needs_conversion(void)
{
	int			enc = GetDatabaseEncoding();

	return enc != PG_UTF8 && enc != PG_SQL_ASCII;
}

/* a text's bytes in UTF-8 */
static const char *
utf8_bytes(text *t, size_t *len)
{
	const char *p = VARDATA_ANY(t);
	int			n = VARSIZE_ANY_EXHDR(t);
	char	   *c;

	if (!needs_conversion() || n == 0)
	{
		*len = (size_t) n;
		return p;
	}
	c = pg_server_to_any(p, n, PG_UTF8);
	*len = c == p ? (size_t) n : strlen(c);
	return c;
}

/* ---- the transition function ----------------------------------------------- */

/*
 * The references of argument 2 as UTF-8 bytes: a text[] (NULL elements
 * kept as NULL, ignored by the count) or one text, which must not be empty.
 * Their count; their bytes added to *bytes.
 */
static int
references_arg(FunctionCallInfo fcinfo, bool is_array, const char ***refs, size_t **lens,
			   size_t *bytes)
{
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;
	int			n_refs;

	if (!is_array)
	{
		*refs = palloc(sizeof(char *));
		*lens = palloc(sizeof(size_t));
		(*refs)[0] = utf8_bytes(PG_GETARG_TEXT_PP(2), &(*lens)[0]);
		*bytes += (*lens)[0];
		if ((*lens)[0] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("reference must not be empty"),
					 errdetail("sacreBLEU refuses empty references."),
					 errhint("Pass several references as text[]: NULL and empty ones are ignored there.")));
		return 1;
	}
	a = PG_GETARG_ARRAYTYPE_P(2);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("references must be a one-dimensional array")));
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n_refs);
	*refs = palloc(sizeof(char *) * Max(n_refs, 1));
	*lens = palloc(sizeof(size_t) * Max(n_refs, 1));
	for (int i = 0; i < n_refs; i++)
	{
		(*refs)[i] = NULL;
		(*lens)[i] = 0;
		if (!nulls[i])
		{
			(*refs)[i] = utf8_bytes(DatumGetTextPP(elems[i]), &(*lens)[i]);
			*bytes += (*lens)[i];
		}
	}
	return n_refs;
}

/*
 * Adds one row (hypothesis in argument 1, references in argument 2: text,
 * or text[] when is_array) to the state in argument 0.
 */
static Datum
bleu_step(FunctionCallInfo fcinfo, bool is_array)
{
	ArrayType  *state = PG_ARGISNULL(0) ? NULL : PG_GETARG_ARRAYTYPE_P(0);
	int64		stats[TFM_BLEU_N_STATS] = {0};
	const char **refs;
	size_t	   *lens;
	const char *hyp;
	size_t		hyp_len,
				bytes;
	int			n_refs;

	if (state != NULL)
		memcpy(stats, check_state(state), sizeof(stats));
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
	{
		/* rows with a NULL hypothesis or reference(s) are skipped */
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_ARRAYTYPE_P(state);
	}
	hyp = utf8_bytes(PG_GETARG_TEXT_PP(1), &hyp_len);
	bytes = hyp_len;
	n_refs = references_arg(fcinfo, is_array, &refs, &lens, &bytes);
	bleu_check(tfm_bleu_add_pg(stats, hyp, hyp_len, refs, lens, n_refs), bytes);
	PG_RETURN_ARRAYTYPE_P(new_state(fcinfo, state, stats));
}

PG_FUNCTION_INFO_V1(tfm_bleu_step);
Datum
tfm_bleu_step(PG_FUNCTION_ARGS)
{
	return bleu_step(fcinfo, false);
}

PG_FUNCTION_INFO_V1(tfm_bleu_step_refs);
Datum
tfm_bleu_step_refs(PG_FUNCTION_ARGS)
{
	return bleu_step(fcinfo, true);
}

/* ---- combine and final -------------------------------------------------------- */

/* strict: the executor passes the other state through when one is NULL */
PG_FUNCTION_INFO_V1(tfm_bleu_combine);
Datum
tfm_bleu_combine(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int64		sum[TFM_BLEU_N_STATS];

	memcpy(sum, check_state(a), sizeof(sum));
	bleu_check(tfm_bleu_stats_add(sum, check_state(b)), 0);
	PG_RETURN_ARRAYTYPE_P(new_state(fcinfo, a, sum));
}

PG_FUNCTION_INFO_V1(tfm_bleu_final);
Datum
tfm_bleu_final(PG_FUNCTION_ARGS)
{
	tfm_bleu_result r;

	tfm_bleu_score(&r, check_state(PG_GETARG_ARRAYTYPE_P(0)));
	PG_RETURN_FLOAT8(r.score);
}

/* a double as the shortest decimal that reads back to it */
static void
append_double(StringInfo s, double v)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	double_to_shortest_decimal_buf(v, buf);
	appendStringInfoString(s, buf);
}

PG_FUNCTION_INFO_V1(tfm_bleu_details_final);
Datum
tfm_bleu_details_final(PG_FUNCTION_ARGS)
{
	const int64 *s = check_state(PG_GETARG_ARRAYTYPE_P(0));
	tfm_bleu_result r;
	StringInfoData j;

	tfm_bleu_score(&r, s);
	initStringInfo(&j);
	appendStringInfoString(&j, "{\"score\": ");
	append_double(&j, r.score);
	appendStringInfoString(&j, ", \"precisions\": [");
	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
	{
		if (n > 0)
			appendStringInfoString(&j, ", ");
		append_double(&j, r.precisions[n]);
	}
	appendStringInfoString(&j, "], \"bp\": ");
	append_double(&j, r.bp);
	appendStringInfoString(&j, ", \"ratio\": ");
	append_double(&j, r.ratio);
	appendStringInfo(&j, ", \"sys_len\": " INT64_FORMAT ", \"ref_len\": " INT64_FORMAT,
					 s[TFM_BLEU_SYS_LEN], s[TFM_BLEU_REF_LEN]);
	appendStringInfoString(&j, ", \"counts\": [");
	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
		appendStringInfo(&j, "%s" INT64_FORMAT, n ? ", " : "", s[TFM_BLEU_MATCHES + n]);
	appendStringInfoString(&j, "], \"totals\": [");
	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
		appendStringInfo(&j, "%s" INT64_FORMAT, n ? ", " : "", s[TFM_BLEU_TOTALS + n]);
	appendStringInfoString(&j, "]}");
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(j.data)));
}

/* ---- the tokenizer ---------------------------------------------------------------- */

PG_FUNCTION_INFO_V1(tfm_bleu_tokenize);
Datum
tfm_bleu_tokenize(PG_FUNCTION_ARGS)
{
	size_t		len,
				n;
	const char *in = utf8_bytes(PG_GETARG_TEXT_PP(0), &len);
	char	   *out;

	if (len > (MaxAllocSize - VARHDRSZ - 1) / 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("text too long for tfm_bleu_tokenize"),
				 errdetail("The text has %zu bytes; at most %zu are allowed.", len,
						   (size_t) (MaxAllocSize - VARHDRSZ - 1) / 2)));
	out = palloc(TFM_BLEU_TOKENIZED_MAX(len));
	/* a cancel stops it (then raised here); an interrupt that raises nothing: again */
	while ((n = tfm_bleu_tokenize_13a_polled(out, in, len, tfm_interrupt_pending, NULL)) == SIZE_MAX)
		CHECK_FOR_INTERRUPTS();
	if (needs_conversion())
	{
		out = pg_any_to_server(out, (int) n, PG_UTF8);
		n = strlen(out);
	}
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, (int) n));
}
