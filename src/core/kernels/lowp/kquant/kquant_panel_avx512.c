/*
 * kquant_panel_avx512.c — prefill's K-quant products (tfm_kq_gemm with
 * many activation rows) on AVX-512 VNNI with the output columns in the
 * vector lanes: per group of KQ_PANEL_COLS = 16 weight rows and per
 * block of 256 values, the sixteen columns' blocks are repacked once
 * (gathered, unpacked to bytes: values 4t..4t+3 of column c in 32-bit
 * lane c; scales, mins, d and dmin lane by lane) into a small buffer, and
 * every activation row of the call runs against it: vpdpbusd with the
 * row's four activation bytes broadcast gives each column's sub-block sum
 * in its own lane, vpmulld scales it, the mins (Q4_K, Q5_K) or the −32
 * offset (Q6_K) by vpdpwssd against the bsums, then the reference's float
 * step (kquant_internal.h) for the sixteen columns in one vector, lane by
 * lane the same operations in the same order: no horizontal sums.  Q8_0
 * (blocks of 32 signed values against Q8_0 activations) the same way, its
 * activations offset by 128 to be vpdpbusd's unsigned operand and 128 ·
 * each column's sum taken off.  The integer sums are exact, so every
 * output equals tfm_kq_dot_ref's bits.
 * The activations are in their own order (no kq_act_order_avx512).
 */
#include <immintrin.h>

#include "kquant_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* activation rows run against one repacked block at a time */
#ifndef PANEL_ROWS
#define PANEL_ROWS 8
#endif
/* activation rows whose float sums a pass keeps (stack: 16 floats each) */
#define PANEL_CHUNK 128

/* one block of 16 columns, repacked */
typedef struct
{
	/* Q4_K/Q5_K: 8 sub-blocks × 8 steps of 4 values; Q6_K: 16 × 4 */
	__m512i		q[64];
	/* each sub-block's scale as int32 per lane (Q6_K: 16, signed) */
	__m512i		sc[16];
	/* Q4_K/Q5_K: the mins in int16 pairs (j = 2k, 2k + 1); Q6_K: the scales so */
	__m512i		mp[8];
	__m512		d,
				dmin;
} panel_block;

/* 16 dwords at byte offset off of the 16 columns' block (cols: byte offsets) */
TARGET INLINE __m512i
gather(__m512i cols, const uint8_t *base, int off)
{
	return _mm512_i32gather_epi32(cols, (const void *) (base + off), 1);
}

/* dword d of every 128-bit lane: 4d added to each of a pshufb control's bytes */
#define LANE_POS(x) _mm512_setr_epi32(0, x, 2 * (x), 3 * (x), 0, x, 2 * (x), 3 * (x), \
									   0, x, 2 * (x), 3 * (x), 0, x, 2 * (x), 3 * (x))

/* byte b of each dword, as an int32 */
TARGET INLINE __m512i
byte_of(__m512i v, int b)
{
	return _mm512_shuffle_epi8(v, _mm512_add_epi32(_mm512_set1_epi32((int) (0x80808000u | (uint32_t) b)),
												   LANE_POS(4)));
}

/* bytes b and b + 1 of each dword, as two int16 */
TARGET INLINE __m512i
pair_of(__m512i v, int b)
{
	return _mm512_shuffle_epi8(v, _mm512_add_epi32(_mm512_set1_epi32((int) (0x80008000u | (uint32_t) b | (uint32_t) (b + 1) << 16)),
												   LANE_POS(0x40004)));
}

/*
 * block i of the columns at w + cols[c] (byte offsets; columns past the
 * last repeat it), Q4_K (five 0) or Q5_K (five 1)
 */
