/*
 * attention_kernels_avx2.c — attention's products (attention_kernels.c) for
 * CPUs with AVX2 + FMA but no AVX-512, 8 lanes where those have 16, giving
 * the same bits as the AVX-512 blocks and BLIS's micro-kernel:
 *
 *   O = alpha·A·B (+O): each output a chain of FMAs over k in order, then
 *   alpha·sum (+O), as BLIS's micro-kernel and the AVX-512 block do.
 *   Blocks of 6 rows × 16 columns (12 accumulators) and 12 rows × 8 for a
 *   last 8 columns or fewer; A broadcast where it lies, B's rows loaded
 *   once per block; a partial vector loaded by vmaskmov (lanes past n
 *   never read) and stored through a copy (vmaskmov stores are microcoded
 *   on AMD's cores).
 *
 * No softmax row here: the portable row, compiled for AVX2 by its clone,
 * ran as fast as an 8-lane copy of the AVX-512 row (148 against 154 ns a
 * row of 256 on a Zen 4), and keeps bf16 passes that run fp32 products on
 * AVX2 (lowp_set.c) at fp32's bits.  Kᵀ and V are copied by plain loops
 * (copy_kt_plain in attention_kernels.c): that is T·s values a pair against T·T·s
 * products.  Compiled for AVX2 + FMA by function attribute only;
 * attention_kernels.c calls in only on CPUs with both.
 */
#include <immintrin.h>
#include <string.h>

#include "attention_kernels_avx2.h"
#include "../vecmath.h"
#include "attn_small_gemm.h"

#define TARGET __attribute__((target("avx2,fma")))

/* the lanes c0 .. c0+7 of a row that are < n, as vmaskmov's mask */
TARGET static inline __m256i
lanes8(int c0, int n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - c0), idx);
}

/* ---- small products: O = alpha · A·B (+ O) ---------------------------------- */

/*
 * rows 0 .. m-1 (m ≤ RU) of O, 8·W columns of which the last vector has
 * the lanes `last`: attention_kernels_avx512.c's SMALL_GEMM in 8 lanes.
 */
#define SMALL_GEMM8_STEP(RU, W, AV) \
	do { \
		__m256		bk[W]; \
\
		for (int w = 0; w < W - 1; w++) \
			bk[w] = _mm256_loadu_ps(b + (ptrdiff_t) k * ldb + 8 * w); \
		bk[W - 1] = nlast == 8 ? _mm256_loadu_ps(b + (ptrdiff_t) k * ldb + 8 * (W - 1)) : \
			_mm256_maskload_ps(b + (ptrdiff_t) k * ldb + 8 * (W - 1), last); \
		_Pragma("GCC unroll 16") \
		for (int i = 0; i < RU; i++) \
		{ \
			__m256		av = _mm256_set1_ps(AV); \
\
			for (int w = 0; w < W; w++) \
				acc[i][w] = _mm256_fmadd_ps(av, bk[w], acc[i][w]); \
		} \
	} while (0)

/* a finished vector w of row i: a partial last one stored through a copy */
#define SMALL_GEMM8_STORE(dst, w, W, v) \
	do { \
		if ((w) < (W) - 1 || nlast == 8) \
		{ \
			if (add) \
				v = _mm256_add_ps(v, _mm256_loadu_ps(dst)); \
			_mm256_storeu_ps(dst, v); \
		} \
		else \
		{ \
			float		t[8]; \
\
			if (add) \
				v = _mm256_add_ps(v, _mm256_maskload_ps(dst, last)); \
			_mm256_storeu_ps(t, v); \
			memcpy(dst, t, sizeof(float) * nlast); \
		} \
	} while (0)

#define SMALL_GEMM8(NAME, RU, W) \
	ATTN_SMALL_GEMM(NAME, RU, W, 8, __m256, _mm256_setzero_ps, _mm256_set1_ps, _mm256_mul_ps, \
					SMALL_GEMM8_STEP, SMALL_GEMM8_STORE, __m256i last, int nlast)

SMALL_GEMM8(gemm8_rows6_w2, 6, 2)
SMALL_GEMM8(gemm8_rows12_w1, 12, 1)

TARGET void
tfm_attn_gemm_avx2(float *o, ptrdiff_t ldo, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int m,
				   int k, const float *b, ptrdiff_t ldb, int n, float alpha, bool add)
{
	int			j = 0;

	for (; n - j > 8; j += 16)
	{
		int			nlast = n - j >= 16 ? 8 : n - j - 8;
		__m256i		last = lanes8(0, nlast);

		for (int r = 0; r < m; r += 6)
			gemm8_rows6_w2(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
						   m - r < 6 ? m - r : 6, k, b + j, ldb, last, nlast, alpha, add);
	}
	if (j < n)
	{
		__m256i		last = lanes8(0, n - j);

		for (int r = 0; r < m; r += 12)
			gemm8_rows12_w1(o + (ptrdiff_t) r * ldo + j, ldo, a + (ptrdiff_t) r * rsa, rsa, csa,
							m - r < 12 ? m - r : 12, k, b + j, ldb, last, n - j, alpha, add);
	}
}
