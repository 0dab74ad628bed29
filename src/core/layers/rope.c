/*
 * rope.c — rotary position embeddings as Hugging Face's Llama applies them:
 * inv_freq_i = 1/θ^(2i/s) in float32, angle = position · inv_freq_i in
 * float32 (as torch's product), then cos and sin; the two halves of each
 * head are rotated together (rotate_half), not interleaved pairs.
 */
#include <math.h>

#include "tfm/blas.h"
#include "tfm/layers_llama.h"

/* a head is at most 4096 wide (d_model ≤ 4096): its half fits on the stack */
#define ROPE_MAX_HALF 2048

void
tfm_rope_apply(float *x, int N, int nh, int s, ptrdiff_t rs,
			   const int32_t *pos, int T, float theta, int inverse)
{
	const int	half = s / 2 < ROPE_MAX_HALF ? s / 2 : ROPE_MAX_HALF;
	float		inv[ROPE_MAX_HALF];

	for (int i = 0; i < half; i++)
		inv[i] = 1.0f / powf(theta, (float) (2 * i) / (float) s);

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static) if (N >= 16)
	for (int r = 0; r < N; r++)
	{
		float		p = (float) (pos ? pos[r] : r % T);
		float	   *row = x + (size_t) r * rs;

		for (int i = 0; i < half; i++)
		{
			float		a = p * inv[i];
			float		c = (float) cos((double) a),
						sn = (float) sin((double) a);

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
