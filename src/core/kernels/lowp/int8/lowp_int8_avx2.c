/*
 * lowp_int8_avx2.c — the int8 kernel for AVX2 (no AVX-512): the integer
 * sums of lowp_int8_ref.c by vpmaddubsw + vpmaddwd, as llama.cpp does.
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into a
 * saturating int16, so the offset activations (a + 128, up to 255) cannot
 * go in as they are: the activation byte becomes signed again (q = a − 128,
 * in [−127, 127] like the weights), and vpmaddubsw takes |q| and the weight
 * with q's sign (vpsignb); each pair sum is at most 2 · 127² < 2¹⁵, exact.
 * vpmaddwd against ones adds the two pairs of a column's 32-bit slot into
 * its int32 lane.  The sum is Σ q·w, which is what the reference's
 * Σ (q + 128)·w − 128·colsum is, exactly; the scaling is the reference's,
 * operation for operation, so both paths give the same bits.
 *
 * Blocks: R rows × 8V columns (one ymm per 8 columns); the int32 sums run
 * over all of K before they are scaled.  The GEMM's 12 × 32 panel goes as
 * 3 × 2 blocks of 4 rows × 16 columns (8 accumulators and two weight
 * vectors in the 16 ymm registers) on the panel made signed beforehand
 * (gemm_panel); the matrix-vector path (heights 1-4) as 1-2 rows × 32
 * columns or 3-4 rows × 16 columns twice, each row made signed as it is
 * broadcast.
 *
 * Compiled for AVX2 + FMA by function attribute only; lowp_dispatch_x86.c calls
 * into it only on CPUs with both.
 */
#include <immintrin.h>

#include "../lowp_internal.h"

#define TARGET __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))

/* row[0..n) for 8 columns from j: the reference's scaling of the sums */
TARGET INLINE void
store8(float *row, __m256i acc, const float *cscale, float sr,
	   float beta, int n)
{
	if (n >= 8)
	{
		__m256		v = _mm256_cvtepi32_ps(acc),
					s = _mm256_mul_ps(_mm256_set1_ps(sr), _mm256_loadu_ps(cscale));

		if (beta == 0.0f)
			_mm256_storeu_ps(row, _mm256_mul_ps(v, s));
		else
			_mm256_storeu_ps(row, _mm256_fmadd_ps(v, s, _mm256_mul_ps(_mm256_set1_ps(beta),
																	_mm256_loadu_ps(row))));
	}
	else
	{
		int32_t		sums[8];

		_mm256_storeu_si256((__m256i *) sums, acc);
		for (int j = 0; j < n; j++)
		{
			float		v = (float) sums[j],
						s = sr * cscale[j];

			row[j] = beta == 0.0f ? v * s : __builtin_fmaf(v, s, beta * row[j]);
		}
	}
}

/* acc + the four-byte dot products of column slots w with q (|q| in aq) */
TARGET INLINE __m256i
dot4(__m256i acc, __m256i aq, __m256i q, __m256i w)
{
	__m256i		d = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(w, q));

	return _mm256_add_epi32(acc, _mm256_madd_epi16(d, _mm256_set1_epi16(1)));
}

/* row r's V products of this step, its activations signed (q) and their magnitudes (aq) */
#define ROW(r, Q, AQ) \
	if (R > r) \
	{ \
		__m256i		q = (Q), \
					aq = (AQ); \
\
		c##r##0 = dot4(c##r##0, aq, q, w0); \
		if (V > 1) \
			c##r##1 = dot4(c##r##1, aq, q, w1); \
		if (V > 2) \
			c##r##2 = dot4(c##r##2, aq, q, w2); \
		if (V > 3) \
			c##r##3 = dot4(c##r##3, aq, q, w3); \
	}
#define ROW_OFFSET(r) \
	ROW(r, _mm256_xor_si256(_mm256_set1_epi32((int) ap[r]), bias), _mm256_abs_epi8(q))

/*
 * rows [r0, r0 + R) of the panel (height h), columns [8·v0, 8·(v0 + V)) of
 * the weight panel, R, V ≤ 4 and R·V ≤ 8 (the accumulators and the weight
 * vectors in 16 registers); rows past m and columns past n are computed,
 * not stored.  Named accumulators: an array of them stays in memory.
 */
