/*
 * test_source_precision.c — a checkpoint's own precision
 * (src/core/model/source_precision.c): each ggml type's precision, the
 * matrices' majority, vectors not counted, ties to the more precise.
 */
#include "check.h"
#include "tfm/gguf_quants.h"
#include "tfm/precision.h"

static tfm_precision
of(const tfm_precision *p, const int *ndim, const uint64_t *n, int count)
{
	tfm_source_tally t = {{0}};

	for (int i = 0; i < count; i++)
		tfm_source_tally_add(&t, p[i], ndim[i], n[i]);
	return tfm_source_tally_result(&t);
}

int
main(void)
{
	CHECK(tfm_gguf_type_precision(TFM_GGML_F32) == TFM_PREC_FP32, "F32");
	CHECK(tfm_gguf_type_precision(TFM_GGML_F16) == TFM_PREC_FP32, "F16");
	CHECK(tfm_gguf_type_precision(TFM_GGML_BF16) == TFM_PREC_BF16, "BF16");
	CHECK(tfm_gguf_type_precision(TFM_GGML_Q8_0) == TFM_PREC_GGUF, "Q8_0");
	CHECK(tfm_gguf_type_precision(TFM_GGML_Q6_K) == TFM_PREC_GGUF, "Q6_K");
	CHECK(tfm_gguf_type_precision(TFM_GGML_Q5_K) == TFM_PREC_GGUF, "Q5_K");
	CHECK(tfm_gguf_type_precision(TFM_GGML_Q4_0) == TFM_PREC_INT4, "Q4_0");
	CHECK(tfm_gguf_type_precision(TFM_GGML_Q4_K) == TFM_PREC_GGUF, "Q4_K");
	{
		/* nothing counted: fp32 */
		tfm_source_tally t = {{0}};

		CHECK(tfm_source_tally_result(&t) == TFM_PREC_FP32, "empty");
	}
	{
		/* BF16 matrices, F32 norms (vectors, however many values): bf16 */
		tfm_precision p[] = {TFM_PREC_BF16, TFM_PREC_FP32, TFM_PREC_BF16};
		int			d[] = {2, 1, 2};
		uint64_t	n[] = {100, 100000, 100};

		CHECK(of(p, d, n, 3) == TFM_PREC_BF16, "bf16 matrices with f32 vectors");
	}
	{
		/* Q4_K_M: Q4_K and Q6_K, the file's blocks: gguf */
		tfm_precision p[] = {tfm_gguf_type_precision(TFM_GGML_Q4_K), tfm_gguf_type_precision(TFM_GGML_Q6_K),
		tfm_gguf_type_precision(TFM_GGML_Q4_K), TFM_PREC_FP32};
		int			d[] = {2, 2, 2, 1};
		uint64_t	n[] = {4096, 3000, 4096, 64};

		CHECK(of(p, d, n, 4) == TFM_PREC_GGUF, "Q4_K_M is gguf");
	}
	{
		/* a tie goes to the more precise */
		tfm_precision p[] = {TFM_PREC_INT4, TFM_PREC_INT8};
		int			d[] = {2, 3};
		uint64_t	n[] = {500, 500};

		CHECK(of(p, d, n, 2) == TFM_PREC_INT8, "tie int8/int4");
		p[1] = TFM_PREC_FP32;
		CHECK(of(p, d, n, 2) == TFM_PREC_FP32, "tie fp32/int4");
		p[0] = TFM_PREC_GGUF;
		p[1] = TFM_PREC_INT4;
		CHECK(of(p, d, n, 2) == TFM_PREC_INT4, "tie int4/gguf");
	}
	{
		/* a precision out of range is not counted */
		tfm_source_tally t = {{0}};

		tfm_source_tally_add(&t, (tfm_precision) 7, 2, 10);
		tfm_source_tally_add(&t, TFM_PREC_BF16, 2, 1);
		CHECK(tfm_source_tally_result(&t) == TFM_PREC_BF16, "out of range ignored");
	}
	return check_summary("test_source_precision");
}
