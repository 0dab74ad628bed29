/*
 * test_layers.c — every layer's backward pass against central finite
 * differences, on small random shapes, masks and dropout included.
 *
 * Each check builds a scalar L = Σ out ⊙ R (R fixed and random, so that
 * dL/dout = R), runs the layer's backward with dout = R, and compares the
 * analytic gradient of every input and parameter with (L(x+h) − L(x−h))/2h.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/rng.h"
#include "../src/core/kernels/vecmath.h"

#define H 1e-3
#define ATOL 2e-3
#define RTOL 2e-2

static tfm_rng rng;

/*
 * Buffers get 16 floats of slack: BLIS's small-matrix kernels may read a
 * little past the end of a strided view (the model's workspace pads every
 * buffer the same way).
 */
static float *
randn(size_t n, float scale)
{
	float	   *x = calloc(n + 16, sizeof(float));

	for (size_t i = 0; i < n; i++)
		x[i] = scale * tfm_rng_normal(&rng);
	return x;
}

static float *
zeros(size_t n)
{
	return calloc(n + 16, sizeof(float));
}

static double
dot(const float *a, const float *b, size_t n)
{
	double		s = 0.0;

	for (size_t i = 0; i < n; i++)
		s += (double) a[i] * b[i];
	return s;
}

/* ---- linear ---- */
typedef struct
{
	int			N,
				in,
				o;
	float	   *x,
			   *W,
			   *b,
			   *out,
			   *R;
} lin_ctx;

static double
lin_loss(void *p)
{
	lin_ctx    *c = p;

	tfm_linear_forward(c->out, c->x, c->W, c->b, c->N, c->in, c->o, NULL);
	return dot(c->out, c->R, (size_t) c->N * c->o);
}

static void
test_linear(void)
{
	lin_ctx		c = {5, 7, 6};
	float	   *dx,
			   *dW,
			   *db;

	c.x = randn(c.N * c.in, 1);
	c.W = randn(c.in * c.o, 0.5f);
	c.b = randn(c.o, 0.5f);
	c.out = zeros(c.N * c.o);
	c.R = randn(c.N * c.o, 1);
	dx = zeros(c.N * c.in);
	dW = zeros(c.in * c.o);
	db = zeros(c.o);
	tfm_linear_backward(dx, dW, db, c.R, c.x, c.W, c.N, c.in, c.o, NULL);
	check_fd("linear dx", lin_loss, &c, c.x, dx, c.N * c.in, 0, H, ATOL, RTOL);
	check_fd("linear dW", lin_loss, &c, c.W, dW, c.in * c.o, 0, H, ATOL, RTOL);
	check_fd("linear db", lin_loss, &c, c.b, db, c.o, 0, H, ATOL, RTOL);
	{
		/* the overwriting form: dx written over whatever was there */
		float	   *dx2 = randn(c.N * c.in, 3),
				   *dW2 = zeros(c.in * c.o),
				   *db2 = zeros(c.o);
		double		worst = 0.0;

		tfm_linear_backward_set(dx2, dW2, db2, c.R, c.x, c.W, c.N, c.in, c.o, NULL);
		for (int i = 0; i < c.N * c.in; i++)
			worst = fmax(worst, fabs(dx2[i] - dx[i]));
		for (int i = 0; i < c.in * c.o; i++)
			worst = fmax(worst, fabs(dW2[i] - dW[i]));
		for (int i = 0; i < c.o; i++)
			worst = fmax(worst, fabs(db2[i] - db[i]));
		CHECK(worst < 1e-6, "linear backward_set differs from zero + backward by %g", worst);
		free(dx2); free(dW2); free(db2);
	}
	free(c.x); free(c.W); free(c.b); free(c.out); free(c.R);
	free(dx); free(dW); free(db);
}

/* ---- layer norm ---- */
typedef struct
{
	int			N,
				d;
	float	   *x,
			   *g,
			   *b,
			   *out,
			   *mean,
			   *rstd,
			   *R;
} ln_ctx;

