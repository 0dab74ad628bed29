/*
 * bench_lowp.c — fp32 (BLIS, tfm_gemm) against bf16, int8 and int4 products
 * (include/tfm/lowp.h): a large square product and GPT-2-small decoding.
 *
 *   bench_lowp [--threads 1,2] [--seconds S] [--size N] [--fallback | --avx2]
 *
 * square   C = A·W, N³ (default 2048), GFLOP/s; the low-precision times
 *          include rounding or quantizing A (per call), not packing W (once).
 * decode   one token through GPT-2 small's products (M = 1): per layer
 *          768×2304 (qkv), 768×768 (attention out), 768×3072 (fc),
 *          3072×768 (fc out), × 12 layers, then the 768×50257 head, each
 *          layer with its own weights (497 MB fp32, 249 MB bf16, 125 MB
 *          int8, 70 MB int4: memory, not cache).  Per shape: GB/s of weights streamed;
 *          per token: tokens/s of these products alone (no attention, norms).
 *          fp32 is tfm_gemm (BLIS, M = 1); fp32-gemv a plain streaming
 *          loop in this file, the fair fp32 baseline for decoding.
 *          int4 is GGUF Q4_0 (18 bytes per 32 weights); its square product
 *          is fp32 tiles dequantized per call and BLIS.
 * memory   memcpy of 512 MB (bytes copied per second; traffic is twice
 *          that) and a read-only sum of 512 MB, split among the threads.
 *
 * Each figure is the median of timed repetitions after one untimed one
 * (repetitions until S seconds, default 2, and at least 3), with the best
 * beside it (on a shared machine the best is the cleaner estimate).  --fallback
 * forces the plain-C path, --avx2 the AVX2 + FMA one (TFM_LOWP_FORCE does
 * the same); TFM_BLIS_ARCH picks BLIS's kernels for fp32 (haswell: AVX2).  Results are checked against fp32 before timing
 * (relative error printed).  Machine-readable lines:
 *   RESULT kind=<square|decode|memory> prec=... threads=N ...
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"

static double seconds = 2.0;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static void *
alloc64(size_t bytes)
{
	void	   *p = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	return p;
}

static float *
rand_floats(tfm_rng *rng, size_t n, float scale)
{
	float	   *x = alloc64(n * sizeof(float));

	for (size_t i = 0; i < n; i++)
		x[i] = (tfm_rng_uniform(rng) - 0.5f) * scale;
	return x;
}

typedef enum
{
	P_FP32, P_BF16, P_INT8, P_INT4, P_GEMV32
} prec;
static const char *prec_name[] = {"fp32", "bf16", "int8", "int4", "fp32-gemv"};

/*
 * A plain fp32 matrix-vector product for comparison (bench only): y = x·W,
 * W (K × N) row-major, columns in blocks of 64 shared among the threads,
 * every weight read once.  tfm_gemm with M = 1 is BLIS's small-matrix path,
 * which does not stream at memory speed.
 */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void
gemv_fp32(float *y, const float *x, const float *W, int K, int N)
{
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static)
	for (int j0 = 0; j0 < N; j0 += 64)
	{
		float		acc[64] = {0};
		int			w = N - j0 < 64 ? N - j0 : 64;

		if (w == 64)
			for (int k = 0; k < K; k++)
				for (int j = 0; j < 64; j++)
					acc[j] += x[k] * W[(size_t) k * N + j0 + j];
		else
			for (int k = 0; k < K; k++)
				for (int j = 0; j < w; j++)
					acc[j] += x[k] * W[(size_t) k * N + j0 + j];
		memcpy(y + j0, acc, w * sizeof(float));
	}
}

/* one weight in all three forms */
typedef struct weight
{
	int			K,
				N;
	float	   *f;
	tfm_bf16_weights b;
	tfm_int8_weights q;
	tfm_int4_weights q4;
	void	   *bbuf,
			   *qbuf,
			   *q4buf;
} weight;

static void
weight_init(weight *w, tfm_rng *rng, int K, int N)
{
	w->K = K;
	w->N = N;
	w->f = rand_floats(rng, (size_t) K * N, 0.07f);
	w->bbuf = alloc64(tfm_bf16_pack_bytes(K, N));
	w->qbuf = alloc64(tfm_int8_pack_bytes(K, N));
	tfm_bf16_pack(&w->b, w->bbuf, w->f, N, 1, K, N);
	tfm_int8_pack(&w->q, w->qbuf, w->f, N, 1, K, N);
	w->q4buf = alloc64(tfm_int4_pack_bytes(K, N));
	tfm_int4_pack(&w->q4, w->q4buf, w->f, N, 1, K, N);
}

