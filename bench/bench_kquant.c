/*
 * bench_kquant.c — GGUF's K-quant blocks run as they are (issue 40): one
 * thread's products of M activation rows with a weight matrix of Q4_K,
 * Q5_K, Q6_K or Q8_0 blocks (the types of Q4_K_M and Q5_K_M files), on the shapes of
 * Llama 3.2 1B (d 2048, d_ff 8192), through each path of
 * src/core/kernels/lowp/kquant: the plain-C reference (one dot product per
 * row), the AVX2 kernel (each weight block unpacked once for KQ_ROWS
 * rows), the AVX2 panels (8 columns in the lanes: kquant_panel_avx2.c),
 * the AVX-512 VNNI tiles (KQ_ROWS rows × KQ_COLS columns) and panels (16
 * columns), each over the whole product.  M = 1 is decoding, larger M is
 * prefill.
 *
 *   bench_kquant [--seconds S] [--rows 1,4,16,64] [--shapes KxN,...] [--best]
 *
 * (--shapes: K × N of the weights, default 2048x2048,2048x8192,8192x2048;
 * --best: each path's fastest repetition instead of the median, steadier
 * on a loaded machine)
 *
 * Per type, shape and M: the effective GFLOP/s (2·M·N·K per product) of
 * each path available on this CPU (median of timed repetitions after an
 * untimed one, the paths interleaved in every repetition so that a shared
 * machine's load falls on all alike) and their ratios (the AVX2 panel's
 * to the AVX2 kernel's, the AVX-512 tiles' to it, the AVX-512 panel's to
 * the tiles').  Every
 * path's outputs are compared bit for bit with the reference's first.
 * Machine-readable lines:
 *   RESULT type=T m=M k=K n=N ref=GF avx2=GF avx2_panel=GF avx512=GF panel=GF
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/kquant.h"
#include "tfm/rng.h"
#include "bench_core.h"

/* the paths, from src/core/kernels/lowp/kquant (internal to the core) */
void		kq_rows_avx2(uint32_t type, int n, const uint8_t *w, const uint8_t *a, size_t ab,
						 int R, float *out);
void		kq_tile_avx512(uint32_t type, int n, const uint8_t *w, size_t wb, int nc,
						   const uint8_t *a, size_t ab, int R, float *out, size_t ldo);
void		kq_act_order_avx512(uint32_t type, uint8_t *act, int M, size_t ab, int K);
void		kq_panel_avx512(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb,
							const uint8_t *act, size_t ab, float alpha, float beta, float *C,
							ptrdiff_t ldc, int g0, int g1);
void		kq_panel_avx2(uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb,
						  const uint8_t *act, size_t ab, float alpha, float beta, float *C,
						  ptrdiff_t ldc, int g0, int g1);

#define KQ_ROWS 4
#define KQ_COLS 4
#define MAX_REPS 200

static double seconds = 0.5;
static bool best = false;		/* --best: the fastest repetition, not the median */

/*
 * C[M][N] through path p: 0 reference, 1 AVX2, 2 AVX-512 VNNI tiles, 3
 * AVX-512 panels, 4 AVX2 panels (one thread, tfm_kq_gemm's loops;
 * act_tile the activations in the tile's order)
 */
