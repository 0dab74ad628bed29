/*
 * generate.c — language models in SQL: tfm_generate (one prompt or an
 * array decoded as one batch), tfm_generate_tokens (token by token, with
 * log-probabilities), tfm_next_tokens (the k most likely next tokens) and
 * tfm_score (the log-probability of a text).
 *
 * The decode loop is the core's (tfm/generate.h: the key/value cache, the
 * sliding window, sampling); here are the arguments, the tokenizer, the
 * work_mem limit and the rows.  A prompt longer than max_len keeps its last
 * max_len tokens; an empty prompt starts from <bos>.  Generation stops at
 * <eos>, at the stop text (not included in the result) or after
 * max_tokens.  seed NULL takes a seed from the statement (new text in each
 * statement, the same text for the same arguments within one: the
 * functions are STABLE); a given seed always gives the same text.
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

#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/generate.h"
#include "tfm/tokenizer.h"
#include "sql/args.h"
#include "runtime/rows.h"
#include "runtime/train_data.h"

#define TFM_MAX_GENERATE 100000
#define TFM_MAX_PROMPTS  1024

typedef struct GenOpts
{
	int			max_tokens;
	float		temperature;
	int			top_k;
	float		top_p;
	uint64		seed;
	char	   *stop;
} GenOpts;

typedef struct GenRow
{
	int32	   *ids;			/* generated tokens */
	float	   *logprob;
	int			n;
	int			stop_at;		/* bytes of text to keep when stopped by the stop text, or -1 */
} GenRow;

/* arguments: model, prompt(s), max_tokens, temperature, top_k, top_p, seed, stop */
static void
parse_opts(FunctionCallInfo fcinfo, GenOpts *o)
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
	if (!PG_ARGISNULL(7))
	{
		o->stop = text_to_cstring(PG_GETARG_TEXT_PP(7));
		if (o->stop[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("stop must not be empty")));
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

/*
 * A prompt's ids (text, or int[] taken as given): the last max_len tokens,
 * or <bos> for an empty prompt (ids has room for one).
 */
static void
trim_prompt(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids, int *n)
{
	if (*n == 0)
	{
		ids[0] = sp->bos;
		*n = 1;
	}
	if (*n > row->cfg.max_len)
	{
		memmove(ids, ids + *n - row->cfg.max_len, sizeof(int32) * row->cfg.max_len);
		*n = row->cfg.max_len;
	}
}

static int32 *
prompt_ids(FunctionCallInfo fcinfo, int argno, const TfmModelRow *row, const TfmSpecials *sp, int *n)
{
	int32	   *ids = arg_ids(fcinfo, argno, row, n);

	trim_prompt(row, sp, ids, n);
	return ids;
}

static void
free_decoder(void *d)
{
	tfm_decoder_free(d);
}

static void
free_generator(void *g)
{
	tfm_generator_free(g);
}

/* the core's hooks: interrupts before every token, and the stop text */
typedef struct GenHooks
{
	const TfmModelRow *row;
	const GenOpts *o;
	GenRow	   *out;
} GenHooks;

static int
gen_poll(void *arg)
{
	(void) arg;
	CHECK_FOR_INTERRUPTS();
	return 0;
}

/* does row b's text now contain the stop text? then note where to cut */
static bool
gen_stop(void *arg, int b, const int32_t *ids, int n)
{
	GenHooks   *h = arg;
	text	   *t;
	char	   *hit;
	char	   *s;

	t = tfm_tokenizer_decode_flags(h->row->tokenizer, ids, n, true);
	s = text_to_cstring(t);
	hit = strstr(s, h->o->stop);
	if (hit)
		h->out[b].stop_at = (int) (hit - s);
	pfree(s);
	pfree(t);
	return hit != NULL;
}

/*
 * Decode B prompts together (left-padded) for up to max_tokens tokens: the
 * core's loop (tfm_generate_run), within tfm.work_mem.
 */
static void
generate(tfm_model *m, const TfmModelRow *row, int32 **prompts, const int *plens, int B,
		 const GenOpts *o, GenRow *out)
{
	const tfm_config *c = &m->cfg;
	TfmSpecials sp;
	tfm_gen_opts go;
	GenHooks	hooks;
	tfm_generator *gen;
	TfmGuard   *guard;
	const tfm_gen_row *rows;

	{
		/* the decoder, its pass and the loop's own arrays, sized first */
		size_t		need = tfm_generate_bytes(c, plens, B, o->max_tokens,
											  tfm_model_precision(m) != TFM_PREC_FP32,
											  tfm_get_threads());

		if (B > 1 && !tfm_work_mem_fits(m, need))
		{
			/* prompts decoded together: in two halves, each seeded as before */
			int			h = B / 2;
			GenOpts		o2 = *o;

			generate(m, row, prompts, plens, h, o, out);
			o2.seed = o->seed + (uint64) h;
			generate(m, row, prompts + h, plens + h, B - h, &o2, out + h);
			return;
		}
		tfm_work_mem_check(m, need, "generating with", row->name,
						   "max_tokens or the length of the prompt");
	}
	tfm_model_specials(row, &sp);
	memset(&go, 0, sizeof(go));
	go.max_tokens = o->max_tokens;
	go.temperature = o->temperature;
	go.top_k = o->top_k;
	go.top_p = o->top_p;
	go.seed = o->seed;
	go.bos = sp.bos;
	go.eos = sp.eos;
	/*
	 * An imported model's vocabulary may end before the tokenizer's tfm
	 * specials, and it has no padding token (pad_id -1): it may produce any
	 * of its ids, and its pad positions are fed as id 0 (masked all the
	 * same).
	 */
	go.pad_is_token = !(sp.pad >= c->vocab || c->pad_id < 0);
	go.pad = go.pad_is_token ? sp.pad : 0;
	hooks.row = row;
	hooks.o = o;
	hooks.out = out;
	go.poll = gen_poll;
	go.stop = o->stop ? gen_stop : NULL;
	go.hook_arg = &hooks;
	for (int b = 0; b < B; b++)
		out[b].stop_at = -1;

	gen = tfm_generator_create(m, prompts, plens, B, &go);
	if (!gen)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the decoder of model \"%s\"", row->name);
	guard = tfm_guard(free_generator, gen);
	tfm_check_pass(tfm_generate_run(gen), row->name);
	rows = tfm_generator_rows(gen);
	for (int b = 0; b < B; b++)
	{
		out[b].n = rows[b].n;
		out[b].ids = palloc(sizeof(int32) * Max(1, rows[b].n));
		out[b].logprob = palloc(sizeof(float) * Max(1, rows[b].n));
		memcpy(out[b].ids, rows[b].ids, sizeof(int32) * rows[b].n);
		memcpy(out[b].logprob, rows[b].logprob, sizeof(float) * rows[b].n);
	}
	tfm_generator_free(gen);
	tfm_guard_release(guard);
}