static void
weight_free(weight *w)
{
	free(w->f);
	free(w->bbuf);
	free(w->qbuf);
	free(w->q4buf);
}

static size_t
weight_bytes(const weight *w, prec p)
{
	size_t		n = (size_t) w->K * w->N;

	return p == P_FP32 || p == P_GEMV32 ? 4 * n : p == P_BF16 ? 2 * n :
		p == P_INT4 ? (size_t) w->q4.groups * TFM_INT4_GROUP * w->q4.kb * TFM_INT4_BLOCK_BYTES : n + 8 * (size_t) w->N;
}

static void
product(prec p, int M, const float *A, const weight *w, float *C, void *work)
{
	switch (p)
	{
		case P_FP32:
			tfm_gemm(false, false, M, w->N, w->K, 1.0f, A, w->K, w->f, w->N, 0.0f, C, w->N);
			break;
		case P_BF16:
			tfm_bf16_gemm(M, w->N, w->K, 1.0f, A, w->K, &w->b, 0.0f, C, w->N, work);
			break;
		case P_INT8:
			tfm_int8_gemm(M, w->N, w->K, 1.0f, A, w->K, &w->q, 0.0f, C, w->N, work);
			break;
		case P_INT4:
			tfm_int4_gemm(M, w->N, w->K, 1.0f, A, w->K, &w->q4, 0.0f, C, w->N, work);
			break;
		case P_GEMV32:
			gemv_fp32(C, A, w->f, w->K, w->N);
			break;
	}
}

static double
rel_error(const float *got, const float *ref, size_t n)
{
	double		e = 0.0,
				r = 0.0;

	for (size_t i = 0; i < n; i++)
	{
		e += ((double) got[i] - ref[i]) * ((double) got[i] - ref[i]);
		r += (double) ref[i] * ref[i];
	}
	return r > 0 ? sqrt(e / r) : 0.0;
}

/* ---- the square product --------------------------------------------------- */

static void
bench_square(int n, int threads)
{
	tfm_rng		rng;
	weight		w;
	float	   *A,
			   *C,
			   *ref;
	void	   *work;
	size_t		wb = tfm_bf16_work_bytes(n, n),
				wq = tfm_int8_work_bytes(n, n),
				w4 = tfm_int4_work_bytes(n, n);

	tfm_rng_seed(&rng, 1);
	A = rand_floats(&rng, (size_t) n * n, 2.0f);
	C = alloc64((size_t) n * n * sizeof(float));
	ref = alloc64((size_t) n * n * sizeof(float));
	work = alloc64((wb > wq ? wb : wq) > w4 ? (wb > wq ? wb : wq) : w4);
	weight_init(&w, &rng, n, n);
	product(P_FP32, n, A, &w, ref, work);
	for (prec p = P_FP32; p <= P_INT4; p++)
	{
		double		t[1000],
					start,
					gflops;
		int			reps = 0;

		product(p, n, A, &w, C, work);
		start = now();
		while (reps < 1000 && (reps < 3 || now() - start < seconds))
		{
			double		t0 = now();

			product(p, n, A, &w, C, work);
			t[reps++] = now() - t0;
		}
		qsort(t, reps, sizeof(double), cmp_double);
		gflops = 2.0 * n * n * n / t[reps / 2] * 1e-9;
		printf("  square %d³  %-4s %d thread%s  %7.1f GFLOP/s (best %7.1f)  %.2f ms, error vs fp32 %.2e\n",
			   n, prec_name[p], threads, threads > 1 ? "s" : " ", gflops,
			   2.0 * n * n * n / t[0] * 1e-9, t[reps / 2] * 1e3, rel_error(C, ref, (size_t) n * n));
		printf("RESULT kind=square prec=%s threads=%d n=%d gflops=%.1f best_gflops=%.1f ms=%.3f\n",
			   prec_name[p], threads, n, gflops, 2.0 * n * n * n / t[0] * 1e-9, t[reps / 2] * 1e3);
	}
	weight_free(&w);
	free(A);
	free(C);
	free(ref);
	free(work);
}

