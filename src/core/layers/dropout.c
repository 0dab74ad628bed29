/*
 * dropout.c — inverted dropout.  Element i is kept when the counter-based
 * hash of (key, i) is at or above p·2³², so the backward pass regenerates
 * the mask instead of storing it, and the mask does not depend on threads.
 */
#include <string.h>

#include "tfm/layers.h"
#include "tfm/rng.h"
#include "../vecmath.h"

static inline uint32_t
threshold(float p)
{
	double		t = (double) p * 4294967296.0;

	return t >= 4294967295.0 ? 4294967295u : (uint32_t) t;
}

TFM_HOT static void
drop(float *out, const float *inp, size_t n, uint32_t th, float scale, uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		out[i] = tfm_drop_bits(key, i) >= th ? inp[i] * scale : 0.0f;
}

TFM_HOT static void
drop_add(float *out, const float *inp, size_t n, uint32_t th, float scale, uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		out[i] += tfm_drop_bits(key, i) >= th ? inp[i] * scale : 0.0f;
}

TFM_HOT static void
add(float *out, const float *x, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = x[i] + y[i];
}

TFM_HOT static void
add_drop(float *out, const float *x, const float *y, size_t n, uint32_t th, float scale,
		 uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		out[i] = x[i] + (tfm_drop_bits(key, i) >= th ? y[i] * scale : 0.0f);
}

TFM_HOT static void
accumulate(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] += inp[i];
}

void
tfm_dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t key)
{
	if (p <= 0.0f)
	{
		if (out != inp)
			memmove(out, inp, n * sizeof(float));
		return;
	}
	drop(out, inp, n, threshold(p), 1.0f / (1.0f - p), key);
}

void
tfm_dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t key)
{
	if (p <= 0.0f)
	{
		accumulate(dinp, dout, n);
		return;
	}
	drop_add(dinp, dout, n, threshold(p), 1.0f / (1.0f - p), key);
}

void
tfm_residual_forward(float *out, const float *x, const float *y, size_t n,
					 float p, uint64_t key)
{
	if (p <= 0.0f)
		add(out, x, y, n);
	else
		add_drop(out, x, y, n, threshold(p), 1.0f / (1.0f - p), key);
}

void
tfm_residual_backward(float *dx, float *dy, const float *dout, size_t n,
					  float p, uint64_t key)
{
	if (dx)
		accumulate(dx, dout, n);
	if (dy)
		tfm_dropout_backward(dy, dout, n, p, key);
}
