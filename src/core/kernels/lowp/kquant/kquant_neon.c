/*
 * kquant_neon.c — GGUF's Q4_K, Q5_K, Q6_K and Q8_0 blocks run as they are
 * on AArch64 NEON, for up to KQ_ROWS activation rows at a time: each
 * weight block is unpacked once into its values as signed bytes (Q4_K
 * 0..15, Q5_K 0..31, Q6_K −32..31, Q8_0 as stored), then, per row, the
 * integer sums of kquant_ref.c — per sub-block a dot product of 16-byte
 * vectors, multiplied by its scale in int32 lanes — and the float step per
 * block of kquant_internal.h, so every row's result is tfm_kq_dot_ref's
 * bit for bit (the sums are exact integers: their order does not matter).
 *
 *   neondot (FEAT_DotProd; lowp_dispatch_arm.c): SDOT adds four products
 *   into each int32 lane.
 *   neon (every AArch64 CPU): SMULL/SMULL2 into int16 (|w·q| ≤ 128·127,
 *   exact), SADALP pairs into int32 lanes.
 *
 * The two are one body (KQ_NEON_KERNEL) compiled twice, the dot-product
 * one for armv8.2-a+dotprod by pragma.
 */
#include <arm_neon.h>

#include "kquant_internal.h"

#define INLINE static inline __attribute__((always_inline))

/* a Q4_K / Q5_K block's 256 values, in the reference's order */
INLINE void
unpack_q45(int five, const uint8_t *w, int8_t *v)
{
	const uint8_t *qh = w + 16,
			   *q = w + (five ? 48 : 16);
	const uint8x16_t m4 = vdupq_n_u8(0xF),
				one = vdupq_n_u8(1);

	for (int c = 0; c < 4; c++, q += 32)
		for (int h = 0; h < 32; h += 16)
		{
			uint8x16_t	b = vld1q_u8(q + h),
						lo = vandq_u8(b, m4),
						hi = vshrq_n_u8(b, 4);

			if (five)
			{
				uint8x16_t	x = vld1q_u8(qh + h);

				lo = vorrq_u8(lo, vshlq_n_u8(vandq_u8(vshlq_u8(x, vdupq_n_s8((int8_t) (-2 * c))), one), 4));
				hi = vorrq_u8(hi, vshlq_n_u8(vandq_u8(vshlq_u8(x, vdupq_n_s8((int8_t) (-2 * c - 1))), one), 4));
			}
			vst1q_s8(v + 64 * c + h, vreinterpretq_s8_u8(lo));
			vst1q_s8(v + 64 * c + 32 + h, vreinterpretq_s8_u8(hi));
		}
}

/* a Q6_K block's 256 values (q − 32), in the reference's order */
INLINE void
unpack_q6(const uint8_t *w, int8_t *v)
{
	const uint8_t *ql = w,
			   *qh = w + 128;
	const uint8x16_t m4 = vdupq_n_u8(0xF),
				m3 = vdupq_n_u8(3);
	const int8x16_t off = vdupq_n_s8(32);

	for (int c = 0; c < 2; c++, ql += 64, qh += 32, v += 128)
		for (int h = 0; h < 32; h += 16)
		{
			uint8x16_t	a = vld1q_u8(ql + h),
						b = vld1q_u8(ql + 32 + h),
						x = vld1q_u8(qh + h);
			uint8x16_t	v0 = vorrq_u8(vandq_u8(a, m4), vshlq_n_u8(vandq_u8(x, m3), 4)),
						v1 = vorrq_u8(vandq_u8(b, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(x, 2), m3), 4)),
						v2 = vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(x, 4), m3), 4)),
						v3 = vorrq_u8(vshrq_n_u8(b, 4), vshlq_n_u8(vshrq_n_u8(x, 6), 4));

			vst1q_s8(v + h, vsubq_s8(vreinterpretq_s8_u8(v0), off));
			vst1q_s8(v + 32 + h, vsubq_s8(vreinterpretq_s8_u8(v1), off));
			vst1q_s8(v + 64 + h, vsubq_s8(vreinterpretq_s8_u8(v2), off));
			vst1q_s8(v + 96 + h, vsubq_s8(vreinterpretq_s8_u8(v3), off));
		}
}

/*
 * The body, with DOT16(acc, x, y) adding the 16 products of two int8x16
 * vectors into acc's four int32 lanes.  NAME(type, n, w, a, ab, R, out):
 * out[r] = the dot product of weight row w with activation row r.
 */
