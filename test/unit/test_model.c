/*
 * test_model.c — whole models: the encoder classifier, the decoder LM and
 * the encoder-decoder, in every variant the fixtures cover, against
 * PyTorch (logits, loss, every parameter gradient, five AdamW steps with
 * clipping), plus whole-model finite differences with dropout on, and
 * bit-for-bit repeatability for a seed and thread count.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/model.h"
#include "tfm/kept_block.h"
#include "tfm/precision.h"
#include "tfm/lowp.h"
#include "tfm/optim.h"
#include "tfm/rng.h"

#include "model_fixtures.h"

typedef struct
{
	tfm_batch	b;
	float		eps;
} batch_ctx;

static void
batch_from_fixture(batch_ctx *bc, const fixture *fx, const tfm_config *c)
{
	const fx_record *in = fixture_get(fx, "input");

	memset(bc, 0, sizeof(*bc));
	bc->b.B = in->dims[0];
	bc->b.T = in->dims[1];
	bc->b.input = in->data;
	if (c->task == TFM_TASK_CLASSIFY)
		bc->b.labels = fixture_get(fx, "labels")->data;
	else
		bc->b.target = fixture_get(fx, "target")->data;
	if (c->task == TFM_TASK_SEQ2SEQ)
	{
		const fx_record *di = fixture_get(fx, "dec_input");

		bc->b.Tt = di->dims[1];
		bc->b.dec_input = di->data;
	}
	bc->eps = *(const float *) fixture_get(fx, "config.label_smoothing")->data;
}

static double
mean_loss(tfm_model *m, const batch_ctx *bc, bool backward)
{
	int			count;
	double		sum;

	if (backward)
	{
		/* two passes: count targets, then scale gradients by 1/count */
		tfm_model_forward(m, &bc->b, true, 0);
		tfm_model_loss_backward(m, &bc->b, bc->eps, false, 1.0f, &count);
		tfm_model_forward(m, &bc->b, true, 0);
		sum = tfm_model_loss_backward(m, &bc->b, bc->eps, true, 1.0f / count, &count);
	}
	else
	{
		tfm_model_forward(m, &bc->b, false, 0);
		sum = tfm_model_loss_backward(m, &bc->b, bc->eps, false, 1.0f, &count);
	}
	return sum / count;
}

static void
test_fixture(const char *file)
{
	fixture		fx;
	tfm_config	c;
	tfm_model  *m;
	batch_ctx	bc;
	const fx_record *r;
	char		what[160];
	double		loss;
	tfm_adam	opt;
	const fx_record *ref_losses,
			   *ref_norms;

	if (fixture_load(&fx, file) != 0)
	{
		CHECK(0, "fixture %s", file);
		return;
	}
	config_from_fixture(&c, &fx);
	CHECK(tfm_config_check(&c) == NULL, "%s config: %s", file, tfm_config_check(&c));
	m = tfm_model_create(&c);
	batch_from_fixture(&bc, &fx, &c);

	/* every tensor of the model is in the fixture, with the same shape */
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];

		r = fixture_get(&fx, p->name);
		CHECK(r != NULL && r->n == p->size, "%s: tensor %s missing or misshapen", file, p->name);
		if (r && r->n == p->size)
			memcpy(m->params + p->offset, r->data, p->size * sizeof(float));
	}
	/* and every parameter in the fixture is in the model */
	for (int i = 0; i < fx.n; i++)
	{
		const char *nm = fx.rec[i].name;

		if (strncmp(nm, "grad.", 5) == 0)
			CHECK(tfm_model_find(m, nm + 5) != NULL, "%s: model lacks %s", file, nm + 5);
	}

	/* logits */
	tfm_model_forward(m, &bc.b, false, 0);
	r = fixture_get(&fx, "logits");
	snprintf(what, sizeof(what), "%s logits", file);
	check_close(what, m->logits, r->data, r->n, 2e-5, 1e-4);

	/* loss and gradients */
	loss = mean_loss(m, &bc, true);
	r = fixture_get(&fx, "loss");
	snprintf(what, sizeof(what), "%s loss", file);
	{
		float		l = (float) loss;

		check_close(what, &l, r->data, 1, 1e-5, 1e-5);
	}
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		char		gname[96];

		snprintf(gname, sizeof(gname), "grad.%s", p->name);
		r = fixture_get(&fx, gname);
		if (!r)
			continue;
		snprintf(what, sizeof(what), "%s %s", file, gname);
		check_close(what, m->grads + p->offset, r->data, p->size, 1e-5, 1e-3);
	}

	/* five AdamW steps with clipping at 1.0 */
	ref_losses = fixture_get(&fx, "adam.losses");
	ref_norms = fixture_get(&fx, "adam.gradnorm");
	tfm_adam_init(&opt, m->n_floats, 0.9f, 0.98f, 1e-9f, 0.1f, true);
	for (int step = 0; step < 5; step++)
	{
		float		l,
					gn;
		double		norm;

		tfm_model_zero_grad(m);
		l = (float) mean_loss(m, &bc, true);
		norm = tfm_grad_norm(m->grads, m->n_floats);
		gn = (float) norm;
		snprintf(what, sizeof(what), "%s adam loss %d", file, step);
		check_close(what, &l, (const float *) ref_losses->data + step, 1, 2e-5, 1e-4);
		snprintf(what, sizeof(what), "%s adam grad norm %d", file, step);
		check_close(what, &gn, (const float *) ref_norms->data + step, 1, 2e-5, 1e-4);
		tfm_clip_grad(m->grads, m->n_floats, norm, 1.0f);
		tfm_adam_step(&opt, m->params, m->grads, m->info, m->n_tensors, 1e-2f);
	}
	for (int i = 0; i < fx.n; i++)
	{
		const char *nm = fx.rec[i].name;
		const tfm_param_info *p;

		if (strncmp(nm, "adam.final.", 11) != 0)
			continue;
		p = tfm_model_find(m, nm + 11);
		CHECK(p != NULL, "%s: %s", file, nm);
		if (!p)
			continue;
		snprintf(what, sizeof(what), "%s %s", file, nm);
		check_close(what, m->params + p->offset, fx.rec[i].data, p->size, 1e-4, 1e-3);
	}
	tfm_adam_free(&opt);
	tfm_model_free(m);
	fixture_free(&fx);
}

