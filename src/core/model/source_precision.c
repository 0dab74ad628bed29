/*
 * source_precision.c — a checkpoint's own precision, which tfm.precision =
 * auto runs an imported model at: the tfm precision of the kind that holds
 * most of the values of its matrices (tensors of two or more dimensions;
 * norms and biases run fp32 at every precision).  Float32 and float16
 * weights run fp32 (exact), BF16 weights bf16 (exact for the weights);
 * GGUF blocks as they are where a tfm kernel runs them (Q8_0, Q4_K, Q5_K,
 * Q6_K: gguf, tfm/kquant.h; Q4_0 is tfm's int4: tfm_gguf_type_precision,
 * gguf_quants.c).  A tie goes to the kind listed first in tfm_precision.
 */
#include "tfm/precision.h"

void
tfm_source_tally_add(tfm_source_tally *t, tfm_precision p, int ndim, uint64_t n_values)
{
	if (ndim >= 2 && (unsigned) p <= TFM_PREC_GGUF)
		t->values[p] += n_values;
}

tfm_precision
tfm_source_tally_result(const tfm_source_tally *t)
{
	tfm_precision best = TFM_PREC_FP32;

	/* from the most precise down: a later kind wins only with more values */
	for (int p = TFM_PREC_BF16; p <= TFM_PREC_GGUF; p++)
		if (t->values[p] > t->values[best])
			best = (tfm_precision) p;
	return best;
}
