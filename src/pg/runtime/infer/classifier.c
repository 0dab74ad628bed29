/*
 * classifier.c — a classifier's inference: the model from the cache, a
 * value's ids as it reads them, and many inputs through varlen forward
 * passes of similar lengths within tfm.work_mem (tfm_classify, tfm_embed,
 * tfm_evaluate), pairs of texts with their token types (tfm_rerank,
 * tfm_zero_shot), and the logits of a head on every token (tfm_entities,
 * tfm_answer).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "tfm/precision.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/*
 * Tokens per varlen forward pass (tfm_batch.lens: the texts' rows one after
 * the other, nothing padded): texts join a pass while their tokens fit,
 * whatever their number; a longer text has a pass of its own.  Each text's
 * result is bit for bit the one it has alone, so the budget only trades
 * the products' width (more rows, better use of the kernels) against
 * activations that stay in L2 (a 128-token pass's widest, 128 × 1536 fp32
 * for a MiniLM shape, is 768 KB).  fp32, int8 and int4 run row kernels
 * whose rate is flat from ~100 rows, so 128 tokens; bf16 on AMX's 32 × 32
 * tiles gains from more rows, so 512 (doc/performance.md, "pass sizes").
 */
#define TFM_VARLEN_TOKENS 128
#define TFM_VARLEN_TOKENS_BF16 512

static int
varlen_tokens(const tfm_model *m)
{
	return tfm_model_precision(m) == TFM_PREC_BF16 ? TFM_VARLEN_TOKENS_BF16 : TFM_VARLEN_TOKENS;
}

static const char *const token_head_tasks[] = {NULL, "tfm_entities", "tfm_answer"};

/* a classifier of texts (its head on the pooled vector) */
tfm_model *
tfm_get_classifier(const char *name, const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_model_for(name, TFM_TASK_CLASSIFY, false, rowp);

	if ((*rowp)->cfg.token_head != TFM_TOKEN_HEAD_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has a head on every token, not a classifier of texts",
						(*rowp)->name),
				 errhint("It is read with %s.", token_head_tasks[(*rowp)->cfg.token_head])));
	return m;
}

/* a classifier with a head on every token of this kind (tfm_token_head), and a tokenizer */
tfm_model *
tfm_get_token_model(const char *name, int head, const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_model_for(name, TFM_TASK_CLASSIFY, true, rowp);

	if ((*rowp)->cfg.token_head != head)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is not %s", (*rowp)->name,
						head == TFM_TOKEN_HEAD_TAGS ? "a token classifier (...ForTokenClassification)" :
						"an extractive question-answering model (...ForQuestionAnswering)")));
	return m;
}

/* the ids a classifier reads for one value; errors on empty text */
int32 *
tfm_classifier_ids(const TfmModelRow *row, Datum d, Oid type, int *n)
{
	TfmSpecials sp;
	int32	   *ids;

	tfm_model_specials(row, &sp);
	ids = tfm_datum_ids(d, type, row, false, n);
	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot classify an empty %s", tfm_column_is_text(type) ? "text" : "id array")));
	return tfm_classifier_input(row, &sp, ids, *n, n, NULL);
}

static int
cmp_by_len(const void *a, const void *b, void *arg)
{
	const int  *lens = arg;
	int			x = lens[*(const int *) a],
				y = lens[*(const int *) b];

	/* longest first: the first batch sizes the workspace once for all */
	return x > y ? -1 : (x < y);
}

/*
 * n inputs (types: their token types, or NULL) through varlen passes of
 * similar lengths (longest first, so the first pass sizes the workspace);
 * each input's probabilities (probs; its logits where raw) or pooled vector
 * (pooled) to its row k, the same bits as its pass alone
 */
static void
run_passes(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types, const int *lens,
		   int n, float *probs, bool raw, float *pooled, float **token_out)
{
	int			C = row->n_labels,
				d = m->cfg.d_model;
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	int		   *blens = palloc(sizeof(int) * Max(n, 1));
	const int	budget = varlen_tokens(m);

	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), cmp_by_len, (void *) lens);
	for (int start = 0, B = 0; start < n; start += B)
	{
		int			T = Max(1, lens[order[start]]);	/* the longest of the pass */
		int64		tokens = T;
		int32	   *buf,
				   *tbuf = NULL;
		float	   *tok = NULL;
		size_t		r = 0;
		tfm_batch	b;

		CHECK_FOR_INTERRUPTS();
		for (B = 1; start + B < n && tokens + lens[order[start + B]] <= budget; B++)
			tokens += lens[order[start + B]];
		/* fewer texts where the pass would not fit in tfm.work_mem */
		while (B > 1 && !tfm_work_mem_fits(m, tfm_pass_bytes(m, B, T, 0, false, false)))
			B /= 2;
		tfm_work_mem_check(m, tfm_pass_bytes(m, B, T, 0, false, false), "running", row->name,
						   "the length of the input");
		buf = palloc(sizeof(int32) * (size_t) B * T);
		if (types)
			tbuf = palloc(sizeof(int32) * (size_t) B * T);
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

			blens[i] = lens[k];
			memcpy(buf + r, ids[k], sizeof(int32) * lens[k]);
			if (types)
				memcpy(tbuf + r, types[k], sizeof(int32) * lens[k]);
			r += lens[k];
		}
		memset(&b, 0, sizeof(b));
		b.B = B;
		b.T = T;
		b.input = buf;
		b.lens = blens;
		b.types = tbuf;
		if (token_out)
			b.token_logits = tok = palloc(sizeof(float) * Max(r, 1) * C);
		tfm_check_pass(tfm_model_forward(m, &b, false, 0), row->name);
		r = 0;
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

			if (token_out)
				memcpy(token_out[k], tok + r * C, sizeof(float) * lens[k] * C);
			r += lens[k];

			if (probs)
			{
				memcpy(probs + (size_t) k * C, m->logits + (size_t) i * C, sizeof(float) * C);
				if (!raw)
					tfm_softmax_rows(probs + (size_t) k * C, 1, C);
			}
			if (pooled)
				memcpy(pooled + (size_t) k * d, m->pooled + (size_t) i * d, sizeof(float) * d);
		}
		pfree(buf);
		if (tbuf)
			pfree(tbuf);
		if (tok)
			pfree(tok);
	}
	pfree(order);
	pfree(blens);
}

void
tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens, int n,
				   float *probs, float *pooled)
{
	run_passes(m, row, ids, NULL, lens, n, probs, false, pooled, NULL);
}

void
tfm_classifier_run_pairs(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
						 const int *lens, int n, float *logits)
{
	run_passes(m, row, ids, types, lens, n, logits, true, NULL, NULL);
}

/*
 * n inputs (types may be NULL) through a token head's varlen passes: each
 * input's (lens[k], n_labels) logits, a row per token, to tokens[k]
 */
void
tfm_classifier_run_tokens(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
						  const int *lens, int n, float **tokens)
{
	run_passes(m, row, ids, types, lens, n, NULL, true, NULL, tokens);
}