/* ---- whole-model finite differences, dropout on ---- */

typedef struct
{
	tfm_model  *m;
	batch_ctx	bc;
	int			count;
} fd_ctx;

static double
model_loss(void *p)
{
	fd_ctx	   *c = p;
	int			count;

	tfm_model_forward(c->m, &c->bc.b, true, 777);
	return tfm_model_loss_backward(c->m, &c->bc.b, c->bc.eps, false, 1.0f, &count) / c->count;
}

/*
 * bert: the BERT-family options on a classifier fixture (token types 0 and 1, the
 * embedding norm, a position offset, a dense+tanh or dense+ReLU layer
 * after pooling), so their backward passes are checked too; 3: Marian's on
 * a seq2seq fixture (post-LN, SiLU, sinusoids in halves, the logits' bias)
 */
static void
test_model_fd_cfg(const char *file, float dropout, int bert)
{
	fixture		fx;
	tfm_config	c;
	fd_ctx		ctx;
	char		what[160];

	if (fixture_load(&fx, file) != 0)
		return;
	config_from_fixture(&c, &fx);
	if (bert == 1 || bert == 2)
	{
		c.type_vocab = 2;
		c.emb_norm = 1;
		c.pos_offset = bert == 1 ? 2 : 0;
		c.cls_pre = bert == 1 ? TFM_CLS_PRE_TANH : TFM_CLS_PRE_RELU;
		c.ln_eps = 1e-12f;
		c.activation = TFM_ACT_GELU;
		c.positions = TFM_POS_LEARNED;
		CHECK(tfm_config_check(&c) == NULL, "bert %d config: %s", bert, tfm_config_check(&c));
	}
	if (bert == 3)
	{
		c.norm = TFM_NORM_POST;
		c.positions = TFM_POS_SINUSOIDAL;
		c.sinus_halves = 1;
		c.activation = TFM_ACT_SILU;
		c.scale_embeddings = 1;
		c.out_bias = 1;
		CHECK(tfm_config_check(&c) == NULL, "marian config: %s", tfm_config_check(&c));
	}
	c.dropout = dropout;
	c.attn_dropout = dropout;
	ctx.m = tfm_model_create(&c);
	tfm_model_init(ctx.m, 5);
	/* larger weights than init gives, so that every path carries gradient */
	for (size_t i = 0; i < ctx.m->n_floats; i++)
		ctx.m->params[i] += 0.1f * ((float) ((i * 2654435761u) % 1000) / 500.0f - 1.0f);
	batch_from_fixture(&ctx.bc, &fx, &c);
	if (bert == 1 || bert == 2)
	{
		/* a pair's token types: 0 for each row's first half, 1 after */
		int32_t    *ty = malloc(sizeof(int32_t) * ctx.bc.b.B * ctx.bc.b.T);

		for (int r = 0; r < ctx.bc.b.B; r++)
			for (int t = 0; t < ctx.bc.b.T; t++)
				ty[r * ctx.bc.b.T + t] = t >= ctx.bc.b.T / 2;
		ctx.bc.b.types = ty;
	}
	tfm_model_forward(ctx.m, &ctx.bc.b, true, 777);
	tfm_model_loss_backward(ctx.m, &ctx.bc.b, ctx.bc.eps, false, 1.0f, &ctx.count);
	tfm_model_forward(ctx.m, &ctx.bc.b, true, 777);
	tfm_model_loss_backward(ctx.m, &ctx.bc.b, ctx.bc.eps, true, 1.0f / ctx.count, &ctx.count);
	{
		float	   *grads = malloc(ctx.m->n_floats * sizeof(float));

		memcpy(grads, ctx.m->grads, ctx.m->n_floats * sizeof(float));
		for (int i = 0; i < ctx.m->n_tensors; i++)
		{
			const tfm_param_info *p = &ctx.m->info[i];

			snprintf(what, sizeof(what), "%s%s dropout=%.1f %s", file,
					 bert == 3 ? " marian" : bert ? " bert" : "", dropout, p->name);
			check_fd(what, model_loss, &ctx, ctx.m->params + p->offset, grads + p->offset,
					 p->size, quick_mode() ? 3 : 12, 3e-4, 1e-3, 3e-2);
		}
		free(grads);
	}
	if (ctx.bc.b.types)
	{
		/* a type outside type_vocab is refused */
		int32_t    *ty = (int32_t *) ctx.bc.b.types;

		ty[0] = c.type_vocab;
		CHECK(tfm_model_forward(ctx.m, &ctx.bc.b, false, 0) == TFM_EBADID, "%s bert: type %d refused",
			  file, c.type_vocab);
		free(ty);
	}
	tfm_model_free(ctx.m);
	fixture_free(&fx);
}

