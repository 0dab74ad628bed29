/*
 * test_mixed.c — mixed-precision (bf16) training against fp32 on the
 * fixture models (every task; tied and untied output heads; post- and
 * pre-LN; the classifier's pooler), on the fast path and on the fallback.
 *
 * Bounds (bf16 keeps 8 significant bits: relative rounding 2^-9 of each
 * operand, summed in fp32):
 *   - the loss within 1 % of fp32's;
 *   - every parameter gradient within 5 % of fp32's in relative Frobenius
 *     norm, or within twice what fp32 itself moves when the weights move by
 *     rounding noise (each weight times 1 + δ, δ uniform in ±2^-8, the
 *     worst of 3 draws) if that is more: ‖g_bf16 − g_fp32‖ ≤ max(0.05·‖g‖,
 *     2·s) + 1e-6·√n.  (The second term is for ReLU models, where a
 *     pre-activation near 0 flips its mask under any rounding: on the
 *     post-LN ReLU LM fixture, noise of 2^-9 alone moves an ff1 gradient by
 *     8 %.)  And the whole gradient's cosine with fp32's ≥ 0.999;
 *   - and it differs from fp32's: the products really ran in bf16.
 * The fast path and the fallback agree within the same bounds.  Dropping
 * the training copies gives fp32's gradients again, bit for bit.  The
 * weights are rounded once per step: changing the fp32 weights without a
 * repack changes nothing; the repack does.  Five trainer steps at bf16 end
 * within 2 % of fp32's loss.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "tfm/train.h"

#include "model_fixtures.h"

static void
batch_from_fixture(tfm_batch *b, const fixture *fx, const tfm_config *c)
{
	const fx_record *in = fixture_get(fx, "input");

	memset(b, 0, sizeof(*b));
	b->B = in->dims[0];
	b->T = in->dims[1];
	b->input = in->data;
	if (c->task == TFM_TASK_CLASSIFY)
		b->labels = fixture_get(fx, "labels")->data;
	else
		b->target = fixture_get(fx, "target")->data;
	if (c->task == TFM_TASK_SEQ2SEQ)
	{
		const fx_record *di = fixture_get(fx, "dec_input");

		b->Tt = di->dims[1];
		b->dec_input = di->data;
	}
}

/* mean loss; its gradients in m->grads (zeroed first) */
static double
loss_and_grads(tfm_model *m, const tfm_batch *b)
{
	int			count = tfm_batch_targets(&m->cfg, b),
				c;
	double		sum;

	tfm_model_zero_grad(m);
	tfm_model_forward(m, b, true, 0);
	sum = tfm_model_loss_backward(m, b, 0.0f, true, 1.0f / count, &c);
	return sum / count;
}

/*
 * s[t] = the largest change of tensor t's fp32 gradient (Frobenius) when
 * every weight is multiplied by 1 + δ, δ uniform in ±2^-8, over 3 draws
 * (m->params restored after)
 */
static double *
sensitivity(tfm_model *m, const tfm_batch *b, const float *g)
{
	double	   *s = calloc(m->n_tensors, sizeof(double));
	float	   *w = malloc(m->n_floats * sizeof(float));
	tfm_rng		rng;

	tfm_rng_seed(&rng, 3);
	memcpy(w, m->params, m->n_floats * sizeof(float));
	for (int trial = 0; trial < 3; trial++)
	{
		for (size_t j = 0; j < m->n_floats; j++)
			m->params[j] = w[j] * (1.0f + (tfm_rng_uniform(&rng) * 2.0f - 1.0f) * ldexpf(1.0f, -8));
		loss_and_grads(m, b);
		for (int i = 0; i < m->n_tensors; i++)
		{
			const tfm_param_info *p = &m->info[i];
			double		e = 0.0;

			for (size_t j = p->offset; j < p->offset + p->size; j++)
				e += ((double) m->grads[j] - g[j]) * ((double) m->grads[j] - g[j]);
			s[i] = fmax(s[i], sqrt(e));
		}
	}
	memcpy(m->params, w, m->n_floats * sizeof(float));
	free(w);
	return s;
}

/* got against ref: every tensor and the whole, within the stated bounds (sens may be NULL) */
static void
check_grads(const char *what, const tfm_model *m, const float *got, const float *ref,
			const double *sens)
{
	double		dot = 0.0,
				ng = 0.0,
				nr = 0.0,
				worst = 0.0;
	const char *worst_name = "";
	bool		differs = false;

	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		double		e = 0.0,
					r = 0.0;

		for (size_t j = p->offset; j < p->offset + p->size; j++)
		{
			double		d = (double) got[j] - ref[j];

			e += d * d;
			r += (double) ref[j] * ref[j];
			dot += (double) got[j] * ref[j];
			ng += (double) got[j] * got[j];
			differs |= got[j] != ref[j];
		}
		e = sqrt(e) / (fmax(0.05 * sqrt(r), sens ? 2.0 * sens[i] : 0.0) + 1e-6 * sqrt((double) p->size));
		if (e > worst)
		{
			worst = e;
			worst_name = p->name;
		}
	}
	nr = 0.0;
	for (size_t j = 0; j < m->n_floats; j++)
		nr += (double) ref[j] * ref[j];
	CHECK(worst <= 1.0, "%s: gradient of %s off by %.3g of the bound", what, worst_name, worst);
	CHECK(dot / sqrt(ng * nr) >= 0.999, "%s: gradient cosine %.6f", what, dot / sqrt(ng * nr));
	CHECK(differs, "%s: gradients identical to fp32's (bf16 did not run)", what);
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  %s: worst tensor %s at %.3f of the bound, cosine %.6f\n", what, worst_name,
			   worst, dot / sqrt(ng * nr));
}

