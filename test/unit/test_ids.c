/*
 * test_ids.c — ids that are not rows of the vocabulary are refused, never
 * read or written past a table: the embedding (forward and backward), the
 * cross-entropy's targets, whole passes (TFM_EBADID), a training step
 * (TFM_STEP_BADID) and cached decoding.  Plus the host's poll hooks of the
 * work whose length a caller chooses: initialisation calls the model's
 * poll, and BLEU stops (TFM_ECANCELED, stats unchanged) when its poll
 * says so.
 */
#include "check.h"
#include "tfm/precision.h"
#include "tfm/bleu.h"
#include "tfm/decode.h"
#include "tfm/layers.h"
#include "tfm/model.h"
#include "tfm/train.h"

static void
test_embedding_ids(void)
{
	const int	V = 3,
				d = 2;
	float		tok[3 * 2] = {1, 2, 3, 4, 5, 6};
	float		out[4 * 2],
				dtok[3 * 2] = {0},
				dout[4 * 2] = {1, 1, 1, 1, 1, 1, 1, 1};
	int32_t		good[4] = {0, 2, 1, 2},
				past[4] = {0, 2, 3, 1},
				neg[4] = {0, -1, 1, 1};

	CHECK(tfm_embedding_forward(out, good, tok, V, NULL, 1.0f, 1, 4, d, 0) == 0, "good ids");
	CHECK(out[2] == 5.0f && out[3] == 6.0f, "row 2: %g %g", out[2], out[3]);
	for (int i = 0; i < 8; i++)
		out[i] = -7.0f;
	CHECK(tfm_embedding_forward(out, past, tok, V, NULL, 1.0f, 1, 4, d, 0) == -1,
		  "id V refused");
	CHECK(tfm_embedding_forward(out, neg, tok, V, NULL, 1.0f, 2, 2, d, 0) == -1,
		  "id -1 refused");
	for (int i = 0; i < 8; i++)
		CHECK(out[i] == -7.0f, "out untouched at %d: %g", i, out[i]);
	CHECK(tfm_embedding_backward(dtok, NULL, dout, past, V, 1.0f, 1, 4, d, 0) == -1,
		  "backward: id V refused");
	for (int i = 0; i < 6; i++)
		CHECK(dtok[i] == 0.0f, "dtok untouched at %d", i);
	CHECK(tfm_embedding_backward(dtok, NULL, dout, good, V, 1.0f, 1, 4, d, 0) == 0,
		  "backward: good ids");
	CHECK(dtok[4] == 2.0f && dtok[0] == 1.0f && dtok[2] == 1.0f, "dtok %g %g %g",
		  dtok[0], dtok[2], dtok[4]);
	CHECK(tfm_ids_find_bad(past, 4, V, -1) == 2, "first bad index");
	CHECK(tfm_ids_find_bad(neg, 4, V, -1) == -1, "ignore index allowed");
}

static void
test_loss_targets(void)
{
	/* one class: the only possible loss is 0 */
	float		z[3] = {0.3f, -1.0f, 2.0f};
	float		dz[3] = {9, 9, 9};
	int32_t		ok[3] = {0, 0, 0},
				past[3] = {0, 3, 0},
				pad[3] = {0, -1, 0};
	int			count = 0;
	double		s;

	s = tfm_cross_entropy(dz, &count, z, ok, 3, 1, -1, 0.0f, 1.0f);
	CHECK(s == 0.0 && count == 3, "V 1: loss %g count %d", s, count);
	CHECK(dz[0] == 0.0f && dz[1] == 0.0f && dz[2] == 0.0f, "V 1: no gradient");
	dz[0] = dz[1] = dz[2] = 9.0f;
	s = tfm_cross_entropy(dz, &count, z, past, 3, 1, -1, 0.0f, 1.0f);
	CHECK(isnan(s) && count == -1, "target 3 of V 1: %g, count %d", s, count);
	CHECK(dz[0] == 9.0f && dz[1] == 9.0f && dz[2] == 9.0f, "dz untouched");
	s = tfm_cross_entropy(NULL, &count, z, pad, 3, 1, -1, 0.0f, 1.0f);
	CHECK(s == 0.0 && count == 2, "ignored target: %g, count %d", s, count);
	pad[1] = -2;
	s = tfm_cross_entropy(NULL, &count, z, pad, 3, 1, -1, 0.0f, 1.0f);
	CHECK(isnan(s) && count == -1, "target -2: %g, count %d", s, count);
}

static int	polls;

static void
count_poll(void *arg)
{
	(void) arg;
	polls++;
}

