/*
 * lowp_int4_gemv.h — the loop both SIMD int4 kernels run
 * (lowp_int4_avx2.c, lowp_int4_avx512.c): the matrix-vector path over
 * Q4_0 blocks in pairs, the sums in lowp_internal.h's order (the
 * reference's, lowp_int4_ref.c), bit for bit.
 *
 * Per pair of weight blocks: their 2 × 16 bytes of nibbles in one 256-bit
 * register, masked into the low nibbles (lanes 0-7) and shifted for the
 * high ones (lanes 8-15); their two fp16 scales converted together (F16C)
 * and spread to the 16 lanes.  Then per row of A: the exact lane sums
 * (INT4_DOT: the nibbles, unsigned, times the signed activation bytes,
 * plus the corrections), converted, scaled by dw · da and added into the
 * row's 16 fp32 lanes with one fma.  INT4_COLS columns at a time
 * (independent fma chains, several weight streams).
 *
 * Included once by each kernel after it defines TARGET (its instruction
 * set, with "fma,f16c"), INLINE, INT4_COLS(H) and the 16-lane vocabulary:
 * types V16F, V16I; v16_unpack(lo, hi) (the nibbles' two halves as
 * lanes 0-7 and 8-15), v16_scales(f) (lanes from the 2 floats [dw0, dw1]:
 * dw0 in lanes 0-3 and 8-11, dw1 in 4-7 and 12-15), v16_zero(),
 * v16_load_i(p), v16_load_f(p), v16_dot(corr, u, q), v16_step(acc, s, dw,
 * da) (fma(float(s), dw · da, acc)) and v16_fold(acc) (lanes l + l+8 as 8).
 */
#ifndef TFM_LOWP_INT4_GEMV_H
#define TFM_LOWP_INT4_GEMV_H

#include <immintrin.h>
#include <string.h>

/* the 8 lanes added as the reference adds them: (0+4, 2+6) + (1+5, 3+7) */
TARGET INLINE float
int4_lanes_sum(__m256 v)
{
	__m128		s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)),
				s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));

	return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

/* blocks x0 and x1 (NULL: a zero block past the row's end): nibbles as lanes, scales */
TARGET INLINE V16I
int4_pair(const uint8_t *x0, const uint8_t *x1, V16F *dw)
{
	const __m256i low = _mm256_set1_epi8(0x0F);
	uint16_t	h0,
				h1 = 0;
	__m128i		r0 = _mm_loadu_si128((const __m128i *) (x0 + 2)),
				r1 = x1 ? _mm_loadu_si128((const __m128i *) (x1 + 2)) : _mm_setzero_si128();
	__m256i		r = _mm256_inserti128_si256(_mm256_castsi128_si256(r0), r1, 1);

	memcpy(&h0, x0, 2);
	if (x1)
		memcpy(&h1, x1, 2);
	*dw = v16_scales(_mm_cvtph_ps(_mm_cvtsi32_si128((int) ((uint32_t) h0 | (uint32_t) h1 << 16))));
	return v16_unpack(_mm256_and_si256(r, low), _mm256_and_si256(_mm256_srli_epi16(r, 4), low));
}

TARGET INLINE void
int4_store(float *c, float s, float alpha, float beta)
{
	*c = beta == 0.0f ? alpha * s : __builtin_fmaf(alpha, s, beta * *c);
}

/* H rows (1-4) × CJ columns from j (constants after inlining) */
TARGET INLINE void
int4_columns(const int H, const int CJ, const lowp_int4_act *a, const tfm_int4_weights *W,
			 int j, float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const size_t row = (size_t) a->kb * TFM_INT4_BLOCK_BYTES;
	const int	full = a->kb / 2;
	V16F		acc[4][4];

#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
#pragma GCC unroll 4
		for (int c = 0; c < CJ; c++)
			acc[r][c] = v16_zero();
	for (int p = 0; p < a->pairs; p++)
	{
		V16I		u[4];
		V16F		dw[4];

#pragma GCC unroll 4
		for (int c = 0; c < CJ; c++)
		{
			const uint8_t *x0 = W->data + (size_t) (j + c) * row + (size_t) p * 2 * TFM_INT4_BLOCK_BYTES;

			u[c] = int4_pair(x0, p < full ? x0 + TFM_INT4_BLOCK_BYTES : NULL, &dw[c]);
		}
#pragma GCC unroll 4
		for (int r = 0; r < H; r++)
		{
			size_t		rp = (size_t) r * a->pairs + p;
			V16I		corr = v16_load_i(a->corr + rp * 16);
			V16F		da = v16_load_f(a->da + rp * 16);

#pragma GCC unroll 4
			for (int c = 0; c < CJ; c++)
				acc[r][c] = v16_step(acc[r][c], v16_dot(corr, u[c], a->q + rp * 64), dw[c], da);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
#pragma GCC unroll 4
		for (int c = 0; c < CJ; c++)
			int4_store(C + (size_t) r * ldc + j + c, int4_lanes_sum(v16_fold(acc[r][c])), alpha, beta);
}

/* H rows, columns [j0, j1) */
TARGET INLINE void
int4_rows(const int H, const lowp_int4_act *a, const tfm_int4_weights *W, int j0, int j1,
		  float alpha, float beta, float *C, ptrdiff_t ldc)
{
	int			j = j0;

	for (; j + INT4_COLS(H) <= j1; j += INT4_COLS(H))
		int4_columns(H, INT4_COLS(H), a, W, j, alpha, beta, C, ldc);
	for (; j < j1; j++)
		int4_columns(H, 1, a, W, j, alpha, beta, C, ldc);
}

/* the kernel of lowp_internal.h for heights 1-4 (others: the reference) */
#define LOWP_INT4_KERNEL(name) \
TARGET void \
name(const lowp_int4_act *a, int h, const tfm_int4_weights *W, int j0, int j1, \
	 float alpha, float beta, float *C, ptrdiff_t ldc) \
{ \
	switch (h) \
	{ \
		case 1: int4_rows(1, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 2: int4_rows(2, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 3: int4_rows(3, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 4: int4_rows(4, a, W, j0, j1, alpha, beta, C, ldc); break; \
		default: lowp_int4_ref_kernel(a, h, W, j0, j1, alpha, beta, C, ldc); \
	} \
}

#endif							/* TFM_LOWP_INT4_GEMV_H */
