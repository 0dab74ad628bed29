/*
 * lowp_int4_gemv.h — the loop both SIMD int4 kernels run
 * (lowp_int4_avx2.c, lowp_int4_avx512.c): the matrix-vector path over
 * Q4_0 blocks in quads (4 blocks, 128 weights), the sums in
 * lowp_internal.h's order (the reference's, lowp_int4_ref.c), bit for bit.
 *
 * Per quad of weight blocks: their 4 × 16 bytes of nibbles masked into the
 * low nibbles (values 0-15 of each block) and shifted for the high ones
 * (16-31), each half 16 lanes of 4 (lanes 4j .. 4j + 3: block j); their
 * four fp16 scales converted together (F16C) and spread to the 16 lanes.
 * Then per row of A: the exact lane sums (INT4_DOT: the low nibbles,
 * unsigned, times their signed activation bytes, plus the high ones times
 * theirs, plus the corrections: 8 products a lane), converted, scaled by
 * dw · da and added into the row's 16 fp32 lanes with one fma.
 * INT4_COLS columns at a time (independent fma chains, several weight
 * streams).
 *
 * Included once by each kernel after it defines TARGET (its instruction
 * set, with "fma,f16c"), INLINE, INT4_COLS(H) and the 16-lane vocabulary:
 * types V16F, V16I; v16_unpack(b01, b23) (the 16 lanes from blocks 0-1's
 * and 2-3's 32 bytes), v16_scales(f) (lanes from the 4 floats [dw0 ..
 * dw3]: dwj in lanes 4j .. 4j + 3), v16_zero(), v16_load_i(p),
 * v16_load_f(p), v16_dot(corr, lo, hi, q) (q: the 64 low values' bytes,
 * then the 64 high ones'), v16_step(acc, s, dw, da) (fma(float(s), dw ·
 * da, acc)) and v16_fold(acc) (lanes l + l+8 as 8).
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

/* the nibbles of a quad of blocks */
typedef struct
{
	V16I		lo,
				hi;
} int4_nibbles;

/*
 * blocks x .. x + 3 blocks (n of them: past the row's end zero blocks):
 * nibbles as lanes, scales
 */
TARGET INLINE int4_nibbles
int4_quad(const uint8_t *x, int n, V16F *dw)
{
	const __m256i low = _mm256_set1_epi8(0x0F);
	uint8_t		tail[4 * TFM_INT4_BLOCK_BYTES];
	uint16_t	h[4];
	uint64_t	hs;
	__m256i		r01,
				r23;

	if (n < 4)
	{
		/* the last quad of a row: its blocks, then zero blocks (scale 0) */
		memset(tail, 0, sizeof(tail));
		memcpy(tail, x, (size_t) n * TFM_INT4_BLOCK_BYTES);
		x = tail;
	}
	r01 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *) (x + 2))),
								  _mm_loadu_si128((const __m128i *) (x + TFM_INT4_BLOCK_BYTES + 2)), 1);
	r23 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *) (x + 2 * TFM_INT4_BLOCK_BYTES + 2))),
								  _mm_loadu_si128((const __m128i *) (x + 3 * TFM_INT4_BLOCK_BYTES + 2)), 1);
	for (int j = 0; j < 4; j++)
		memcpy(&h[j], x + j * TFM_INT4_BLOCK_BYTES, 2);
	hs = (uint64_t) h[0] | (uint64_t) h[1] << 16 | (uint64_t) h[2] << 32 | (uint64_t) h[3] << 48;
	*dw = v16_scales(_mm_cvtph_ps(_mm_cvtsi64_si128((long long) hs)));
	return (int4_nibbles) {v16_unpack(_mm256_and_si256(r01, low), _mm256_and_si256(r23, low)),
		v16_unpack(_mm256_and_si256(_mm256_srli_epi16(r01, 4), low),
				   _mm256_and_si256(_mm256_srli_epi16(r23, 4), low))};
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
	V16F		acc[4][4];

#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
#pragma GCC unroll 4
		for (int c = 0; c < CJ; c++)
			acc[r][c] = v16_zero();
	for (int p = 0; p < a->quads; p++)
	{
		int4_nibbles u[4];
		V16F		dw[4];
		int			n = a->kb - 4 * p < 4 ? a->kb - 4 * p : 4;

#pragma GCC unroll 4
		for (int c = 0; c < CJ; c++)
			u[c] = int4_quad(W->data + (size_t) (j + c) * row + (size_t) p * 4 * TFM_INT4_BLOCK_BYTES,
							 n, &dw[c]);
#pragma GCC unroll 4
		for (int r = 0; r < H; r++)
		{
			size_t		rp = (size_t) r * a->quads + p;
			V16I		corr = v16_load_i(a->corr + rp * 16);
			V16F		da = v16_load_f(a->da + rp * 16);

#pragma GCC unroll 4
			for (int c = 0; c < CJ; c++)
				acc[r][c] = v16_step(acc[r][c], v16_dot(corr, u[c].lo, u[c].hi, a->q + rp * 128),
									 dw[c], da);
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
