/*
 * classify.c — inference with classifiers: tfm_classify (the most likely
 * label; a text[] form runs many rows through batched forward passes),
 * tfm_predict_proba (every label's probability), tfm_embed (the pooled
 * representation), and tfm_classify(text), which asks the model deployed
 * as 'default' (deploy.c).  Models come from the per-backend cache: loaded
 * once per backend and version; the batched passes are
 * runtime/infer/classifier.c's.
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
#include "runtime/infer/infer.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

static int
argmax(const float *p, int n)
{
	int			best = 0;

	for (int k = 1; k < n; k++)
		if (p[k] > p[best])
			best = k;
	return best;
}

/* d floats as a float4[] */
static Datum
float4_array(const float *x, int d)
{
	Datum	   *vals = palloc(sizeof(Datum) * d);
	ArrayType  *a;

	for (int k = 0; k < d; k++)
		vals[k] = Float4GetDatum(x[k]);
	a = construct_array(vals, d, FLOAT4OID, 4, true, TYPALIGN_INT);
	pfree(vals);
	return PointerGetDatum(a);
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

/* a text[] through a classifier: per element, its probabilities or pooled vector */
typedef struct Batch
{
	const TfmModelRow *row;
	int			n;
	bool	   *nulls;
	int			width;			/* labels, or d_model (embed) */
	float	   *out;			/* n × width */
} Batch;

/*
 * The texts of argument 1 through the classifier named by argument 0 (a
 * set-returning embed gets its call first); a NULL element runs as a
 * one-token placeholder (its result is NULL).
 */
static void
run_batch(FunctionCallInfo fcinfo, bool embed, Batch *b)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	tfm_model  *m;
	Datum	   *elems;
	int32	  **ids;
	int		   *lens;
	MemoryContext tmp;

	if (embed)
		InitMaterializedSRF(fcinfo, 0);
	m = tfm_get_classifier(name, &b->row);
	b->n = tfm_text_array_arg(fcinfo, 1, "inputs", true, &elems, &b->nulls);
	ids = palloc(sizeof(int32 *) * Max(b->n, 1));
	lens = palloc(sizeof(int) * Max(b->n, 1));
	/* each text tokenized in a context of its own, its ids alone kept: 1e6 texts leave no scraps */
	tmp = AllocSetContextCreate(CurrentMemoryContext, "tfm text[] tokens", ALLOCSET_SMALL_SIZES);
	for (int i = 0; i < b->n; i++)
	{
		MemoryContext old;
		int32	   *t;

		CHECK_FOR_INTERRUPTS();
		if (b->nulls[i])
		{
			ids[i] = palloc0(sizeof(int32));
			lens[i] = 1;
			continue;
		}
		old = MemoryContextSwitchTo(tmp);
		t = tfm_classifier_ids(b->row, elems[i], TEXTOID, &lens[i]);
		MemoryContextSwitchTo(old);
		ids[i] = palloc(sizeof(int32) * lens[i]);
		memcpy(ids[i], t, sizeof(int32) * lens[i]);
		MemoryContextReset(tmp);
	}
	MemoryContextDelete(tmp);
	b->width = embed ? m->cfg.d_model : b->row->n_labels;
	b->out = palloc(sizeof(float) * b->width * Max(b->n, 1));
	/* each result bit for bit what the one-text call computes */
	if (embed)
		tfm_classifier_run(m, b->row, ids, lens, b->n, NULL, b->out);
	else
		tfm_classifier_run(m, b->row, ids, lens, b->n, b->out, NULL);
	/* the ids given back before the results are built (1e6 texts: tens of MB) */
	for (int i = 0; i < b->n; i++)
		pfree(ids[i]);
	pfree(ids);
	pfree(lens);
}

PG_FUNCTION_INFO_V1(tfm_classify_batch);
Datum
tfm_classify_batch(PG_FUNCTION_ARGS)
{
	Batch		b;
	Datum	   *labels;

	run_batch(fcinfo, false, &b);
	labels = palloc(sizeof(Datum) * Max(b.n, 1));
	for (int i = 0; i < b.n; i++)
		labels[i] = b.nulls[i] ? (Datum) 0 :
			CStringGetTextDatum(b.row->labels[argmax(b.out + (size_t) i * b.width, b.width)]);
	PG_RETURN_ARRAYTYPE_P(tfm_text_array(labels, b.nulls, b.n));
}

/*
 * tfm_embed(model, text[]): one row (ord, embedding) per element, in order
 * (ord counts from 1; a NULL element gives a NULL embedding), through
 * varlen forward passes (many texts' tokens a pass, nothing padded), each
 * embedding bit for bit tfm_embed(model, text)'s.
 */
PG_FUNCTION_INFO_V1(tfm_embed_batch);
Datum
tfm_embed_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Batch		b;

	run_batch(fcinfo, true, &b);
	for (int i = 0; i < b.n; i++)
	{
		Datum		values[2] = {Int32GetDatum(i + 1), (Datum) 0};
		bool		isnull[2] = {false, b.nulls[i]};

		if (!b.nulls[i])
			values[1] = float4_array(b.out + (size_t) i * b.width, b.width);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
		/* the tuplestore keeps its own copy (spilled past work_mem): one array at a time here */
		if (!b.nulls[i])
			pfree(DatumGetPointer(values[1]));
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

	InitMaterializedSRF(fcinfo, 0);
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

	(void) one(fcinfo, tfm_text_arg(fcinfo, 0, "model"), 1, &row, &pooled);
	PG_RETURN_DATUM(float4_array(pooled, row->cfg.d_model));
}