static void
test_fixture(const char *file, bool fallback)
{
	fixture		fx;
	tfm_config	c;
	tfm_model  *m;
	tfm_batch	b;
	float	   *g32,
			   *g16,
			   *logits;
	double		l32,
				l16,
			   *sens;
	char		what[160];
	size_t		nlog;

	if (fixture_load(&fx, file) != 0)
	{
		CHECK(0, "fixture %s", file);
		return;
	}
	config_from_fixture(&c, &fx);
	m = tfm_model_create(&c);
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		const fx_record *r = fixture_get(&fx, p->name);

		if (r && r->n == p->size)
			memcpy(m->params + p->offset, r->data, p->size * sizeof(float));
	}
	batch_from_fixture(&b, &fx, &c);
	tfm_lowp_force_fallback(fallback);
	snprintf(what, sizeof(what), "%s (%s)", file, fallback ? "fallback" : tfm_lowp_bf16_kernel());

	l32 = loss_and_grads(m, &b);
	g32 = malloc(m->n_floats * sizeof(float));
	g16 = malloc(m->n_floats * sizeof(float));
	memcpy(g32, m->grads, m->n_floats * sizeof(float));
	sens = sensitivity(m, &b, g32);

	CHECK(tfm_model_set_train_precision(m, TFM_PREC_INT8) == TFM_EUNSUPPORTED, "%s: int8 training refused", what);
	CHECK(tfm_model_set_train_precision(m, TFM_PREC_BF16) == 0 &&
		  tfm_model_train_precision(m) == TFM_PREC_BF16, "%s: bf16 copies", what);
	tfm_model_train_repack(m);
	l16 = loss_and_grads(m, &b);
	memcpy(g16, m->grads, m->n_floats * sizeof(float));
	CHECK(fabs(l16 - l32) <= 0.01 * fabs(l32), "%s: bf16 loss %.6f vs fp32 %.6f", what, l16, l32);
	check_grads(what, m, g16, g32, sens);

	/* the weights are rounded once per step: without a repack, new fp32 weights change nothing */
	nlog = (size_t) (c.task == TFM_TASK_CLASSIFY ? b.B * c.n_classes :
					 b.B * (c.task == TFM_TASK_LM ? b.T : b.Tt) *
					 (c.task == TFM_TASK_SEQ2SEQ && c.tgt_vocab > 0 ? c.tgt_vocab : c.vocab));
	logits = malloc(nlog * sizeof(float));
	tfm_model_forward(m, &b, true, 0);
	memcpy(logits, m->logits, nlog * sizeof(float));
	{
		const tfm_param_info *p = m->info;
		bool		moved = false;

		/* every matrix of the first block's and the head's products, scaled by 1.01 */
		for (int i = 0; i < m->n_tensors; i++)
			if (m->info[i].ndim == 2 && strstr(m->info[i].name, "emb") == NULL)
			{
				p = &m->info[i];
				for (size_t j = p->offset; j < p->offset + p->size; j++)
					m->params[j] *= 1.01f;
				moved = true;
			}
		CHECK(moved, "%s: no matrix to move", what);
	}
	/* (the forward pass reads biases, norms and embeddings in fp32: those did not move) */
	tfm_model_forward(m, &b, true, 0);
	CHECK(memcmp(logits, m->logits, nlog * sizeof(float)) == 0,
		  "%s: logits changed without a repack (weights rounded per product?)", what);
	tfm_model_train_repack(m);
	tfm_model_forward(m, &b, true, 0);
	CHECK(memcmp(logits, m->logits, nlog * sizeof(float)) != 0,
		  "%s: logits unchanged after the repack", what);
	for (int i = 0; i < m->n_tensors; i++)
		if (m->info[i].ndim == 2 && strstr(m->info[i].name, "emb") == NULL)
			for (size_t j = m->info[i].offset; j < m->info[i].offset + m->info[i].size; j++)
				m->params[j] /= 1.01f;

	/* without the copies: fp32 again, bit for bit (the weights: from the fixture again) */
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		const fx_record *r = fixture_get(&fx, p->name);

		if (r && r->n == p->size)
			memcpy(m->params + p->offset, r->data, p->size * sizeof(float));
	}
	CHECK(tfm_model_set_train_precision(m, TFM_PREC_FP32) == 0 && m->lowp_train == NULL,
		  "%s: copies dropped", what);
	CHECK(loss_and_grads(m, &b) == l32 &&
		  memcmp(g32, m->grads, m->n_floats * sizeof(float)) == 0,
		  "%s: fp32 after bf16 differs from fp32", what);

	tfm_lowp_force_fallback(false);
	free(logits);
	free(sens);
	free(g32);
	free(g16);
	tfm_model_free(m);
	fixture_free(&fx);
}

