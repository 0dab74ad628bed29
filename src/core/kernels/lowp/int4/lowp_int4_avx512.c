/*
 * lowp_int4_avx512.c — the int4 matrix-vector kernel for AVX512_VNNI over
 * the interleaved blocks (include/tfm/lowp.h): a group's 16 columns are
 * the 16 lanes of a 512-bit register.  Per block, its 4 × 64 bytes of
 * nibbles give 4 low-nibble and 4 high-nibble operands (4 k a lane each);
 * per row, 8 vpdpbusd against the row's activation bytes broadcast 4 at a
 * time sum each column's block exactly (the high nibbles kept in place,
 * ×16, and the sum shifted back: exact), then one fma per row and block
 * adds it, scaled by dw · da, into the column's fp32 sum: the reference's
 * order (lowp_int4_ref.c), bit for bit.  One group at a time: two
 * groups' streams in flight read memory a third slower here (Zen 4,
 * bench_lowp: 16 against 23 GB/s for one row), software prefetching
 * did not help.
 */
#include <immintrin.h>
#include <string.h>

#include "../lowp_internal.h"
#include "lowp_int4_kernel.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* 4 activation bytes broadcast to every lane */
TARGET INLINE __m512i
bcast4(const int8_t *p)
{
	int32_t		v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/* H rows (1-4) × the 16 columns of group g (H a constant after inlining) */
TARGET INLINE void
int4_group(const int H, const lowp_int4_act *a, const tfm_int4_weights *W,
		   int g, float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb,
				j = g * TFM_INT4_GROUP,
				n = W->N - j < TFM_INT4_GROUP ? W->N - j : TFM_INT4_GROUP;
	const __m512i low = _mm512_set1_epi8(0x0F),
				high = _mm512_set1_epi8((char) 0xF0);
	const __mmask16 m = (__mmask16) ((1u << n) - 1);
	__m512		acc[4];

#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
		acc[r] = _mm512_setzero_ps();
	for (int b = 0; b < kb; b++)
	{
		size_t		gb = (size_t) g * kb + b;
		const uint8_t *nib = W->data + gb * LOWP_INT4_GROUP_BLOCK_BYTES;
		__m512		dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *) (W->scales + gb * TFM_INT4_GROUP)));
		__m512i		lo[4],
					hi[4];

#pragma GCC unroll 4
		for (int i = 0; i < 4; i++)
		{
			__m512i		z = _mm512_load_si512(nib + 64 * i);

			lo[i] = _mm512_and_si512(z, low);
			hi[i] = _mm512_and_si512(z, high);
		}
#pragma GCC unroll 4
		for (int r = 0; r < H; r++)
		{
			const size_t rb = (size_t) r * kb + b;
			const int8_t *qa = a->q + rb * TFM_INT4_BLOCK;
			__m512i		sl = _mm512_set1_epi32(a->corr[rb]),
						sh = _mm512_setzero_si512();

#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
			{
				sl = _mm512_dpbusd_epi32(sl, lo[i], bcast4(qa + 4 * i));
				sh = _mm512_dpbusd_epi32(sh, hi[i], bcast4(qa + 16 + 4 * i));
			}
			sl = _mm512_add_epi32(sl, _mm512_srai_epi32(sh, 4));
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sl), _mm512_mul_ps(dw, _mm512_set1_ps(a->da[rb])),
									 acc[r]);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
	{
		float	   *c = C + (size_t) r * ldc + j;
		__m512		v = beta == 0.0f ? _mm512_mul_ps(_mm512_set1_ps(alpha), acc[r]) :
			_mm512_fmadd_ps(_mm512_set1_ps(alpha), acc[r],
							_mm512_mul_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m, c)));

		_mm512_mask_storeu_ps(c, m, v);
	}
}

LOWP_INT4_KERNEL(TARGET, lowp_int4_avx512_kernel, int4_group)
