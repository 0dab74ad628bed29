/*
 * source_precision.c — a checkpoint's own precision, which tfm.precision =
 * auto runs an imported model at: the tfm precision of the kind that holds
 * most of the values of its matrices (tensors of two or more dimensions;
 * norms and biases run fp32 at every precision).  Float32 and float16
 * weights run fp32 (exact), BF16 weights bf16 (exact for the weights);
 * GGUF blocks at the tfm precision of their width: Q8_0, Q6_K and Q5_K
 * int8, Q4_0 and Q4_K int4.  A tie goes to the more precise kind.
 */
#include "tfm/precision.h"
#include "tfm/gguf.h"

void
tfm_source_tally_add(tfm_source_tally *t, tfm_precision p, int ndim, uint64_t n_values)
{
	if (ndim >= 2 && (unsigned) p < 4)
		t->values[p] += n_values;
}

tfm_precision
tfm_source_tally_result(const tfm_source_tally *t)
{
	tfm_precision best = TFM_PREC_FP32;

	/* from the most precise down: a later kind wins only with more values */
	for (int p = TFM_PREC_BF16; p <= TFM_PREC_INT4; p++)
		if (t->values[p] > t->values[best])
			best = (tfm_precision) p;
	return best;
}

tfm_precision
tfm_gguf_type_precision(uint32_t type)
{
	switch (type)
	{
		case TFM_GGML_BF16:
			return TFM_PREC_BF16;
		case TFM_GGML_Q8_0:
		case TFM_GGML_Q6_K:
		case TFM_GGML_Q5_K:
			return TFM_PREC_INT8;
		case TFM_GGML_Q4_0:
		case TFM_GGML_Q4_K:
			return TFM_PREC_INT4;
		default:				/* F32, F16 */
			return TFM_PREC_FP32;
	}
}
