/*
 * activation.c — ReLU, GELU (the exact erf form, nn.GELU's default,
 * through a vectorizable erf with error below 2e-7) and GELU's tanh
 * approximation (GPT-2's gelu_new, nn.GELU(approximate='tanh'); tanh from
 * the vectorizable exp as 1 - 2/(e^{2u} + 1)) and SiLU (x·σ(x), Marian's
 * "swish").
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "../kernels/vecmath.h"

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f
#define CHUNK 16384

TFM_HOT static void
gelu_forward(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];

		out[i] = 0.5f * x * (1.0f + tfm_erff(x * INV_SQRT2));
	}
}

/* dinp = (overwrite ? 0 : dinp) + dout ⊙ f'(inp); dinp may be dout when overwriting */
TFM_HOT static void
gelu_backward(float *dinp, const float *dout, const float *inp, size_t n, bool overwrite)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];
		float		cdf = 0.5f * (1.0f + tfm_erff(x * INV_SQRT2));
		float		pdf = INV_SQRT_2PI * tfm_expf(-0.5f * x * x);

		dinp[i] = (overwrite ? 0.0f : dinp[i]) + dout[i] * (cdf + x * pdf);
	}
}

#define SQRT_2_OVER_PI 0.79788456080286535588f
#define GELU_C 0.044715f

/* tanh(u) = 1 - 2/(e^{2u} + 1): exact limits ±1, no overflow trap (inf → 1) */
static inline float
tanh_v(float u)
{
	u = u < -20.0f ? -20.0f : (u > 20.0f ? 20.0f : u);
	return 1.0f - 2.0f / (tfm_expf(2.0f * u) + 1.0f);
}

TFM_HOT static void
gelu_tanh_forward(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];
		float		t = tanh_v(SQRT_2_OVER_PI * (x + GELU_C * x * x * x));

		out[i] = 0.5f * x * (1.0f + t);
	}
}

TFM_HOT static void
gelu_tanh_backward(float *dinp, const float *dout, const float *inp, size_t n, bool overwrite)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];
		float		t = tanh_v(SQRT_2_OVER_PI * (x + GELU_C * x * x * x));
		float		du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_C * x * x);
		float		d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;

		dinp[i] = (overwrite ? 0.0f : dinp[i]) + dout[i] * d;
	}
}

TFM_HOT static void
silu_forward(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];

		out[i] = x / (1.0f + tfm_expf(-x));
	}
}

/* silu'(x) = σ(x)(1 + x(1 − σ(x))) */
TFM_HOT static void
silu_backward(float *dinp, const float *dout, const float *inp, size_t n, bool overwrite)
{
	for (size_t i = 0; i < n; i++)
	{
		float		x = inp[i];
		float		s = 1.0f / (1.0f + tfm_expf(-x));

		dinp[i] = (overwrite ? 0.0f : dinp[i]) + dout[i] * s * (1.0f + x * (1.0f - s));
	}
}

TFM_HOT static void
relu_forward(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

TFM_HOT static void
relu_backward(float *dinp, const float *dout, const float *inp, size_t n, bool overwrite)
{
	for (size_t i = 0; i < n; i++)
		dinp[i] = (overwrite ? 0.0f : dinp[i]) + (inp[i] > 0.0f ? dout[i] : 0.0f);
}

tfm_row_fn
tfm_activation_fn(tfm_activation act)
{
	return act == TFM_ACT_RELU ? relu_forward :
		act == TFM_ACT_GELU_TANH ? gelu_tanh_forward :
		act == TFM_ACT_SILU ? silu_forward : gelu_forward;
}

typedef void (*backward_fn) (float *dinp, const float *dout, const float *inp, size_t n,
							 bool overwrite);

/*
 * CHUNK values at a time on the core's threads: out = fwd(inp) (bwd NULL),
 * else out = (overwrite ? 0 : out) + dout ⊙ f'(inp) through bwd
 */
static void
over_chunks(float *out, const float *dout, const float *inp, size_t n, tfm_row_fn fwd,
			backward_fn bwd, bool overwrite)
{
	size_t		chunks = (n + CHUNK - 1) / CHUNK;

#pragma omp parallel for num_threads(tfm_get_threads()) if(chunks > 1) schedule(static)
	for (size_t k = 0; k < chunks; k++)
	{
		size_t		start = k * CHUNK,
					len = n - start < CHUNK ? n - start : CHUNK;

		if (bwd)
			bwd(out + start, dout + start, inp + start, len, overwrite);
		else
			fwd(out + start, inp + start, len);
	}
}

void
tfm_activation_forward(float *out, const float *inp, size_t n, tfm_activation act)
{
	over_chunks(out, NULL, inp, n, tfm_activation_fn(act), NULL, false);
}

static void
backward_chunks(float *dinp, const float *dout, const float *inp, size_t n, tfm_activation act,
				bool overwrite)
{
	over_chunks(dinp, dout, inp, n, NULL,
				act == TFM_ACT_RELU ? relu_backward :
				act == TFM_ACT_GELU_TANH ? gelu_tanh_backward :
				act == TFM_ACT_SILU ? silu_backward : gelu_backward, overwrite);
}

void
tfm_activation_backward(float *dinp, const float *dout, const float *inp,
						size_t n, tfm_activation act)
{
	backward_chunks(dinp, dout, inp, n, act, false);
}

void
tfm_activation_backward_inplace(float *g, const float *inp, size_t n, tfm_activation act)
{
	backward_chunks(g, g, inp, n, act, true);
}
