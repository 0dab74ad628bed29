/*
 * test_task_heads.c — the losses the task heads train with and their
 * backward passes: one logit's binary cross-entropy (a cross-encoder's
 * relevance), a question-answering head's start/end cross-entropy and a
 * token classifier's per-token cross-entropy (ignored tokens, padding),
 * against PyTorch (test/reference/task_losses_reference.py), then through
 * whole BERT-family models (token types, the embedding norm, dropout on)
 * by finite differences, and a padded row's loss against its loss alone.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/model.h"
#include "tfm/train.h"

/* ---- the losses against PyTorch ---- */

static const float bce_z[] = {-2.5f, -0.3f, 0.0f, 0.7f, 3.1f, 40.0f, -40.0f};
static const float bce_y[] = {0.0f, 1.0f, 0.25f, 1.0f, 0.0f, 1.0f, 0.5f};
static const double bce_sum = 25.1736421761;
static const float bce_grad[] = {0.0758581800212f, -0.574442516812f, 0.25f, -0.331812227832f,
0.956892745059f, 0.0f, -0.5f};

static const float span_z[] = {0.3f, -1.2f, 1.5f, 0.4f, -0.7f, 2.2f, 0.1f, 0.0f,
2.0f, 0.5f, -0.4f, -0.9f, 0.8f, 1.7f, 9.0f, 9.0f};
static const uint8_t span_pad[] = {0, 0, 0, 0, 0, 0, 0, 1};
static const int32_t span_y[] = {1, 2, 0, 2};
static const double span_sum = 0.712534668379;
static const float span_grad[] = {0.090798034727f, 0.0127429931434f, -0.198539908352f,
	0.0631164582231f, 0.0334027302748f, -0.118167678548f, 0.07433914335f, 0.0423082271817f,
	-0.140781931145f, 0.109487918974f, 0.0325875279911f, 0.0269993884072f, 0.108194403154f,
-0.136487307381f, 0.0f, 0.0f};

typedef struct
{
	float	   *z;
	int			which;			/* 0 bce, 1 spans */
} loss_ctx;

static double
loss_only(void *p)
{
	loss_ctx   *c = p;
	int			n;

	return c->which == 0 ? tfm_bce_logits(NULL, &n, c->z, bce_y, 7, 1.0f) :
		tfm_span_cross_entropy(NULL, &n, c->z, span_y, span_pad, 2, 4, 1.0f);
}

static void
test_losses(void)
{
	float		z[16],
				g[16],
				bad[7];
	int			n;
	double		s;
	loss_ctx	c = {z, 0};

	memcpy(z, bce_z, sizeof(bce_z));
	s = tfm_bce_logits(g, &n, z, bce_y, 7, 1.0f);
	CHECK(fabs(s - bce_sum) <= 1e-5 * bce_sum && n == 7, "bce sum %.9g (%d) vs %.9g", s, n, bce_sum);
	check_close("bce gradient", g, bce_grad, 7, 1e-6, 1e-5);
	check_fd("bce fd", loss_only, &c, z, g, 5, 0, 1e-3, 1e-4, 1e-3);
	/* in place, scaled */
	s = tfm_bce_logits(z, &n, z, bce_y, 7, 0.5f);
	for (int i = 0; i < 7; i++)
		CHECK(fabsf(z[i] - 0.5f * bce_grad[i]) <= 1e-6f, "bce in place [%d] %g", i, z[i]);
	/* a target outside [0, 1] or NaN: nothing written */
	memcpy(bad, bce_y, sizeof(bad));
	bad[3] = 1.5f;
	memcpy(g, bce_z, sizeof(bce_z));
	s = tfm_bce_logits(g, &n, bce_z, bad, 7, 1.0f);
	CHECK(isnan(s) && n == -1 && g[0] == bce_z[0], "bce target 1.5 refused");
	bad[3] = NAN;
	s = tfm_bce_logits(NULL, &n, bce_z, bad, 7, 1.0f);
	CHECK(isnan(s) && n == -1, "bce target NaN refused");

	memcpy(z, span_z, sizeof(span_z));
	c.which = 1;
	s = tfm_span_cross_entropy(g, &n, z, span_y, span_pad, 2, 4, 1.0f);
	CHECK(fabs(s - span_sum) <= 1e-5 * span_sum && n == 2, "span sum %.9g (%d) vs %.9g", s, n,
		  span_sum);
	check_close("span gradient", g, span_grad, 16, 1e-6, 1e-5);
	check_fd("span fd", loss_only, &c, z, g, 14, 0, 1e-3, 1e-4, 1e-3);
	s = tfm_span_cross_entropy(z, &n, z, span_y, span_pad, 2, 4, 2.0f);
	for (int i = 0; i < 16; i++)
		CHECK(fabsf(z[i] - 2.0f * span_grad[i]) <= 2e-6f, "span in place [%d] %g", i, z[i]);
	{
		int32_t		on_pad[] = {1, 2, 0, 3},
					past[] = {1, 4, 0, 0},
					neg[] = {-1, 0, 0, 0};

		CHECK(isnan(tfm_span_cross_entropy(NULL, &n, span_z, on_pad, span_pad, 2, 4, 1.0f)) &&
			  n == -1, "a span on a pad refused");
		CHECK(isnan(tfm_span_cross_entropy(NULL, &n, span_z, past, span_pad, 2, 4, 1.0f)) &&
			  n == -1, "a span past T refused");
		CHECK(isnan(tfm_span_cross_entropy(NULL, &n, span_z, neg, span_pad, 2, 4, 1.0f)) &&
			  n == -1, "a negative span refused");
	}
}