static void
test_model_fd(const char *file, float dropout)
{
	test_model_fd_cfg(file, dropout, 0);
}

/* ---- repeatability: same seed, same threads → same bits ---- */

static void
test_repeatable(void)
{
	fixture		fx;
	tfm_config	c;
	batch_ctx	bc;
	float	   *first = NULL;

	if (fixture_load(&fx, "seq2seq.bin") != 0)
		return;
	config_from_fixture(&c, &fx);
	c.dropout = 0.1f;
	c.attn_dropout = 0.1f;
	batch_from_fixture(&bc, &fx, &c);
	for (int run = 0; run < 2; run++)
	{
		tfm_model  *m = tfm_model_create(&c);
		tfm_adam	opt;
		int			count;

		tfm_model_init(m, 42);
		tfm_adam_init(&opt, m->n_floats, 0.9f, 0.98f, 1e-9f, 0.01f, true);
		for (int step = 0; step < 3; step++)
		{
			tfm_model_zero_grad(m);
			tfm_model_forward(m, &bc.b, true, (uint64_t) step);
			tfm_model_loss_backward(m, &bc.b, bc.eps, true, 0.05f, &count);
			tfm_adam_step(&opt, m->params, m->grads, m->info, m->n_tensors, 1e-3f);
		}
		if (run == 0)
		{
			first = malloc(m->n_floats * sizeof(float));
			memcpy(first, m->params, m->n_floats * sizeof(float));
		}
		else
			CHECK(memcmp(first, m->params, m->n_floats * sizeof(float)) == 0,
				  "two runs with the same seed differ");
		tfm_adam_free(&opt);
		tfm_model_free(m);
	}
	free(first);
	fixture_free(&fx);
}

/* ---- a model over a borrowed parameter block (a shared mapping) ---- */

static int	released = 0;

static void
release_block(float *params, void *arg)
{
	CHECK(arg == (void *) &released, "release gets its argument");
	released++;
	free(params);
}

