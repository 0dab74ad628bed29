/*
 * blas.h — the one door to BLIS: kernel selection, thread count and the
 * matrix products every layer uses.
 *
 * Matrices are row-major float32.  tfm_gemm computes
 *     C = alpha · op(A) · op(B) + beta · C
 * where op(X) is X or Xᵀ; A is M×K after op, B is K×N after op, C is M×N.
 * lda/ldb/ldc are the row strides of the matrices as stored.
 * tfm_gemm_strided takes explicit row and column strides (views into fused
 * buffers such as one head of a Q/K/V matrix) and runs on one thread: it is
 * meant for calls made from inside the core's own parallel loops.  BLIS's
 * small-matrix kernels may read a few floats past the end of such a view,
 * so buffers behind views keep 16 floats of slack (the model's workspace
 * carves every buffer with that padding).
 *
 * tfm_gemm_packed is tfm_gemm_strided for the many small products of
 * attention (one head of one sequence: M, N, K of 16 to a few hundred): it
 * packs A and B into the micro-panels of BLIS's own gemm micro-kernel for
 * this CPU, in caller-provided memory (tfm_gemm_packed_floats(M, N, K)
 * floats), and calls that kernel tile by tile — BLIS's arithmetic without
 * its per-call set-up, which costs as much as these products.  Products
 * with fewer than 4 rows or columns (one query while decoding) go to
 * tfm_gemm_strided instead.
 *
 * Panels kept across products: an operand used by several products (one
 * head's keys for every causal block of queries) is packed once, with
 * tfm_pack_left (the A of C = A·B, M × K) or tfm_pack_right (the B, K × N)
 * into caller memory of tfm_panels_floats(rows, K) floats (rows = M or N),
 * and tfm_gemm_panels multiplies the first M rows of a left operand by the
 * first N columns of a right one over K steps of their inner dimension,
 * starting at step a_k0 / b_k0 of each (a prefix or a suffix of it).
 *
 * Products of at most TFM_GEMV_ROWS rows (decoding a few tokens) with
 * A not transposed skip BLIS: tfm_gemv_rows (tfm/gemv.h) reads each element
 * of B once, in address order, instead of packing it first.  tfm_gemm sends
 * them there by itself.
 */
#ifndef TFM_BLAS_H
#define TFM_BLAS_H

#include <stdbool.h>
#include <stddef.h>

#include "tfm/gemv.h"

/*
 * Choose the kernel set and initialise BLIS.  arch is NULL or "auto" (pick
 * the fastest set this CPU supports, including on CPUs BLIS 0.9 does not
 * know), or one of the names listed by tfm_blas_arch_names.  Must run before
 * any product; later calls only report.  Returns 0, or -1 with a message.
 */
int			tfm_blas_init(const char *arch, char *err, size_t errlen);
/* the kernel set BLIS runs ("skx", "zen3", "haswell", "generic" ...) */
const char *tfm_blas_arch(void);
/* why that set was chosen (auto-detected, chosen by tfm, set by the user) */
const char *tfm_blas_arch_reason(void);
/* the names tfm_blas_init accepts, comma separated */
const char *tfm_blas_arch_names(void);
/* true when arch names a kernel set this CPU can run */
bool		tfm_blas_arch_supported(const char *arch);

/*
 * Number of threads for products and the core's parallel loops.  The first
 * time a larger team is needed it is started with every signal blocked, so
 * the threads never receive the host process's signals.  Inside a parallel
 * region (each thread running work of its own: tfm_model_forward_lanes)
 * tfm_get_threads is 1, so what runs there runs on its own thread.
 */
#define TFM_MAX_THREADS 64
void		tfm_set_threads(int n);
int			tfm_get_threads(void);

void		tfm_gemm(bool transa, bool transb, int M, int N, int K,
					 float alpha, const float *A, int lda,
					 const float *B, int ldb,
					 float beta, float *C, int ldc);

