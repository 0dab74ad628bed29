/*
 * lowp_bf16_gemm.c — C = alpha · A · W + beta · C with W packed bf16
 * (tfm_bf16_pack) and A fp32 (any strides), rounded to bf16 here into the
 * caller's work buffer; the kernel is the dispatched one (lowp_dispatch.c).
 * Where AMX is usable, products of more than TFM_LOWP_GEMV_ROWS rows go to
 * lowp_bf16_amx.c's driver instead.
 *
 * M ≤ TFM_LOWP_GEMV_ROWS: the matrix-vector path.  A's rows become one
 * panel of height M; the weight panels (32 columns each, contiguous in
 * memory) are shared out among the threads in contiguous runs, so each
 * weight is read once, in address order.
 *
 * Larger M: A is packed into panels of LOWP_MR rows; the work is cut into
 * tasks of LOWP_MC rows × LOWP_NC columns of C, handed out to the threads.
 * In a task, K runs in blocks of LOWP_KC pairs; for each, every weight
 * panel of the task's columns (a 24 KB slice, kept in L1) meets every row
 * panel of the task's rows (the A block, in L2).  Consecutive tasks share
 * their columns, so the threads read the same weights from the shared
 * cache.  The first K block applies beta, the later ones add.
 */
#include <string.h>

#include "tfm/blas.h"
#include "lowp_internal.h"
#include "vecmath.h"

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

bool
lowp_gemm_trivial(int M, int N, int K, float beta, float *C, ptrdiff_t ldc)
{
	if (M <= 0 || N <= 0)
		return true;
	if (K > 0)
		return false;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			C[(size_t) i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t) i * ldc + j];
	return true;
}

void
tfm_bf16_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_bf16_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	tfm_bf16_gemm_strided(M, N, K, alpha, A, lda, 1, W, beta, C, ldc, work);
}

void
tfm_bf16_gemm_fused(int M, int N, int K, const float *A, ptrdiff_t lda,
					const tfm_bf16_weights *W, const float *bias, tfm_row_fn act,
					float *C, ptrdiff_t ldc, void *work)
{
	float		beta = 0.0f;

	if (M <= 0 || N <= 0)
		return;
	if (M > TFM_LOWP_GEMV_ROWS && K > 0 && lowp_bf16_amx())
	{
		lowp_epilogue epi = {bias, act};

		lowp_bf16_amx_gemm(M, N, K, 1.0f, A, lda, 1, W, 0.0f, C, ldc, work, &epi);
		return;
	}
	if (bias)
	{
		tfm_lowp_rows_set(C, ldc, M, N, bias);
		beta = 1.0f;
	}
	tfm_bf16_gemm_strided(M, N, K, 1.0f, A, lda, 1, W, beta, C, ldc, work);
	if (act)
		tfm_lowp_rows_apply(act, C, ldc, M, N);
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

void
tfm_bf16_gemm_strided(int M, int N, int K, float alpha,
					  const float *A, ptrdiff_t rsa, ptrdiff_t csa,
					  const tfm_bf16_weights *W,
					  float beta, float *C, ptrdiff_t ldc, void *work)
{
	lowp_bf16_kernel kernel = lowp_bf16_chosen();
	const uint32_t *w = (const uint32_t *) W->data;
	uint32_t   *a = work;
	int			pairs = (K + 1) / 2,	/* the pairs the kernels sum */
				stride = W->kp / 2, /* a panel's pairs */
				threads = tfm_get_threads();
	double		flops = 2.0 * M * N * K;

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;

	if (M > TFM_LOWP_GEMV_ROWS && lowp_bf16_amx())
	{
		lowp_bf16_amx_gemm(M, N, K, alpha, A, rsa, csa, W, beta, C, ldc, work, NULL);
		return;
	}
	if (M <= TFM_LOWP_GEMV_ROWS)
	{
		int			panels = (N + LOWP_NR - 1) / LOWP_NR;

		pack_panel(a, M, A, rsa, csa, M, K, 0);
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
		for (int q = 0; q < panels; q++)
		{
			int			j0 = q * LOWP_NR;

			kernel(pairs, a, M, w + (size_t) j0 * stride, C + j0, ldc,
				   M, N - j0 < LOWP_NR ? N - j0 : LOWP_NR, alpha, beta);
		}
		return;
	}

	{
		int			mpanels = (M + LOWP_MR - 1) / LOWP_MR,
					mt = (M + LOWP_MC - 1) / LOWP_MC,
					nt = (N + LOWP_NC - 1) / LOWP_NC;

#pragma omp parallel num_threads(threads) if(threads > 1 && flops > 1e6)
		{
#pragma omp for schedule(static)
			for (int i = 0; i < mpanels; i++)
				pack_panel(a + (size_t) i * LOWP_MR * pairs, LOWP_MR, A, rsa, csa, M, K, i * LOWP_MR);
#pragma omp for schedule(dynamic)
			for (int t = 0; t < mt * nt; t++)
			{
				lowp_tile	tile = lowp_tile_of(t, mt, M, N);

				for (int pc = 0; pc < pairs; pc += LOWP_KC)
				{
					int			kc = pairs - pc < LOWP_KC ? pairs - pc : LOWP_KC;
					float		b = pc == 0 ? beta : 1.0f;

					for (int j = tile.j0; j < tile.j1; j += LOWP_NR)
					{
						const uint32_t *bp = w + (size_t) j * stride + (size_t) pc * LOWP_NR;

						for (int i = tile.i0; i < tile.i1; i += LOWP_MR)
							kernel(kc, a + (size_t) i * pairs + (size_t) pc * LOWP_MR, LOWP_MR, bp,
								   C + (size_t) i * ldc + j, ldc,
								   tile.i1 - i < LOWP_MR ? tile.i1 - i : LOWP_MR,
								   tile.j1 - j < LOWP_NR ? tile.j1 - j : LOWP_NR, alpha, b);
					}
				}
			}
		}
	}
}
