/*
 * classify.c — inference with classifiers: tfm_classify (the most likely
 * label; a text[] form runs many rows through batched forward passes),
 * tfm_predict_proba (every label's probability), tfm_embed (the pooled
 * representation), and tfm_classify(text), which asks the model deployed
 * as 'default' (deploy.c).  Models come from the per-backend cache: loaded
 * once per backend and version.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "sql/args.h"
#include "runtime/rows.h"
#include "sql/classify.h"

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
	return tfm_classifier_input(row, &sp, ids, *n, n, true, NULL);
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

static void
run_passes(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens, int n,
		   float *probs, float *pooled, bool unpadded)
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
		int32	   *buf;
		tfm_batch	b;

		CHECK_FOR_INTERRUPTS();
		B = Min(Min(TFM_INFER_BATCH, Max(1, TFM_INFER_TOKENS / T)), n - start);
		/* unpadded: only inputs of the pass's length */
		if (unpadded)
			for (int i = 1; i < B; i++)
				if (lens[order[start + i]] != lens[order[start]])
				{
					B = i;
					break;
				}
		/* fewer rows where the batch would not fit in tfm.work_mem */
		while (B > 1 && !tfm_work_mem_fits(m, tfm_pass_bytes(m, B, T, 0, false, false)))
			B /= 2;
		tfm_work_mem_check(m, tfm_pass_bytes(m, B, T, 0, false, false), "running", row->name,
						   "the length of the input");
		buf = palloc(sizeof(int32) * B * T);
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

			memcpy(buf + (size_t) i * T, ids[k], sizeof(int32) * lens[k]);
			for (int t = lens[k]; t < T; t++)
				buf[(size_t) i * T + t] = sp.pad;
		}
		memset(&b, 0, sizeof(b));
		b.B = B;
		b.T = T;
		b.input = buf;
		tfm_check_pass(tfm_model_forward(m, &b, false, 0), row->name);
		for (int i = 0; i < B; i++)
		{
			int			k = order[start + i];

			if (probs)
			{
				memcpy(probs + (size_t) k * C, m->logits + (size_t) i * C, sizeof(float) * C);
				tfm_softmax_rows(probs + (size_t) k * C, 1, C);
			}
			if (pooled)
				memcpy(pooled + (size_t) k * d, m->pooled + (size_t) i * d, sizeof(float) * d);
		}
		pfree(buf);
	}
	pfree(order);
}

void
tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens, int n,
				   float *probs, float *pooled)
{
	run_passes(m, row, ids, lens, n, probs, pooled, false);
}

void
tfm_classifier_run_unpadded(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens,
							int n, float *probs, float *pooled)
{
	run_passes(m, row, ids, lens, n, probs, pooled, true);
}

static int
argmax(const float *p, int n)
{
	int			best = 0;

	for (int k = 1; k < n; k++)
		if (p[k] > p[best])
			best = k;
	return best;
}

/* one input (argument 1) through the model named by argument 0 */
static float *
one(FunctionCallInfo fcinfo, const char *name, int arg, const TfmModelRow **rowp,
	float **pooled)
{
	tfm_model  *m;
	int32	   *ids;
	int			n;
	float	   *p;

	TFM_ARG_NOT_NULL(arg, "input");
	m = tfm_get_classifier(name, rowp);
	ids = tfm_classifier_ids(*rowp, PG_GETARG_DATUM(arg),
							 get_fn_expr_argtype(fcinfo->flinfo, arg), &n);
	p = palloc(sizeof(float) * (*rowp)->n_labels);
	if (pooled)
		*pooled = palloc(sizeof(float) * m->cfg.d_model);
	tfm_classifier_run(m, *rowp, &ids, &n, 1, p, pooled ? *pooled : NULL);
	return p;
}

PG_FUNCTION_INFO_V1(tfm_classify);
Datum
tfm_classify(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	float	   *p = one(fcinfo, tfm_text_arg(fcinfo, 0, "model"), 1, &row, NULL);

	PG_RETURN_TEXT_P(cstring_to_text(row->labels[argmax(p, row->n_labels)]));
}

PG_FUNCTION_INFO_V1(tfm_classify_deployed);
Datum
tfm_classify_deployed(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	float	   *p = one(fcinfo, tfm_default_alias(), 0, &row, NULL);

	PG_RETURN_TEXT_P(cstring_to_text(row->labels[argmax(p, row->n_labels)]));
}

