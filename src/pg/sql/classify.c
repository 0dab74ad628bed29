/*
 * classify.c — inference with classifiers: tfm_classify (the most likely
 * label; a text[] form runs many rows through batched forward passes),
 * tfm_predict_proba (every label's probability), tfm_embed (the pooled
 * representation), and tfm_classify(text), which asks the model deployed
 * as 'default' (deploy.c).  Models come from the per-backend cache: loaded
 * once per backend and version; the batched passes are
 * runtime/classifier.c's.
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
#include "runtime/infer.h"

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
 * (ord counts from 1; a NULL element gives a NULL embedding), through the
 * same batched forward passes as tfm_classify(model, text[]).
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
	tfm_classifier_run(m, row, ids, lens, n, NULL, pooled);
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
