/*
 * kquant_panel_avx2.c — prefill's K-quant products (tfm_kq_gemm with many
 * activation rows) on AVX2 + FMA + F16C, the output columns in the vector
 * lanes, as kquant_panel_avx512.c does with VNNI: per group of
 * KQ_PANEL_COLS_AVX2 = 8 weight rows and per block, the eight columns'
 * blocks are repacked once (an 8 × 8 transpose of dwords: values
 * 4t..4t+3 of column c in 32-bit lane c; scales, mins, d and dmin lane by
 * lane) and every activation row of the call runs against them.  Without
 * VNNI, vpmaddubsw (unsigned weight bytes × the row's four activation
 * bytes broadcast) gives int16 pairs that are summed in int16 over as
 * many steps as cannot overflow — Q4_K 8 (|pair| ≤ 2·15·128, 8 of them
 * ≤ 30,720), Q5_K 4 (2·31·128 · 4 ≤ 31,744), Q6_K 2 (2·63·128 · 2 ≤
 * 32,256) — and vpmaddwd against the sub-block's scale (int16, in both
 * halves of each lane) makes them int32.  Q8_0 signs the activations by
 * the weights and runs |w| as the unsigned operand (|w| ≤ 128, |a| ≤ 127:
 * pairs ≤ 32,512).  The mins (Q4_K, Q5_K) and Q6_K's −32 offset by
 * vpmaddwd against the bsums, then the reference's float step
 * (kquant_internal.h), lane by lane the same operations in the same order:
 * every output equals tfm_kq_dot_ref's bits.  No horizontal sums.
 * Compiled for that set by function attribute only; tfm_kq_gemm calls it
 * only where lowp_int4_avx2() says the CPU has all three.
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* activation rows run against one repacked block at a time (16 ymm registers) */
#define PANEL_ROWS 4
/* activation rows whose float sums a pass keeps (stack: 8 floats each) */
#define PANEL_CHUNK 128

/* one block of 8 columns, repacked */
typedef struct
{
	/*
	 * Q4_K/Q5_K: 8 sub-blocks × 8 steps of 4 values; Q6_K: 16 × 4; Q8_0:
	 * 8 steps of |w|, then the 8 steps' signed w
	 */
	__m256i		q[64];
	/* each sub-block's scale as int16 in both halves of each lane (Q6_K: 16, signed) */
	__m256i		sc[16];
	/* Q4_K/Q5_K: the mins in int16 pairs (j = 2k, 2k + 1); Q6_K: the scales so */
	__m256i		mp[8];
	__m256		d,
				dmin;
} panel_block;

