/*
 * bench_ops.c — bench_core's "ops" profile (--what ops): every operation of
 * one training step and of inference timed on its own at the classifier's
 * shapes through the public layer API, multiplied by how often a step runs
 * it, and compared with the measured step.  bench_core.c has the rest.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/optim.h"
#include "tfm/rng.h"
#include "tfm/train.h"

#include "bench_core.h"

/* ---- ops: one training step, operation by operation ---------------------- */

/*
 * Each operation of the step runs on its own, at the model's shapes, on the
 * public layer API (the same functions block.c and model_forward.c call), a
 * few times; its median time is multiplied by how often one step runs it.
 * Buffers are sized as the model's, but allocated here: cache effects of the
 * real sequence (one op's output is the next one's input) are not
 * reproduced exactly, so the sum is compared with the measured step.
 */

typedef struct op_acc
{
	const char *cat;
	double		fwd_ms,
				bwd_ms;
} op_acc;

static const char *categories[] = {
	"gemm (linear layers)", "attention gemms", "attention softmax+dropout+other",
	"layernorm", "dropout/residual/activation/bias", "memset/memcpy/adds (block bwd)",
	"embedding/pool/head/loss", "optimizer (norm, clip, AdamW)",
};
#define N_CAT ((int) (sizeof(categories) / sizeof(categories[0])))

static double cat_ms[N_CAT][2];	/* [category][0 fwd-train, 1 bwd+step] */
static double cat_inf_ms[N_CAT];	/* inference forward */

#define OP_REPS 7

/* time fn(ctx) OP_REPS times after one warm-up, return the median in ms */
typedef void (*op_fn) (void *ctx);

static double
time_op(op_fn fn, void *ctx)
{
	double		t[OP_REPS];

	fn(ctx);
	for (int i = 0; i < OP_REPS; i++)
	{
		double		t0 = now();

		fn(ctx);
		t[i] = now() - t0;
	}
	return summarise(t, OP_REPS).median * 1e3;
}

static void
record(const char *phase, int cat, const char *name, double ms, int count,
	   double flops)
{
	double		total = ms * count;

	if (strcmp(phase, "fwd") == 0)
		cat_ms[cat][0] += total;
	else if (strcmp(phase, "inf") == 0)
		cat_inf_ms[cat] += total;
	else
		cat_ms[cat][1] += total;
	printf("OP phase=%s cat=%d name=%s ms_each=%.3f count=%d ms_total=%.2f gflops=%.1f\n",
		   phase, cat, name, ms, count, total, flops > 0 ? flops / (ms * 1e-3) / 1e9 : 0.0);
}

/* the op contexts */
typedef struct gemm_ctx
{
	bool		ta,
				tb;
	int			M,
				N,
				K;
	const float *A;
	int			lda;
	const float *B;
	int			ldb;
	float		beta;
	float	   *C;
	int			ldc;
} gemm_ctx;

static void
run_gemm(void *p)
{
	gemm_ctx   *g = p;

	tfm_gemm(g->ta, g->tb, g->M, g->N, g->K, 1.0f, g->A, g->lda, g->B, g->ldb,
			 g->beta, g->C, g->ldc);
}

typedef struct lin_ctx
{
	float	   *out,
			   *dinp,
			   *dW,
			   *db;
	const float *inp,
			   *W,
			   *b,
			   *dout;
	int			N,
				in,
				o;
} lin_ctx;

static void
run_bias(void *p)
{
	lin_ctx    *l = p;

	for (int n = 0; n < l->N; n++)
		memcpy(l->out + (size_t) n * l->o, l->b, sizeof(float) * l->o);
}

static void
run_db(void *p)
{
	lin_ctx    *l = p;

	tfm_linear_backward(NULL, NULL, l->db, l->dout, l->inp, l->W, l->N, l->in, l->o, NULL);
}

