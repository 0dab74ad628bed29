/*
 * rope.c — rotary position embeddings as Hugging Face's Llama applies them:
 * the inverse frequencies inv_freq_i = 1/θ^(2i/s) in float32, optionally
 * rescaled (Llama 3.1's "llama3" rope_scaling: tfm_rope_llama3), angle =
 * position · inv_freq_i in float32 (as torch's product), then cos and sin;
 * the two halves of each head are rotated together (rotate_half), not
 * interleaved pairs.  Partial rotation (Phi-4-mini) rotates each head's
 * first r values so and leaves the rest; longrope scales cos and sin.
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers_llama.h"

void
tfm_rope_freqs_default(float *inv, int s, float theta)
{
	for (int i = 0; i < s / 2; i++)
		inv[i] = 1.0f / powf(theta, (float) (2 * i) / (float) s);
}

/*
 * transformers' _compute_llama3_parameters, in its float32 steps:
 * wavelen = 2π / inv; past orig/low the frequency is divided by factor,
 * under orig/high kept, between them mixed with
 * smooth = (orig/wavelen − low) / (high − low):
 * (1 − smooth)·inv/factor + smooth·inv
 */
void
tfm_rope_llama3(float *inv, int half, float factor, float low, float high, int orig)
{
	/* torch compares a float32 tensor with a Python float in float32 */
	const float low_wavelen = (float) ((double) orig / low),
				high_wavelen = (float) ((double) orig / high);

	for (int i = 0; i < half; i++)
	{
		float		wavelen = (float) (2.0 * 3.141592653589793) / inv[i];

		if (wavelen > low_wavelen)
			inv[i] = inv[i] / factor;
		else if (!(wavelen < high_wavelen))
		{
			float		smooth = ((float) orig / wavelen - low) / (high - low);

			inv[i] = (1.0f - smooth) * inv[i] / factor + smooth * inv[i];
		}
	}
}

void
tfm_rope_apply(float *x, int N, int nh, int s, ptrdiff_t rs,
			   const int32_t *pos, int T, const float *inv, int inverse)
{
	tfm_rope_apply_part(x, N, nh, s, s, rs, pos, T, inv, 1.0f, inverse);
}

void
tfm_rope_apply_part(float *x, int N, int nh, int s, int r, ptrdiff_t rs,
					const int32_t *pos, int T, const float *inv, float scale, int inverse)
{
	const int	half = r / 2;

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 16)
	for (int row_i = 0; row_i < N; row_i++)
	{
		float		p = (float) (pos ? pos[row_i] : row_i % T);
		float	   *row = x + (size_t) row_i * rs;

		for (int i = 0; i < half; i++)
		{
			float		a = p * inv[i];
			/* torch: cos and sin in float32, then times the attention factor */
			float		c = (float) cos((double) a),
						sn = (float) sin((double) a);

			if (scale != 1.0f)
			{
				c *= scale;
				sn *= scale;
			}
			if (inverse)
				sn = -sn;
			for (int j = 0; j < nh; j++)
			{
				float	   *hx = row + (size_t) j * s;
				float		x1 = hx[i],
							x2 = hx[i + half];

				hx[i] = x1 * c - x2 * sn;
				hx[i + half] = x2 * c + x1 * sn;
			}
		}
	}
}
