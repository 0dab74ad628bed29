/*
 * lowp_avx512_sum.h — the loop both AVX-512 kernels run
 * (lowp_bf16_avx512.c, lowp_int8_avx512.c) and the panel heights they
 * are compiled for.
 *
 * sum_panel: H activation rows (a panel, slot p of row r at a[p·H + r])
 * against one weight panel (two vectors of 16 columns a slot); H and U
 * are compile-time constants after inlining.  U > 1 (the matrix-vector
 * path): accumulator u takes slots u, u + U, u + 2U, … of the stretch
 * that is a multiple of U, so the dot products' latency does not bound
 * one row; the weights stay one sequential stream (U stretches read as U
 * streams were 15-20 % slower on Zen 4, bench_lowp, 2026-11-26); the U
 * sums are added at the end, in order.
 *
 * Included once by each kernel after it defines TARGET and INLINE (its
 * instruction set), SUM_ACC (the accumulator type), SUM_VEC (the operand
 * type), SUM_ZERO() and SUM_DOT(acc, x, b) (acc plus the products of
 * the broadcast activation slot x and the weight vector b) and
 * SUM_ADD(x, y).
 */
#ifndef TFM_LOWP_AVX512_SUM_H
#define TFM_LOWP_AVX512_SUM_H

/*
 * the heights the drivers use, with their unrolls: HEIGHT(h, U) for
 * LOWP_MR (the GEMM) and 1-4 (the matrix-vector path)
 */
#define LOWP_AVX512_HEIGHTS(HEIGHT) \
	HEIGHT(LOWP_MR, 1) HEIGHT(1, 2) HEIGHT(2, 2) HEIGHT(3, 1) HEIGHT(4, 1)

/* out[r][0..1] = Σ over the kk slots of row r times columns 0-15, 16-31 */
TARGET INLINE void
sum_panel(const int H, const int U, int kk, const uint32_t *a, const uint32_t *b,
		  SUM_ACC out[LOWP_MR][2])
{
	SUM_ACC		acc[4][LOWP_MR][2];	/* U ≤ 4, H ≤ LOWP_MR: constant indices only */
	int			p = 0;

	for (int u = 0; u < U; u++)
		for (int r = 0; r < H; r++)
			acc[u][r][0] = acc[u][r][1] = SUM_ZERO();
	if (U > 1)
	{
		int			len = kk / U;

		for (; p < len; p++)
#pragma GCC unroll 4
			for (int u = 0; u < U; u++)
			{
				size_t		q = (size_t) p * U + u;
				const uint32_t *bp = b + q * LOWP_NR;
				SUM_VEC		b0 = (SUM_VEC) _mm512_loadu_si512(bp),
							b1 = (SUM_VEC) _mm512_loadu_si512(bp + 16);

				for (int r = 0; r < H; r++)
				{
					SUM_VEC		x = (SUM_VEC) _mm512_set1_epi32((int) a[q * H + r]);

					acc[u][r][0] = SUM_DOT(acc[u][r][0], x, b0);
					acc[u][r][1] = SUM_DOT(acc[u][r][1], x, b1);
				}
			}
		p = U * len;
	}
	for (; p < kk; p++)
	{
		const uint32_t *bp = b + (size_t) p * LOWP_NR;
		SUM_VEC		b0 = (SUM_VEC) _mm512_loadu_si512(bp),
					b1 = (SUM_VEC) _mm512_loadu_si512(bp + 16);

		for (int r = 0; r < H; r++)
		{
			SUM_VEC		x = (SUM_VEC) _mm512_set1_epi32((int) a[(size_t) p * H + r]);

			acc[0][r][0] = SUM_DOT(acc[0][r][0], x, b0);
			acc[0][r][1] = SUM_DOT(acc[0][r][1], x, b1);
		}
	}
	for (int u = 1; u < U; u++)
		for (int r = 0; r < H; r++)
		{
			acc[0][r][0] = SUM_ADD(acc[0][r][0], acc[u][r][0]);
			acc[0][r][1] = SUM_ADD(acc[0][r][1], acc[u][r][1]);
		}
	for (int r = 0; r < H; r++)
	{
		out[r][0] = acc[0][r][0];
		out[r][1] = acc[0][r][1];
	}
}

#endif							/* TFM_LOWP_AVX512_SUM_H */
