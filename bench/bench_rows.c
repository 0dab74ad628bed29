/*
 * bench_rows.c — the encoder's fp32 products (issue 41): BLIS through
 * tfm_gemm (its sup path below 128 rows, its packed path above, and
 * tfm_gemv_rows up to TFM_GEMV_ROWS rows) against tfm_gemm_rows, tfm's
 * own row-exact kernel (src/core/kernels/blas/sgemm_rows.c), on the
 * MiniLM-L6 layer shapes (d 384, d_ff 1536: qkv 384×1152, out 384×384,
 * ff1 384×1536, ff2 1536×384) at 8 to 4,096 rows.
 *
 *   bench_rows [--threads 1,2] [--seconds S] [--rows 8,32,128,512,4096]
 *
 * Prints BLIS's kernel set and its sgemm block sizes (MR, NR, MC, KC, NC),
 * then per shape and thread count the GFLOP/s of each (median of timed
 * repetitions after an untimed one; the best beside it) with their ratio,
 * interleaving the two in every repetition (a shared machine's load falls
 * on both alike).  Machine-readable lines:
 *   RESULT rows=M k=K n=N threads=T blis=GF blis_best=GF own=GF own_best=GF
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blis.h>

#include "tfm/blas.h"
#include "tfm/rng.h"
#include "bench_core.h"

static double seconds = 1.0;

int
main(int argc, char **argv)
{
	int			threads[4] = {1, 2},
				nthreads = 2,
				rows[16] = {8, 32, 128, 512, 4096},
				nrows = 5;
	const int	shapes[][2] = {{384, 1152}, {384, 384}, {384, 1536}, {1536, 384}};
	char		err[256];
	cntx_t	   *cx;
	tfm_rng		rng;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = parse_list(argv[++i], threads, 4);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
			nrows = parse_list(argv[++i], rows, 16);
		else
		{
			fprintf(stderr, "usage: bench_rows [--threads 1,2] [--seconds S] [--rows 8,32,...]\n");
			return 2;
		}
	}
	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	cx = bli_gks_query_cntx();
	printf("BLIS %s kernels (%s); sgemm MR %d NR %d MC %d KC %d NC %d; own kernel: %s\n",
		   tfm_blas_arch(), tfm_blas_arch_reason(),
		   (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, cx),
		   (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, cx),
		   (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MC, cx),
		   (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_KC, cx),
		   (int) bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NC, cx), tfm_gemm_rows_kernel());
	tfm_rng_seed(&rng, 1);
	for (int ti = 0; ti < nthreads; ti++)
	{
		tfm_set_threads(threads[ti]);
		for (int ri = 0; ri < nrows; ri++)
			for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			{
				int			M = rows[ri],
							K = shapes[s][0],
							N = shapes[s][1],
							reps = 0;
				float	   *A = malloc(sizeof(float) * M * K),
						   *B = malloc(sizeof(float) * K * N),
						   *C = malloc(sizeof(float) * M * N);
				double		flops = 2.0 * M * N * K,
							tb[4096],
							to[4096],
							start;

				for (int i = 0; i < M * K; i++)
					A[i] = tfm_rng_normal(&rng);
				for (int i = 0; i < K * N; i++)
					B[i] = tfm_rng_normal(&rng);
				tfm_gemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
				tfm_gemm_rows(M, N, K, A, K, B, N, 0.0f, C, N);
				start = now();
				while (reps < 4096 && (reps < 5 || now() - start < seconds))
				{
					double		t0 = now(),
								t1,
								t2;

					tfm_gemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
					t1 = now();
					tfm_gemm_rows(M, N, K, A, K, B, N, 0.0f, C, N);
					t2 = now();
					tb[reps] = t1 - t0;
					to[reps] = t2 - t1;
					reps++;
				}
				{
					timing		b = summarise(tb, reps),
								o = summarise(to, reps);

					printf("rows %5d  %4dx%-4d  %d thread%s  BLIS %6.1f (best %6.1f)  own %6.1f (best %6.1f) GFLOP/s  own/BLIS %.2f\n",
						   M, K, N, threads[ti], threads[ti] > 1 ? "s" : " ",
						   flops / b.median * 1e-9, flops / b.min * 1e-9,
						   flops / o.median * 1e-9, flops / o.min * 1e-9, b.median / o.median);
					printf("RESULT rows=%d k=%d n=%d threads=%d blis=%.2f blis_best=%.2f own=%.2f own_best=%.2f\n",
						   M, K, N, threads[ti], flops / b.median * 1e-9, flops / b.min * 1e-9,
						   flops / o.median * 1e-9, flops / o.min * 1e-9);
				}
				fflush(stdout);
				free(A);
				free(B);
				free(C);
			}
	}
	return 0;
}