/* ---- GPT-2 small decoding -------------------------------------------------- */

#define LAYERS 12
#define SHAPES 5
static const int shape_k[SHAPES] = {768, 768, 768, 3072, 768};
static const int shape_n[SHAPES] = {2304, 768, 3072, 768, 50257};
static const char *shape_name[SHAPES] = {"qkv 768x2304", "attn-out 768x768", "fc 768x3072",
"fc-out 3072x768", "head 768x50257"};

static void
bench_decode(int threads)
{
	static weight w[LAYERS][SHAPES - 1],
				head;
	static bool ready = false;
	tfm_rng		rng;
	float	   *x = NULL,
			   *y,
			   *ref;
	void	   *work = alloc64(tfm_bf16_work_bytes(1, 3072) + tfm_int8_work_bytes(1, 3072) +
							   tfm_int4_work_bytes(1, 3072));

	tfm_rng_seed(&rng, 2);
	if (!ready)
	{
		for (int l = 0; l < LAYERS; l++)
			for (int s = 0; s < SHAPES - 1; s++)
				weight_init(&w[l][s], &rng, shape_k[s], shape_n[s]);
		weight_init(&head, &rng, 768, 50257);
		ready = true;
	}
	x = rand_floats(&rng, 3072, 2.0f);
	y = alloc64(50257 * sizeof(float));
	ref = alloc64(50257 * sizeof(float));
	product(P_FP32, 1, x, &head, ref, work);

	for (prec p = P_FP32; p <= P_GEMV32; p++)
	{
		static double tok[1000],
					per[SHAPES][1000];
		double		start = now(),
					median_tok;
		int			reps = 0;

		product(p, 1, x, &head, y, work);
		printf("  decode %-4s %d thread%s  (head error vs fp32 %.2e)\n", prec_name[p], threads,
			   threads > 1 ? "s" : "", rel_error(y, ref, 50257));
		for (int it = -1; it < 1000 && (it < 3 || now() - start < seconds); it++)
		{
			double		sh[SHAPES] = {0},
						t0 = now(),
						t1;

			if (it == 0)
				start = t0;
			for (int l = 0; l < LAYERS; l++)
				for (int s = 0; s < SHAPES - 1; s++)
				{
					double		a = now();

					product(p, 1, x, &w[l][s], y, work);
					sh[s] += now() - a;
				}
			t1 = now();
			product(p, 1, x, &head, y, work);
			sh[SHAPES - 1] = now() - t1;
			if (it >= 0)
			{
				tok[reps] = now() - t0;
				for (int s = 0; s < SHAPES; s++)
					per[s][reps] = sh[s];
				reps++;
			}
		}
		for (int s = 0; s < SHAPES; s++)
		{
			double		bytes = (double) weight_bytes(s < SHAPES - 1 ? &w[0][s] : &head, p) *
				(s < SHAPES - 1 ? LAYERS : 1),
						t;

			qsort(per[s], reps, sizeof(double), cmp_double);
			t = per[s][reps / 2];
			printf("    %-18s %7.1f GB/s (best %6.1f)  %8.1f µs%s\n", shape_name[s], bytes / t * 1e-9,
				   bytes / per[s][0] * 1e-9, t * 1e6 / (s < SHAPES - 1 ? LAYERS : 1),
				   s < SHAPES - 1 ? " per layer" : "");
			printf("RESULT kind=decode prec=%s threads=%d shape=%d gbs=%.2f us=%.1f\n",
				   prec_name[p], threads, s, bytes / t * 1e-9,
				   t * 1e6 / (s < SHAPES - 1 ? LAYERS : 1));
		}
		qsort(tok, reps, sizeof(double), cmp_double);
		median_tok = tok[reps / 2];
		{
			double		bytes = 0;

			for (int s = 0; s < SHAPES - 1; s++)
				bytes += (double) weight_bytes(&w[0][s], p) * LAYERS;
			bytes += weight_bytes(&head, p);
			printf("    one token          %7.1f GB/s (best %6.1f)  %8.2f ms  %7.1f tokens/s (best %.1f)\n",
				   bytes / median_tok * 1e-9, bytes / tok[0] * 1e-9, median_tok * 1e3,
				   1.0 / median_tok, 1.0 / tok[0]);
			printf("RESULT kind=decode prec=%s threads=%d shape=token gbs=%.2f tok_s=%.1f best_tok_s=%.1f\n",
				   prec_name[p], threads, bytes / median_tok * 1e-9, 1.0 / median_tok, 1.0 / tok[0]);
		}
	}
	free(x);
	free(y);
	free(ref);
	free(work);
}