static double
ln_loss(void *p)
{
	ln_ctx	   *c = p;

	tfm_layernorm_forward(c->out, c->mean, c->rstd, c->x, c->g, c->b, c->N, c->d);
	return dot(c->out, c->R, (size_t) c->N * c->d);
}

static void
test_layernorm(void)
{
	ln_ctx		c = {4, 9};
	float	   *dx,
			   *dg,
			   *db;

	c.x = randn(c.N * c.d, 1);
	c.g = randn(c.d, 1);
	c.b = randn(c.d, 1);
	c.out = zeros(c.N * c.d);
	c.mean = zeros(c.N);
	c.rstd = zeros(c.N);
	c.R = randn(c.N * c.d, 1);
	dx = zeros(c.N * c.d);
	dg = zeros(c.d);
	db = zeros(c.d);
	ln_loss(&c);
	tfm_layernorm_backward(dx, dg, db, c.R, c.x, c.g, c.mean, c.rstd, c.N, c.d);
	check_fd("layernorm dx", ln_loss, &c, c.x, dx, c.N * c.d, 0, H, ATOL, RTOL);
	check_fd("layernorm dg", ln_loss, &c, c.g, dg, c.d, 0, H, ATOL, RTOL);
	check_fd("layernorm db", ln_loss, &c, c.b, db, c.d, 0, H, ATOL, RTOL);
	free(c.x); free(c.g); free(c.b); free(c.out); free(c.mean); free(c.rstd); free(c.R);
	free(dx); free(dg); free(db);
}

/* ---- activations, dropout, residual ---- */
typedef struct
{
	size_t		n;
	int			kind;			/* 0 relu, 1 gelu, 2 gelu_tanh, 3 dropout, 4 residual (x), 5 residual (y) */
	float	   *x,
			   *y,
			   *out,
			   *R;
	float		p;
} el_ctx;

static double
el_loss(void *p)
{
	el_ctx	   *c = p;

	switch (c->kind)
	{
		case 0:
		case 1:
		case 2:
			tfm_activation_forward(c->out, c->x, c->n, c->kind);
			break;
		case 3:
			tfm_dropout_forward(c->out, c->x, c->n, c->p, 42);
			break;
		default:
			tfm_residual_forward(c->out, c->x, c->y, c->n, c->p, 43);
			break;
	}
	return dot(c->out, c->R, c->n);
}

static void
test_elementwise(void)
{
	const char *names[] = {"relu", "gelu", "gelu_tanh", "dropout", "residual dx", "residual dy"};

	for (int k = 0; k < 6; k++)
	{
		el_ctx		c = {64, k};
		float	   *dx,
				   *dy;

		c.x = randn(c.n, 1);
		c.y = randn(c.n, 1);
		c.out = zeros(c.n);
		c.R = randn(c.n, 1);
		c.p = 0.3f;
		/* keep ReLU inputs away from the kink */
		for (size_t i = 0; i < c.n; i++)
			if (fabsf(c.x[i]) < 0.01f)
				c.x[i] = 0.5f;
		dx = zeros(c.n);
		dy = zeros(c.n);
		if (k <= 2)
			tfm_activation_backward(dx, c.R, c.x, c.n, k);
		else if (k == 3)
			tfm_dropout_backward(dx, c.R, c.n, c.p, 42);
		else
			tfm_residual_backward(dx, dy, c.R, c.n, c.p, 43);
		check_fd(names[k], el_loss, &c, k == 5 ? c.y : c.x, k == 5 ? dy : dx,
				 c.n, 0, H, ATOL, RTOL);
		if (k <= 3)
		{
			/*
			 * The block's backward pass writes over its input: activations in
			 * place, dropout as its own forward (same key, same mask).
			 */
			float	   *g = zeros(c.n);
			size_t		diff = 0;

			memcpy(g, c.R, c.n * sizeof(float));
			if (k <= 2)
				tfm_activation_backward_inplace(g, c.x, c.n, k);
			else
				tfm_dropout_forward(g, g, c.n, c.p, 42);
			for (size_t i = 0; i < c.n; i++)
				diff += g[i] != dx[i];
			CHECK(diff == 0, "%s written in place differs on %zu of %zu", names[k], diff, c.n);
			free(g);
		}
		free(c.x); free(c.y); free(c.out); free(c.R); free(dx); free(dy);
	}
	/* dropout keeps about 1-p of the elements, scaled by 1/(1-p) */
	{
		size_t		n = 100000,
					kept = 0;
		float	   *x = zeros(n),
				   *y = zeros(n);

		for (size_t i = 0; i < n; i++)
			x[i] = 1.0f;
		tfm_dropout_forward(y, x, n, 0.25f, 7);
		for (size_t i = 0; i < n; i++)
			if (y[i] != 0.0f)
			{
				kept++;
				CHECK(fabsf(y[i] - 1.0f / 0.75f) < 1e-6f, "dropout scale %g", y[i]);
			}
		CHECK(fabs((double) kept / n - 0.75) < 0.01, "dropout kept %zu of %zu", kept, n);
		free(x);
		free(y);
	}
}

