/*
 * bf16_round_avx512.h — fp32 to bf16 in AVX-512 registers, bit for bit
 * tfm_bf16_from_float (include/tfm/lowp.h): the AMX packing
 * (lowp_bf16_amx.c) and the AVX512_BF16 panel packing (lowp_bf16_avx512.c)
 * round with it.  Include only in files compiled for x86-64; call only
 * where the CPU has AVX-512 F and BW.
 */
#ifndef TFM_BF16_ROUND_AVX512_H
#define TFM_BF16_ROUND_AVX512_H

#include <immintrin.h>

/*
 * 16 floats to bf16 exactly as tfm_bf16_from_float (round to nearest even,
 * NaN made quiet), in the low halves of 32-bit lanes.
 */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline __m512i
bf16_round16(__m512 x)
{
	__m512i		u = _mm512_castps_si512(x),
				r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF),
																		  _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)))), 16);
	__mmask16	nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
											  _mm512_set1_epi32(0x7F800000));

	return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}

#endif							/* TFM_BF16_ROUND_AVX512_H */
