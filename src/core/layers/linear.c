/*
 * linear.c — y = x·W + b with W stored (in, out); both products go to BLIS.
 */
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"

void
tfm_linear_forward(float *out, const float *inp, const float *W,
				   const float *b, int N, int in, int o)
{
	float		beta = 0.0f;

	if (b)
	{
		for (int n = 0; n < N; n++)
			memcpy(out + (size_t) n * o, b, sizeof(float) * o);
		beta = 1.0f;
	}
	tfm_gemm(false, false, N, o, in, 1.0f, inp, in, W, o, beta, out, o);
}

void
tfm_linear_backward(float *dinp, float *dW, float *db,
					const float *dout, const float *inp, const float *W,
					int N, int in, int o)
{
	if (dinp)					/* dinp(N,in) += dout(N,o)·Wᵀ */
		tfm_gemm(false, true, N, in, o, 1.0f, dout, o, W, o, 1.0f, dinp, in);
	if (dW)						/* dW(in,o) += inpᵀ·dout */
		tfm_gemm(true, false, in, o, N, 1.0f, inp, in, dout, o, 1.0f, dW, o);
	if (db)
		for (int n = 0; n < N; n++)
		{
			const float *g = dout + (size_t) n * o;

			for (int j = 0; j < o; j++)
				db[j] += g[j];
		}
}
