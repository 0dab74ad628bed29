/*
 * lowp_int4_avx2.c — the int4 matrix-vector kernel for AVX2 + FMA + F16C
 * (lowp_int4_gemv.h's loop): the lane sums by vpmaddubsw (the weight's
 * unsigned nibbles, 0-15, times the signed activation bytes: each pair at
 * most 2·15·127, no saturation) and vpmaddwd against ones, plus the row's
 * corrections.  Compiled for that set by function attribute only;
 * lowp_dispatch.c calls it only on CPUs with all three.
 */
#include "lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
#define INT4_LANES(u, q, corr) \
	_mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16((u), (q)), _mm256_set1_epi16(1)), (corr))

#include "lowp_int4_gemv.h"

LOWP_INT4_KERNEL(lowp_int4_avx2_kernel)
