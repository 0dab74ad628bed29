/*
 * kquant_avx512.c — GGUF's quantized blocks run as they are, on AVX-512
 * VNNI, for Q4_K, Q5_K, Q6_K and Q8_0: each weight block is unpacked once into
 * unsigned bytes (64 at a time) and multiplied with up to KQ_ROWS
 * activation rows: vpmaddubsw (the unsigned weight values, at most 63,
 * times the signed activation bytes: pairs at most 2·63·127 = 16,002, no
 * saturation), then vpdpwssd against the sub-blocks' scales into int32
 * lanes (exact), then the reference's float step (kquant_internal.h) per
 * row and block, so every sum equals kquant_ref.c's and kquant_avx2.c's
 * bit for bit.  Q6_K's −32 offset is taken out as 32 · Σ scale · bsums;
 * Q8_0 signs the activations by the weights.
 *
 * Q4_K, Q5_K and Q6_K also run as tiles of KQ_ROWS rows × KQ_COLS weight rows
 * (kq_tile_avx512, what tfm_kq_gemm calls): each weight block unpacked
 * once for the rows, each activation block read once for the columns, the
 * columns' integer sums reduced together and their float steps done in
 * one vector, lane by lane the reference's (bench/bench_kquant: 1.9-2.8×
 * the AVX2 kernel at one row, 1.4-1.7× at four, on the Llama-134M shapes,
 * AMD EPYC Zen 4, loaded machine, fastest of the repetitions).  Q5_K runs
 * as Q4_K's tile with each value's fifth bit (qh) or-ed in; its single
 * dot product (tfm_kq_dot) goes to kquant_avx2.c's kernel: a 512-bit
 * version of that one-column form ran at 0.85–1.06× AVX2's speed
 * (bench/bench_kquant, Sapphire Rapids, quiet, 2 December 2026).
 * Compiled for AVX-512 by function attribute only; kquant_gemm.c
 * calls it only where lowp_int4_fast() says the CPU has it.
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))
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

/*
 * Q4_K for a tile of R activation rows × KQ_COLS weight rows (columns of
 * the output), each weight block unpacked once for the R rows and each
 * activation block read once for the KQ_COLS columns: the 128 bytes of
 * nibbles as four 64-byte vectors as they lie (two 32-byte chunks' low
 * nibbles, then their high ones), the activations put in that order once
 * per product (kq_act_order_avx512), vpmaddubsw + vpdpwssd against the
 * sub-blocks' scales (16 int16 lanes each, from the twelve bytes unpacked
 * by 32-bit masks as ggml does), the mins against the activations' pair
 * sums of bsums; then the KQ_COLS columns' integer sums reduced together
 * (vphaddd) and the float step of kquant_internal.h done for the KQ_COLS
 * columns in one 128-bit vector, each lane's operations those of the
 * reference in its order.  Columns past nc repeat the last one and are
 * not stored.
 */
/*
 * vpshufb controls: from the eight int16 scales in every 128-bit lane,
 * scale a in lanes 0-1 (int16 lanes 0-15 of a product: the vector's
 * first 32 values), scale b in lanes 2-3
 */
#define KQ_B2(a) 2 * (a), 2 * (a) + 1
#define KQ_B8(a) KQ_B2(a), KQ_B2(a), KQ_B2(a), KQ_B2(a), KQ_B2(a), KQ_B2(a), KQ_B2(a), KQ_B2(a)
#define KQ_PAIR(a, b) {KQ_B8(a), KQ_B8(a), KQ_B8(b), KQ_B8(b)}
/*
 * groups of KQ_COLS weight rows ahead that the tiles prefetch, into L2
 * (decoding streams the weights from memory, and the tiles' work per byte
 * left no room for the hardware's prefetcher alone).  bench/bench_decode_step
 * (a Llama-134M Q4_K_M step's products streamed from memory, one thread,
 * AMD Zen 4, load 7, fastest of 6 alternated runs; a plain read of the
 * same 71 MB 3.0-3.4 ms): 6.6 ms with the former prefetch (into L1, two
 * groups ahead, Q4_K only), 3.9-4.4 ms with this one, 4.4-4.8 ms with 2
 * groups, 4.3-4.4 with 6 or 8, no difference between L2 and L3 hints.
 * (bench_kquant, whose weights stay in L3, does not see it: its products
 * never wait on memory.)
 */
