/*
 * lowp_int4_avx512.c — the int4 matrix-vector kernel for AVX512_VNNI
 * (lowp_int4_gemv.h's loop on 256-bit vectors, AVX512VL): one vpdpbusd
 * per block and row adds the weight's unsigned nibbles times the signed
 * activation bytes, four a lane, to the row's corrections — the same
 * exact lane sums as the AVX2 path and the reference, in the same order.
 */
#include "lowp_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
#define INT4_LANES(u, q, corr) _mm256_dpbusd_epi32((corr), (u), (q))

#include "lowp_int4_gemv.h"

LOWP_INT4_KERNEL(lowp_int4_avx512_kernel)