/* ---- attention ---- */
typedef struct
{
	tfm_attn_shape sh;
	float	   *q,
			   *k,
			   *v,
			   *out,
			   *probs,
			   *scratch,
			   *R;
	uint8_t    *pad;
	size_t		nq,
				nkv,
				nout;
} at_ctx;

static double
at_loss(void *p)
{
	at_ctx	   *c = p;

	tfm_attention_forward(c->out, c->probs, c->q, c->k, c->v, c->pad, &c->sh, c->scratch);
	return dot(c->out, c->R, c->nout);
}

/*
 * self (fused qkv, Tk = Tq) or cross (q separate, fused kv) attention; a
 * causal "cross" shape is the key/value-cache case (Tk > Tq: query r sees
 * keys up to Tk − Tq + r).  Tq above 32 runs the causal row blocks.
 */
static void
test_attention(int cross, int causal, float p_drop, int Tq, int Tk)
{
	at_ctx		c;
	int			B = 2,
				h = 2,
				s = 3,
				d = h * s;
	float	   *qkv,
			   *kv = NULL,
			   *dqkv,
			   *dkv = NULL,
			   *dq;
	char		name[96];

	memset(&c, 0, sizeof(c));
	c.sh.B = B;
	c.sh.Tq = Tq;
	c.sh.Tk = Tk;
	c.sh.h = h;
	c.sh.s = s;
	c.sh.causal = causal;
	c.sh.p_drop = p_drop;
	c.sh.key = 99;
	c.sh.rso = d;
	c.nout = (size_t) B * Tq * d;
	c.pad = calloc(B * Tk, 1);
	c.pad[1 * Tk + Tk - 1] = 1;		/* second sequence: last two keys are pads */
	c.pad[1 * Tk + Tk - 2] = 1;
	if (cross)
	{
		qkv = randn((size_t) B * Tq * d, 1);
		kv = randn((size_t) B * Tk * 2 * d, 1);
		c.q = qkv;
		c.k = kv;
		c.v = kv + d;
		c.sh.rsq = d;
		c.sh.rsk = c.sh.rsv = 2 * d;
		dq = zeros((size_t) B * Tq * d);
		dkv = zeros((size_t) B * Tk * 2 * d);
		dqkv = dq;
	}
	else
	{
		qkv = randn((size_t) B * Tq * 3 * d, 1);
		c.q = qkv;
		c.k = qkv + d;
		c.v = qkv + 2 * d;
		c.sh.rsq = c.sh.rsk = c.sh.rsv = 3 * d;
		dqkv = zeros((size_t) B * Tq * 3 * d);
		dq = dqkv;
	}
	c.out = zeros(c.nout);
	c.probs = zeros((size_t) B * h * Tq * Tk);
	c.scratch = zeros(tfm_attention_scratch(&c.sh, tfm_get_threads()));
	c.R = randn(c.nout, 1);
	at_loss(&c);

	/* probabilities: rows sum to 1 and masked entries are exactly 0 */
	for (int b = 0; b < B; b++)
		for (int j = 0; j < h; j++)
			for (int r = 0; r < Tq; r++)
			{
				const float *P = c.probs + (((size_t) b * h + j) * Tq + r) * Tk;
				double		sum = 0.0;
				int			seen = 0;

				for (int col = 0; col < Tk; col++)
				{
					bool		masked = c.pad[b * Tk + col] || (causal && col > Tk - Tq + r);

					sum += P[col];
					seen += !masked;
					if (masked)
						CHECK(P[col] == 0.0f, "masked weight %g", P[col]);
				}
				/* a query that sees no key attends to nothing */
				CHECK(fabs(sum - (seen ? 1.0 : 0.0)) < 1e-5, "row sum %g (%d keys seen)", sum, seen);
			}

	if (cross)
		tfm_attention_backward(dq, dkv, dkv + d, c.R, c.probs, c.q, c.k, c.v, &c.sh, c.scratch);
	else
		tfm_attention_backward(dqkv, dqkv + d, dqkv + 2 * d, c.R, c.probs, c.q, c.k, c.v,
							   &c.sh, c.scratch);
	snprintf(name, sizeof(name), "attention %s causal=%d drop=%.1f Tq=%d Tk=%d", cross ? "cross" : "self",
			 causal, p_drop, Tq, Tk);
	if (cross)
	{
		check_fd(name, at_loss, &c, qkv, dq, (size_t) B * Tq * d, 0, H, ATOL, RTOL);
		check_fd(name, at_loss, &c, kv, dkv, (size_t) B * Tk * 2 * d, 0, H, ATOL, RTOL);
	}
	else
		check_fd(name, at_loss, &c, qkv, dqkv, (size_t) B * Tq * 3 * d, 0, H, ATOL, RTOL);
	free(qkv); free(kv); free(dqkv); free(dkv);
	free(c.out); free(c.probs); free(c.scratch); free(c.R); free(c.pad);
}

