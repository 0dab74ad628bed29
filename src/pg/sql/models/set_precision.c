/*
 * set_precision.c — tfm_set_precision(model, setting): a model's own default
 * precision for inference (auto, fp32, bf16, int8, int4), kept in its config as
 * "precision" (see runtime/cache/inference_precision.c for how it is chosen).
 */
#include "postgres.h"

#include "fmgr.h"

#include "sql/args.h"
#include "storage/models/models.h"

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
