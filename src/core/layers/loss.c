/*
 * loss.c — cross-entropy with an ignored index and label smoothing (the
 * definition of nn.CrossEntropyLoss), fused with its gradient, and a plain
 * row softmax for inference.  A row's max and sums are vector reductions
 * (`omp simd`), in an order fixed by the code.
 */
#include <math.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "../kernels/vecmath.h"

/* one row's loss; writes its gradient (may be in place of z) */
TFM_HOT static double
ce_row(float *dz, const float *z, int V, int y, float eps, float grad_scale)
{
	float		mx = z[0],
				sum = 0.0f,
				zsum = 0.0f,
				lse,
				zy = z[y];
	double		loss;

#pragma omp simd reduction(max:mx)
	for (int c = 1; c < V; c++)
		mx = z[c] > mx ? z[c] : mx;
#pragma omp simd reduction(+:sum, zsum)
	for (int c = 0; c < V; c++)
	{
		sum += tfm_expf(z[c] - mx);
		zsum += z[c];
	}
	lse = mx + logf(sum);
	loss = (1.0 - eps) * ((double) lse - zy) + eps * ((double) lse - (double) zsum / V);
	if (dz)
	{
		float		inv = 1.0f / sum;
		float		u = eps / V;

		for (int c = 0; c < V; c++)
			dz[c] = grad_scale * (tfm_expf(z[c] - mx) * inv - u);
		dz[y] -= grad_scale * (1.0f - eps);
	}
	return loss;
}

double
tfm_cross_entropy(float *dlogits, int *count, const float *logits,
				  const int32_t *targets, int N, int V,
				  int ignore_index, float eps, float grad_scale)
{
	double		total = 0.0;
	int			counted = 0;

	/* a target past the logits' row would be read (z[y]) and written (dz[y]) */
	if (tfm_ids_find_bad(targets, (size_t) (N > 0 ? N : 0), V, ignore_index) >= 0)
	{
		*count = -1;
		return NAN;
	}
#pragma omp parallel for num_threads(tfm_get_threads()) if((size_t) N * V >= 65536) \
	schedule(static) reduction(+:total,counted)
	for (int n = 0; n < N; n++)
	{
		const float *z = logits + (size_t) n * V;
		float	   *dz = dlogits ? dlogits + (size_t) n * V : NULL;
		int			y = targets[n];

		if (y == ignore_index)
		{
			if (dz)
				memset(dz, 0, sizeof(float) * V);
			continue;
		}
		total += ce_row(dz, z, V, y, eps, grad_scale);
		counted++;
	}
	*count = counted;
	return total;
}

double
tfm_bce_logits(float *dlogits, int *count, const float *logits, const float *targets, int N,
			   float grad_scale)
{
	double		total = 0.0;

	for (int n = 0; n < N; n++)
		if (!(targets[n] >= 0.0f && targets[n] <= 1.0f))
		{
			*count = -1;
			return NAN;
		}
	for (int n = 0; n < N; n++)
	{
		double		z = logits[n],
					y = targets[n];

		/* max(z, 0) - z·y + log(1 + e^-|z|): no overflow either way */
		total += (z > 0.0 ? z : 0.0) - z * y + log1p(exp(-fabs(z)));
		if (dlogits)
			dlogits[n] = grad_scale * (float) (1.0 / (1.0 + exp(-z)) - y);
	}
	*count = N;
	return total;
}

/* one column (k) of a row's T positions: its cross-entropy against y, gradient × g into dz */
static double
span_column(float *dz, const float *z, const uint8_t *pad, int T, int k, int y, float g)
{
	double		mx = -INFINITY,
				sum = 0.0,
				lse;

	for (int t = 0; t < T; t++)
		if (!pad[t] && z[2 * t + k] > mx)
			mx = z[2 * t + k];
	for (int t = 0; t < T; t++)
		if (!pad[t])
			sum += exp(z[2 * t + k] - mx);
	lse = mx + log(sum);
	{
		double		loss = lse - z[2 * y + k];

		if (dz)
		{
			for (int t = 0; t < T; t++)
				dz[2 * t + k] = pad[t] ? 0.0f : g * (float) exp(z[2 * t + k] - lse);
			dz[2 * y + k] -= g;
		}
		return loss;
	}
}

double
tfm_span_cross_entropy(float *dlogits, int *count, const float *logits, const int32_t *spans,
					   const uint8_t *pad, int B, int T, float grad_scale)
{
	double		total = 0.0;

	for (int i = 0; i < 2 * B; i++)
		if (spans[i] < 0 || spans[i] >= T || pad[(size_t) (i / 2) * T + spans[i]])
		{
			*count = -1;
			return NAN;
		}
	for (int b = 0; b < B; b++)
	{
		const float *z = logits + (size_t) b * T * 2;
		float	   *dz = dlogits ? dlogits + (size_t) b * T * 2 : NULL;
		const uint8_t *p = pad + (size_t) b * T;

		/* each column reads only itself before writing itself: dz may be z */
		total += 0.5 * (span_column(dz, z, p, T, 0, spans[2 * b], 0.5f * grad_scale) +
						span_column(dz, z, p, T, 1, spans[2 * b + 1], 0.5f * grad_scale));
	}
	*count = B;
	return total;
}

TFM_HOT static void
softmax_row(float *z, int V)
{
	float		mx = z[0],
				sum = 0.0f,
				inv;

#pragma omp simd reduction(max:mx)
	for (int c = 1; c < V; c++)
		mx = z[c] > mx ? z[c] : mx;
#pragma omp simd reduction(+:sum)
	for (int c = 0; c < V; c++)
	{
		z[c] = tfm_expf(z[c] - mx);
		sum += z[c];
	}
	inv = 1.0f / sum;
	for (int c = 0; c < V; c++)
		z[c] *= inv;
}

void
tfm_softmax_rows(float *x, int N, int V)
{
	for (int n = 0; n < N; n++)
		softmax_row(x + (size_t) n * V, V);
}