/* ---- embedding ---- */
typedef struct
{
	int			B,
				T,
				d,
				pos0;
	int32_t    *ids;
	float	   *tok,
			   *pos,
			   *out,
			   *R,
				scale;
} em_ctx;

static double
em_loss(void *p)
{
	em_ctx	   *c = p;

	tfm_embedding_forward(c->out, c->ids, c->tok, 7, c->pos, c->scale, c->B, c->T, c->d, c->pos0);
	return dot(c->out, c->R, (size_t) c->B * c->T * c->d);
}

static void
test_embedding(void)
{
	em_ctx		c = {2, 4, 5, 1};
	int32_t		ids[8] = {3, 1, 4, 1, 5, 0, 2, 6};
	int			V = 7,
				P = 6;
	float	   *dtok,
			   *dpos;

	c.ids = ids;
	c.scale = 2.0f;
	c.tok = randn(V * c.d, 1);
	c.pos = randn(P * c.d, 1);
	c.out = zeros(c.B * c.T * c.d);
	c.R = randn(c.B * c.T * c.d, 1);
	dtok = zeros(V * c.d);
	dpos = zeros(P * c.d);
	tfm_embedding_backward(dtok, dpos, c.R, c.ids, V, c.scale, c.B, c.T, c.d, c.pos0);
	check_fd("embedding dtok", em_loss, &c, c.tok, dtok, V * c.d, 0, H, ATOL, RTOL);
	check_fd("embedding dpos", em_loss, &c, c.pos, dpos, P * c.d, 0, H, ATOL, RTOL);
	/* sinusoidal table: PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos */
	{
		float		t[3 * 8];

		tfm_sinusoid_table(t, 3, 8, 5);
		CHECK(fabsf(t[0] - sinf(5.0f)) < 1e-6f, "sin(5) %g", t[0]);
		CHECK(fabsf(t[1] - cosf(5.0f)) < 1e-6f, "cos(5) %g", t[1]);
		CHECK(fabs(t[8 + 2] - sin(6.0 / pow(10000.0, 2.0 / 8))) < 1e-6, "pe(6,2) %g", t[10]);
		CHECK(fabs(t[16 + 7] - cos(7.0 / pow(10000.0, 6.0 / 8))) < 1e-6, "pe(7,7) %g", t[23]);
	}
	free(c.tok); free(c.pos); free(c.out); free(c.R); free(dtok); free(dpos);
}

