/*
 * pair_tasks.c — the tasks of imported classifiers that read two texts
 * together (pair_input.c): tfm_rerank (a cross-encoder's relevance of each
 * passage to a query: sigmoid of its one logit, or the probability of its
 * last label) and tfm_zero_shot (an NLI model's entailment of "This example
 * is {label}." by the text, for labels given at query time), as
 * sentence-transformers' CrossEncoder and transformers'
 * ZeroShotClassificationPipeline compute them.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/runtime.h"

/* the pairs (a, bs[i]) of one first text and n second ones, and their logits */
/* the most labels one tfm_zero_shot call takes (each is a pair run through the model) */
#define TFM_ZERO_SHOT_MAX_LABELS 4096

typedef struct Pairs
{
	tfm_model  *m;
	const TfmModelRow *row;
	int			n;				/* pairs run */
	float	   *logits;			/* n × labels */
} Pairs;

static void
run_pairs(const char *model, text *a, text **bs, int n, bool only_first, Pairs *p)
{
	int32	  **ids = palloc(sizeof(int32 *) * Max(n, 1));
	int32	  **types = palloc(sizeof(int32 *) * Max(n, 1));
	int		   *lens = palloc(sizeof(int) * Max(n, 1));
	int32	   *ta;
	int			na;
	size_t		bytes = 0;
	MemoryContext one = AllocSetContextCreate(CurrentMemoryContext, "tfm pair",
											  ALLOCSET_DEFAULT_SIZES),
				old;

	p->m = tfm_get_classifier(model, &p->row);
	p->n = n;
	ta = tfm_pair_tokens(p->row, a, &na);
	for (int i = 0; i < n; i++)
	{
		int			nb;
		int32	   *tb;

		int32	   *id,
				   *ty;

		CHECK_FOR_INTERRUPTS();
		/* a pair's tokenizing in a context of its own: only its ids and types stay */
		old = MemoryContextSwitchTo(one);
		tb = tfm_pair_tokens(p->row, bs[i], &nb);
		id = tfm_pair_join(p->row, ta, na, tb, nb, only_first, &ty, &lens[i]);
		MemoryContextSwitchTo(old);
		ids[i] = palloc(sizeof(int32) * Max(lens[i], 1));
		types[i] = palloc(sizeof(int32) * Max(lens[i], 1));
		memcpy(ids[i], id, sizeof(int32) * lens[i]);
		memcpy(types[i], ty, sizeof(int32) * lens[i]);
		MemoryContextReset(one);
		/* the pairs' ids and types, kept until they have run */
		bytes += (size_t) lens[i] * 2 * sizeof(int32) + sizeof(int32 *) * 2 + sizeof(int);
		tfm_work_mem_require(bytes, "reading these pairs", "pass fewer texts");
	}
	MemoryContextDelete(one);
	p->logits = palloc(sizeof(float) * p->row->n_labels * Max(n, 1));
	tfm_classifier_run_pairs(p->m, p->row, ids, types, lens, n, p->logits);
}

/* a cross-encoder's relevance from its logits */
static float
relevance(const float *z, int C)
{
	float		mx = z[0],
				sum = 0.0f;

	if (C == 1)
		return 1.0f / (1.0f + expf(-z[0]));
	for (int k = 1; k < C; k++)
		mx = Max(mx, z[k]);
	for (int k = 0; k < C; k++)
		sum += expf(z[k] - mx);
	return expf(z[C - 1] - mx) / sum;
}

/* tfm_rerank(model, query, passage text) → real */
PG_FUNCTION_INFO_V1(tfm_rerank_one);
Datum
tfm_rerank_one(PG_FUNCTION_ARGS)
{
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	text	   *b;
	Pairs		p;

	TFM_ARG_NOT_NULL(1, "query");
	TFM_ARG_NOT_NULL(2, "passage");
	b = PG_GETARG_TEXT_PP(2);
	run_pairs(model, PG_GETARG_TEXT_PP(1), &b, 1, false, &p);
	PG_RETURN_FLOAT4(relevance(p.logits, p.row->n_labels));
}

/*
 * tfm_rerank(model, query, passages text[]) → TABLE(ord, score): a row per
 * passage in order (ord from 1; a NULL passage scores NULL), through
 * batched passes.
 */