/* r[t] lane c := r[c] lane t */
TARGET INLINE void
transpose8(__m256i r[8])
{
	__m256i		t[8],
				u[8];

	for (int k = 0; k < 4; k++)
	{
		t[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
		t[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
	}
	for (int k = 0; k < 2; k++)
	{
		u[4 * k + 0] = _mm256_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
		u[4 * k + 1] = _mm256_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
		u[4 * k + 2] = _mm256_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
		u[4 * k + 3] = _mm256_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
	}
	for (int k = 0; k < 4; k++)
	{
		r[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
		r[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
	}
}

/* v[t] lane c: dword t of the 32 bytes at offset off of column c's block (col[c]) */
TARGET INLINE void
load_t(const uint8_t *const col[8], size_t off, __m256i v[8])
{
	for (int c = 0; c < 8; c++)
		v[c] = _mm256_loadu_si256((const __m256i *) (col[c] + off));
	transpose8(v);
}

/* the low 16 bits of each lane as eight fp32 */
TARGET INLINE __m256
halves(__m256i v)
{
	const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));

	return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
}

/* byte b of each lane, as an int16 in both halves of the lane */
TARGET INLINE __m256i
byte_twice(__m256i v, int b)
{
	const __m256i m = _mm256_set1_epi32((int) (0x80008000u | (uint32_t) b | (uint32_t) b << 16));

	return _mm256_shuffle_epi8(v, _mm256_add_epi32(m, _mm256_setr_epi32(0, 0x40004, 0x80008, 0xC000C,
																		   0, 0x40004, 0x80008, 0xC000C)));
}

/* bytes b and b + 1 of each lane, as two int16 */
TARGET INLINE __m256i
pair_of(__m256i v, int b)
{
	const __m256i m = _mm256_set1_epi32((int) (0x80008000u | (uint32_t) b | (uint32_t) (b + 1) << 16));

	return _mm256_shuffle_epi8(v, _mm256_add_epi32(m, _mm256_setr_epi32(0, 0x40004, 0x80008, 0xC000C,
																		   0, 0x40004, 0x80008, 0xC000C)));
}

/* block i of the columns col[c], Q4_K (five 0) or Q5_K (five 1) */
TARGET static void
repack_q45(int five, const uint8_t *const blk[8], panel_block *p)
{
	const __m256i k3f = _mm256_set1_epi8(0x3F),
				k0f = _mm256_set1_epi8(0x0F),
				k03 = _mm256_set1_epi8(0x03),
				k01 = _mm256_set1_epi8(0x01);
	__m256i		h[8],
				x[8],
				hb[8];

	/* dword 0: d, dmin; 1-3: the twelve bytes of scales and mins */
	load_t(blk, 0, h);
	{
		const __m256i u0 = h[1],
					u1 = h[2],
					u2 = h[3],
					s_lo = _mm256_and_si256(u0, k3f),
					s_hi = _mm256_or_si256(_mm256_and_si256(u2, k0f),
										   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), k03), 4)),
					m_lo = _mm256_and_si256(u1, k3f),
					m_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), k0f),
										   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), k03), 4));

		p->d = halves(h[0]);
		p->dmin = halves(_mm256_srli_epi32(h[0], 16));
		for (int s = 0; s < 4; s++)
		{
			p->sc[s] = byte_twice(s_lo, s);
			p->sc[s + 4] = byte_twice(s_hi, s);
		}
		p->mp[0] = pair_of(m_lo, 0);
		p->mp[1] = pair_of(m_lo, 2);
		p->mp[2] = pair_of(m_hi, 0);
		p->mp[3] = pair_of(m_hi, 2);
	}
	if (five)
		load_t(blk, 16, hb);
	for (int j = 0; j < 4; j++)
	{
		load_t(blk, (five ? 48 : 16) + 32 * j, x);
		for (int t = 0; t < 8; t++)
		{
			__m256i		lo = _mm256_and_si256(x[t], k0f),
						hi = _mm256_and_si256(_mm256_srli_epi32(x[t], 4), k0f);

			if (five)
			{
				lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb[t], 2 * j), k01), 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb[t], 2 * j + 1), k01), 4));
			}
			p->q[(2 * j) * 8 + t] = lo;
			p->q[(2 * j + 1) * 8 + t] = hi;
		}
	}
}