/* ---- pooling ---- */
typedef struct
{
	int			B,
				T,
				d,
				cls;
	int32_t    *ids;
	float	   *x,
			   *out,
			   *R;
} po_ctx;

static double
po_loss(void *p)
{
	po_ctx	   *c = p;

	if (c->cls)
		tfm_cls_pool_forward(c->out, c->x, c->B, c->T, c->d);
	else
		tfm_mean_pool_forward(c->out, c->x, c->ids, 0, c->B, c->T, c->d);
	return dot(c->out, c->R, (size_t) c->B * c->d);
}

static void
test_pooling(void)
{
	int32_t		ids[8] = {4, 5, 6, 0, 7, 0, 0, 0};

	for (int cls = 0; cls < 2; cls++)
	{
		po_ctx		c = {2, 4, 3, cls};
		float	   *dx;

		c.ids = ids;
		c.x = randn(c.B * c.T * c.d, 1);
		c.out = zeros(c.B * c.d);
		c.R = randn(c.B * c.d, 1);
		dx = zeros(c.B * c.T * c.d);
		if (cls)
			tfm_cls_pool_backward(dx, c.R, c.B, c.T, c.d);
		else
			tfm_mean_pool_backward(dx, c.R, c.ids, 0, c.B, c.T, c.d);
		check_fd(cls ? "cls pool" : "mean pool", po_loss, &c, c.x, dx, c.B * c.T * c.d,
				 0, H, ATOL, RTOL);
		if (!cls)
		{
			/* pads contribute nothing: the second row is the vector at position 0 */
			po_loss(&c);
			CHECK(fabsf(c.out[3] - c.x[12]) < 1e-6f, "mean pool over one token");
		}
		free(c.x); free(c.out); free(c.R); free(dx);
	}
}

/* ---- cross-entropy ---- */
typedef struct
{
	int			N,
				V;
	int32_t    *y;
	float	   *z,
				eps;
} ce_ctx;

static double
ce_loss(void *p)
{
	ce_ctx	   *c = p;
	int			count;

	return tfm_cross_entropy(NULL, &count, c->z, c->y, c->N, c->V, 0, c->eps, 1.0f);
}

static void
test_cross_entropy(void)
{
	int32_t		y[5] = {3, 0, 1, 4, 0};	/* 0 = ignored */

	for (int k = 0; k < 2; k++)
	{
		ce_ctx		c = {5, 6, y};
		float	   *dz;
		int			count;
		double		sum;

		c.eps = k ? 0.1f : 0.0f;
		c.z = randn(c.N * c.V, 2);
		dz = zeros(c.N * c.V);
		sum = tfm_cross_entropy(dz, &count, c.z, c.y, c.N, c.V, 0, c.eps, 1.0f);
		CHECK(count == 3, "counted %d targets", count);
		check_fd(k ? "cross-entropy smoothed" : "cross-entropy", ce_loss, &c, c.z, dz,
				 c.N * c.V, 0, H, ATOL, RTOL);
		/* a hand-computed row: uniform logits give log V */
		if (k == 0)
		{
			for (int i = 0; i < c.V; i++)
				c.z[i] = 1.5f;
			for (int i = c.V; i < c.N * c.V; i++)
				c.z[i] = 0.0f;
			sum = tfm_cross_entropy(NULL, &count, c.z, c.y, c.N, c.V, 0, 0.0f, 1.0f);
			CHECK(fabs(sum - 3 * log(6.0)) < 1e-6, "uniform loss %g", sum);
		}
		free(c.z);
		free(dz);
	}
}

