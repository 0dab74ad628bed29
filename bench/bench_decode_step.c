/*
 * bench_decode_step.c — one decoding step's weight products of a Q4_K_M
 * language model, as tfm_kq_gemm runs them at one thread (issue 40): every
 * matrix of the model in a buffer of its own (as a loaded model holds
 * them), a step the products of the layers in order and then the head,
 * with the types llama.cpp's Q4_K_M gives each tensor (attn_v and
 * ffn_down at Q6_K in the layers its use_more_bits picks, Q4_K elsewhere,
 * the head at Q6_K).  The weights do not fit in the caches, so a step
 * streams them from memory, as generation does; printed beside a plain
 * read of as many bytes (the bandwidth bound a step could reach).
 *
 *   bench_decode_step [--shape llama134m|llama1b|qwen06b] [--steps N] [--rows M]
 *
 * (--rows M: a prefill of M ids instead, every layer's products with M
 * activation rows, the head with the last row only, as tfm_next_tokens runs it)
 *
 * Prints, per shape: the weight bytes a step reads, ms per step (median of
 * N steps after two untimed ones, and the fastest step, in the thread's CPU time, so that
 * other processes' turns on the core do not count), the effective GB/s, the read bound's
 * GB/s and ms, and the time of each tensor kind (the medians' sum).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/kquant.h"
#include "tfm/rng.h"
#include "bench_core.h"

#define Q4_K 12
#define Q6_K 14
#define MAX_STEPS 400

typedef struct shape
{
	const char *name;
	int			d,				/* hidden size */
				kv,				/* key/value width (heads × head size) */
				ff,				/* intermediate size */
				layers,
				vocab;
} shape;

static const shape shapes[] = {
	{"llama134m", 768, 768, 2048, 12, 32000},
	{"llama1b", 2048, 512, 8192, 16, 128256},
	{"qwen06b", 1024, 1024, 3072, 28, 151936},
};

enum
{
	KIND_Q, KIND_K, KIND_V, KIND_O, KIND_GATE, KIND_UP, KIND_DOWN, KIND_HEAD, N_KINDS
};
static const char *const kind_names[N_KINDS] = {"attn_q", "attn_k", "attn_v", "attn_output",
	"ffn_gate", "ffn_up", "ffn_down", "output"};

typedef struct product
{
	int			kind;
	uint32_t	type;
	int			K,
				N;
	uint8_t    *W;
} product;

/* the thread's CPU time: a step's figure without the time another process had the core */
static double
thread_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* llama.cpp's use_more_bits(i, n): the layers whose attn_v and ffn_down Q4_K_M keeps at Q6_K */
static int
more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static uint8_t *
random_blocks(tfm_rng *rng, uint32_t t, int K, int N)
{
	const size_t wb = tfm_kq_row_bytes(t, K),
				bb = t == Q4_K ? 144 : 210;
	uint8_t    *W = malloc(wb * N);
	static const uint8_t h[2] = {0x00, 0x1c};	/* fp16 2^-8 */

	if (!W)
		return NULL;
	for (size_t b = 0; b < wb * N; b++)
		W[b] = (uint8_t) tfm_rng_below(rng, 256);
	for (size_t o = 0; o < wb * N; o += bb)
	{
		if (t == Q6_K)
			memcpy(W + o + 208, h, 2);
		else
		{
			memcpy(W + o, h, 2);
			memcpy(W + o + 2, h, 2);
		}
	}
	return W;
}

/* the plain read bound: 64-byte lines summed, as fast as the compiler makes it */
static double
read_seconds(const uint8_t *const *bufs, const size_t *sizes, int n, uint64_t *sink)
{
	double		t0 = thread_cpu_now();
	uint64_t	s = 0;

	for (int i = 0; i < n; i++)
	{
		const uint64_t *p = (const uint64_t *) bufs[i];

		for (size_t j = 0; j < sizes[i] / 8; j += 8)
			s += p[j] ^ p[j + 1] ^ p[j + 2] ^ p[j + 3] ^ p[j + 4] ^ p[j + 5] ^ p[j + 6] ^ p[j + 7];
	}
	*sink += s;
	return thread_cpu_now() - t0;
}

