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
 * The packing of A's rows into panels (lowp_bf16_avx512_pack): lowp_bf16_gemm.c's
 * pack_panel in vectors, the same bits.
 *
 * Compiled for AVX-512 by function attribute only; lowp_dispatch_x86.c calls
 * into it only on CPUs with AVX512_BF16.
 */
#include <immintrin.h>

#include "../lowp_internal.h"
#include "../../transpose16.h"
#include "bf16_round_avx512.h"

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

/*
 * Rows [r0, r0 + h) of A (rows rsa apart, k contiguous) into one panel as
 * lowp_bf16_gemm.c's pack_panel lays it out, bit for bit: pair p's h slots
 * at dst + p·h, zeros past M and past K.  16 rows × 16 pairs at a time:
 * each row's 32 values rounded (bf16_round16, tfm_bf16_from_float's
 * operations) and narrowed to one vector of 16 pairs, the 16 vectors
 * transposed in registers, one masked store of the panel's rows per pair
 * (pack_panel stores each slot on its own: a 14th of the bf16 encoder's
 * time, issue 41).
 */
TARGET void
lowp_bf16_avx512_pack(uint32_t *dst, int h, const float *A, ptrdiff_t rsa, int M, int K, int r0)
{
	int			pairs = (K + 1) / 2;

	for (int g = 0; g < h; g += 16)
	{
		int			gh = h - g < 16 ? h - g : 16,
					live = M - (r0 + g);
		__mmask16	hm = (__mmask16) ((1u << gh) - 1u);

		live = live < 0 ? 0 : live < gh ? live : gh;
		for (int p0 = 0; p0 < pairs; p0 += 16)
		{
			int			nk = K - 2 * p0,
						np = pairs - p0 < 16 ? pairs - p0 : 16;
			__mmask16	m0 = nk >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << nk) - 1u),
						m1 = nk >= 32 ? (__mmask16) 0xFFFF : nk <= 16 ? 0 : (__mmask16) ((1u << (nk - 16)) - 1u);
			__m512i		v[16];

			for (int r = 0; r < 16; r++)
			{
				const float *x = A + (size_t) (r0 + g + r) * rsa + 2 * p0;

				if (r >= live)
				{
					v[r] = _mm512_setzero_si512();
					continue;
				}
				v[r] = _mm512_inserti64x4(
					_mm512_castsi256_si512(_mm512_cvtepi32_epi16(bf16_round16(_mm512_maskz_loadu_ps(m0, x)))),
					_mm512_cvtepi32_epi16(bf16_round16(_mm512_maskz_loadu_ps(m1, x + 16))), 1);
			}
			transpose16(v);
			for (int q = 0; q < np; q++)
				_mm512_mask_storeu_epi32(dst + (size_t) (p0 + q) * h + g, hm, v[q]);
		}
	}
}
