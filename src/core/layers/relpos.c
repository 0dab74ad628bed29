/*
 * relpos.c — T5's relative position bias (layers_t5.h): the bucket of a
 * distance, computed as Hugging Face's T5Attention._relative_position_bucket
 * does in float32, the bias of every (head, query, key), and its gradient
 * into the table.
 */
#include <math.h>
#include <stdlib.h>

#include "tfm/layers_t5.h"

int
tfm_relpos_bucket(int rel, bool bidirectional, int buckets, int max_distance)
{
	int			bucket = 0,
				n,
				max_exact,
				large;
	float		v;

	if (bidirectional)
	{
		buckets /= 2;
		if (rel > 0)
			bucket = buckets;
		n = abs(rel);
	}
	else
		n = rel < 0 ? -rel : 0;
	max_exact = buckets / 2;
	if (n < max_exact)
		return bucket + n;
	/* float32 as torch computes it: log(n / max_exact) / log(max_distance / max_exact) · rest */
	v = logf((float) n / (float) max_exact) /
		(float) log((double) max_distance / (double) max_exact) * (float) (buckets - max_exact);
	large = max_exact + (int) v;
	if (large > buckets - 1)
		large = buckets - 1;
	return bucket + large;
}

void
tfm_relpos_bias(float *out, const float *table, int h, int Tq, int Tk, int q0,
				bool bidirectional, int buckets, int max_distance)
{
	for (int r = 0; r < Tq; r++)
		for (int j = 0; j < Tk; j++)
		{
			int			b = tfm_relpos_bucket(j - (q0 + r), bidirectional, buckets, max_distance);

			for (int k = 0; k < h; k++)
				out[((size_t) k * Tq + r) * Tk + j] = table[(size_t) b * h + k];
		}
}

void
tfm_relpos_bias_backward(float *dtable, const float *dbias, int h, int Tq, int Tk, int q0,
						 bool bidirectional, int buckets, int max_distance)
{
	for (int r = 0; r < Tq; r++)
		for (int j = 0; j < Tk; j++)
		{
			int			b = tfm_relpos_bucket(j - (q0 + r), bidirectional, buckets, max_distance);

			for (int k = 0; k < h; k++)
				dtable[(size_t) b * h + k] += dbias[((size_t) k * Tq + r) * Tk + j];
		}
}
