/*
 * attn_products.c — evidence for bench/README.md's suggestions 1 and 2: the
 * per-(batch row, head) products of one attention layer of the reference
 * classifier (32 × 8 pairs, T 256, head size 16, Q/K/V fused with row
 * stride 384), as tfm_attention_forward/backward call them through
 * tfm_gemm_strided, beside the same products with the transposed operand
 * copied to a contiguous buffer first; and a softmax row as the core's
 * masked_softmax_row computes it (in-order reductions) beside one with
 * OpenMP simd reductions.  One thread.
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
#include "../src/core/vecmath.h"	/* tfm_expf and TFM_HOT, as the core uses them */

#define B 32
#define H 8
#define T 256
#define S 16
#define D (H * S)
#define PAIRS (B * H)
#define REPS 5

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the core's softmax row (no padding), reductions in order */
TFM_HOT static void
softmax_inorder(float *row, int n)
{
	float		mx = -INFINITY,
				sum = 0.0f,
				inv;

	for (int c = 0; c < n; c++)
		mx = row[c] > mx ? row[c] : mx;
	for (int c = 0; c < n; c++)
	{
		float		e = tfm_expf(row[c] - mx);

		row[c] = e;
		sum += e;
	}
	inv = 1.0f / sum;
	for (int c = 0; c < n; c++)
		row[c] *= inv;
}

/* the same with reassociated (vectorized) reductions */
TFM_HOT static void
softmax_simd(float *row, int n)
{
	float		mx = -INFINITY,
				sum = 0.0f,
				inv;

#pragma omp simd reduction(max:mx)
	for (int c = 0; c < n; c++)
		mx = row[c] > mx ? row[c] : mx;
#pragma omp simd reduction(+:sum)
	for (int c = 0; c < n; c++)
	{
		float		e = tfm_expf(row[c] - mx);

		row[c] = e;
		sum += e;
	}
	inv = 1.0f / sum;
#pragma omp simd
	for (int c = 0; c < n; c++)
		row[c] *= inv;
}

/* dst (S × T, row-major) = src viewed as T rows of S floats with row stride rs, transposed */
static void
transpose_head(float *dst, const float *src, ptrdiff_t rs)
{
	for (int c = 0; c < T; c++)
		for (int i = 0; i < S; i++)
			dst[(size_t) i * T + c] = src[(size_t) c * rs + i];
}

typedef enum
{
	QKT_VIEW, QKT_COPY, DOVT_VIEW, DOVT_COPY, PV, PTDO, DSK, DSTQ, N_CASES
} kase;

static const char *names[N_CASES] = {
	"fwd  S = Q·Kᵀ      K as transposed view (as the core)",
	"fwd  S = Q·Kᵀ      K copied transposed first",
	"bwd  dP = dO·Vᵀ    V as transposed view (as the core)",
	"bwd  dP = dO·Vᵀ    V copied transposed first",
	"fwd  O = P·V",
	"bwd  dV += Pᵀ·dO   (P as transposed view, as the core)",
	"bwd  dQ += dS·K",
	"bwd  dK += dSᵀ·Q   (dS as transposed view, as the core)",
};

