/*
 * lowp_bf16_avx512.c — the AVX512_BF16 kernel: vdpbf16ps adds, per fp32
 * lane, the two products of a pair of bf16 activations (broadcast, one
 * 32-bit slot) and a pair of bf16 weights (one column, k and k+1).
 *
 * GEMM (panel height LOWP_MR = 12): a 12 × 32 block of C in 24 zmm
 * accumulators; each step loads the weight panel's two vectors of 16
 * columns and broadcasts 12 activation slots, 24 vdpbf16ps.  The weight
 * slice (LOWP_KC pairs × 32 columns, 24 KB) stays in L1 across the row
 * panels of a cache block.
 *
 * Matrix-vector (height 1-4): each weight vector is loaded once and used by
 * every row; the steps are unrolled with independent accumulators (the
 * latency of vdpbf16ps would otherwise bound it), so the loop runs at the
 * speed the weights stream in.  The loop is lowp_avx512_sum.h's.
 *
 * Compiled for AVX-512 by function attribute only; lowp_dispatch_x86.c calls
 * into it only on CPUs with AVX512_BF16.
 */
#include <immintrin.h>

#include "../lowp_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define INLINE static inline __attribute__((always_inline))

/* C rows r < m, columns j < n: alpha · acc + beta · C */
TARGET INLINE void
store_tile_row(float *row, __m512 a0, __m512 a1, int n, float alpha, float beta)
{
	__m512		va = _mm512_set1_ps(alpha);

	a0 = _mm512_mul_ps(va, a0);
	a1 = _mm512_mul_ps(va, a1);
	if (n == LOWP_NR)
	{
		if (beta != 0.0f)
		{
			__m512		vb = _mm512_set1_ps(beta);

			a0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row), a0);
			a1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row + 16), a1);
		}
		_mm512_storeu_ps(row, a0);
		_mm512_storeu_ps(row + 16, a1);
	}
	else
	{
		__mmask16	m0 = n >= 16 ? 0xFFFF : (__mmask16) ((1u << n) - 1),
					m1 = n >= 32 ? 0xFFFF : n > 16 ? (__mmask16) ((1u << (n - 16)) - 1) : 0;

		if (beta != 0.0f)
		{
			__m512		vb = _mm512_set1_ps(beta);

			a0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), a0);
			a1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), a1);
		}
		_mm512_mask_storeu_ps(row, m0, a0);
		_mm512_mask_storeu_ps(row + 16, m1, a1);
	}
}

#define SUM_ACC __m512
#define SUM_VEC __m512bh
#define SUM_ZERO() _mm512_setzero_ps()
#define SUM_DOT(acc, x, b) _mm512_dpbf16_ps(acc, x, b)
#define SUM_ADD(x, y) _mm512_add_ps(x, y)
#include "../lowp_avx512_sum.h"

/* H rows (a compile-time constant after inlining), U accumulators (lowp_avx512_sum.h) */
TARGET INLINE void
block(const int H, const int U, int kk, const uint32_t *a, const uint32_t *b,
	  float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	__m512		acc[LOWP_MR][2];

	sum_panel(H, U, kk, a, b, acc);
	for (int r = 0; r < H; r++)
		if (r < m)
			store_tile_row(c + (size_t) r * ldc, acc[r][0], acc[r][1], n, alpha, beta);
}

TARGET void
lowp_bf16_avx512_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
						float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
#define HEIGHT(H, U) case H: block(H, U, kk, a, b, c, ldc, m, n, alpha, beta); break;
	switch (h)
	{
		LOWP_AVX512_HEIGHTS(HEIGHT)
		default:
			/* not reached: the drivers use heights 1-4 and LOWP_MR */
			lowp_bf16_ref_kernel(kk, a, h, b, c, ldc, m, n, alpha, beta);
	}
#undef HEIGHT
}