static text *
result_text(const TfmModelRow *row, const GenRow *g)
{
	text	   *t = tfm_tokenizer_decode_flags(row->tokenizer, g->ids, g->n, true);

	if (g->stop_at >= 0 && g->stop_at <= (int) VARSIZE_ANY_EXHDR(t))
		SET_VARSIZE(t, VARHDRSZ + g->stop_at);
	return t;
}

/*
 * The one prompt of argument 1, generated with the options of fcinfo;
 * a set-returning caller (srf) gets the model for its call, and a stop text
 * needs a tokenizer.
 */
static const TfmModelRow *
generate_one(FunctionCallInfo fcinfo, bool srf, GenRow *g)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	TfmSpecials sp;
	int32	   *ids;
	int			n;

	TFM_ARG_NOT_NULL(1, "prompt");
	parse_opts(fcinfo, &o);
	if (srf)
	{
		SetSingleFuncCall(fcinfo, 0);
		m = get_lm_for(fcinfo, name, &row);
		if (o.stop && !row->tokenizer)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\" has no tokenizer, so it cannot stop at a text", name)));
	}
	else
		m = get_lm(name, &row);
	tfm_model_specials(row, &sp);
	ids = prompt_ids(fcinfo, 1, row, &sp, &n);
	generate(m, row, &ids, &n, 1, &o, g);
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
	const TfmModelRow *row = generate_one(fcinfo, false, &g);

	PG_RETURN_TEXT_P(result_text(row, &g));
}

