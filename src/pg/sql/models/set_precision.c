/*
 * set_precision.c — tfm_set_precision(model, setting): a model's own default
 * precision for inference (auto, fp32, bf16, int8, int4, gguf), kept in its config as
 * "precision" (see runtime/cache/inference_precision.c for how it is chosen);
 * tfm_model_precision(model): the precision the model's inference runs at
 * now, and why (the setting, its own default, or auto's choice).
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "sql/args.h"
#include "runtime/cache/inference_precision.h"
#include "storage/models/models.h"
#include "tfm/precision.h"

PG_FUNCTION_INFO_V1(tfm_set_precision);
Datum
tfm_set_precision(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *prec = tfm_text_arg(fcinfo, 1, "setting");
	TfmModelRow row;

	if (strcmp(prec, "auto") != 0)
		(void) tfm_precision_from_name(prec, NULL);
	tfm_check_writable("set the precision of", name);
	tfm_catalog_lookup(name, &row, false);
	tfm_check_model_privilege(&row, TFM_PRIV_TRAIN);
	tfm_check_local("model", row.id, "set the precision of", row.name);
	tfm_catalog_set_precision(row.id, prec);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tfm_model_precision_info);
Datum
tfm_model_precision_info(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	TfmModelRow row;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	const char *why;
	tfm_precision p;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tfm_catalog_lookup(name, &row, false);
	tfm_check_model_privilege(&row, TFM_PRIV_USE);
	p = tfm_inference_precision(&row, &why);
	values[0] = CStringGetTextDatum(tfm_precision_name(p));
	values[1] = CStringGetTextDatum(why);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
