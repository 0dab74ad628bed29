/*
 * inference_precision.c — which precision inference runs at: the setting
 * tfm.precision (auto, fp32, bf16, int8, int4), a model's own default
 * (tfm_set_precision in sql/models/set_precision.c, kept in its config as
 * "precision"), and what this CPU runs fast.
 *
 *   auto   bf16 where the CPU has AVX512_BF16 (vdpbf16ps), else fp32;
 *          a model's own default, if it has one, wins over auto
 *   fp32   today's results, bit for bit
 *   bf16   bf16 matrices and activations in the products, fp32 sums
 *   int8   int8 matrices (per-column scales), activations quantized per
 *          row as they come, int32 sums; fast with AVX512_VNNI
 *   int4   GGUF Q4_0 blocks (32 weights, an fp16 scale); decoding's rows
 *          quantized per block of 32 (Q8_0-like), int32 sums per block;
 *          batched passes on fp32 tiles dequantized from them (BLIS)
 *
 * A model's matrices are packed once, when a statement first uses it at a
 * precision, and kept with the cached model.  Training always runs fp32.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "runtime/runtime.h"
#include "runtime/cache/inference_precision.h"
#include "runtime/cache/shared_weights.h"
#include "storage/models/models.h"

/* what auto means on this CPU, and why */
static tfm_precision
auto_precision(const char **why)
{
	if (tfm_lowp_bf16_native())
	{
		*why = "auto: bf16, this CPU has AVX512_BF16";
		return TFM_PREC_BF16;
	}
	*why = "auto: fp32, this CPU has no AVX512_BF16 (or a path without it is forced)";
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
		tfm_report(WARNING, TFM_ENOMEM,
				   psprintf("out of memory packing model \"%s\" for %s: it runs at fp32",
							row->name, tfm_precision_name(p)),
				   NULL, NULL);
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
