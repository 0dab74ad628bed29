/*
 * test_decode.c — cached decoding against recomputing the whole prefix:
 * for decoder-only LMs (learned and sinusoidal positions, pre- and post-LN,
 * tied and untied) and encoder-decoders, the logits of every step with the
 * key/value cache equal those of a full forward pass over the prefix;
 * feeding a prompt at once equals feeding it token by token; left-padded
 * batches equal single sequences.  Plus the sampler: greedy is argmax,
 * top-k 1 is greedy, a seed repeats, frequencies follow the softmax.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/model.h"

#define TOL_ABS 2e-5
#define TOL_REL 2e-4

static void
config(tfm_config *c, int task, int norm, int positions, int tie)
{
	tfm_config_defaults(c, task);
	c->vocab = 29;
	c->d_model = 16;
	c->heads = 4;
	c->d_ff = 32;
	c->max_len = 24;
	c->norm = norm;
	c->positions = positions;
	c->tie = tie;
	c->dropout = c->attn_dropout = 0.0f;
	if (task == TFM_TASK_LM)
		c->dec_layers = 2;
	else
	{
		c->enc_layers = 2;
		c->dec_layers = 2;
	}
}

static tfm_model *
model(const tfm_config *c, uint64_t seed)
{
	tfm_model  *m = tfm_model_create(c);

	tfm_model_init(m, seed);
	/* larger weights, so that every path matters */
	for (size_t i = 0; i < m->n_floats; i++)
		m->params[i] += 0.2f * ((float) ((i * 2654435761u + seed) % 1000) / 500.0f - 1.0f);
	return m;
}

/* logits of the last position of ids[0..t) by a full forward pass */
static void
full_logits(tfm_model *m, const int32_t *src, int Ts, const int32_t *ids, int t, float *out)
{
	const tfm_config *c = &m->cfg;
	int			V = c->vocab;
	int32_t		tgt[64];
	tfm_batch	b;

	memset(&b, 0, sizeof(b));
	b.B = 1;
	if (c->task == TFM_TASK_LM)
	{
		b.T = t;
		b.input = ids;
		b.target = tgt;
	}
	else
	{
		b.T = Ts;
		b.input = src;
		b.Tt = t;
		b.dec_input = ids;
		b.target = tgt;
	}
	for (int i = 0; i < t; i++)
		tgt[i] = 1;
	tfm_model_forward(m, &b, false, 0);
	memcpy(out, m->logits + (size_t) (t - 1) * V, sizeof(float) * V);
}

static void
test_cache(int task, int norm, int positions, int tie)
{
	tfm_config	c;
	tfm_model  *m;
	tfm_decoder *d,
			   *d2;
	int32_t		ids[20],
				src[9] = {5, 9, 3, 17, 22, 8, 11, 4, 0};
	float		full[29],
				step[29],
				two[2 * 29];
	char		what[128];
	int			T = 20,
				V = 29;

	config(&c, task, norm, positions, tie);
	m = model(&c, 11 + norm + 2 * positions);
	for (int i = 0; i < T; i++)
		ids[i] = 1 + (i * 7 + 3) % (V - 1);
	d = tfm_decoder_create(m, 1, 32, 8);
	if (task == TFM_TASK_SEQ2SEQ)
		CHECK(tfm_decoder_encode(d, src, 9, 1) == 0, "encode");
	for (int t = 1; t <= T; t++)
	{
		CHECK(tfm_decoder_feed(d, ids + t - 1, NULL, 1, step) == 0, "feed");
		full_logits(m, src, 9, ids, t, full);
		snprintf(what, sizeof(what), "cache task=%d norm=%d pos=%d tie=%d step %d",
				 task, norm, positions, tie, t);
		check_close(what, step, full, V, TOL_ABS, TOL_REL);
	}
	CHECK(tfm_decoder_len(d) == T, "length %d", tfm_decoder_len(d));

	/* a prompt fed at once gives the same last logits as token by token */
	tfm_decoder_reset(d);
	CHECK(tfm_decoder_feed(d, ids, NULL, 7, step) == 0, "prompt feed");
	full_logits(m, src, 9, ids, 7, full);
	snprintf(what, sizeof(what), "prompt at once task=%d norm=%d pos=%d", task, norm, positions);
	check_close(what, step, full, V, TOL_ABS, TOL_REL);

	/* a left-padded batch of two prompts (lengths 5 and 3) */
	d2 = tfm_decoder_create(m, 2, 32, 8);
	if (task == TFM_TASK_SEQ2SEQ)
	{
		int32_t		src2[18];

		memcpy(src2, src, sizeof(src));
		memcpy(src2 + 9, src, sizeof(src));
		CHECK(tfm_decoder_encode(d2, src2, 9, 1) == 0, "encode 2");
	}
	{
		int32_t		toks[10] = {ids[0], ids[1], ids[2], ids[3], ids[4], 0, 0, ids[0], ids[1], ids[2]};
		uint8_t		pad[10] = {0, 0, 0, 0, 0, 1, 1, 0, 0, 0};

		CHECK(tfm_decoder_feed(d2, toks, pad, 5, two) == 0, "padded feed");
		full_logits(m, src, 9, ids, 5, full);
		snprintf(what, sizeof(what), "padded batch row 0 task=%d pos=%d", task, positions);
		check_close(what, two, full, V, TOL_ABS, TOL_REL);
		full_logits(m, src, 9, ids, 3, full);
		snprintf(what, sizeof(what), "padded batch row 1 task=%d pos=%d", task, positions);
		check_close(what, two + V, full, V, TOL_ABS, TOL_REL);
		/* one more step each: the rows continue at their own positions */
		toks[0] = ids[5];
		toks[1] = ids[3];
		CHECK(tfm_decoder_feed(d2, toks, NULL, 1, two) == 0, "padded step");
		full_logits(m, src, 9, ids, 6, full);
		check_close("padded batch row 0, next step", two, full, V, TOL_ABS, TOL_REL);
		full_logits(m, src, 9, ids, 4, full);
		check_close("padded batch row 1, next step", two + V, full, V, TOL_ABS, TOL_REL);
		/* beam reorder: both rows become row 0 */
		{
			int			from[2] = {0, 0};

			CHECK(tfm_decoder_reorder(d2, from) == 0, "reorder");
			toks[0] = toks[1] = ids[6];
			CHECK(tfm_decoder_feed(d2, toks, NULL, 1, two) == 0, "after reorder");
			full_logits(m, src, 9, ids, 7, full);
			check_close("reordered row 0", two, full, V, TOL_ABS, TOL_REL);
			check_close("reordered row 1", two + V, full, V, TOL_ABS, TOL_REL);
		}
		/* keeping fewer rows: a bad row or count is refused, one row goes on */
		{
			int			bad[2] = {0, 2},
						keep[1] = {1};

			CHECK(tfm_decoder_select(d2, bad, 2) == -1, "select from a row that does not exist");
			CHECK(tfm_decoder_select(d2, keep, 3) == -1, "select more rows than there are");
			CHECK(tfm_decoder_select(d2, keep, 1) == 0, "select one row");
			toks[0] = ids[7];
			CHECK(tfm_decoder_feed(d2, toks, NULL, 1, two) == 0, "after select");
			full_logits(m, src, 9, ids, 8, full);
			check_close("the kept row", two, full, V, TOL_ABS, TOL_REL);
		}
	}
	tfm_decoder_free(d2);
	tfm_decoder_free(d);
	tfm_model_free(m);
}