typedef struct attn_ctx
{
	float	   *out,
			   *probs,
			   *qkv,
			   *dqkv,
			   *dout,
			   *scratch;
	tfm_attn_shape sh;
	int			mode;			/* 0 forward, 1 backward, 2 fwd gemms, 3 bwd gemms */
} attn_ctx;

static void
run_attn(void *p)
{
	attn_ctx   *a = p;
	const int	d = D_MODEL;

	if (a->mode == 0)
		tfm_attention_forward(a->out, a->probs, a->qkv, a->qkv + d, a->qkv + 2 * d,
							  NULL, &a->sh, a->scratch);
	else if (a->mode == 1)
		tfm_attention_backward(a->dqkv, a->dqkv + d, a->dqkv + 2 * d, a->dout, a->probs,
							   a->qkv, a->qkv + d, a->qkv + 2 * d, &a->sh, a->scratch);
	else
	{
		/* the same per-(batch, head) products as attention.c, nothing else */
		const tfm_attn_shape *sh = &a->sh;
		const int	T = sh->Tq,
					s = sh->s,
					h = sh->h;
		const float *q = a->qkv,
				   *k = a->qkv + d,
				   *v = a->qkv + 2 * d;

#pragma omp parallel for num_threads(tfm_get_threads()) schedule(static)
		for (int pr = 0; pr < sh->B * h; pr++)
		{
			int			b = pr / h,
						j = pr % h;
			size_t		off = (size_t) b * T * sh->rsq + (size_t) j * s;
			float	   *P = a->probs + (size_t) pr * T * T;
			float	   *dP = a->scratch + (size_t) omp_get_thread_num() * 2 * T * T;
			float	   *ob = a->out + (size_t) b * T * d + (size_t) j * s;

			if (a->mode == 2)
			{
				tfm_gemm_strided(T, T, s, 1.0f, q + off, sh->rsq, 1, k + off, 1, sh->rsk,
								 0.0f, P, T, 1);
				tfm_gemm_strided(T, s, T, 1.0f, P, T, 1, v + off, sh->rsv, 1,
								 0.0f, ob, d, 1);
			}
			else
			{
				const float *dob = a->dout + (size_t) b * T * d + (size_t) j * s;

				tfm_gemm_strided(T, T, s, 1.0f, dob, d, 1, v + off, 1, sh->rsv,
								 0.0f, dP, T, 1);
				tfm_gemm_strided(T, s, T, 1.0f, P, 1, T, dob, d, 1,
								 1.0f, a->dqkv + 2 * d + off, sh->rsv, 1);
				tfm_gemm_strided(T, s, T, 1.0f, dP, T, 1, k + off, sh->rsk, 1,
								 1.0f, a->dqkv + off, sh->rsq, 1);
				tfm_gemm_strided(T, s, T, 1.0f, dP, 1, T, q + off, sh->rsq, 1,
								 1.0f, a->dqkv + d + off, sh->rsk, 1);
			}
		}
	}
}

typedef struct ew_ctx
{
	int			kind;
	float	   *out,
			   *dinp,
			   *mean,
			   *rstd,
			   *dg,
			   *db;
	const float *x,
			   *y,
			   *g,
			   *b,
			   *dout;
	size_t		n;
	int			N,
				d;
	float		p;
} ew_ctx;

enum
{
	EW_LN_F, EW_LN_B, EW_RES_F, EW_DROP_F, EW_DROP_B, EW_RELU_F, EW_RELU_B,
	EW_MEMSET, EW_MEMCPY, EW_ADD
};

