/*
 * embedding.c — token embedding (optionally scaled by √d), learned position
 * embedding and the fixed sinusoidal encoding.
 */
#include <math.h>
#include <string.h>

#include "tfm/layers.h"

long
tfm_ids_find_bad(const int32_t *ids, size_t n, int V, int ignore)
{
	for (size_t i = 0; i < n; i++)
		if ((ids[i] < 0 || ids[i] >= V) && ids[i] != ignore)
			return (long) i;
	return -1;
}

int
tfm_embedding_forward(float *out, const int32_t *ids, const float *tok, int V,
					  const float *pos, float scale, int B, int T, int d, int pos0)
{
	/* every id is a row of tok: refuse the batch before reading any row
	 * (ignore 0: a valid row already, V >= 1) */
	if (tfm_ids_find_bad(ids, (size_t) B * T, V, 0) >= 0)
		return -1;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
		{
			float	   *o = out + ((size_t) b * T + t) * d;
			const float *e = tok + (size_t) ids[(size_t) b * T + t] * d;

			if (pos)
			{
				const float *p = pos + (size_t) (pos0 + t) * d;

				for (int i = 0; i < d; i++)
					o[i] = e[i] * scale + p[i];
			}
			else
				for (int i = 0; i < d; i++)
					o[i] = e[i] * scale;
		}
	return 0;
}

int
tfm_embedding_backward(float *dtok, float *dpos, const float *dout,
					   const int32_t *ids, int V, float scale, int B, int T, int d, int pos0)
{
	if (dtok && tfm_ids_find_bad(ids, (size_t) B * T, V, 0) >= 0)
		return -1;
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
		{
			const float *g = dout + ((size_t) b * T + t) * d;

			if (dtok)
			{
				float	   *e = dtok + (size_t) ids[(size_t) b * T + t] * d;

				for (int i = 0; i < d; i++)
					e[i] += g[i] * scale;
			}
			if (dpos)
			{
				float	   *p = dpos + (size_t) (pos0 + t) * d;

				for (int i = 0; i < d; i++)
					p[i] += g[i];
			}
		}
	return 0;
}

void
tfm_sinusoid_table(float *out, int n, int d, int pos0)
{
	for (int t = 0; t < n; t++)
	{
		double		pos = (double) (pos0 + t);

		for (int i = 0; i < d; i += 2)
		{
			double		freq = exp(-log(10000.0) * (double) i / (double) d);

			out[(size_t) t * d + i] = (float) sin(pos * freq);
			if (i + 1 < d)
				out[(size_t) t * d + i + 1] = (float) cos(pos * freq);
		}
	}
}

void
tfm_sinusoid_table_halves(float *out, int n, int d, int pos0)
{
	int			h = (d + 1) / 2;	/* sin columns (Hugging Face's sentinel for an odd d) */

	for (int t = 0; t < n; t++)
	{
		double		pos = (double) (pos0 + t);

		for (int i = 0; i < h; i++)
		{
			double		freq = exp(-log(10000.0) * (double) (2 * i) / (double) d);

			out[(size_t) t * d + i] = (float) sin(pos * freq);
			if (h + i < d)
				out[(size_t) t * d + h + i] = (float) cos(pos * freq);
		}
	}
}