PG_FUNCTION_INFO_V1(tfm_rerank);
Datum
tfm_rerank(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				run = 0;
	text	  **bs;
	Pairs		p;

	TFM_ARG_NOT_NULL(1, "query");
	InitMaterializedSRF(fcinfo, 0);
	n = tfm_text_array_arg(fcinfo, 2, "passages", true, &elems, &nulls);
	bs = palloc(sizeof(text *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			bs[run++] = DatumGetTextPP(elems[i]);
	run_pairs(model, PG_GETARG_TEXT_PP(1), bs, run, false, &p);
	for (int i = 0, k = 0; i < n; i++)
	{
		Datum		values[2] = {Int32GetDatum(i + 1), (Datum) 0};
		bool		isnull[2] = {false, nulls[i]};

		if (!nulls[i])
			values[1] = Float4GetDatum(relevance(p.logits + (size_t) (k++) * p.row->n_labels,
												 p.row->n_labels));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	return (Datum) 0;
}

/* the template with its one "{}" replaced by label */
static text *
hypothesis(const char *tmpl, const char *at, text *label)
{
	StringInfoData s;

	initStringInfo(&s);
	appendBinaryStringInfo(&s, tmpl, at - tmpl);
	appendBinaryStringInfo(&s, VARDATA_ANY(label), VARSIZE_ANY_EXHDR(label));
	appendStringInfoString(&s, at + 2);
	return cstring_to_text_with_len(s.data, s.len);
}

/* the entailment label: the first whose name starts with "entail", else the last */
static int
entailment_id(const TfmModelRow *row)
{
	for (int k = 0; k < row->n_labels; k++)
		if (pg_strncasecmp(row->labels[k], "entail", 6) == 0)
			return k;
	return row->n_labels - 1;
}

typedef struct Scored
{
	int			k;
	float		score;
} Scored;

static int
by_score(const void *x, const void *y)
{
	const Scored *a = x,
			   *b = y;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->k - b->k;			/* ties in the labels' order */
}

/*
 * tfm_zero_shot(model, text, labels text[], hypothesis_template, multi_label)
 * → TABLE(label, score), best first.  Single-label: the softmax over the
 * labels of their entailment logits; multi-label: each label's own
 * softmax over (contradiction = label 0, entailment).
 */
PG_FUNCTION_INFO_V1(tfm_zero_shot);
Datum
tfm_zero_shot(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	char	   *tmpl = tfm_text_arg(fcinfo, 3, "hypothesis_template");
	char	   *at = strstr(tmpl, "{}");
	bool		multi;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				C,
				ent;
	text	  **hyps;
	Scored	   *s;
	size_t		hyp_bytes = 0;
	Pairs		p;
	float		mx = -INFINITY,
				sum = 0.0f;

	TFM_ARG_NOT_NULL(1, "text");
	TFM_ARG_NOT_NULL(4, "multi_label");
	multi = PG_GETARG_BOOL(4);
	InitMaterializedSRF(fcinfo, 0);
	if (!at || strstr(at + 2, "{}"))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hypothesis_template must hold \"{}\" exactly once, where a label goes"),
				 errdetail("It is \"%s\".", tmpl)));
	n = tfm_text_array_arg(fcinfo, 2, "labels", false, &elems, &nulls);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("labels must name at least one label")));
	/* each label is a pass of the model over its pair: a bound before any work */
	if (n > TFM_ZERO_SHOT_MAX_LABELS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("labels holds %d labels, more than the %d zero-shot classification takes",
						n, TFM_ZERO_SHOT_MAX_LABELS)));
	hyps = palloc(sizeof(text *) * n);
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		hyps[i] = hypothesis(tmpl, at, DatumGetTextPP(elems[i]));
		/* the hypotheses, kept until their pairs are read */
		hyp_bytes += VARSIZE_ANY(hyps[i]) + sizeof(text *) + 16;
		tfm_work_mem_require(hyp_bytes, "writing these hypotheses", "pass fewer labels");
	}
	run_pairs(model, PG_GETARG_TEXT_PP(1), hyps, n, true, &p);
	C = p.row->n_labels;
	if (C < 2)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has one logit; zero-shot classification needs an NLI model's labels",
						p.row->name)));
	ent = entailment_id(p.row);
	s = palloc(sizeof(Scored) * n);
	for (int i = 0; i < n; i++)
		mx = Max(mx, p.logits[(size_t) i * C + ent]);
	for (int i = 0; i < n; i++)
	{
		const float *z = p.logits + (size_t) i * C;

		s[i].k = i;
		if (multi)
			s[i].score = 1.0f / (1.0f + expf(z[0] - z[ent]));
		else
		{
			s[i].score = expf(z[ent] - mx);
			sum += s[i].score;
		}
	}
	for (int i = 0; i < n && !multi; i++)
		s[i].score /= sum;
	qsort(s, n, sizeof(Scored), by_score);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2] = {elems[s[i].k], Float4GetDatum(s[i].score)};
		bool		isnull[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	return (Datum) 0;
}