/* Q6_K's block: values as unsigned 0-63, sixteen sub-blocks of 16 */
TARGET static void
repack_q6(const uint8_t *const blk[8], panel_block *p)
{
	const __m256i k0f = _mm256_set1_epi8(0x0F),
				k03 = _mm256_set1_epi8(0x03);
	__m256i		s[8],
				la[8],
				lb[8],
				h[8];
	uint16_t	dh[8];

	for (int c = 0; c < 8; c++)
		memcpy(&dh[c], blk[c] + 208, 2);
	p->d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) dh));
	p->dmin = _mm256_setzero_ps();
	/* dwords 4-7 of the 32 bytes at 176: the sixteen signed scales at 192 */
	load_t(blk, 176, s);
	for (int k = 0; k < 4; k++)
	{
		__m256i		e[4];

		for (int b = 0; b < 4; b++)
		{
			e[b] = _mm256_srai_epi32(_mm256_slli_epi32(s[4 + k], 24 - 8 * b), 24);
			p->sc[4 * k + b] = _mm256_or_si256(_mm256_and_si256(e[b], _mm256_set1_epi32(0xFFFF)),
											   _mm256_slli_epi32(e[b], 16));
		}
		p->mp[2 * k] = _mm256_or_si256(_mm256_and_si256(e[0], _mm256_set1_epi32(0xFFFF)),
									   _mm256_slli_epi32(e[1], 16));
		p->mp[2 * k + 1] = _mm256_or_si256(_mm256_and_si256(e[2], _mm256_set1_epi32(0xFFFF)),
										   _mm256_slli_epi32(e[3], 16));
	}
	for (int c = 0; c < 2; c++)
	{
		load_t(blk, 64 * c, la);
		load_t(blk, 64 * c + 32, lb);
		load_t(blk, 128 + 32 * c, h);
		for (int t = 0; t < 8; t++)
		{
			const __m256i v0 = _mm256_or_si256(_mm256_and_si256(la[t], k0f),
											   _mm256_slli_epi32(_mm256_and_si256(h[t], k03), 4)),
						v1 = _mm256_or_si256(_mm256_and_si256(lb[t], k0f),
											 _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h[t], 2), k03), 4)),
						v2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(la[t], 4), k0f),
											 _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h[t], 4), k03), 4)),
						v3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(lb[t], 4), k0f),
											 _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h[t], 6), k03), 4));
			/* value 32q + 4t + e of the chunk: sub-block 2q + t / 4, step t % 4 */
			const int	st = t & 3,
						half = t >> 2;

			p->q[(8 * c + 0 + half) * 4 + st] = v0;
			p->q[(8 * c + 2 + half) * 4 + st] = v1;
			p->q[(8 * c + 4 + half) * 4 + st] = v2;
			p->q[(8 * c + 6 + half) * 4 + st] = v3;
		}
	}
}

/* Q8_0's block (32 signed values after d): |w| in q[0..7], w in q[8..15] */
TARGET static void
repack_q8_0(const uint8_t *const blk[8], panel_block *p)
{
	uint16_t	dh[8];
	__m256i		x[8];

	for (int c = 0; c < 8; c++)
		memcpy(&dh[c], blk[c], 2);
	p->d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) dh));
	load_t(blk, 2, x);
	for (int t = 0; t < 8; t++)
	{
		p->q[t] = _mm256_abs_epi8(x[t]);
		p->q[8 + t] = x[t];
	}
}

TARGET INLINE __m256i
bcast(const int8_t *q)
{
	int32_t		v;

	memcpy(&v, q, 4);
	return _mm256_set1_epi32(v);
}

/* fs += x·d, the product rounded on its own */
TARGET INLINE __m256
step(__m256 fs, __m256i isum, __m256 d)
{
	__m256		x = _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum));

	KQ_NO_CONTRACT(x);
	return _mm256_add_ps(fs, x);
}

/*
 * R rows (≤ PANEL_ROWS) of block i against the repacked block, Q4_K
 * (steps 8: the int16 sums cover a sub-block) or Q5_K (steps 4): their
 * float sums fs updated
 */
