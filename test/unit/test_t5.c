/*
 * test_t5.c — T5 (model/t5_block.c, layers/relpos.c): the relative position
 * buckets against torch's, the two fixtures of test/reference/
 * hf_t5_reference.py (T5 v1.0: relu, tied head scaled by d^-½; T5 v1.1:
 * gated-gelu, untied, num_decoder_layers) loaded through the Hugging Face
 * map — teacher-forced logits and the loss against PyTorch's, greedy ids
 * through the key/value cache, and beam search with Hugging Face's rules
 * (hf_rules) giving the reference's three hypotheses and scores — and every
 * gradient of small random T5 models against central finite differences.
 */
#include "check.h"
#include "model_fixtures.h"
#include "tfm/beam.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/hf_map.h"
#include "tfm/hf_import.h"
#include "tfm/layers_t5.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "tfm/safetensors.h"
#include "../src/core/model/model_internal.h"

#define H 1e-3
#define ATOL 2e-3
#define RTOL 2e-2

static tfm_rng rng;

/* ---- buckets ---- */

static void
test_buckets(const fixture *fx, const char *what, int buckets, int max_distance)
{
	const fx_record *bi = fixture_get(fx, "buckets_bi"),
			   *ca = fixture_get(fx, "buckets_causal");
	int			bad = 0;

	CHECK(bi && ca && bi->n == 1201 && ca->n == 1201, "%s: bucket records", what);
	if (!bi || !ca)
		return;
	for (int i = 0; i < 1201; i++)
	{
		int			rel = i - 600;

		if (tfm_relpos_bucket(rel, true, buckets, max_distance) != ((const int32_t *) bi->data)[i] ||
			tfm_relpos_bucket(rel, false, buckets, max_distance) != ((const int32_t *) ca->data)[i])
			bad++;
	}
	CHECK(bad == 0, "%s: %d relative positions in another bucket than torch's", what, bad);
}

/* ---- the fixtures ---- */

static uint8_t *
read_file(const char *dir, const char *name, size_t *len)
{
	char		rel[256];

	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	return check_fixture(rel, len);
}

static const int32_t *
ints(const fixture *fx, const char *name, size_t *n)
{
	const fx_record *r = fixture_get(fx, name);

	*n = r ? r->n : 0;
	return r ? (const int32_t *) r->data : NULL;
}

