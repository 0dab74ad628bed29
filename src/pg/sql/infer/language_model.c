/*
 * language_model.c — language models in SQL: tfm_generate (one prompt or an
 * array decoded as one batch), tfm_generate_tokens (token by token, with
 * log-probabilities), tfm_next_tokens (the k most likely next tokens) and
 * tfm_score (the log-probability of a text).
 *
 * The decode loop is the core's (tfm/generate.h: the key/value cache, the
 * sliding window, sampling), driven by runtime/infer/generator.c within
 * tfm.work_mem; here are the arguments, the prompts' ids and the rows.  A prompt longer than max_len keeps its last
 * max_len tokens; an empty prompt starts from <bos>.  Generation stops at
 * <eos>, at the stop text (not included in the result) or after
 * max_tokens.  seed NULL takes a seed from the statement (new text in each
 * statement, the same text for the same arguments within one: the
 * functions are STABLE); a given seed always gives the same text.  A NULL
 * model or prompt answers NULL (no rows), a NULL prompt of an array NULL
 * (args.h); tfm_score is STRICT.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "tfm/rng.h"
#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/infer/json_constraint.h"
#include "sql/infer/language_model.h"
#include "runtime/train/evaluate.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

#define TFM_MAX_GENERATE 100000
#define TFM_MAX_PROMPTS  1024

/* arguments: model, prompt(s), max_tokens, temperature, top_k, top_p, seed, stop
 * and, for tfm_generate and tfm_chat, json_schema (tfm_chat's too) */
void
tfm_generate_options(FunctionCallInfo fcinfo, GenOpts *o)
{
	o->max_tokens = PG_ARGISNULL(2) ? 200 : PG_GETARG_INT32(2);
	if (o->max_tokens < 1 || o->max_tokens > TFM_MAX_GENERATE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_tokens must be between 1 and %d, not %d", TFM_MAX_GENERATE, o->max_tokens)));
	o->temperature = PG_ARGISNULL(3) ? 1.0f : PG_GETARG_FLOAT4(3);
	if (!(o->temperature >= 0.0f) || isinf(o->temperature))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("temperature must be 0 (greedy) or positive")));
	o->top_k = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4);
	if (o->top_k < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("top_k must be 0 (all tokens) or positive")));
	o->top_p = PG_ARGISNULL(5) ? 1.0f : PG_GETARG_FLOAT4(5);
	if (!(o->top_p > 0.0f && o->top_p <= 1.0f))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("top_p must be greater than 0 and at most 1")));
	/*
	 * NULL: a seed of this statement (its start time, which parallel workers share), so
	 * the function stays STABLE: the same arguments give the same text
	 * within a statement, and new text in the next one.
	 */
	o->seed = PG_ARGISNULL(6) ?
		tfm_mix64((uint64) GetCurrentStatementStartTimestamp()) :
		(uint64) PG_GETARG_INT64(6);
	o->stop = NULL;
	o->stop_ids = NULL;
	o->n_stop_ids = 0;
	if (!PG_ARGISNULL(7))
	{
		o->stop = text_to_cstring(PG_GETARG_TEXT_PP(7));
		if (o->stop[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("stop must not be empty")));
	}
	o->json = NULL;
	if (PG_NARGS() > 8 && !PG_ARGISNULL(8))
	{
		if (o->stop)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("stop and json_schema cannot be combined"),
					 errdetail("A value constrained by a JSON schema ends where the value ends.")));
		o->json = tfm_json_schema_compile(PG_GETARG_JSONB_P(8));
	}
}

static tfm_model *
get_lm(const char *name, const TfmModelRow **rowp)
{
	return tfm_model_for(name, TFM_TASK_LM, true, rowp);
}

/* for functions whose argument 1 may be int[]: text needs a tokenizer, ids do not */
static tfm_model *
get_lm_for(FunctionCallInfo fcinfo, const char *name, const TfmModelRow **rowp)
{
	bool		ids = get_fn_expr_argtype(fcinfo->flinfo, 1) == INT4ARRAYOID;

	return tfm_model_for(name, TFM_TASK_LM, !ids, rowp);
}