static void
product(int p, uint32_t t, int M, int N, int K, const uint8_t *W, size_t wb, const uint8_t *act,
		const uint8_t *act_tile, size_t ab, float *C)
{
	if (p == 4)
	{
		kq_panel_avx2(t, M, N, K, W, wb, act, ab, 1.0f, 0.0f, C, N, 0, (N + 7) / 8);
		return;
	}
	if (p == 3)
	{
		kq_panel_avx512(t, M, N, K, W, wb, act, ab, 1.0f, 0.0f, C, N, 0, (N + 15) / 16);
		return;
	}
	if (p == 2)
	{
		for (int j = 0; j < N; j += KQ_COLS)
		{
			const int	nc = N - j < KQ_COLS ? N - j : KQ_COLS;

			for (int i0 = 0; i0 < M; i0 += KQ_ROWS)
			{
				int			R = M - i0 < KQ_ROWS ? M - i0 : KQ_ROWS;
				float		d[KQ_ROWS * KQ_COLS];

				kq_tile_avx512(t, K, W + (size_t) j * wb, wb, nc, act_tile + (size_t) i0 * ab, ab, R, d, KQ_COLS);
				for (int r = 0; r < R; r++)
					for (int c = 0; c < nc; c++)
						C[(size_t) (i0 + r) * N + j + c] = d[r * KQ_COLS + c];
			}
		}
		return;
	}
	for (int j = 0; j < N; j++)
	{
		const uint8_t *w = W + (size_t) j * wb;

		if (p > 0)
			for (int i0 = 0; i0 < M; i0 += KQ_ROWS)
			{
				int			R = M - i0 < KQ_ROWS ? M - i0 : KQ_ROWS;
				float		d[KQ_ROWS];

				kq_rows_avx2(t, K, w, act + (size_t) i0 * ab, ab, R, d);
				for (int r = 0; r < R; r++)
					C[(size_t) (i0 + r) * N + j] = d[r];
			}
		else
			for (int i = 0; i < M; i++)
				C[(size_t) i * N + j] = tfm_kq_dot_ref(t, K, w, act + (size_t) i * ab);
	}
}