/*
 * GELU's tanh form (GPT-2's gelu_new) against the double formula, from far
 * negative to far positive, and the layer norm with a given epsilon against
 * the double formula.
 */
static void
test_gelu_tanh_and_eps(void)
{
	const size_t n = 4001;
	float	   *x = zeros(n),
			   *y = zeros(n);
	double		err = 0.0;

	for (size_t i = 0; i < n; i++)
		x[i] = -20.0f + 40.0f * (float) i / (float) (n - 1);
	tfm_activation_forward(y, x, n, TFM_ACT_GELU_TANH);
	for (size_t i = 0; i < n; i++)
	{
		double		v = x[i];
		double		r = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));

		err = fmax(err, fabs(y[i] - r) / (1.0 + fabs(r)));
	}
	CHECK(err < 1e-6, "gelu_tanh error %g", err);
	CHECK(y[0] == 0.0f || fabsf(y[0]) < 1e-30f, "gelu_tanh(-20) = %g", y[0]);
	CHECK(y[n - 1] == 20.0f, "gelu_tanh(20) = %g", y[n - 1]);
	/* SiLU (Marian's swish) and its derivative against the double formulas */
	tfm_activation_forward(y, x, n, TFM_ACT_SILU);
	err = 0.0;
	for (size_t i = 0; i < n; i++)
		err = fmax(err, fabs(y[i] - x[i] / (1.0 + exp(-(double) x[i]))) / (1.0 + fabs(y[i])));
	CHECK(err < 1e-6, "silu error %g", err);
	{
		float	   *g = zeros(n);

		for (size_t i = 0; i < n; i++)
			g[i] = 1.0f;
		tfm_activation_backward_inplace(g, x, n, TFM_ACT_SILU);
		err = 0.0;
		for (size_t i = 0; i < n; i++)
		{
			double		s = 1.0 / (1.0 + exp(-(double) x[i]));

			err = fmax(err, fabs(g[i] - s * (1.0 + x[i] * (1.0 - s))));
		}
		CHECK(err < 1e-6, "silu derivative error %g", err);
		free(g);
	}
	free(x);
	free(y);
	{
		const int	d = 8;
		float		in[8] = {0.001f, -0.002f, 0.003f, 0.0f, 0.0005f, -0.001f, 0.002f, -0.0025f},
					g[8],
					b[8],
					out[8],
					mean,
					rstd;
		double		m = 0.0,
					v = 0.0;

		for (int i = 0; i < d; i++)
		{
			g[i] = 1.0f;
			b[i] = 0.0f;
			m += in[i];
		}
		m /= d;
		for (int i = 0; i < d; i++)
			v += (in[i] - m) * (in[i] - m);
		v /= d;
		tfm_layernorm_forward_eps(out, &mean, &rstd, in, g, b, 1, d, 1e-3f);
		err = 0.0;
		for (int i = 0; i < d; i++)
			err = fmax(err, fabs(out[i] - (in[i] - m) / sqrt(v + 1e-3)));
		CHECK(err < 1e-5, "layer norm with eps 1e-3: error %g", err);
	}
}

