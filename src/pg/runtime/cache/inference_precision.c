/*
 * inference_precision.c — which precision inference runs at: the setting
 * tfm.precision (auto, fp32, bf16, int8, int4, gguf), a model's own default
 * (tfm_set_precision in sql/models/set_precision.c, kept in its config as
 * "precision"), and the checkpoint's own precision (config
 * checkpoint_precision, recorded by the import: import/model_import.c).
 *
 *   auto   a model's own default if it has one; else an imported model,
 *          as long as it has not been trained since, at its checkpoint's
 *          own precision (float32 and float16 weights fp32, BF16 bf16,
 *          GGUF Q4_0 int4, Q8_0/Q4_K/Q5_K/Q6_K gguf: core/model/source_precision.c);
 *          else fp32.  Never the CPU's choice: a model answers its own
 *          numbers until a user picks a faster, lossy precision
 *   fp32   today's results, bit for bit
 *   bf16   bf16 matrices and activations in the products, fp32 sums
 *   int8   int8 matrices (per-column scales), activations quantized per
 *          row as they come, int32 sums; fast with AVX512_VNNI
 *   int4   GGUF Q4_0 blocks (32 weights, an fp16 scale); decoding's rows
 *          quantized per block of 32 (Q8_0-like), int32 sums per block;
 *          batched passes on fp32 tiles dequantized from them (BLIS)
 *   gguf   a GGUF file's Q8_0, Q4_K, Q5_K and Q6_K blocks as they are
 *          (tfm/kquant.h: llama.cpp's dot products, activations quantized
 *          to Q8_K / Q8_0 per row); matrices the file does not give in
 *          those types, and models imported otherwise, run fp32
 *
 * A model's matrices are packed once, when a statement first uses it at a
 * precision, and kept with the cached model.  Training always runs fp32.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "tfm/kquant.h"
#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "runtime/runtime.h"
#include "runtime/cache/inference_precision.h"
#include "runtime/cache/shared_weights.h"
#include "storage/models/models.h"

/*
 * What auto runs a model at (row NULL: no model), and why.  Imported weights
 * are the checkpoint's while the model's steps are 0: training (which runs
 * fp32 master weights) makes them tfm's own.
 */
static tfm_precision
auto_precision(const TfmModelRow *row, const char **why)
{
	if (row && row->checkpoint_precision >= 0 && row->steps == 0)
	{
		tfm_precision p = (tfm_precision) row->checkpoint_precision;

		*why = p == TFM_PREC_FP32 ? "auto: the checkpoint's own precision (float32 or float16 weights)" :
			p == TFM_PREC_BF16 ? "auto: the checkpoint's own precision (bf16 weights)" :
			p == TFM_PREC_GGUF ? "auto: the checkpoint's own precision (the GGUF file's Q8_0, Q4_K, Q5_K or Q6_K blocks, run as they are)" :
			p == TFM_PREC_INT4 ? "auto: the checkpoint's own precision (GGUF Q4_0 blocks)" :
			"auto: the checkpoint's own precision (int8)";
		return p;
	}
	if (row && row->checkpoint_precision >= 0)
		*why = "auto: fp32, the model was trained since its import";
	else if (row)
		*why = "auto: fp32, tfm's own model (or imported before 0.5)";
	else
		*why = "auto: each model at its checkpoint's own precision, tfm's own models at fp32 (tfm_model_precision says which)";
	return TFM_PREC_FP32;
}

tfm_precision
tfm_inference_precision(const TfmModelRow *row, const char **why)
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
	return auto_precision(row, why);
}

void
tfm_apply_precision(tfm_model *m, const TfmModelRow *row)
{
	const char *why;
	tfm_precision p = tfm_inference_precision(row, &why);

	if (tfm_model_precision(m) != p && !tfm_shared_precision(m, row, p))
	{
		if (tfm_pack_model(m, p) != 0 && m->absent)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("model \"%s\" cannot run at %s in this statement: it was loaded for gguf, "
							"without the float32 values of its GGUF blocks", row->name, tfm_precision_name(p)),
					 errhint("Run the statement again: the next one loads the model for %s.",
							 tfm_precision_name(p))));
		if (tfm_model_precision(m) != p)
			tfm_report(WARNING, TFM_ENOMEM,
					   psprintf("out of memory packing model \"%s\" for %s: it runs at fp32",
								row->name, tfm_precision_name(p)),
					   NULL, NULL);
	}
	/*
	 * fp32: a classifier's matrices packed once more for its varlen passes'
	 * products (the same bits; one more copy of the encoder's matrices,
	 * private to the session: doc/reference.md, Memory at fp32), where the
	 * copy fits in tfm.work_mem.  Otherwise, or without the memory, the
	 * products pack per call, as before.
	 */
	if (tfm_model_precision(m) == TFM_PREC_FP32)
		(void) tfm_model_pack_rows(m, tfm_work_mem_bytes());
}

/* for tfm_info(): the precision tfm.precision gives (auto: "auto", each
 * model its own), the kernels and why */
void
tfm_precision_info(Datum *values)
{
	const char *why;
	tfm_precision p = tfm_inference_precision(NULL, &why);

	values[0] = CStringGetTextDatum(tfm_precision_setting < 0 ? "auto" : tfm_precision_name(p));
	values[1] = CStringGetTextDatum(why);
	values[2] = CStringGetTextDatum(tfm_lowp_bf16_kernel());
	values[3] = CStringGetTextDatum(tfm_lowp_int8_kernel());
	/* and gguf's kernels (tfm/kquant.h), which follow TFM_LOWP_FORCE too */
	values[4] = CStringGetTextDatum(psprintf("%s; gguf blocks: %s", tfm_lowp_reason(), tfm_kq_path()));
}
