/*
 * lowp_int4_avx512.c — the int4 matrix-vector kernel for AVX512_VNNI
 * (lowp_int4_gemv.h's loop), the 16 lanes of a quad of blocks in one
 * 512-bit register: two vpdpbusd per quad and row (the low nibbles, then
 * the high ones, unsigned, times the signed activation bytes, four a lane
 * each) add to the row's corrections — the exact lane sums of the AVX2
 * path and the reference, in the same order.
 */
#include <immintrin.h>

#include "lowp_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
#define INT4_COLS(H) ((H) <= 2 ? 4 : 2)

typedef __m512 V16F;
typedef __m512i V16I;

TARGET INLINE V16I
v16_unpack(__m256i b01, __m256i b23)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(b01), b23, 1);
}

TARGET INLINE V16F
v16_scales(__m128 f)
{
	return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
								 _mm512_castps128_ps512(f));
}

TARGET INLINE V16F
v16_zero(void)
{
	return _mm512_setzero_ps();
}

TARGET INLINE V16I
v16_load_i(const int32_t *p)
{
	return _mm512_loadu_si512(p);
}

TARGET INLINE V16F
v16_load_f(const float *p)
{
	return _mm512_loadu_ps(p);
}

TARGET INLINE V16I
v16_dot(V16I corr, V16I lo, V16I hi, const int8_t *q)
{
	return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(corr, lo, _mm512_loadu_si512(q)), hi,
							   _mm512_loadu_si512(q + 64));
}

TARGET INLINE V16F
v16_step(V16F acc, V16I s, V16F dw, V16F da)
{
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, da), acc);
}

TARGET INLINE __m256
v16_fold(V16F acc)
{
	return _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
}

#include "lowp_int4_gemv.h"

LOWP_INT4_KERNEL(lowp_int4_avx512_kernel)
