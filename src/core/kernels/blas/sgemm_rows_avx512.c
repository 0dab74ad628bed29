/*
 * sgemm_rows_avx512.c — the AVX-512 kernels of tfm_gemm_rows (see
 * sgemm_rows_kernel.h): up to 12 rows × 32 columns of C in twenty-four
 * 16-float accumulators, each k two loads of the B panel and one
 * broadcast of A per row (packed B, many rows); and, for at most 12 rows
 * with B read in place, as many 16-column vectors a pass over each row of
 * B as the accumulators allow (up to 128 columns for one row).  Columns
 * past n are masked: never read, never stored.  Every lane is one FMA
 * chain over k from 0, as the plain-C kernel's (sgemm_rows.c) with fmaf
 * and the AVX2 kernel's: the three give the same bits.  Compiled for
 * AVX-512F by function attribute only; sgemm_rows.c calls it only where
 * the CPU has it.
 */
#include <immintrin.h>

#include "sgemm_rows_kernel.h"

#define TARGET __attribute__((target("avx512f,fma")))
#define INLINE static inline __attribute__((always_inline))

/* the lanes of vector v (of 16 floats) below n columns */
INLINE __mmask16
lanes(int n, int v)
{
	int			left = n - 16 * v;

	return left >= 16 ? (__mmask16) 0xFFFF : left <= 0 ? 0 : (__mmask16) ((1u << left) - 1);
}

/*
 * R rows × G vectors (16·G columns, n of them real), B rows ldb apart;
 * vectors 2q and 2q + 1 at b + q·ps (ps 32: one run of columns, B in
 * place; ps K·32: G/2 panels packed one after the other): R and G
 * constants in each copy, so the loops unroll and the accumulators stay
 * in registers (R · G ≤ 24).
 */
/* the chains over k: pre (a prefetch, or nothing) and load(bb) of B's vector v */
#define K_LOOP(pre, load) \
	for (int k = 0; k < K; k++, b += ldb) \
	{ \
		__m512		bv[8]; \
 \
		pre; \
		_Pragma("GCC unroll 8") \
		for (int v = 0; v < G; v++) \
		{ \
			const float *bb = b + (v >> 1) * ps + 16 * (v & 1); \
 \
			bv[v] = load; \
		} \
		_Pragma("GCC unroll 12") \
		for (int r = 0; r < R; r++) \
		{ \
			__m512		a = _mm512_set1_ps(A[r * lda + k]); \
 \
			_Pragma("GCC unroll 8") \
			for (int v = 0; v < G; v++) \
				acc[r][v] = _mm512_fmadd_ps(a, bv[v], acc[r][v]); \
		} \
	}

INLINE TARGET void
tile_pf(const int R, const int G, int K, const float *A, ptrdiff_t lda, const float *b,
		ptrdiff_t ldb, ptrdiff_t ps, const bool packed, int n, float *C, ptrdiff_t ldc, bool beta,
		const float *bias, const char *pf, ptrdiff_t pfs)
{
	__m512		acc[SR512_MR][8];
	__mmask16	mk[8];

#pragma GCC unroll 8
	for (int v = 0; v < G; v++)
		mk[v] = lanes(n, v);
#pragma GCC unroll 12
	for (int r = 0; r < R; r++)
#pragma GCC unroll 8
		for (int v = 0; v < G; v++)
			acc[r][v] = _mm512_setzero_ps();
	/*
	 * A packed panel has zeros past n: its loads need no mask (a masked
	 * load costs a uop of a port the FMAs use, besides the load, and its
	 * mask a move into k each step).  The prefetch in a loop of its own.
	 */
	if (packed && pf)
	{
		K_LOOP(__builtin_prefetch(pf + (ptrdiff_t) k * pfs, 0, 2), _mm512_loadu_ps(bb));
	}
	else if (packed)
	{
		K_LOOP((void) 0, _mm512_loadu_ps(bb));
	}
	else
	{
		K_LOOP((void) 0, _mm512_maskz_loadu_ps(mk[v], bb));
	}
#pragma GCC unroll 12
	for (int r = 0; r < R; r++)
#pragma GCC unroll 8
		for (int v = 0; v < G; v++)
		{
			float	   *c = C + r * ldc + 16 * v;
			__m512		x = acc[r][v];

			/* the bias as beta 1 adds it from a copy in C: the same one add */
			if (bias)
				x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk[v], bias + 16 * v));
			if (beta)
				x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk[v], c));
			_mm512_mask_storeu_ps(c, mk[v], x);
		}
}

INLINE TARGET void
tile_ps(const int R, const int G, int K, const float *A, ptrdiff_t lda, const float *b,
		ptrdiff_t ldb, ptrdiff_t ps, int n, float *C, ptrdiff_t ldc, bool beta,
		const float *bias)
{
	tile_pf(R, G, K, A, lda, b, ldb, ps, true, n, C, ldc, beta, bias, NULL, 0);
}

INLINE TARGET void
tile(const int R, const int G, int K, const float *A, ptrdiff_t lda, const float *b,
	 ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc, bool beta)
{
	tile_pf(R, G, K, A, lda, b, ldb, 32, false, n, C, ldc, beta, NULL, NULL, 0);
}