static void
test_borrowed(void)
{
	fixture		fx;
	tfm_config	c;
	batch_ctx	bc;
	tfm_model  *own,
			   *borrowed;
	float	   *block;
	size_t		rows;

	if (fixture_load(&fx, "lm_pre_gelu.bin") != 0)
		return;
	config_from_fixture(&c, &fx);
	batch_from_fixture(&bc, &fx, &c);
	own = tfm_model_create(&c);
	tfm_model_init(own, 7);
	block = aligned_alloc(64, (((own->n_floats + 16) * sizeof(float)) + 63) & ~(size_t) 63);
	memcpy(block, own->params, own->n_floats * sizeof(float));
	borrowed = tfm_model_create_borrowed(&c, block, release_block, &released);
	CHECK(borrowed != NULL && borrowed->params == block, "the borrowed block is the parameters");
	CHECK(borrowed->w.tok_emb == block + tfm_model_find(own, "tok_emb")->offset,
		  "weights point into the borrowed block");
	tfm_model_forward(own, &bc.b, false, 0);
	tfm_model_forward(borrowed, &bc.b, false, 0);
	rows = (size_t) bc.b.B * bc.b.T;
	CHECK(memcmp(own->logits, borrowed->logits, rows * c.vocab * sizeof(float)) == 0,
		  "a borrowed block gives the same logits");
	tfm_model_free(borrowed);
	CHECK(released == 1, "the block is released once, by its release function (%d)", released);
	tfm_model_free(own);
	fixture_free(&fx);
}

/* ---- bf16, int8 and int4 inference against fp32, on every fixture model ---- */

/*
 * The accuracy contract: logits of a bf16 pass within BF16_TOL · max(1,
 * max|logit|) of the fp32 pass, of an int8 pass within INT8_TOL · that, of
 * an int4 pass (GGUF Q4_0 weights) within INT4_TOL · that and its
 * root-mean-square difference within INT4_RMS_TOL of the fp32 logits'
 * spread (their standard deviation): these fixtures are small random models
 * whose products sum over 16-64 terms, one or two blocks of 32, where 16
 * levels a block show (measured worst: 0.40 and 0.24);
 * back at fp32 the logits are bit-identical to the first fp32 pass.
 * Printed: the measured worst relative differences.
 */
#define BF16_TOL 0.02
#define INT8_TOL 0.05
#define INT4_TOL 0.5
#define INT4_RMS_TOL 0.35

static double
max_rel_diff(const float *a, const float *b, size_t n)
{
	double		scale = 1.0,
				worst = 0.0;

	for (size_t i = 0; i < n; i++)
		if (fabs(a[i]) > scale)
			scale = fabs(a[i]);
	for (size_t i = 0; i < n; i++)
		if (fabs((double) a[i] - b[i]) > worst)
			worst = fabs((double) a[i] - b[i]);
	return worst / scale;
}

/* the root-mean-square difference relative to the spread (standard deviation) of a */
static double
rms_rel_spread(const float *a, const float *b, size_t n)
{
	double		mean = 0.0,
				var = 0.0,
				err = 0.0;

	for (size_t i = 0; i < n; i++)
		mean += a[i];
	mean /= (double) n;
	for (size_t i = 0; i < n; i++)
	{
		var += (a[i] - mean) * (a[i] - mean);
		err += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
	}
	return var > 0.0 ? sqrt(err / var) : sqrt(err / (double) n);
}

static void
release_copy(void *block, void *arg)
{
	(*(int *) arg)++;
	free(block);
}

/*
 * Packed copies shared between processes: a second model with the same
 * weights, laid over a copy of m's packed block (as a session maps another's
 * file) without packing, gives the same logits bit for bit; the block is
 * released once, when its copies go.
 */
static void
check_shared_block(const tfm_model *m, tfm_batch *b, tfm_precision p, const float *want,
				   size_t n, const char *file)
{
	size_t		bytes = tfm_model_precision_block_bytes(m, p);
	void	   *copy = aligned_alloc(64, bytes);
	tfm_model  *m2 = tfm_model_create(&m->cfg);
	int			released = 0;

	CHECK(bytes == tfm_model_precision_bytes(m), "%s %s: block bytes", file, tfm_precision_name(p));
	memcpy(copy, tfm_model_precision_block(m), bytes);
	memcpy(m2->params, m->params, m->n_floats * sizeof(float));
	CHECK(tfm_model_set_precision_from(m2, p, copy, release_copy, &released) == 0 &&
		  tfm_model_precision(m2) == p, "%s %s: laid over the block", file, tfm_precision_name(p));
	tfm_model_forward(m2, b, false, 0);
	CHECK(memcmp(want, m2->logits, n * sizeof(float)) == 0,
		  "%s %s: logits over a shared block differ", file, tfm_precision_name(p));
	CHECK(released == 0, "%s: released early", file);
	tfm_model_free(m2);
	CHECK(released == 1, "%s %s: the block released %d times", file, tfm_precision_name(p), released);
}