TARGET INLINE void
rows_q45(const int R, const int steps, const panel_block *p, const uint8_t *a, size_t ab, int i,
		 __m256 *fs)
{
	__m256i		isum[PANEL_ROWS];

	for (int r = 0; r < R; r++)
		isum[r] = _mm256_setzero_si256();
	for (int s = 0; s < 8; s++)
		for (int t0 = 0; t0 < 8; t0 += steps)
		{
			__m256i		acc[PANEL_ROWS];

			for (int r = 0; r < R; r++)
				acc[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int t = t0; t < t0 + steps; t++)
			{
				const __m256i wq = _mm256_load_si256(&p->q[8 * s + t]);

#pragma GCC unroll 4
				for (int r = 0; r < R; r++)
				{
					const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;

					acc[r] = _mm256_add_epi16(acc[r], _mm256_maddubs_epi16(wq, bcast(y->qs + 32 * s + 4 * t)));
				}
			}
			for (int r = 0; r < R; r++)
				isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(acc[r], p->sc[s]));
		}
	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		const __m128i bp = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *) y->bsums),
										  _mm_loadu_si128((const __m128i *) (y->bsums + 8)));
		__m256i		msum = _mm256_madd_epi16(p->mp[0], _mm256_broadcastd_epi32(bp));
		const __m256 yd = _mm256_set1_ps(y->d);
		__m256		d = _mm256_mul_ps(p->d, yd),
					dmin = _mm256_mul_ps(p->dmin, yd),
					m;

		msum = _mm256_add_epi32(msum, _mm256_madd_epi16(p->mp[1], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bp, 0x55))));
		msum = _mm256_add_epi32(msum, _mm256_madd_epi16(p->mp[2], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bp, 0xAA))));
		msum = _mm256_add_epi32(msum, _mm256_madd_epi16(p->mp[3], _mm256_broadcastd_epi32(_mm_shuffle_epi32(bp, 0xFF))));
		KQ_NO_CONTRACT(d);
		KQ_NO_CONTRACT(dmin);
		fs[r] = step(fs[r], isum[r], d);
		m = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(msum));
		KQ_NO_CONTRACT(m);
		fs[r] = _mm256_sub_ps(fs[r], m);
	}
}

TARGET INLINE void
rows_q6(const int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m256 *fs)
{
	__m256i		isum[PANEL_ROWS];

	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		__m256i		off = _mm256_setzero_si256();

		for (int k = 0; k < 8; k++)
		{
			int32_t		pr;

			memcpy(&pr, y->bsums + 2 * k, 4);
			off = _mm256_add_epi32(off, _mm256_madd_epi16(p->mp[k], _mm256_set1_epi32(pr)));
		}
		isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
	}
	for (int s = 0; s < 16; s++)
		for (int t0 = 0; t0 < 4; t0 += 2)
		{
			__m256i		acc[PANEL_ROWS];

			for (int r = 0; r < R; r++)
				acc[r] = _mm256_setzero_si256();
#pragma GCC unroll 2
			for (int t = t0; t < t0 + 2; t++)
			{
				const __m256i wq = _mm256_load_si256(&p->q[4 * s + t]);

#pragma GCC unroll 4
				for (int r = 0; r < R; r++)
				{
					const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;

					acc[r] = _mm256_add_epi16(acc[r], _mm256_maddubs_epi16(wq, bcast(y->qs + 16 * s + 4 * t)));
				}
			}
			for (int r = 0; r < R; r++)
				isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(acc[r], p->sc[s]));
		}
	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		__m256		d = _mm256_mul_ps(p->d, _mm256_set1_ps(y->d));

		KQ_NO_CONTRACT(d);
		fs[r] = step(fs[r], isum[r], d);
	}
}

/* Q8_0: |w| times the activations signed by w, pairs summed to int32; the scale d_w · d_a */
TARGET INLINE void
rows_q8_0(const int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m256 *fs)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i		acc[PANEL_ROWS];

	for (int r = 0; r < R; r++)
		acc[r] = _mm256_setzero_si256();
#pragma GCC unroll 8
	for (int t = 0; t < 8; t++)
	{
		const __m256i ux = _mm256_load_si256(&p->q[t]),
					x = _mm256_load_si256(&p->q[8 + t]);

#pragma GCC unroll 4
		for (int r = 0; r < R; r++)
		{
			const tfm_block_q8_0 *y = (const tfm_block_q8_0 *) (a + (size_t) r * ab) + i;
			const __m256i pr = _mm256_maddubs_epi16(ux, _mm256_sign_epi8(bcast(y->qs + 4 * t), x));

			acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pr, ones));
		}
	}
	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_0 *y = (const tfm_block_q8_0 *) (a + (size_t) r * ab) + i;
		__m256		d = _mm256_mul_ps(p->d, _mm256_set1_ps(tfm_fp16_to_float(y->d)));

		KQ_NO_CONTRACT(d);
		fs[r] = step(fs[r], acc[r], d);
	}
}

