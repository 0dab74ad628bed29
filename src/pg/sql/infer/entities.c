/*
 * entities.c — tfm_entities: the entities a token classifier
 * (...ForTokenClassification imported with its tokenizer) tags in a text,
 * as transformers' TokenClassificationPipeline finds them: each token's
 * softmax over the labels, then the aggregation strategy
 *   none    each token with its best label;
 *   simple  tokens grouped: a token joins the group before it when its tag
 *           (the label without B-/I-) is the group's and it is not a B-;
 *   first   first words (a token that continues the word before it joins
 *           it; token_spans.c), each with its first token's best label and
 *           score, then grouped as simple groups tokens;
 *   max     the same, each word with the label and score of its token with
 *           the highest score;
 * a group's label is its first token's after the last '-', its score the
 * mean of its members'; whatever is labelled O is left out.  The entity is
 * the text's own characters from the group's first token to its last
 * (start_char, end_char: 0-based, end exclusive, as Python's offsets).  A
 * text longer than the model's positions is read in consecutive windows.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/runtime.h"

typedef enum Aggregation
{
	AGG_NONE,
	AGG_SIMPLE,
	AGG_FIRST,
	AGG_MAX
} Aggregation;

/* an entity before grouping (a token or a word): its label, score and tokens t0 .. t1 */
typedef struct Ent
{
	int			label;
	double		score;
	int			t0,
				t1;
} Ent;

/* one text to tag: its tokens, and where its logits go */
typedef struct Tagged
{
	int			ord;
	text	   *input;
	TfmTokSpan *tok;
	int			n;
	float	   *logits;			/* n × labels */
} Tagged;

static Aggregation
aggregation_arg(FunctionCallInfo fcinfo, int a)
{
	char	   *s = tfm_text_arg(fcinfo, a, "aggregation");

	if (strcmp(s, "none") == 0)
		return AGG_NONE;
	if (strcmp(s, "simple") == 0)
		return AGG_SIMPLE;
	if (strcmp(s, "first") == 0)
		return AGG_FIRST;
	if (strcmp(s, "max") == 0)
		return AGG_MAX;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown aggregation \"%s\"", s),
			 errhint("It is one of none, simple, first and max.")));
	return AGG_NONE;
}

/* a label's tag: without "B-" or "I-"; *begins for "B-" */
static const char *
tag_of(const char *label, bool *begins)
{
	*begins = strncmp(label, "B-", 2) == 0;
	if (*begins || strncmp(label, "I-", 2) == 0)
		return label + 2;
	return label;
}

/* a group's label: its first member's after the last '-' */
static const char *
group_label(const char *label)
{
	const char *dash = strrchr(label, '-');

	return dash ? dash + 1 : label;
}

static void
put_row(ReturnSetInfo *rsinfo, const Tagged *t, const char *label, double score, int t0, int t1,
		bool with_ord)
{
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};
	int			k = 0;

	if (strcmp(label, "O") == 0)
		return;
	if (with_ord)
		values[k++] = Int32GetDatum(t->ord);
	values[k++] = PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(t->input) + t->tok[t0].bstart,
														   (int) (t->tok[t1].bend - t->tok[t0].bstart)));
	values[k++] = CStringGetTextDatum(label);
	values[k++] = Float4GetDatum((float) score);
	values[k++] = Int32GetDatum(t->tok[t0].start);
	values[k++] = Int32GetDatum(t->tok[t1].end);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* a token's best label (the first of equals) and its softmax probability */
static void
best_label(const float *z, int C, int *label, double *score)
{
	double		mx = z[0],
				sum = 0.0;
	int			k = 0;

	for (int c = 1; c < C; c++)
		if (z[c] > mx)
		{
			mx = z[c];
			k = c;
		}
	for (int c = 0; c < C; c++)
		sum += exp((double) z[c] - mx);
	*label = k;
	*score = 1.0 / sum;
}

/* one text's rows */
static void
tag_rows(ReturnSetInfo *rsinfo, const TfmModelRow *row, const Tagged *t, Aggregation agg,
		 bool with_ord)
{
	int			C = row->n_labels,
				m = 0;
	Ent		   *e = palloc(sizeof(Ent) * Max(t->n, 1));

	/* tokens, or words of tokens */
	for (int i = 0; i < t->n; i++)
	{
		int			label;
		double		score;

		best_label(t->logits + (size_t) i * C, C, &label, &score);
		if (agg == AGG_NONE || agg == AGG_SIMPLE || m == 0 || !t->tok[i].subword)
		{
			e[m].label = label;
			e[m].score = score;
			e[m].t0 = e[m].t1 = i;
			m++;
			continue;
		}
		/* a token continuing the word: first keeps the first, max the best token's */
		e[m - 1].t1 = i;
		if (agg == AGG_MAX && score > e[m - 1].score)
		{
			e[m - 1].label = label;
			e[m - 1].score = score;
		}
	}
	if (agg == AGG_NONE)
	{
		for (int i = 0; i < m; i++)
			put_row(rsinfo, t, row->labels[e[i].label], e[i].score, e[i].t0, e[i].t1, with_ord);
		return;
	}
	/* groups of adjacent entities of one tag, a B- starting a new one */
	for (int g = 0; g < m;)
	{
		bool		b;
		double		sum = e[g].score;
		int			j = g + 1;

		for (; j < m; j++)
		{
			const char *prev = tag_of(row->labels[e[j - 1].label], &b);
			const char *cur = tag_of(row->labels[e[j].label], &b);

			if (b || strcmp(cur, prev) != 0)
				break;
			sum += e[j].score;
		}
		put_row(rsinfo, t, group_label(row->labels[e[g].label]), sum / (j - g), e[g].t0,
				e[j - 1].t1, with_ord);
		g = j;
	}
	pfree(e);
}

