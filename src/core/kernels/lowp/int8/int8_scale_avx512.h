/*
 * int8_scale_avx512.h — int8's last step with AVX-512, shared by the VNNI
 * GEMM block (lowp_int8_avx512.c) and AMX's (lowp_int8_amx.c) so that
 * both scale the same int32 sums operation for operation, as
 * lowp_int8_ref.c does: the 128 offset out with the column sums,
 * converted, times alpha · row scale · column scale, then plus the bias
 * or beta · C.
 *
 * Included by each after it defines TARGET and INLINE (its instruction
 * set, AVX-512F/BW/VL at least).
 */
#ifndef TFM_INT8_SCALE_AVX512_H
#define TFM_INT8_SCALE_AVX512_H

#include <immintrin.h>

/*
 * rows [0, m) of C's block of 32 columns (n ≤ 32 of them real) from the
 * sums s (row r at s + 32·r): bias (n floats, or NULL) as a beta 1 over C
 * set to it would add it (1 · bias is the bias), else beta · C
 */
TARGET INLINE void
int8_scale_block(const int32_t *s, float *c, ptrdiff_t ldc, int m, int n, float alpha,
				 const float *rscale, const float *cscale, const int32_t *colsum,
				 float beta, const float *bias)
{
	__mmask16	m0 = n >= 16 ? 0xFFFF : (__mmask16) ((1u << n) - 1),
				m1 = n >= 32 ? 0xFFFF : n > 16 ? (__mmask16) ((1u << (n - 16)) - 1) : 0;
	/* the columns' offsets 128·colsum and scales, once for the rows */
	__m512i		o0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m0, colsum), 7),
				o1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m1, colsum + 16), 7);
	__m512		s0 = _mm512_maskz_loadu_ps(m0, cscale),
				s1 = _mm512_maskz_loadu_ps(m1, cscale + 16);

	for (int r = 0; r < m; r++)
	{
		float	   *row = c + (size_t) r * ldc;
		const int32_t *sr32 = s + (size_t) r * 32;
		__m512		sr = _mm512_set1_ps(alpha * rscale[r]),
					v0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(sr32), o0)),
					v1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(sr32 + 16), o1)),
					t0 = _mm512_mul_ps(sr, s0),
					t1 = _mm512_mul_ps(sr, s1);

		if (bias)
		{
			v0 = _mm512_fmadd_ps(v0, t0, _mm512_maskz_loadu_ps(m0, bias));
			v1 = _mm512_fmadd_ps(v1, t1, _mm512_maskz_loadu_ps(m1, bias + 16));
		}
		else if (beta == 0.0f)
		{
			v0 = _mm512_mul_ps(v0, t0);
			v1 = _mm512_mul_ps(v1, t1);
		}
		else
		{
			__m512		vb = _mm512_set1_ps(beta);

			v0 = _mm512_fmadd_ps(v0, t0, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m0, row)));
			v1 = _mm512_fmadd_ps(v1, t1, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16)));
		}
		_mm512_mask_storeu_ps(row, m0, v0);
		_mm512_mask_storeu_ps(row + 16, m1, v1);
	}
}

#endif							/* TFM_INT8_SCALE_AVX512_H */
