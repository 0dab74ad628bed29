/*
 * lowp_int4_avx2.c — the int4 matrix-vector kernel for AVX2 + FMA + F16C
 * (lowp_int4_gemv.h's loop), the 16 lanes of a quad of blocks in two
 * 256-bit registers (blocks 0-1, 2-3): per register two vpmaddubsw (the
 * weight's unsigned nibbles, 0-15, times the signed activation bytes, the
 * low nibbles' and the high ones'), their 16-bit sums added (each at most
 * 4·15·127 = 7,620: no saturation), one vpmaddwd against ones, plus the
 * row's corrections: the exact 8-product lane sums of the reference; and
 * the batched product's dequantization into fp32 tiles (also the AVX-512
 * path's).  Compiled for that set by function attribute only;
 * lowp_dispatch.c calls it only on CPUs with all three.
 */
#include <immintrin.h>
#include <string.h>

#include "lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* one column a step (a quad's nibbles and scales take 6 of the 16 registers) */
#define INT4_COLS(H) 1

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
v16_unpack(__m256i b01, __m256i b23)
{
	return (V16I) {b01, b23};
}

TARGET INLINE V16F
v16_scales(__m128 f)
{
	__m256		w = _mm256_castps128_ps256(f);

	return (V16F) {_mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)),
		_mm256_permutevar8x32_ps(w, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3))};
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

TARGET INLINE V16F
v16_load_f(const float *p)
{
	return (V16F) {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
}

/* 8 lanes: the low and high nibbles' pair sums added in 16 bits, then the pairs of those */
TARGET INLINE __m256i
v8_dot(__m256i corr, __m256i lo, __m256i hi, const int8_t *qlo, const int8_t *qhi)
{
	__m256i		s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *) qlo)),
									 _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *) qhi)));

	return _mm256_add_epi32(corr, _mm256_madd_epi16(s, _mm256_set1_epi16(1)));
}

TARGET INLINE V16I
v16_dot(V16I corr, V16I lo, V16I hi, const int8_t *q)
{
	return (V16I) {v8_dot(corr.a, lo.a, hi.a, q, q + 64), v8_dot(corr.b, lo.b, hi.b, q + 32, q + 96)};
}

TARGET INLINE V16F
v16_step(V16F acc, V16I s, V16F dw, V16F da)
{
	return (V16F) {_mm256_fmadd_ps(_mm256_cvtepi32_ps(s.a), _mm256_mul_ps(dw.a, da.a), acc.a),
		_mm256_fmadd_ps(_mm256_cvtepi32_ps(s.b), _mm256_mul_ps(dw.b, da.b), acc.b)};
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
