/*
 * gemv.c — fp32 products with a handful of rows (decoding one to eight
 * tokens): C = alpha · A · op(B) + beta · C with A of M ≤ TFM_GEMV_ROWS rows.
 *
 * A general gemm packs B into panels before it multiplies; with one row of A
 * that copy costs as much as the product itself, and B (a weight matrix,
 * megabytes) is read twice.  Here every element of B is read once, from
 * memory in address order, which is all a product of one row can do:
 *
 *   B as stored (K × N, y = x·W): a thread takes a range of columns and
 *     walks it in blocks as wide as 32 KB of accumulators allow (8,192
 *     columns for one row of A, 1,024 for eight); for each k it adds
 *     A[m][k] · B[k][block] to an accumulator row per m (in L1), reading a
 *     long contiguous run of B's row k, eight rows k at a time.
 *   Bᵀ (B stored N × K, logits = h·Eᵀ): each column j of the product is the
 *     dot product of A's rows with B's row j; a thread takes a range of j.
 *
 * Every element of C is summed by one thread in a fixed order, so results do
 * not depend on the thread count.  beta = 0 never reads C.
 */
#include <stddef.h>
#include <string.h>

#include "tfm/gemv.h"
#include "../vecmath.h"

#define ACC_FLOATS 8192			/* accumulators per block: 32 KB, in L1 */
#define DOT_W 16				/* floats per dot-product lane group */

static inline void
gemv_store_row(float *c, const float *acc, int n, float alpha, float beta)
{
	if (beta == 0.0f)
		for (int j = 0; j < n; j++)
			c[j] = alpha * acc[j];
	else
		for (int j = 0; j < n; j++)
			c[j] = alpha * acc[j] + beta * c[j];
}

/* columns [j0, j1) of C's R rows, B as stored; R a constant after inlining */
static inline __attribute__((always_inline)) void
axpy_block(const int R, int K, float alpha, const float *A, ptrdiff_t lda,
		   const float *B, ptrdiff_t ldb, float beta, float *C, ptrdiff_t ldc,
		   int j0, int j1)
{
	/* a block is as wide as the accumulators allow: long runs of each row */
	const int	cols = ACC_FLOATS / R / 16 * 16;
	float		acc[ACC_FLOATS] __attribute__((aligned(64)));
	int			k;

	for (int jb = j0; jb < j1; jb += cols)
	{
		int			n = j1 - jb < cols ? j1 - jb : cols;

		for (int m = 0; m < R; m++)
			for (int j = 0; j < n; j++)
				acc[m * cols + j] = 0.0f;
		/*
		 * eight rows of B at a time: each accumulator is loaded and stored
		 * once per eight products, added in k order as one at a time would
		 * (four at a time took 16 % fewer tokens at one thread on Zen 4,
		 * bench_lowp's decode, the accumulators' traffic; one at a time 46 %)
		 */
		for (k = 0; k + 8 <= K; k += 8)
		{
			const float *b0 = B + (size_t) k * ldb + jb;
			float		a[8][TFM_GEMV_ROWS];

			for (int m = 0; m < R; m++)
				for (int u = 0; u < 8; u++)
					a[u][m] = A[m * lda + k + u];
			for (int j = 0; j < n; j++)
			{
				float		x0 = b0[j],
							x1 = b0[ldb + j],
							x2 = b0[2 * ldb + j],
							x3 = b0[3 * ldb + j],
							x4 = b0[4 * ldb + j],
							x5 = b0[5 * ldb + j],
							x6 = b0[6 * ldb + j],
							x7 = b0[7 * ldb + j];

				for (int m = 0; m < R; m++)
					acc[m * cols + j] = (((((((acc[m * cols + j] + a[0][m] * x0) + a[1][m] * x1) + a[2][m] * x2) + a[3][m] * x3) + a[4][m] * x4) + a[5][m] * x5) + a[6][m] * x6) + a[7][m] * x7;
			}
		}
		for (; k < K; k++)
		{
			const float *b = B + (size_t) k * ldb + jb;
			float		a[TFM_GEMV_ROWS];

			for (int m = 0; m < R; m++)
				a[m] = A[m * lda + k];
			for (int j = 0; j < n; j++)
			{
				float		bj = b[j];

				for (int m = 0; m < R; m++)
					acc[m * cols + j] += a[m] * bj;
			}
		}
		for (int m = 0; m < R; m++)
			gemv_store_row(C + m * ldc + jb, acc + m * cols, n, alpha, beta);
	}
}