static tfm_model *
small_model(int task, int vocab)
{
	tfm_config	c;
	tfm_model  *m;

	tfm_config_defaults(&c, task);
	c.vocab = vocab;
	c.d_model = 8;
	c.heads = 2;
	c.d_ff = 16;
	c.max_len = 8;
	c.dropout = c.attn_dropout = 0.0f;
	c.n_classes = 2;
	if (task == TFM_TASK_LM)
		c.dec_layers = 1;
	else if (task == TFM_TASK_CLASSIFY)
		c.enc_layers = 1;
	else
		c.enc_layers = c.dec_layers = 1;
	CHECK(tfm_config_check(&c) == NULL, "config: %s", tfm_config_check(&c));
	m = tfm_model_create(&c);
	m->poll = count_poll;
	polls = 0;
	tfm_model_init(m, 1);
	CHECK(polls >= m->n_tensors, "init polled %d times for %d tensors", polls, m->n_tensors);
	return m;
}

static void
test_passes(void)
{
	tfm_model  *m = small_model(TFM_TASK_LM, 9);
	int32_t		in[4] = {1, 2, 3, 4},
				tg[4] = {2, 3, 4, 8},
				bad_in[4] = {1, 9, 3, 4},
				bad_tg[4] = {2, 3, 4, 9};
	tfm_batch	b = {0};
	int			count;
	double		s;

	b.B = 1;
	b.T = 4;
	b.input = in;
	b.target = tg;
	CHECK(tfm_model_forward(m, &b, true, 0) == 0, "forward");
	s = tfm_model_loss_backward(m, &b, 0.0f, true, 0.25f, &count);
	CHECK(isfinite(s) && count == 4, "loss %g count %d", s, count);
	b.input = bad_in;
	CHECK(tfm_model_forward(m, &b, false, 0) == TFM_EBADID, "input id 9 of 9");
	b.input = in;
	b.target = bad_tg;
	CHECK(tfm_model_forward(m, &b, true, 0) == 0, "forward before a bad target");
	s = tfm_model_loss_backward(m, &b, 0.0f, true, 0.25f, &count);
	CHECK(isnan(s) && count == -1, "target 9 of 9: %g count %d", s, count);

	/* a training step refuses both, parameters untouched */
	{
		tfm_trainer tr;
		tfm_train_opts o;
		double		sum;
		float	   *before = malloc(sizeof(float) * m->n_floats);

		memset(&o, 0, sizeof(o));
		o.lr = 1e-2f;
		o.beta1 = 0.9f;
		o.beta2 = 0.999f;
		o.eps = 1e-8f;
		CHECK(tfm_trainer_init(&tr, m, &o) == 0, "trainer");
		memcpy(before, m->params, sizeof(float) * m->n_floats);
		b.input = bad_in;
		b.target = tg;
		CHECK(tfm_trainer_step(&tr, &b, 1, &sum, &count) == TFM_STEP_BADID, "step, bad input");
		b.input = in;
		b.target = bad_tg;
		CHECK(tfm_trainer_step(&tr, &b, 1, &sum, &count) == TFM_STEP_BADID, "step, bad target");
		CHECK(memcmp(before, m->params, sizeof(float) * m->n_floats) == 0, "parameters unchanged");
		b.target = tg;
		CHECK(tfm_trainer_step(&tr, &b, 1, &sum, &count) == TFM_STEP_OK, "step");
		tfm_trainer_free(&tr);
		free(before);
	}

	/* cached decoding */
	{
		tfm_decoder *d = tfm_decoder_create(m, 1, 8, 4);
		float		logits[9];
		int32_t		one = 9;

		CHECK(d != NULL, "decoder");
		CHECK(tfm_decoder_feed(d, &one, NULL, 1, logits) == TFM_EBADID, "feed id 9 of 9");
		CHECK(tfm_decoder_len(d) == 0, "nothing fed");
		one = 8;
		CHECK(tfm_decoder_feed(d, &one, NULL, 1, logits) == 0, "feed id 8");
		tfm_decoder_free(d);
	}
	tfm_model_free(m);

	/* a classifier's labels are its loss targets */
	m = small_model(TFM_TASK_CLASSIFY, 9);
	{
		int32_t		lab = 2;

		b.input = in;
		b.target = NULL;
		b.labels = &lab;
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "classify forward");
		s = tfm_model_loss_backward(m, &b, 0.0f, false, 1.0f, &count);
		CHECK(isnan(s) && count == -1, "label 2 of 2 classes: %g count %d", s, count);
	}
	tfm_model_free(m);

	/* seq2seq: the source through the encoder, the target vocabulary's own rows */
	{
		tfm_config	c;
		int32_t		src[4] = {1, 2, 3, 4},
					din[4] = {2, 3, 4, 6},
					dtg[4] = {3, 4, 5, 6};

		m = small_model(TFM_TASK_SEQ2SEQ, 9);
		c = m->cfg;
		tfm_model_free(m);
		c.tgt_vocab = 6;
		m = tfm_model_create(&c);
		tfm_model_init(m, 1);
		memset(&b, 0, sizeof(b));
		b.B = 1;
		b.T = 4;
		b.Tt = 4;
		b.input = src;
		b.dec_input = din;
		b.target = dtg;
		CHECK(tfm_model_forward(m, &b, false, 0) == TFM_EBADID, "decoder input 6 of 6");
		din[3] = 1;
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "seq2seq forward");
		s = tfm_model_loss_backward(m, &b, 0.0f, false, 1.0f, &count);
		CHECK(isnan(s) && count == -1, "target 6 of 6: %g count %d", s, count);
		src[0] = 9;
		CHECK(tfm_model_forward(m, &b, false, 0) == TFM_EBADID, "source 9 of 9");
		{
			tfm_decoder *d = tfm_decoder_create(m, 1, 8, 4);

			CHECK(tfm_decoder_encode(d, src, 4, 1) == TFM_EBADID, "encode source 9 of 9");
			tfm_decoder_free(d);
		}
		tfm_model_free(m);
	}
}

