/*
 * lowp_int8_neon.c — the int8 kernels for AArch64: the integer sums of
 * lowp_int8_ref.c in NEON, two ways.
 *
 * The activation bytes are stored offset (a + 128); each slot of four is
 * made signed again (q = a − 128, by an exclusive or with 0x80, in
 * [−127, 127] like the weights), so the sums are Σ q·w, which is what the
 * reference's Σ (q + 128)·w − 128·colsum is, exactly, and no column sums
 * are taken out (as on AVX2).  The scaling is the reference's, operation
 * for operation, so every path gives the same bits.
 *
 *   neondot (FEAT_DotProd, Armv8.2 and later; lowp_dispatch_arm.c checks
 *   HWCAP_ASIMDDP): SDOT adds the four products of each column's 32-bit
 *   slot into its int32 lane, by element: four rows' slots in one
 *   register, each row's taken by lane.
 *
 *   neon (every AArch64 CPU): SMULL/SMULL2 multiply eight bytes into int16
 *   products (|q·w| ≤ 127², exact), SADALP adds pairs of them into int32
 *   lanes; two accumulators per four columns, which one ADDP joins.
 *
 * Blocks: R rows × 4V columns (one 128-bit register per 4 columns); the
 * int32 sums run over all of K before they are scaled.  The GEMM's 12 × 32
 * panel goes as blocks of 4 rows (their slots loaded as one vector); the
 * matrix-vector path (heights 1-4) takes as many columns at once as the 32
 * registers hold.  The dot-product functions are compiled for
 * armv8.2-a+dotprod by pragma, the rest for the baseline.
 */
#include <arm_neon.h>

#include "../lowp_internal.h"

#define INLINE static inline __attribute__((always_inline))

/* row[0..n) for 4 columns from j: the reference's scaling of the sums */
INLINE void
store4(float *row, int32x4_t acc, const float *cscale, float sr, float beta, int n)
{
	if (n >= 4)
	{
		float32x4_t v = vcvtq_f32_s32(acc),
					s = vmulq_n_f32(vld1q_f32(cscale), sr);

		if (beta == 0.0f)
			vst1q_f32(row, vmulq_f32(v, s));
		else
			vst1q_f32(row, vfmaq_f32(vmulq_n_f32(vld1q_f32(row), beta), v, s));
	}
	else
	{
		int32_t		sums[4];

		vst1q_s32(sums, acc);
		for (int j = 0; j < n; j++)
		{
			float		v = (float) sums[j],
						s = sr * cscale[j];

			row[j] = beta == 0.0f ? v * s : __builtin_fmaf(v, s, beta * row[j]);
		}
	}
}

/* rows [r0, r0 + R) of C from their sums acc[r][v] (columns 4·(v0 + v) ..) */
#define STORE_BLOCK(R, V, ACC) \
	_Pragma("GCC unroll 8") \
	for (int r = 0; r < (R); r++) \
		if (r0 + r < m) \
		{ \
			float	   *row = c + (size_t) (r0 + r) * ldc; \
			float		sr = alpha * rscale[r0 + r]; \
\
			_Pragma("GCC unroll 8") \
			for (int v = 0; v < (V); v++) \
			{ \
				int			j = 4 * (v0 + v); \
\
				if (j < n) \
					store4(row + j, ACC, cscale + j, sr, beta, n - j); \
			} \
		}

/* slot row p of the panel's rows r0 ..: four of them, made signed */
INLINE int8x16_t
signed4(const uint32_t *ap)
{
	return vreinterpretq_s8_u32(veorq_u32(vld1q_u32(ap), vdupq_n_u32(0x80808080u)));
}

/* one row's slot, made signed, in all four lanes */
INLINE int8x16_t
signed1(const uint32_t *ap)
{
	return vreinterpretq_s8_u32(veorq_u32(vld1q_dup_u32(ap), vdupq_n_u32(0x80808080u)));
}

/*
 * The kernel over a panel of height h, by BLOCK(R, V, r0, v0, ...): the
 * GEMM's (LOWP_MR) in blocks of 4 rows × VG vectors, the matrix-vector
 * path's (heights 1-4) in blocks of all its rows × V1, V2 or V34 vectors.
 * The sums are Σ q·w already: no column sums to take out.
 */
#define BY_COLUMNS(BLOCK, R, V, r0) \
	for (int v0 = 0; v0 < 8 && 4 * v0 < n; v0 += (V)) \
		BLOCK(R, V, r0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta)
#define BY_HEIGHT(BLOCK, VG, V1, V2, V34) \
	switch (h) \
	{ \
		case LOWP_MR: \
			for (int r0 = 0; r0 < LOWP_MR && r0 < m; r0 += 4) \
				BY_COLUMNS(BLOCK, 4, VG, r0); \
			break; \
		case 1: \
			BY_COLUMNS(BLOCK, 1, V1, 0); \
			break; \
		case 2: \
			BY_COLUMNS(BLOCK, 2, V2, 0); \
			break; \
		case 3: \
			BY_COLUMNS(BLOCK, 3, V34, 0); \
			break; \
		case 4: \
			BY_COLUMNS(BLOCK, 4, V34, 0); \
			break; \
		default: \
			/* not reached: the drivers use heights 1-4 and LOWP_MR */ \
			lowp_int8_ref_kernel(kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta); \
	}