/* ---- whole models ---- */

enum
{
	HEAD_SCORE,					/* one logit, BCE against scores, pairs with token types */
	HEAD_TAGS,					/* a label per token */
	HEAD_SPANS					/* a start and an end logit per token */
};

#define FB 3
#define FT 7

/* the batch's rows: lengths 7, 5 and 4, padded with id 0 */
static const int row_len[FB] = {7, 5, 4};

typedef struct
{
	tfm_model  *m;
	tfm_batch	b;
	int32_t		input[FB * FT],
				types[FB * FT],
				tags[FB * FT],
				spans[FB * 2];
	float		scores[FB];
	int			count;
} model_ctx;

static void
make_config(tfm_config *c, int head)
{
	tfm_config_defaults(c, TFM_TASK_CLASSIFY);
	c->vocab = 23;
	c->d_model = 16;
	c->heads = 4;
	c->enc_layers = 2;
	c->d_ff = 24;
	c->max_len = 12;
	c->norm = TFM_NORM_POST;
	c->activation = TFM_ACT_GELU;
	c->pooling = TFM_POOL_CLS;
	c->type_vocab = 2;
	c->emb_norm = 1;
	c->ln_eps = 1e-12f;
	c->tie = 0;
	c->dropout = 0.2f;
	c->attn_dropout = 0.2f;
	c->n_classes = head == HEAD_SCORE ? 1 : head == HEAD_TAGS ? 5 : 2;
	c->cls_pre = head == HEAD_SCORE ? TFM_CLS_PRE_TANH : TFM_CLS_PRE_NONE;
	c->token_head = head == HEAD_SCORE ? TFM_TOKEN_HEAD_NONE :
		head == HEAD_TAGS ? TFM_TOKEN_HEAD_TAGS : TFM_TOKEN_HEAD_SPANS;
}

static void
make_batch(model_ctx *x, int head, int B, int T, int first)
{
	memset(&x->b, 0, sizeof(x->b));
	for (int r = 0; r < B; r++)
	{
		int			rr = r + first,
					len = row_len[rr];

		for (int t = 0; t < T; t++)
		{
			int			i = r * T + t;

			x->input[i] = t < len ? 1 + (rr * 7 + t * 5) % 22 : 0;
			x->types[i] = t < len && t >= len / 2;
			/* the first and every third token ignored, as [CLS] and continuing pieces */
			x->tags[i] = t < len && t % 3 != 0 ? (rr + t) % 5 : TFM_LABEL_IGNORE;
		}
		x->spans[2 * r] = 1 + rr % (len - 1);
		x->spans[2 * r + 1] = len - 1 - rr % 2;
		x->scores[r] = rr == 0 ? 1.0f : rr == 1 ? 0.0f : 0.3f;
	}
	x->b.B = B;
	x->b.T = T;
	x->b.input = x->input;
	x->b.types = x->types;
	if (head == HEAD_SCORE)
		x->b.scores = x->scores;
	else if (head == HEAD_TAGS)
		x->b.token_labels = x->tags;
	else
		x->b.spans = x->spans;
}

