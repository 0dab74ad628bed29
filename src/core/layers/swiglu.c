/*
 * swiglu.c — Llama's gated feed-forward activation: h = silu(gate) ⊙ up,
 * silu(x) = x·σ(x), with gate and up side by side in one row (the fused
 * gate | up projection).
 *
 *   dgate = dh ⊙ up ⊙ σ(g)(1 + g(1 − σ(g))),   dup = dh ⊙ silu(g)
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers_llama.h"
#include "../kernels/vecmath.h"

static inline float
sigmoid(float x)
{
	return 1.0f / (1.0f + tfm_expf(-x));
}

/* one row: tfm_expf's sigmoid vectorizes (libm's expf is a call per value) */
TFM_HOT static void
swiglu_row(float *o, const float *gate, const float *up, int f)
{
	for (int i = 0; i < f; i++)
		o[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

void
tfm_swiglu_forward(float *out, const float *hg, int N, int f)
{
	if (N < 16)
	{
		/* decoding's few rows: no parallel region (libgomp's team costs ~0.5 µs) */
		for (int n = 0; n < N; n++)
			swiglu_row(out + (size_t) n * f, hg + (size_t) n * 2 * f, hg + (size_t) n * 2 * f + f, f);
		return;
	}
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static)
	for (int n = 0; n < N; n++)
		swiglu_row(out + (size_t) n * f, hg + (size_t) n * 2 * f, hg + (size_t) n * 2 * f + f, f);
}

void
tfm_swiglu_backward(float *dhg, const float *dout, const float *hg, int N, int f)
{
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 16)
	for (int n = 0; n < N; n++)
	{
		const float *gate = hg + (size_t) n * 2 * f,
				   *up = gate + f,
				   *dh = dout + (size_t) n * f;
		float	   *dg = dhg + (size_t) n * 2 * f,
				   *du = dg + f;

		for (int i = 0; i < f; i++)
		{
			float		sg = sigmoid(gate[i]),
						si = gate[i] * sg;

			dg[i] = dh[i] * up[i] * sg * (1.0f + gate[i] * (1.0f - sg));
			du[i] = dh[i] * si;
		}
	}
}