#ifndef KQ_PF
#define KQ_PF 4
#endif
#define KQ_PF_HINT _MM_HINT_T1

static const uint8_t kq_pair_ctl[4][64] __attribute__((aligned(64))) = {
	KQ_PAIR(0, 2), KQ_PAIR(1, 3), KQ_PAIR(4, 6), KQ_PAIR(5, 7)
};

/* four zmm of int32 to their four sums, in one xmm */
TARGET INLINE __m128i
sum4(__m512i a, __m512i b, __m512i c, __m512i d)
{
	__m256i		ya = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1)),
				yb = _mm256_add_epi32(_mm512_castsi512_si256(b), _mm512_extracti64x4_epi64(b, 1)),
				yc = _mm256_add_epi32(_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64(c, 1)),
				yd = _mm256_add_epi32(_mm512_castsi512_si256(d), _mm512_extracti64x4_epi64(d, 1)),
				h = _mm256_hadd_epi32(_mm256_hadd_epi32(ya, yb), _mm256_hadd_epi32(yc, yd));

	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

TARGET INLINE void
tile_q4_k(const int five, const int R, int n, const uint8_t *w, size_t wb, int nc, const uint8_t *a,
		  size_t ab, float *out, size_t ldo)
{
	const int	bytes = five ? 176 : 144;
	const __m512i m4 = _mm512_set1_epi8(0x0F),
				one = _mm512_set1_epi8(0x01);
	const __m128i k3f = _mm_set1_epi8(0x3F),
				k0f = _mm_set1_epi8(0x0F),
				k03 = _mm_set1_epi8(0x03);
	const __m256i dm_split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
	const uint8_t *col[KQ_COLS];
	__m128		sum[KQ_ROWS];

	for (int c = 0; c < KQ_COLS; c++)
		col[c] = w + (size_t) (c < nc ? c : nc - 1) * wb;
	for (int r = 0; r < R; r++)
		sum[r] = _mm_setzero_ps();
	for (int i = 0; i < n / TFM_QK_K; i++)
	{
		__m512i		acc[KQ_ROWS][KQ_COLS],
					sc,
					mn;
		__m128		dc,
					mc;

		/*
		 * the four columns' first 16 bytes (d, dmin, the twelve of scales
		 * and mins) transposed into 32-bit lanes, one lane a column, and
		 * unpacked as ggml's get_scale_min_k4 does, four columns at once
		 */
		{
			const __m128i x0 = _mm_loadu_si128((const __m128i *) (col[0] + (size_t) i * bytes)),
						x1 = _mm_loadu_si128((const __m128i *) (col[1] + (size_t) i * bytes)),
						x2 = _mm_loadu_si128((const __m128i *) (col[2] + (size_t) i * bytes)),
						x3 = _mm_loadu_si128((const __m128i *) (col[3] + (size_t) i * bytes)),
						t0 = _mm_unpacklo_epi32(x0, x1),
						t1 = _mm_unpacklo_epi32(x2, x3),
						t2 = _mm_unpackhi_epi32(x0, x1),
						t3 = _mm_unpackhi_epi32(x2, x3),
						dm = _mm_unpacklo_epi64(t0, t1),
						u0 = _mm_unpackhi_epi64(t0, t1),
						u1 = _mm_unpacklo_epi64(t2, t3),
						u2 = _mm_unpackhi_epi64(t2, t3),
						s_lo = _mm_and_si128(u0, k3f),
						s_hi = _mm_or_si128(_mm_and_si128(u2, k0f),
											_mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(u0, 6), k03), 4)),
						m_lo = _mm_and_si128(u1, k3f),
						m_hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(u2, 4), k0f),
											_mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(u1, 6), k03), 4));
			const __m256 dmf = _mm256_permutevar8x32_ps(_mm256_cvtph_ps(dm), dm_split);

			/* 128-bit lane c: column c's eight scales (mins) as int16 */
			sc = _mm512_cvtepu8_epi16(_mm256_setr_m128i(_mm_unpacklo_epi32(s_lo, s_hi), _mm_unpackhi_epi32(s_lo, s_hi)));
			mn = _mm512_cvtepu8_epi16(_mm256_setr_m128i(_mm_unpacklo_epi32(m_lo, m_hi), _mm_unpackhi_epi32(m_lo, m_hi)));
			dc = _mm256_castps256_ps128(dmf);
			mc = _mm256_extractf128_ps(dmf, 1);
		}