typedef float lanes __attribute__((vector_size(DOT_W * sizeof(float))));

/* an unaligned load of DOT_W floats */
#define LOAD_LANES(v, p) memcpy(&(v), (p), sizeof(lanes))

typedef float half_lanes __attribute__((vector_size(DOT_W / 2 * sizeof(float))));
typedef float quarter_lanes __attribute__((vector_size(DOT_W / 4 * sizeof(float))));

/* the DOT_W (16) lanes' sum, halves added pairwise (16 → 8 → 4 → 2 → 1) */
static inline __attribute__((always_inline)) float
lanes_sum(const lanes *pv)
{
	const lanes v = *pv;
	half_lanes	h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
		__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
	quarter_lanes q = __builtin_shufflevector(h, h, 0, 1, 2, 3) +
		__builtin_shufflevector(h, h, 4, 5, 6, 7);

	return (q[0] + q[2]) + (q[1] + q[3]);
}

/* C[j] for one row of A: lanes_sum's order, four columns side by side */
static inline __attribute__((always_inline)) void
dot_one_row(int K, float alpha, const float *A, const float *B, ptrdiff_t ldb, float beta,
			float *C, int j0, int j1)
{
	const int	kv = K / DOT_W * DOT_W;
	int			j = j0;

	for (; j + 4 <= j1; j += 4)
	{
		const float *b0 = B + (size_t) j * ldb,
				   *b1 = b0 + ldb,
				   *b2 = b1 + ldb,
				   *b3 = b2 + ldb;
		lanes		c0 = {0},
					c1 = {0},
					c2 = {0},
					c3 = {0};
		float		s[4];

		for (int k = 0; k < kv; k += DOT_W)
		{
			lanes		va,
						v0,
						v1,
						v2,
						v3;

			LOAD_LANES(va, A + k);
			LOAD_LANES(v0, b0 + k);
			LOAD_LANES(v1, b1 + k);
			LOAD_LANES(v2, b2 + k);
			LOAD_LANES(v3, b3 + k);
			c0 += va * v0;
			c1 += va * v1;
			c2 += va * v2;
			c3 += va * v3;
		}
		s[0] = lanes_sum(&c0);
		s[1] = lanes_sum(&c1);
		s[2] = lanes_sum(&c2);
		s[3] = lanes_sum(&c3);
		for (int u = 0; u < 4; u++)
		{
			const float *b = b0 + (size_t) u * ldb;
			float		x = s[u];

			for (int k = kv; k < K; k++)
				x += A[k] * b[k];
			x *= alpha;
			C[j + u] = beta == 0.0f ? x : x + beta * C[j + u];
		}
	}
	for (; j < j1; j++)
	{
		const float *b = B + (size_t) j * ldb;
		lanes		c = {0};
		float		x;

		for (int k = 0; k < kv; k += DOT_W)
		{
			lanes		va,
						vb;

			LOAD_LANES(va, A + k);
			LOAD_LANES(vb, b + k);
			c += va * vb;
		}
		x = lanes_sum(&c);
		for (int k = kv; k < K; k++)
			x += A[k] * b[k];
		x *= alpha;
		C[j] = beta == 0.0f ? x : x + beta * C[j];
	}
}

