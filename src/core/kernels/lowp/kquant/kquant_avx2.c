/*
 * kquant_avx2.c — GGUF's quantized blocks run as they are, on AVX2 + FMA
 * + F16C: each block's integer sums by vpmaddubsw (the unsigned weight
 * values, at most 63, times the signed activation bytes: pairs at most
 * 2·63·127 = 16,002, no saturation) and vpmaddwd against the sub-blocks'
 * scales, summed exactly in int32 lanes, then the reference's float step
 * (kquant_internal.h), so every sum equals kquant_ref.c's bit for bit.
 * Q6_K's −32 offset is taken out as 32 · Σ scale · bsums; Q8_0 signs the
 * activations by the weights (|w| ≤ 128, |a| ≤ 127: pairs ≤ 32,512).
 * Compiled for that set by function attribute only; kquant_ref.c calls
 * it only where lowp_int4_avx2() says the CPU has all three.
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

TARGET INLINE int32_t
hsum(__m256i v)
{
	__m128i		s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(s);
}

/* 16 int16 lanes: the low 8 of scale s0, the high 8 of s1 */
TARGET INLINE __m256i
two_scales(int s0, int s1)
{
	return _mm256_setr_m128i(_mm_set1_epi16((int16_t) s0), _mm_set1_epi16((int16_t) s1));
}

/* Σ over 32 bytes of u·q8 (u unsigned, small) times one scale, in int32 lanes */
TARGET INLINE __m256i
dot32(__m256i u, const int8_t *q8, __m256i scale16)
{
	__m256i		p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *) q8));

	return _mm256_madd_epi16(p, scale16);
}

TARGET static float
dot_q45_k(int five, int n, const uint8_t *w, const tfm_block_q8_K *a)
{
	const int	bytes = five ? 176 : 144;
	const __m256i m4 = _mm256_set1_epi8(0x0F),
				one = _mm256_set1_epi8(1);
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK_K; i++, w += bytes)
	{
		const uint8_t *q = w + (five ? 48 : 16);
		const int8_t *q8 = a[i].qs;
		uint8_t		sc[8],
					mn[8];
		__m256i		acc = _mm256_setzero_si256(),
					hb = five ? _mm256_loadu_si256((const __m256i *) (w + 16)) : _mm256_setzero_si256();
		__m256i		bs = _mm256_loadu_si256((const __m256i *) a[i].bsums),
					mins;
		int32_t		msum;

		kq_scales_mins(w + 4, sc, mn);
		mins = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3],
								 mn[4], mn[4], mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
		msum = hsum(_mm256_madd_epi16(bs, mins));
		for (int c = 0; c < 4; c++, q += 32, q8 += 64)
		{
			__m256i		x = _mm256_loadu_si256((const __m256i *) q),
						lo = _mm256_and_si256(x, m4),
						hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);

			if (five)
			{
				__m256i		bl = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one),
							bh = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one);

				lo = _mm256_or_si256(lo, _mm256_slli_epi16(bl, 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi16(bh, 4));
			}
			acc = _mm256_add_epi32(acc, dot32(lo, q8, _mm256_set1_epi16(sc[2 * c])));
			acc = _mm256_add_epi32(acc, dot32(hi, q8 + 32, _mm256_set1_epi16(sc[2 * c + 1])));
		}
		sum = kq_step_k(sum, kq_half(w) * a[i].d, hsum(acc), kq_half(w + 2) * a[i].d, msum);
	}
	return sum;
}

TARGET static float
dot_q6_k(int n, const uint8_t *w, const tfm_block_q8_K *a)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F),
				m2 = _mm256_set1_epi8(3);
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK_K; i++, w += 210)
	{
		const uint8_t *ql = w,
				   *qh = w + 128;
		const int8_t *sc = (const int8_t *) (w + 192);
		const int8_t *q8 = a[i].qs;
		__m256i		acc = _mm256_setzero_si256();
		__m256i		scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) sc)),
					bs = _mm256_loadu_si256((const __m256i *) a[i].bsums);
		int32_t		off = hsum(_mm256_madd_epi16(scales, bs));

		for (int c = 0; c < 2; c++, ql += 64, qh += 32, sc += 8, q8 += 128)
		{
			__m256i		la = _mm256_loadu_si256((const __m256i *) ql),
						lb = _mm256_loadu_si256((const __m256i *) (ql + 32)),
						h = _mm256_loadu_si256((const __m256i *) qh);
			__m256i		u[4];

			u[0] = _mm256_or_si256(_mm256_and_si256(la, m4),
								   _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
			u[1] = _mm256_or_si256(_mm256_and_si256(lb, m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
			u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
			u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
			for (int k = 0; k < 4; k++)
				acc = _mm256_add_epi32(acc, dot32(u[k], q8 + 32 * k, two_scales(sc[2 * k], sc[2 * k + 1])));
		}
		sum = kq_step(sum, hsum(acc) - 32 * off, kq_half(w + 208) * a[i].d);
	}
	return sum;
}

TARGET static float
dot_q8_0(int n, const uint8_t *w, const tfm_block_q8_0 *a)
{
	const __m256i ones = _mm256_set1_epi16(1);
	float		sum = 0.0f;

	for (int i = 0; i < n / TFM_QK8_0; i++, w += 34)
	{
		__m256i		x = _mm256_loadu_si256((const __m256i *) (w + 2)),
					y = _mm256_loadu_si256((const __m256i *) a[i].qs),
					p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));

		sum = kq_step(sum, hsum(_mm256_madd_epi16(p, ones)), kq_half(w) * tfm_fp16_to_float(a[i].d));
	}
	return sum;
}

TARGET float
kq_dot_avx2(uint32_t type, int n, const uint8_t *w, const void *a)
{
	switch (type)
	{
		case KQ_Q4_K:
			return dot_q45_k(0, n, w, a);
		case KQ_Q5_K:
			return dot_q45_k(1, n, w, a);
		case KQ_Q6_K:
			return dot_q6_k(n, w, a);
		case KQ_Q8_0:
			return dot_q8_0(n, w, a);
	}
	return tfm_kq_dot_ref(type, n, w, a);
}
