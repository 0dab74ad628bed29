/*
 * pooling.c — sequence to vector: mean over non-pad positions, or the
 * vector at position 0 (<cls>).
 */
#include <string.h>

#include "tfm/layers.h"

void
tfm_mean_pool_forward(float *out, const float *inp, const int32_t *ids,
					  int pad_id, int B, int T, int d)
{
	for (int b = 0; b < B; b++)
	{
		float	   *o = out + (size_t) b * d;
		int			n = 0;

		memset(o, 0, sizeof(float) * d);
		for (int t = 0; t < T; t++)
		{
			const float *x = inp + ((size_t) b * T + t) * d;

			if (ids[(size_t) b * T + t] == pad_id)
				continue;
			n++;
			for (int i = 0; i < d; i++)
				o[i] += x[i];
		}
		if (n > 0)
			for (int i = 0; i < d; i++)
				o[i] /= (float) n;
	}
}

void
tfm_mean_pool_backward(float *dinp, const float *dout, const int32_t *ids,
					   int pad_id, int B, int T, int d)
{
	for (int b = 0; b < B; b++)
	{
		const float *g = dout + (size_t) b * d;
		int			n = 0;

		for (int t = 0; t < T; t++)
			n += ids[(size_t) b * T + t] != pad_id;
		if (n == 0)
			continue;
		for (int t = 0; t < T; t++)
		{
			float	   *dx = dinp + ((size_t) b * T + t) * d;

			if (ids[(size_t) b * T + t] == pad_id)
				continue;
			for (int i = 0; i < d; i++)
				dx[i] += g[i] / (float) n;
		}
	}
}

void
tfm_cls_pool_forward(float *out, const float *inp, int B, int T, int d)
{
	for (int b = 0; b < B; b++)
		memcpy(out + (size_t) b * d, inp + (size_t) b * T * d, sizeof(float) * d);
}

void
tfm_cls_pool_backward(float *dinp, const float *dout, int B, int T, int d)
{
	for (int b = 0; b < B; b++)
	{
		float	   *dx = dinp + (size_t) b * T * d;
		const float *g = dout + (size_t) b * d;

		for (int i = 0; i < d; i++)
			dx[i] += g[i];
	}
}