/*
 * C (M × N) = A (M × K) · B (K × N) + beta · C, row-major, in which each
 * row of C is a function of its row of A alone: the same bits whatever M
 * is and wherever the row sits (the products of a varlen pass, whose
 * texts share one matrix).  Every element is summed over K in one fixed
 * order for every M, row position and thread count: one fused
 * multiply-add chain over k from 0, then one add of beta·C
 * (kernels/blas/sgemm_rows.c, tfm's own kernels, not BLIS).
 */
void		tfm_gemm_rows(int M, int N, int K, const float *A, int lda,
						  const float *B, int ldb, float beta, float *C, int ldc);
/*
 * B (K × N; element [k][j] at B[k·rs + j·cs]) packed once for
 * tfm_gemm_rows_packed into dst (tfm_gemm_rows_pack_bytes(K, N) bytes,
 * 64-byte aligned best): panels of 32 columns, K rows each, zeros past N.
 * tfm_gemm_rows_packed then gives tfm_gemm_rows's bits (on every kernel)
 * without packing B per call; with bias (NULL: none) C = A·B + bias +
 * beta·C, each element's chain plus bias[j] as one add, the bits of
 * tfm_gemm_rows with beta 1 over C rows set to the bias (no copy of it
 * into C on AVX-512).
 */
size_t		tfm_gemm_rows_pack_bytes(int K, int N);
void		tfm_gemm_rows_pack(float *dst, const float *B, ptrdiff_t rs, ptrdiff_t cs,
							   int K, int N);
void		tfm_gemm_rows_packed(int M, int N, int K, const float *A, int lda,
								 const float *Bp, const float *bias, float beta, float *C,
								 int ldc);
/* the plain-C kernel of tfm_gemm_rows on or off (tests; also TFM_SGEMM_FORCE=portable) */
void		tfm_gemm_rows_force_portable(bool on);
/* its kernel: "avx512", "avx2" or "portable" */
const char *tfm_gemm_rows_kernel(void);

void		tfm_gemm_strided(int M, int N, int K, float alpha,
							 const float *A, ptrdiff_t rsa, ptrdiff_t csa,
							 const float *B, ptrdiff_t rsb, ptrdiff_t csb,
							 float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc);

size_t		tfm_gemm_packed_floats(int M, int N, int K);
void		tfm_gemm_packed(int M, int N, int K, float alpha,
							const float *A, ptrdiff_t rsa, ptrdiff_t csa,
							const float *B, ptrdiff_t rsb, ptrdiff_t csb,
							float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc,
							float *pack);

typedef struct tfm_panels
{
	float	   *data;			/* aligned start of the panels */
	int			rows;			/* M of a left operand, N of a right one */
	int			depth;			/* the inner dimension packed (K) */
	int			height;			/* rows per panel (the kernel's MR or NR) */
} tfm_panels;

size_t		tfm_panels_floats(int rows, int depth);
/*
 * The panel layout itself, at any height (the kernels use their MR and NR;
 * tests check the heights other CPUs' kernels use): panel i of the M × K
 * matrix X holds rows i·height .. i·height+height−1, column p at
 * dst[i·height·K + p·height + r], rows past M zero.  dst needs 8 floats
 * of slack past the last panel.
 */
void		tfm_pack_panels(float *dst, int height, const float *X, ptrdiff_t rs, ptrdiff_t cs,
							int M, int K);
tfm_panels	tfm_pack_left(float *buf, int M, int K, const float *A, ptrdiff_t rs, ptrdiff_t cs);
tfm_panels	tfm_pack_right(float *buf, int K, int N, const float *B, ptrdiff_t rs, ptrdiff_t cs);
void		tfm_gemm_panels(int M, int N, int K, float alpha,
							const tfm_panels *a, int a_k0, const tfm_panels *b, int b_k0,
							float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc);

#endif							/* TFM_BLAS_H */