static void
run_ew(void *p)
{
	ew_ctx	   *e = p;

	switch (e->kind)
	{
		case EW_LN_F:
			tfm_layernorm_forward(e->out, e->mean, e->rstd, e->x, e->g, e->b, e->N, e->d);
			break;
		case EW_LN_B:
			tfm_layernorm_backward(e->dinp, e->dg, e->db, e->dout, e->x, e->g,
								   e->mean, e->rstd, e->N, e->d);
			break;
		case EW_RES_F:
			tfm_residual_forward(e->out, e->x, e->y, e->n, e->p, 99);
			break;
		case EW_DROP_F:
			tfm_dropout_forward(e->out, e->x, e->n, e->p, 99);
			break;
		case EW_DROP_B:
			tfm_dropout_backward(e->dinp, e->dout, e->n, e->p, 99);
			break;
		case EW_RELU_F:
			tfm_activation_forward(e->out, e->x, e->n, TFM_ACT_RELU);
			break;
		case EW_RELU_B:
			tfm_activation_backward(e->dinp, e->dout, e->x, e->n, TFM_ACT_RELU);
			break;
		case EW_MEMSET:
			memset(e->out, 0, e->n * sizeof(float));
			break;
		case EW_MEMCPY:
			memcpy(e->out, e->x, e->n * sizeof(float));
			break;
		case EW_ADD:
			for (size_t i = 0; i < e->n; i++)
				e->out[i] += e->x[i];
			break;
	}
}

typedef struct model_ctx
{
	int			kind;
	tfm_model  *m;
	tfm_adam   *opt;
	float	   *out,
			   *dout,
			   *pooled,
			   *dpooled,
			   *logits;
	const int32_t *ids,
			   *labels;
} model_ctx;

static void
run_model_op(void *p)
{
	model_ctx  *c = p;
	tfm_model  *m = c->m;
	const int	d = D_MODEL;
	const size_t nd = (size_t) BATCH * LEN * d;

	switch (c->kind)
	{
		case 0:					/* embedding forward + dropout */
			tfm_embedding_forward(c->out, c->ids, m->w.tok_emb, m->cfg.vocab, m->w.pos_emb, 1.0f,
								  BATCH, LEN, d, 0);
			tfm_dropout_forward(c->out, c->out, nd, DROPOUT, 5);
			break;
		case 1:					/* embedding backward (through dropout) */
			memset(c->dout, 0, nd * sizeof(float));
			tfm_dropout_backward(c->dout, c->out, nd, DROPOUT, 5);
			tfm_embedding_backward(m->g.tok_emb, m->g.pos_emb, c->dout, c->ids, m->cfg.vocab, 1.0f,
								   BATCH, LEN, d, 0);
			break;
		case 2:					/* pooling + head + loss forward */
			tfm_mean_pool_forward(c->pooled, c->out, c->ids, 0, BATCH, LEN, d);
			tfm_linear_forward(c->logits, c->pooled, m->w.cls_w, m->w.cls_b, BATCH, d, CLASSES, NULL);
			{
				int			cnt;

				(void) tfm_cross_entropy(NULL, &cnt, c->logits, c->labels, BATCH, CLASSES,
										 -1, 0.0f, 1.0f);
			}
			break;
		case 3:					/* loss + head + pooling backward */
			{
				int			cnt;

				(void) tfm_cross_entropy(c->logits, &cnt, c->logits, c->labels, BATCH,
										 CLASSES, -1, 0.0f, 1.0f / BATCH);
				memset(c->dpooled, 0, (size_t) BATCH * d * sizeof(float));
				tfm_linear_backward(c->dpooled, m->g.cls_w, m->g.cls_b, c->logits, c->pooled,
									m->w.cls_w, BATCH, d, CLASSES, NULL);
				memset(c->dout, 0, nd * sizeof(float));
				tfm_mean_pool_backward(c->dout, c->dpooled, c->ids, 0, BATCH, LEN, d);
			}
			break;
		case 4:					/* zero_grad + grad norm + clip */
			tfm_model_zero_grad(m);
			{
				double		nrm = tfm_grad_norm(m->grads, m->n_floats);

				tfm_clip_grad(m->grads, m->n_floats, nrm + 10.0, 1.0f);
			}
			break;
		case 5:					/* AdamW */
			tfm_adam_step(c->opt, m->params, m->grads, m->info, m->n_tensors, 1e-9f);
			break;
	}
}

