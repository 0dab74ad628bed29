/*
 * bench_generate.c — generation speed of a GPT-2-small-shaped language model
 * (vocabulary 50,257, d_model 768, 12 heads, 12 layers, d_ff 3,072, 1,024
 * positions, pre-LN, GELU, tied head: 124 M parameters) with the key/value
 * cache, at fp32, bf16, int8 and int4 (tfm_model_set_precision), batch 1 and 8,
 * beside a memcpy of 512 MB (the machine's bandwidth).
 *
 * Each measurement feeds a 16-token prompt, then 48 tokens one at a time
 * (greedy ids don't matter for speed: the next token is fixed), and reports
 * tokens per second of the one-at-a-time steps and the effective bandwidth:
 * the bytes of the packed matrices read per step (every weight once per
 * step, whatever the batch) over the step's time.
 *
 *   bench/bench_generate [--threads N] [--steps S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/lowp.h"
#include "tfm/model.h"
#include "tfm/precision.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* memcpy of 512 MB: bytes copied per second (median of 5) */
static double
memcpy_gbs(void)
{
	size_t		n = (size_t) 512 << 20;
	char	   *src = malloc(n),
			   *dst = malloc(n);
	double		t[5];

	memset(src, 1, n);
	memset(dst, 2, n);
	for (int r = 0; r < 5; r++)
	{
		double		t0 = now();

		memcpy(dst, src, n);
		t[r] = now() - t0;
	}
	qsort(t, 5, sizeof(double), cmp_double);
	free(src);
	free(dst);
	return n / t[2] * 1e-9;
}

/* tokens per second of one-at-a-time steps, batch B; median step time in *step_s */
static double
generate(tfm_model *m, int B, int steps, double *step_s)
{
	const int	prompt = 16;
	tfm_decoder *d = tfm_decoder_create(m, B, prompt + steps + 1, prompt);
	int32_t    *tok = malloc(sizeof(int32_t) * B * prompt);
	float	   *logits = malloc(sizeof(float) * B * m->cfg.vocab);
	double	   *t = malloc(sizeof(double) * steps);

	if (!d || !tok || !logits || !t)
	{
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (int i = 0; i < B * prompt; i++)
		tok[i] = (i * 7919) % m->cfg.vocab;
	if (tfm_decoder_feed(d, tok, NULL, prompt, logits) != 0)
		exit(1);
	for (int s = 0; s < steps; s++)
	{
		double		t0 = now();

		if (tfm_decoder_feed(d, tok, NULL, 1, logits) != 0)
			exit(1);
		t[s] = now() - t0;
	}
	qsort(t, steps, sizeof(double), cmp_double);
	*step_s = t[steps / 2];
	tfm_decoder_free(d);
	free(tok);
	free(logits);
	free(t);
	return B / *step_s;
}

int
main(int argc, char **argv)
{
	int			threads = 1,
				steps = 48;
	char		err[256];
	tfm_config	c;
	tfm_model  *m;
	double		base[2] = {0, 0};
	const int	batches[2] = {1, 8};

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else
		{
			fprintf(stderr, "usage: %s [--threads N] [--steps S]\n", argv[0]);
			return 2;
		}
	}
	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_set_threads(threads < 1 ? 1 : threads);
	tfm_config_defaults(&c, TFM_TASK_LM);
	c.vocab = 50257;
	c.d_model = 768;
	c.heads = 12;
	c.dec_layers = 12;
	c.d_ff = 3072;
	c.max_len = 1024;
	c.norm = TFM_NORM_PRE;
	c.activation = TFM_ACT_GELU;
	c.tie = 1;
	c.dropout = c.attn_dropout = 0;
	m = tfm_model_create(&c);
	if (!m)
		return 1;
	tfm_model_init(m, 1);
	printf("GPT-2-small-shaped decoder: %zu parameters; BLIS %s; bf16 kernel %s, int8 kernel %s, int4 kernel %s (%s); %d thread(s)\n",
		   m->n_params, tfm_blas_arch(), tfm_lowp_bf16_kernel(), tfm_lowp_int8_kernel(), tfm_lowp_int4_kernel(),
		   tfm_lowp_reason(), threads);
	{
		double		gbs = memcpy_gbs();

		printf("memcpy: %.1f GB/s copied (%.1f GB/s of traffic)\n", gbs, 2 * gbs);
		printf("RESULT impl=tfm kind=memcpy threads=%d gbs=%.2f\n", threads, gbs);
	}
	printf("%-6s %5s %10s %8s %12s %10s\n", "prec", "batch", "tokens/s", "vs fp32", "ms/step", "GB/s read");
	for (int p = TFM_PREC_FP32; p <= TFM_PREC_INT4; p++)
	{
		double		bytes;

		if (tfm_model_set_precision(m, (tfm_precision) p) != 0)
			return 1;
		/* the matrices a step reads: fp32 weights or their packed copies */
		bytes = p == TFM_PREC_FP32 ? 4.0 * (m->n_params - (size_t) c.max_len * c.d_model) :
			(double) tfm_model_precision_bytes(m);
		for (int bi = 0; bi < 2; bi++)
		{
			double		step,
						tps = generate(m, batches[bi], steps, &step);

			if (p == TFM_PREC_FP32)
				base[bi] = tps;
			printf("%-6s %5d %10.1f %7.2fx %12.2f %10.1f\n", tfm_precision_name(p), batches[bi], tps,
				   tps / base[bi], step * 1e3, bytes / step * 1e-9);
			printf("RESULT impl=tfm kind=generate precision=%s batch=%d threads=%d tok_s=%.2f step_ms=%.3f gbs=%.2f\n",
				   tfm_precision_name(p), batches[bi], threads, tps, step * 1e3, bytes / step * 1e-9);
		}
	}
	tfm_model_free(m);
	return 0;
}
