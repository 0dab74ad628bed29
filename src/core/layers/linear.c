/*
 * linear.c — y = x·W + b with W stored (in, out); the products go to BLIS,
 * or to W's packed bf16/int8 copy when the caller gives one
 * (kernels/lowp/lowp_set.h: an inference pass at bf16/int8, a mixed-precision
 * training pass).
 * The bias broadcast and the bias gradient (a sum over rows, per column,
 * always in row order, so the result does not depend on the threads) run
 * on the core's threads.
 */
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "../kernels/lowp/lowp_set.h"
#include "../kernels/vecmath.h"

#define ROWS_PER_TASK 256		/* bias broadcast */
#define COLS_PER_TASK 64		/* bias gradient */

void
tfm_linear_forward(float *out, const float *inp, const float *W,
				   const float *b, int N, int in, int o, const tfm_lowp_entry *packed)
{
	float		beta = 0.0f;

	/* a pass of a model packed for bf16 or int8 */
	if (tfm_lowp_linear(packed, out, inp, b, N, in, o))
		return;
	if (b)
	{
#pragma omp parallel for num_threads(tfm_get_threads()) if(N > ROWS_PER_TASK) schedule(static)
		for (int n0 = 0; n0 < N; n0 += ROWS_PER_TASK)
			for (int n = n0; n < N && n < n0 + ROWS_PER_TASK; n++)
				memcpy(out + (size_t) n * o, b, sizeof(float) * o);
		beta = 1.0f;
	}
	tfm_gemm(false, false, N, o, in, 1.0f, inp, in, W, o, beta, out, o);
}

void
tfm_linear_act_forward(float *out, const float *inp, const float *W,
					   const float *b, int N, int in, int o, tfm_activation act,
					   const tfm_lowp_entry *packed)
{
	if (tfm_lowp_linear_act(packed, out, inp, b, N, in, o, tfm_activation_fn(act)))
		return;
	tfm_linear_forward(out, inp, W, b, N, in, o, NULL);
	tfm_activation_forward(out, out, (size_t) N * o, act);
}

void
tfm_linear_rows_forward(float *out, const float *inp, const float *W, const float *b,
						int N, int in, int o, const tfm_activation *act,
						const tfm_lowp_entry *packed)
{
	float		beta = 0.0f;
	/* fp32 panels packed at load (tfm_model_pack_rows): the same bits */
	const float *p32 = packed && packed->p32 && packed->K == in && packed->N == o ?
		packed->p32 : NULL;

	if (!p32 && tfm_lowp_linear_rows(packed, out, inp, b, N, in, o,
									 act ? tfm_activation_fn(*act) : NULL))
		return;
	if (p32)
	{
		/* the bias added after each chain in the kernels (the bits of beta 1 over its copy) */
		tfm_gemm_rows_packed(N, o, in, inp, in, p32, b, 0.0f, out, o);
		if (act)
			tfm_activation_forward(out, out, (size_t) N * o, *act);
		return;
	}
	if (b)
	{
		for (int n = 0; n < N; n++)
			memcpy(out + (size_t) n * o, b, sizeof(float) * o);
		beta = 1.0f;
	}
	tfm_gemm_rows(N, o, in, inp, in, W, o, beta, out, o);
	if (act)
		tfm_activation_forward(out, out, (size_t) N * o, *act);
}

/* db[j0, j1) += Σ_n dout[n][j0, j1) */
TFM_HOT static void
bias_grad_cols(float *db, const float *dout, int N, int o, int j0, int j1)
{
	float		acc[COLS_PER_TASK];
	int			w = j1 - j0;

	for (int j = 0; j < w; j++)
		acc[j] = db[j0 + j];
	for (int n = 0; n < N; n++)
	{
		const float *g = dout + (size_t) n * o + j0;

		for (int j = 0; j < w; j++)
			acc[j] += g[j];
	}
	for (int j = 0; j < w; j++)
		db[j0 + j] = acc[j];
}

static void
linear_backward(float beta_in, float *dinp, float *dW, float *db,
				const float *dout, const float *inp, const float *W,
				int N, int in, int o, const tfm_lowp_entry *packed)
{
	/* a training pass of a model with bf16 training copies */
	if (!tfm_lowp_linear_backward(packed, dinp, beta_in, dW, dout, inp, N, in, o))
	{
		if (dinp)				/* dinp(N,in) = beta_in·dinp + dout(N,o)·Wᵀ */
			tfm_gemm(false, true, N, in, o, 1.0f, dout, o, W, o, beta_in, dinp, in);
		if (dW)					/* dW(in,o) += inpᵀ·dout */
			tfm_gemm(true, false, in, o, N, 1.0f, inp, in, dout, o, 1.0f, dW, o);
	}
	if (db)
	{
#pragma omp parallel for num_threads(tfm_get_threads()) if((size_t) N * o > 65536) schedule(static)
		for (int j0 = 0; j0 < o; j0 += COLS_PER_TASK)
			bias_grad_cols(db, dout, N, o, j0, j0 + COLS_PER_TASK < o ? j0 + COLS_PER_TASK : o);
	}
}

void
tfm_linear_backward(float *dinp, float *dW, float *db,
					const float *dout, const float *inp, const float *W,
					int N, int in, int o, const tfm_lowp_entry *packed)
{
	linear_backward(1.0f, dinp, dW, db, dout, inp, W, N, in, o, packed);
}

void
tfm_linear_backward_set(float *dinp, float *dW, float *db,
						const float *dout, const float *inp, const float *W,
						int N, int in, int o, const tfm_lowp_entry *packed)
{
	linear_backward(0.0f, dinp, dW, db, dout, inp, W, N, in, o, packed);
}