#define KQ_NEON_KERNEL(NAME, DOT16) \
INLINE int32x4_t \
NAME##_dot32(const int8_t *x, const int8_t *y) \
{ \
	int32x4_t	s = vdupq_n_s32(0); \
\
	s = DOT16(s, vld1q_s8(x), vld1q_s8(y)); \
	return DOT16(s, vld1q_s8(x + 16), vld1q_s8(y + 16)); \
} \
\
INLINE void \
NAME##_q45(int five, int n, const uint8_t *w, const uint8_t *a, size_t ab, const int R, float *out) \
{ \
	const int	bytes = five ? 176 : 144; \
	float		sum[KQ_ROWS] = {0}; \
	int8_t		v[TFM_QK_K]; \
\
	for (int i = 0; i < n / TFM_QK_K; i++, w += bytes) \
	{ \
		uint8_t		sc[8], \
					mn[8]; \
\
		kq_scales_mins(w + 4, sc, mn); \
		unpack_q45(five, w, v); \
		for (int r = 0; r < R; r++) \
		{ \
			const tfm_block_q8_K *b = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i; \
			int32x4_t	acc = vdupq_n_s32(0); \
			int32_t		msum = 0; \
\
			for (int j = 0; j < 16; j++) \
				msum += b->bsums[j] * mn[j / 2]; \
			for (int s = 0; s < 8; s++) \
				acc = vmlaq_n_s32(acc, NAME##_dot32(v + 32 * s, b->qs + 32 * s), sc[s]); \
			sum[r] = kq_step_k(sum[r], kq_half(w) * b->d, vaddvq_s32(acc), kq_half(w + 2) * b->d, msum); \
		} \
	} \
	for (int r = 0; r < R; r++) \
		out[r] = sum[r]; \
} \
\
INLINE void \
NAME##_q6(int n, const uint8_t *w, const uint8_t *a, size_t ab, const int R, float *out) \
{ \
	float		sum[KQ_ROWS] = {0}; \
	int8_t		v[TFM_QK_K]; \
\
	for (int i = 0; i < n / TFM_QK_K; i++, w += 210) \
	{ \
		const int8_t *sc = (const int8_t *) (w + 192); \
\
		unpack_q6(w, v); \
		for (int r = 0; r < R; r++) \
		{ \
			const tfm_block_q8_K *b = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i; \
			int32x4_t	acc = vdupq_n_s32(0); \
\
			for (int g = 0; g < 16; g++) \
				acc = vmlaq_n_s32(acc, DOT16(vdupq_n_s32(0), vld1q_s8(v + 16 * g), \
											 vld1q_s8(b->qs + 16 * g)), sc[g]); \
			sum[r] = kq_step(sum[r], vaddvq_s32(acc), kq_half(w + 208) * b->d); \
		} \
	} \
	for (int r = 0; r < R; r++) \
		out[r] = sum[r]; \
} \
\
INLINE void \
NAME##_q8(int n, const uint8_t *w, const uint8_t *a, size_t ab, const int R, float *out) \
{ \
	float		sum[KQ_ROWS] = {0}; \
\
	for (int i = 0; i < n / TFM_QK8_0; i++, w += 34) \
		for (int r = 0; r < R; r++) \
		{ \
			const tfm_block_q8_0 *b = (const tfm_block_q8_0 *) (a + (size_t) r * ab) + i; \
\
			sum[r] = kq_step(sum[r], vaddvq_s32(NAME##_dot32((const int8_t *) w + 2, b->qs)), \
							 kq_half(w) * tfm_fp16_to_float(b->d)); \
		} \
	for (int r = 0; r < R; r++) \
		out[r] = sum[r]; \
} \
\
void \
NAME(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab, int R, float *out) \
{ \
	switch (type) \
	{ \
		case KQ_Q4_K: \
			KQ_ROWS_CASES(Q4K_CALL) \
		case KQ_Q5_K: \
			KQ_ROWS_CASES(Q5K_CALL) \
		case KQ_Q6_K: \
			KQ_ROWS_CASES(Q6K_CALL) \
		default: \
			KQ_ROWS_CASES(Q80_CALL) \
	} \
}

#define Q4K_CALL(H) NAME_q45(0, n, w, a, ab, H, out)
#define Q5K_CALL(H) NAME_q45(1, n, w, a, ab, H, out)
#define Q6K_CALL(H) NAME_q6(n, w, a, ab, H, out)
#define Q80_CALL(H) NAME_q8(n, w, a, ab, H, out)

/* plain NEON: SMULL/SMULL2, SADALP */
INLINE int32x4_t
dot16_mull(int32x4_t acc, int8x16_t x, int8x16_t y)
{
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(x), vget_low_s8(y)));
	return vpadalq_s16(acc, vmull_high_s8(x, y));
}

#define NAME_q45 kq_rows_neon_q45
#define NAME_q6 kq_rows_neon_q6
#define NAME_q8 kq_rows_neon_q8
KQ_NEON_KERNEL(kq_rows_neon, dot16_mull)
#undef NAME_q45
#undef NAME_q6
#undef NAME_q8

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

#define NAME_q45 kq_rows_neondot_q45
#define NAME_q6 kq_rows_neondot_q6
#define NAME_q8 kq_rows_neondot_q8
KQ_NEON_KERNEL(kq_rows_neondot, vdotq_s32)

#pragma GCC pop_options
