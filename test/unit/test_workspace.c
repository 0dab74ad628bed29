/*
 * test_workspace.c — the core's memory estimates bound what it allocates.
 *
 * tfm_model_workspace_bytes, tfm_decoder_bytes and tfm_beam_bytes are what
 * the SQL layer checks against tfm.work_mem before it runs a pass: each must
 * be at least what the pass then allocates (measured here by glibc's own
 * count of allocated bytes, mallinfo2), and not far above it.  Also: a
 * workspace grown for a second shape covers both only within the model's
 * ws_limit.
 */
#include <malloc.h>

#include "check.h"
#include "tfm/beam.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "../src/core/model/model_internal.h"

static size_t
allocated(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void
config(tfm_config *c, int task, int positions, int arch)
{
	tfm_config_defaults(c, task);
	c->vocab = 301;
	c->d_model = 32;
	c->heads = 4;
	c->d_ff = 64;
	c->max_len = 256;
	c->n_classes = 3;
	c->positions = positions;
	c->dropout = 0.1f;
	c->attn_dropout = 0.1f;
	if (arch == TFM_ARCH_LLAMA)
	{
		c->arch = TFM_ARCH_LLAMA;
		c->positions = TFM_POS_ROPE;
		c->kv_heads = 2;
		c->norm = TFM_NORM_PRE;
		c->dropout = c->attn_dropout = 0.0f;
		c->pad_id = -1;
	}
	if (task == TFM_TASK_CLASSIFY)
		c->enc_layers = 2, c->dec_layers = 0;
	else if (task == TFM_TASK_LM)
		c->enc_layers = 0, c->dec_layers = 2;
	else
		c->enc_layers = 2, c->dec_layers = 2;
}

static void
fill(int32_t *ids, size_t n, int V)
{
	for (size_t i = 0; i < n; i++)
		ids[i] = 4 + (int32_t) ((i * 2654435761u) % (unsigned) (V - 4));
}

/* one pass (training: forward + backward) over (B, T, Tt); bytes it took */
static size_t
pass_bytes(tfm_model *m, int B, int T, int Tt, bool training, bool attention)
{
	const tfm_config *c = &m->cfg;
	int32_t    *in = malloc(sizeof(int32_t) * B * T),
			   *din = malloc(sizeof(int32_t) * B * (Tt + 1)),
			   *tgt = malloc(sizeof(int32_t) * B * (T > Tt ? T : Tt)),
			   *lab = malloc(sizeof(int32_t) * B);
	tfm_batch	b;
	size_t		before,
				got;
	int			cnt;

	fill(in, (size_t) B * T, c->vocab);
	fill(din, (size_t) B * (Tt + 1), c->vocab);
	fill(tgt, (size_t) B * (T > Tt ? T : Tt), c->vocab);
	for (int i = 0; i < B; i++)
		lab[i] = i % c->n_classes;
	memset(&b, 0, sizeof(b));
	b.B = B;
	b.T = T;
	b.input = in;
	b.Tt = Tt;
	b.dec_input = din;
	b.target = tgt;
	b.labels = lab;
	b.keep_attention = attention;
	if (training && tfm_model_alloc_grads(m) != 0)
		return SIZE_MAX;
	before = allocated();
	if (tfm_model_forward(m, &b, training, 7) != 0)
		return SIZE_MAX;
	if (training)
		tfm_model_loss_backward(m, &b, 0.0f, true, 1.0f, &cnt);
	got = allocated() - before;
	free(in);
	free(din);
	free(tgt);
	free(lab);
	return got;
}

/* ckpt: activation checkpointing (the model's, and the estimate's flag) */
static void
check_pass_ckpt(const char *what, const tfm_config *c, int B, int T, int Tt, bool training,
				bool attention, tfm_precision prec, bool ckpt)
{
	tfm_model  *m = tfm_model_create(c);
	int			flags = (training ? TFM_WS_TRAINING : 0) | (attention ? TFM_WS_ATTENTION : 0) |
		(prec != TFM_PREC_FP32 ? TFM_WS_LOWP : 0) | (prec == TFM_PREC_INT4 ? TFM_WS_INT4 : 0) |
		(ckpt ? TFM_WS_CHECKPOINT : 0);
	size_t		est,
				got;

	tfm_model_init(m, 1);
	m->checkpoint_activations = ckpt;
	if (prec != TFM_PREC_FP32)
	{
		if (training)
			CHECK(tfm_model_set_train_precision(m, prec) == 0, "%s: train precision", what);
		else
			CHECK(tfm_model_set_precision(m, prec) == 0, "%s: precision", what);
	}
	est = tfm_model_workspace_bytes(c, B, T, Tt, flags, tfm_get_threads());
	got = pass_bytes(m, B, T, Tt, training, attention);
	CHECK(got != SIZE_MAX && got <= est, "%s: allocated %zu > estimate %zu", what, got, est);
	/* tight: the estimate is within 10% + 64 kB of the allocation */
	CHECK(est <= got + got / 10 + 65536, "%s: estimate %zu far above %zu", what, est, got);
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  %-40s estimate %10zu allocated %10zu\n", what, est, got);
	tfm_model_free(m);
}

static void
check_pass(const char *what, const tfm_config *c, int B, int T, int Tt, bool training,
		   bool attention, tfm_precision prec)
{
	check_pass_ckpt(what, c, B, T, Tt, training, attention, prec, false);
}

static void
test_passes(void)
{
	tfm_config	c;
	static const tfm_precision precs[] = {TFM_PREC_FP32, TFM_PREC_BF16};

	for (int p = 0; p < 2; p++)
	{
		tfm_precision prec = precs[p];
		bool		bf = prec == TFM_PREC_BF16;

		config(&c, TFM_TASK_CLASSIFY, TFM_POS_LEARNED, TFM_ARCH_TFM);
		check_pass(bf ? "classify train bf16" : "classify train", &c, 8, 96, 0, true, false, prec);
		check_pass(bf ? "classify infer bf16" : "classify infer", &c, 8, 96, 0, false, false, prec);
		c.emb_norm = 1;
		c.cls_pre = TFM_CLS_PRE_TANH;
		check_pass(bf ? "classify bert train bf16" : "classify bert train", &c, 4, 64, 0, true, false, prec);
		config(&c, TFM_TASK_LM, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
		check_pass(bf ? "lm train bf16" : "lm train", &c, 4, 200, 0, true, false, prec);
		check_pass(bf ? "lm infer bf16" : "lm infer", &c, 4, 200, 0, false, false, prec);
		config(&c, TFM_TASK_LM, TFM_POS_ROPE, TFM_ARCH_LLAMA);
		check_pass(bf ? "llama train bf16" : "llama train", &c, 2, 128, 0, true, false, prec);
		config(&c, TFM_TASK_SEQ2SEQ, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
		check_pass(bf ? "seq2seq train bf16" : "seq2seq train", &c, 4, 60, 90, true, false, prec);
		check_pass(bf ? "seq2seq attention bf16" : "seq2seq attention", &c, 2, 60, 90, false, true, prec);
	}
	/* activation checkpointing: one block's activations per stack */
	config(&c, TFM_TASK_CLASSIFY, TFM_POS_LEARNED, TFM_ARCH_TFM);
	check_pass_ckpt("classify train checkpointed", &c, 8, 96, 0, true, false, TFM_PREC_FP32, true);
	config(&c, TFM_TASK_LM, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	c.dec_layers = 6;
	check_pass_ckpt("lm 6 layers train checkpointed", &c, 4, 200, 0, true, false, TFM_PREC_FP32, true);
	check_pass_ckpt("lm 6 layers train checkpointed bf16", &c, 4, 200, 0, true, false, TFM_PREC_BF16, true);
	config(&c, TFM_TASK_LM, TFM_POS_ROPE, TFM_ARCH_LLAMA);
	check_pass_ckpt("llama train checkpointed", &c, 2, 128, 0, true, false, TFM_PREC_FP32, true);
	config(&c, TFM_TASK_SEQ2SEQ, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	check_pass_ckpt("seq2seq train checkpointed", &c, 4, 60, 90, true, false, TFM_PREC_FP32, true);
	/* 6 layers: the checkpointed activations are about a sixth of the plain ones */
	config(&c, TFM_TASK_LM, TFM_POS_LEARNED, TFM_ARCH_TFM);
	c.dec_layers = 6;
	{
		size_t		plain = tfm_model_workspace_bytes(&c, 8, 256, 0, TFM_WS_TRAINING, 2),
					ck = tfm_model_workspace_bytes(&c, 8, 256, 0, TFM_WS_TRAINING | TFM_WS_CHECKPOINT, 2);

		CHECK(ck < plain / 3, "checkpointed %zu, plain %zu", ck, plain);
		CHECK(tfm_model_workspace_bytes(&c, 8, 256, 0, TFM_WS_CHECKPOINT, 2) ==
			  tfm_model_workspace_bytes(&c, 8, 256, 0, 0, 2), "checkpointing is training's");
	}
	/* int4: its weight tiles besides */
	config(&c, TFM_TASK_CLASSIFY, TFM_POS_LEARNED, TFM_ARCH_TFM);
	check_pass("classify infer int4", &c, 8, 96, 0, false, false, TFM_PREC_INT4);
	config(&c, TFM_TASK_LM, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	check_pass("lm infer int4", &c, 4, 200, 0, false, false, TFM_PREC_INT4);
	/* an inference pass keeps no attention weights: far less than training */
	config(&c, TFM_TASK_LM, TFM_POS_LEARNED, TFM_ARCH_TFM);
	CHECK(tfm_model_workspace_bytes(&c, 1, 256, 0, 0, 2) + (size_t) 2 * 4 * 256 * 256 * sizeof(float) <
		  tfm_model_workspace_bytes(&c, 1, 256, 0, TFM_WS_TRAINING, 2),
		  "inference workspace without attention weights");
}

/* a workspace grown for (B, short) then (1, long) covers both only within ws_limit */
static void
test_union(void)
{
	tfm_config	c;
	tfm_model  *m;
	size_t		wide,
				lng,
				both;

	config(&c, TFM_TASK_CLASSIFY, TFM_POS_LEARNED, TFM_ARCH_TFM);
	wide = tfm_model_workspace_bytes(&c, 64, 8, 0, TFM_WS_TRAINING, tfm_get_threads());
	lng = tfm_model_workspace_bytes(&c, 1, 256, 0, TFM_WS_TRAINING, tfm_get_threads());
	both = tfm_model_workspace_bytes(&c, 64, 256, 0, TFM_WS_TRAINING, tfm_get_threads());
	CHECK(both > wide + lng, "the union is larger than both");
	m = tfm_model_create(&c);
	tfm_model_init(m, 1);
	m->ws_limit = wide > lng ? wide : lng;
	pass_bytes(m, 64, 8, 0, true, false);
	pass_bytes(m, 1, 256, 0, true, false);
	CHECK(m->ws->floats * sizeof(float) <= m->ws_limit, "limited: %zu > %zu",
		  m->ws->floats * sizeof(float), m->ws_limit);
	CHECK(m->ws->B == 1 && m->ws->T == 256, "the new shape alone: %d x %d", m->ws->B, m->ws->T);
	tfm_model_free(m);
	m = tfm_model_create(&c);
	tfm_model_init(m, 1);
	pass_bytes(m, 64, 8, 0, true, false);
	pass_bytes(m, 1, 256, 0, true, false);
	CHECK(m->ws->B == 64 && m->ws->T == 256, "unlimited: the union");
	tfm_model_free(m);
}

static void
check_decoder(const char *what, const tfm_config *c, int B, int cap, int nmax, int Ts, int steps,
			  tfm_precision prec)
{
	int			V = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;
	int32_t    *src = malloc(sizeof(int32_t) * B * (Ts > 0 ? Ts : 1)),
			   *tok = malloc(sizeof(int32_t) * B * nmax);
	float	   *logits = malloc(sizeof(float) * B * V);
	int		   *from = malloc(sizeof(int) * B);
	size_t		before,
				got = 0,
				est;

	fill(src, (size_t) B * (Ts > 0 ? Ts : 1), c->vocab);
	fill(tok, (size_t) B * nmax, V);
	for (int i = 0; i < B; i++)
		from[i] = B - 1 - i;
	est = tfm_decoder_bytes(c, B, cap, nmax, Ts, prec != TFM_PREC_FP32, tfm_get_threads());
	/*
	 * Twice, each with a model of its own, the first run unmeasured: the
	 * first decoding of a shape in the process may grow a process-wide pool
	 * once (under qemu's arm64, BLIS's packing blocks: 17 MB on the first
	 * lm check only), which no decoder's estimate holds and a backend pays
	 * once; what a model and its decoder allocate is measured afresh.
	 */
	for (int run = 0; run < 2; run++)
	{
		tfm_model  *m = tfm_model_create(c);
		tfm_decoder *d;

		tfm_model_init(m, 1);
		if (prec != TFM_PREC_FP32)
			tfm_model_set_precision(m, prec);
		before = allocated();
		d = tfm_decoder_create(m, B, cap, nmax);
		CHECK(d != NULL, "%s: create", what);
		if (d)
		{
			if (Ts > 0)
				CHECK(tfm_decoder_encode(d, src, Ts, 1) == 0, "%s: encode", what);
			CHECK(tfm_decoder_feed(d, tok, NULL, nmax, logits) == 0, "%s: feed", what);
			for (int s = 0; s < steps; s++)
			{
				CHECK(tfm_decoder_feed(d, tok, NULL, 1, logits) == 0, "%s: step", what);
				CHECK(tfm_decoder_reorder(d, from) == 0, "%s: reorder", what);
			}
		}
		got = allocated() - before;
		tfm_decoder_free(d);
		tfm_model_free(m);
	}
	CHECK(got <= est, "%s: allocated %zu > estimate %zu", what, got, est);
	CHECK(est <= 2 * got + 65536, "%s: estimate %zu far above %zu", what, est, got);
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  %-40s estimate %10zu allocated %10zu\n", what, est, got);
	free(src);
	free(tok);
	free(logits);
	free(from);
}

static void
test_decoders(void)
{
	tfm_config	c;

	config(&c, TFM_TASK_LM, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	check_decoder("lm decoder", &c, 3, 200, 100, 0, 50, TFM_PREC_FP32);
	check_decoder("lm decoder bf16", &c, 3, 200, 100, 0, 50, TFM_PREC_BF16);
	config(&c, TFM_TASK_LM, TFM_POS_ROPE, TFM_ARCH_LLAMA);
	check_decoder("llama decoder", &c, 2, 128, 64, 0, 40, TFM_PREC_FP32);
	config(&c, TFM_TASK_SEQ2SEQ, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	check_decoder("seq2seq decoder", &c, 4, 100, 1, 70, 60, TFM_PREC_FP32);
}

static void
test_beam(void)
{
	tfm_config	c;
	tfm_model  *m;
	tfm_beam_opts o = {.beam = 4, .length_penalty = 0.6f, .max_tokens = 40, .nbest = 2,
	.bos = 2, .eos = 3, .pad = 0};
	int			B = 3,
				Ts = 50;
	int32_t    *src = malloc(sizeof(int32_t) * B * Ts);
	tfm_hyp    *out = calloc(B * o.nbest, sizeof(tfm_hyp));
	size_t		before,
				got,
				est;

	config(&c, TFM_TASK_SEQ2SEQ, TFM_POS_SINUSOIDAL, TFM_ARCH_TFM);
	m = tfm_model_create(&c);
	tfm_model_init(m, 3);
	fill(src, (size_t) B * Ts, c.vocab);
	est = tfm_beam_bytes(&c, B, Ts, &o, false, tfm_get_threads());
	before = allocated();
	CHECK(tfm_beam_search(m, src, B, Ts, &o, out, NULL, NULL) == 0, "beam search");
	got = allocated() - before;
	/* the model's workspace stays; the search's own buffers are freed */
	CHECK(got <= est, "beam: left %zu > estimate %zu", got, est);
	tfm_hyps_free(out, B * o.nbest);
	tfm_model_free(m);
	m = tfm_model_create(&c);
	tfm_model_init(m, 3);
	{
		/* peak: count with a decoder of the beam's shape, as the search makes */
		size_t		dec = tfm_decoder_bytes(&c, B * o.beam, o.max_tokens + 1, 1, Ts, false,
										   tfm_get_threads());

		CHECK(est > dec, "beam estimate includes its decoder");
		CHECK(est >= (size_t) B * o.beam * c.vocab * sizeof(float), "and its logits");
	}
	tfm_model_free(m);
	free(src);
	free(out);
}

int
main(void)
{
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "blas: %s\n", err);
		return 1;
	}
	tfm_set_threads(2);
	/*
	 * A first training pass and a first decoding start BLIS's and OpenMP's
	 * own pools (process-wide, sized by BLIS's block sizes for the CPU:
	 * larger on arm64's), outside any count and any estimate.
	 */
	{
		tfm_config	c;
		tfm_model  *m;
		tfm_decoder *d;
		int32_t		tok[2 * 8];
		float	   *logits;

		config(&c, TFM_TASK_LM, TFM_POS_LEARNED, TFM_ARCH_TFM);
		m = tfm_model_create(&c);
		tfm_model_init(m, 1);
		if (pass_bytes(m, 2, 16, 0, true, false) == SIZE_MAX)
			CHECK(false, "warm-up: the training pass failed");
		fill(tok, 2 * 8, c.vocab);
		logits = malloc(sizeof(float) * 2 * c.vocab);
		d = tfm_decoder_create(m, 2, 16, 8);
		CHECK(d != NULL && tfm_decoder_feed(d, tok, NULL, 8, logits) == 0 &&
			  tfm_decoder_feed(d, tok, NULL, 1, logits) == 0, "warm-up: decoding failed");
		tfm_decoder_free(d);
		free(logits);
		tfm_model_free(m);
	}
	test_passes();
	test_union();
	test_decoders();
	test_beam();
	return check_summary("test_workspace");
}