TARGET static void
repack_q45(int five, const uint8_t *w, __m512i cols, int i, panel_block *p)
{
	const uint8_t *b = w + (size_t) i * (five ? 176 : 144);
	const __m512i k3f = _mm512_set1_epi8(0x3F),
				k0f = _mm512_set1_epi8(0x0F),
				k03 = _mm512_set1_epi8(0x03),
				k01 = _mm512_set1_epi8(0x01);
	const __m512i dm = gather(cols, b, 0),
				u0 = gather(cols, b, 4),
				u1 = gather(cols, b, 8),
				u2 = gather(cols, b, 12),
				s_lo = _mm512_and_si512(u0, k3f),
				s_hi = _mm512_or_si512(_mm512_and_si512(u2, k0f),
									   _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), k03), 4)),
				m_lo = _mm512_and_si512(u1, k3f),
				m_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), k0f),
									   _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), k03), 4));
	const int	qoff = five ? 48 : 16;

	p->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
	p->dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
	for (int s = 0; s < 4; s++)
	{
		p->sc[s] = byte_of(s_lo, s);
		p->sc[s + 4] = byte_of(s_hi, s);
	}
	p->mp[0] = pair_of(m_lo, 0);
	p->mp[1] = pair_of(m_lo, 2);
	p->mp[2] = pair_of(m_hi, 0);
	p->mp[3] = pair_of(m_hi, 2);
	for (int t = 0; t < 8; t++)
	{
		__m512i		hb = five ? gather(cols, b, 16 + 4 * t) : _mm512_setzero_si512();

		for (int j = 0; j < 4; j++)
		{
			const __m512i x = gather(cols, b, qoff + 32 * j + 4 * t);
			__m512i		lo = _mm512_and_si512(x, k0f),
						hi = _mm512_and_si512(_mm512_srli_epi32(x, 4), k0f);

			if (five)
			{
				lo = _mm512_or_si512(lo, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hb, 2 * j), k01), 4));
				hi = _mm512_or_si512(hi, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hb, 2 * j + 1), k01), 4));
			}
			p->q[(2 * j) * 8 + t] = lo;
			p->q[(2 * j + 1) * 8 + t] = hi;
		}
	}
}

/* Q6_K's block i: values as unsigned 0-63, sixteen sub-blocks of 16 */
TARGET static void
repack_q6(const uint8_t *w, __m512i cols, int i, panel_block *p)
{
	const uint8_t *b = w + (size_t) i * 210;
	const __m512i k0f = _mm512_set1_epi8(0x0F),
				k03 = _mm512_set1_epi8(0x03);
	const __m512i dh = gather(cols, b, 206);	/* bytes 208-209 in the high half */

	p->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dh, 16)));
	p->dmin = _mm512_setzero_ps();
	for (int k = 0; k < 4; k++)
	{
		/* signed scales 4k..4k + 3 */
		const __m512i s = gather(cols, b, 192 + 4 * k);

		for (int e = 0; e < 4; e++)
			p->sc[4 * k + e] = _mm512_srai_epi32(_mm512_slli_epi32(s, 24 - 8 * e), 24);
		p->mp[2 * k] = _mm512_or_si512(_mm512_and_si512(p->sc[4 * k], _mm512_set1_epi32(0xFFFF)),
									   _mm512_slli_epi32(p->sc[4 * k + 1], 16));
		p->mp[2 * k + 1] = _mm512_or_si512(_mm512_and_si512(p->sc[4 * k + 2], _mm512_set1_epi32(0xFFFF)),
										   _mm512_slli_epi32(p->sc[4 * k + 3], 16));
	}
	for (int c = 0; c < 2; c++)
		for (int t = 0; t < 8; t++)
		{
			/* values l = 4t..4t + 3 of chunk c's four 32s */
			const __m512i la = gather(cols, b, 64 * c + 4 * t),
						lb = gather(cols, b, 64 * c + 32 + 4 * t),
						h = gather(cols, b, 128 + 32 * c + 4 * t);
			const __m512i v0 = _mm512_or_si512(_mm512_and_si512(la, k0f),
											   _mm512_slli_epi32(_mm512_and_si512(h, k03), 4)),
						v1 = _mm512_or_si512(_mm512_and_si512(lb, k0f),
											 _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), k03), 4)),
						v2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(la, 4), k0f),
											 _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), k03), 4)),
						v3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(lb, 4), k0f),
											 _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 6), k03), 4));
			/* value 32q + 4t + e of the chunk: sub-block 2q + t / 4, step t % 4 */
			const int	st = t & 3,
						half = t >> 2;

			p->q[(8 * c + 0 + half) * 4 + st] = v0;
			p->q[(8 * c + 2 + half) * 4 + st] = v1;
			p->q[(8 * c + 4 + half) * 4 + st] = v2;
			p->q[(8 * c + 6 + half) * 4 + st] = v3;
		}
}

/*
 * Q8_0's block i (32 signed values): values 4t..4t + 3 of column c in lane
 * c of q[t]; sc[0] 128 · Σ of the column's values (the activations run
 * offset by 128 as vpdpbusd's unsigned operand: that much too much)
 */
TARGET static void
repack_q8_0(const uint8_t *w, __m512i cols, int i, panel_block *p)
{
	const uint8_t *b = w + (size_t) i * 34;
	__m512i		sum = _mm512_setzero_si512();

	p->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(gather(cols, b, 0)));
	for (int t = 0; t < 8; t++)
	{
		p->q[t] = gather(cols, b, 2 + 4 * t);
		sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), p->q[t]);
	}
	p->sc[0] = _mm512_slli_epi32(sum, 7);
}

