/*
 * answer.c — tfm_answer: the answer to a question found in a passage by an
 * extractive question-answering model (...ForQuestionAnswering imported
 * with its tokenizer: a start and an end logit per token), as transformers'
 * QuestionAnsweringPipeline finds it.  The pair is [CLS] question [SEP]
 * context [SEP] (pair_input.c), the context in windows of the room the
 * question leaves in max_seq_len = min(positions, 384) tokens, overlapping
 * by doc_stride tokens (the tokenizers' overflowing tokens: window k starts
 * k · (room - doc_stride) tokens in, the last reaches the end).  In each
 * window the logits of tokens outside the context but [CLS] are set to
 * -10000, the start and end logits each softmaxed, the null score
 * start[CLS] · end[CLS] kept and [CLS]'s probabilities zeroed; the answer
 * is the span (start <= end < start + max_answer_len) of the highest
 * start · end, widened to whole words (align_to_words: a token that
 * continues a word, token_spans.c, belongs to it), the best over windows;
 * with handle_impossible_answer the empty answer scores the least null
 * score of the windows and wins when it is higher.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "sql/args.h"
#include "runtime/infer/infer.h"
#include "runtime/runtime.h"

/* the pipeline's max_seq_len: min(model_max_length, 384) */
#define TFM_ANSWER_MAX_SEQ_LEN 384

typedef struct Best
{
	double		score;
	int			t0,
				t1;				/* context tokens, widened to words */
	bool		found;
} Best;

/* the best span of one window: its tokens ctx[a .. a + k), logits z (len × 2) */
static void
window_best(const float *z, int len, int first, const TfmTokSpan *ctx, int a, int k,
			int max_answer_len, double *null, Best *best)
{
	double	   *st = palloc(sizeof(double) * len),
			   *en = palloc(sizeof(double) * len),
				ms = -INFINITY,
				me = -INFINITY,
				ss = 0.0,
				se = 0.0,
				top = -1.0;
	int			bi = -1,
				bj = -1;

	for (int i = 0; i < len; i++)
	{
		bool		keep = i == 0 || (i >= first && i < first + k);

		st[i] = keep ? z[2 * i] : -10000.0;
		en[i] = keep ? z[2 * i + 1] : -10000.0;
		ms = Max(ms, st[i]);
		me = Max(me, en[i]);
	}
	for (int i = 0; i < len; i++)
	{
		st[i] = exp(st[i] - ms);
		en[i] = exp(en[i] - me);
		ss += st[i];
		se += en[i];
	}
	for (int i = 0; i < len; i++)
	{
		st[i] /= ss;
		en[i] /= se;
	}
	*null = Min(*null, st[0] * en[0]);
	/* the best start · end over the context, the first of equals */
	for (int i = first; i < first + k; i++)
		for (int j = i; j < first + k && j < i + max_answer_len; j++)
			if (st[i] * en[j] > top)
			{
				top = st[i] * en[j];
				bi = i;
				bj = j;
			}
	if (bi >= 0 && (!best->found || top > best->score))
	{
		int			t0 = a + bi - first,
					t1 = a + bj - first;

		/* whole words, within the window */
		while (t0 > a && ctx[t0].subword)
			t0--;
		while (t1 + 1 < a + k && ctx[t1 + 1].subword)
			t1++;
		best->found = true;
		best->score = top;
		best->t0 = t0;
		best->t1 = t1;
	}
	pfree(st);
	pfree(en);
}

/*
 * tfm_answer(model, question, context, max_answer_len, doc_stride,
 * handle_impossible_answer) → (answer, score, start_char, end_char)
 */
