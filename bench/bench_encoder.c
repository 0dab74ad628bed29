/*
 * bench_encoder.c — one MiniLM-L6-shaped encoder (d_model 384, 12 heads,
 * 6 post-LN layers, d_ff 1536, exact GELU, vocab 30522, mean pooling;
 * random weights) through the core's varlen passes as tfm_embed runs them
 * (issue 41): batch 1 = one text of LEN tokens a pass; batch B = B texts in
 * passes of up to 128 tokens, 512 at bf16 (src/pg/runtime/infer/classifier.c's
 * TFM_VARLEN_TOKENS and TFM_VARLEN_TOKENS_BF16).  Sequences per second, the median of timed
 * repetitions after an untimed one; no PostgreSQL, so a profiler
 * (perf, callgrind) sees the pass alone.
 *
 *   bench_encoder [--precision fp32|bf16|int8] [--threads N] [--batch B]
 *                 [--len T] [--seconds S] [--iters K] [--layers L]
 *                 [--pass-tokens P] [--lanes L] [--pair P2] [--pair-lanes L2] [--cpu]
 *
 * --pass-tokens: the tokens a pass (default 128, 512 at bf16); --lanes L:
 * passes run L at a time side by side, a thread each (default: the
 * threads, as tfm_embed); --pair P2: every
 * repetition runs the B texts in passes of P tokens and in passes of P2
 * (P2 = 1: each text alone, as one call per text), in turn first, and
 * prints the median of the per-repetition ratios (a shared machine's load
 * falls on both alike); --pair-lanes L2: the second runs L2 lanes (its
 * passes P tokens unless --pair says otherwise); --cpu: the times of the paired repetitions are the
 * process's CPU seconds (at 1 thread, a shared machine's waits for a core
 * left out; its caches' contention stays in).  Machine-readable lines:
 *   RESULT kind=encoder precision=... threads=N batch=B seq_s=... best=...
 *   PAIRED kind=encoder ... pass=P pass2=P2 seq_s=... seq_s2=... ratio=... lo=... hi=...
 */
#define _GNU_SOURCE
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "bench_core.h"

#define PASS_TOKENS 128		/* classifier.c's TFM_VARLEN_TOKENS */
#define PASS_TOKENS_BF16 512	/* and its TFM_VARLEN_TOKENS_BF16 */

/*
 * the texts through passes of up to pass_tokens tokens each (at least one
 * text a pass), lanes passes at a time side by side (tfm_model_forward_lanes,
 * as tfm_embed runs them at tfm.threads lanes), each text's pooled vector to
 * its row of pooled
 */
