/*
 * precision_sql.c — which precision inference runs at: the setting
 * tfm.precision (auto, fp32, bf16, int8), a model's own default
 * (tfm_set_precision, kept in its config as "precision"), and what this CPU
 * runs fast.
 *
 *   auto   bf16 where the CPU has AVX512_BF16 (vdpbf16ps), else fp32;
 *          a model's own default, if it has one, wins over auto
 *   fp32   today's results, bit for bit
 *   bf16   bf16 matrices and activations in the products, fp32 sums
 *   int8   int8 matrices (per-column scales), activations quantized per
 *          row as they come, int32 sums; fast with AVX512_VNNI
 *
 * A model's matrices are packed once, when a statement first uses it at a
 * precision, and kept with the cached model.  Training always runs fp32.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "tfm_pg.h"

int			tfm_precision_setting = -1;

int
tfm_precision_from_name(const char *name, const char *model)
{
	if (strcmp(name, "fp32") == 0)
		return TFM_PREC_FP32;
	if (strcmp(name, "bf16") == 0)
		return TFM_PREC_BF16;
	if (strcmp(name, "int8") == 0)
		return TFM_PREC_INT8;
	if (model)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" has an unknown precision \"%s\" in its config", model, name)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown precision \"%s\"", name),
			 errhint("Valid precisions are auto, fp32, bf16 and int8.")));
	return TFM_PREC_FP32;
}

/* what auto means on this CPU, and why */
static tfm_precision
auto_precision(const char **why)
{
	if (strcmp(tfm_lowp_bf16_kernel(), "fallback") != 0)
	{
		*why = "auto: bf16, this CPU has AVX512_BF16";
		return TFM_PREC_BF16;
	}
	*why = "auto: fp32, this CPU has no AVX512_BF16 (or the fallback is forced)";
	return TFM_PREC_FP32;
}

static tfm_precision
effective(const TfmModelRow *row, const char **why)
{
	if (tfm_precision_setting >= 0)
	{
		*why = "set by tfm.precision";
		return (tfm_precision) tfm_precision_setting;
	}
	if (row && row->precision >= 0)
	{
		*why = "the model's own default (tfm_set_precision)";
		return (tfm_precision) row->precision;
	}
	return auto_precision(why);
}

/*
 * Pack m for p; a cancel or statement_timeout stops the packing (the model
 * stays at fp32) and is raised here.  0, or -1 without the memory.
 */
int
tfm_pack_model(tfm_model *m, tfm_precision p)
{
	for (;;)
	{
		int			rc = tfm_model_set_precision_polled(m, p, tfm_interrupt_pending, NULL);

		if (rc != -2)
			return rc;
		CHECK_FOR_INTERRUPTS();
	}
}

void
tfm_apply_precision(tfm_model *m, const TfmModelRow *row)
{
	const char *why;
	tfm_precision p = effective(row, &why);

	if (tfm_model_precision(m) == p)
		return;
	if (tfm_shared_precision(m, row, p))
		return;
	if (tfm_pack_model(m, p) != 0)
		ereport(WARNING,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory packing model \"%s\" for %s: it runs at fp32",
						row->name, tfm_precision_name(p))));
}

PG_FUNCTION_INFO_V1(tfm_set_precision);
Datum
tfm_set_precision(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	char	   *prec = tfm_text_arg(fcinfo, 1, "setting");
	TfmModelRow row;
	TfmAsOwner	as;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2];

	if (strcmp(prec, "auto") != 0)
		(void) tfm_precision_from_name(prec, NULL);
	tfm_check_writable("set the precision of", name);
	tfm_catalog_lookup(name, &row, false);
	tfm_check_model_privilege(&row, TFM_PRIV_TRAIN);
	args[0] = Int32GetDatum(row.id);
	args[1] = CStringGetTextDatum(prec);
	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args(strcmp(prec, "auto") == 0 ?
							  "UPDATE tfm.models SET config = config - 'precision', updated_at = now() WHERE id = $1" :
							  "UPDATE tfm.models SET config = config || jsonb_build_object('precision', $2), "
							  "updated_at = now() WHERE id = $1",
							  strcmp(prec, "auto") == 0 ? 1 : 2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "cannot update tfm.models");
	tfm_spi_finish_owner(&as);
	PG_RETURN_VOID();
}

/* for tfm_info(): the precision auto picks here, the kernels and why */
void
tfm_precision_info(Datum *values)
{
	const char *why;
	tfm_precision p = effective(NULL, &why);

	values[0] = CStringGetTextDatum(tfm_precision_name(p));
	values[1] = CStringGetTextDatum(why);
	values[2] = CStringGetTextDatum(tfm_lowp_bf16_kernel());
	values[3] = CStringGetTextDatum(tfm_lowp_int8_kernel());
	values[4] = CStringGetTextDatum(tfm_lowp_reason());
}
