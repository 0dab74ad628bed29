/*
 * rmsnorm.c — root-mean-square norm (Llama's LlamaRMSNorm): a gain, no
 * bias, no mean subtracted; the mean of squares is summed in double.
 *
 *   forward:  r = 1/√(mean(x²) + eps),  y_i = g_i x_i r
 *   backward: dx_i = r (g_i dy_i − x_i r² mean_j(g_j dy_j x_j)),
 *             dg_i += dy_i x_i r
 */
#include <math.h>

#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "tfm/blas.h"

/* one row: y = g ⊙ x / rms(x), the squares summed in double in order */
static void
rmsnorm_row(float *y, float *rstd, const float *x, const float *g, int d, float eps)
{
	double		ss = 0.0;
	float		r;

	for (int i = 0; i < d; i++)
		ss += (double) x[i] * x[i];
	r = (float) (1.0 / sqrt(ss / d + (double) eps));
	if (rstd)
		*rstd = r;
	for (int i = 0; i < d; i++)
		y[i] = g[i] * (x[i] * r);
}

void
tfm_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *g,
					int N, int d, float eps)
{
	if (N < 64)
	{
		/* decoding's few rows: no parallel region (libgomp's team costs ~0.5 µs) */
		for (int n = 0; n < N; n++)
			rmsnorm_row(out + (size_t) n * d, rstd ? rstd + n : NULL, inp + (size_t) n * d, g, d, eps);
		return;
	}
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static)
	for (int n = 0; n < N; n++)
		rmsnorm_row(out + (size_t) n * d, rstd ? rstd + n : NULL, inp + (size_t) n * d, g, d, eps);
}

void
tfm_rmsnorm_backward(float *dinp, float *dg, const float *dout, const float *inp,
					 const float *g, const float *rstd, int N, int d)
{
	if (dinp)
	{
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 64)
		for (int n = 0; n < N; n++)
		{
			const float *x = inp + (size_t) n * d,
					   *dy = dout + (size_t) n * d;
			float	   *dx = dinp + (size_t) n * d;
			float		r = rstd[n];
			double		dot = 0.0;
			float		c;

			for (int i = 0; i < d; i++)
				dot += (double) g[i] * dy[i] * x[i];
			c = (float) (dot / d) * r * r;
			for (int i = 0; i < d; i++)
				dx[i] += r * (g[i] * dy[i] - x[i] * c);
		}
	}
	if (dg)
	{
		/* column sums: parallel over columns, rows in order (deterministic) */
#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (d >= 256)
		for (int i = 0; i < d; i++)
		{
			float		acc = 0.0f;

			for (int n = 0; n < N; n++)
				acc += dout[(size_t) n * d + i] * inp[(size_t) n * d + i] * rstd[n];
			dg[i] += acc;
		}
	}
}
