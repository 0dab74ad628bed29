/*
 * lowp_bf16_gemm.c — C = alpha · A · W + beta · C with W packed bf16
 * (tfm_bf16_pack) and A fp32, rounded to bf16 here into the caller's work
 * buffer; the kernel is the dispatched one (lowp_dispatch.c).
 *
 * M ≤ TFM_LOWP_GEMV_ROWS: the matrix-vector path.  A's rows become one
 * panel of height M; the weight panels (32 columns each, contiguous in
 * memory) are shared out among the threads in contiguous runs, so each
 * weight is read once, in address order.
 *
 * Larger M, K a multiple of 32, on a CPU with AMX: lowp_bf16_amx.c.
 * Otherwise: A is packed into panels of LOWP_MR rows; the work is cut into
 * tasks of LOWP_MC rows × LOWP_NC columns of C, handed out to the threads.
 * In a task, K runs in blocks of LOWP_KC pairs; for each, every weight
 * panel of the task's columns (a 24 KB slice, kept in L1) meets every row
 * panel of the task's rows (the A block, in L2).  Consecutive tasks share
 * their columns, so the threads read the same weights from the shared
 * cache.  The first K block applies beta, the later ones add.
 */
#include "tfm/blas.h"
#include "lowp_internal.h"
#include "vecmath.h"

size_t
tfm_bf16_work_bytes(int M, int K)
{
	size_t		rows = M <= TFM_LOWP_GEMV_ROWS ? (size_t) (M > 0 ? M : 1) :
		lowp_round_up(M, LOWP_MR),
				pairs = lowp_round_up(K > 0 ? K : 1, 2) / 2,
				bytes = lowp_round_up(rows * pairs * sizeof(uint32_t), LOWP_ALIGN),
				amx = lowp_bf16_amx_work_bytes(M, K);

	return M > TFM_LOWP_GEMV_ROWS && amx > bytes ? amx : bytes;
}

#define PACK_CHUNK 256			/* pairs converted at a time, contiguously */

/*
 * rows [r0, r0 + h) of A into one panel of height h (rows past M: zeros).
 * Each row is converted PACK_CHUNK pairs at a time into a contiguous
 * buffer (a loop the compiler vectorizes), then spread to its panel slots.
 */
TFM_HOT static void
pack_panel(uint32_t *restrict dst, int h, const float *A, ptrdiff_t lda, int M, int K, int r0)
{
	int			pairs = (K + 1) / 2;
	uint32_t	buf[PACK_CHUNK];

	for (int r = 0; r < h; r++)
	{
		const float *x = A + (size_t) (r0 + r) * lda;

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

static void
scale_c(int M, int N, float beta, float *C, ptrdiff_t ldc)
{
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			C[(size_t) i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t) i * ldc + j];
}

void
tfm_bf16_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_bf16_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	lowp_bf16_kernel kernel = lowp_bf16_fast() ? lowp_bf16_avx512_kernel : lowp_bf16_ref_kernel;
	const uint32_t *w = (const uint32_t *) W->data;
	uint32_t   *a = work;
	int			pairs = W->kp / 2,
				threads = tfm_get_threads();
	double		flops = 2.0 * M * N * K;

	if (M <= 0 || N <= 0)
		return;
	if (K <= 0)
	{
		scale_c(M, N, beta, C, ldc);
		return;
	}

	if (M > TFM_LOWP_GEMV_ROWS && pairs % 16 == 0 && lowp_bf16_amx())
	{
		lowp_bf16_amx_gemm(M, N, K, alpha, A, lda, W, beta, C, ldc, work);
		return;
	}
	if (M <= TFM_LOWP_GEMV_ROWS)
	{
		int			panels = (N + LOWP_NR - 1) / LOWP_NR;

		pack_panel(a, M, A, lda, M, K, 0);
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
		for (int q = 0; q < panels; q++)
		{
			int			j0 = q * LOWP_NR;

			kernel(pairs, a, M, w + (size_t) j0 * pairs, C + j0, ldc,
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
				pack_panel(a + (size_t) i * LOWP_MR * pairs, LOWP_MR, A, lda, M, K, i * LOWP_MR);
#pragma omp for schedule(dynamic)
			for (int t = 0; t < mt * nt; t++)
			{
				int			i0 = (t % mt) * LOWP_MC,
							j0 = (t / mt) * LOWP_NC,
							i1 = i0 + LOWP_MC < M ? i0 + LOWP_MC : M,
							j1 = j0 + LOWP_NC < N ? j0 + LOWP_NC : N;

				for (int pc = 0; pc < pairs; pc += LOWP_KC)
				{
					int			kc = pairs - pc < LOWP_KC ? pairs - pc : LOWP_KC;
					float		b = pc == 0 ? beta : 1.0f;

					for (int j = j0; j < j1; j += LOWP_NR)
					{
						const uint32_t *bp = w + (size_t) j * pairs + (size_t) pc * LOWP_NR;

						for (int i = i0; i < i1; i += LOWP_MR)
							kernel(kc, a + (size_t) i * pairs + (size_t) pc * LOWP_MR, LOWP_MR, bp,
								   C + (size_t) i * ldc + j, ldc,
								   i1 - i < LOWP_MR ? i1 - i : LOWP_MR,
								   j1 - j < LOWP_NR ? j1 - j : LOWP_NR, alpha, b);
					}
				}
			}
		}
	}
}