int
main(int argc, char **argv)
{
	static const uint32_t types[] = {12, 13, 14, 8};
	static const char *const type_names[] = {"Q4_K", "Q5_K", "Q6_K", "Q8_0"};
	int			shapes[8][2] = {{2048, 2048}, {2048, 8192}, {8192, 2048}},	/* K, N */
				n_shapes = 3;
	static const char *const names[] = {"reference", "avx2", "avx512vnni", "avx512 panel", "avx2 panel"};
	int			rows[8] = {1, 4, 16, 64},
				n_rows = 4;
	bool		have[5];
	tfm_rng		rng;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--shapes") == 0 && i + 1 < argc)
		{
			char	   *p = argv[++i];

			for (n_shapes = 0; n_shapes < 8 && *p;)
			{
				char	   *e;

				shapes[n_shapes][0] = (int) strtol(p, &e, 10);
				if (*e != 'x')
					break;
				shapes[n_shapes][1] = (int) strtol(e + 1, &p, 10);
				if (shapes[n_shapes][0] <= 0 || shapes[n_shapes][0] % 256 || shapes[n_shapes][1] <= 0)
					break;
				n_shapes++;
				if (*p == ',')
					p++;
			}
			if (*p)
			{
				fprintf(stderr, "bench_kquant: --shapes KxN,... (K a multiple of 256)\n");
				return 2;
			}
		}
		else if (strcmp(argv[i], "--best") == 0)
			best = true;
		else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
			n_rows = parse_list(argv[++i], rows, 8);
		else
		{
			fprintf(stderr, "usage: bench_kquant [--seconds S] [--rows 1,4,16,64] [--shapes KxN,...] [--best]\n");
			return 2;
		}
	__builtin_cpu_init();
	have[0] = true;
	have[1] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		__builtin_cpu_supports("f16c");
	have[2] = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
	have[3] = have[2];
	have[4] = have[1];
	printf("paths on this CPU: reference%s%s; 1 thread\n", have[1] ? ", avx2" : "",
		   have[2] ? ", avx512vnni" : "");
	tfm_rng_seed(&rng, 7);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
		for (int si = 0; si < n_shapes; si++)
		{
			const uint32_t t = types[ti];
			const int	K = shapes[si][0],
						N = shapes[si][1],
						maxM = 128;
			const size_t wb = tfm_kq_row_bytes(t, K),
						ab = t == 8 ? (size_t) K / 32 * sizeof(tfm_block_q8_0)
				: (size_t) K / 256 * sizeof(tfm_block_q8_K);
			float	   *wf = malloc(sizeof(float) * K),
					   *a = malloc(sizeof(float) * K);
			uint8_t    *W = malloc(wb * N),
					   *act = malloc(ab * maxM),
					   *act_tile = malloc(ab * maxM);
			float	   *C[5];

			for (int p = 0; p < 5; p++)
				C[p] = malloc(sizeof(float) * (size_t) maxM * N);
			/* weights: random bytes are valid blocks but for their fp16 scales, set small */
			for (size_t b = 0; b < wb * N; b++)
				W[b] = (uint8_t) tfm_rng_below(&rng, 256);
			for (int j = 0; j < N; j++)
				for (size_t o = 0; o < wb; o += (t == 12 ? 144 : t == 13 ? 176 : t == 14 ? 210 : 34))
				{
					uint8_t    *blk = W + (size_t) j * wb + o;
					const uint8_t h[2] = {0x00, 0x1c};	/* fp16 2^-8 */

					if (t == 14)
						memcpy(blk + 208, h, 2);
					else
					{
						memcpy(blk, h, 2);
						if (t == 12 || t == 13)
							memcpy(blk + 2, h, 2);
					}
				}
			for (int i = 0; i < maxM; i++)
			{
				for (int k = 0; k < K; k++)
					a[k] = (float) tfm_rng_normal(&rng);
				if (t == 8)
					tfm_kq_quantize_q8_0(a, (tfm_block_q8_0 *) (act + i * ab), K);
				else
					tfm_kq_quantize_q8_K(a, (tfm_block_q8_K *) (act + i * ab), K);
			}
			memcpy(act_tile, act, ab * maxM);
			if (have[2])
				kq_act_order_avx512(t, act_tile, maxM, ab, K);
			for (int ri = 0; ri < n_rows; ri++)
			{
				const int	M = rows[ri] < maxM ? rows[ri] : maxM;
				double		t_med[5] = {0},
							times[5][MAX_REPS];
				int			reps = 0;
				double		start;

				for (int p = 0; p < 5; p++)
					if (have[p])
						product(p, t, M, N, K, W, wb, act, act_tile, ab, C[p]);
				for (int p = 1; p < 5; p++)
					if (have[p] && memcmp(C[p], C[0], sizeof(float) * (size_t) M * N) != 0)
					{
						fprintf(stderr, "bench_kquant: %s differs from the reference (%s, M %d)\n",
								names[p], type_names[ti], M);
						return 1;
					}
				start = now();
				while (reps < MAX_REPS && (reps < 3 || now() - start < seconds))
				{
					for (int p = 0; p < 5; p++)
						if (have[p])
						{
							double		t0 = now();

							product(p, t, M, N, K, W, wb, act, act_tile, ab, C[p]);
							times[p][reps] = now() - t0;
						}
					reps++;
				}
				for (int p = 0; p < 5; p++)
					if (have[p])
					{
						timing		tm = summarise(times[p], reps);

						t_med[p] = 2.0 * M * N * K / (best ? tm.min : tm.median) / 1e9;
					}
				printf("%s  K %4d N %4d  M %2d:  reference %6.1f GF/s", type_names[ti], K, N, M, t_med[0]);
				if (have[1])
					printf("  avx2 %6.1f  avx2 panel %6.1f (%.2fx avx2)", t_med[1], t_med[4], t_med[4] / t_med[1]);
				if (have[2])
					printf("  avx512vnni %6.1f (%.2fx avx2)", t_med[2], have[1] ? t_med[2] / t_med[1] : 0.0);
				if (have[3])
					printf("  panel %6.1f (%.2fx avx512vnni)", t_med[3], t_med[3] / t_med[2]);
				printf("\n");
				printf("RESULT type=%s m=%d k=%d n=%d ref=%.2f avx2=%.2f avx2_panel=%.2f avx512=%.2f panel=%.2f\n",
					   type_names[ti], M, K, N, t_med[0], t_med[1], t_med[4], t_med[2], t_med[3]);
			}
			free(wf);
			free(a);
			free(W);
			free(act);
			free(act_tile);
			for (int p = 0; p < 5; p++)
				free(C[p]);
		}
	return 0;
}