static void
test_fixture(const char *dir, const tfm_hf_params *p)
{
	fixture		fx;
	char		bin[128],
				err[512] = "";
	size_t		len,
				ns,
				nd,
				nt;
	uint8_t    *w = read_file(dir, "model.safetensors", &len);
	tfm_st_file *f = NULL;
	tfm_status	se;
	tfm_config	c;
	tfm_model  *m;
	tfm_hf_map *map;
	const int32_t *src,
			   *dec,
			   *tgt;
	const fx_record *lg;
	tfm_batch	b = {0};
	int			V = p->vocab,
				count;
	double		loss,
				worst = 0.0,
				worst_rel = 0.0;
	float		lp = 0.0f;

	snprintf(bin, sizeof(bin), "%s/reference.bin", dir);
	if (!w || fixture_load(&fx, bin) != 0)
	{
		CHECK(0, "test/fixtures/%s is missing", dir);
		free(w);
		return;
	}
	test_buckets(&fx, dir, p->rel_buckets, p->rel_max_distance);
	CHECK(tfm_hf_config(&c, p) == NULL, "%s config: %s", dir, tfm_hf_config(&c, p));
	CHECK(tfm_st_parse(&f, w, len, &se) == TFM_OK, "safetensors: %s", se.msg);
	m = tfm_model_create(&c);
	map = tfm_hf_map_create(TFM_HF_T5, &c);
	for (size_t i = 0; f && i < f->n_tensors; i++)
	{
		tfm_hf_entry *e = tfm_hf_match(map, f->tensors[i].name, f->tensors[i].name_len);

		CHECK(e != NULL, "%s: unexpected tensor %.*s", dir, (int) f->tensors[i].name_len,
			  f->tensors[i].name);
		if (e)
			CHECK(tfm_hf_load_tensor(m, map, e, &f->tensors[i], w + f->data_start + f->tensors[i].begin,
									 err, sizeof(err)) == 0, "%s", err);
	}
	CHECK(tfm_hf_finish(m, map, err, sizeof(err)) == 0, "%s", err);

	/* teacher-forced logits of a padded batch, and the loss */
	src = ints(&fx, "src", &ns);
	dec = ints(&fx, "dec", &nd);
	tgt = ints(&fx, "tgt", &nt);
	lg = fixture_get(&fx, "logits");
	b.B = 2;
	b.T = (int) ns / 2;
	b.Tt = (int) nd / 2;
	b.input = src;
	b.dec_input = dec;
	b.target = tgt;
	CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s forward", dir);
	/*
	 * within 2e-5, relative to logits over 1 (hf_t5's reach 16: 1e-5 is 5
	 * ulp there; x86-64 6.4e-6, AArch64's BLIS sums 1.1e-5)
	 */
	for (size_t i = 0; lg && i < lg->n; i++)
	{
		double		ref = ((const float *) lg->data)[i],
					diff = fabs(m->logits[i] - ref);

		worst = fmax(worst, diff);
		worst_rel = fmax(worst_rel, diff / fmax(1.0, fabs(ref)));
	}
	printf("%s: max |logit - PyTorch| = %.3g (%.3g relative to max(1, |logit|))\n", dir, worst,
		   worst_rel);
	CHECK(lg && lg->n == (size_t) 2 * b.Tt * V && worst_rel < 2e-5,
		  "%s: logits differ from PyTorch's by %g", dir, worst_rel);
	loss = tfm_model_loss_backward(m, &b, 0.0f, false, 1.0f, &count) / count;
	CHECK(fabs(loss - *(const float *) fixture_get(&fx, "loss")->data) < 1e-5,
		  "%s: loss %.7g, PyTorch %.7g", dir, loss, *(const float *) fixture_get(&fx, "loss")->data);

	/* greedy through the cache, the pad never produced; beam search as generate() */
	if (fixture_get(&fx, "length_penalty"))
		lp = *(const float *) fixture_get(&fx, "length_penalty")->data;
	for (int s = 0; s < 2; s++)
	{
		char		name[32];
		size_t		ng;
		const int32_t *greedy;
		const int32_t *row = src + (size_t) s * b.T;
		int			Ts = b.T;
		tfm_decoder *d = tfm_decoder_create(m, 1, 16, 1);
		float	   *logits = malloc(sizeof(float) * V);
		int32_t		next = 0;
		bool		same = true;
		size_t		k = 0;

		while (Ts > 1 && row[Ts - 1] == 0)
			Ts--;
		snprintf(name, sizeof(name), "greedy_%d", s);
		greedy = ints(&fx, name, &ng);
		CHECK(d && tfm_decoder_encode(d, row, Ts, 1) == 0, "%s: encode", dir);
		for (; k <= ng && k < 12; k++)
		{
			int			best = 1;

			if (tfm_decoder_feed(d, &next, NULL, 1, logits) != 0)
				break;
			for (int v = 2; v < V; v++)
				if (logits[v] > logits[best])
					best = v;
			if (best == 1)		/* </s> */
				break;
			same = same && k < ng && best == greedy[k];
			next = best;
		}
		CHECK(same && k == ng, "%s: greedy ids of source %d differ from the reference's", dir, s);
		tfm_decoder_free(d);
		free(logits);
	}
	{
		tfm_beam_opts o = {.beam = 3, .length_penalty = lp, .max_tokens = 12, .nbest = 3,
		.bos = 0, .eos = 1, .pad = 0, .hf_rules = 1};
		tfm_hyp		out[6];
		double		sworst = 0.0;

		CHECK(tfm_beam_search(m, src, 2, b.T, &o, out, NULL, NULL) == 0, "%s: beam search", dir);
		for (int s = 0; s < 2; s++)
		{
			char		name[32];
			const fx_record *sc;

			snprintf(name, sizeof(name), "beam_%d_scores", s);
			sc = fixture_get(&fx, name);
			for (int k = 0; k < 3; k++)
			{
				size_t		nh;
				const int32_t *want;
				tfm_hyp    *h = &out[s * 3 + k];

				snprintf(name, sizeof(name), "beam_%d_%d", s, k);
				want = ints(&fx, name, &nh);
				CHECK(want && h->n == (int) nh && memcmp(h->ids, want, sizeof(int32_t) * nh) == 0,
					  "%s: source %d hypothesis %d differs from the reference's beam search (%d ids, want %zu)",
					  dir, s, k, h->n, nh);
				if (sc)
					sworst = fmax(sworst, fabs(h->score - ((const float *) sc->data)[k]));
			}
		}
		printf("%s: beam search = the reference's; max |score - PyTorch| = %.3g\n", dir, sworst);
		CHECK(sworst < 1e-4, "%s: beam scores differ by %g", dir, sworst);
		tfm_hyps_free(out, 6);
	}
	/*
	 * bf16 and int8: every matrix packed at its T5 shape (heads · d_kv wide),
	 * logits near fp32's (within a fifth of their range: these weights are
	 * large, 4× the usual scale, so int8 drifts by up to 0.48 of 4.2)
	 */
	{
		tfm_precision precs[2] = {TFM_PREC_BF16, TFM_PREC_INT8};
		size_t		n = (size_t) 2 * b.Tt * V;
		float	   *ref = malloc(sizeof(float) * n);

		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s forward", dir);
		memcpy(ref, m->logits, sizeof(float) * n);
		for (int k = 0; k < 2; k++)
		{
			double		dev = 0.0,
						scale = 0.0;

			CHECK(tfm_model_set_precision(m, precs[k]) == 0, "%s: precision %d", dir, k);
			CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s forward (packed)", dir);
			for (size_t i = 0; i < n; i++)
			{
				dev = fmax(dev, fabs(m->logits[i] - ref[i]));
				scale = fmax(scale, fabs(ref[i]));
			}
			printf("%s %s: max |logit - fp32's| = %.3g (logits up to %.3g)\n", dir,
				   tfm_precision_name(precs[k]), dev, scale);
			CHECK(dev < 0.2 * scale, "%s: %s logits far from fp32's (%g)", dir,
				  tfm_precision_name(precs[k]), dev);
		}
		CHECK(tfm_model_set_precision(m, TFM_PREC_FP32) == 0, "%s: fp32 again", dir);
		free(ref);
	}
	tfm_hf_map_free(map);
	tfm_st_free(f);
	tfm_model_free(m);
	fixture_free(&fx);
	free(w);
}

