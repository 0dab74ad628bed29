/*
 * lowp_bf16_avx2.c — the bf16 kernel for AVX2 + FMA (no AVX-512): each
 * 32-bit slot holds a pair of bf16 (k low, k + 1 high); its low half
 * shifted up 16 bits and its high half masked are the two values as fp32,
 * exactly, so every product is fp32 FMA on widened operands.  Its gain
 * over fp32 is the halved weight traffic (the matrix-vector path); in the
 * GEMM the widening of a weight vector is shared by the block's rows and
 * that of an activation by its columns, so it runs near the FMA peak.
 *
 * Blocks: R rows × 8V columns.  GEMM (panel height LOWP_MR = 12): 2 × 2
 * blocks of 6 rows × 16 columns (12 accumulators: two dependent FMAs per
 * step each, enough chains to fill both FMA pipes).  Matrix-vector
 * (heights 1-4): every column of the panel at once, with separate
 * accumulators for the low and high halves where rows are few (the FMA
 * latency would otherwise bound it); 3-4 rows × 16 columns twice.
 *
 * Compiled for AVX2 + FMA by function attribute only; lowp_dispatch_x86.c calls
 * into it only on CPUs with both.
 */
#include <immintrin.h>

#include "../lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* row[0..n) for 8 columns: alpha · acc + beta · row */
TARGET INLINE void
store8(float *row, __m256 acc, float alpha, float beta, int n)
{
	acc = _mm256_mul_ps(_mm256_set1_ps(alpha), acc);
	if (n >= 8)
	{
		if (beta != 0.0f)
			acc = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(row), acc);
		_mm256_storeu_ps(row, acc);
	}
	else
	{
		float		v[8];

		_mm256_storeu_ps(v, acc);
		for (int j = 0; j < n; j++)
			row[j] = beta == 0.0f ? v[j] : beta * row[j] + v[j];
	}
}

TARGET INLINE __m256
lo_half(__m256i x)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}

TARGET INLINE __m256
hi_half(__m256i x, __m256i mask)
{
	return _mm256_castsi256_ps(_mm256_and_si256(x, mask));
}

/*
 * rows [r0, r0 + R) of the panel (height h), columns [8·v0, 8·(v0 + V)) of
 * the weight panel, S = 2: separate accumulators for the halves
 */
TARGET INLINE void
block(const int R, const int V, const int S, int r0, int v0, int kk, const uint32_t *a,
	  int h, const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	__m256		acc[2][4][4];	/* S ≤ 2, R ≤ 4, V ≤ 4: constant indices only */
	const __m256i mask = _mm256_set1_epi32((int) 0xFFFF0000u);

	for (int s = 0; s < S; s++)
		for (int r = 0; r < R; r++)
			for (int v = 0; v < V; v++)
				acc[s][r][v] = _mm256_setzero_ps();
	for (int p = 0; p < kk; p++)
	{
		const __m256i *bp = (const __m256i *) (b + (size_t) p * LOWP_NR + 8 * v0);
		const uint32_t *ap = a + (size_t) p * h + r0;
		__m256		w[4];

		/* the low halves: k = 2p */
		for (int v = 0; v < V; v++)
			w[v] = lo_half(_mm256_loadu_si256(bp + v));
		for (int r = 0; r < R; r++)
		{
			__m256		x = lo_half(_mm256_set1_epi32((int) ap[r]));

			for (int v = 0; v < V; v++)
				acc[0][r][v] = _mm256_fmadd_ps(x, w[v], acc[0][r][v]);
		}
		/* the high halves: k = 2p + 1 */
		for (int v = 0; v < V; v++)
			w[v] = hi_half(_mm256_loadu_si256(bp + v), mask);
		for (int r = 0; r < R; r++)
		{
			__m256		x = hi_half(_mm256_set1_epi32((int) ap[r]), mask);

			for (int v = 0; v < V; v++)
				acc[S - 1][r][v] = _mm256_fmadd_ps(x, w[v], acc[S - 1][r][v]);
		}
	}
	for (int r = 0; r < R; r++)
		if (r0 + r < m)
			for (int v = 0; v < V; v++)
			{
				int			j = 8 * (v0 + v);

				if (j < n)
					store8(c + (size_t) (r0 + r) * ldc + j,
						   S == 2 ? _mm256_add_ps(acc[0][r][v], acc[1][r][v]) : acc[0][r][v],
						   alpha, beta, n - j);
			}
}

/*
 * the GEMM's panel (height LOWP_MR) widened to fp32: k = 2p and 2p + 1 of
 * row r at f[2p·LOWP_MR + r] and f[(2p + 1)·LOWP_MR + r], for kk ≤ LOWP_KC
 */
