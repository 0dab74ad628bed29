/*
 * lowp_int4_avx2.c — the int4 matrix-vector kernel for AVX2 + FMA + F16C
 * (lowp_int4_gemv.h's loop), the 16 lanes of a pair of blocks in two
 * 256-bit registers: the lane sums by vpmaddubsw (the weight's unsigned
 * nibbles, 0-15, times the signed activation bytes: each pair of products
 * at most 2·15·127, no saturation) and vpmaddwd against ones, plus the
 * row's corrections; and the batched product's dequantization into fp32
 * tiles (also the AVX-512 path's).  Compiled for that set by function attribute only;
 * lowp_dispatch.c calls it only on CPUs with all three.
 */
#include <immintrin.h>
#include <string.h>

#include "lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* two columns a step for 1-2 rows; one for 3-4 (the 16 registers) */
#define INT4_COLS(H) ((H) <= 2 ? 2 : 1)

typedef struct
{
	__m256		a,
				b;
} V16F;
typedef struct
{
	__m256i		a,
				b;
} V16I;

TARGET INLINE V16I
v16_unpack(__m256i lo, __m256i hi)
{
	return (V16I) {lo, hi};
}

TARGET INLINE V16F
v16_scales(__m128 f)
{
	__m256		s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(f),
											 _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));

	return (V16F) {s, s};
}

TARGET INLINE V16F
v16_zero(void)
{
	return (V16F) {_mm256_setzero_ps(), _mm256_setzero_ps()};
}

TARGET INLINE V16I
v16_load_i(const int32_t *p)
{
	return (V16I) {_mm256_loadu_si256((const __m256i *) p), _mm256_loadu_si256((const __m256i *) (p + 8))};
}

/* the scales of lanes 0-7 (8-15 repeat them: lowp_internal.h) */
TARGET INLINE V16F
v16_load_f(const float *p)
{
	__m256		d = _mm256_loadu_ps(p);

	return (V16F) {d, d};
}

TARGET INLINE V16I
v16_dot(V16I corr, V16I u, const int8_t *q)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i		qa = _mm256_loadu_si256((const __m256i *) q),
				qb = _mm256_loadu_si256((const __m256i *) (q + 32));

	return (V16I) {_mm256_add_epi32(corr.a, _mm256_madd_epi16(_mm256_maddubs_epi16(u.a, qa), ones)),
		_mm256_add_epi32(corr.b, _mm256_madd_epi16(_mm256_maddubs_epi16(u.b, qb), ones))};
}

/* lanes 8-15 hold the same blocks as 0-7: one product of the scales serves both */
TARGET INLINE V16F
v16_step(V16F acc, V16I s, V16F dw, V16F da)
{
	__m256		d = _mm256_mul_ps(dw.a, da.a);

	return (V16F) {_mm256_fmadd_ps(_mm256_cvtepi32_ps(s.a), d, acc.a),
		_mm256_fmadd_ps(_mm256_cvtepi32_ps(s.b), d, acc.b)};
}

TARGET INLINE __m256
v16_fold(V16F acc)
{
	return _mm256_add_ps(acc.a, acc.b);
}

#include "lowp_int4_gemv.h"

LOWP_INT4_KERNEL(lowp_int4_avx2_kernel)

/* lowp_int4_dequantize with AVX2 + F16C: the same exact products, 8 at a time */
TARGET void
lowp_int4_avx2_dequantize(float *dst, const tfm_int4_weights *W, int j0, int n)
{
	const size_t kp = (size_t) W->kb * TFM_INT4_BLOCK;
	const __m128i low = _mm_set1_epi8(0x0F);
	const __m256i eight = _mm256_set1_epi32(8);

	for (int jj = 0; jj < n; jj++)
	{
		const uint8_t *blk = W->data + (size_t) (j0 + jj) * W->kb * TFM_INT4_BLOCK_BYTES;
		float	   *out = dst + (size_t) jj * kp;

		for (int b = 0; b < W->kb; b++, blk += TFM_INT4_BLOCK_BYTES, out += TFM_INT4_BLOCK)
		{
			uint16_t	h;
			__m128i		r = _mm_loadu_si128((const __m128i *) (blk + 2)),
						q[2] = {_mm_and_si128(r, low), _mm_and_si128(_mm_srli_epi16(r, 4), low)};
			__m256		d;

			memcpy(&h, blk, 2);
			d = _mm256_set1_ps(_cvtsh_ss(h));
			for (int t = 0; t < 2; t++)
			{
				__m256i		a = _mm256_sub_epi32(_mm256_cvtepu8_epi32(q[t]), eight),
							c = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(q[t], 8)), eight);

				_mm256_storeu_ps(out + 16 * t, _mm256_mul_ps(d, _mm256_cvtepi32_ps(a)));
				_mm256_storeu_ps(out + 16 * t + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(c)));
			}
		}
	}
}