static double
model_loss(void *p)
{
	model_ctx  *x = p;
	int			n;

	tfm_model_forward(x->m, &x->b, true, 4242);
	return tfm_model_loss_backward(x->m, &x->b, 0.0f, false, 1.0f, &n) / x->count;
}

static const char *const head_name[] = {"score", "tags", "spans"};

static void
test_model_head(int head)
{
	tfm_config	c;
	model_ctx	x;
	float	   *grads;
	char		what[96];
	int			n;
	double		s;

	make_config(&c, head);
	CHECK(tfm_config_check(&c) == NULL, "%s config: %s", head_name[head], tfm_config_check(&c));
	x.m = tfm_model_create(&c);
	tfm_model_init(x.m, 11);
	/* larger weights than init gives, so that every path carries gradient */
	for (size_t i = 0; i < x.m->n_floats; i++)
		x.m->params[i] += 0.1f * ((float) ((i * 2654435761u) % 1000) / 500.0f - 1.0f);
	make_batch(&x, head, FB, FT, 0);
	x.count = tfm_batch_targets(&c, &x.b);
	CHECK(x.count == (head == HEAD_TAGS ? 9 : FB), "%s: %d targets", head_name[head], x.count);
	CHECK(tfm_model_forward(x.m, &x.b, true, 4242) == 0, "%s forward", head_name[head]);
	s = tfm_model_loss_backward(x.m, &x.b, 0.0f, true, 1.0f / x.count, &n);
	CHECK(isfinite(s) && n == x.count, "%s loss %g, %d counted", head_name[head], s, n);
	grads = malloc(x.m->n_floats * sizeof(float));
	memcpy(grads, x.m->grads, x.m->n_floats * sizeof(float));
	for (int i = 0; i < x.m->n_tensors; i++)
	{
		const tfm_param_info *p = &x.m->info[i];

		snprintf(what, sizeof(what), "%s head, dropout 0.2: %s", head_name[head], p->name);
		check_fd(what, model_loss, &x, x.m->params + p->offset, grads + p->offset, p->size,
				 quick_mode() ? 3 : 12, 1e-3, 1e-3, 3e-2);
	}
	free(grads);

	/* without dropout a padded row's loss is its loss alone */
	x.m->cfg.dropout = x.m->cfg.attn_dropout = 0.0f;
	{
		double		alone = 0.0,
					all;

		make_batch(&x, head, FB, FT, 0);
		tfm_model_forward(x.m, &x.b, false, 0);
		all = tfm_model_loss_backward(x.m, &x.b, 0.0f, false, 1.0f, &n);
		for (int r = 0; r < FB; r++)
		{
			make_batch(&x, head, 1, row_len[r], r);
			tfm_model_forward(x.m, &x.b, false, 0);
			alone += tfm_model_loss_backward(x.m, &x.b, 0.0f, false, 1.0f, &n);
		}
		CHECK(fabs(all - alone) <= 1e-5 * fabs(alone), "%s: padded %.9g, rows alone %.9g",
			  head_name[head], all, alone);
	}
	/* the targets the head needs, missing or outside it: refused */
	make_batch(&x, head, FB, FT, 0);
	if (head == HEAD_TAGS)
		x.tags[4] = 5;
	else if (head == HEAD_SPANS)
		x.spans[3] = FT - 1;	/* row 1 has 5 tokens: a pad */
	else
		x.b.scores = NULL;
	tfm_model_forward(x.m, &x.b, false, 0);
	s = tfm_model_loss_backward(x.m, &x.b, 0.0f, false, 1.0f, &n);
	CHECK(isnan(s) && n == -1, "%s: a bad or missing target refused", head_name[head]);
	tfm_model_free(x.m);
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
	/* one thread: these models are tiny, and a loaded machine makes two spin */
	tfm_set_threads(1);
	test_losses();
	for (int head = HEAD_SCORE; head <= HEAD_SPANS; head++)
		test_model_head(head);
	return check_summary("test_task_heads");
}