TARGET INLINE __m512i
bcast(const int8_t *q)
{
	int32_t		v;

	memcpy(&v, q, 4);
	return _mm512_set1_epi32(v);
}

/* R rows (≤ PANEL_ROWS) of block i against the repacked block: their float sums fs updated */
TARGET INLINE void
rows_q45(const int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m512 *fs)
{
	__m512i		isum[PANEL_ROWS];

	for (int r = 0; r < R; r++)
		isum[r] = _mm512_setzero_si512();
	for (int s = 0; s < 8; s++)
	{
		__m512i		acc[PANEL_ROWS];

		for (int r = 0; r < R; r++)
			acc[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
		for (int t = 0; t < 8; t++)
		{
			const __m512i wq = _mm512_load_si512(&p->q[8 * s + t]);

#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
			{
				const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;

				acc[r] = _mm512_dpbusd_epi32(acc[r], wq, bcast(y->qs + 32 * s + 4 * t));
			}
		}
		for (int r = 0; r < R; r++)
			isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(acc[r], p->sc[s]));
	}
	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		const __m128i bp = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *) y->bsums),
										  _mm_loadu_si128((const __m128i *) (y->bsums + 8)));
		__m512i		msum = _mm512_dpwssd_epi32(_mm512_setzero_si512(), p->mp[0],
											   _mm512_broadcastd_epi32(bp));
		const __m512 yd = _mm512_set1_ps(y->d);
		__m512		d = _mm512_mul_ps(p->d, yd),
					dmin = _mm512_mul_ps(p->dmin, yd),
					x,
					m;

		msum = _mm512_dpwssd_epi32(msum, p->mp[1], _mm512_broadcastd_epi32(_mm_shuffle_epi32(bp, 0x55)));
		msum = _mm512_dpwssd_epi32(msum, p->mp[2], _mm512_broadcastd_epi32(_mm_shuffle_epi32(bp, 0xAA)));
		msum = _mm512_dpwssd_epi32(msum, p->mp[3], _mm512_broadcastd_epi32(_mm_shuffle_epi32(bp, 0xFF)));
		KQ_NO_CONTRACT(d);
		KQ_NO_CONTRACT(dmin);
		x = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[r]));
		KQ_NO_CONTRACT(x);
		fs[r] = _mm512_add_ps(fs[r], x);
		m = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(msum));
		KQ_NO_CONTRACT(m);
		fs[r] = _mm512_sub_ps(fs[r], m);
	}
}

TARGET INLINE void
rows_q6(const int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m512 *fs)
{
	__m512i		isum[PANEL_ROWS];

	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		__m512i		off = _mm512_setzero_si512();

		for (int k = 0; k < 8; k++)
		{
			int32_t		pr;

			memcpy(&pr, y->bsums + 2 * k, 4);
			off = _mm512_dpwssd_epi32(off, p->mp[k], _mm512_set1_epi32(pr));
		}
		isum[r] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(off, 5));
	}
	for (int s = 0; s < 16; s++)
	{
		__m512i		acc[PANEL_ROWS];

		for (int r = 0; r < R; r++)
			acc[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (int t = 0; t < 4; t++)
		{
			const __m512i wq = _mm512_load_si512(&p->q[4 * s + t]);

#pragma GCC unroll 8
			for (int r = 0; r < R; r++)
			{
				const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;

				acc[r] = _mm512_dpbusd_epi32(acc[r], wq, bcast(y->qs + 16 * s + 4 * t));
			}
		}
		for (int r = 0; r < R; r++)
			isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(acc[r], p->sc[s]));
	}
	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_K *y = (const tfm_block_q8_K *) (a + (size_t) r * ab) + i;
		__m512		d = _mm512_mul_ps(p->d, _mm512_set1_ps(y->d)),
					x;

		KQ_NO_CONTRACT(d);
		x = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), d);
		KQ_NO_CONTRACT(x);
		fs[r] = _mm512_add_ps(fs[r], x);
	}
}

/*
 * Q8_0: each row's sums with its activations offset by 128 (unsigned),
 * less 128 · the column's sum: the reference's exact integer; then its
 * float step, the scale d_w · d_a
 */