PG_FUNCTION_INFO_V1(tfm_answer);
Datum
tfm_answer(PG_FUNCTION_ARGS)
{
	char	   *model = tfm_text_arg(fcinfo, 0, "model");
	text	   *context;
	int			max_answer_len,
				doc_stride,
				nq,
				nc,
				max_seq,
				room,
				stride,
				nwin = 0,
				first;
	bool		impossible;
	const TfmModelRow *row;
	tfm_model  *m;
	TfmTokSpan *q,
			   *c;
	int32	   *qids,
			  **ids,
			  **types;
	int		   *lens,
			   *starts;
	float	  **out;
	double		null = 1e6;
	Best		best = {0};
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	TFM_ARG_NOT_NULL(1, "question");
	TFM_ARG_NOT_NULL(2, "context");
	TFM_ARG_NOT_NULL(3, "max_answer_len");
	TFM_ARG_NOT_NULL(4, "doc_stride");
	TFM_ARG_NOT_NULL(5, "handle_impossible_answer");
	max_answer_len = PG_GETARG_INT32(3);
	doc_stride = PG_GETARG_INT32(4);
	impossible = PG_GETARG_BOOL(5);
	if (max_answer_len < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_answer_len must be at least 1, not %d", max_answer_len)));
	if (doc_stride < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("doc_stride must be at least 0, not %d", doc_stride)));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "tfm_answer must return a record");
	m = tfm_get_token_model(model, TFM_TOKEN_HEAD_SPANS, &row);
	context = PG_GETARG_TEXT_PP(2);
	q = tfm_token_spans(row, PG_GETARG_TEXT_PP(1), &nq);
	c = tfm_token_spans(row, context, &nc);
	max_seq = Min(row->cfg.max_len, TFM_ANSWER_MAX_SEQ_LEN);
	/* [CLS] q [SEP] c [SEP], RoBERTa's <s> q </s></s> c </s> */
	first = nq + (row->cfg.pos_offset > 0 ? 3 : 2);
	room = max_seq - first - 1;
	if (room < 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the question has %d tokens; model \"%s\" reads at most %d beside a context",
						nq, row->name, max_seq - (first - nq) - 2)));
	/* the pipeline's default, min(max_seq_len / 2, 128), bounds it */
	stride = Min(doc_stride, max_seq / 2);
	if (nc > room && stride >= room)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("doc_stride %d leaves no new context tokens in a window of %d", stride, room),
				 errhint("Pass a smaller doc_stride or a shorter question.")));
	/* the windows' starts */
	starts = palloc(sizeof(int) * (nc <= room ? 1 : (nc - room) / (room - stride) + 2));
	for (int k = 0;; k += room - stride)
	{
		starts[nwin++] = k;
		if (k + room >= nc)
			break;
	}
	/* every window's ids, types and logits, kept until the answer is out */
	tfm_work_mem_require((size_t) nwin * (max_seq * (2 * sizeof(int32) + 2 * sizeof(float)) +
										  3 * sizeof(void *) + sizeof(int)),
						 "reading the context's windows", "pass a shorter context or a larger doc_stride");
	qids = palloc(sizeof(int32) * Max(nq, 1));
	for (int i = 0; i < nq; i++)
		qids[i] = q[i].id;
	ids = palloc(sizeof(int32 *) * nwin);
	types = palloc(sizeof(int32 *) * nwin);
	lens = palloc(sizeof(int) * nwin);
	out = palloc(sizeof(float *) * nwin);
	for (int w = 0; w < nwin; w++)
	{
		int			k = Min(room, nc - starts[w]);
		int32	   *cids = palloc(sizeof(int32) * Max(k, 1));

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < k; i++)
			cids[i] = c[starts[w] + i].id;
		ids[w] = tfm_pair_join(row, qids, nq, cids, k, false, &types[w], &lens[w]);
		out[w] = palloc(sizeof(float) * 2 * lens[w]);
		pfree(cids);
	}
	tfm_classifier_run_tokens(m, row, ids, types, lens, nwin, out);
	for (int w = 0; w < nwin; w++)
	{
		CHECK_FOR_INTERRUPTS();
		window_best(out[w], lens[w], first, c, starts[w], Min(room, nc - starts[w]), max_answer_len,
					&null, &best);
	}
	if (!best.found || (impossible && null > best.score))
	{
		/* the empty answer: the least null score (no context: 0) */
		values[0] = CStringGetTextDatum("");
		values[1] = Float4GetDatum(impossible && nc > 0 ? (float) null : 0.0f);
		values[2] = Int32GetDatum(0);
		values[3] = Int32GetDatum(0);
	}
	else
	{
		values[0] = PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(context) + c[best.t0].bstart,
															 (int) (c[best.t1].bend - c[best.t0].bstart)));
		values[1] = Float4GetDatum((float) best.score);
		values[2] = Int32GetDatum(c[best.t0].start);
		values[3] = Int32GetDatum(c[best.t1].end);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