int
main(int argc, char **argv)
{
	const shape *sh = &shapes[0];
	int			steps = 40,
				M = 1;
	tfm_rng		rng;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
		{
			M = atoi(argv[++i]);
			if (M < 1)
				M = 1;
		}
		else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc)
		{
			const char *s = argv[++i];

			sh = NULL;
			for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
				if (strcmp(s, shapes[k].name) == 0)
					sh = &shapes[k];
			if (!sh)
			{
				fprintf(stderr, "bench_decode_step: unknown shape %s\n", s);
				return 2;
			}
		}
		else
		{
			fprintf(stderr, "usage: bench_decode_step [--shape llama134m|llama1b|qwen06b] [--steps N] [--rows M]\n");
			return 2;
		}
	if (steps < 3 || steps > MAX_STEPS)
		steps = 40;
	tfm_rng_seed(&rng, 11);

	{
		const int	n_prod = 7 * sh->layers + 1;
		product    *P = calloc(n_prod, sizeof(product));
		const uint8_t **bufs = calloc(n_prod, sizeof(uint8_t *));
		size_t	   *sizes = calloc(n_prod, sizeof(size_t)),
					total = 0;
		int			maxK = sh->ff > sh->d ? sh->ff : sh->d,
					maxN = sh->vocab;
		float	   *x = malloc(sizeof(float) * maxK * M),
				   *y = malloc(sizeof(float) * ((size_t) maxK * M > (size_t) maxN ? (size_t) maxK * M : (size_t) maxN));
		void	   *work = malloc(tfm_kq_work_bytes(Q4_K, M, maxK));
		double		t_step[MAX_STEPS],
					t_kind[N_KINDS][MAX_STEPS],
					t_read[MAX_STEPS],
					kind_med[N_KINDS];
		uint64_t	sink = 0;
		int			n = 0;

		for (int l = 0; l < sh->layers; l++)
		{
			const int	mb = more_bits(l, sh->layers);

			P[n++] = (product) {KIND_Q, Q4_K, sh->d, sh->d, NULL};
			P[n++] = (product) {KIND_K, Q4_K, sh->d, sh->kv, NULL};
			P[n++] = (product) {KIND_V, mb ? Q6_K : Q4_K, sh->d, sh->kv, NULL};
			P[n++] = (product) {KIND_O, Q4_K, sh->d, sh->d, NULL};
			P[n++] = (product) {KIND_GATE, Q4_K, sh->d, sh->ff, NULL};
			P[n++] = (product) {KIND_UP, Q4_K, sh->d, sh->ff, NULL};
			P[n++] = (product) {KIND_DOWN, mb ? Q6_K : Q4_K, sh->ff, sh->d, NULL};
		}
		P[n++] = (product) {KIND_HEAD, Q6_K, sh->d, sh->vocab, NULL};
		for (int i = 0; i < n; i++)
		{
			P[i].W = random_blocks(&rng, P[i].type, P[i].K, P[i].N);
			if (!P[i].W)
			{
				fprintf(stderr, "bench_decode_step: out of memory\n");
				return 1;
			}
			bufs[i] = P[i].W;
			sizes[i] = tfm_kq_row_bytes(P[i].type, P[i].K) * P[i].N;
			total += sizes[i];
		}
		for (int k = 0; k < maxK * M; k++)
			x[k] = (float) tfm_rng_normal(&rng);
		if (M > 1)
			printf("%s: a prefill of %d rows (the head: the last row)\n", sh->name, M);
		printf("%s: %d products a step, %.1f MB of weights; kernel path %s; 1 thread\n",
			   sh->name, n, total / 1e6, tfm_kq_path());
		for (int s = -2; s < steps; s++)
		{
			double		t0 = thread_cpu_now(),
						tk[N_KINDS] = {0};

			for (int i = 0; i < n; i++)
			{
				double		a = thread_cpu_now();

				tfm_kq_gemm(P[i].type, P[i].kind == KIND_HEAD ? 1 : M, P[i].N, P[i].K, x, P[i].K, P[i].W, 1.0f, 0.0f, y,
							P[i].N, work, 1);
				tk[P[i].kind] += thread_cpu_now() - a;
			}
			if (s >= 0)
			{
				t_step[s] = thread_cpu_now() - t0;
				for (int k = 0; k < N_KINDS; k++)
					t_kind[k][s] = tk[k];
				t_read[s] = read_seconds(bufs, sizes, n, &sink);
			}
		}
		/* summarise sorts each: [steps / 2] its median, [0] its fastest */
		summarise(t_step, steps);
		summarise(t_read, steps);
		for (int k = 0; k < N_KINDS; k++)
			kind_med[k] = summarise(t_kind[k], steps).median;
		printf("step %.3f ms (%.1f GB/s; fastest %.3f)   plain read of the same bytes %.3f ms (%.1f GB/s)   step / read %.2f\n",
			   t_step[steps / 2] * 1e3, total / t_step[steps / 2] / 1e9, t_step[0] * 1e3,
			   t_read[steps / 2] * 1e3, total / t_read[steps / 2] / 1e9, t_step[steps / 2] / t_read[steps / 2]);
		for (int k = 0; k < N_KINDS; k++)
		{
			size_t		bytes = 0;

			for (int i = 0; i < n; i++)
				if (P[i].kind == k)
					bytes += sizes[i];
			printf("  %-12s %7.3f ms  %6.1f MB  %5.1f GB/s\n", kind_names[k], kind_med[k] * 1e3,
				   bytes / 1e6, bytes / kind_med[k] / 1e9);
		}
		printf("RESULT shape=%s bytes=%zu step_ms=%.4f read_ms=%.4f (%llu)\n", sh->name, total,
			   t_step[steps / 2] * 1e3, t_read[steps / 2] * 1e3, (unsigned long long) (sink & 1));
		for (int i = 0; i < n; i++)
			free(P[i].W);
		free(P);
		free(bufs);
		free(sizes);
		free(x);
		free(y);
		free(work);
	}
	return 0;
}
