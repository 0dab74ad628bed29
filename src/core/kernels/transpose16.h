/*
 * transpose16.h — a 16 × 16 transpose of 32-bit values held in 16 zmm
 * registers (unpack, then 128-bit lane shuffles), for the AVX-512 kernels
 * that read an operand across its rows: the AMX packing of a transposed A
 * and attention's copy of Kᵀ.  Call only where the CPU has AVX-512.
 */
#ifndef TFM_TRANSPOSE16_H
#define TFM_TRANSPOSE16_H

#include <immintrin.h>

/* v[j] lane r → v[r] lane j, 16 × 16 32-bit values */
__attribute__((target("avx512f"))) static inline void
transpose16(__m512i v[16])
{
	__m512i		t[16];

	for (int i = 0; i < 16; i += 2)
	{
		t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
	}
	for (int i = 0; i < 16; i += 4)
	{
		v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	/* v[4q + s] holds rows 4q..4q+3's lanes s, s+4, s+8, s+12 in 128-bit blocks */
	for (int i = 0; i < 4; i++)
	{
		t[i] = _mm512_shuffle_i32x4(v[i], v[i + 4], 0x88);
		t[i + 4] = _mm512_shuffle_i32x4(v[i], v[i + 4], 0xDD);
		t[i + 8] = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0x88);
		t[i + 12] = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0xDD);
	}
	for (int i = 0; i < 4; i++)
	{
		v[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
		v[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xDD);
		v[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
		v[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xDD);
	}
}

#endif
