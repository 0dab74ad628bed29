/*
 * lowp_bf16_gemm.c — C = alpha · A · W + beta · C with W packed bf16
 * (tfm_bf16_pack) and A fp32 (any strides), rounded to bf16 here into the
 * caller's work buffer; the kernel is the dispatched one (lowp_dispatch_x86.c,
 * lowp_dispatch_arm.c).
 * Where AMX is usable, products of more than TFM_LOWP_GEMV_ROWS rows (and
 * the row-exact ones at every M) go to lowp_bf16_amx.c's driver instead.
 *
 * The loops are lowp_drive.c's.  With M > TFM_LOWP_GEMV_ROWS, K runs in
 * blocks of LOWP_KC pairs: a weight panel's slice of a block (24 KB) stays
 * in L1 while it meets every row panel of the task's rows (the A block, in
 * L2).  Consecutive tasks share their columns, so the threads read the
 * same weights from the shared cache.  The first K block applies beta, the
 * later ones add.
 */
#include <string.h>

#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../../vecmath.h"

size_t
tfm_bf16_work_bytes(int M, int K)
{
	size_t		rows = M <= TFM_LOWP_GEMV_ROWS ? (size_t) (M > 0 ? M : 1) :
		lowp_round_up(M, LOWP_MR),
				pairs = lowp_round_up(K > 0 ? K : 1, 2) / 2,
				own = lowp_round_up(rows * pairs * sizeof(uint32_t), LOWP_ALIGN),
				amx = M > TFM_LOWP_GEMV_ROWS ? lowp_amx_work_bytes(M, K) : 0;

	return own > amx ? own : amx;
}

#define PACK_CHUNK 256			/* pairs converted at a time, contiguously */

/*
 * rows [r0, r0 + h) of A into one panel of height h (rows past M: zeros).
 * Each row is converted PACK_CHUNK pairs at a time into a contiguous
 * buffer (a loop the compiler vectorizes), then spread to its panel slots.
 * A strided along k (csa ≠ 1: a transposed operand) goes k by k instead,
 * reading the panel's rows side by side.
 */
TFM_HOT static void
pack_panel(uint32_t *restrict dst, int h, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
		   int M, int K, int r0)
{
	int			pairs = (K + 1) / 2;
	uint32_t	buf[PACK_CHUNK];

	if (csa != 1)
	{
		int			live = M - r0 < h ? M - r0 : h;

		for (int p = 0; p < pairs; p++)
		{
			const float *x0 = A + (size_t) (2 * p) * csa + (size_t) r0 * rsa,
					   *x1 = x0 + csa;
			uint32_t   *s = dst + (size_t) p * h;

			for (int r = 0; r < h; r++)
				s[r] = r >= live ? 0 :
					(uint32_t) tfm_bf16_from_float(x0[(size_t) r * rsa]) |
					(2 * p + 1 < K ? (uint32_t) tfm_bf16_from_float(x1[(size_t) r * rsa]) << 16 : 0);
		}
		return;
	}
	for (int r = 0; r < h; r++)
	{
		const float *x = A + (size_t) (r0 + r) * rsa;

		if (r0 + r >= M)
		{
			for (int p = 0; p < pairs; p++)
				dst[(size_t) p * h + r] = 0;
			continue;
		}
		for (int p0 = 0; p0 < pairs; p0 += PACK_CHUNK)
		{
			int			n = pairs - p0 < PACK_CHUNK ? pairs - p0 : PACK_CHUNK,
						full = 2 * (p0 + n) <= K ? n : n - 1;

			for (int p = 0; p < full; p++)
				buf[p] = (uint32_t) tfm_bf16_from_float(x[2 * (p0 + p)]) |
					(uint32_t) tfm_bf16_from_float(x[2 * (p0 + p) + 1]) << 16;
			if (full < n)		/* odd K: the last pair's second half is zero */
				buf[full] = tfm_bf16_from_float(x[K - 1]);
			for (int p = 0; p < n; p++)
				dst[(size_t) (p0 + p) * h + r] = buf[p];
		}
	}
}

void
tfm_bf16_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_bf16_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	tfm_bf16_gemm_strided(M, N, K, alpha, A, lda, 1, W, beta, C, ldc, work);
}

static void strided(int M, int N, int K, float alpha, const float *A, ptrdiff_t rsa,
					ptrdiff_t csa, const tfm_bf16_weights *W, float beta, float *C,
					ptrdiff_t ldc, void *work, bool rows_exact, const float *bias);

/*
 * rows_exact: one loop order at every M, so that a row of C is a function
 * of its row of A alone.  On AMX that is the tiles at every M (a row's sums
 * run in 16-pair steps of its own, padded rows beside it or not; the one K
 * slice of an epilogue); elsewhere lowp_drive.c's blocked loops, not its
 * matrix-vector way for M ≤ TFM_LOWP_GEMV_ROWS.
 */
static void
fused(int M, int N, int K, const float *A, ptrdiff_t lda, const tfm_bf16_weights *W,
	  const float *bias, tfm_row_fn act, float *C, ptrdiff_t ldc, void *work, bool rows_exact)
{
	float		beta = 0.0f;

	if (M <= 0 || N <= 0)
		return;
	if ((M > TFM_LOWP_GEMV_ROWS || rows_exact) && K > 0 && lowp_bf16_amx())
	{
		lowp_epilogue epi = {bias, act};

		lowp_bf16_amx_gemm(M, N, K, 1.0f, A, lda, 1, W, 0.0f, C, ldc, work, &epi);
		return;
	}
	/* the bias: C's block set to it just before its first K block adds the product (K = 0: C is the bias) */
	if (bias)
		beta = 1.0f;
	if (bias && K <= 0)
		tfm_lowp_rows_set(C, ldc, M, N, bias);
	strided(M, N, K, 1.0f, A, lda, 1, W, beta, C, ldc, work, rows_exact, bias);
	if (act)
		tfm_lowp_rows_apply(act, C, ldc, M, N);
}