TARGET INLINE void
block(const int R, const int V, int r0, int v0, int kq, const uint32_t *a, int h,
	  const uint32_t *b, float *c, ptrdiff_t ldc, int m, int n, float alpha,
	  const float *rscale, const float *cscale, float beta)
{
	const __m256i bias = _mm256_set1_epi8((char) 0x80);
	__m256i		c00 = _mm256_setzero_si256(),
				c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00,
				c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00,
				c33 = c00;

	for (int p = 0; p < kq; p++)
	{
		const __m256i *bp = (const __m256i *) (b + (size_t) p * LOWP_NR + 8 * v0);
		const uint32_t *ap = a + (size_t) p * h + r0;
		__m256i		w0 = _mm256_loadu_si256(bp),
					w1 = V > 1 ? _mm256_loadu_si256(bp + 1) : w0,
					w2 = V > 2 ? _mm256_loadu_si256(bp + 2) : w0,
					w3 = V > 3 ? _mm256_loadu_si256(bp + 3) : w0;

		ROW_OFFSET(0);
		ROW_OFFSET(1);
		ROW_OFFSET(2);
		ROW_OFFSET(3);
	}
	{
		__m256i		acc[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
		{c20, c21, c22, c23}, {c30, c31, c32, c33}};

		for (int r = 0; r < R; r++)
			if (r0 + r < m)
			{
				float	   *row = c + (size_t) (r0 + r) * ldc;
				float		sr = alpha * rscale[r0 + r];

				for (int v = 0; v < V; v++)
				{
					int			j = 8 * (v0 + v);

					if (j < n)
						store8(row + j, acc[r][v], cscale + j, sr, beta, n - j);
				}
			}
	}
}

/*
 * The GEMM (panel height LOWP_MR): K in chunks of KQ_CHUNK slots.  Each
 * chunk of the panel is made signed once (q and |q| side by side, so the
 * blocks broadcast both from memory and spend no instruction on them),
 * then 3 × 2 blocks of 4 rows × 16 columns add their chunk's sums to the
 * panel's int32 sums (in memory between chunks, exact in any order).
 */
#define KQ_CHUNK 128

/* the chunk's kc slots of the panel: qs = a − 128 (signed bytes), qa = |qs| */
TARGET INLINE void
signed_panel(uint32_t *qs, uint32_t *qa, const uint32_t *a, int kc)
{
	const __m256i bias = _mm256_set1_epi8((char) 0x80);
	int			total = kc * LOWP_MR,
				i = 0;

	for (; i + 8 <= total; i += 8)
	{
		__m256i		q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (a + i)), bias);

		_mm256_storeu_si256((__m256i *) (qs + i), q);
		_mm256_storeu_si256((__m256i *) (qa + i), _mm256_abs_epi8(q));
	}
	for (; i < total; i += 4)	/* total is a multiple of 4 */
	{
		__m128i		q = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (a + i)),
									  _mm256_castsi256_si128(bias));

		_mm_storeu_si128((__m128i *) (qs + i), q);
		_mm_storeu_si128((__m128i *) (qa + i), _mm_abs_epi8(q));
	}
}