TARGET void
sr_kernel_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b, ptrdiff_t ldb,
				 int n, float *C, ptrdiff_t ldc, bool beta)
{
#define ROWS_CASE(r) case r: tile(r, 2, K, A, lda, b, ldb, n, C, ldc, beta); break;
	switch (m)
	{
		ROWS_CASE(1)
		ROWS_CASE(2)
		ROWS_CASE(3)
		ROWS_CASE(4)
		ROWS_CASE(5)
		ROWS_CASE(6)
		ROWS_CASE(7)
		ROWS_CASE(8)
		ROWS_CASE(9)
		ROWS_CASE(10)
		ROWS_CASE(11)
		default:
			tile(SR512_MR, 2, K, A, lda, b, ldb, n, C, ldc, beta);
	}
#undef ROWS_CASE
}

/* m ≤ SR512_MR rows, B in place: n columns, G vectors a pass (more for fewer rows) */
TARGET void
sr_direct_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b, ptrdiff_t ldb,
				 int n, float *C, ptrdiff_t ldc, bool beta)
{
#define DIRECT(R, G) \
	for (int j = 0; j < n; j += 16 * (G)) \
		tile(R, G, K, A, lda, b + j, ldb, n - j < 16 * (G) ? n - j : 16 * (G), C + j, ldc, beta); \
	break;
	switch (m)
	{
		case 1:
			DIRECT(1, 8)
		case 2:
			DIRECT(2, 6)
		case 3:
			DIRECT(3, 4)
		case 4:
			DIRECT(4, 4)
		case 5:
			DIRECT(5, 2)
		case 6:
			DIRECT(6, 2)
		case 7:
			DIRECT(7, 2)
		case 8:
			DIRECT(8, 2)
		case 9:
			DIRECT(9, 2)
		case 10:
			DIRECT(10, 2)
		case 11:
			DIRECT(11, 2)
		default:
			DIRECT(SR512_MR, 2)
	}
#undef DIRECT
}

/*
 * m ≤ SR512_MR rows from packed panels (tfm_gemm_rows_pack: K × 32 each,
 * one after the other from bp): n columns, as many panels a pass as the
 * accumulators allow for m rows (4 for one row), each read in one stream.
 * Where fewer panels are left than a pass reads (a classifier's head: 2
 * columns, one panel), they go one at a time: a pass's vectors of the
 * panels past the last one would be masked off, but their addresses lie
 * past the packed matrix, and on AMD Zen 4 a masked load whose masked-off
 * lanes fall on a page not mapped takes a microcode assist — a 1 × 384 ×
 * 2 head took ~575 µs instead of ~2 (the same bits either way: each
 * lane's chain does not depend on the pass's width).
 */
TARGET void
sr_packed_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *bp, int n,
				 float *C, ptrdiff_t ldc, bool beta, const float *bias)
{
	const ptrdiff_t ps = (ptrdiff_t) K * SR512_NR;

#define PACKED(R, P) \
	for (int j = 0; j < n; j += SR512_NR * (P)) \
	{ \
		if ((P) > 1 && n - j <= SR512_NR * ((P) - 1)) \
		{ \
			for (; j < n; j += SR512_NR) \
				tile_ps(R, 2, K, A, lda, bp + (j / SR512_NR) * ps, SR512_NR, ps, \
						n - j < SR512_NR ? n - j : SR512_NR, C + j, ldc, beta, \
						bias ? bias + j : NULL); \
			break; \
		} \
		tile_ps(R, 2 * (P), K, A, lda, bp + (j / SR512_NR) * ps, SR512_NR, ps, \
				n - j < SR512_NR * (P) ? n - j : SR512_NR * (P), C + j, ldc, beta, \
				bias ? bias + j : NULL); \
	} \
	break;
	switch (m)
	{
		case 1:
			PACKED(1, 4)
		case 2:
			PACKED(2, 3)
		case 3:
			PACKED(3, 2)
		case 4:
			PACKED(4, 2)
		case 5:
			PACKED(5, 2)
		case 6:
			PACKED(6, 2)
		case 7:
			PACKED(7, 1)
		case 8:
			PACKED(8, 1)
		case 9:
			PACKED(9, 1)
		case 10:
			PACKED(10, 1)
		case 11:
			PACKED(11, 1)
		default:
			PACKED(SR512_MR, 1)
	}
#undef PACKED
}

/*
 * one tile of m ≤ SR512_MR rows from a packed panel (n ≤ SR512_NR columns),
 * + bias if given; pf (or NULL): K · pfs bytes from there fetched into L2,
 * one line a step of k, spread among the products' loads
 */
TARGET void
sr_tile_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b, int n, float *C,
			   ptrdiff_t ldc, bool beta, const float *bias, const char *pf, ptrdiff_t pfs)
{
#define ROWS_CASE(r) case r: tile_pf(r, 2, K, A, lda, b, SR512_NR, 32, true, n, C, ldc, beta, bias, pf, pfs); break;
	switch (m)
	{
		ROWS_CASE(1)
		ROWS_CASE(2)
		ROWS_CASE(3)
		ROWS_CASE(4)
		ROWS_CASE(5)
		ROWS_CASE(6)
		ROWS_CASE(7)
		ROWS_CASE(8)
		ROWS_CASE(9)
		ROWS_CASE(10)
		ROWS_CASE(11)
		default:
			tile_pf(SR512_MR, 2, K, A, lda, b, SR512_NR, 32, true, n, C, ldc, beta, bias, pf, pfs);
	}
#undef ROWS_CASE
}