/*
 * columns [j0, j1) of C's R rows, C[m][j] = A[m] · (row j of B): each row
 * of B is loaded once for the R dot products, summed in DOT_W lanes in k
 * order, then the lanes pairwise (lanes_sum), then the tail: a fixed
 * order; one row of A (decoding's attention scores, a head's logits) by
 * dot_one_row, in the same order
 */
static inline __attribute__((always_inline)) void
dot_block(const int R, int K, float alpha, const float *A, ptrdiff_t lda,
		  const float *B, ptrdiff_t ldb, float beta, float *C, ptrdiff_t ldc,
		  int j0, int j1)
{
	int			kv = K / DOT_W * DOT_W;

	if (R == 1)
	{
		dot_one_row(K, alpha, A, B, ldb, beta, C, j0, j1);
		return;
	}
	for (int j = j0; j < j1; j++)
	{
		const float *b = B + (size_t) j * ldb;
		lanes		acc[TFM_GEMV_ROWS];

		for (int m = 0; m < R; m++)
			acc[m] = (lanes) {0};
		for (int k = 0; k < kv; k += DOT_W)
		{
			lanes		va,
						vb;

			LOAD_LANES(vb, b + k);
			for (int m = 0; m < R; m++)
			{
				LOAD_LANES(va, A + m * lda + k);
				acc[m] += va * vb;
			}
		}
		for (int m = 0; m < R; m++)
		{
			float		s = lanes_sum(&acc[m]);
			float	   *c = C + m * ldc + j;

			for (int k = kv; k < K; k++)
				s += A[m * lda + k] * b[k];
			s *= alpha;
			*c = beta == 0.0f ? s : s + beta * *c;
		}
	}
}

/* one instance of each kernel per row count, compiled for each CPU level */
#define ROWS_CASES(kernel) \
	switch (R) \
	{ \
		case 1: kernel(1, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 2: kernel(2, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 3: kernel(3, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 4: kernel(4, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 5: kernel(5, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 6: kernel(6, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 7: kernel(7, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
		case 8: kernel(8, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1); break; \
	}

TFM_HOT static void
axpy_cols(int R, int K, float alpha, const float *A, ptrdiff_t lda,
		  const float *B, ptrdiff_t ldb, float beta, float *C, ptrdiff_t ldc,
		  int j0, int j1)
{
	ROWS_CASES(axpy_block)
}

TFM_HOT static void
dot_cols(int R, int K, float alpha, const float *A, ptrdiff_t lda,
		 const float *B, ptrdiff_t ldb, float beta, float *C, ptrdiff_t ldc,
		 int j0, int j1)
{
	ROWS_CASES(dot_block)
}

void
tfm_gemv_rows(int threads, bool transb, int M, int N, int K, float alpha,
			  const float *A, int lda, const float *B, int ldb,
			  float beta, float *C, int ldc)
{
	int			tasks;

	if (M <= 0 || N <= 0)
		return;
	/* column ranges in multiples of 16 floats; one per thread */
	tasks = (double) N * K * M < 65536.0 ? 1 : threads;
	if (tasks > (N + 15) / 16)
		tasks = (N + 15) / 16;
	if (tasks <= 1)
	{
		/* no parallel region: libgomp's team of one costs more than a small product */
		if (transb)
			dot_cols(M, K, alpha, A, lda, B, ldb, beta, C, ldc, 0, N);
		else
			axpy_cols(M, K, alpha, A, lda, B, ldb, beta, C, ldc, 0, N);
		return;
	}
	/* the whole team, the threads past the tasks idle (sgemm_rows.c says why) */
#pragma omp parallel for num_threads(threads) schedule(static)
	for (int t = 0; t < tasks; t++)
	{
		int			per = ((N + 15) / 16 + tasks - 1) / tasks * 16;
		int			j0 = t * per,
					j1 = j0 + per < N ? j0 + per : N;

		if (j0 >= j1)
			continue;
		if (transb)
			dot_cols(M, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1);
		else
			axpy_cols(M, K, alpha, A, lda, B, ldb, beta, C, ldc, j0, j1);
	}
}
