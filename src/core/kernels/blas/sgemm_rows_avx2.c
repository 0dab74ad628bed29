/*
 * sgemm_rows_avx2.c — the AVX2 + FMA kernel of tfm_gemm_rows (see
 * sgemm_rows_kernel.h): up to 6 rows × 16 columns of C in twelve 8-float
 * accumulators, each k one broadcast of A per row and two loads of the B
 * panel; a copy for each row count, so a cut tile computes only its rows.  Every
 * lane is one FMA chain over k from 0, as the plain-C kernel's
 * (sgemm_rows.c) with fmaf: the two give the same bits.  CPUs with
 * AVX-512 run sgemm_rows_avx512.c instead (TFM_SGEMM_FORCE=avx2 runs this
 * one there).
 */
#include <immintrin.h>

#include "sgemm_rows_kernel.h"

#define TARGET __attribute__((target("avx2,fma")))

/* one row of C from its two accumulators: n columns, + C if beta */
static inline __attribute__((always_inline)) TARGET void
store_row(float *c, __m256 x0, __m256 x1, int n, bool beta)
{
	if (n == SR_NR)
	{
		if (beta)
		{
			x0 = _mm256_add_ps(x0, _mm256_loadu_ps(c));
			x1 = _mm256_add_ps(x1, _mm256_loadu_ps(c + 8));
		}
		_mm256_storeu_ps(c, x0);
		_mm256_storeu_ps(c + 8, x1);
	}
	else
	{
		float		t[SR_NR];

		_mm256_storeu_ps(t, x0);
		_mm256_storeu_ps(t + 8, x1);
		for (int j = 0; j < n; j++)
			c[j] = beta ? t[j] + c[j] : t[j];
	}
}

/* R rows (a constant in each copy: the loops over rows unroll, acc stays in registers) */
static inline __attribute__((always_inline)) TARGET void
rows_r(const int R, int K, const float *A, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
	   int n, float *C, ptrdiff_t ldc, bool beta)
{
	__m256		acc[SR_MR][2];

#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_ps();
	for (int k = 0; k < K; k++, b += ldb)
	{
		__m256		b0 = _mm256_loadu_ps(b),
					b1 = _mm256_loadu_ps(b + 8);

#pragma GCC unroll 6
		for (int r = 0; r < R; r++)
		{
			__m256		a = _mm256_broadcast_ss(A + r * lda + k);

			acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
		store_row(C + r * ldc, acc[r][0], acc[r][1], n, beta);
}

TARGET void
sr_kernel_avx2(int K, const float *A, ptrdiff_t lda, int m, const float *b, ptrdiff_t ldb,
			   int n, float *C, ptrdiff_t ldc, bool beta)
{
	/* one copy of rows_r per row count */
#define ROWS_CASE(r) case r: rows_r(r, K, A, lda, b, ldb, n, C, ldc, beta); break;
	switch (m)
	{
		ROWS_CASE(1)
		ROWS_CASE(2)
		ROWS_CASE(3)
		ROWS_CASE(4)
		ROWS_CASE(5)
		default:
			rows_r(SR_MR, K, A, lda, b, ldb, n, C, ldc, beta);
	}
#undef ROWS_CASE
}

/*
 * R rows × G panels (16·G columns, all stored), B read in place: G = 6 / R
 * panels share each pass over a row of B (one row of A: 96 columns, six
 * cache lines in a run).  Every lane the same FMA chain as rows_r's.
 */
static inline __attribute__((always_inline)) TARGET void
wide_r(const int R, const int G, int K, const float *A, ptrdiff_t lda, const float *b,
	   ptrdiff_t ldb, float *C, ptrdiff_t ldc, bool beta)
{
	__m256		acc[SR_MR][12];

#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
#pragma GCC unroll 12
		for (int v = 0; v < 2 * G; v++)
			acc[r][v] = _mm256_setzero_ps();
	for (int k = 0; k < K; k++, b += ldb)
	{
		__m256		bv[12];

#pragma GCC unroll 12
		for (int v = 0; v < 2 * G; v++)
			bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
		for (int r = 0; r < R; r++)
		{
			__m256		a = _mm256_broadcast_ss(A + r * lda + k);

#pragma GCC unroll 12
			for (int v = 0; v < 2 * G; v++)
				acc[r][v] = _mm256_fmadd_ps(a, bv[v], acc[r][v]);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < R; r++)
#pragma GCC unroll 6
		for (int g = 0; g < G; g++)
			store_row(C + r * ldc + 16 * g, acc[r][2 * g], acc[r][2 * g + 1], SR_NR, beta);
}

int
sr_wide_panels(int m)
{
	return m >= 1 && m <= 3 ? SR_MR / m : 1;
}

TARGET void
sr_wide_avx2(int K, const float *A, ptrdiff_t lda, int m, const float *b, ptrdiff_t ldb,
			 float *C, ptrdiff_t ldc, bool beta)
{
	switch (m)
	{
		case 1:
			wide_r(1, 6, K, A, lda, b, ldb, C, ldc, beta);
			break;
		case 2:
			wide_r(2, 3, K, A, lda, b, ldb, C, ldc, beta);
			break;
		case 3:
			wide_r(3, 2, K, A, lda, b, ldb, C, ldc, beta);
			break;
		default:
			sr_kernel_avx2(K, A, lda, m, b, ldb, SR_NR, C, ldc, beta);
	}
}
