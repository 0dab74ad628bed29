/*
 * kquant_avx2.c — GGUF's quantized blocks run as they are, on AVX2 + FMA
 * + F16C: each block's integer sums by vpmaddubsw (the unsigned weight
 * values, at most 63, times the signed activation bytes: pairs at most
 * 2·63·127 = 16,002, no saturation) and vpmaddwd against the sub-blocks'
 * scales, summed exactly in int32 lanes, then the reference's float step
 * (kquant_internal.h), so every sum equals kquant_ref.c's bit for bit.
 * Q6_K's −32 offset is taken out as 32 · Σ scale · bsums; Q8_0 signs the
 * activations by the weights (|w| ≤ 128, |a| ≤ 127: pairs ≤ 32,512).
 * Each weight block is unpacked once for up to KQ_ROWS activation rows
 * (prefill's rows share it; decoding is one row).
 * Compiled for that set by function attribute only; kquant_ref.c calls
 * it only where lowp_int4_avx2() says the CPU has all three.
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* a: rows of activation blocks, ab bytes apart */
#define ACT_K(a, r, i) ((const tfm_block_q8_K *) ((a) + (size_t) (r) * ab) + (i))
#define ACT_0(a, r, i) ((const tfm_block_q8_0 *) ((a) + (size_t) (r) * ab) + (i))

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

TARGET INLINE void
rows_q45_k(const int five, const int R, int n, const uint8_t *w, const uint8_t *a, size_t ab,
		   float *out)
{
	const int	bytes = five ? 176 : 144;
	const __m256i m4 = _mm256_set1_epi8(0x0F),
				one = _mm256_set1_epi8(1);
	float		sum[KQ_ROWS] = {0};

	for (int i = 0; i < n / TFM_QK_K; i++, w += bytes)
	{
		const uint8_t *q = w + (five ? 48 : 16);
		uint8_t		sc[8],
					mn[8];
		__m256i		acc[KQ_ROWS],
					hb = five ? _mm256_loadu_si256((const __m256i *) (w + 16)) : _mm256_setzero_si256(),
					mins;
		const float d = kq_half(w),
					dmin = kq_half(w + 2);

		kq_scales_mins(w + 4, sc, mn);
		mins = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3],
								 mn[4], mn[4], mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
		for (int r = 0; r < R; r++)
			acc[r] = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++, q += 32)
		{
			__m256i		x = _mm256_loadu_si256((const __m256i *) q),
						lo = _mm256_and_si256(x, m4),
						hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
			const __m256i s0 = _mm256_set1_epi16(sc[2 * c]),
						s1 = _mm256_set1_epi16(sc[2 * c + 1]);

			if (five)
			{
				__m256i		bl = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one),
							bh = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one);

				lo = _mm256_or_si256(lo, _mm256_slli_epi16(bl, 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi16(bh, 4));
			}
			for (int r = 0; r < R; r++)
			{
				const int8_t *q8 = ACT_K(a, r, i)->qs + 64 * c;

				acc[r] = _mm256_add_epi32(acc[r], dot32(lo, q8, s0));
				acc[r] = _mm256_add_epi32(acc[r], dot32(hi, q8 + 32, s1));
			}
		}
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_K *y = ACT_K(a, r, i);
			int32_t		msum = hsum(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *) y->bsums), mins));

			sum[r] = kq_step_k(sum[r], d * y->d, hsum(acc[r]), dmin * y->d, msum);
		}
	}
	for (int r = 0; r < R; r++)
		out[r] = sum[r];
}

TARGET INLINE void
rows_q6_k(const int R, int n, const uint8_t *w, const uint8_t *a, size_t ab, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F),
				m2 = _mm256_set1_epi8(3);
	float		sum[KQ_ROWS] = {0};

	for (int i = 0; i < n / TFM_QK_K; i++, w += 210)
	{
		const uint8_t *ql = w,
				   *qh = w + 128;
		const int8_t *sc = (const int8_t *) (w + 192);
		const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) sc));
		const float d = kq_half(w + 208);
		__m256i		acc[KQ_ROWS];

		for (int r = 0; r < R; r++)
			acc[r] = _mm256_setzero_si256();
		for (int c = 0; c < 2; c++, ql += 64, qh += 32, sc += 8)
		{
			__m256i		la = _mm256_loadu_si256((const __m256i *) ql),
						lb = _mm256_loadu_si256((const __m256i *) (ql + 32)),
						h = _mm256_loadu_si256((const __m256i *) qh);
			__m256i		u[4],
						s2[4];

			u[0] = _mm256_or_si256(_mm256_and_si256(la, m4),
								   _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
			u[1] = _mm256_or_si256(_mm256_and_si256(lb, m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
			u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
			u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
								   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
			for (int k = 0; k < 4; k++)
				s2[k] = two_scales(sc[2 * k], sc[2 * k + 1]);
			for (int r = 0; r < R; r++)
			{
				const int8_t *q8 = ACT_K(a, r, i)->qs + 128 * c;

				for (int k = 0; k < 4; k++)
					acc[r] = _mm256_add_epi32(acc[r], dot32(u[k], q8 + 32 * k, s2[k]));
			}
		}
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_K *y = ACT_K(a, r, i);
			int32_t		off = hsum(_mm256_madd_epi16(scales, _mm256_loadu_si256((const __m256i *) y->bsums)));

			sum[r] = kq_step(sum[r], hsum(acc[r]) - 32 * off, d * y->d);
		}
	}
	for (int r = 0; r < R; r++)
		out[r] = sum[r];
}

TARGET INLINE void
rows_q8_0(const int R, int n, const uint8_t *w, const uint8_t *a, size_t ab, float *out)
{
	const __m256i ones = _mm256_set1_epi16(1);
	float		sum[KQ_ROWS] = {0};

	for (int i = 0; i < n / TFM_QK8_0; i++, w += 34)
	{
		const __m256i x = _mm256_loadu_si256((const __m256i *) (w + 2)),
					ux = _mm256_sign_epi8(x, x);
		const float d = kq_half(w);

		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_0 *y = ACT_0(a, r, i);
			__m256i		p = _mm256_maddubs_epi16(ux, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *) y->qs), x));

			sum[r] = kq_step(sum[r], hsum(_mm256_madd_epi16(p, ones)), d * tfm_fp16_to_float(y->d));
		}
	}
	for (int r = 0; r < R; r++)
		out[r] = sum[r];
}

TARGET void
kq_rows_avx2(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab, int R, float *out)
{
#define Q4K(r) rows_q45_k(0, r, n, w, a, ab, out)
#define Q5K(r) rows_q45_k(1, r, n, w, a, ab, out)
#define Q6K(r) rows_q6_k(r, n, w, a, ab, out)
#define Q80(r) rows_q8_0(r, n, w, a, ab, out)
	if (R >= 1 && R <= KQ_ROWS)
		switch (type)
		{
			case KQ_Q4_K:
				KQ_ROWS_CASES(Q4K);
			case KQ_Q5_K:
				KQ_ROWS_CASES(Q5K);
			case KQ_Q6_K:
				KQ_ROWS_CASES(Q6K);
			case KQ_Q8_0:
				KQ_ROWS_CASES(Q80);
		}
#undef Q4K
#undef Q5K
#undef Q6K
#undef Q80
	for (int r = 0; r < R; r++)
		out[r] = tfm_kq_dot_ref(type, n, w, a + (size_t) r * ab);
}

TARGET float
kq_dot_avx2(uint32_t type, int n, const uint8_t *w, const void *a)
{
	float		v;

	kq_rows_avx2(type, n, w, a, 0, 1, &v);
	return v;
}
