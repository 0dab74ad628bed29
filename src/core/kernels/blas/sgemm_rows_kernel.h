/*
 * sgemm_rows_kernel.h — the micro-kernels of tfm's own row-exact fp32
 * product: their shape and contract, the portable one (in sgemm_rows.c,
 * the driver) and the x86 ones (sgemm_rows_avx2.c, sgemm_rows_avx512.c).  Internal to
 * src/core/kernels/blas.
 */
#ifndef TFM_SGEMM_ROWS_KERNEL_H
#define TFM_SGEMM_ROWS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#define SR_MR 6					/* rows of C per kernel call */
#define SR_NR 16				/* columns of C per kernel call: one panel of B */
#define SR_PW 32				/* columns a panel of B packed once (tfm_gemm_rows_pack):
								 * SR512_NR, or two of SR_NR */

/*
 * C[0..m)[0..n) = Σ_k A[r][k]·b[k][j] (+ C if beta, which is 0 or 1) for
 * m ≤ SR_MR rows of A (lda apart) and a panel b of SR_NR columns (row k
 * at b + k·ldb; columns past n read but not stored).  Every element is
 * one fused multiply-add chain over k = 0 .. K-1 from 0, then one add of
 * C: its bits depend on its row of A and its column of B alone.
 */
typedef void (*sr_kernel_fn) (int K, const float *A, ptrdiff_t lda, int m,
							  const float *b, ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc,
							  bool beta);

void		sr_kernel_c(int K, const float *A, ptrdiff_t lda, int m, const float *b,
						ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc, bool beta);

/* the AVX-512 kernel's tile (below); defined on every target, the driver reads them */
#define SR512_MR 12
#define SR512_NR 32

#if defined(__x86_64__)
/*
 * m ≤ 3 rows (a short text alone), B read in place: sr_wide_panels(m)
 * full panels at once (16 columns each, all stored), so each row of B is
 * read in one run of up to 96 columns; the same bits as sr_kernel_avx2
 */
int			sr_wide_panels(int m);
void		sr_wide_avx2(int K, const float *A, ptrdiff_t lda, int m, const float *b,
						 ptrdiff_t ldb, float *C, ptrdiff_t ldc, bool beta);
void		sr_kernel_avx2(int K, const float *A, ptrdiff_t lda, int m, const float *b,
						   ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc, bool beta);

/*
 * AVX-512 (sgemm_rows_avx512.c): tiles of SR512_MR rows × SR512_NR
 * columns from a packed panel of that width (n ≤ SR512_NR stored), and
 * for m ≤ SR512_MR rows with B in place, n columns of any count; both
 * the same bits as sr_kernel_c
 */
void		sr_kernel_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b,
							 ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc, bool beta);
void		sr_direct_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b,
							 ptrdiff_t ldb, int n, float *C, ptrdiff_t ldc, bool beta);
/* m ≤ SR512_MR rows, B packed once (tfm_gemm_rows_pack: panels of SR512_NR
 * columns, K rows each, one after the other): n columns */
void		sr_packed_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *bp,
							 int n, float *C, ptrdiff_t ldc, bool beta, const float *bias);
/* sr_kernel_avx512 on one packed panel, adding bias[0..n) (NULL: none) after the
 * chain as beta 1 would add it from C: the same bits; and K · pfs bytes from pf
 * (NULL: none) prefetched into L2 on the way, a line a step */
void		sr_tile_avx512(int K, const float *A, ptrdiff_t lda, int m, const float *b, int n,
						   float *C, ptrdiff_t ldc, bool beta, const float *bias,
						   const char *pf, ptrdiff_t pfs);
#endif

#endif							/* TFM_SGEMM_ROWS_KERNEL_H */
