/*
 * layernorm.c — layer norm over the last dimension, eps 1e-5 unless the
 * caller gives another (a model's layer_norm_eps), biased variance (as
 * nn.LayerNorm); mean and 1/std are kept for the backward pass, which
 * therefore needs no eps.
 *
 * Rows run in parallel; a row's sums are vector reductions (`omp simd`), in
 * an order fixed by the code.  The parameter gradients are sums over rows:
 * the threads split the columns and each column adds its rows in order, so
 * no result depends on the number of threads.
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "../kernels/vecmath.h"

#define COLS_PER_TASK 32		/* parameter gradients */

static inline __attribute__((always_inline)) void
row_forward_body(float *y, float *mean, float *rstd, const float *x, const float *g,
				 const float *b, int d, float eps)
{
	float		m = 0.0f,
				v = 0.0f,
				r;

#pragma omp simd reduction(+:m)
	for (int i = 0; i < d; i++)
		m += x[i];
	m /= d;
#pragma omp simd reduction(+:v)
	for (int i = 0; i < d; i++)
	{
		float		c = x[i] - m;

		v += c * c;
	}
	v /= d;
	r = 1.0f / sqrtf(v + eps);
	for (int i = 0; i < d; i++)
		y[i] = (x[i] - m) * r * g[i] + b[i];
	*mean = m;
	*rstd = r;
}

TFM_HOT static void
row_forward(float *y, float *mean, float *rstd, const float *x, const float *g,
			const float *b, int d, float eps)
{
	row_forward_body(y, mean, rstd, x, g, b, d, eps);
}

/* s = x + z, then row_forward over s while the row is in L1 */
TFM_HOT static void
add_row_forward(float *y, float *mean, float *rstd, float *restrict s, const float *x,
				const float *z, const float *g, const float *b, int d, float eps)
{
	for (int i = 0; i < d; i++)
		s[i] = x[i] + z[i];
	row_forward_body(y, mean, rstd, s, g, b, d, eps);
}

TFM_HOT static void
row_backward(float *dx, const float *x, const float *dy, const float *g, float m,
			 float r, int d)
{
	float		s1 = 0.0f,
				s2 = 0.0f;

#pragma omp simd reduction(+:s1, s2)
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

/* dg, db over columns [j0, j1): Σ_n dy·x̂ and Σ_n dy, rows in order */
TFM_HOT static void
param_grad_cols(float *dg, float *db, const float *dout, const float *inp,
				const float *mean, const float *rstd, int N, int d, int j0, int j1)
{
	float		ag[COLS_PER_TASK],
				ab[COLS_PER_TASK];
	int			w = j1 - j0;

	for (int j = 0; j < w; j++)
	{
		ag[j] = dg ? dg[j0 + j] : 0.0f;
		ab[j] = db ? db[j0 + j] : 0.0f;
	}
	for (int n = 0; n < N; n++)
	{
		const float *x = inp + (size_t) n * d + j0;
		const float *dy = dout + (size_t) n * d + j0;
		float		m = mean[n],
					r = rstd[n];

		for (int j = 0; j < w; j++)
		{
			ag[j] += dy[j] * (x[j] - m) * r;
			ab[j] += dy[j];
		}
	}
	for (int j = 0; j < w; j++)
	{
		if (dg)
			dg[j0 + j] = ag[j];
		if (db)
			db[j0 + j] = ab[j];
	}
}

void
tfm_layernorm_forward_eps(float *out, float *mean, float *rstd,
						  const float *inp, const float *g, const float *b,
						  int N, int d, float eps)
{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N >= 64) schedule(static)
	for (int n = 0; n < N; n++)
		row_forward(out + (size_t) n * d, mean + n, rstd + n, inp + (size_t) n * d, g, b, d, eps);
}

/*
 * a post-LN residual's add and norm in one pass over the rows: sum = x + z
 * (kept, as tfm_residual_forward keeps it), out = LN(sum) — the bits of the
 * two calls (the same add, the same row_forward), one sweep fewer
 */
void
tfm_add_layernorm_forward_eps(float *out, float *mean, float *rstd, float *sum,
							  const float *x, const float *z, const float *g,
							  const float *b, int N, int d, float eps)
{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N >= 64) schedule(static)
	for (int n = 0; n < N; n++)
		add_row_forward(out + (size_t) n * d, mean + n, rstd + n, sum + (size_t) n * d,
						x + (size_t) n * d, z + (size_t) n * d, g, b, d, eps);
}

void
tfm_layernorm_forward(float *out, float *mean, float *rstd,
					  const float *inp, const float *g, const float *b,
					  int N, int d)
{
	tfm_layernorm_forward_eps(out, mean, rstd, inp, g, b, N, d, TFM_LN_EPS);
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
			row_backward(dinp + (size_t) n * d, inp + (size_t) n * d, dout + (size_t) n * d,
						 g, mean[n], rstd[n], d);
	}
	if (dg || db)
	{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N >= 64 && d > COLS_PER_TASK) schedule(static)
		for (int j0 = 0; j0 < d; j0 += COLS_PER_TASK)
			param_grad_cols(dg, db, dout, inp, mean, rstd, N, d, j0,
							j0 + COLS_PER_TASK < d ? j0 + COLS_PER_TASK : d);
	}
}