static float *
rand_buf(size_t n, tfm_rng *rng, float scale)
{
	float	   *p = aligned_alloc(64, ((n * sizeof(float)) + 63) & ~(size_t) 63);

	for (size_t i = 0; i < n; i++)
		p[i] = scale * (tfm_rng_uniform(rng) - 0.5f);
	return p;
}

static void
time_linear(const char *name, int N, int in, int o, float *inp, float *W,
			float *b, float *out, float *dout, float *dinp, float *dW, float *db)
{
	gemm_ctx	g;
	lin_ctx		l = {out, dinp, dW, db, inp, W, b, dout, N, in, o};
	double		fl = 2.0 * N * in * o;
	char		nm[96];
	double		ms;

	/* forward: bias broadcast, then out = inp·W + out */
	ms = time_op(run_bias, &l);
	snprintf(nm, sizeof(nm), "%s.bias_copy", name);
	record("fwd", 4, nm, ms, LAYERS, 0);
	record("inf", 4, nm, ms, LAYERS, 0);
	g = (gemm_ctx) {false, false, N, o, in, inp, in, W, o, 1.0f, out, o};
	ms = time_op(run_gemm, &g);
	snprintf(nm, sizeof(nm), "%s.fwd_gemm_%dx%dx%d", name, N, o, in);
	record("fwd", 0, nm, ms, LAYERS, fl);
	record("inf", 0, nm, ms, LAYERS, fl);
	/* backward: dinp += dout·Wᵀ; dW += inpᵀ·dout; db += colsum(dout) */
	g = (gemm_ctx) {false, true, N, in, o, dout, o, W, o, 1.0f, dinp, in};
	ms = time_op(run_gemm, &g);
	snprintf(nm, sizeof(nm), "%s.bwd_dinp_gemm_%dx%dx%d_nt", name, N, in, o);
	record("bwd", 0, nm, ms, LAYERS, fl);
	g = (gemm_ctx) {true, false, in, o, N, inp, in, dout, o, 1.0f, dW, o};
	ms = time_op(run_gemm, &g);
	snprintf(nm, sizeof(nm), "%s.bwd_dW_gemm_%dx%dx%d_tn", name, in, o, N);
	record("bwd", 0, nm, ms, LAYERS, fl);
	ms = time_op(run_db, &l);
	snprintf(nm, sizeof(nm), "%s.bwd_db", name);
	record("bwd", 4, nm, ms, LAYERS, 0);
}