#pragma GCC unroll 4
		for (int c = 0; c < KQ_COLS; c++)
		{
			const uint8_t *b = col[c] + (size_t) i * bytes;
			const __m512i q0 = _mm512_loadu_si512(b + (five ? 48 : 16)),
						q1 = _mm512_loadu_si512(b + (five ? 112 : 80)),
						scc = _mm512_shuffle_i32x4(sc, sc, 0x55 * c),
						s0 = _mm512_shuffle_epi8(scc, _mm512_load_si512(kq_pair_ctl[0])),
						s1 = _mm512_shuffle_epi8(scc, _mm512_load_si512(kq_pair_ctl[1])),
						s2 = _mm512_shuffle_epi8(scc, _mm512_load_si512(kq_pair_ctl[2])),
						s3 = _mm512_shuffle_epi8(scc, _mm512_load_si512(kq_pair_ctl[3]));
			/* the nibbles as they lie: the activations are in this order */
			__m512i		v0 = _mm512_and_si512(q0, m4),
						v1 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4),
						v2 = _mm512_and_si512(q1, m4),
						v3 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);

			if (five)
			{
				/*
				 * Q5_K's fifth bits: qh[l] bit 2c for chunk c's low-nibble
				 * value l, bit 2c + 1 for its high one — the 32 bytes in both
				 * 256-bit halves, vector k's halves shifted by its two
				 * chunks' bits
				 */
				const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (b + 16)));
				__m512i		hb[4];

				for (int k = 0; k < 4; k++)
				{
					const int	lo = (k & 1) + 4 * (k >> 1);

					hb[k] = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, _mm512_inserti64x4(
						_mm512_set1_epi16((short) lo), _mm256_set1_epi16((short) (lo + 2)), 1)), one), 4);
				}
				v0 = _mm512_or_si512(v0, hb[0]);
				v1 = _mm512_or_si512(v1, hb[1]);
				v2 = _mm512_or_si512(v2, hb[2]);
				v3 = _mm512_or_si512(v3, hb[3]);
			}

			/* the blocks KQ_PF groups on */
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb), KQ_PF_HINT);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb + 64), KQ_PF_HINT);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb + 128), KQ_PF_HINT);
#pragma GCC unroll 4
			for (int r = 0; r < R; r++)
			{
				const int8_t *q8 = ACT_K(a, r, i)->qs;
				__m512i		t = _mm512_dpwssd_epi32(_mm512_setzero_si512(),
													_mm512_maddubs_epi16(v0, _mm512_loadu_si512(q8)), s0);

				t = _mm512_dpwssd_epi32(t, _mm512_maddubs_epi16(v1, _mm512_loadu_si512(q8 + 64)), s1);
				t = _mm512_dpwssd_epi32(t, _mm512_maddubs_epi16(v2, _mm512_loadu_si512(q8 + 128)), s2);
				acc[r][c] = _mm512_dpwssd_epi32(t, _mm512_maddubs_epi16(v3, _mm512_loadu_si512(q8 + 192)), s3);
			}
		}
