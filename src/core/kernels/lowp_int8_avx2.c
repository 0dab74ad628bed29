/*
 * lowp_int8_avx2.c — the int8 kernel for AVX2 (no AVX-512): the integer
 * sums of lowp_int8_ref.c by vpmaddubsw + vpmaddwd, as llama.cpp does.
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into a
 * saturating int16, so the offset activations (a + 128, up to 255) cannot
 * go in as they are: the activation byte becomes signed again (q = a − 128,
 * in [−127, 127] like the weights), and vpmaddubsw takes |q| and the weight
 * with q's sign (vpsignb); each pair sum is at most 2 · 127² < 2¹⁵, exact.
 * vpmaddwd against ones adds the two pairs of a column's 32-bit slot into
 * its int32 lane.  The sum is Σ q·w, which is what the reference's
 * Σ (q + 128)·w − 128·colsum is, exactly; the scaling is the reference's,
 * operation for operation, so both paths give the same bits.
 *
 * Blocks: R rows × 8V columns (one ymm per 8 columns), over all of K
 * (no K blocking: the int32 sums run over K before they are scaled).  The
 * GEMM's 12 × 32 panel goes as 3 × 2 blocks of 4 rows × 16 columns (8
 * accumulators and two weight vectors in the 16 ymm registers); the
 * matrix-vector path (heights 1-4) as 1-2 rows × 32 columns or 3-4 rows ×
 * 16 columns twice.
 *
 * Compiled for AVX2 + FMA by function attribute only; lowp_dispatch.c calls
 * into it only on CPUs with both.
 */
#include <immintrin.h>

#include "lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* row[0..n) for 8 columns from j: the reference's scaling of the sums */
TARGET INLINE void
store8(float *row, __m256i acc, const float *cscale, float sr,
	   float beta, int n)
{
	if (n >= 8)
	{
		__m256		v = _mm256_cvtepi32_ps(acc),
					s = _mm256_mul_ps(_mm256_set1_ps(sr), _mm256_loadu_ps(cscale));

		if (beta == 0.0f)
			_mm256_storeu_ps(row, _mm256_mul_ps(v, s));
		else
			_mm256_storeu_ps(row, _mm256_fmadd_ps(v, s, _mm256_mul_ps(_mm256_set1_ps(beta),
																	_mm256_loadu_ps(row))));
	}
	else
	{
		int32_t		sums[8];

		_mm256_storeu_si256((__m256i *) sums, acc);
		for (int j = 0; j < n; j++)
		{
			float		v = (float) sums[j],
						s = sr * cscale[j];

			row[j] = beta == 0.0f ? v * s : __builtin_fmaf(v, s, beta * row[j]);
		}
	}
}

/*
 * rows [r0, r0 + R) of the panel (height h), columns [8·v0, 8·(v0 + V)) of
 * the weight panel; rows past m and columns past n are computed, not stored
 */
TARGET INLINE void
block(const int R, const int V, int r0, int v0, int kq, const uint32_t *a, int h,
	  const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha,
	  const float *rscale, const float *cscale, float beta)
{
	__m256i		acc[4][4];		/* R, V ≤ 4: constant indices only */
	const __m256i ones = _mm256_set1_epi16(1),
				bias = _mm256_set1_epi8((char) 0x80);

	for (int r = 0; r < R; r++)
		for (int v = 0; v < V; v++)
			acc[r][v] = _mm256_setzero_si256();
	for (int p = 0; p < kq; p++)
	{
		const __m256i *bp = (const __m256i *) (b + (size_t) p * LOWP_NR + 8 * v0);
		const uint32_t *ap = a + (size_t) p * h + r0;
		__m256i		w[4];

		for (int v = 0; v < V; v++)
			w[v] = _mm256_loadu_si256(bp + v);
		for (int r = 0; r < R; r++)
		{
			__m256i		q = _mm256_xor_si256(_mm256_set1_epi32((int) ap[r]), bias),
						aq = _mm256_abs_epi8(q);

			for (int v = 0; v < V; v++)
			{
				__m256i		d = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(w[v], q));

				acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(d, ones));
			}
		}
	}
	for (int r = 0; r < R; r++)
		if (r0 + r < m)
		{
			float	   *row = c + (size_t) (r0 + r) * ldc;
			float		sr = alpha * rscale[r0 + r];

			for (int v = 0; v < V; v++)
			{
				int			j = 8 * (v0 + v);

				if (j < n)
					store8(row + j, acc[r][v], cscale + j, sr, beta, n - j);
			}
		}
}

TARGET void
lowp_int8_avx2_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
					  float *c, ptrdiff_t ldc, int m, int n, float alpha,
					  const float *rscale, const float *cscale,
					  const int32_t *colsum, float beta)
{
	/* the sums are Σ q·w already: no column sums to take out */
	switch (h)
	{
		case LOWP_MR:
			for (int r0 = 0; r0 < LOWP_MR && r0 < m; r0 += 4)
				for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
					block(4, 2, r0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale,
						  beta);
			break;
		case 1:
			block(1, 4, 0, 0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
			break;
		case 2:
			block(2, 4, 0, 0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
			break;
		case 3:
			for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
				block(3, 2, 0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
			break;
		case 4:
			for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
				block(4, 2, 0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
			break;
		default:
			/* not reached: the drivers use heights 1-4 and LOWP_MR */
			lowp_int8_ref_kernel(kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta);
	}
}