void
bench_ops(int threads, double step_ms_train, double step_ms_infer)
{
	const int	d = D_MODEL,
				f = D_FF,
				N = BATCH * LEN;
	const size_t nd = (size_t) N * d,
				nf = (size_t) N * f;
	tfm_rng		rng;
	tfm_config	cfg;
	tfm_model  *m;
	tfm_adam	opt;
	int32_t    *ids = malloc(sizeof(int32_t) * (N_BATCHES * BATCH * LEN + 1));
	int32_t    *labels = malloc(sizeof(int32_t) * N_BATCHES * BATCH);
	float	   *x, *y, *out, *dout, *dinp, *qkv, *dqkv, *probs, *scratch, *h1, *h2,
			   *dh, *W, *dW, *bvec, *dbvec, *g, *mean, *rstd, *pooled, *dpooled, *logits;
	tfm_attn_shape sh;
	attn_ctx	ac;
	ew_ctx		e;
	model_ctx	mc;
	double		ms,
				attn_fl = 4.0 * BATCH * HEADS * (double) LEN * LEN * (D_MODEL / HEADS);

	tfm_rng_seed(&rng, 3);
	reference_config(&cfg);
	m = tfm_model_create(&cfg);
	tfm_model_init(m, 42);
	random_batches(ids, labels, 1234);
	{
		/* allocate the gradients through one real backward pass */
		tfm_batch	b = batch_at(ids, labels, 0);
		int			cnt;

		tfm_model_forward(m, &b, true, 1);
		tfm_model_loss_backward(m, &b, 0.0f, true, 1.0f / BATCH, &cnt);
		if (!m->grads)
		{
			fprintf(stderr, "could not allocate gradients\n");
			exit(1);
		}
	}
	tfm_adam_init(&opt, m->n_floats, 0.9f, 0.999f, 1e-8f, 0.01f, true);

	x = rand_buf(nd, &rng, 2.0f);
	y = rand_buf(nd, &rng, 2.0f);
	out = rand_buf(nd, &rng, 2.0f);
	dout = rand_buf(nd, &rng, 0.01f);
	dinp = rand_buf(nd, &rng, 0.01f);
	qkv = rand_buf(3 * nd, &rng, 2.0f);
	dqkv = rand_buf(3 * nd, &rng, 0.01f);
	probs = rand_buf((size_t) BATCH * HEADS * LEN * LEN, &rng, 0.01f);
	memset(&sh, 0, sizeof(sh));	/* batch strides 0: T · row stride */
	sh.B = BATCH;
	sh.Tq = sh.Tk = LEN;
	sh.h = HEADS;
	sh.s = d / HEADS;
	sh.rsq = sh.rsk = sh.rsv = 3 * d;
	sh.rso = d;
	sh.causal = 0;
	sh.p_drop = DROPOUT;
	sh.key = 77;
	scratch = rand_buf(tfm_attention_scratch(&sh, threads), &rng, 0.0f);
	h1 = rand_buf(nf, &rng, 2.0f);
	h2 = rand_buf(nf, &rng, 2.0f);
	dh = rand_buf(nf, &rng, 0.01f);
	W = rand_buf((size_t) d * 4 * d, &rng, 0.1f);
	dW = rand_buf((size_t) d * 4 * d, &rng, 0.0f);
	bvec = rand_buf(4 * d, &rng, 0.1f);
	dbvec = rand_buf(4 * d, &rng, 0.0f);
	g = rand_buf(d, &rng, 0.1f);
	for (int i = 0; i < d; i++)
		g[i] += 1.0f;
	mean = rand_buf(N, &rng, 0.0f);
	rstd = rand_buf(N, &rng, 0.0f);
	pooled = rand_buf((size_t) BATCH * d, &rng, 1.0f);
	dpooled = rand_buf((size_t) BATCH * d, &rng, 1.0f);
	logits = rand_buf((size_t) BATCH * CLASSES, &rng, 1.0f);

	printf("\n== ops profile, %d threads (each op alone at the model's shapes, x count per step)\n",
		   threads);

	/* the four linear layers of a block */
	time_linear("qkv", N, d, 3 * d, x, W, bvec, qkv, dqkv, dinp, dW, dbvec);
	time_linear("attn_out", N, d, d, x, W, bvec, out, dout, dinp, dW, dbvec);
	time_linear("ff1", N, d, f, x, W, bvec, h1, dh, dinp, dW, dbvec);
	time_linear("ff2", N, f, d, h1, W, bvec, out, dout, dh, dW, dbvec);

	/* attention: whole op, and its products alone */
	memset(&ac, 0, sizeof(ac));
	ac.out = out;
	ac.probs = probs;
	ac.qkv = qkv;
	ac.dqkv = dqkv;
	ac.dout = dout;
	ac.scratch = scratch;
	ac.sh = sh;
	ac.mode = 0;
	{
		double		fwd_train,
					fwd_inf,
					gemm_f,
					bwd,
					gemm_b;

		fwd_train = time_op(run_attn, &ac);
		ac.sh.p_drop = 0.0f;
		fwd_inf = time_op(run_attn, &ac);
		ac.sh.p_drop = DROPOUT;
		ac.mode = 2;
		gemm_f = time_op(run_attn, &ac);
		ac.mode = 1;
		bwd = time_op(run_attn, &ac);
		ac.mode = 3;
		gemm_b = time_op(run_attn, &ac);
		record("fwd", 1, "attention.fwd_gemms(QK^T,PV)", gemm_f, LAYERS, attn_fl);
		record("fwd", 2, "attention.fwd_softmax+dropout", fwd_train - gemm_f, LAYERS, 0);
		record("inf", 1, "attention.fwd_gemms(QK^T,PV)", gemm_f, LAYERS, attn_fl);
		record("inf", 2, "attention.fwd_softmax", fwd_inf - gemm_f, LAYERS, 0);
		record("bwd", 1, "attention.bwd_gemms(4)", gemm_b, LAYERS, 2 * attn_fl);
		record("bwd", 2, "attention.bwd_softmax+dropout", bwd - gemm_b, LAYERS, 0);
		printf("   attention whole: fwd train %.1f ms, fwd infer %.1f ms, bwd %.1f ms; gemms alone fwd %.1f ms (%.1f GFLOP/s), bwd %.1f ms (%.1f GFLOP/s)\n",
			   fwd_train, fwd_inf, bwd, gemm_f, attn_fl / (gemm_f * 1e-3) / 1e9,
			   gemm_b, 2 * attn_fl / (gemm_b * 1e-3) / 1e9);
	}

	/* layer norms: 2 per block, forward and backward */
	e = (ew_ctx) {EW_LN_F, out, NULL, mean, rstd, NULL, NULL, x, NULL, g, bvec, NULL, nd, N, d, DROPOUT};
	ms = time_op(run_ew, &e);
	record("fwd", 3, "layernorm_forward", ms, 2 * LAYERS, 0);
	record("inf", 3, "layernorm_forward", ms, 2 * LAYERS, 0);
	e.kind = EW_LN_B;
	e.dinp = dinp;
	e.dout = dout;
	e.dg = dbvec;
	e.db = dbvec + d;
	ms = time_op(run_ew, &e);
	record("bwd", 3, "layernorm_backward", ms, 2 * LAYERS, 0);

	/* residual adds with dropout: 2 per block */
	e = (ew_ctx) {EW_RES_F, out, NULL, NULL, NULL, NULL, NULL, x, y, NULL, NULL, NULL, nd, N, d, DROPOUT};
	ms = time_op(run_ew, &e);
	record("fwd", 4, "residual_forward(dropout)", ms, 2 * LAYERS, 0);
	e.p = 0.0f;
	ms = time_op(run_ew, &e);
	record("inf", 4, "residual_forward(no dropout)", ms, 2 * LAYERS, 0);
	/* FF hidden: relu + dropout */
	e = (ew_ctx) {EW_RELU_F, h2, NULL, NULL, NULL, NULL, NULL, h1, NULL, NULL, NULL, NULL, nf, N, f, DROPOUT};
	ms = time_op(run_ew, &e);
	record("fwd", 4, "relu_forward(N*f)", ms, LAYERS, 0);
	record("inf", 4, "relu_forward(N*f)", ms, LAYERS, 0);
	e.kind = EW_DROP_F;
	ms = time_op(run_ew, &e);
	record("fwd", 4, "dropout_forward(N*f)", ms, LAYERS, 0);
	/* backward elementwise */
	e = (ew_ctx) {EW_DROP_B, NULL, dinp, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, dout, nd, N, d, DROPOUT};
	ms = time_op(run_ew, &e);
	record("bwd", 4, "dropout_backward(N*d)", ms, 2 * LAYERS, 0);
	e = (ew_ctx) {EW_DROP_B, NULL, h2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, dh, nf, N, f, DROPOUT};
	ms = time_op(run_ew, &e);
	record("bwd", 4, "dropout_backward(N*f)", ms, LAYERS, 0);
	e = (ew_ctx) {EW_RELU_B, NULL, h2, NULL, NULL, NULL, NULL, h1, NULL, NULL, NULL, dh, nf, N, f, 0};
	ms = time_op(run_ew, &e);
	record("bwd", 4, "relu_backward(N*f)", ms, LAYERS, 0);
	/* the block backward's buffer traffic (counted from block.c, post-LN) */
	e = (ew_ctx) {EW_MEMSET, out, NULL, NULL, NULL, NULL, NULL, x, NULL, NULL, NULL, NULL, nd, N, d, 0};
	ms = time_op(run_ew, &e);
	/* per block: memsets of N·d: 2 (ln tmp) + 2 (dsub) + du ×2 + dsub ×1 = 7; of N·3d: 1 */
	record("bwd", 5, "memset(N*d)", ms, 7 * LAYERS + 3 * LAYERS, 0);
	e.n = nf;
	e.out = h2;
	ms = time_op(run_ew, &e);
	record("bwd", 5, "memset(N*f)", ms, 3 * LAYERS, 0);
	e.kind = EW_MEMCPY;
	e.x = h1;
	ms = time_op(run_ew, &e);
	record("bwd", 5, "memcpy(N*f)", ms, LAYERS, 0);
	e.n = nd;
	e.out = out;
	e.x = x;
	ms = time_op(run_ew, &e);
	record("bwd", 5, "memcpy(N*d)", ms, 2 * LAYERS, 0);
	e.kind = EW_ADD;
	ms = time_op(run_ew, &e);
	record("bwd", 5, "add(N*d)", ms, 2 * LAYERS, 0);

	/* model-level ops */
	mc = (model_ctx) {0, m, &opt, out, dout, pooled, dpooled, logits, ids, labels};
	ms = time_op(run_model_op, &mc);
	record("fwd", 6, "embedding_forward+dropout", ms, 1, 0);
	record("inf", 6, "embedding_forward(+dropout)", ms, 1, 0);
	mc.kind = 1;
	ms = time_op(run_model_op, &mc);
	record("bwd", 6, "embedding_backward+dropout", ms, 1, 0);
	mc.kind = 2;
	ms = time_op(run_model_op, &mc);
	record("fwd", 6, "pool+head+loss", ms, 1, 0);
	record("inf", 6, "pool+head", ms, 1, 0);
	mc.kind = 3;
	ms = time_op(run_model_op, &mc);
	record("bwd", 6, "loss+head+pool_backward", ms, 1, 0);
	mc.kind = 4;
	ms = time_op(run_model_op, &mc);
	record("bwd", 7, "zero_grad+grad_norm+clip", ms, 1, 0);
	mc.kind = 5;
	ms = time_op(run_model_op, &mc);
	record("bwd", 7, "adamw_step", ms, 1, 0);

	/* summary */
	{
		double		tf = 0,
					tb = 0,
					ti = 0;

		for (int c = 0; c < N_CAT; c++)
		{
			tf += cat_ms[c][0];
			tb += cat_ms[c][1];
			ti += cat_inf_ms[c];
		}
		printf("\nops profile, %d threads — training step (sum of ops %.0f ms; measured step %.0f ms)\n",
			   threads, tf + tb, step_ms_train);
		printf("  %-36s %9s %9s %9s %7s | %9s %7s\n", "category", "fwd ms", "bwd ms", "train ms",
			   "train%", "infer ms", "infer%");
		for (int c = 0; c < N_CAT; c++)
		{
			printf("  %-36s %9.1f %9.1f %9.1f %6.1f%% | %9.1f %6.1f%%\n", categories[c],
				   cat_ms[c][0], cat_ms[c][1], cat_ms[c][0] + cat_ms[c][1],
				   100 * (cat_ms[c][0] + cat_ms[c][1]) / (tf + tb), cat_inf_ms[c],
				   100 * cat_inf_ms[c] / ti);
			printf("PROFILE threads=%d cat=\"%s\" train_ms=%.2f infer_ms=%.2f\n", threads,
				   categories[c], cat_ms[c][0] + cat_ms[c][1], cat_inf_ms[c]);
		}
		printf("  %-36s %9.1f %9.1f %9.1f %7s | %9.1f   (measured forward %.0f ms)\n", "sum",
			   tf, tb, tf + tb, "", ti, step_ms_infer);
	}
	tfm_adam_free(&opt);
	tfm_model_free(m);
}