#pragma GCC unroll 4
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_K *y = ACT_K(a, r, i);
			/* the pair sums of bsums (as int16: at most 2 · 16 · 127), in every lane */
			const __m512i bs = _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm_loadu_si128((const __m128i *) y->bsums),
																	  _mm_loadu_si128((const __m128i *) (y->bsums + 8))));
			const __m128i isum = sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
			__m512i		mp = _mm512_madd_epi16(mn, bs);
			__m128i		msum;
			const __m128 yd = _mm_set1_ps(y->d);
			__m128		d = _mm_mul_ps(dc, yd),
						dmin = _mm_mul_ps(mc, yd),
						p,
						m;

			/* each 128-bit lane's four int32 summed, then lane c to element c */
			mp = _mm512_add_epi32(mp, _mm512_shuffle_epi32(mp, _MM_PERM_BADC));
			mp = _mm512_add_epi32(mp, _mm512_shuffle_epi32(mp, _MM_PERM_CDAB));
			msum = _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), mp));
			KQ_NO_CONTRACT(d);
			KQ_NO_CONTRACT(dmin);
			p = _mm_mul_ps(d, _mm_cvtepi32_ps(isum));
			KQ_NO_CONTRACT(p);
			sum[r] = _mm_add_ps(sum[r], p);
			m = _mm_mul_ps(dmin, _mm_cvtepi32_ps(msum));
			KQ_NO_CONTRACT(m);
			sum[r] = _mm_sub_ps(sum[r], m);
		}
	}
	for (int r = 0; r < R; r++)
	{
		float		v[KQ_COLS];

		_mm_storeu_ps(v, sum[r]);
		for (int c = 0; c < nc; c++)
			out[(size_t) r * ldo + c] = v[c];
	}
}

/*
 * Q6_K for a tile of R rows × KQ_COLS columns, as tile_q4_k: a 128-value
 * chunk's low nibbles (64 bytes) and its two-bit highs (32 bytes, read
 * into both halves and shifted by 0/2 or 4/6 per half) make two 64-byte
 * vectors in the activations' order; per row vpmaddubsw + vpdpwssd
 * against the 16-value sub-blocks' scales; the −32 offset as 32 · Σ scale
 * · bsums; the columns' sums reduced together and the reference's
 * kq_step in one 128-bit vector.
 */
static const int16_t kq_shift_lo[32] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2
};

/* four ymm of int32 to their four sums, in one xmm */
TARGET INLINE __m128i
sum4y(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i		h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));

	return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

TARGET INLINE void
tile_q6_k(const int R, int n, const uint8_t *w, size_t wb, int nc, const uint8_t *a, size_t ab,
		  float *out, size_t ldo)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F),
				m2 = _mm512_set1_epi8(3),
				sh01 = _mm512_loadu_si512(kq_shift_lo),
				sh23 = _mm512_add_epi16(sh01, _mm512_set1_epi16(4)),
				group = _mm512_loadu_si512(kq_scale_group);
	const uint8_t *col[KQ_COLS];
	__m128		sum[KQ_ROWS];

	for (int c = 0; c < KQ_COLS; c++)
		col[c] = w + (size_t) (c < nc ? c : nc - 1) * wb;
	for (int r = 0; r < R; r++)
		sum[r] = _mm_setzero_ps();
	for (int i = 0; i < n / TFM_QK_K; i++)
	{
		__m512i		acc[KQ_ROWS][KQ_COLS];
		__m256i		sc16[KQ_COLS];
		__m128		dc;
		uint16_t	dh[KQ_COLS];

#pragma GCC unroll 4
		for (int c = 0; c < KQ_COLS; c++)
		{
			const uint8_t *b = col[c] + (size_t) i * 210;
			const __m512i scales = _mm512_zextsi256_si512(sc16[c] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) (b + 192))));

			memcpy(dh + c, b + 208, 2);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb), KQ_PF_HINT);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb + 64), KQ_PF_HINT);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb + 128), KQ_PF_HINT);
			_mm_prefetch((const char *) (b + KQ_PF * KQ_COLS * wb + 192), KQ_PF_HINT);
			for (int r = 0; r < R; r++)
				acc[r][c] = _mm512_setzero_si512();
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++)
			{
				const __m512i l = _mm512_loadu_si512(b + 64 * h),
							hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (b + 128 + 32 * h))),
							v01 = _mm512_or_si512(_mm512_and_si512(l, m4),
												  _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh01), m2), 4)),
							v23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
												  _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh23), m2), 4)),
							s01 = _mm512_permutexvar_epi16(_mm512_add_epi16(group, _mm512_set1_epi16((short) (8 * h))), scales),
							s23 = _mm512_permutexvar_epi16(_mm512_add_epi16(group, _mm512_set1_epi16((short) (8 * h + 4))), scales);

