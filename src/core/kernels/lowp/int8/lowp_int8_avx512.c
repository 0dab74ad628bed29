/*
 * lowp_int8_avx512.c — the AVX512_VNNI kernel: vpdpbusd adds, per int32
 * lane, the four products of four unsigned activation bytes (a + 128,
 * broadcast, one 32-bit slot) and four signed weight bytes (one column,
 * k .. k+3).  The 128 offset is taken out at the end with the column sums;
 * the scaling is lowp_int8_ref.c's, operation for operation, so both paths
 * agree exactly.
 *
 * Blocking as in the bf16 kernel: 12 × 32 for the GEMM (24 accumulators,
 * block12 below), 1-4 rows with unrolled independent accumulators for the
 * matrix-vector path (the loop is lowp_avx512_sum.h's).  Also the
 * activations' quantization with AVX-512 (absmax, quantize).  No K blocking: the int32 sums must run over all of K before they
 * are scaled (the drivers keep a 32-column panel of K bytes in L2).
 */
#include <immintrin.h>

#include "../lowp_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define INLINE static inline __attribute__((always_inline))

#include "int8_scale_avx512.h"

TARGET INLINE __m512
scaled(__m512i acc, const int32_t *colsum, const float *cscale, float sr, __mmask16 mask,
	   const float *row, float beta)
{
	__m512i		cs = _mm512_maskz_loadu_epi32(mask, colsum);
	__m512		v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, _mm512_slli_epi32(cs, 7))),
				s = _mm512_mul_ps(_mm512_set1_ps(sr), _mm512_maskz_loadu_ps(mask, cscale));

	if (beta == 0.0f)
		return _mm512_mul_ps(v, s);
	return _mm512_fmadd_ps(v, s, _mm512_mul_ps(_mm512_set1_ps(beta),
											   _mm512_maskz_loadu_ps(mask, row)));
}

#define SUM_ACC __m512i
#define SUM_VEC __m512i
#define SUM_ZERO() _mm512_setzero_si512()
#define SUM_DOT(acc, x, b) _mm512_dpbusd_epi32(acc, x, b)
#define SUM_ADD(x, y) _mm512_add_epi32(x, y)
#include "../lowp_avx512_sum.h"

/* H rows (a compile-time constant after inlining), U accumulators (lowp_avx512_sum.h) */
TARGET INLINE void
block(const int H, const int U, int kq, const uint32_t *a, const uint32_t *b,
	  float *c, ptrdiff_t ldc, int m, int n, float alpha,
	  const float *rscale, const float *cscale, const int32_t *colsum, float beta)
{
	__m512i		acc[LOWP_MR][2];
	__mmask16	m0 = n >= 16 ? 0xFFFF : (__mmask16) ((1u << n) - 1),
				m1 = n >= 32 ? 0xFFFF : n > 16 ? (__mmask16) ((1u << (n - 16)) - 1) : 0;

	sum_panel(H, U, kq, a, b, acc);
	for (int r = 0; r < H; r++)
		if (r < m)
		{
			float	   *row = c + (size_t) r * ldc;
			float		sr = alpha * rscale[r];

			_mm512_mask_storeu_ps(row, m0, scaled(acc[r][0], colsum, cscale, sr, m0, row, beta));
			_mm512_mask_storeu_ps(row + 16, m1, scaled(acc[r][1], colsum + 16, cscale + 16, sr, m1,
													   row + 16, beta));
		}
}

/*
 * The GEMM's 12 × 32 block: the 24 accumulators as named variables (the
 * shared loop's arrays were kept on the stack by GCC 12 here: a store and
 * a load per vpdpbusd), then the int32 sums through a buffer to the
 * scaling (int8_scale_avx512.h).  Any order of the exact int32 sums gives the same bits.
 */
#define ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

TARGET static void
block12(int kq, const uint32_t *a, const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n,
		float alpha, const float *rscale, const float *cscale, const int32_t *colsum,
		float beta)
{
#define DECL(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512();
	ROWS12(DECL)
#undef DECL
	int32_t		s[LOWP_MR][LOWP_NR] __attribute__((aligned(64)));

	for (int p = 0; p < kq; p++, a += LOWP_MR, b += LOWP_NR)
	{
		__m512i		b0 = _mm512_loadu_si512(b),
					b1 = _mm512_loadu_si512(b + 16),
					x;

#define STEP(r) x = _mm512_set1_epi32((int) a[r]); \
		c##r##0 = _mm512_dpbusd_epi32(c##r##0, x, b0); \
		c##r##1 = _mm512_dpbusd_epi32(c##r##1, x, b1);
		ROWS12(STEP)
#undef STEP
	}
#define SAVE(r) _mm512_store_si512(s[r], c##r##0); _mm512_store_si512(s[r] + 16, c##r##1);
	ROWS12(SAVE)
#undef SAVE
	int8_scale_block(s[0], c, ldc, m, n, alpha, rscale, cscale, colsum, beta, NULL);
}

/*
 * A row of activations as pack_panel (lowp_int8_gemm.c) quantizes it,
 * operation for operation.  absmax: max|x[k]| over k < K (exact in any
 * order; NaNs skipped, as the comparison there skips them).  quantize:
 * q[k] = rint(x[k] / r) clamped to ±127, plus 128, for k < K, and 128 for
 * K ≤ k < n (r > 0).
 */
TARGET float
lowp_int8_avx512_absmax(const float *x, int K)
{
	__m512		mx = _mm512_setzero_ps();
	int			k;

	for (k = 0; k + 16 <= K; k += 16)
		mx = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + k)), mx);
	if (k < K)
		mx = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps((__mmask16) ((1u << (K - k)) - 1),
															   x + k)), mx);
	return _mm512_reduce_max_ps(mx);
}

TARGET void
lowp_int8_avx512_quantize(uint8_t *q, const float *x, int K, int n, float r)
{
	const __m512 vs = _mm512_set1_ps(r),
				hi = _mm512_set1_ps(127.0f),
				lo = _mm512_set1_ps(-127.0f);
	const __m512i off = _mm512_set1_epi32(128);

	for (int k = 0; k < n; k += 16)
	{
		__mmask16	mk = K - k >= 16 ? 0xFFFF : K > k ? (__mmask16) ((1u << (K - k)) - 1) : 0;
		__m512		v = _mm512_div_ps(_mm512_maskz_loadu_ps(mk, x + k), vs);

		/* max(lo, v), min(hi, v): a NaN stays (the second operand), as there */
		v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
		_mm512_mask_cvtepi32_storeu_epi8(q + k, n - k >= 16 ? 0xFFFF :
										 (__mmask16) ((1u << (n - k)) - 1),
										 _mm512_add_epi32(_mm512_cvttps_epi32(v), off));
	}
}

TARGET void
lowp_int8_avx512_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
						float *c, ptrdiff_t ldc, int m, int n, float alpha,
						const float *rscale, const float *cscale,
						const int32_t *colsum, float beta)
{
#define HEIGHT(H, U) case H: \
	block(H, U, kq, a, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta); break;
	if (h == LOWP_MR)
	{
		block12(kq, a, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta);
		return;
	}
	switch (h)
	{
		LOWP_AVX512_HEIGHTS(HEIGHT)
		default:
			lowp_int8_ref_kernel(kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta);
	}
#undef HEIGHT
}
