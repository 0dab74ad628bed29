/*
 * classify.c — inference with classifiers: tfm_classify (the most likely
 * label) and tfm_predict_proba (every label's probability), over text
 * (through the model's tokenizer) or token ids.  The model comes from the
 * per-backend cache: loaded once per backend and version.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "tfm_pg.h"
#include "tfm_rows.h"

/* the model's probabilities for one input (palloc'd, n_labels of them) */
static float *
probabilities(FunctionCallInfo fcinfo, const TfmModelRow **rowp)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	TfmSpecials sp;
	int32	   *ids;
	int			n;
	tfm_batch	b;
	float	   *p;

	TFM_ARG_NOT_NULL(1, "input");
	tfm_backend_ready();
	m = tfm_cache_get(name, &row);
	if (row->cfg.task != TFM_TASK_CLASSIFY)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model, not a classifier", name, row->task)));
	tfm_model_specials(row, &sp);
	ids = tfm_datum_ids(PG_GETARG_DATUM(1), get_fn_expr_argtype(fcinfo->flinfo, 1), row, false, &n);
	if (n == 0 && tfm_column_is_text(get_fn_expr_argtype(fcinfo->flinfo, 1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot classify an empty text")));
	ids = tfm_classifier_input(row, &sp, ids, n, &n, true, NULL);
	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.T = n;
	b.input = ids;
	if (tfm_model_forward(m, &b, false, 0) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory running model \"%s\"", name)));
	p = palloc(sizeof(float) * row->n_labels);
	memcpy(p, m->logits, sizeof(float) * row->n_labels);
	tfm_softmax_rows(p, 1, row->n_labels);
	*rowp = row;
	return p;
}

PG_FUNCTION_INFO_V1(tfm_classify);
Datum
tfm_classify(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	float	   *p = probabilities(fcinfo, &row);
	int			best = 0;

	for (int k = 1; k < row->n_labels; k++)
		if (p[k] > p[best])
			best = k;
	PG_RETURN_TEXT_P(cstring_to_text(row->labels[best]));
}

PG_FUNCTION_INFO_V1(tfm_predict_proba);
Datum
tfm_predict_proba(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const TfmModelRow *row;
	float	   *p;

	SetSingleFuncCall(fcinfo, 0);
	p = probabilities(fcinfo, &row);
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
