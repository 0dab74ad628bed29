/*
 * lowp_int8_ref.c — the portable int8 kernel: the same unsigned-activation
 * × signed-weight sums as AVX512_VNNI's vpdpbusd, in int32 (exact), and the
 * same float scaling (one fma per element), so it gives the fast path's
 * results bit for bit.  Any panel height (GEMM and matrix-vector path).
 */
#include <math.h>

#include "../lowp_internal.h"
#include "../../vecmath.h"

TFM_HOT void
lowp_int8_ref_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
					 float *c, ptrdiff_t ldc, int m, int n, float alpha,
					 const float *rscale, const float *cscale,
					 const int32_t *colsum, float beta)
{
	for (int r = 0; r < m; r++)
	{
		int32_t		acc[LOWP_NR] = {0};
		float	   *row = c + (size_t) r * ldc;
		float		sr = alpha * rscale[r];

		for (int p = 0; p < kq; p++)
		{
			uint32_t	s = a[(size_t) p * h + r];
			int32_t		u0 = s & 0xFF,
						u1 = (s >> 8) & 0xFF,
						u2 = (s >> 16) & 0xFF,
						u3 = s >> 24;
			const int8_t *bp = (const int8_t *) (b + (size_t) p * LOWP_NR);

			for (int j = 0; j < LOWP_NR; j++)
				acc[j] += u0 * bp[4 * j] + u1 * bp[4 * j + 1] +
					u2 * bp[4 * j + 2] + u3 * bp[4 * j + 3];
		}
		for (int j = 0; j < n; j++)
		{
			float		v = (float) (acc[j] - 128 * colsum[j]),
						s = sr * cscale[j];

			row[j] = beta == 0.0f ? v * s : fmaf(v, s, beta * row[j]);
		}
	}
}