static void
test_precision(const char *file, bool fallback)
{
	fixture		fx;
	tfm_config	c;
	batch_ctx	bc;
	tfm_model  *m;
	size_t		n;
	float	   *ref,
			   *low;

	if (fixture_load(&fx, file) != 0)
		return;
	config_from_fixture(&c, &fx);
	batch_from_fixture(&bc, &fx, &c);
	tfm_lowp_force_fallback(fallback);
	m = tfm_model_create(&c);
	tfm_model_init(m, 11);
	tfm_model_forward(m, &bc.b, false, 0);
	if (c.task == TFM_TASK_CLASSIFY)
		n = (size_t) bc.b.B * c.n_classes;
	else
		n = (size_t) bc.b.B * (c.task == TFM_TASK_SEQ2SEQ ? bc.b.Tt : bc.b.T) *
			(c.task == TFM_TASK_SEQ2SEQ && c.tgt_vocab > 0 ? c.tgt_vocab : c.vocab);
	ref = malloc(n * sizeof(float));
	low = malloc(n * sizeof(float));
	memcpy(ref, m->logits, n * sizeof(float));
	for (int p = TFM_PREC_BF16; p <= TFM_PREC_INT4; p++)
	{
		double		diff,
					tol = p == TFM_PREC_BF16 ? BF16_TOL : p == TFM_PREC_INT8 ? INT8_TOL : INT4_TOL;

		CHECK(tfm_model_set_precision(m, (tfm_precision) p) == 0, "%s: packing", file);
		CHECK(tfm_model_precision(m) == (tfm_precision) p && tfm_model_precision_bytes(m) > 0,
			  "%s: packed for %s", file, tfm_precision_name(p));
		tfm_model_forward(m, &bc.b, false, 0);
		memcpy(low, m->logits, n * sizeof(float));
		diff = max_rel_diff(ref, low, n);
		printf("  %-32s %s %s: max |logit - fp32| / max(1, max|fp32 logit|) = %.5f, "
			   "rms / spread %.5f\n", file, tfm_precision_name(p), fallback ? "fallback" : "fast path",
			   diff, rms_rel_spread(ref, low, n));
		CHECK(diff <= tol, "%s %s: logits differ from fp32 by %.5f (> %.3f)", file,
			  tfm_precision_name(p), diff, tol);
		if (p == TFM_PREC_INT4)
			CHECK(rms_rel_spread(ref, low, n) <= INT4_RMS_TOL,
				  "%s int4: rms difference %.5f of the logits' spread (> %.2f)", file,
				  rms_rel_spread(ref, low, n), INT4_RMS_TOL);
		/* on AVX2 and NEON, bf16 passes of more than a few rows run fp32 (lowp_set.c): maybe all of them */
		if (p != TFM_PREC_BF16 || (strcmp(tfm_lowp_bf16_kernel(), "avx2") != 0 &&
								   strcmp(tfm_lowp_bf16_kernel(), "neon") != 0))
			CHECK(memcmp(ref, low, n * sizeof(float)) != 0, "%s %s: the packed path ran", file,
				  tfm_precision_name(p));
		else if (c.task != TFM_TASK_CLASSIFY)	/* (the classifier's head has B rows) */
			CHECK(memcmp(ref, low, n * sizeof(float)) == 0, "%s bf16 on %s: fp32's logits", file,
				  tfm_lowp_bf16_kernel());
		check_shared_block(m, &bc.b, (tfm_precision) p, low, n, file);
	}
	CHECK(tfm_model_set_precision(m, TFM_PREC_FP32) == 0 && m->lowp == NULL, "%s: back to fp32", file);
	tfm_model_forward(m, &bc.b, false, 0);
	CHECK(memcmp(ref, m->logits, n * sizeof(float)) == 0, "%s: fp32 again is bit-identical", file);
	/* a training pass of a packed model is fp32 */
	tfm_model_set_precision(m, TFM_PREC_BF16);
	tfm_model_forward(m, &bc.b, true, 0);
	memcpy(low, m->logits, n * sizeof(float));
	tfm_model_set_precision(m, TFM_PREC_FP32);
	tfm_model_forward(m, &bc.b, true, 0);
	CHECK(memcmp(low, m->logits, n * sizeof(float)) == 0, "%s: training passes stay fp32", file);
	tfm_lowp_force_fallback(false);
	free(ref);
	free(low);
	tfm_model_free(m);
	fixture_free(&fx);
}

