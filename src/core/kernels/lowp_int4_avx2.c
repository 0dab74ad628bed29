/*
 * lowp_int4_avx2.c — the int4 matrix-vector kernel for AVX2 + FMA + F16C
 * (lowp_int4_gemv.h's loop), the 16 lanes of a pair of blocks in two
 * 256-bit registers: the lane sums by vpmaddubsw (the weight's unsigned
 * nibbles, 0-15, times the signed activation bytes: each pair of products
 * at most 2·15·127, no saturation) and vpmaddwd against ones, plus the
 * row's corrections.  Compiled for that set by function attribute only;
 * lowp_dispatch.c calls it only on CPUs with all three.
 */
#include <immintrin.h>

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

TARGET INLINE V16F
v16_load_f(const float *p)
{
	return (V16F) {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
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
