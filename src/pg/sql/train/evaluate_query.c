/*
 * evaluate_query.c — tfm_evaluate(model, query): a model's quality on a query's
 * rows (measured by runtime/train/evaluate.c), one row of results.
 */
#include "postgres.h"

#include "funcapi.h"

#include "sql/args.h"
#include "runtime/train/evaluate.h"
#include "runtime/runtime.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

PG_FUNCTION_INFO_V1(tfm_evaluate);
Datum
tfm_evaluate(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *query = tfm_text_arg(fcinfo, 1, "query");
	const TfmModelRow *crow;
	TfmModelRow *row = palloc(sizeof(TfmModelRow));
	tfm_model  *m;
	TupleDesc	tupdesc;
	Datum		v[N_OUT];
	bool		nulls[N_OUT];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tfm_backend_ready();
	m = tfm_cache_get(name, &crow);
	*row = *crow;
	for (int i = 0; i < N_OUT; i++)
	{
		v[i] = (Datum) 0;
		nulls[i] = true;
	}
	tfm_evaluate_model(m, row, name, query, v, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), v, nulls)));
}