/* tfm_erff and tfm_expf against libm's double erf and exp, as vecmath.h states */
static void
test_vecmath(void)
{
	double		erf_err = 0.0,
				exp_err = 0.0;

	for (int i = -1200000; i <= 1200000; i++)
	{
		float		x = (float) i * 1e-5f;

		erf_err = fmax(erf_err, fabs((double) tfm_erff(x) - erf((double) x)));
	}
	for (int i = -87000; i <= 88000; i++)
	{
		float		x = (float) i / 1000.0f;	/* 88.0 exactly at the end: it clamps above */
		double		e = exp((double) x);

		exp_err = fmax(exp_err, fabs((double) tfm_expf(x) - e) / e);
	}
	CHECK(erf_err < 5e-7, "erf absolute error %g", erf_err);
	CHECK(exp_err < 2e-7, "exp relative error %g", exp_err);
	CHECK(tfm_expf(-100.0f) == 0.0f, "exp(-100) %g", tfm_expf(-100.0f));
}

/*
 * The elementwise loops split long buffers among threads in chunks of
 * TFM_EW_CHUNK: every result must be the one-thread result, bit for bit
 * (the dropout mask is hashed from the absolute index).
 */
static void
test_chunked_elementwise(void)
{
	const size_t n = 3 * TFM_EW_CHUNK + 5;
	float	   *x = randn(n, 1.0f),
			   *y = randn(n, 1.0f),
			   *r[2][4];

	for (int t = 0; t < 2; t++)
	{
		tfm_set_threads(t + 1);
		for (int k = 0; k < 4; k++)
			r[t][k] = zeros(n);
		tfm_dropout_forward(r[t][0], x, n, 0.25f, 77);
		tfm_residual_forward(r[t][1], x, y, n, 0.25f, 78);
		tfm_copy(r[t][2], y, n);
		tfm_dropout_backward(r[t][2], x, n, 0.25f, 79);
		tfm_copy(r[t][3], x, n);
		tfm_add_into(r[t][3], y, n);
	}
	for (int k = 0; k < 4; k++)
		CHECK(memcmp(r[0][k], r[1][k], n * sizeof(float)) == 0, "chunked op %d differs with 2 threads", k);
	for (size_t i = 0; i < n; i++)
		if (r[0][3][i] != x[i] + y[i] || (r[0][0][i] != 0.0f && r[0][0][i] != x[i] * (1.0f / 0.75f)))
		{
			CHECK(false, "chunked add / dropout wrong at %zu", i);
			break;
		}
	tfm_zero(r[1][3], n);
	for (size_t i = 0; i < n; i++)
		if (r[1][3][i] != 0.0f)
		{
			CHECK(false, "tfm_zero left %g at %zu", r[1][3][i], i);
			break;
		}
	for (int t = 0; t < 2; t++)
		for (int k = 0; k < 4; k++)
			free(r[t][k]);
	free(x);
	free(y);
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
	tfm_rng_seed(&rng, 1234);
	test_vecmath();
	test_gelu_tanh_and_eps();
	test_chunked_elementwise();
	for (int threads = 1; threads <= 2; threads++)
	{
		tfm_set_threads(threads);
		test_linear();
		test_layernorm();
		test_elementwise();
		for (int dr = 0; dr < 2; dr++)
		{
			float		p = dr ? 0.3f : 0.0f;

			test_attention(0, 0, p, 5, 5);
			test_attention(0, 1, p, 5, 5);
			test_attention(1, 0, p, 5, 6);
			test_attention(1, 1, p, 4, 9);		/* cached keys before the queries */
			test_attention(0, 1, p, 70, 70);	/* causal row blocks 32 + 32 + 6 */
			test_attention(1, 1, p, 40, 75);
			test_attention(0, 1, p, 3, 3);		/* fewer than PANEL_MIN queries: BLIS on the views */
			test_attention(1, 1, p, 2, 9);
			test_attention(1, 0, p, 1, 6);
			test_attention(1, 1, p, 9, 4);		/* more queries than keys: the first 5 see none */
		}
		test_embedding();
		test_pooling();
		test_cross_entropy();
	}
	printf("BLIS kernels: %s (%s)\n", tfm_blas_arch(), tfm_blas_arch_reason());
	return check_summary("test_layers");
}