static int
run_passes(tfm_model *m, const int32_t *ids, int *lens, int batch, int len, int pass_tokens,
		   int lanes, float *pooled)
{
	int			per = pass_tokens / len < 1 ? 1 : pass_tokens / len;
	tfm_batch	b[TFM_MAX_THREADS] = {0};
	float	   *out[TFM_MAX_THREADS] = {0};

	for (int s = 0; s < batch;)
	{
		int			n = 0;

		while (n < lanes && s < batch)
		{
			tfm_batch  *p = &b[n];

			memset(p, 0, sizeof(*p));
			p->B = batch - s < per ? batch - s : per;
			p->T = len;
			p->input = ids + (size_t) s * len;
			p->lens = lens + s;
			out[n++] = pooled + (size_t) s * m->cfg.d_model;
			s += p->B;
		}
		if (tfm_model_forward_lanes(m, b, n, NULL, out, NULL, NULL) != 0)
		{
			fprintf(stderr, "forward failed\n");
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	tfm_precision prec = TFM_PREC_INT8;
	int			threads = 1,
				batch = 1,
				len = 128,
				iters = 5,
				layers = 6,
				pass_tokens = 0,
				pair = 0,
				lanes = 0,
				pair_lanes = 0;
	float	   *pooled;
	double		seconds = 3.0;
	double		(*clock_fn) (void) = now;
	tfm_config	c;
	tfm_model  *m;
	int32_t    *ids;
	int		   *lens;
	double	   *t = malloc(sizeof(double) * 100000);
	int			it = 0;
	double		start;
	timing		r;
	tfm_rng		rng;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
		{
			const char *p = argv[++i];

			prec = strcmp(p, "fp32") == 0 ? TFM_PREC_FP32 : strcmp(p, "bf16") == 0 ?
				TFM_PREC_BF16 : TFM_PREC_INT8;
		}
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (strcmp(argv[i], "--len") == 0 && i + 1 < argc)
			len = atoi(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
			layers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--pass-tokens") == 0 && i + 1 < argc)
			pass_tokens = atoi(argv[++i]);
		else if (strcmp(argv[i], "--pair") == 0 && i + 1 < argc)
			pair = atoi(argv[++i]);
		else if (strcmp(argv[i], "--lanes") == 0 && i + 1 < argc)
			lanes = atoi(argv[++i]);
		else if (strcmp(argv[i], "--pair-lanes") == 0 && i + 1 < argc)
			pair_lanes = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cpu") == 0)
			clock_fn = cpu_now;
		else
		{
			fprintf(stderr, "usage: %s [--precision fp32|bf16|int8] [--threads N] [--batch B] [--len T] [--seconds S] [--iters K] [--layers L] [--pass-tokens P] [--lanes L] [--pair P2] [--pair-lanes L2] [--cpu]\n", argv[0]);
			return 2;
		}
	}
	if (pass_tokens <= 0)
		pass_tokens = prec == TFM_PREC_BF16 ? PASS_TOKENS_BF16 : PASS_TOKENS;
	tfm_set_threads(threads);
	if (lanes <= 0 || lanes > threads)
		lanes = threads;
	if (pair_lanes <= 0 || pair_lanes > threads)
		pair_lanes = lanes;
	if (pair <= 0 && pair_lanes != lanes)
		pair = pass_tokens;
	tfm_config_defaults(&c, TFM_TASK_CLASSIFY);
	c.vocab = 30522;
	c.d_model = 384;
	c.heads = 12;
	c.d_ff = 1536;
	c.max_len = 512;
	c.enc_layers = layers;
	c.n_classes = 2;
	c.norm = TFM_NORM_POST;
	c.positions = TFM_POS_LEARNED;
	c.activation = TFM_ACT_GELU;
	c.pooling = TFM_POOL_MEAN;
	c.dropout = c.attn_dropout = 0.0f;
	c.ln_eps = 1e-12f;
	c.pad_id = -1;
	if (tfm_config_check(&c))
	{
		fprintf(stderr, "bad config: %s\n", tfm_config_check(&c));
		return 1;
	}
	if (!(m = tfm_model_create(&c)))
		return 1;
	tfm_model_init(m, 42);
	if (tfm_model_set_precision(m, prec) != 0)
	{
		fprintf(stderr, "out of memory packing the model\n");
		return 1;
	}
	/* at fp32 the panels the PostgreSQL side packs at load (inference_precision.c) */
	if (prec == TFM_PREC_FP32 && getenv("TFM_BENCH_NO_PANELS") == NULL &&
		tfm_model_pack_rows(m, 0) != 0)
	{
		fprintf(stderr, "out of memory packing the fp32 panels\n");
		return 1;
	}
	ids = malloc(sizeof(int32_t) * (size_t) batch * len);
	lens = malloc(sizeof(int) * batch);
	pooled = malloc(sizeof(float) * (size_t) batch * c.d_model);
	tfm_rng_seed(&rng, 7);
	for (size_t i = 0; i < (size_t) batch * len; i++)
		ids[i] = 6 + (int32_t) tfm_rng_below(&rng, c.vocab - 6);
	for (int i = 0; i < batch; i++)
		lens[i] = len;

	if (pair > 0)
	{
		double	   *t2 = malloc(sizeof(double) * 100000),
				   *q = malloc(sizeof(double) * 100000);
		timing		r2;

		for (int w = -1; w < 100000; w++)
		{
			double		x,
						y,
						t0;

			for (int o = 0; o < 2; o++)
			{
				bool		first = (o == 0) == (w % 2 == 0);

				t0 = clock_fn();
				if (run_passes(m, ids, lens, batch, len, first ? pass_tokens : pair,
							   first ? lanes : pair_lanes, pooled) != 0)
					return 1;
				*(first ? &x : &y) = clock_fn() - t0;
			}
			if (w < 0)
			{
				start = now();
				continue;
			}
			t[it] = x;
			t2[it] = y;
			q[it++] = y / x;	/* > 1: passes of P tokens the faster */
			if (it >= iters && now() - start >= seconds)
				break;
		}
		r = summarise(t, it);
		r2 = summarise(t2, it);
		qsort(q, it, sizeof(double), cmp_double);
		printf("PAIRED kind=encoder precision=%s threads=%d batch=%d len=%d pass=%d pass2=%d lanes=%d lanes2=%d seq_s=%.2f seq_s2=%.2f ratio=%.4f lo=%.4f hi=%.4f iters=%d\n",
			   tfm_precision_name(prec), threads, batch, len, pass_tokens, pair, lanes, pair_lanes,
			   batch / r.median, batch / r2.median, q[it / 2], q[0], q[it - 1], it);
		tfm_model_free(m);
		free(t2);
		free(q);
		free(ids);
		free(lens);
		free(pooled);
		free(t);
		return 0;
	}
	for (int w = -1; w < 100000; w++)
	{
		double		t0 = now();
		if (run_passes(m, ids, lens, batch, len, pass_tokens, lanes, pooled) != 0)
			return 1;
		if (w < 0)
		{
			/* FNV-1a of every text's pooled vector: the bits, to compare builds */
			uint64_t	h = 1469598103934665603ULL;
			const unsigned char *pb = (const unsigned char *) pooled;

			for (size_t i = 0; i < sizeof(float) * (size_t) c.d_model * batch; i++)
				h = (h ^ pb[i]) * 1099511628211ULL;
			printf("INFO pooled_fnv=%016llx\n", (unsigned long long) h);
			start = now();
			continue;
		}
		t[it++] = now() - t0;
		if (it >= iters && now() - start >= seconds)
			break;
	}
	r = summarise(t, it);
	printf("encoder %s, %d threads, batch %d x %d tokens: %d reps, median %.2f ms (best %.2f): %.1f seq/s (best %.1f)\n",
		   tfm_precision_name(prec), threads, batch, len, it, r.median * 1e3, r.min * 1e3,
		   batch / r.median, batch / r.min);
	printf("RESULT kind=encoder precision=%s threads=%d batch=%d len=%d seq_s=%.2f best=%.2f iters=%d\n",
		   tfm_precision_name(prec), threads, batch, len, batch / r.median, batch / r.min, it);
	tfm_model_free(m);
	free(ids);
	free(lens);
	free(pooled);
	free(t);
	return 0;
}
