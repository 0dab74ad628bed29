/*
 * classifier.c — a classifier's inference: the model from the cache, a
 * value's ids as it reads them, and many inputs through batched forward
 * passes of similar lengths within tfm.work_mem (tfm_classify, tfm_embed,
 * tfm_evaluate), and pairs of texts with their token types (tfm_rerank,
 * tfm_zero_shot).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/*
 * Rows per batched forward pass: up to TFM_INFER_BATCH (args.h), and no
 * more than TFM_INFER_TOKENS tokens (padded), so that a layer's activations
 * stay in the CPU's caches between the products that write and read them,
 * and its products have fewer than 128 rows, which BLIS runs with its
 * small-matrix kernels (blas.c, SUP_BELOW).  Measured (one thread, 2,000
 * texts of 27-80 tokens, CPU time of the backend): at 512 tokens a pass,
 * d_model 128 took 5-10 % more than one text at a time and d_model 384
 * (4 layers) 3 % less; at 127 tokens 0-3 % and 6-8 % less.
 */
#ifndef TFM_INFER_TOKENS
#define TFM_INFER_TOKENS 127
#endif

tfm_model *
tfm_get_classifier(const char *name, const TfmModelRow **rowp)
{
	return tfm_model_for(name, TFM_TASK_CLASSIFY, false, rowp);
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
 * n inputs (types: their token types, or NULL) through batched passes:
 * out (n × labels) their probabilities, or their logits where raw
 */
static void
run_passes(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types, const int *lens,
		   int n, float *probs, bool raw, float *pooled, bool one_by_one)
{
	int			C = row->n_labels,
				d = m->cfg.d_model;
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	TfmSpecials sp;

	tfm_model_specials(row, &sp);
	/* similar lengths together: little padding */
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), cmp_by_len, (void *) lens);
	for (int start = 0, B = 0; start < n; start += B)
	{
		int			T = Max(1, lens[order[start]]);	/* the longest of the batch */
		int32	   *buf,
				   *tbuf = NULL;
		tfm_batch	b;

		CHECK_FOR_INTERRUPTS();
		B = Min(Min(TFM_INFER_BATCH, Max(1, TFM_INFER_TOKENS / T)), n - start);
		/*
		 * one by one: each result bit for bit the single call's.  A pass of
		 * several inputs has products of more rows, which BLIS may add in
		 * another order (seen: 199 of 600 embeddings of a d_model 128
		 * encoder off in the last bits); batching saved 0-8 % of the CPU.
		 */
		if (one_by_one)
			B = 1;
		/* fewer rows where the batch would not fit in tfm.work_mem */
		while (B > 1 && !tfm_work_mem_fits(m, tfm_pass_bytes(m, B, T, 0, false, false)))
			B /= 2;
		tfm_work_mem_check(m, tfm_pass_bytes(m, B, T, 0, false, false), "running", row->name,
						   "the length of the input");
		buf = palloc(sizeof(int32) * B * T);
		if (types)
			tbuf = palloc0(sizeof(int32) * B * T);	/* padding: type 0 */
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

			memcpy(buf + (size_t) i * T, ids[k], sizeof(int32) * lens[k]);
			for (int t = lens[k]; t < T; t++)
				buf[(size_t) i * T + t] = sp.pad;
			if (types)
				memcpy(tbuf + (size_t) i * T, types[k], sizeof(int32) * lens[k]);
		}
		memset(&b, 0, sizeof(b));
		b.B = B;
		b.T = T;
		b.input = buf;
		b.types = tbuf;
		tfm_check_pass(tfm_model_forward(m, &b, false, 0), row->name);
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

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
	}
	pfree(order);
}

void
tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens, int n,
				   float *probs, float *pooled)
{
	run_passes(m, row, ids, NULL, lens, n, probs, false, pooled, false);
}

void
tfm_classifier_run_pairs(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
						 const int *lens, int n, float *logits)
{
	run_passes(m, row, ids, types, lens, n, logits, true, NULL, false);
}

void
tfm_classifier_run_exact(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens,
						 int n, float *probs, float *pooled)
{
	run_passes(m, row, ids, NULL, lens, n, probs, false, pooled, true);
}