static void
test_sampler(void)
{
	float		logits[5] = {1.0f, 3.0f, 0.5f, 3.0f, -2.0f};
	float		scratch[10],
				lp;
	int			idx[5];
	tfm_sampler s = {0};
	int			counts[5] = {0};
	int			first[20];
	double		z = 0.0;

	s.temperature = 0.0f;
	s.top_p = 1.0f;
	CHECK(tfm_sample(&s, logits, 5, scratch, idx, &lp) == 1, "greedy takes the first best");
	s.temperature = 1.0f;
	s.top_k = 1;
	tfm_rng_seed(&s.rng, 1);
	CHECK(tfm_sample(&s, logits, 5, scratch, idx, &lp) == 1, "top-1 is greedy");
	s.top_k = 0;
	s.top_p = 0.3f;
	for (int i = 0; i < 50; i++)
		CHECK(tfm_sample(&s, logits, 5, scratch, idx, &lp) == 1, "a small nucleus keeps the best");
	s.top_p = 1.0f;
	tfm_rng_seed(&s.rng, 7);
	for (int i = 0; i < 20; i++)
		first[i] = tfm_sample(&s, logits, 5, scratch, idx, &lp);
	tfm_rng_seed(&s.rng, 7);
	for (int i = 0; i < 20; i++)
		CHECK(tfm_sample(&s, logits, 5, scratch, idx, &lp) == first[i], "a seed repeats");
	for (int i = 0; i < 20000; i++)
		counts[tfm_sample(&s, logits, 5, scratch, idx, &lp)]++;
	for (int i = 0; i < 5; i++)
		z += exp(logits[i]);
	for (int i = 0; i < 5; i++)
	{
		double		p = exp(logits[i]) / z,
					f = counts[i] / 20000.0;

		CHECK(fabs(f - p) < 4 * sqrt(p * (1 - p) / 20000.0) + 1e-3,
			  "token %d: frequency %.4f, probability %.4f", i, f, p);
	}
	/* top-k 2 never picks outside the two best */
	s.top_k = 2;
	for (int i = 0; i < 200; i++)
	{
		int			t = tfm_sample(&s, logits, 5, scratch, idx, &lp);

		CHECK(t == 1 || t == 3, "top-2 picked %d", t);
	}
	tfm_log_softmax(scratch, logits, 5);
	CHECK(fabs(lp - scratch[1]) < 1e-6 || fabs(lp - scratch[3]) < 1e-6, "logprob is the model's");
}

int
main(void)
{
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_set_threads(quick_mode() ? 1 : 2);
	for (int norm = 0; norm < 2; norm++)
		for (int pos = 0; pos < 2; pos++)
		{
			test_cache(TFM_TASK_LM, norm, pos, pos == 0);
			test_cache(TFM_TASK_SEQ2SEQ, norm, pos, 1);
		}
	test_sampler();
	return check_summary("test_decode");
}