static int	bleu_polls,
			bleu_stop_at;

static int
bleu_poll(void *arg)
{
	(void) arg;
	return ++bleu_polls >= bleu_stop_at;
}

static void
test_bleu_poll(void)
{
	size_t		n = 4 << 20;
	char	   *hyp = malloc(n),
			   *ref = malloc(n);
	const char *refs[1];
	size_t		lens[1] = {n};
	int64_t		stats[TFM_BLEU_N_STATS] = {0},
				zero[TFM_BLEU_N_STATS] = {0};
	int			st,
				total;

	for (size_t i = 0; i < n; i++)
	{
		hyp[i] = i % 2 ? ' ' : (char) ('a' + (i * 7919) % 23);
		ref[i] = i % 2 ? ' ' : (char) ('a' + (i * 104729) % 19);
	}
	refs[0] = ref;
	/* never stopped: the same counts as without a poll */
	bleu_polls = 0;
	bleu_stop_at = 1 << 30;
	st = tfm_bleu_add_polled(stats, hyp, n, refs, lens, 1, bleu_poll, NULL);
	CHECK(st == TFM_OK, "polled: %s", tfm_code_name(st));
	total = bleu_polls;
	CHECK(total >= 20, "polled %d times over 2 x 4 MB", total);
	{
		int64_t		plain[TFM_BLEU_N_STATS] = {0};

		CHECK(tfm_bleu_add(plain, hyp, n, refs, lens, 1) == TFM_OK, "plain");
		CHECK(memcmp(plain, stats, sizeof(plain)) == 0, "same counts");
	}
	/* stopped at every poll in turn (a sample of them): stats unchanged */
	for (int k = 1; k <= total; k += 1 + total / 7)
	{
		memset(stats, 0, sizeof(stats));
		bleu_polls = 0;
		bleu_stop_at = k;
		st = tfm_bleu_add_polled(stats, hyp, n, refs, lens, 1, bleu_poll, NULL);
		CHECK(st == TFM_ECANCELED, "stop at poll %d: %s", k, tfm_code_name(st));
		CHECK(bleu_polls == k, "no poll after the stop (%d, %d)", bleu_polls, k);
		CHECK(memcmp(stats, zero, sizeof(stats)) == 0, "stats unchanged");
	}
	free(hyp);
	free(ref);
}

/* packing for bf16/int8 asks before each matrix: a stop leaves the model at fp32 */
static int	stop_after;

static int
stop_at(void *arg)
{
	(void) arg;
	return --stop_after < 0;
}

static void
test_pack_poll(void)
{
	tfm_model  *m = small_model(TFM_TASK_LM, 9);
	tfm_precision ps[2] = {TFM_PREC_BF16, TFM_PREC_INT8};

	for (int i = 0; i < 2; i++)
	{
		stop_after = 2;
		CHECK(tfm_model_set_precision_polled(m, ps[i], stop_at, NULL) == TFM_ECANCELED, "%s: stopped",
			  tfm_precision_name(ps[i]));
		CHECK(tfm_model_precision(m) == TFM_PREC_FP32 && tfm_model_precision_bytes(m) == 0,
			  "%s: left at fp32", tfm_precision_name(ps[i]));
		stop_after = 1000;
		CHECK(tfm_model_set_precision_polled(m, ps[i], stop_at, NULL) == 0, "%s: packed",
			  tfm_precision_name(ps[i]));
		CHECK(tfm_model_precision(m) == ps[i], "%s: in effect", tfm_precision_name(ps[i]));
		CHECK(stop_after < 1000 - 2, "%s: asked %d times", tfm_precision_name(ps[i]), 1000 - stop_after);
		CHECK(tfm_model_set_precision(m, TFM_PREC_FP32) == 0, "back to fp32");
	}
	tfm_model_free(m);
}

int
main(void)
{
	test_embedding_ids();
	test_loss_targets();
	test_passes();
	test_bleu_poll();
	test_pack_poll();
	return check_summary("test_ids");
}
