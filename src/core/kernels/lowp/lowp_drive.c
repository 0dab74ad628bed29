/*
 * lowp_drive.c — the loops the bf16 and int8 products share
 * (lowp_bf16_gemm.c, lowp_int8_gemm.c): what is left to do for an empty C
 * or K = 0, and the order in which A's panels are packed and C's blocks
 * computed, on the core's threads.
 *
 * M ≤ TFM_LOWP_GEMV_ROWS: A's rows become one panel of height M; the
 * weight panels (LOWP_NR columns each) are shared out among the threads in
 * contiguous runs, so each weight is read once, in address order.  Each
 * block takes all of K.
 *
 * Larger M: A is packed into panels of LOWP_MR rows; the work is cut into
 * tasks of LOWP_MC rows × LOWP_NC columns of C, handed out to the threads.
 * In a task, K runs in blocks of job->kblock slots; for each, every weight
 * panel of the task's columns meets every row panel of the task's rows.
 * A job marked rows_exact takes these loops at every M (the first path
 * sums all of K at once, this one block by block: different bits).
 */
#include "tfm/blas.h"
#include "lowp_internal.h"

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

static inline int
min_int(int a, int b)
{
	return a < b ? a : b;
}

void
lowp_gemm_drive(lowp_gemm_job *job, int M, int N, int K, float alpha, float beta,
				float *C, ptrdiff_t ldc)
{
	const int	slots = job->slots,
				threads = tfm_get_threads();
	const double flops = 2.0 * M * N * K;

	job->pr = (lowp_product) {M, N, K, alpha, beta, C, ldc};

	if (M <= TFM_LOWP_GEMV_ROWS && !job->rows_exact)
	{
		int			panels = (N + LOWP_NR - 1) / LOWP_NR;

		job->pack(job, 0, M);
#pragma omp parallel for num_threads(threads) if(threads > 1 && flops > 1e5) schedule(static)
		for (int q = 0; q < panels; q++)
		{
			int			j0 = q * LOWP_NR;

			job->block(job, M, 0, M, j0, min_int(N - j0, LOWP_NR), 0, slots);
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
				job->pack(job, i * LOWP_MR, LOWP_MR);
#pragma omp for schedule(dynamic)
			for (int t = 0; t < mt * nt; t++)
			{
				lowp_tile	tile = lowp_tile_of(t, mt, M, N);

				for (int pc = 0; pc < slots; pc += job->kblock)
				{
					int			kc = min_int(slots - pc, job->kblock);

					for (int j = tile.j0; j < tile.j1; j += LOWP_NR)
						for (int i = tile.i0; i < tile.i1; i += LOWP_MR)
							job->block(job, LOWP_MR, i, min_int(tile.i1 - i, LOWP_MR),
									   j, min_int(tile.j1 - j, LOWP_NR), pc, kc);
				}
			}
		}
	}
}
