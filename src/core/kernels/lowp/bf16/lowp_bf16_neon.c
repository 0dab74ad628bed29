/*
 * lowp_bf16_neon.c — the bf16 kernel for AArch64 NEON: each 32-bit slot
 * holds a pair of bf16 (k low, k + 1 high); its low half shifted up 16 bits
 * and its high half masked are the two values as fp32, exactly, so every
 * product is an fp32 FMA (FMLA) on widened operands, as on AVX2.  Its gain
 * over fp32 is the halved weight traffic (the matrix-vector path); batched
 * inference products run fp32 instead (lowp_set.c).  No BFDOT/BFMMLA
 * (FEAT_BF16) path: their rounding differs from the fp32 sums of the other
 * paths, and there is no Arm hardware here to measure one on.
 *
 * Blocks: R rows × 4V columns (one register per 4 columns), each weight
 * vector widened once for the block's rows.  GEMM (panel height LOWP_MR =
 * 12): 3 × 2 blocks of 4 rows × 16 columns (16 accumulators; the four rows'
 * slots loaded as one vector and widened once, each row taken by lane).
 * Matrix-vector (heights 1-4): 16 columns at a time, one row with
 * separate accumulators for the low and high halves (the FMA latency
 * would otherwise bound it), or two, three or four rows.
 */
#include <arm_neon.h>

#include "../lowp_internal.h"

#define INLINE static inline __attribute__((always_inline))

/* row[0..n) for 4 columns: alpha · acc + beta · row */
INLINE void
store4(float *row, float32x4_t acc, float alpha, float beta, int n)
{
	acc = vmulq_n_f32(acc, alpha);
	if (n >= 4)
	{
		if (beta != 0.0f)
			acc = vfmaq_n_f32(acc, vld1q_f32(row), beta);
		vst1q_f32(row, acc);
	}
	else
	{
		float		v[4];

		vst1q_f32(v, acc);
		for (int j = 0; j < n; j++)
			row[j] = beta == 0.0f ? v[j] : beta * row[j] + v[j];
	}
}

INLINE float32x4_t
lo_half(uint32x4_t x)
{
	return vreinterpretq_f32_u32(vshlq_n_u32(x, 16));
}

INLINE float32x4_t
hi_half(uint32x4_t x)
{
	return vreinterpretq_f32_u32(vandq_u32(x, vdupq_n_u32(0xFFFF0000u)));
}

/*
 * rows [r0, r0 + R) of the panel (height h), columns [4·v0, 4·(v0 + V)) of
 * the weight panel, R ≤ 4, S·R·V ≤ 16; S = 2: separate accumulators for
 * the halves.  R = 4 loads the rows' slots as one vector.  Rows past m and
 * columns past n are computed, not stored.
 */
INLINE void
block(const int R, const int V, const int S, int r0, int v0, int kk, const uint32_t *a,
	  int h, const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	float32x4_t acc[2][4][8];	/* constant indices only (unrolled): kept in registers */

#pragma GCC unroll 8
	for (int s = 0; s < S; s++)
		for (int r = 0; r < R; r++)
			for (int v = 0; v < V; v++)
				acc[s][r][v] = vdupq_n_f32(0.0f);
	for (int p = 0; p < kk; p++)
	{
		const uint32_t *bp = b + (size_t) p * LOWP_NR + 4 * v0;
		const uint32_t *ap = a + (size_t) p * h + r0;

		if (R == 4)
		{
			uint32x4_t	x = vld1q_u32(ap);
			float32x4_t xl = lo_half(x),
						xh = hi_half(x);

			for (int v = 0; v < V; v++)
			{
				uint32x4_t	w = vld1q_u32(bp + 4 * v);
				float32x4_t wl = lo_half(w),
							wh = hi_half(w);

				acc[0][0][v] = vfmaq_laneq_f32(acc[0][0][v], wl, xl, 0);
				acc[0][1][v] = vfmaq_laneq_f32(acc[0][1][v], wl, xl, 1);
				acc[0][2][v] = vfmaq_laneq_f32(acc[0][2][v], wl, xl, 2);
				acc[0][3][v] = vfmaq_laneq_f32(acc[0][3][v], wl, xl, 3);
				acc[S - 1][0][v] = vfmaq_laneq_f32(acc[S - 1][0][v], wh, xh, 0);
				acc[S - 1][1][v] = vfmaq_laneq_f32(acc[S - 1][1][v], wh, xh, 1);
				acc[S - 1][2][v] = vfmaq_laneq_f32(acc[S - 1][2][v], wh, xh, 2);
				acc[S - 1][3][v] = vfmaq_laneq_f32(acc[S - 1][3][v], wh, xh, 3);
			}
		}
		else
		{
			float32x4_t xl[3],
						xh[3];

			for (int r = 0; r < R; r++)
			{
				uint32x4_t	x = vld1q_dup_u32(ap + r);

				xl[r] = lo_half(x);
				xh[r] = hi_half(x);
			}
			for (int v = 0; v < V; v++)
			{
				uint32x4_t	w = vld1q_u32(bp + 4 * v);
				float32x4_t wl = lo_half(w),
							wh = hi_half(w);

				for (int r = 0; r < R; r++)
				{
					acc[0][r][v] = vfmaq_f32(acc[0][r][v], xl[r], wl);
					acc[S - 1][r][v] = vfmaq_f32(acc[S - 1][r][v], xh[r], wh);
				}
			}
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		if (r0 + r < m)
#pragma GCC unroll 8
			for (int v = 0; v < V; v++)
			{
				int			j = 4 * (v0 + v);

				if (j < n)
					store4(c + (size_t) (r0 + r) * ldc + j,
						   S == 2 ? vaddq_f32(acc[0][r][v], acc[1][r][v]) : acc[0][r][v],
						   alpha, beta, n - j);
			}
}

void
lowp_bf16_neon_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
					  float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	switch (h)
	{
		case LOWP_MR:
			for (int r0 = 0; r0 < LOWP_MR && r0 < m; r0 += 4)
				for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += 4)
					block(4, 4, 1, r0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 1:
			for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += 4)
				block(1, 4, 2, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 2:
			for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += 4)
				block(2, 4, 1, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 3:
			for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += 4)
				block(3, 4, 1, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 4:
			for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += 4)
				block(4, 4, 1, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		default:
			/* not reached: the drivers use heights 1-4 and LOWP_MR */
			lowp_bf16_ref_kernel(kk, a, h, b, c, ldc, m, n, alpha, beta);
	}
}
