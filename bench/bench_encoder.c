/*
 * bench_encoder.c — one MiniLM-L6-shaped encoder (d_model 384, 12 heads,
 * 6 post-LN layers, d_ff 1536, exact GELU, vocab 30522, mean pooling;
 * random weights) through the core's varlen passes as tfm_embed runs them
 * (issue 41): batch 1 = one text of LEN tokens a pass; batch B = B texts in
 * passes of up to 512 tokens (src/pg/runtime/infer/classifier.c's
 * TFM_VARLEN_TOKENS).  Sequences per second, the median of timed
 * repetitions after an untimed one; no PostgreSQL, so a profiler
 * (perf, callgrind) sees the pass alone.
 *
 *   bench_encoder [--precision fp32|bf16|int8] [--threads N] [--batch B]
 *                 [--len T] [--seconds S] [--iters K] [--layers L]
 *
 * Machine-readable line:
 *   RESULT kind=encoder precision=... threads=N batch=B seq_s=... best=...
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "bench_core.h"

#define PASS_TOKENS 512

int
main(int argc, char **argv)
{
	tfm_precision prec = TFM_PREC_INT8;
	int			threads = 1,
				batch = 1,
				len = 128,
				iters = 5,
				layers = 6;
	double		seconds = 3.0;
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
		else
		{
			fprintf(stderr, "usage: %s [--precision fp32|bf16|int8] [--threads N] [--batch B] [--len T] [--seconds S] [--iters K] [--layers L]\n", argv[0]);
			return 2;
		}
	}
	tfm_set_threads(threads);
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
	tfm_rng_seed(&rng, 7);
	for (size_t i = 0; i < (size_t) batch * len; i++)
		ids[i] = 6 + (int32_t) tfm_rng_below(&rng, c.vocab - 6);
	for (int i = 0; i < batch; i++)
		lens[i] = len;

	for (int w = -1; w < 100000; w++)
	{
		double		t0 = now();
		int			per = PASS_TOKENS / len < 1 ? 1 : PASS_TOKENS / len;

		for (int s = 0; s < batch; s += per)
		{
			tfm_batch	b;

			memset(&b, 0, sizeof(b));
			b.B = batch - s < per ? batch - s : per;
			b.T = len;
			b.input = ids + (size_t) s * len;
			b.lens = lens + s;
			if (tfm_model_forward(m, &b, false, 0) != 0)
			{
				fprintf(stderr, "forward failed\n");
				return 1;
			}
		}
		if (w < 0)
		{
			/* FNV-1a of the last pass's pooled vectors: the bits, to compare builds */
			uint64_t	h = 1469598103934665603ULL;
			const unsigned char *pb = (const unsigned char *) m->pooled;

			for (size_t i = 0; i < sizeof(float) * (size_t) c.d_model * ((batch - 1) % per + 1); i++)
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
	free(t);
	return 0;
}
