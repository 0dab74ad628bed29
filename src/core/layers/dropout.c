/*
 * dropout.c — inverted dropout.  Element i is kept when the counter-based
 * hash of (key, i) is at or above p·2³², so the backward pass regenerates
 * the mask instead of storing it, and the mask does not depend on threads.
 */
#include <string.h>

#include "tfm/layers.h"
#include "tfm/rng.h"

static inline uint32_t
threshold(float p)
{
	double		t = (double) p * 4294967296.0;

	return t >= 4294967295.0 ? 4294967295u : (uint32_t) t;
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
	{
		uint32_t	th = threshold(p);
		float		scale = 1.0f / (1.0f - p);

		for (size_t i = 0; i < n; i++)
			out[i] = tfm_hash32(key, i) >= th ? inp[i] * scale : 0.0f;
	}
}

void
tfm_dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t key)
{
	if (p <= 0.0f)
	{
		for (size_t i = 0; i < n; i++)
			dinp[i] += dout[i];
		return;
	}
	{
		uint32_t	th = threshold(p);
		float		scale = 1.0f / (1.0f - p);

		for (size_t i = 0; i < n; i++)
			if (tfm_hash32(key, i) >= th)
				dinp[i] += dout[i] * scale;
	}
}

void
tfm_residual_forward(float *out, const float *x, const float *y, size_t n,
					 float p, uint64_t key)
{
	if (p <= 0.0f)
	{
		for (size_t i = 0; i < n; i++)
			out[i] = x[i] + y[i];
		return;
	}
	{
		uint32_t	th = threshold(p);
		float		scale = 1.0f / (1.0f - p);

		for (size_t i = 0; i < n; i++)
			out[i] = x[i] + (tfm_hash32(key, i) >= th ? y[i] * scale : 0.0f);
	}
}

void
tfm_residual_backward(float *dx, float *dy, const float *dout, size_t n,
					  float p, uint64_t key)
{
	if (dx)
		for (size_t i = 0; i < n; i++)
			dx[i] += dout[i];
	if (dy)
		tfm_dropout_backward(dy, dout, n, p, key);
}
