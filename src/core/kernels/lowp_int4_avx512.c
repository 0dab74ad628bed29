/*
 * lowp_int4_avx512.c — the int4 matrix-vector kernel for AVX512_VNNI and
 * AVX512_VBMI (lowp_int4_gemv.h's loop), the 16 lanes of a quad of blocks
 * in one 512-bit register, its nibbles and scales picked out of the
 * blocks by one byte and one word permute: two vpdpbusd per quad and row (the low nibbles, then
 * the high ones, unsigned, times the signed activation bytes, four a lane
 * each) add to the row's corrections — the exact lane sums of the AVX2
 * path and the reference, in the same order.
 */
#include <immintrin.h>

#include "lowp_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
#define INT4_COLS(H) ((H) <= 2 ? 4 : 2)

typedef __m512 V16F;
typedef __m512i V16I;

/*
 * The 64 bytes of nibbles of the 4 blocks (at 18j + 2 .. 18j + 17) picked
 * out of x's 72 bytes by one vpermt2b (AVX512_VBMI), their 4 scales (the
 * words at 0, 18, 36, 54) by one vpermw
 */
TARGET INLINE void
v16_quad(const uint8_t *x, V16I *lo, V16I *hi, V16F *dw)
{
	/* byte k: block k/16's byte k%16, at 18(k/16) + 2 + k%16 of x; past 63 from the load at x + 8 */
#define NIB(k) ((18 * ((k) / 16) + 2 + (k) % 16) < 64 ? (18 * ((k) / 16) + 2 + (k) % 16) : \
				64 + (18 * ((k) / 16) + 2 + (k) % 16) - 8)
#define NIB8(k) NIB(k), NIB(k + 1), NIB(k + 2), NIB(k + 3), NIB(k + 4), NIB(k + 5), NIB(k + 6), NIB(k + 7)
	static const uint8_t idx[64] __attribute__((aligned(64))) = {
		NIB8(0), NIB8(8), NIB8(16), NIB8(24), NIB8(32), NIB8(40), NIB8(48), NIB8(56)
	};
#undef NIB8
#undef NIB
	const __m512i low = _mm512_set1_epi8(0x0F);
	__m512i		a = _mm512_loadu_si512(x),
				b = _mm512_loadu_si512(x + 8),
				r = _mm512_permutex2var_epi8(a, _mm512_load_si512(idx), b),
				s = _mm512_permutexvar_epi16(_mm512_setr_epi32(9 << 16, 27 << 16 | 18, 0, 0, 0, 0, 0, 0,
															  0, 0, 0, 0, 0, 0, 0, 0), a);

	*lo = _mm512_and_si512(r, low);
	*hi = _mm512_and_si512(_mm512_srli_epi16(r, 4), low);
	*dw = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
								_mm512_castps128_ps512(_mm_cvtph_ps(_mm512_castsi512_si128(s))));
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