void
tfm_bf16_gemm_fused(int M, int N, int K, const float *A, ptrdiff_t lda,
					const tfm_bf16_weights *W, const float *bias, tfm_row_fn act,
					float *C, ptrdiff_t ldc, void *work)
{
	fused(M, N, K, A, lda, W, bias, act, C, ldc, work, false);
}

void
tfm_bf16_gemm_rows(int M, int N, int K, const float *A, ptrdiff_t lda,
				   const tfm_bf16_weights *W, const float *bias, tfm_row_fn act,
				   float *C, ptrdiff_t ldc, void *work)
{
	fused(M, N, K, A, lda, W, bias, act, C, ldc, work, true);
}

/* every one of the M rows of C (ldc apart) = row (N values): a bias, before a product with beta 1 */
void
tfm_lowp_rows_set(float *C, ptrdiff_t ldc, int M, int N, const float *row)
{
	for (int i = 0; i < M; i++)
		memcpy(C + (size_t) i * ldc, row, sizeof(float) * N);
}

/* act over the M rows of N values of C, on the core's threads for a large C */
void
tfm_lowp_rows_apply(tfm_row_fn act, float *C, ptrdiff_t ldc, int M, int N)
{
#pragma omp parallel for num_threads(tfm_get_threads()) if((size_t) M * N > 65536) schedule(static)
	for (int i = 0; i < M; i++)
		act(C + (size_t) i * ldc, C + (size_t) i * ldc, (size_t) N);
}

/* a bf16 product for lowp_gemm_drive */
typedef struct bf16_job
{
	lowp_gemm_job base;
	lowp_bf16_kernel kernel;
	const float *A;
	ptrdiff_t	rsa,
				csa;
	const uint32_t *w;
	int			stride;			/* a weight panel's pairs */
	const float *bias;			/* NULL, or C's rows set to it before the first K block */
} bf16_job;

static void
bf16_pack(const lowp_gemm_job *job, int r0, int h)
{
	const bf16_job *b = (const bf16_job *) job;

	pack_panel(job->a + (size_t) r0 * job->slots, h, b->A, b->rsa, b->csa,
			   job->pr.M, job->pr.K, r0);
}

#if defined(__x86_64__)
/* A's rows contiguous on an AVX512_BF16 CPU: the same panel in vectors */
static void
bf16_pack_avx512(const lowp_gemm_job *job, int r0, int h)
{
	const bf16_job *b = (const bf16_job *) job;

	lowp_bf16_avx512_pack(job->a + (size_t) r0 * job->slots, h, b->A, b->rsa,
						  job->pr.M, job->pr.K, r0);
}
#endif

/* the first K block applies beta, the later ones add */
static void
bf16_block(const lowp_gemm_job *job, int h, int i, int m, int j, int n, int k0, int kc)
{
	const bf16_job *b = (const bf16_job *) job;
	const lowp_product *pr = &job->pr;

	if (k0 == 0 && b->bias)
		tfm_lowp_rows_set(pr->C + (size_t) i * pr->ldc + j, pr->ldc, m, n, b->bias + j);
	b->kernel(kc, job->a + (size_t) i * job->slots + (size_t) k0 * h, h,
			  b->w + (size_t) j * b->stride + (size_t) k0 * LOWP_NR,
			  pr->C + (size_t) i * pr->ldc + j, pr->ldc, m, n, pr->alpha,
			  k0 == 0 ? pr->beta : 1.0f);
}

void
tfm_bf16_gemm_strided(int M, int N, int K, float alpha,
					  const float *A, ptrdiff_t rsa, ptrdiff_t csa,
					  const tfm_bf16_weights *W,
					  float beta, float *C, ptrdiff_t ldc, void *work)
{
	strided(M, N, K, alpha, A, rsa, csa, W, beta, C, ldc, work, false, NULL);
}

static void
strided(int M, int N, int K, float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
		const tfm_bf16_weights *W, float beta, float *C, ptrdiff_t ldc, void *work,
		bool rows_exact, const float *bias)
{
	bf16_job	job = {
		.base = {
			.slots = (K + 1) / 2,	/* the pairs the kernels sum */
			.kblock = LOWP_KC,
			.rows_exact = rows_exact,
			.a = work,
			.pack = bf16_pack,
			.block = bf16_block,
		},
		.kernel = lowp_bf16_chosen(),
		.A = A, .rsa = rsa, .csa = csa,
		.w = (const uint32_t *) W->data,
		.stride = W->kp / 2,
		.bias = bias,
	};

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;
#if defined(__x86_64__)
	if (csa == 1 && job.kernel == lowp_bf16_avx512_kernel)
		job.base.pack = bf16_pack_avx512;
#endif
	if (M > TFM_LOWP_GEMV_ROWS && lowp_bf16_amx() && !rows_exact)
	{
		lowp_bf16_amx_gemm(M, N, K, alpha, A, rsa, csa, W, beta, C, ldc, work, NULL);
		return;
	}
	lowp_gemm_drive(&job.base, M, N, K, alpha, beta, C, ldc);
}
