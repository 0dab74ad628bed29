/*
 * lowp_int4_gemv.h — the loop both SIMD int4 kernels run
 * (lowp_int4_avx2.c, lowp_int4_avx512.c): the matrix-vector path over
 * Q4_0 blocks, the sums in lowp_int4_ref.c's order, bit for bit.
 *
 * Per weight block: its fp16 scale converted (F16C) and broadcast, its 16
 * bytes of nibbles spread to 32 unsigned bytes (low nibbles in the lower
 * 128 bits: elements 0-15, high nibbles above: 16-31), then per row of A
 * INT4_LANES(u, q, corr): the 8 int32 lane sums Σ u·q over 4 bytes plus the
 * row's corrections (−8·Σq), exact; converted, scaled by d_w · d_a and
 * added into the row's 8 fp32 lanes with one fma, as the reference does.
 * Two columns at a time (independent fma chains, two weight streams).
 *
 * Included once by each kernel after it defines TARGET (its instruction
 * set: with "fma,f16c"), INLINE and INT4_LANES(u, q, corr).
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

/* block b of a weight row: its scale (broadcast) and its 32 nibbles as bytes */
TARGET INLINE __m256i
int4_unpack(const uint8_t *blk, __m256 *dw)
{
	const __m128i low = _mm_set1_epi8(0x0F);
	uint16_t	h;
	__m128i		raw = _mm_loadu_si128((const __m128i *) (blk + 2));

	memcpy(&h, blk, 2);
	*dw = _mm256_set1_ps(_cvtsh_ss(h));
	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low), _mm_and_si128(raw, low));
}

/* acc + row r's lanes of block b against the unpacked weights u */
#define INT4_ROW(acc, r, u, dw) \
	do { \
		size_t		rb = (size_t) (r) * kb + b; \
		__m256i		s = INT4_LANES((u), _mm256_loadu_si256((const __m256i *) (a->q + rb * 32)), \
								   _mm256_loadu_si256((const __m256i *) (a->corr + rb * 8))); \
		__m256		d = _mm256_mul_ps((dw), _mm256_set1_ps(a->d[rb])); \
\
		(acc) = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, (acc)); \
	} while (0)

TARGET INLINE void
int4_store(float *c, float s, float alpha, float beta)
{
	*c = beta == 0.0f ? alpha * s : __builtin_fmaf(alpha, s, beta * *c);
}

/* H rows (1-4, a constant after inlining), columns [j0, j1) */
TARGET INLINE void
int4_columns(const int H, const lowp_int4_act *a, const tfm_int4_weights *W, int j0, int j1,
			 float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb;
	const size_t row = (size_t) kb * TFM_INT4_BLOCK_BYTES;
	int			j = j0;

	for (; j + 2 <= j1; j += 2)
	{
		const uint8_t *x0 = W->data + (size_t) j * row,
				   *x1 = x0 + row;
		__m256		a00 = _mm256_setzero_ps(),
					a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;

		for (int b = 0; b < kb; b++)
		{
			__m256		d0,
						d1;
			__m256i		u0 = int4_unpack(x0 + (size_t) b * TFM_INT4_BLOCK_BYTES, &d0),
						u1 = int4_unpack(x1 + (size_t) b * TFM_INT4_BLOCK_BYTES, &d1);

			INT4_ROW(a00, 0, u0, d0);
			INT4_ROW(a01, 0, u1, d1);
			if (H > 1)
			{
				INT4_ROW(a10, 1, u0, d0);
				INT4_ROW(a11, 1, u1, d1);
			}
			if (H > 2)
			{
				INT4_ROW(a20, 2, u0, d0);
				INT4_ROW(a21, 2, u1, d1);
			}
			if (H > 3)
			{
				INT4_ROW(a30, 3, u0, d0);
				INT4_ROW(a31, 3, u1, d1);
			}
		}
		{
			__m256		acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};

			for (int r = 0; r < H; r++)
				for (int t = 0; t < 2; t++)
					int4_store(C + (size_t) r * ldc + j + t, int4_lanes_sum(acc[r][t]), alpha, beta);
		}
	}
	for (; j < j1; j++)
	{
		const uint8_t *x0 = W->data + (size_t) j * row;
		__m256		a0 = _mm256_setzero_ps(),
					a1 = a0, a2 = a0, a3 = a0;

		for (int b = 0; b < kb; b++)
		{
			__m256		d0;
			__m256i		u0 = int4_unpack(x0 + (size_t) b * TFM_INT4_BLOCK_BYTES, &d0);

			INT4_ROW(a0, 0, u0, d0);
			if (H > 1)
				INT4_ROW(a1, 1, u0, d0);
			if (H > 2)
				INT4_ROW(a2, 2, u0, d0);
			if (H > 3)
				INT4_ROW(a3, 3, u0, d0);
		}
		{
			__m256		acc[4] = {a0, a1, a2, a3};

			for (int r = 0; r < H; r++)
				int4_store(C + (size_t) r * ldc + j, int4_lanes_sum(acc[r]), alpha, beta);
		}
	}
}

/* the kernel of lowp_internal.h for heights 1-4 (others: the reference) */
#define LOWP_INT4_KERNEL(name) \
TARGET void \
name(const lowp_int4_act *a, int h, const tfm_int4_weights *W, int j0, int j1, \
	 float alpha, float beta, float *C, ptrdiff_t ldc) \
{ \
	switch (h) \
	{ \
		case 1: int4_columns(1, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 2: int4_columns(2, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 3: int4_columns(3, a, W, j0, j1, alpha, beta, C, ldc); break; \
		case 4: int4_columns(4, a, W, j0, j1, alpha, beta, C, ldc); break; \
		default: lowp_int4_ref_kernel(a, h, W, j0, j1, alpha, beta, C, ldc); \
	} \
}

#endif							/* TFM_LOWP_INT4_GEMV_H */
