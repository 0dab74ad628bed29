/*
 * loss.c — cross-entropy with an ignored index and label smoothing (the
 * definition of nn.CrossEntropyLoss), fused with its gradient, and a plain
 * row softmax for inference.
 */
#include <math.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"

double
tfm_cross_entropy(float *dlogits, int *count, const float *logits,
				  const int32_t *targets, int N, int V,
				  int ignore_index, float eps, float grad_scale)
{
	double		total = 0.0;
	int			counted = 0;

#pragma omp parallel for num_threads(tfm_get_threads()) if((size_t) N * V >= 65536) \
	schedule(static) reduction(+:total,counted)
	for (int n = 0; n < N; n++)
	{
		const float *z = logits + (size_t) n * V;
		float	   *dz = dlogits ? dlogits + (size_t) n * V : NULL;
		int			y = targets[n];
		float		mx = z[0];
		double		sum = 0.0,
					zsum = 0.0,
					lse;

		if (y == ignore_index)
		{
			if (dz)
				memset(dz, 0, sizeof(float) * V);
			continue;
		}
		for (int c = 1; c < V; c++)
			if (z[c] > mx)
				mx = z[c];
		for (int c = 0; c < V; c++)
		{
			sum += exp((double) (z[c] - mx));
			zsum += z[c];
		}
		lse = mx + log(sum);
		total += (1.0 - eps) * (lse - z[y]) + eps * (lse - zsum / V);
		counted++;
		if (dz)
		{
			float		inv = (float) (1.0 / sum);
			float		u = eps / V;

			for (int c = 0; c < V; c++)
				dz[c] = grad_scale * (expf(z[c] - mx) * inv - u);
			dz[y] -= grad_scale * (1.0f - eps);
		}
	}
	*count = counted;
	return total;
}

void
tfm_softmax_rows(float *x, int N, int V)
{
	for (int n = 0; n < N; n++)
	{
		float	   *z = x + (size_t) n * V;
		float		mx = z[0],
					sum = 0.0f;

		for (int c = 1; c < V; c++)
			if (z[c] > mx)
				mx = z[c];
		for (int c = 0; c < V; c++)
		{
			z[c] = expf(z[c] - mx);
			sum += z[c];
		}
		for (int c = 0; c < V; c++)
			z[c] /= sum;
	}
}