PG_FUNCTION_INFO_V1(tfm_generate_batch);
Datum
tfm_generate_batch(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	TfmSpecials sp;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int32	  **ids;
	int		   *lens;
	GenRow	   *g;
	Datum	   *res;

	n = tfm_text_array_arg(fcinfo, 1, "prompts", false, &elems, &nulls);
	parse_opts(fcinfo, &o);
	m = get_lm(name, &row);
	tfm_model_specials(row, &sp);
	if (n > TFM_MAX_PROMPTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("at most %d prompts can be decoded together, not %d", TFM_MAX_PROMPTS, n)));
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(tfm_text_array(NULL, NULL, 0));
	ids = palloc(sizeof(int32 *) * n);
	lens = palloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
	{
		ids[i] = tfm_tokenizer_encode(row->tokenizer, VARDATA_ANY(DatumGetTextPP(elems[i])),
									  VARSIZE_ANY_EXHDR(DatumGetTextPP(elems[i])), &lens[i]);
		trim_prompt(row, &sp, ids[i], &lens[i]);
	}
	g = palloc(sizeof(GenRow) * n);
	generate(m, row, ids, lens, n, &o, g);
	res = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		res[i] = PointerGetDatum(result_text(row, &g[i]));
	PG_RETURN_ARRAYTYPE_P(tfm_text_array(res, NULL, n));
}

PG_FUNCTION_INFO_V1(tfm_generate_tokens);
Datum
tfm_generate_tokens(PG_FUNCTION_ARGS)
{
	GenRow		g;
	const TfmModelRow *row = generate_one(fcinfo, true, &g);

	for (int i = 0; i < g.n; i++)
		put_token(fcinfo, row, i + 1, g.ids[i], (double) g.logprob[i]);
	return (Datum) 0;
}

static int
by_prob_desc(const void *a, const void *b, void *arg)
{
	const float *p = arg;
	int			x = *(const int *) a,
				y = *(const int *) b;

	if (p[x] != p[y])
		return p[x] > p[y] ? -1 : 1;
	return x - y;
}

PG_FUNCTION_INFO_V1(tfm_next_tokens);
Datum
tfm_next_tokens(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	TfmSpecials sp;
	int32	   *ids;
	int			n,
				k,
				V;
	tfm_decoder *d;
	TfmGuard   *guard;
	float	   *logits;
	int		   *order;

	TFM_ARG_NOT_NULL(1, "prompt");
	k = PG_ARGISNULL(2) ? 10 : PG_GETARG_INT32(2);
	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be positive, not %d", k)));
	SetSingleFuncCall(fcinfo, 0);
	m = get_lm_for(fcinfo, name, &row);
	tfm_model_specials(row, &sp);
	V = m->cfg.vocab;
	k = Min(k, V);
	ids = prompt_ids(fcinfo, 1, row, &sp, &n);
	tfm_work_mem_check(m, tfm_decoder_bytes(&m->cfg, 1, n, n, 0,
											tfm_model_precision(m) != TFM_PREC_FP32,
											tfm_get_threads()) + (size_t) V * 8,
					   "running", name, "the length of the prompt");
	d = tfm_decoder_create(m, 1, n, n);
	if (!d)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the decoder of model \"%s\"", name);
	guard = tfm_guard(free_decoder, d);
	logits = palloc(sizeof(float) * V);
	tfm_check_pass(tfm_decoder_feed(d, ids, NULL, n, logits), name);
	tfm_decoder_free(d);
	tfm_guard_release(guard);
	tfm_softmax_rows(logits, 1, V);
	order = palloc(sizeof(int) * V);
	for (int i = 0; i < V; i++)
		order[i] = i;
	qsort_arg(order, V, sizeof(int), by_prob_desc, logits);
	for (int i = 0; i < k; i++)
		put_token(fcinfo, row, i + 1, order[i], (double) logits[order[i]]);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tfm_score);
Datum
tfm_score(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	int32	   *ids;
	int			n,
				T;
	double		nats = 0.0;
	int64		tokens = 0;
	TupleDesc	tupdesc;
	Datum		v[2];
	bool		nulls[2] = {false, false};

	TFM_ARG_NOT_NULL(1, "input");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	m = get_lm_for(fcinfo, name, &row);
	ids = arg_ids(fcinfo, 1, row, &n);
	T = m->cfg.max_len;
	/* consecutive windows: every token after the first predicted once */
	for (int64 pos = 0; pos + 1 < n; pos += T)
	{
		int			w = (int) Min((int64) T, n - 1 - pos);
		int			cnt;

		CHECK_FOR_INTERRUPTS();
		nats += tfm_lm_window_loss(m, ids, pos, w, "running", name, name, &cnt);
		tokens += cnt;
	}
	v[0] = Float8GetDatum(-nats);
	v[1] = Int32GetDatum((int32) tokens);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), v, nulls)));
}
