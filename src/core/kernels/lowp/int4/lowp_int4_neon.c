/*
 * lowp_int4_neon.c — the int4 kernels for AArch64 over the interleaved
 * blocks (include/tfm/lowp.h), two ways, each the reference's order
 * (lowp_int4_ref.c) bit for bit: per column and block the exact int32 sum
 * plus the row's correction, then one fused multiply-add of it, scaled by
 * dw · da, into the column's fp32 sum.
 *
 * A group's 16 columns are four 128-bit registers of 4 columns; per block
 * and register, its 4 × 16 bytes of nibbles (one from each 64 of the
 * group's block) masked and shifted into 4 low and 4 high operands, 4 k a
 * column: low nibble t of byte 4i + t is value 4i + t, the high one
 * 16 + 4i + t.
 *
 *   neondot (FEAT_DotProd): SDOT by element — the row's activation bytes
 *   0-15 and 16-31 in two registers, 32-bit element i the one the i-th
 *   low (high) operand meets: 8 SDOT a row and register.
 *
 *   neon (every AArch64 CPU): SMLAL/SMLAL2 multiply the nibbles (0-15) by
 *   the activation's 4 bytes repeated, into int16 sums of 8 products
 *   (|sum| ≤ 8·15·127 = 15,240: exact), two ADDP steps fold each
 *   column's 4 positions into its int32 lane.
 *
 * The dot-product kernel is compiled for armv8.2-a+dotprod by pragma, the
 * rest for the baseline.
 */
#include <arm_neon.h>
#include <string.h>

#include "../lowp_internal.h"
#include "lowp_int4_kernel.h"

#define INLINE static inline __attribute__((always_inline))

/* C's columns j .. j + n − 1 of row c from the 4 sums, as the reference stores them */
INLINE void
store4(float *c, float32x4_t acc, int n, float alpha, float beta)
{
	float		v[4];

	vst1q_f32(v, acc);
	for (int l = 0; l < n && l < 4; l++)
		c[l] = beta == 0.0f ? alpha * v[l] : __builtin_fmaf(alpha, v[l], beta * c[l]);
}

/* the 4 scales of columns 4v .. 4v + 3 of a group's block, as fp32 (exact) */
INLINE float32x4_t
scales4(const uint16_t *s)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(s)));
}

/* 4 activation bytes repeated over 16 */
INLINE int8x16_t
dup4(const int8_t *p)
{
	int32_t		v;

	memcpy(&v, p, 4);
	return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* the column sums of one register's 4 columns from the plain-NEON int16 sums */
INLINE int32x4_t
fold16(int16x8_t p01, int16x8_t p23)
{
	return vpaddq_s32(vpaddlq_s16(p01), vpaddlq_s16(p23));
}

/*
 * H rows (1-4) × the 16 columns of group g, one register of 4 columns at a
 * time (its 8 operands and the rows' 16 accumulators in the 32 registers);
 * DOT: SDOT or plain NEON
 */
#define INT4_GROUP_BODY(DOT_SUM) \
	const int	kb = a->kb, \
				j = g * TFM_INT4_GROUP, \
				n = W->N - j < TFM_INT4_GROUP ? W->N - j : TFM_INT4_GROUP; \
	const uint8x16_t low = vdupq_n_u8(0x0F); \
	float32x4_t acc[4][4]; \
\
	for (int r = 0; r < H; r++) \
		for (int v = 0; v < 4; v++) \
			acc[r][v] = vdupq_n_f32(0.0f); \
	for (int b = 0; b < kb; b++) \
	{ \
		size_t		gb = (size_t) g * kb + b; \
		const uint8_t *nib = W->data + gb * LOWP_INT4_GROUP_BLOCK_BYTES; \
\
		for (int v = 0; v < 4; v++) \
		{ \
			float32x4_t dw = scales4(W->scales + gb * TFM_INT4_GROUP + 4 * v); \
			int8x16_t	lo[4], \
						hi[4]; \
\
			for (int i = 0; i < 4; i++) \
			{ \
				uint8x16_t	z = vld1q_u8(nib + 64 * i + 16 * v); \
\
				lo[i] = vreinterpretq_s8_u8(vandq_u8(z, low)); \
				hi[i] = vreinterpretq_s8_u8(vshrq_n_u8(z, 4)); \
			} \
			for (int r = 0; r < H; r++) \
			{ \
				const size_t rb = (size_t) r * kb + b; \
				const int8_t *qa = a->q + rb * TFM_INT4_BLOCK; \
				int32x4_t	s; \
\
				DOT_SUM; \
				s = vaddq_s32(s, vdupq_n_s32(a->corr[rb])); \
				acc[r][v] = vfmaq_f32(acc[r][v], vcvtq_f32_s32(s), \
									  vmulq_f32(dw, vdupq_n_f32(a->da[rb]))); \
			} \
		} \
	} \
	for (int r = 0; r < H; r++) \
		for (int v = 0; v < 4 && 4 * v < n; v++) \
			store4(C + (size_t) r * ldc + j + 4 * v, acc[r][v], n - 4 * v, alpha, beta);

/* the plain-NEON sum of one register's 4 columns for row qa */
#define NEON_SUM \
	{ \
		int16x8_t	p01 = vdupq_n_s16(0), \
					p23 = vdupq_n_s16(0); \
\
		for (int i = 0; i < 4; i++) \
		{ \
			int8x16_t	xl = dup4(qa + 4 * i), \
						xh = dup4(qa + 16 + 4 * i); \
\
			p01 = vmlal_s8(p01, vget_low_s8(lo[i]), vget_low_s8(xl)); \
			p23 = vmlal_high_s8(p23, lo[i], xl); \
			p01 = vmlal_s8(p01, vget_low_s8(hi[i]), vget_low_s8(xh)); \
			p23 = vmlal_high_s8(p23, hi[i], xh); \
		} \
		s = fold16(p01, p23); \
	}

INLINE void
neon_group(const int H, const lowp_int4_act *a, const tfm_int4_weights *W, int g,
		   float alpha, float beta, float *C, ptrdiff_t ldc)
{
	INT4_GROUP_BODY(NEON_SUM)
}

LOWP_INT4_KERNEL(, lowp_int4_neon_kernel, neon_group)

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

/* the SDOT sum of one register's 4 columns for row qa */
#define DOT_SUM \
	{ \
		int8x16_t	xl = vld1q_s8(qa), \
					xh = vld1q_s8(qa + 16); \
		int32x4_t	sh = vdupq_n_s32(0); \
\
		s = vdupq_n_s32(0); \
		s = vdotq_laneq_s32(s, lo[0], xl, 0); \
		sh = vdotq_laneq_s32(sh, hi[0], xh, 0); \
		s = vdotq_laneq_s32(s, lo[1], xl, 1); \
		sh = vdotq_laneq_s32(sh, hi[1], xh, 1); \
		s = vdotq_laneq_s32(s, lo[2], xl, 2); \
		sh = vdotq_laneq_s32(sh, hi[2], xh, 2); \
		s = vdotq_laneq_s32(s, lo[3], xl, 3); \
		sh = vdotq_laneq_s32(sh, hi[3], xh, 3); \
		s = vaddq_s32(s, sh); \
	}

INLINE void
dot_group(const int H, const lowp_int4_act *a, const tfm_int4_weights *W, int g,
		  float alpha, float beta, float *C, ptrdiff_t ldc)
{
	INT4_GROUP_BODY(DOT_SUM)
}

LOWP_INT4_KERNEL(, lowp_int4_neondot_kernel, dot_group)

#pragma GCC pop_options