TARGET INLINE void
rows_q8_0(const int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m512 *fs)
{
	const __m512i k80 = _mm512_set1_epi8((char) 0x80);

	for (int r = 0; r < R; r++)
	{
		const tfm_block_q8_0 *y = (const tfm_block_q8_0 *) (a + (size_t) r * ab) + i;
		__m512i		acc = _mm512_setzero_si512();
		__m512		d,
					x;

#pragma GCC unroll 8
		for (int t = 0; t < 8; t++)
			acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(bcast(y->qs + 4 * t), k80), p->q[t]);
		acc = _mm512_sub_epi32(acc, p->sc[0]);
		d = _mm512_mul_ps(p->d, _mm512_set1_ps(tfm_fp16_to_float(y->d)));
		KQ_NO_CONTRACT(d);
		x = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), d);
		KQ_NO_CONTRACT(x);
		fs[r] = _mm512_add_ps(fs[r], x);
	}
}

/* F(R) for R rows, 1 .. PANEL_ROWS, each a copy with R a constant */
#define PANEL_ROWS_CASES(F) \
	switch (R) \
	{ \
		case 1: F(1); return; \
		case 2: F(2); return; \
		case 3: F(3); return; \
		case 4: F(4); return; \
		case 5: F(5); return; \
		case 6: F(6); return; \
		case 7: F(7); return; \
		default: F(8); return; \
	}

TARGET static void
rows_block(uint32_t t, int R, const panel_block *p, const uint8_t *a, size_t ab, int i, __m512 *fs)
{
#define Q45(r) rows_q45(r, p, a, ab, i, fs)
#define Q6(r) rows_q6(r, p, a, ab, i, fs)
#define Q80(r) rows_q8_0(r, p, a, ab, i, fs)
	if (t == KQ_Q8_0)
		PANEL_ROWS_CASES(Q80);
	if (t == KQ_Q6_K)
		PANEL_ROWS_CASES(Q6);
	PANEL_ROWS_CASES(Q45);
#undef Q45
#undef Q6
#undef Q80
}

/*
 * C[r·ldc + j] = alpha · (row r · weight row j) (+ beta · C, rounded on
 * its own) for every row r < M and the columns of groups [g0, g1) of
 * KQ_PANEL_COLS, Q4_K, Q5_K, Q6_K or Q8_0; act: the rows' Q8_K blocks
 * (Q8_0's for Q8_0) in their own order, ab bytes apart
 */
TARGET void
kq_panel_avx512(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb, const uint8_t *act,
				size_t ab, float alpha, float beta, float *C, ptrdiff_t ldc, int g0, int g1)
{
	panel_block pb __attribute__((aligned(64)));
	__m512		fs[PANEL_CHUNK];

	for (int g = g0; g < g1; g++)
	{
		const int	j0 = g * KQ_PANEL_COLS,
					nc = N - j0 < KQ_PANEL_COLS ? N - j0 : KQ_PANEL_COLS;
		const uint8_t *w = W + (size_t) j0 * wb;
		const int	nblk = K / (t == KQ_Q8_0 ? TFM_QK8_0 : TFM_QK_K),
					bb = kq_block_bytes(t);
		int32_t		off[KQ_PANEL_COLS];
		__m512i		cols;

		for (int c = 0; c < KQ_PANEL_COLS; c++)
			off[c] = (int32_t) ((size_t) (c < nc ? c : nc - 1) * wb);
		cols = _mm512_loadu_si512(off);
		for (int m0 = 0; m0 < M; m0 += PANEL_CHUNK)
		{
			const int	mc = M - m0 < PANEL_CHUNK ? M - m0 : PANEL_CHUNK;

			for (int r = 0; r < mc; r++)
				fs[r] = _mm512_setzero_ps();
			for (int i = 0; i < nblk; i++)
			{
				if (t == KQ_Q8_0)
					repack_q8_0(w, cols, i, &pb);
				else if (t == KQ_Q6_K)
					repack_q6(w, cols, i, &pb);
				else
					repack_q45(t == KQ_Q5_K, w, cols, i, &pb);
				/* the next block of the 16 columns (or the next group's first) */
				kq_prefetch_block(i + 1 < nblk ? w + (size_t) (i + 1) * bb : w + KQ_PANEL_COLS * wb, wb, nc, bb);
				for (int r0 = 0; r0 < mc; r0 += PANEL_ROWS)
					rows_block(t, mc - r0 < PANEL_ROWS ? mc - r0 : PANEL_ROWS, &pb,
							   act + (size_t) (m0 + r0) * ab, ab, i, fs + r0);
			}
			for (int r = 0; r < mc; r++)
			{
				float		v[KQ_PANEL_COLS];
				float	   *c = C + (m0 + r) * ldc + j0;

				_mm512_storeu_ps(v, fs[r]);
				kq_store_row(c, v, nc, alpha, beta);
			}
		}
	}
}
