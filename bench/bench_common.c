/*
 * bench_common.c — what bench_core.c (the benchmark's driver) and
 * bench_ops.c (the ops profile) share, below both: the benchmark model's
 * shape, the clock and the timing summary, the model's config, random
 * batches (bench_core.h).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/model.h"
#include "tfm/rng.h"
#include "bench_core.h"

int			VOCAB = 8000,
			D_MODEL = 128,
			HEADS = 8,
			LAYERS = 4,
			D_FF = 512,
			LEN = 256,
			BATCH = 32;
tfm_task	TASK = TFM_TASK_CLASSIFY;

double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the process's CPU seconds (a shared machine's waits for a core left out) */
double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

timing
summarise(double *t, int n)
{
	timing		r = {n, 0, 0, 0};

	qsort(t, n, sizeof(double), cmp_double);
	for (int i = 0; i < n; i++)
		r.mean += t[i];
	r.mean /= n;
	r.min = t[0];
	r.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
	return r;
}

int
parse_list(const char *s, int *out, int max)
{
	int			n = 0;

	while (*s && n < max)
	{
		out[n++] = atoi(s);
		while (*s && *s != ',')
			s++;
		if (*s == ',')
			s++;
	}
	return n;
}

void
reference_config(tfm_config *c)
{
	tfm_config_defaults(c, TASK);
	c->vocab = VOCAB;
	c->d_model = D_MODEL;
	c->heads = HEADS;
	c->d_ff = D_FF;
	c->max_len = LEN;
	if (TASK == TFM_TASK_CLASSIFY)
	{
		c->enc_layers = LAYERS;
		c->n_classes = CLASSES;
		c->norm = TFM_NORM_POST;
		c->positions = TFM_POS_LEARNED;
		c->activation = TFM_ACT_RELU;
		c->pooling = TFM_POOL_MEAN;
		c->dropout = DROPOUT;
		c->attn_dropout = DROPOUT;
	}
	else if (TASK == TFM_TASK_LM)
	{
		/* bench/lm's small model: pre-LN, GELU, learned positions, no dropout */
		c->dec_layers = LAYERS;
		c->dropout = 0.0f;
		c->attn_dropout = 0.0f;
	}
	else
	{
		/* bench/seq2seq's eng_fra model: the paper's post-LN defaults */
		c->enc_layers = LAYERS;
		c->dec_layers = LAYERS;
		c->dropout = 0.1f;
		c->attn_dropout = 0.1f;
	}
}

/* --model NAME: the shape of each benchmark's model */
void
random_batches(int32_t *ids, int32_t *labels, uint64_t seed)
{
	tfm_rng		rng;

	tfm_rng_seed(&rng, seed);
	for (size_t i = 0; i < (size_t) N_BATCHES * BATCH * LEN + 1; i++)
		ids[i] = 6 + (int32_t) tfm_rng_below(&rng, VOCAB - 6);
	for (int i = 0; i < N_BATCHES * BATCH; i++)
		labels[i] = (int32_t) tfm_rng_below(&rng, CLASSES);
}

tfm_batch
batch_at(const int32_t *ids, const int32_t *labels, int i)
{
	tfm_batch	b;

	memset(&b, 0, sizeof(b));
	b.B = BATCH;
	b.T = LEN;
	b.input = ids + (size_t) (i % N_BATCHES) * BATCH * LEN;
	if (TASK == TFM_TASK_CLASSIFY)
		b.labels = labels + (i % N_BATCHES) * BATCH;
	else
		b.target = b.input + 1;	/* the next token (ids has one spare) */
	if (TASK == TFM_TASK_SEQ2SEQ)
	{
		b.Tt = LEN;
		b.dec_input = b.input;
	}
	return b;
}

/* ---- the CPU's theoretical peak from /proc/cpuinfo ----------------------- */

/*
 * The clock the cores actually run at (cpuinfo's "cpu MHz" is the nominal
 * figure a VM reports): a chain of dependent integer adds retires one per
 * cycle, so 8 adds per loop iteration take 8 cycles.  Measured on every
 * thread at once (all cores busy, as in the benchmark); returns the mean.
 */
