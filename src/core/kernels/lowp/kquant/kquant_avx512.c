/*
 * kquant_avx512.c — GGUF's quantized blocks run as they are, on AVX-512
 * VNNI, for Q6_K and Q8_0: each weight block is unpacked once into
 * unsigned bytes (64 at a time) and multiplied with up to KQ_ROWS
 * activation rows: vpmaddubsw (the unsigned weight values, at most 63,
 * times the signed activation bytes: pairs at most 2·63·127 = 16,002, no
 * saturation), then vpdpwssd against the sub-blocks' scales into int32
 * lanes (exact), then the reference's float step (kquant_internal.h) per
 * row and block, so every sum equals kquant_ref.c's and kquant_avx2.c's
 * bit for bit.  Q6_K's −32 offset is taken out as 32 · Σ scale · bsums;
 * Q8_0 signs the activations by the weights.
 *
 * Q4_K and Q5_K go to kquant_avx2.c's kernel: their 64 bytes of nibbles
 * come from two 32-byte halves that feed activations 64 bytes apart, and
 * the 512-bit version ran them at 0.85–1.06× AVX2's speed, where Q6_K ran
 * at 1.0–1.14× (bench/bench_kquant, Sapphire Rapids, quiet, 2 December
 * 2026).  Compiled for AVX-512 by function attribute only; kquant_gemm.c
 * calls it only where lowp_int4_fast() says the CPU has it.
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define INLINE static inline __attribute__((always_inline))

/* a: KQ_ROWS rows of activation blocks, ab bytes apart */
#define ACT_K(a, r, i) ((const tfm_block_q8_K *) ((a) + (size_t) (r) * ab) + (i))
#define ACT_0(a, r, i) ((const tfm_block_q8_0 *) ((a) + (size_t) (r) * ab) + (i))

TARGET INLINE __m512i
nibbles(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* int16 lane l of 64 bytes of values belongs to scale l / 8 of their four */
static const int16_t kq_scale_group[32] = {
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3
};

TARGET INLINE void
rows_q6_k(int n, const uint8_t *w, const uint8_t *a, size_t ab, const int R, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F),
				m2 = _mm256_set1_epi8(3);
	const __m512i group = _mm512_loadu_si512(kq_scale_group);
	float		sum[KQ_ROWS] = {0};

	for (int i = 0; i < n / TFM_QK_K; i++, w += 210)
	{
		const uint8_t *ql = w,
				   *qh = w + 128;
		const int8_t *sc = (const int8_t *) (w + 192);
		const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) sc));
		const __m512i scales = _mm512_zextsi256_si512(scales16);
		const float d = kq_half(w + 208);
		__m512i		acc[KQ_ROWS];

		for (int r = 0; r < R; r++)
			acc[r] = _mm512_setzero_si512();
		for (int c = 0; c < 2; c++, ql += 64, qh += 32)
		{
			__m256i		la = _mm256_loadu_si256((const __m256i *) ql),
						lb = _mm256_loadu_si256((const __m256i *) (ql + 32)),
						h = _mm256_loadu_si256((const __m256i *) qh);
			__m256i		u0 = _mm256_or_si256(_mm256_and_si256(la, m4),
											 _mm256_slli_epi16(_mm256_and_si256(h, m2), 4)),
						u1 = _mm256_or_si256(_mm256_and_si256(lb, m4),
											 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4)),
						u2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
											 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4)),
						u3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
											 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
			/* 16 values a scale: eight int16 lanes each */
			const __m512i s01 = _mm512_permutexvar_epi16(_mm512_add_epi16(group, _mm512_set1_epi16((short) (8 * c))), scales),
						s23 = _mm512_permutexvar_epi16(_mm512_add_epi16(group, _mm512_set1_epi16((short) (8 * c + 4))), scales);
			const __m512i v01 = nibbles(u0, u1),
						v23 = nibbles(u2, u3);

			for (int r = 0; r < R; r++)
			{
				const int8_t *q8 = ACT_K(a, r, i)->qs + 128 * c;

				acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(v01, _mm512_loadu_si512(q8)), s01);
				acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(v23, _mm512_loadu_si512(q8 + 64)), s23);
			}
		}
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_K *y = ACT_K(a, r, i);
			__m256i		bs = _mm256_loadu_si256((const __m256i *) y->bsums);
			int32_t		off = _mm512_reduce_add_epi32(_mm512_zextsi256_si512(_mm256_madd_epi16(scales16, bs)));

			sum[r] = kq_step(sum[r], _mm512_reduce_add_epi32(acc[r]) - 32 * off, d * y->d);
		}
	}
	for (int r = 0; r < R; r++)
		out[r] = sum[r];
}

TARGET INLINE void
rows_q8_0(int n, const uint8_t *w, const uint8_t *a, size_t ab, const int R, float *out)
{
	float		sum[KQ_ROWS] = {0};

	for (int i = 0; i < n / TFM_QK8_0; i++, w += 34)
	{
		const __m256i x = _mm256_loadu_si256((const __m256i *) (w + 2)),
					ux = _mm256_sign_epi8(x, x);
		const float d = kq_half(w);

		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_0 *y = ACT_0(a, r, i);
			__m256i		p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ux,
												_mm256_sign_epi8(_mm256_loadu_si256((const __m256i *) y->qs), x));

			sum[r] = kq_step(sum[r], _mm512_reduce_add_epi32(_mm512_zextsi256_si512(p)),
							 d * tfm_fp16_to_float(y->d));
		}
	}
	for (int r = 0; r < R; r++)
		out[r] = sum[r];
}

TARGET void
kq_rows_avx512(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab, int R, float *out)
{
#define Q6K(r) rows_q6_k(n, w, a, ab, r, out)
#define Q80(r) rows_q8_0(n, w, a, ab, r, out)
	if (R >= 1 && R <= KQ_ROWS)
		switch (type)
		{
			case KQ_Q4_K:
			case KQ_Q5_K:
				/* the AVX2 kernel: measured faster here (see the opening comment) */
				kq_rows_avx2(type, n, w, a, ab, R, out);
				return;
			case KQ_Q6_K:
				KQ_ROWS_CASES(Q6K);
			case KQ_Q8_0:
				KQ_ROWS_CASES(Q80);
		}
#undef Q6K
#undef Q80
	for (int r = 0; r < R; r++)
		out[r] = tfm_kq_dot_ref(type, n, w, a + (size_t) r * ab);
}