#pragma GCC unroll 4
				for (int r = 0; r < R; r++)
				{
					const int8_t *q8 = ACT_K(a, r, i)->qs + 128 * h;

					acc[r][c] = _mm512_dpwssd_epi32(acc[r][c], _mm512_maddubs_epi16(v01, _mm512_loadu_si512(q8)), s01);
					acc[r][c] = _mm512_dpwssd_epi32(acc[r][c], _mm512_maddubs_epi16(v23, _mm512_loadu_si512(q8 + 64)), s23);
				}
			}
		}
		dc = _mm_cvtph_ps(_mm_setr_epi16((short) dh[0], (short) dh[1], (short) dh[2], (short) dh[3], 0, 0, 0, 0));
#pragma GCC unroll 4
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_K *y = ACT_K(a, r, i);
			const __m256i bs = _mm256_loadu_si256((const __m256i *) y->bsums);
			const __m128i off = sum4y(_mm256_madd_epi16(sc16[0], bs), _mm256_madd_epi16(sc16[1], bs),
									  _mm256_madd_epi16(sc16[2], bs), _mm256_madd_epi16(sc16[3], bs)),
						isum = _mm_sub_epi32(sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]),
											 _mm_slli_epi32(off, 5));
			__m128		d = _mm_mul_ps(dc, _mm_set1_ps(y->d)),
						p;

			KQ_NO_CONTRACT(d);
			p = _mm_mul_ps(_mm_cvtepi32_ps(isum), d);
			KQ_NO_CONTRACT(p);
			sum[r] = _mm_add_ps(sum[r], p);
		}
	}
	for (int r = 0; r < R; r++)
	{
		float		v[KQ_COLS];

		_mm_storeu_ps(v, sum[r]);
		for (int c = 0; c < nc; c++)
			out[(size_t) r * ldo + c] = v[c];
	}
}

/*
 * tfm_kq_quantize_q8_K's blocks (kquant_ref.c, ggml's quantize_row_q8_K)
 * with AVX-512, bit for bit: the largest magnitude by vmaxps, its first
 * element (its sign) by a compare, each value's iscale · x rounded by the
 * same 1.5·2^23 addition, at most 127, the sums of 16 by one reduction
 * each
 */
TARGET void
kq_quantize_q8_K_avx512(const float *x, tfm_block_q8_K *y, int64_t k)
{
	const __m512 magic = _mm512_set1_ps(12582912.f);
	const __m512i mant = _mm512_set1_epi32(0x007fffff),
				half = _mm512_set1_epi32(0x00400000),
				top = _mm512_set1_epi32(127);

	for (int64_t i = 0; i < k / TFM_QK_K; i++, x += TFM_QK_K)
	{
		__m512		m = _mm512_setzero_ps();
		float		amax,
					max = 0.0f,
					iscale;
		__m512		vi;

		for (int j = 0; j < TFM_QK_K; j += 16)
			m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + j)), m);	/* a NaN leaves m, as the reference skips it */
		amax = _mm512_reduce_max_ps(m);
		if (amax == 0.0f)
		{
			memset(&y[i], 0, sizeof(y[i]));
			continue;
		}
		for (int j = 0; j < TFM_QK_K; j += 16)
		{
			__mmask16	hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + j)),
												 _mm512_set1_ps(amax), _CMP_EQ_OQ);

			if (hit)
			{
				max = x[j + __builtin_ctz(hit)];
				break;
			}
		}
		iscale = -127.f / max;
		vi = _mm512_set1_ps(iscale);
		for (int j = 0; j < TFM_QK_K; j += 16)
		{
			__m512		p = _mm512_mul_ps(vi, _mm512_loadu_ps(x + j)),
						v = _mm512_add_ps(p, magic);
			__m512i		q = _mm512_min_epi32(_mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(v), mant), half),
											 top);

			_mm_storeu_si128((__m128i *) (y[i].qs + j), _mm512_cvtepi32_epi8(q));
			y[i].bsums[j / 16] = (int16_t) _mm512_reduce_add_epi32(q);
		}
		y[i].d = 1.0f / iscale;
	}
}