/* ---- gradients ---- */

static void
test_gradients(bool gated)
{
	tfm_config	c;
	tfm_model  *m;
	int32_t		src[2 * 7],
				din[2 * 5],
				tg[2 * 5];
	tfm_batch	b = {0};

	tfm_config_defaults(&c, TFM_TASK_SEQ2SEQ);
	c.arch = TFM_ARCH_T5;
	c.vocab = 23;
	c.d_model = 16;
	c.heads = 3;
	c.head_size = 6;			/* 18 ≠ 16 */
	c.d_ff = 20;
	c.enc_layers = 2;
	c.dec_layers = 2;
	c.max_len = 32;
	c.positions = TFM_POS_RELATIVE;
	c.norm = TFM_NORM_PRE;
	c.rel_buckets = 8;
	c.rel_max_distance = 6;
	c.ff_gated = gated;
	c.activation = gated ? TFM_ACT_GELU_TANH : TFM_ACT_RELU;
	c.tie = !gated;
	c.scale_embeddings = 0;
	c.dropout = c.attn_dropout = 0.0f;
	c.ln_eps = 1e-6f;
	CHECK(tfm_config_check(&c) == NULL, "t5 config: %s", tfm_config_check(&c));
	m = tfm_model_create(&c);
	tfm_model_init(m, 3);
	for (int i = 0; i < m->n_tensors; i++)
		if (m->info[i].ndim == 1)
			for (size_t j = 0; j < m->info[i].size; j++)
				m->params[m->info[i].offset + j] = 1.0f + 0.3f * tfm_rng_normal(&rng);
	for (int i = 0; i < 14; i++)
		src[i] = 2 + (int32_t) tfm_rng_below(&rng, 21);
	src[12] = src[13] = 0;		/* the second source ends in pads */
	for (int i = 0; i < 10; i++)
		tg[i] = 2 + (int32_t) tfm_rng_below(&rng, 21);
	tg[9] = 0;					/* an ignored target */
	for (int r = 0; r < 2; r++)
	{
		din[r * 5] = 0;			/* the decoder starts from the pad id */
		for (int t = 1; t < 5; t++)
			din[r * 5 + t] = tg[r * 5 + t - 1];
	}
	b.B = 2;
	b.T = 7;
	b.Tt = 5;
	b.input = src;
	b.dec_input = din;
	b.target = tg;
	check_model_fd(m, &b, gated ? "t5 gated" : "t5 relu", quick_mode() ? 6 : 40, H, ATOL, RTOL);

	/* activation checkpointing recomputes each block: the same gradients, bit for bit */
	{
		tfm_model  *ck = tfm_model_create(&c);
		int			count;

		memcpy(ck->params, m->params, sizeof(float) * m->n_floats);
		ck->checkpoint_activations = true;
		CHECK(tfm_model_alloc_grads(ck) == 0 && tfm_model_forward(ck, &b, true, 0) == 0 &&
			  tfm_model_forward(m, &b, true, 0) == 0, "t5 checkpointed forward");
		tfm_model_zero_grad(ck);
		tfm_model_zero_grad(m);
		tfm_model_loss_backward(ck, &b, 0.0f, true, 1.0f, &count);
		tfm_model_loss_backward(m, &b, 0.0f, true, 1.0f, &count);
		CHECK(memcmp(ck->grads, m->grads, sizeof(float) * m->n_floats) == 0 &&
			  ck->ws->floats < m->ws->floats,
			  "t5 gated=%d: checkpointed gradients differ (or take no less memory)", gated);
		tfm_model_free(ck);
	}
	tfm_model_free(m);
}

