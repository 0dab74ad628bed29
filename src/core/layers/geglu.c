/*
 * geglu.c — Gemma's gated feed-forward activation: h = gelu_tanh(gate) ⊙ up
 * (PyTorch's gelu(approximate='tanh'), HF's gelu_pytorch_tanh), with gate
 * and up side by side in one row as for SwiGLU (swiglu.c).  GELU and its
 * derivative are activation.c's:
 *
 *   dgate = dh ⊙ up ⊙ gelu'(g),   dup = dh ⊙ gelu(g)
 */
#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/layers_llama.h"

void
tfm_geglu_forward(float *out, const float *hg, int N, int f)
{
	tfm_row_fn	gelu = tfm_activation_fn(TFM_ACT_GELU_TANH);

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 16)
	for (int n = 0; n < N; n++)
	{
		const float *gate = hg + (size_t) n * 2 * f,
				   *up = gate + f;
		float	   *o = out + (size_t) n * f;

		gelu(o, gate, (size_t) f);
		for (int i = 0; i < f; i++)
			o[i] *= up[i];
	}
}

void
tfm_geglu_backward(float *dhg, const float *dout, const float *hg, int N, int f)
{
	tfm_row_fn	gelu = tfm_activation_fn(TFM_ACT_GELU_TANH);

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 16)
	for (int n = 0; n < N; n++)
	{
		const float *gate = hg + (size_t) n * 2 * f,
				   *up = gate + f,
				   *dh = dout + (size_t) n * f;
		float	   *dg = dhg + (size_t) n * 2 * f,
				   *du = dg + f;

		/* du = gelu(g) ⊙ dh; dg = dh ⊙ up, times gelu'(g) below */
		gelu(du, gate, (size_t) f);
		for (int i = 0; i < f; i++)
		{
			du[i] *= dh[i];
			dg[i] = dh[i] * up[i];
		}
	}
	/* row by row: activation.c spreads each over the threads */
	for (int n = 0; n < N; n++)
		tfm_activation_backward_inplace(dhg + (size_t) n * 2 * f, hg + (size_t) n * 2 * f,
										(size_t) f, TFM_ACT_GELU_TANH);
}