/* ---- memory bandwidth ------------------------------------------------------ */

/* Σ of n 64-bit words, split among the threads, in the widest vectors the CPU has */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static uint64_t
read_all(const uint64_t *f, size_t n, int threads)
{
	uint64_t	s = 0;

#pragma omp parallel for num_threads(threads) schedule(static) reduction(+:s)
	for (size_t i = 0; i < n; i++)
		s += f[i];
	return s;
}

static void
bench_memory(int threads)
{
	size_t		n = (size_t) 512 << 20;
	char	   *src = alloc64(n),
			   *dst = alloc64(n);
	double		t[1000],
				start = now(),
				sum = 0.0;
	int			reps = 0;

	memset(src, 1, n);
	memset(dst, 2, n);
	for (int it = -1; it < 1000 && (it < 3 || now() - start < seconds); it++)
	{
		double		t0 = now();

		if (it == 0)
			start = t0;
#pragma omp parallel for num_threads(threads) schedule(static)
		for (int c = 0; c < threads; c++)
			memcpy(dst + n / threads * c, src + n / threads * c, n / threads);
		if (it >= 0)
			t[reps++] = now() - t0;
	}
	qsort(t, reps, sizeof(double), cmp_double);
	printf("  memory %d thread%s  memcpy %6.1f GB/s copied (best %.1f)", threads, threads > 1 ? "s" : " ",
		   n / t[reps / 2] * 1e-9, n / t[0] * 1e-9);
	printf("\nRESULT kind=memory op=memcpy threads=%d gbs=%.2f\n", threads, n / t[reps / 2] * 1e-9);

	reps = 0;
	for (int it = -1; it < 1000 && (it < 3 || now() - start < seconds); it++)
	{
		double		t0 = now();
		if (it == 0)
			start = t0;
		/* an integer sum: the compiler vectorizes it (a float sum it may not reorder) */
		sum += (double) read_all((const uint64_t *) src, n / sizeof(uint64_t), threads);
		if (it >= 0)
			t[reps++] = now() - t0;
	}
	qsort(t, reps, sizeof(double), cmp_double);
	printf("  memory %d thread%s  read   %6.1f GB/s (best %.1f)%s\n", threads, threads > 1 ? "s" : " ",
		   n / t[reps / 2] * 1e-9, n / t[0] * 1e-9, sum == 42.0 ? " " : "");
	printf("RESULT kind=memory op=read threads=%d gbs=%.2f\n", threads, n / t[reps / 2] * 1e-9);
	free(src);
	free(dst);
}

int
main(int argc, char **argv)
{
	int			threads[8] = {1, 2},
				nthreads = 2,
				size = 2048;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
		{
			char	   *s = argv[++i];

			nthreads = 0;
			for (char *tok = strtok(s, ","); tok && nthreads < 8; tok = strtok(NULL, ","))
				threads[nthreads++] = atoi(tok);
		}
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			size = atoi(argv[++i]);
		else if (strcmp(argv[i], "--fallback") == 0)
			tfm_lowp_force_fallback(true);
		else if (strcmp(argv[i], "--avx2") == 0)
			tfm_lowp_force_avx2(true);
		else
		{
			fprintf(stderr, "usage: bench_lowp [--threads 1,2] [--seconds S] [--size N] [--fallback | --avx2]\n");
			return 2;
		}
	}
	{
		char		err[256];

		if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
		{
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	}
	printf("BLIS %s (%s); bf16 %s, int8 %s, int4 %s: %s\n", tfm_blas_arch(), tfm_blas_arch_reason(),
		   tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(), tfm_lowp_int4_kernel(), tfm_lowp_reason());
	printf("INFO blis=%s bf16=%s int8=%s int4=%s\n", tfm_blas_arch(), tfm_lowp_bf16_kernel(),
		   tfm_lowp_int8_kernel(), tfm_lowp_int4_kernel());
	for (int i = 0; i < nthreads; i++)
	{
		tfm_set_threads(threads[i]);
		bench_memory(threads[i]);
		bench_square(size, threads[i]);
		bench_decode(threads[i]);
	}
	return 0;
}