/* each rows' kernel a copy per R, 1 .. PANEL_ROWS: kquant_internal.h's switch over KQ_ROWS */
_Static_assert(PANEL_ROWS == KQ_ROWS, "KQ_ROWS_CASES covers PANEL_ROWS rows");

TARGET static void
rows_block(uint32_t t, int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m256 *fs)
{
#define Q4(r) rows_q45(r, 8, p, a, ab, i, fs)
#define Q5(r) rows_q45(r, 4, p, a, ab, i, fs)
#define Q6(r) rows_q6(r, p, a, ab, i, fs)
#define Q80(r) rows_q8_0(r, p, a, ab, i, fs)
	if (t == KQ_Q8_0)
		KQ_ROWS_CASES(Q80);
	if (t == KQ_Q6_K)
		KQ_ROWS_CASES(Q6);
	if (t == KQ_Q5_K)
		KQ_ROWS_CASES(Q5);
	KQ_ROWS_CASES(Q4);
#undef Q4
#undef Q5
#undef Q6
#undef Q80
}

/*
 * C[r·ldc + j] = alpha · (row r · weight row j) (+ beta · C, rounded on
 * its own) for every row r < M and the columns of groups [g0, g1) of
 * KQ_PANEL_COLS_AVX2, Q4_K, Q5_K, Q6_K or Q8_0; act: the rows' Q8_K
 * blocks (Q8_0's for Q8_0), ab bytes apart
 */
TARGET void
kq_panel_avx2(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb, const uint8_t *act,
			  size_t ab, float alpha, float beta, float *C, ptrdiff_t ldc, int g0, int g1)
{
	panel_block pb __attribute__((aligned(32)));
	__m256		fs[PANEL_CHUNK];
	const int	nblk = K / (t == KQ_Q8_0 ? TFM_QK8_0 : TFM_QK_K),
				bb = kq_block_bytes(t);

	for (int g = g0; g < g1; g++)
	{
		const int	j0 = g * KQ_PANEL_COLS_AVX2,
					nc = N - j0 < KQ_PANEL_COLS_AVX2 ? N - j0 : KQ_PANEL_COLS_AVX2;

		for (int m0 = 0; m0 < M; m0 += PANEL_CHUNK)
		{
			const int	mc = M - m0 < PANEL_CHUNK ? M - m0 : PANEL_CHUNK;

			for (int r = 0; r < mc; r++)
				fs[r] = _mm256_setzero_ps();
			for (int i = 0; i < nblk; i++)
			{
				/* the columns' block i; columns past the last repeat it */
				const uint8_t *blk[KQ_PANEL_COLS_AVX2];

				for (int c = 0; c < KQ_PANEL_COLS_AVX2; c++)
					blk[c] = W + (size_t) (j0 + (c < nc ? c : nc - 1)) * wb + (size_t) i * bb;
				if (t == KQ_Q8_0)
					repack_q8_0(blk, &pb);
				else if (t == KQ_Q6_K)
					repack_q6(blk, &pb);
				else
					repack_q45(t == KQ_Q5_K, blk, &pb);
				/* the next block of the columns (or the next group's first) */
				kq_prefetch_block(i + 1 < nblk ? blk[0] + bb : W + (size_t) (j0 + KQ_PANEL_COLS_AVX2) * wb,
								  wb, nc, bb);
				for (int r0 = 0; r0 < mc; r0 += PANEL_ROWS)
					rows_block(t, mc - r0 < PANEL_ROWS ? mc - r0 : PANEL_ROWS, &pb,
							   act + (size_t) (m0 + r0) * ab, ab, i, fs + r0);
			}
			for (int r = 0; r < mc; r++)
			{
				float		v[KQ_PANEL_COLS_AVX2];
				float	   *c = C + (m0 + r) * ldc + j0;

				_mm256_storeu_ps(v, fs[r]);
				kq_store_row(c, v, nc, alpha, beta);
			}
		}
	}
}