/* the fast path and the fallback: within the bounds of each other */
static void
test_paths_agree(const char *file)
{
	fixture		fx;
	tfm_config	c;
	tfm_model  *m;
	tfm_batch	b;
	float	   *g[2];
	char		what[160];

	if (fixture_load(&fx, file) != 0)
		return;
	config_from_fixture(&c, &fx);
	m = tfm_model_create(&c);
	tfm_model_init(m, 11);
	batch_from_fixture(&b, &fx, &c);
	tfm_model_set_train_precision(m, TFM_PREC_BF16);
	tfm_model_train_repack(m);
	for (int f = 0; f < 2; f++)
	{
		tfm_lowp_force_fallback(f == 1);
		loss_and_grads(m, &b);
		g[f] = malloc(m->n_floats * sizeof(float));
		memcpy(g[f], m->grads, m->n_floats * sizeof(float));
	}
	tfm_lowp_force_fallback(false);
	snprintf(what, sizeof(what), "%s %s vs fallback", file, tfm_lowp_bf16_kernel());
	if (strcmp(tfm_lowp_bf16_kernel(), "fallback") != 0)
		check_grads(what, m, g[0], g[1], NULL);
	free(g[0]);
	free(g[1]);
	tfm_model_free(m);
	fixture_free(&fx);
}

/* five optimizer steps through the trainer: bf16 ends near fp32 */
static void
test_trainer(const char *file)
{
	fixture		fx;
	tfm_config	c;
	tfm_batch	b;
	double		last[2] = {0, 0};

	if (fixture_load(&fx, file) != 0)
		return;
	config_from_fixture(&c, &fx);
	batch_from_fixture(&b, &fx, &c);
	for (int prec = 0; prec < 2; prec++)
	{
		tfm_model  *m = tfm_model_create(&c);
		tfm_trainer tr;
		tfm_train_opts o;

		tfm_model_init(m, 5);
		memset(&o, 0, sizeof(o));
		o.lr = 3e-3f;
		o.schedule = TFM_SCHED_CONSTANT;
		o.total_steps = 5;
		o.clip = 1.0f;
		o.beta1 = 0.9f;
		o.beta2 = 0.999f;
		o.eps = 1e-8f;
		o.weight_decay = 0.01f;
		o.decoupled = true;
		o.precision = prec ? TFM_PREC_BF16 : TFM_PREC_FP32;
		CHECK(tfm_trainer_init(&tr, m, &o) == 0, "%s: trainer", file);
		CHECK(tfm_model_train_precision(m) == o.precision, "%s: trainer's precision", file);
		for (int s = 0; s < 5; s++)
		{
			double		sum;
			int			n;

			CHECK(tfm_trainer_step(&tr, &b, 1, &sum, &n) == TFM_STEP_OK, "%s: step %d", file, s);
			last[prec] = sum / n;
		}
		tfm_trainer_free(&tr);
		CHECK(m->lowp_train == NULL, "%s: the trainer drops its copies", file);
		tfm_model_free(m);
	}
	CHECK(fabs(last[1] - last[0]) <= 0.02 * fabs(last[0]),
		  "%s: loss after 5 steps bf16 %.6f vs fp32 %.6f", file, last[1], last[0]);
	{
		tfm_model  *m = tfm_model_create(&c);
		tfm_trainer tr;
		tfm_train_opts o;

		memset(&o, 0, sizeof(o));
		o.precision = TFM_PREC_INT8;
		CHECK(tfm_trainer_init(&tr, m, &o) == TFM_EUNSUPPORTED, "%s: int8 training refused", file);
		tfm_model_free(m);
	}
	fixture_free(&fx);
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
	printf("  bf16 products: %s (%s)\n", tfm_lowp_bf16_kernel(), tfm_lowp_reason());
	for (int threads = 1; threads <= 2; threads++)
	{
		tfm_set_threads(threads);
		for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		{
			if (!quick_mode() && strcmp(tfm_lowp_bf16_kernel(), "fallback") != 0)
				test_fixture(fixtures[i], false);
			test_fixture(fixtures[i], true);
		}
	}
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
	{
		if (!quick_mode())
			test_paths_agree(fixtures[i]);
		test_trainer(fixtures[i]);
	}
	return check_summary("test_mixed");
}