/* ---- neon: widening multiplies ---------------------------------------------- */

/* acc[0..1] + the products of row slot q (in every lane) with four columns' slots w */
#define MULL_ACC(A0, A1, W, Q) \
	do { \
		A0 = vpadalq_s16(A0, vmull_s8(vget_low_s8(W), vget_low_s8(Q))); \
		A1 = vpadalq_s16(A1, vmull_high_s8(W, Q)); \
	} while (0)

/*
 * rows [r0, r0 + R) of the panel (height h), columns [4·v0, 4·(v0 + V)) of
 * the weight panel, R ≤ 4, R·V ≤ 8 (two accumulators each, and the weight
 * vectors, in 32 registers); rows past m and columns past n are computed,
 * not stored.  R = 4 loads the four rows' slots as one vector.
 */
INLINE void
block_mull(const int R, const int V, int r0, int v0, int kq, const uint32_t *a, int h,
		   const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha,
		   const float *rscale, const float *cscale, float beta)
{
	int32x4_t	acc[4][8][2];	/* constant indices only (unrolled): kept in registers */

#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int v = 0; v < V; v++)
			acc[r][v][0] = acc[r][v][1] = vdupq_n_s32(0);
	for (int p = 0; p < kq; p++)
	{
		const int8_t *bp = (const int8_t *) (b + (size_t) p * LOWP_NR + 4 * v0);
		const uint32_t *ap = a + (size_t) p * h + r0;
		int8x16_t	q[4];

		if (R == 4)
		{
			int8x16_t	all = signed4(ap);
			uint32x4_t	u = vreinterpretq_u32_s8(all);

			q[0] = vreinterpretq_s8_u32(vdupq_laneq_u32(u, 0));
			q[1] = vreinterpretq_s8_u32(vdupq_laneq_u32(u, 1));
			q[2] = vreinterpretq_s8_u32(vdupq_laneq_u32(u, 2));
			q[3] = vreinterpretq_s8_u32(vdupq_laneq_u32(u, 3));
		}
		else
			for (int r = 0; r < R; r++)
				q[r] = signed1(ap + r);
		for (int v = 0; v < V; v++)
		{
			int8x16_t	w = vld1q_s8(bp + 16 * v);

			for (int r = 0; r < R; r++)
				MULL_ACC(acc[r][v][0], acc[r][v][1], w, q[r]);
		}
	}
	STORE_BLOCK(R, V, vpaddq_s32(acc[r][v][0], acc[r][v][1]));
}

void
lowp_int8_neon_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
					  float *c, ptrdiff_t ldc, int m, int n, float alpha,
					  const float *rscale, const float *cscale,
					  const int32_t *colsum, float beta)
{
	BY_HEIGHT(block_mull, 2, 8, 4, 2);
}

/* ---- neondot: SDOT ----------------------------------------------------------- */

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

/*
 * rows [r0, r0 + R) × columns [4·v0, 4·(v0 + V)), R ≤ 4, R·V ≤ 16 (the
 * accumulators and the weight vectors in 32 registers); R = 4 takes each
 * row's slot by lane from one vector of the four.
 */
INLINE void
block_dot(const int R, const int V, int r0, int v0, int kq, const uint32_t *a, int h,
		  const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha,
		  const float *rscale, const float *cscale, float beta)
{
	int32x4_t	acc[4][8];		/* constant indices only (unrolled): kept in registers */

#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
		for (int v = 0; v < V; v++)
			acc[r][v] = vdupq_n_s32(0);
	for (int p = 0; p < kq; p++)
	{
		const int8_t *bp = (const int8_t *) (b + (size_t) p * LOWP_NR + 4 * v0);
		const uint32_t *ap = a + (size_t) p * h + r0;

		if (R == 4)
		{
			int8x16_t	q = signed4(ap);

			for (int v = 0; v < V; v++)
			{
				int8x16_t	w = vld1q_s8(bp + 16 * v);

				acc[0][v] = vdotq_laneq_s32(acc[0][v], w, q, 0);
				acc[1][v] = vdotq_laneq_s32(acc[1][v], w, q, 1);
				acc[2][v] = vdotq_laneq_s32(acc[2][v], w, q, 2);
				acc[3][v] = vdotq_laneq_s32(acc[3][v], w, q, 3);
			}
		}
		else
		{
			int8x16_t	q[3];

			for (int r = 0; r < R; r++)
				q[r] = signed1(ap + r);
			for (int v = 0; v < V; v++)
			{
				int8x16_t	w = vld1q_s8(bp + 16 * v);

				for (int r = 0; r < R; r++)
					acc[r][v] = vdotq_s32(acc[r][v], w, q[r]);
			}
		}
	}
	STORE_BLOCK(R, V, acc[r][v]);
}

void
lowp_int8_neondot_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
						 float *c, ptrdiff_t ldc, int m, int n, float alpha,
						 const float *rscale, const float *cscale,
						 const int32_t *colsum, float beta)
{
	BY_HEIGHT(block_dot, 4, 8, 8, 4);
}

#pragma GCC pop_options
