/*
 * attn_products.c — attention's six per-(sequence, head) products, one
 * thread, through BLIS's gemm (tfm_gemm_strided: what the core called until
 * 2026-11-23) and through tfm_gemm_packed (BLIS's micro-kernel on panels
 * the core packs itself: what it calls now), at the shapes of the three
 * benchmark models:
 *
 *   classify  32 × 8 pairs, T 256, head size 16  (bench/run.sh's model)
 *   lm        64 × 4 pairs, T 128, head size 32  (bench/lm's small model)
 *   seq2seq  512 × 8 pairs, T 16,  head size 32  (bench/seq2seq's eng_fra)
 *
 * Q/K/V are views into one fused (T, 3d) buffer per sequence, as in the
 * model; all products are full T × T (no causal blocks).  Best of REPS.
 *
 *   make -C bench attn_products && bench/attn_products
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/blas.h"
#include "tfm/rng.h"

#define REPS 5

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct shape
{
	const char *name;
	int			B,
				H,
				T,
				S;
} shape;

static const char *products[6] = {
	"fwd  S = Q·Kᵀ",
	"fwd  O = P·V",
	"bwd  dP = dO·Vᵀ",
	"bwd  dV += Pᵀ·dO",
	"bwd  dQ += dS·K",
	"bwd  dK += dSᵀ·Q",
};

/* product k of pair (q, kk, v, ...) through one of the two paths */
static void
product(int k, bool packed, int T, int S, ptrdiff_t rs, int D, const float *q, const float *kk,
		const float *v, float *ob, float *dq, float *dk, float *dv, float *P, float *dP,
		float *pack)
{
#define GEMM(M, N, K, al, A, ra, ca, Bm, rb, cb, be, C, rc, cc) \
	do { if (packed) tfm_gemm_packed(M, N, K, al, A, ra, ca, Bm, rb, cb, be, C, rc, cc, pack); \
		 else tfm_gemm_strided(M, N, K, al, A, ra, ca, Bm, rb, cb, be, C, rc, cc); } while (0)
	switch (k)
	{
		case 0:
			GEMM(T, T, S, 0.25f, q, rs, 1, kk, 1, rs, 0.0f, P, T, 1);
			break;
		case 1:
			GEMM(T, S, T, 1.0f, P, T, 1, v, rs, 1, 0.0f, ob, D, 1);
			break;
		case 2:
			GEMM(T, T, S, 1.0f, ob, D, 1, v, 1, rs, 0.0f, dP, T, 1);
			break;
		case 3:
			GEMM(T, S, T, 1.0f, P, 1, T, ob, D, 1, 1.0f, dv, rs, 1);
			break;
		case 4:
			GEMM(T, S, T, 0.25f, dP, T, 1, kk, rs, 1, 1.0f, dq, rs, 1);
			break;
		case 5:
			GEMM(T, S, T, 0.25f, dP, 1, T, q, rs, 1, 1.0f, dk, rs, 1);
			break;
	}
#undef GEMM
}

static void
run_shape(const shape *sh, tfm_rng *rng)
{
	const int	T = sh->T,
				S = sh->S,
				D = sh->H * S,
				pairs = sh->B * sh->H;
	const ptrdiff_t rs = 3 * D;
	const size_t nqkv = (size_t) sh->B * T * 3 * D + 16;
	float	   *qkv = malloc(sizeof(float) * nqkv),
			   *dqkv = calloc(nqkv, sizeof(float)),
			   *o = malloc(sizeof(float) * ((size_t) sh->B * T * D + 16)),
			   *P = malloc(sizeof(float) * ((size_t) T * T + 16)),
			   *dP = malloc(sizeof(float) * ((size_t) T * T + 16)),
			   *pack = malloc(sizeof(float) * tfm_gemm_packed_floats(T > S ? T : S, T > S ? T : S,
																	 T > S ? T : S));
	double		flops = 2.0 * T * T * S * pairs,
				total[2] = {0, 0};

	for (size_t i = 0; i < nqkv; i++)
		qkv[i] = tfm_rng_uniform(rng) - 0.5f;
	for (size_t i = 0; i < (size_t) sh->B * T * D + 16; i++)
		o[i] = tfm_rng_uniform(rng) - 0.5f;
	for (size_t i = 0; i < (size_t) T * T + 16; i++)
	{
		P[i] = tfm_rng_uniform(rng) / T;
		dP[i] = tfm_rng_uniform(rng) - 0.5f;
	}
	printf("%s: %d pairs, T %d, head size %d (%.0f MFLOP per product), 1 thread, best of %d\n",
		   sh->name, pairs, T, S, flops / 1e6, REPS);
	for (int k = 0; k < 6; k++)
	{
		double		best[2] = {1e9, 1e9};

		for (int rep = 0; rep < REPS; rep++)
			for (int packed = 0; packed < 2; packed++)
			{
				double		t0 = now();

				for (int pr = 0; pr < pairs; pr++)
				{
					int			b = pr / sh->H,
								j = pr % sh->H;
					const float *q = qkv + (size_t) b * T * rs + (size_t) j * S;
					float	   *dq = dqkv + (size_t) b * T * rs + (size_t) j * S;

					product(k, packed, T, S, rs, D, q, q + D, q + 2 * D,
							o + (size_t) b * T * D + (size_t) j * S, dq, dq + D, dq + 2 * D,
							P, dP, pack);
				}
				t0 = now() - t0;
				best[packed] = t0 < best[packed] ? t0 : best[packed];
			}
		total[0] += best[0];
		total[1] += best[1];
		printf("  %-18s BLIS gemm %7.2f ms %5.1f GFLOP/s   packed micro-kernel %7.2f ms %5.1f GFLOP/s   %.2fx\n",
			   products[k], best[0] * 1e3, flops / best[0] / 1e9, best[1] * 1e3,
			   flops / best[1] / 1e9, best[0] / best[1]);
	}
	printf("  all six            BLIS gemm %7.2f ms            packed micro-kernel %7.2f ms            %.2fx\n",
		   total[0] * 1e3, total[1] * 1e3, total[0] / total[1]);
	printf("RESULT shape=%s gemm_ms=%.2f packed_ms=%.2f speedup=%.2f\n", sh->name, total[0] * 1e3,
		   total[1] * 1e3, total[0] / total[1]);
	free(qkv);
	free(dqkv);
	free(o);
	free(P);
	free(dP);
	free(pack);
}

int
main(void)
{
	static const shape shapes[] = {
		{"classify", 32, 8, 256, 16},
		{"lm", 64, 4, 128, 32},
		{"seq2seq", 512, 8, 16, 32},
	};
	tfm_rng		rng;
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_set_threads(1);
	tfm_rng_seed(&rng, 1);
	printf("BLIS kernels: %s (%s)\n", tfm_blas_arch(), tfm_blas_arch_reason());
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		run_shape(&shapes[i], &rng);
	return 0;
}