/*
 * Q4_K's and Q5_K's activation blocks in the tile's order: in every 128
 * values, values 32-63 and 64-95 trade places, so that a 64-byte vector of
 * a weight block's nibbles (the low nibbles of two 32-byte chunks, or
 * their high ones) meets the values it multiplies without a shuffle; d
 * and bsums stay as they are.  M rows, ab bytes apart.
 */
TARGET void
kq_act_order_avx512(uint32_t type, uint8_t *act, int M, size_t ab, int K)
{
	if (type != KQ_Q4_K && type != KQ_Q5_K)
		return;
	for (int r = 0; r < M; r++)
		for (int i = 0; i < K / TFM_QK_K; i++)
		{
			int8_t	   *q = ((tfm_block_q8_K *) (act + (size_t) r * ab) + i)->qs;

			for (int h = 0; h < TFM_QK_K; h += 128)
			{
				const __m256i a = _mm256_loadu_si256((const __m256i *) (q + h + 32)),
							b = _mm256_loadu_si256((const __m256i *) (q + h + 64));

				_mm256_storeu_si256((__m256i *) (q + h + 32), b);
				_mm256_storeu_si256((__m256i *) (q + h + 64), a);
			}
		}
}

/*
 * out[r·ldo + c] = the dot product of weight row c (w + c·wb, c < nc ≤
 * KQ_COLS) with activation row r (R ≤ KQ_ROWS rows, ab bytes apart):
 * tfm_kq_dot_ref's bits, Q4_K's and Q5_K's activations in the tile's
 * order (kq_act_order_avx512); Q4_K, Q5_K and Q6_K by the tiles above, Q8_0
 * one column at a time
 */
TARGET void
kq_tile_avx512(uint32_t type, int n, const uint8_t *w, size_t wb, int nc, const uint8_t *a,
			   size_t ab, int R, float *out, size_t ldo)
{
	if (type == KQ_Q4_K && R >= 1 && R <= KQ_ROWS && nc >= 1 && nc <= KQ_COLS)
	{
#define T4(r) tile_q4_k(0, r, n, w, wb, nc, a, ab, out, ldo)
		KQ_ROWS_CASES(T4);
#undef T4
	}
	if (type == KQ_Q5_K && R >= 1 && R <= KQ_ROWS && nc >= 1 && nc <= KQ_COLS)
	{
#define T5(r) tile_q4_k(1, r, n, w, wb, nc, a, ab, out, ldo)
		KQ_ROWS_CASES(T5);
#undef T5
	}
	if (type == KQ_Q6_K && R >= 1 && R <= KQ_ROWS && nc >= 1 && nc <= KQ_COLS)
	{
#define T6(r) tile_q6_k(r, n, w, wb, nc, a, ab, out, ldo)
		KQ_ROWS_CASES(T6);
#undef T6
	}
	for (int c = 0; c < nc; c++)
	{
		float		v[KQ_ROWS];

		kq_rows_avx512(type, n, w + (size_t) c * wb, a, ab, R, v);
		for (int r = 0; r < R; r++)
			out[(size_t) r * ldo + c] = v[r];
	}
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