/* rows [r0, r0 + 4) × columns [8·v0, 8·v0 + 16): sums (12 × 32 int32) += the chunk's */
TARGET INLINE void
block_gemm(int r0, int v0, int kc, const uint32_t *qs, const uint32_t *qa,
		   const uint32_t *b, int32_t (*sums)[LOWP_NR])
{
	const int	R = 4,
				V = 2;
	__m256i		c00 = _mm256_loadu_si256((const __m256i *) (sums[r0] + 8 * v0)),
				c01 = _mm256_loadu_si256((const __m256i *) (sums[r0] + 8 * v0 + 8)),
				c10 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 1] + 8 * v0)),
				c11 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 1] + 8 * v0 + 8)),
				c20 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 2] + 8 * v0)),
				c21 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 2] + 8 * v0 + 8)),
				c30 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 3] + 8 * v0)),
				c31 = _mm256_loadu_si256((const __m256i *) (sums[r0 + 3] + 8 * v0 + 8)),
				c02, c03, c12, c13, c22, c23, c32, c33;	/* unused: V = 2 */

	for (int p = 0; p < kc; p++)
	{
		const __m256i *bp = (const __m256i *) (b + (size_t) p * LOWP_NR + 8 * v0);
		const uint32_t *sp = qs + (size_t) p * LOWP_MR + r0,
				   *ap = qa + (size_t) p * LOWP_MR + r0;
		__m256i		w0 = _mm256_loadu_si256(bp),
					w1 = _mm256_loadu_si256(bp + 1),
					w2 = w0,
					w3 = w0;

		ROW(0, _mm256_set1_epi32((int) sp[0]), _mm256_set1_epi32((int) ap[0]));
		ROW(1, _mm256_set1_epi32((int) sp[1]), _mm256_set1_epi32((int) ap[1]));
		ROW(2, _mm256_set1_epi32((int) sp[2]), _mm256_set1_epi32((int) ap[2]));
		ROW(3, _mm256_set1_epi32((int) sp[3]), _mm256_set1_epi32((int) ap[3]));
	}
	(void) c02, (void) c03, (void) c12, (void) c13, (void) c22, (void) c23, (void) c32, (void) c33;
	_mm256_storeu_si256((__m256i *) (sums[r0] + 8 * v0), c00);
	_mm256_storeu_si256((__m256i *) (sums[r0] + 8 * v0 + 8), c01);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 1] + 8 * v0), c10);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 1] + 8 * v0 + 8), c11);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 2] + 8 * v0), c20);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 2] + 8 * v0 + 8), c21);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 3] + 8 * v0), c30);
	_mm256_storeu_si256((__m256i *) (sums[r0 + 3] + 8 * v0 + 8), c31);
}

TARGET static void
gemm_panel(int kq, const uint32_t *a, const uint32_t *b, float *c, ptrdiff_t ldc,
		   int m, int n, float alpha, const float *rscale, const float *cscale, float beta)
{
	int32_t		sums[LOWP_MR][LOWP_NR] __attribute__((aligned(32))) = {{0}};
	uint32_t	qs[KQ_CHUNK * LOWP_MR] __attribute__((aligned(32))),
				qa[KQ_CHUNK * LOWP_MR] __attribute__((aligned(32)));

	for (int p0 = 0; p0 < kq; p0 += KQ_CHUNK)
	{
		int			kc = kq - p0 < KQ_CHUNK ? kq - p0 : KQ_CHUNK;

		signed_panel(qs, qa, a + (size_t) p0 * LOWP_MR, kc);
		for (int r0 = 0; r0 < LOWP_MR && r0 < m; r0 += 4)
			for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
				block_gemm(r0, v0, kc, qs, qa, b + (size_t) p0 * LOWP_NR, sums);
	}
	for (int r = 0; r < m; r++)
	{
		float	   *row = c + (size_t) r * ldc;
		float		sr = alpha * rscale[r];

		for (int j = 0; j < n; j += 8)
			store8(row + j, _mm256_load_si256((const __m256i *) (sums[r] + j)), cscale + j, sr,
				   beta, n - j);
	}
}

#undef ROW_OFFSET
#undef ROW

TARGET void
lowp_int8_avx2_kernel(int kq, const uint32_t *a, int h, const uint32_t *b,
					  float *c, ptrdiff_t ldc, int m, int n, float alpha,
					  const float *rscale, const float *cscale,
					  const int32_t *colsum, float beta)
{
	/* the sums are Σ q·w already: no column sums to take out */
	if (h == LOWP_MR)
		gemm_panel(kq, a, b, c, ldc, m, n, alpha, rscale, cscale, beta);
	else if (h == 1)
		block(1, 4, 0, 0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
	else if (h == 2)
		block(2, 4, 0, 0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
	else if (h == 3 || h == 4)
		for (int v0 = 0; v0 < 4 && 8 * v0 < n; v0 += 2)
		{
			if (h == 3)
				block(3, 2, 0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
			else
				block(4, 2, 0, v0, kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, beta);
		}
	else						/* not reached: the drivers use heights 1-4 and LOWP_MR */
		lowp_int8_ref_kernel(kq, a, h, b, c, ldc, m, n, alpha, rscale, cscale, colsum, beta);
}