/* ---- gradient accumulation: two micro-batches = one batch ---- */

static void
test_accumulation(void)
{
	fixture		fx;
	tfm_config	c;
	batch_ctx	bc;
	tfm_model  *m;
	float	   *whole;
	tfm_batch	half[2];
	int			total = 0,
				cnt;

	if (fixture_load(&fx, "classify_post_mean.bin") != 0)
		return;
	config_from_fixture(&c, &fx);
	batch_from_fixture(&bc, &fx, &c);
	m = tfm_model_create(&c);
	tfm_model_init(m, 9);
	/* the whole batch (3 rows) */
	tfm_model_forward(m, &bc.b, true, 0);
	tfm_model_loss_backward(m, &bc.b, 0.0f, true, 1.0f / bc.b.B, &cnt);
	whole = malloc(m->n_floats * sizeof(float));
	memcpy(whole, m->grads, m->n_floats * sizeof(float));
	/* rows 0-1 and row 2 as two micro-batches, each scaled by 1/3 */
	half[0] = bc.b;
	half[0].B = 2;
	half[1] = bc.b;
	half[1].B = 1;
	half[1].input = bc.b.input + 2 * bc.b.T;
	half[1].labels = bc.b.labels + 2;
	tfm_model_zero_grad(m);
	for (int i = 0; i < 2; i++)
	{
		tfm_model_forward(m, &half[i], true, 0);
		tfm_model_loss_backward(m, &half[i], 0.0f, true, 1.0f / 3.0f, &cnt);
		total += cnt;
	}
	CHECK(total == 3, "micro-batches count 3 targets, not %d", total);
	check_close("two micro-batches = one batch", m->grads, whole, m->n_floats, 1e-6, 1e-4);
	free(whole);
	tfm_model_free(m);
	fixture_free(&fx);
}

/* ---- Adam with coupled L2 against the formula, one parameter ---- */

static void
test_adam_l2(void)
{
	tfm_param_info info = {"w", 2, {1, 1}, 0, 1, true};
	float		x = 0.5f,
				g = 0.2f;
	tfm_adam	opt;
	double		m = 0,
				v = 0,
				xr = 0.5;

	tfm_adam_init(&opt, 1, 0.9f, 0.999f, 1e-8f, 0.1f, false);
	for (int t = 1; t <= 3; t++)
	{
		double		gi = g + 0.1 * xr;	/* L2 in the gradient */

		m = 0.9 * m + 0.1 * gi;
		v = 0.999 * v + 0.001 * gi * gi;
		xr -= 0.01 * (m / (1 - pow(0.9, t))) / (sqrt(v / (1 - pow(0.999, t))) + 1e-8);
		tfm_adam_step(&opt, &x, &g, &info, 1, 0.01f);
	}
	CHECK(fabs(x - xr) < 1e-6, "Adam with L2: %.8f vs %.8f", x, xr);
	tfm_adam_free(&opt);
}

/* ---- schedules ---- */

static void
test_schedules(void)
{
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_CONSTANT, 1.0f, 5, 10, 100) - 0.5f) < 1e-7f, "warmup");
	CHECK(tfm_lr_at(TFM_SCHED_CONSTANT, 1.0f, 50, 10, 100) == 1.0f, "constant");
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_LINEAR, 1.0f, 55, 10, 100) - 0.5f) < 1e-6f, "linear mid");
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_LINEAR, 1.0f, 100, 10, 100)) < 1e-7f, "linear end");
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_COSINE, 1.0f, 55, 10, 100) - 0.5f) < 1e-6f, "cosine mid");
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_COSINE, 1.0f, 10, 10, 100) - 1.0f) < 1e-7f, "cosine peak");
	CHECK(fabsf(tfm_lr_at(TFM_SCHED_COSINE, 1.0f, 100, 10, 100)) < 1e-7f, "cosine end");
	/* the paper: d^-0.5·min(step^-0.5, step·warmup^-1.5), d = 512, warmup 4000 */
	for (int step = 1; step <= 20000; step += 997)
	{
		double		d = 512,
					w = 4000;
		double		paper = pow(d, -0.5) * fmin(pow(step, -0.5), step * pow(w, -1.5));
		float		peak = (float) (pow(d, -0.5) * pow(w, -0.5));
		float		got = tfm_lr_at(TFM_SCHED_INVSQRT, peak, step, 4000, 0);

		CHECK(fabs(got - paper) <= 1e-6 * paper + 1e-12, "inverse sqrt at %d: %g vs %g",
			  step, got, paper);
	}
}