/*
 * The texts of a text[] argument as classifier inputs; a NULL element runs
 * as a one-token placeholder (its result is NULL).  Returns the count.
 */
static int
batch_inputs(FunctionCallInfo fcinfo, const TfmModelRow *row, int arg,
			 int32 ***ids, int **lens, bool **nulls)
{
	Datum	   *elems;
	int			n = tfm_text_array_arg(fcinfo, arg, "inputs", true, &elems, nulls);

	*ids = palloc(sizeof(int32 *) * Max(n, 1));
	*lens = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if ((*nulls)[i])
		{
			(*ids)[i] = palloc0(sizeof(int32));
			(*lens)[i] = 1;
			continue;
		}
		(*ids)[i] = tfm_classifier_ids(row, elems[i], TEXTOID, &(*lens)[i]);
	}
	return n;
}

PG_FUNCTION_INFO_V1(tfm_classify_batch);
Datum
tfm_classify_batch(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m = tfm_get_classifier(name, &row);
	int32	  **ids;
	int		   *lens;
	bool	   *nulls;
	int			n = batch_inputs(fcinfo, row, 1, &ids, &lens, &nulls);
	float	   *p = palloc(sizeof(float) * row->n_labels * Max(n, 1));
	Datum	   *out = palloc(sizeof(Datum) * Max(n, 1));

	tfm_classifier_run(m, row, ids, lens, n, p, NULL);
	for (int i = 0; i < n; i++)
		out[i] = nulls[i] ? (Datum) 0 :
			CStringGetTextDatum(row->labels[argmax(p + (size_t) i * row->n_labels, row->n_labels)]);
	PG_RETURN_ARRAYTYPE_P(tfm_text_array(out, nulls, n));
}

/*
 * tfm_embed(model, text[]): one row (ord, embedding) per element, in order
 * (ord counts from 1; a NULL element gives a NULL embedding), through
 * batched forward passes of inputs of one length each (no padding, so
 * each embedding is exactly tfm_embed(model, text)'s).
 */
PG_FUNCTION_INFO_V1(tfm_embed_batch);
Datum
tfm_embed_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	int32	  **ids;
	int		   *lens;
	bool	   *nulls;
	int			n,
				d;
	float	   *pooled;
	Datum	   *vals;

	SetSingleFuncCall(fcinfo, 0);
	m = tfm_get_classifier(name, &row);
	n = batch_inputs(fcinfo, row, 1, &ids, &lens, &nulls);
	d = m->cfg.d_model;
	pooled = palloc(sizeof(float) * d * Max(n, 1));
	/* each embedding bit for bit tfm_embed(model, text)'s */
	tfm_classifier_run_unpadded(m, row, ids, lens, n, NULL, pooled);
	vals = palloc(sizeof(Datum) * d);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		isnull[2] = {false, nulls[i]};

		values[0] = Int32GetDatum(i + 1);
		values[1] = (Datum) 0;
		if (!nulls[i])
		{
			for (int k = 0; k < d; k++)
				vals[k] = Float4GetDatum(pooled[(size_t) i * d + k]);
			values[1] = PointerGetDatum(construct_array(vals, d, FLOAT4OID, 4, true, TYPALIGN_INT));
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tfm_predict_proba);
Datum
tfm_predict_proba(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const TfmModelRow *row;
	float	   *p;

	SetSingleFuncCall(fcinfo, 0);
	p = one(fcinfo, tfm_text_arg(fcinfo, 0, "model"), 1, &row, NULL);
	for (int k = 0; k < row->n_labels; k++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = CStringGetTextDatum(row->labels[k]);
		values[1] = Float8GetDatum((double) p[k]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(tfm_embed);
Datum
tfm_embed(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	float	   *pooled;
	int			d;
	Datum	   *out;

	(void) one(fcinfo, tfm_text_arg(fcinfo, 0, "model"), 1, &row, &pooled);
	d = row->cfg.d_model;
	out = palloc(sizeof(Datum) * d);
	for (int i = 0; i < d; i++)
		out[i] = Float4GetDatum(pooled[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(out, d, FLOAT4OID, 4, true, TYPALIGN_INT));
}
