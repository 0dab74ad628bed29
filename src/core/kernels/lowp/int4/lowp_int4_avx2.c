/*
 * lowp_int4_avx2.c — the int4 matrix-vector kernel for AVX2 + FMA + F16C
 * over the interleaved blocks (include/tfm/lowp.h): a group's 16 columns
 * in two halves of 8, each the 8 lanes of a 256-bit register.  Per block
 * (both halves, so each cache line is read once) and half, 4 × 32 bytes of nibbles masked and shifted into 4 low and 4
 * high operands (4 k a lane); per row, 8 vpmaddubsw (the unsigned nibbles,
 * 0-15, times the signed activation bytes broadcast 4 at a time) added in
 * 16 bits (each at most 8·2·15·127 = 30,480: no saturation) and one
 * vpmaddwd against ones give each column's exact block sum, then one fma
 * adds it, scaled by dw · da, into the column's fp32 sum: the reference's
 * order (lowp_int4_ref.c), bit for bit.  Compiled for that set by
 * function attribute only; lowp_dispatch.c calls it only on CPUs with all
 * three.
 */
#include <immintrin.h>
#include <string.h>

#include "../lowp_internal.h"
#include "lowp_int4_kernel.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* 4 activation bytes broadcast to every lane */
TARGET INLINE __m256i
bcast4(const int8_t *p)
{
	int32_t		v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* H rows (1-4) × the 16 columns of group g, in two halves of 8 */
TARGET INLINE void
int4_group(const int H, const lowp_int4_act *a, const tfm_int4_weights *W, int g,
		   float alpha, float beta, float *C, ptrdiff_t ldc)
{
	const int	kb = a->kb,
				j = g * TFM_INT4_GROUP,
				n = W->N - j < TFM_INT4_GROUP ? W->N - j : TFM_INT4_GROUP;
	const __m256i low = _mm256_set1_epi8(0x0F),
				ones = _mm256_set1_epi16(1);
	__m256		acc[4][2];

#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_ps();
	for (int b = 0; b < kb; b++)
	{
		size_t		gb = (size_t) g * kb + b;

#pragma GCC unroll 2
		for (int hf = 0; hf < 2; hf++)
		{
			const uint8_t *nib = W->data + gb * LOWP_INT4_GROUP_BLOCK_BYTES + 32 * hf;
			__m256		dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *) (W->scales + gb * TFM_INT4_GROUP + 8 * hf)));
			__m256i		lo[4],
						hi[4];

#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
			{
				__m256i		z = _mm256_load_si256((const __m256i *) (nib + 64 * i));

				lo[i] = _mm256_and_si256(z, low);
				hi[i] = _mm256_and_si256(_mm256_srli_epi16(z, 4), low);
			}
#pragma GCC unroll 4
			for (int r = 0; r < H; r++)
			{
				const size_t rb = (size_t) r * kb + b;
				const int8_t *qa = a->q + rb * TFM_INT4_BLOCK;
				__m256i		s16 = _mm256_maddubs_epi16(lo[0], bcast4(qa)),
							s;

#pragma GCC unroll 4
				for (int i = 0; i < 4; i++)
				{
					if (i > 0)
						s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo[i], bcast4(qa + 4 * i)));
					s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi[i], bcast4(qa + 16 + 4 * i)));
				}
				s = _mm256_add_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(a->corr[rb]));
				acc[r][hf] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(a->da[rb])),
											 acc[r][hf]);
			}
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < H; r++)
	{
		float	   *c = C + (size_t) r * ldc + j;
		float		v[16];

		_mm256_storeu_ps(v, acc[r][0]);
		_mm256_storeu_ps(v + 8, acc[r][1]);
		for (int l = 0; l < n; l++)
			c[l] = beta == 0.0f ? alpha * v[l] : __builtin_fmaf(alpha, v[l], beta * c[l]);
	}
}

LOWP_INT4_KERNEL(TARGET, lowp_int4_avx2_kernel, int4_group)
