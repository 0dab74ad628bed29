/*
 * layernorm.c — layer norm over the last dimension, eps 1e-5, biased
 * variance (as nn.LayerNorm); mean and 1/std are kept for the backward pass.
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers.h"

#define LN_EPS 1e-5f

void
tfm_layernorm_forward(float *out, float *mean, float *rstd,
					  const float *inp, const float *g, const float *b,
					  int N, int d)
{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N >= 64) schedule(static)
	for (int n = 0; n < N; n++)
	{
		const float *x = inp + (size_t) n * d;
		float	   *y = out + (size_t) n * d;
		float		m = 0.0f,
					v = 0.0f,
					r;

		for (int i = 0; i < d; i++)
			m += x[i];
		m /= d;
		for (int i = 0; i < d; i++)
		{
			float		c = x[i] - m;

			v += c * c;
		}
		v /= d;
		r = 1.0f / sqrtf(v + LN_EPS);
		for (int i = 0; i < d; i++)
			y[i] = (x[i] - m) * r * g[i] + b[i];
		mean[n] = m;
		rstd[n] = r;
	}
}

void
tfm_layernorm_backward(float *dinp, float *dg, float *db,
					   const float *dout, const float *inp,
					   const float *g, const float *mean,
					   const float *rstd, int N, int d)
{
	if (dinp)
	{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N >= 64) schedule(static)
		for (int n = 0; n < N; n++)
		{
			const float *x = inp + (size_t) n * d;
			const float *dy = dout + (size_t) n * d;
			float	   *dx = dinp + (size_t) n * d;
			float		m = mean[n],
						r = rstd[n];
			float		s1 = 0.0f,
						s2 = 0.0f;

			for (int i = 0; i < d; i++)
			{
				float		xh = (x[i] - m) * r;
				float		dxh = dy[i] * g[i];

				s1 += dxh;
				s2 += dxh * xh;
			}
			s1 /= d;
			s2 /= d;
			for (int i = 0; i < d; i++)
			{
				float		xh = (x[i] - m) * r;
				float		dxh = dy[i] * g[i];

				dx[i] += (dxh - s1 - xh * s2) * r;
			}
		}
	}
	for (int n = 0; n < N; n++)
	{
		const float *x = inp + (size_t) n * d;
		const float *dy = dout + (size_t) n * d;
		float		m = mean[n],
					r = rstd[n];

		for (int i = 0; i < d; i++)
		{
			if (dg)
				dg[i] += dy[i] * (x[i] - m) * r;
			if (db)
				db[i] += dy[i];
		}
	}
}