/* an id's piece, NULL for a model without a tokenizer */
static Datum
piece_datum(const TfmModelRow *row, int32 id, bool *isnull)
{
	*isnull = row->tokenizer == NULL;
	return *isnull ? (Datum) 0 : PointerGetDatum(tfm_tokenizer_piece_text(row->tokenizer, id));
}

/* the ids of argument argno: text through the tokenizer, int[] as given */
static int32 *
arg_ids(FunctionCallInfo fcinfo, int argno, const TfmModelRow *row, int *n)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, argno);

	if (type == INT4ARRAYOID)
	{
		int32	   *ids = tfm_datum_ids(PG_GETARG_DATUM(argno), INT4ARRAYOID, row, false, n);

		/* ids are taken as given: nothing is added, not even <bos> */
		if (*n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a prompt of token ids must hold at least one id")));
		return repalloc(ids, sizeof(int32) * (*n + 1));
	}
	{
		text	   *t = PG_GETARG_TEXT_PP(argno);

		return tfm_tokenizer_encode(row->tokenizer, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), n);
	}
}

/* a prompt's ids (the model's specials checked first), trimmed (tfm_trim_prompt) */
static int32 *
prompt_ids(FunctionCallInfo fcinfo, int argno, const TfmModelRow *row, int *n)
{
	TfmSpecials sp;
	int32	   *ids;

	tfm_model_specials(row, &sp);
	ids = arg_ids(fcinfo, argno, row, n);
	tfm_trim_prompt(row, &sp, ids, n);
	return ids;
}

/*
 * The one prompt of argument 1, generated with the options of fcinfo;
 * a set-returning caller (srf) gets the model for its call, and a stop text
 * needs a tokenizer.  The caller has answered a NULL model or prompt.
 */
static const TfmModelRow *
generate_one(FunctionCallInfo fcinfo, bool srf, GenRow *g)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	int32	   *ids;
	int			n;

	tfm_generate_options(fcinfo, &o);
	if (srf)
	{
		InitMaterializedSRF(fcinfo, 0);
		m = get_lm_for(fcinfo, name, &row);
		if (o.stop && !row->tokenizer)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\" has no tokenizer, so it cannot stop at a text", name)));
	}
	else
		m = get_lm(name, &row);
	ids = prompt_ids(fcinfo, 1, row, &n);
	tfm_generate_prompts(m, row, &ids, &n, 1, &o, g);
	return row;
}

/* a row (rank, token id, its piece, value) of tfm_generate_tokens or tfm_next_tokens */
static void
put_token(FunctionCallInfo fcinfo, const TfmModelRow *row, int rank, int32 id, double value)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		v[4];
	bool		nulls[4] = {false, false, false, false};

	v[0] = Int32GetDatum(rank);
	v[1] = Int32GetDatum(id);
	v[2] = piece_datum(row, id, &nulls[2]);
	v[3] = Float8GetDatum(value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
}

PG_FUNCTION_INFO_V1(tfm_generate);
Datum
tfm_generate(PG_FUNCTION_ARGS)
{
	GenRow		g;
	const TfmModelRow *row;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	row = generate_one(fcinfo, false, &g);
	PG_RETURN_TEXT_P(tfm_generated_text(row, &g));
}

/* a prompt of tfm_generate(model, text[]): its ids, trimmed */
typedef struct PromptCtx
{
	const TfmModelRow *row;
	TfmSpecials sp;
} PromptCtx;

static int32 *
prompt_text_ids(void *arg, text *t, int *len)
{
	PromptCtx  *c = arg;
	int32	   *ids = tfm_tokenizer_encode(c->row->tokenizer, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), len);

	tfm_trim_prompt(c->row, &c->sp, ids, len);
	return ids;
}

