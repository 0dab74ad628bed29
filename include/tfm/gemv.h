/*
 * gemv.h — fp32 products with a handful of rows (decoding one to eight
 * tokens), which tfm_gemm (tfm/blas.h) sends here instead of to BLIS:
 * C = alpha · A · op(B) + beta · C with A (M × K, not transposed) of
 * M ≤ TFM_GEMV_ROWS rows, B K × N as stored or (transb) N × K.  The work is
 * shared among at most `threads` threads; results do not depend on their
 * number.
 */
#ifndef TFM_GEMV_H
#define TFM_GEMV_H

#include <stdbool.h>

#define TFM_GEMV_ROWS 8

void		tfm_gemv_rows(int threads, bool transb, int M, int N, int K, float alpha,
						  const float *A, int lda, const float *B, int ldb,
						  float beta, float *C, int ldc);

#endif							/* TFM_GEMV_H */