int
main(void)
{
	const ptrdiff_t rs = 3 * D;
	float	   *qkv = malloc(sizeof(float) * B * T * 3 * D),
			   *dqkv = calloc((size_t) B * T * 3 * D, sizeof(float)),
			   *o = malloc(sizeof(float) * B * T * D),
			   *P = malloc(sizeof(float) * T * T),
			   *dP = malloc(sizeof(float) * T * T),
			   *tr = malloc(sizeof(float) * S * T),
			   *scores = malloc(sizeof(float) * (size_t) PAIRS * T * T),
			   *row = malloc(sizeof(float) * T * T);
	double		best[N_CASES],
				sm_in = 1e9,
				sm_simd = 1e9,
				flops = 2.0 * T * T * S * PAIRS;
	tfm_rng		rng;
	char		err[256];

	if (tfm_blas_init(NULL, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_set_threads(1);
	tfm_rng_seed(&rng, 1);
	for (size_t i = 0; i < (size_t) B * T * 3 * D; i++)
		qkv[i] = tfm_rng_uniform(&rng) - 0.5f;
	for (size_t i = 0; i < (size_t) B * T * D; i++)
		o[i] = tfm_rng_uniform(&rng) - 0.5f;
	for (size_t i = 0; i < (size_t) T * T; i++)
	{
		P[i] = tfm_rng_uniform(&rng) / T;
		dP[i] = tfm_rng_uniform(&rng) - 0.5f;
	}
	for (size_t i = 0; i < (size_t) PAIRS * T * T; i++)
		scores[i] = 4.0f * (tfm_rng_uniform(&rng) - 0.5f);
	for (int k = 0; k < N_CASES; k++)
		best[k] = 1e9;

	for (int rep = 0; rep < REPS; rep++)
	{
		for (int k = 0; k < N_CASES; k++)
		{
			double		t0 = now();

			for (int pr = 0; pr < PAIRS; pr++)
			{
				int			b = pr / H,
							j = pr % H;
				const float *q = qkv + (size_t) b * T * rs + (size_t) j * S,
						   *kk = q + D,
						   *v = q + 2 * D;
				float	   *dq = dqkv + (size_t) b * T * rs + (size_t) j * S,
						   *dk = dq + D,
						   *dv = dq + 2 * D,
						   *ob = o + (size_t) b * T * D + (size_t) j * S;

				switch (k)
				{
					case QKT_VIEW:
						tfm_gemm_strided(T, T, S, 0.25f, q, rs, 1, kk, 1, rs, 0.0f, P, T, 1);
						break;
					case QKT_COPY:
						transpose_head(tr, kk, rs);
						tfm_gemm_strided(T, T, S, 0.25f, q, rs, 1, tr, T, 1, 0.0f, P, T, 1);
						break;
					case DOVT_VIEW:
						tfm_gemm_strided(T, T, S, 1.0f, ob, D, 1, v, 1, rs, 0.0f, dP, T, 1);
						break;
					case DOVT_COPY:
						transpose_head(tr, v, rs);
						tfm_gemm_strided(T, T, S, 1.0f, ob, D, 1, tr, T, 1, 0.0f, dP, T, 1);
						break;
					case PV:
						tfm_gemm_strided(T, S, T, 1.0f, P, T, 1, v, rs, 1, 0.0f, ob, D, 1);
						break;
					case PTDO:
						tfm_gemm_strided(T, S, T, 1.0f, P, 1, T, ob, D, 1, 1.0f, dv, rs, 1);
						break;
					case DSK:
						tfm_gemm_strided(T, S, T, 0.25f, dP, T, 1, kk, rs, 1, 1.0f, dq, rs, 1);
						break;
					case DSTQ:
						tfm_gemm_strided(T, S, T, 0.25f, dP, 1, T, q, rs, 1, 1.0f, dk, rs, 1);
						break;
				}
			}
			t0 = now() - t0;
			if (t0 < best[k])
				best[k] = t0;
		}
		{
			double		t0,
						t1,
						t2,
						copy;

			t0 = now();
			for (int pr = 0; pr < PAIRS; pr++)
				memcpy(row, scores + (size_t) pr * T * T, sizeof(float) * T * T);
			t1 = now();
			copy = t1 - t0;
			for (int pr = 0; pr < PAIRS; pr++)
			{
				memcpy(row, scores + (size_t) pr * T * T, sizeof(float) * T * T);
				for (int r = 0; r < T; r++)
					softmax_inorder(row + (size_t) r * T, T);
			}
			t2 = now();
			if (t2 - t1 - copy < sm_in)
				sm_in = t2 - t1 - copy;
			t1 = now();
			for (int pr = 0; pr < PAIRS; pr++)
			{
				memcpy(row, scores + (size_t) pr * T * T, sizeof(float) * T * T);
				for (int r = 0; r < T; r++)
					softmax_simd(row + (size_t) r * T, T);
			}
			t2 = now();
			if (t2 - t1 - copy < sm_simd)
				sm_simd = t2 - t1 - copy;
		}
	}

	printf("one attention layer of the reference classifier (%d pairs, T %d, head size %d), 1 thread, BLIS %s; best of %d:\n",
		   PAIRS, T, S, tfm_blas_arch(), REPS);
	for (int k = 0; k < N_CASES; k++)
		printf("  %-58s %6.1f ms  %5.1f GFLOP/s\n", names[k], best[k] * 1e3,
			   flops / best[k] / 1e9);
	printf("  softmax of %d rows of %d: in-order reductions (as the core) %.1f ms, simd reductions %.1f ms\n",
		   PAIRS * T, T, sm_in * 1e3, sm_simd * 1e3);
	{
		/* the two softmax versions agree to rounding */
		float	   *a = malloc(sizeof(float) * T),
				   *b = malloc(sizeof(float) * T);
		double		md = 0.0;

		for (int r = 0; r < 64; r++)
		{
			memcpy(a, scores + (size_t) r * T, sizeof(float) * T);
			memcpy(b, a, sizeof(float) * T);
			softmax_inorder(a, T);
			softmax_simd(b, T);
			for (int c = 0; c < T; c++)
				md = fmax(md, fabs((double) a[c] - b[c]) / fmax(1e-30, fabs((double) a[c])));
		}
		printf("  (largest relative difference between the two softmax versions: %.1e)\n", md);
		free(a);
		free(b);
	}
	free(qkv);
	free(dqkv);
	free(o);
	free(P);
	free(dP);
	free(tr);
	free(scores);
	free(row);
	return 0;
}
