/*
 * sample.c — choosing the next token: greedy (temperature 0), or sampling
 * at a temperature from the top-k and/or nucleus (top-p) of the
 * distribution, with the sampler's own seeded generator.  Ties are broken
 * by the lower id, so a seed always gives the same tokens.
 */
#include <math.h>
#include <stdlib.h>

#include "tfm/decode.h"
#include "../kernels/vecmath.h"

/*
 * out = logits − logsumexp(logits): the exponentials by tfm_expf (one
 * vectorized pass; relative error below 2e-7), summed in eight double
 * lanes then pairwise, a fixed order — libm's exp per element took 1.5 %
 * of a Llama-134M decoding step, for one log-probability
 */
TFM_HOT void
tfm_log_softmax(float *out, const float *logits, int V)
{
	float		mx = logits[0];
	double		lane[8] = {0},
				sum;
	float		lse;
	int			i;

	for (i = 1; i < V; i++)
		if (logits[i] > mx)
			mx = logits[i];
	for (i = 0; i < V; i++)
		out[i] = tfm_expf(logits[i] - mx);
	for (i = 0; i + 8 <= V; i += 8)
		for (int l = 0; l < 8; l++)
			lane[l] += out[i + l];
	for (; i < V; i++)
		lane[i % 8] += out[i];
	sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
	lse = mx + (float) log(sum);
	for (i = 0; i < V; i++)
		out[i] = logits[i] - lse;
}

static int
by_value_desc(const void *a, const void *b, void *arg)
{
	const float *sort_keys = arg;
	int			x = *(const int *) a,
				y = *(const int *) b;

	if (sort_keys[x] != sort_keys[y])
		return sort_keys[x] > sort_keys[y] ? -1 : 1;
	return x - y;
}

int
tfm_sample(tfm_sampler *s, const float *logits, int V, float *scratch, int *idx, float *logprob)
{
	float	   *logp = scratch;
	float	   *prob = scratch + V;
	int			best = 0,
				n = V;
	double		total = 0.0,
				r,
				acc = 0.0;

	tfm_log_softmax(logp, logits, V);
	for (int i = 1; i < V; i++)
		if (logits[i] > logits[best])
			best = i;
	if (s->temperature <= 0.0f || V == 1)
	{
		*logprob = logp[best];
		return best;
	}

	/* the distribution at the temperature */
	for (int i = 0; i < V; i++)
		prob[i] = (logits[i] - logits[best]) / s->temperature;
	for (int i = 0; i < V; i++)
	{
		prob[i] = expf(prob[i]);
		idx[i] = i;
	}
	if ((s->top_k > 0 && s->top_k < V) || s->top_p < 1.0f)
	{
		qsort_r(idx, V, sizeof(int), by_value_desc, prob);
		if (s->top_k > 0 && s->top_k < n)
			n = s->top_k;
		if (s->top_p < 1.0f)
		{
			double		sum = 0.0,
						keep;
			int			m = 0;

			for (int i = 0; i < n; i++)
				sum += prob[idx[i]];
			keep = s->top_p * sum;
			/* the smallest prefix whose mass reaches top_p */
			for (double c = 0.0; m < n && c < keep; m++)
				c += prob[idx[m]];
			n = m > 0 ? m : 1;
		}
	}
	for (int i = 0; i < n; i++)
		total += prob[idx[i]];
	r = (double) tfm_rng_uniform(&s->rng) * total;
	for (int i = 0; i < n; i++)
	{
		acc += prob[idx[i]];
		if (r < acc || i == n - 1)
		{
			*logprob = logp[idx[i]];
			return idx[i];
		}
	}
	*logprob = logp[best];
	return best;
}
