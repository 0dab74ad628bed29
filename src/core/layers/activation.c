/*
 * activation.c — ReLU and GELU (the exact erf form, nn.GELU's default).
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers.h"

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

void
tfm_activation_forward(float *out, const float *inp, size_t n, tfm_activation act)
{
	if (act == TFM_ACT_RELU)
	{
		for (size_t i = 0; i < n; i++)
			out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
		return;
	}
#pragma omp parallel for num_threads(tfm_get_threads()) if(n >= 65536) schedule(static)
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];

		out[i] = 0.5f * x * (1.0f + erff(x * INV_SQRT2));
	}
}

void
tfm_activation_backward(float *dinp, const float *dout, const float *inp,
						size_t n, tfm_activation act)
{
	if (act == TFM_ACT_RELU)
	{
		for (size_t i = 0; i < n; i++)
			if (inp[i] > 0.0f)
				dinp[i] += dout[i];
		return;
	}
#pragma omp parallel for num_threads(tfm_get_threads()) if(n >= 65536) schedule(static)
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];
		float		cdf = 0.5f * (1.0f + erff(x * INV_SQRT2));
		float		pdf = INV_SQRT_2PI * expf(-0.5f * x * x);

		dinp[i] += dout[i] * (cdf + x * pdf);
	}
}