TARGET INLINE void
widen_panel(float *f, const uint32_t *a, int kk)
{
	const __m256i mask = _mm256_set1_epi32((int) 0xFFFF0000u);

	for (int p = 0; p < kk; p++)
	{
		const uint32_t *s = a + (size_t) p * LOWP_MR;
		float	   *lo = f + (size_t) 2 * p * LOWP_MR,
				   *hi = lo + LOWP_MR;
		__m256i		x = _mm256_loadu_si256((const __m256i *) s);
		__m128i		y = _mm_loadu_si128((const __m128i *) (s + 8));

		_mm256_storeu_ps(lo, lo_half(x));
		_mm256_storeu_ps(hi, hi_half(x, mask));
		_mm_storeu_ps(lo + 8, _mm_castsi128_ps(_mm_slli_epi32(y, 16)));
		_mm_storeu_ps(hi + 8, _mm_castsi128_ps(_mm_and_si128(y, _mm256_castsi256_si128(mask))));
	}
}

/*
 * rows [r0, r0 + 6) × columns [8·v0, 8·v0 + 16) of the GEMM's block from
 * the widened panel f: per pair of k, the two weight vectors widened once
 * for the six rows, whose activations are broadcast from memory (the
 * fp32 micro-kernel's shape: 12 accumulators, 2 weights, 1 broadcast)
 */
/* row r of the block: its activation broadcast against the two weight vectors */
#define FMA_ROW(r) \
	do { \
		__m256		xr = _mm256_broadcast_ss(x + r); \
\
		c##r##0 = _mm256_fmadd_ps(xr, w0, c##r##0); \
		c##r##1 = _mm256_fmadd_ps(xr, w1, c##r##1); \
	} while (0)

TARGET INLINE void
block_6x16(int r0, int v0, int kk, const float *f, const uint32_t *b,
		   float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	/* named accumulators: an array of them, indexed again below, stays in memory */
	__m256		c00 = _mm256_setzero_ps(),
				c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
				c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	const __m256i mask = _mm256_set1_epi32((int) 0xFFFF0000u);

	for (int p = 0; p < kk; p++)
	{
		const __m256i *bp = (const __m256i *) (b + (size_t) p * LOWP_NR + 8 * v0);
		const float *x = f + (size_t) 2 * p * LOWP_MR + r0;
		__m256		w0 = lo_half(_mm256_loadu_si256(bp)),
					w1 = lo_half(_mm256_loadu_si256(bp + 1));

		/* the low halves (k = 2p), then the high ones (k = 2p + 1) */
		for (int half = 0; half < 2; half++)
		{
			FMA_ROW(0);
			FMA_ROW(1);
			FMA_ROW(2);
			FMA_ROW(3);
			FMA_ROW(4);
			FMA_ROW(5);
			if (half == 0)
			{
				w0 = hi_half(_mm256_loadu_si256(bp), mask);
				w1 = hi_half(_mm256_loadu_si256(bp + 1), mask);
				x += LOWP_MR;
			}
		}
	}
	{
		__m256		acc[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};

		for (int r = 0; r < 6; r++)
			if (r0 + r < m)
				for (int v = 0; v < 2; v++)
				{
					int			j = 8 * (v0 + v);

					if (j < n)
						store8(c + (size_t) (r0 + r) * ldc + j, acc[r][v], alpha, beta, n - j);
				}
	}
}

#undef FMA_ROW

TARGET void
lowp_bf16_avx2_kernel(int kk, const uint32_t *a, int h, const uint32_t *b,
					  float *c, ptrdiff_t ldc, int m, int n, float alpha, float beta)
{
	switch (h)
	{
		case LOWP_MR:
			/* K blocks of at most LOWP_KC pairs (the driver's): the later ones add */
			for (int p0 = 0; p0 < kk; p0 += LOWP_KC)
			{
				float		f[2 * LOWP_KC * LOWP_MR] __attribute__((aligned(32)));
				int			kc = kk - p0 < LOWP_KC ? kk - p0 : LOWP_KC;
				float		bb = p0 == 0 ? beta : 1.0f;

				widen_panel(f, a + (size_t) p0 * LOWP_MR, kc);
				for (int r0 = 0; r0 < LOWP_MR && r0 < m; r0 += 6)
					for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
						block_6x16(r0, v0, kc, f, b + (size_t) p0 * LOWP_NR, c, ldc, m, n, alpha, bb);
			}
			break;
		case 1:
			block(1, 4, 2, 0, 0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 2:
			block(2, 4, 1, 0, 0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 3:
			for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
				block(3, 2, 1, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		case 4:
			for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
				block(4, 2, 1, 0, v0, kk, a, h, b, c, ldc, m, n, alpha, beta);
			break;
		default:
			/* not reached: the drivers use heights 1-4 and LOWP_MR */
			lowp_bf16_ref_kernel(kk, a, h, b, c, ldc, m, n, alpha, beta);
	}
}