PG_FUNCTION_INFO_V1(tfm_generate_batch);
Datum
tfm_generate_batch(PG_FUNCTION_ARGS)
{
	char	   *name;
	TfmTexts	prompts;
	GenOpts		o;
	PromptCtx	c;
	tfm_model  *m;
	GenRow	   *g;
	Datum	   *res;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	tfm_texts_arg(fcinfo, 1, "prompts", &prompts);
	tfm_generate_options(fcinfo, &o);
	m = get_lm(name, &c.row);
	tfm_model_specials(c.row, &c.sp);
	if (prompts.n > TFM_MAX_PROMPTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("at most %d prompts can be decoded together, not %d", TFM_MAX_PROMPTS,
						prompts.n)));
	if (prompts.n == 0)
		PG_RETURN_ARRAYTYPE_P(tfm_texts_result(&prompts, NULL));
	tfm_texts_encode(&prompts, prompt_text_ids, &c);
	g = palloc(sizeof(GenRow) * prompts.n);
	/*
	 * Element i samples with seed + i, NULL elements counted: each run of
	 * non-NULL prompts between NULLs is a batch seeded at its first
	 * element's place (one batch when there is no NULL).
	 */
	for (int i = 0, k = 0; i < prompts.total;)
	{
		int			run = 0;
		GenOpts		oi = o;

		while (i + run < prompts.total && !prompts.nulls[i + run])
			run++;
		if (run > 0)
		{
			oi.seed = o.seed + (uint64) i;
			tfm_generate_prompts(m, c.row, prompts.ids + k, prompts.lens + k, run, &oi, g + k);
			k += run;
		}
		i += Max(run, 1);
	}
	res = palloc(sizeof(Datum) * prompts.n);
	for (int i = 0; i < prompts.n; i++)
		res[i] = PointerGetDatum(tfm_generated_text(c.row, &g[i]));
	PG_RETURN_ARRAYTYPE_P(tfm_texts_result(&prompts, res));
}

PG_FUNCTION_INFO_V1(tfm_generate_tokens);
Datum
tfm_generate_tokens(PG_FUNCTION_ARGS)
{
	GenRow		g;
	const TfmModelRow *row;

	if (tfm_args_null(fcinfo, 0, 1))
		return tfm_srf_none(fcinfo);
	row = generate_one(fcinfo, true, &g);
	for (int i = 0; i < g.n; i++)
		put_token(fcinfo, row, i + 1, g.ids[i], (double) g.logprob[i]);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tfm_next_tokens);
Datum
tfm_next_tokens(PG_FUNCTION_ARGS)
{
	float	   *probs;
	int		   *order;
	char	   *name;
	const TfmModelRow *row;
	tfm_model  *m;
	int32	   *ids;
	int			n,
				k;

	if (tfm_args_null(fcinfo, 0, 1))
		return tfm_srf_none(fcinfo);
	name = tfm_text_arg(fcinfo, 0, "model");
	k = PG_ARGISNULL(2) ? 10 : PG_GETARG_INT32(2);
	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be positive, not %d", k)));
	InitMaterializedSRF(fcinfo, 0);
	m = get_lm_for(fcinfo, name, &row);
	k = Min(k, m->cfg.vocab);
	ids = prompt_ids(fcinfo, 1, row, &n);
	order = tfm_next_token_probs(m, name, ids, n, k, &probs);
	for (int i = 0; i < k; i++)
		put_token(fcinfo, row, i + 1, order[i], (double) probs[order[i]]);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tfm_score);
Datum
tfm_score(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		v[2];
	bool		nulls[2] = {false, false};
	double		nats;
	int64		tokens;
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	int32	   *ids;
	int			n;

	TFM_ARG_NOT_NULL(1, "input");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	m = get_lm_for(fcinfo, name, &row);
	ids = arg_ids(fcinfo, 1, row, &n);
	nats = tfm_lm_score(m, ids, n, name, &tokens);
	v[0] = Float8GetDatum(-nats);
	v[1] = Int32GetDatum((int32) tokens);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), v, nulls)));
}