int
main(void)
{
	char		err[256];
	/* the fixtures' config.json, as tfm's config.c reads them */
	tfm_hf_params v10 = {.arch = TFM_HF_T5, .vocab = 1016, .d_model = 32, .layers = 2,
		.dec_layers = 2, .heads = 3, .head_dim = 12, .d_ff = 40, .max_len = 512, .ln_eps = 1e-6f,
		.tie = true, .pad_id = 0, .rel_buckets = 16, .rel_max_distance = 12,
	.activation = TFM_ACT_RELU};
	tfm_hf_params v11 = {.arch = TFM_HF_T5, .vocab = 1016, .d_model = 32, .layers = 3,
		.dec_layers = 2, .heads = 4, .head_dim = 8, .d_ff = 48, .max_len = 512, .ln_eps = 1e-6f,
		.tie = false, .pad_id = 0, .rel_buckets = 32, .rel_max_distance = 128, .ff_gated = true,
	.activation = TFM_ACT_GELU_TANH};

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_rng_seed(&rng, 2611);
	for (int threads = 1; threads <= (quick_mode() ? 1 : 2); threads++)
	{
		tfm_set_threads(threads);
		test_gradients(false);
		test_gradients(true);
	}
	tfm_set_threads(2);
	test_fixture("hf_t5", &v10);
	test_fixture("hf_t5_v11", &v11);
	return check_summary("test_t5");
}