/* the texts' tokens in windows of the model's positions, through batched passes */
static void
tag_texts(ReturnSetInfo *rsinfo, const char *model, Tagged *texts, int n, Aggregation agg,
		  bool with_ord)
{
	const TfmModelRow *row;
	tfm_model  *m = tfm_get_token_model(model, TFM_TOKEN_HEAD_TAGS, &row);
	int			W = row->cfg.max_len - 2,
				nw = 0,
				w = 0;
	int32	  **ids;
	int		   *lens;
	float	  **out;
	size_t		bytes = 0;
	int			C = row->n_labels;

	if (W < 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has %d positions, too few for a token and its specials",
						row->name, row->cfg.max_len)));
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		texts[i].tok = tfm_token_spans(row, texts[i].input, &texts[i].n);
		nw += (texts[i].n + W - 1) / W;
		/* the tokens, their windows' ids and their logits, kept until the rows are out */
		bytes += (size_t) texts[i].n * (sizeof(TfmTokSpan) + sizeof(int32) + sizeof(float) * C) +
			3 * sizeof(void *) + 2 * sizeof(int32);
		tfm_work_mem_require(bytes, "tagging these texts", "pass shorter or fewer texts");
	}
	ids = palloc(sizeof(int32 *) * Max(nw, 1));
	lens = palloc(sizeof(int) * Max(nw, 1));
	out = palloc(sizeof(float *) * Max(nw, 1));
	for (int i = 0; i < n; i++)
	{
		texts[i].logits = palloc_extended(sizeof(float) * Max(texts[i].n, 1) * C, MCXT_ALLOC_HUGE);
		for (int a = 0; a < texts[i].n; a += W)
		{
			int			k = Min(W, texts[i].n - a),
						len;

			CHECK_FOR_INTERRUPTS();
			ids[w] = tfm_token_window(row, texts[i].tok + a, k, &len);
			lens[w] = len;
			/* [CLS]'s and [SEP]'s logits land in scratch, the tokens' in place */
			out[w] = palloc(sizeof(float) * len * C);
			w++;
		}
	}
	tfm_classifier_run_tokens(m, row, ids, NULL, lens, nw, out);
	w = 0;
	for (int i = 0; i < n; i++)
	{
		for (int a = 0; a < texts[i].n; a += W, w++)
			memcpy(texts[i].logits + (size_t) a * C, out[w] + C,
				   sizeof(float) * C * Min(W, texts[i].n - a));
		CHECK_FOR_INTERRUPTS();
		tag_rows(rsinfo, row, &texts[i], agg, with_ord);
	}
}

/* tfm_entities(model, input text, aggregation) → TABLE(entity, label, score, start_char, end_char) */
PG_FUNCTION_INFO_V1(tfm_entities);
Datum
tfm_entities(PG_FUNCTION_ARGS)
{
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	Aggregation agg = aggregation_arg(fcinfo, 2);
	Tagged		t = {0};

	TFM_ARG_NOT_NULL(1, "input");
	InitMaterializedSRF(fcinfo, 0);
	t.ord = 1;
	t.input = PG_GETARG_TEXT_PP(1);
	tag_texts((ReturnSetInfo *) fcinfo->resultinfo, model, &t, 1, agg, false);
	return (Datum) 0;
}

/*
 * tfm_entities(model, inputs text[], aggregation) → TABLE(ord, entity, ...):
 * each text's rows with its place in the array (from 1); a NULL text has none
 */
PG_FUNCTION_INFO_V1(tfm_entities_array);
Datum
tfm_entities_array(PG_FUNCTION_ARGS)
{
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	Aggregation agg = aggregation_arg(fcinfo, 2);
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				k = 0;
	Tagged	   *t;

	InitMaterializedSRF(fcinfo, 0);
	n = tfm_text_array_arg(fcinfo, 1, "inputs", true, &elems, &nulls);
	/* each text's record, before any work */
	tfm_work_mem_require(sizeof(Tagged) * (size_t) n, "tagging these texts", "pass fewer texts");
	t = palloc0(sizeof(Tagged) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
		{
			t[k].ord = i + 1;
			t[k++].input = DatumGetTextPP(elems[i]);
		}
	tag_texts((ReturnSetInfo *) fcinfo->resultinfo, model, t, k, agg, true);
	return (Datum) 0;
}
