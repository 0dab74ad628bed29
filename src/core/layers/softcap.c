/*
 * softcap.c — Gemma 2's soft cap of its output logits: z ← c·tanh(z/c),
 * which bounds them to (−c, c) smoothly.  The backward pass reads the
 * capped values y: dz = dy ⊙ (1 − (y/c)²).  (The attention scores' cap is
 * applied inside attention.c, between the product and the softmax.)
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers_llama.h"

void
tfm_softcap_forward(float *x, size_t n, float cap)
{
	if (cap <= 0.0f)
		return;
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (n >= 65536)
	for (size_t i = 0; i < n; i++)
		x[i] = cap * tanhf(x[i] / cap);
}

void
tfm_softcap_backward(float *g, const float *y, size_t n, float cap)
{
	if (cap <= 0.0f)
		return;
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (n >= 65536)
	for (size_t i = 0; i < n; i++)
	{
		float		t = y[i] / cap;

		g[i] *= 1.0f - t * t;
	}
}
