/*
 * lowp_bf16_ref.c — the portable bf16 kernel: each bf16 widened to fp32
 * (exactly), products (exact in fp32) summed in fp32.  It reads the same
 * packed operands as the AVX512_BF16 kernel and serves both the GEMM and
 * the matrix-vector path (any panel height).  Compiled for AVX-512, AVX2 +
 * FMA and baseline x86-64, chosen at load time (TFM_HOT).
 */
#include <string.h>

#include "../lowp_internal.h"
#include "../../vecmath.h"

static inline float
lo_f(uint32_t s)
{
	uint32_t	u = s << 16;
	float		f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline float
hi_f(uint32_t s)
{
	uint32_t	u = s & 0xFFFF0000u;
	float		f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

TFM_HOT void
lowp_bf16_ref_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
					 float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	for (int r = 0; r < m; r++)
	{
		float		acc[LOWP_NR] = {0};
		float	   *row = c + (size_t) r * ldc;

		for (int p = 0; p < kk; p++)
		{
			uint32_t	s = a[(size_t) p * h + r];
			float		a0 = lo_f(s),
						a1 = hi_f(s);
			const uint32_t *bp = b + (size_t) p * LOWP_NR;

			for (int j = 0; j < LOWP_NR; j++)
				acc[j] += a0 * lo_f(bp[j]) + a1 * hi_f(bp[j]);
		}
		for (int j = 0; j < n; j++)
			row[j] = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * row[j];
	}
}