/*
 * tfm_model_init_some gives the tensors it names tfm_model_init's values
 * and leaves the others as they were; tfm_model_release_values gives a
 * mapped tensor's pages back (they read as zeros) and touches no other
 * tensor (an import of a GGUF file keeps its blocks so, gguf_import.c)
 */
static void
test_init_some_release(void)
{
	tfm_config	c;
	tfm_model  *all,
			   *some;
	bool	   *which;
	size_t		page = 4096;

	tfm_config_defaults(&c, TFM_TASK_LM);
	c.vocab = 1000;
	c.d_model = 128;
	c.heads = 4;
	c.d_ff = 512;
	c.dec_layers = 2;
	c.max_len = 64;
	all = tfm_model_create(&c);
	some = tfm_model_create(&c);
	CHECK(all && some && some->params_mapped > 0, "a model of 2 MB has its parameters mapped");
	if (!all || !some)
		return;
	tfm_model_init(all, 42);
	which = calloc(some->n_tensors, 1);
	for (int i = 0; i < some->n_tensors; i += 2)
		which[i] = true;
	tfm_model_init_some(some, 42, which);
	for (int i = 0; i < some->n_tensors; i++)
	{
		const tfm_param_info *p = &some->info[i];
		bool		zero = true;

		for (size_t j = 0; j < p->size; j++)
			zero = zero && some->params[p->offset + j] == 0.0f;
		if (which[i])
			CHECK(memcmp(some->params + p->offset, all->params + p->offset, sizeof(float) * p->size) == 0,
				  "init_some: tensor %s has tfm_model_init's values", p->name);
		else
			CHECK(zero, "init_some: tensor %s left as it was", p->name);
	}
	/* the embedding's pages given back: zeros inside, its neighbours' values intact */
	for (int i = 0; i < all->n_tensors; i++)
	{
		const tfm_param_info *p = &all->info[i];
		size_t		zeros = 0;

		if (strcmp(p->name, "tok_emb") != 0)
			continue;
		tfm_model_release_values(all, i);
		for (size_t j = 0; j < p->size; j++)
			zeros += all->params[p->offset + j] == 0.0f;
		CHECK(zeros + 2 * page / sizeof(float) >= p->size, "release: %zu of %zu values zero", zeros, p->size);
	}
	tfm_model_init_some(some, 42, NULL);
	for (int i = 0; i < all->n_tensors; i++)
		if (strcmp(all->info[i].name, "tok_emb") != 0)
			CHECK(memcmp(some->params + all->info[i].offset, all->params + all->info[i].offset,
						 sizeof(float) * all->info[i].size) == 0,
				  "release: tensor %s untouched", all->info[i].name);
	free(which);
	tfm_model_free(all);
	tfm_model_free(some);
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
	for (int threads = 1; threads <= 2; threads++)
	{
		tfm_set_threads(threads);
		for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
			test_fixture(fixtures[i]);
	}
	tfm_set_threads(2);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		test_model_fd(fixtures[i], i % 2 ? 0.0f : 0.2f);
	for (int bert = 1; bert <= 2; bert++)
		for (int j = 0; j < 2; j++)
			test_model_fd_cfg(fixtures[j], bert == 1 ? 0.2f : 0.0f, bert);
	test_model_fd_cfg("seq2seq.bin", 0.2f, 3);	/* Marian's options, dropout on */
	test_repeatable();
	test_init_some_release();
	test_borrowed();
	for (int fallback = 0; fallback <= 1; fallback++)
		for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
			test_precision(fixtures[i], fallback);
	test_accumulation();
	test_adam_l2();
	test_schedules();
	printf("BLIS kernels: %s (%s)\n", tfm_blas_arch(), tfm_blas_arch_reason());
	return check_summary("test_model");
}
