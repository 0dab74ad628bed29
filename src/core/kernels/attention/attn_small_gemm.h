/*
 * attn_small_gemm.h — the frame of attention's small products O = alpha·A·B
 * (+O), shared by the AVX-512 (attention_kernels_avx512.c) and the AVX2 + FMA
 * (attention_kernels_avx2.c) blocks; each file gives its vector type and
 * intrinsics, its step over k and its store of a finished vector.
 *
 * rows 0 .. m-1 (m ≤ RU) of O, W vectors of columns: RU·W accumulators;
 * A[i][k] at a[i·rsa + k·csa] is broadcast from where it lies (rows past m
 * repeat the last one and are not stored), each row of B loaded once per
 * group of rows (STEP(RU, W, the value of A in i)).  Each output is a chain
 * of FMAs over k in order, then alpha·sum rounded (NO_CONTRACT) and stored
 * by STORE(dst, w, W, v) (add: O += that).  The function's last parameters,
 * after b and ldb, are the file's own (the lanes of the last vector).
 */
#ifndef TFM_ATTN_SMALL_GEMM_H
#define TFM_ATTN_SMALL_GEMM_H

#define ATTN_SMALL_GEMM(NAME, RU, W, LANES, VEC, SETZERO, SET1, MUL, STEP, STORE, ...) \
TARGET static void \
NAME(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int m, int nk, \
	 const float *b, ptrdiff_t ldb, __VA_ARGS__, float alpha, bool add) \
{ \
	VEC			acc[RU][W]; \
	const float *ar[RU]; \
	const VEC	va = SET1(alpha); \
	ptrdiff_t	ak = 0; \
\
	_Pragma("GCC unroll 16") \
	for (int i = 0; i < RU; i++) \
	{ \
		ar[i] = a + (ptrdiff_t) (i < m ? i : m - 1) * rsa; \
		for (int w = 0; w < W; w++) \
			acc[i][w] = SETZERO(); \
	} \
	if (rsa == 1 && m == RU) \
		/* A transposed: a step's RU values side by side, one pointer */ \
		for (int k = 0; k < nk; k++) \
			STEP(RU, W, a[(ptrdiff_t) k * csa + i]); \
	else \
		for (int k = 0; k < nk; k++, ak += csa) \
			STEP(RU, W, ar[i][ak]); \
	_Pragma("GCC unroll 16") \
	for (int i = 0; i < RU; i++) \
	{ \
		if (i >= m) \
			break; \
		for (int w = 0; w < W; w++) \
		{ \
			float	   *dst = o + (ptrdiff_t) i * ldo + (LANES) * w; \
			VEC			v = MUL(va, acc[i][w]); \
\
			NO_CONTRACT(v); \
			STORE(dst, w, W, v); \
		} \
	} \
}

#endif
