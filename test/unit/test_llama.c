/*
 * test_llama.c — the Llama-family layers and blocks: RMSNorm, rotary
 * positions, SwiGLU and grouped-query attention against central finite
 * differences; a whole tiny Llama model's gradients against finite
 * differences of its loss; cached decoding against the full forward pass;
 * and the SentencePiece-style BPE on hand-checked cases and on random bytes
 * (invalid UTF-8 included: ids in range, decode(encode(x)) == x); a
 * tied head (tie_word_embeddings, lm_head.weight absent) equals the untied
 * model whose out.w is the embedding transposed, in the full pass and the cache.
 * The imported reference models are test_llama_hf.c's.
 */
#include "check.h"
#include "model_fixtures.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/hf_map.h"
#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/rng.h"
#include "tfm/tokenizer.h"

/*
 * The step of the central differences: the float32 forward's rounding
 * noise divided by H must stay under ATOL.  With BLIS's AVX-512 (skx)
 * kernels, 1e-3 left one point in 64 of the Gemma model 0.0025 off (the
 * loss is deterministic; the noise moves with the kernels' summation
 * order); 3e-3 passes on skx, haswell and generic with the same tolerances.
 */
#define H 3e-3
#define ATOL 2e-3
#define RTOL 2e-2

static tfm_rng rng;

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

/* ---- RMSNorm ---- */
typedef struct
{
	int			N,
				d;
	float	   *x,
			   *g,
			   *out,
			   *rstd,
			   *R;
} rms_ctx;

static double
rms_loss(void *p)
{
	rms_ctx    *c = p;

	tfm_rmsnorm_forward(c->out, c->rstd, c->x, c->g, c->N, c->d, 1e-6f);
	return dot(c->out, c->R, (size_t) c->N * c->d);
}

static void
test_rmsnorm(void)
{
	rms_ctx		c = {5, 11};
	float	   *dx,
			   *dg;

	c.x = randn(c.N * c.d, 1);
	c.g = randn(c.d, 1);
	c.out = zeros(c.N * c.d);
	c.rstd = zeros(c.N);
	c.R = randn(c.N * c.d, 1);
	dx = zeros(c.N * c.d);
	dg = zeros(c.d);
	rms_loss(&c);
	{
		/* y = g x / √(mean x² + eps), by hand for row 0 */
		double		ss = 0.0;

		for (int i = 0; i < c.d; i++)
			ss += (double) c.x[i] * c.x[i];
		ss = 1.0 / sqrt(ss / c.d + 1e-6);
		CHECK(fabs(c.out[3] - c.g[3] * c.x[3] * ss) < 1e-6, "rmsnorm value %g", c.out[3]);
	}
	tfm_rmsnorm_backward(dx, dg, c.R, c.x, c.g, c.rstd, c.N, c.d);
	check_fd("rmsnorm dx", rms_loss, &c, c.x, dx, c.N * c.d, 0, H, ATOL, RTOL);
	check_fd("rmsnorm dg", rms_loss, &c, c.g, dg, c.d, 0, H, ATOL, RTOL);
	free(c.x); free(c.g); free(c.out); free(c.rstd); free(c.R); free(dx); free(dg);
}

/* ---- rotary positions ---- */
typedef struct
{
	int			N,
				nh,
				s,
				rs,
				T;
	int32_t    *pos;
	float	   *x,
			   *y,
			   *R;
} rope_ctx;

static double
rope_loss(void *p)
{
	rope_ctx   *c = p;

	float		inv[TFM_ROPE_MAX_HALF];

	tfm_rope_freqs_default(inv, c->s, 10000.0f);
	memcpy(c->y, c->x, sizeof(float) * c->N * c->rs);
	tfm_rope_apply(c->y, c->N, c->nh, c->s, c->rs, c->pos, c->T, inv, 0);
	return dot(c->y, c->R, (size_t) c->N * c->rs);
}

static void
test_rope(int with_pos)
{
	rope_ctx	c = {6, 3, 8, 3 * 8 + 5, 3};
	float	   *dx;
	int32_t		pos[6] = {7, 0, 3, 1000, 2, 41};
	float		inv[TFM_ROPE_MAX_HALF];

	c.pos = with_pos ? pos : NULL;
	c.x = randn((size_t) c.N * c.rs, 1);
	c.y = zeros((size_t) c.N * c.rs);
	c.R = randn((size_t) c.N * c.rs, 1);
	rope_loss(&c);
	{
		/* by hand: row 1 (position 1, or 0 with explicit positions), head 2, i = 1 */
		int			r = 1,
					j = 2,
					i = 1;
		double		p = with_pos ? pos[r] : r % c.T;
		double		a = p * (1.0 / pow(10000.0, 2.0 * i / c.s));
		const float *x = c.x + r * c.rs + j * c.s;
		double		want = x[i] * cos(a) - x[i + c.s / 2] * sin(a);

		CHECK(fabs(c.y[r * c.rs + j * c.s + i] - want) < 1e-5, "rope value %g want %g",
			  c.y[r * c.rs + j * c.s + i], want);
		/* columns past the rotated heads are untouched */
		CHECK(c.y[r * c.rs + 3 * 8 + 2] == c.x[r * c.rs + 3 * 8 + 2], "rope touched a tail column");
	}
	/* backward: the inverse rotation of R, which also undoes the forward */
	dx = zeros((size_t) c.N * c.rs);
	memcpy(dx, c.R, sizeof(float) * c.N * c.rs);
	tfm_rope_freqs_default(inv, c.s, 10000.0f);
	tfm_rope_apply(dx, c.N, c.nh, c.s, c.rs, c.pos, c.T, inv, 1);
	check_fd(with_pos ? "rope dx (positions)" : "rope dx", rope_loss, &c, c.x, dx,
			 (size_t) c.N * c.rs, 0, H, ATOL, RTOL);
	free(c.x); free(c.y); free(c.R); free(dx);
}

/*
 * Llama 3.1's rescaled frequencies (factor 8, low 1, high 4, original 8192;
 * head 128, θ 500000) by hand: a high frequency kept, a low one divided by
 * 8, one between mixed with smooth = (8192/wavelen − 1)/3
 */
static void
test_rope_llama3(void)
{
	float		inv[64],
				base[64];
	int			mid = 0;

	tfm_rope_freqs_default(base, 128, 500000.0f);
	memcpy(inv, base, sizeof(inv));
	tfm_rope_llama3(inv, 64, 8.0f, 1.0f, 4.0f, 8192);
	for (int i = 0; i < 64; i++)
	{
		double		wavelen = 2.0 * M_PI / base[i],
					want = base[i];

		if (wavelen > 8192.0)
			want = base[i] / 8.0;
		else if (wavelen >= 2048.0)
		{
			double		smooth = (8192.0 / wavelen - 1.0) / 3.0;

			want = (1.0 - smooth) * base[i] / 8.0 + smooth * base[i];
			mid++;
		}
		CHECK(fabs(inv[i] - want) <= 1e-6 * want, "llama3 frequency %d: %g want %g", i, inv[i], want);
	}
	CHECK(inv[0] == base[0] && inv[63] == base[63] / 8.0f && mid > 0 && mid < 64,
		  "llama3 bands: kept, divided, %d mixed", mid);
}

/* ---- SwiGLU ---- */
typedef struct
{
	int			N,
				f;
	float	   *hg,
			   *out,
			   *R;
} sw_ctx;

static double
sw_loss(void *p)
{
	sw_ctx	   *c = p;

	tfm_swiglu_forward(c->out, c->hg, c->N, c->f);
	return dot(c->out, c->R, (size_t) c->N * c->f);
}

static void
test_swiglu(void)
{
	sw_ctx		c = {4, 7};
	float	   *dhg;

	c.hg = randn((size_t) c.N * 2 * c.f, 2);
	c.out = zeros((size_t) c.N * c.f);
	c.R = randn((size_t) c.N * c.f, 1);
	sw_loss(&c);
	{
		double		g = c.hg[2 * c.f + 3],
					u = c.hg[2 * c.f + c.f + 3];

		CHECK(fabs(c.out[c.f + 3] - g / (1.0 + exp(-g)) * u) < 1e-5, "swiglu value");
	}
	dhg = randn((size_t) c.N * 2 * c.f, 5);	/* overwritten */
	tfm_swiglu_backward(dhg, c.R, c.hg, c.N, c.f);
	check_fd("swiglu", sw_loss, &c, c.hg, dhg, (size_t) c.N * 2 * c.f, 0, H, ATOL, RTOL);
	free(c.hg); free(c.out); free(c.R); free(dhg);
}

/* ---- GeGLU (Gemma) ---- */
static double
gg_loss(void *p)
{
	sw_ctx	   *c = p;

	tfm_geglu_forward(c->out, c->hg, c->N, c->f);
	return dot(c->out, c->R, (size_t) c->N * c->f);
}

static void
test_geglu(int N)
{
	sw_ctx		c = {N, 7};
	float	   *dhg;

	c.hg = randn((size_t) c.N * 2 * c.f, 2);
	c.out = zeros((size_t) c.N * c.f);
	c.R = randn((size_t) c.N * c.f, 1);
	gg_loss(&c);
	{
		double		g = c.hg[2 * c.f + 3],
					u = c.hg[2 * c.f + c.f + 3],
					gelu = 0.5 * g * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (g + 0.044715 * g * g * g)));

		CHECK(fabs(c.out[c.f + 3] - gelu * u) < 1e-5, "geglu value");
	}
	dhg = randn((size_t) c.N * 2 * c.f, 5);	/* overwritten */
	tfm_geglu_backward(dhg, c.R, c.hg, c.N, c.f);
	check_fd("geglu", gg_loss, &c, c.hg, dhg, (size_t) c.N * 2 * c.f, 0, H, ATOL, RTOL);
	free(c.hg); free(c.out); free(c.R); free(dhg);
}

/* ---- grouped-query attention ---- */
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
	size_t		nout;
} gq_ctx;

static double
gq_loss(void *p)
{
	gq_ctx	   *c = p;

	tfm_attention_forward(c->out, c->probs, c->q, c->k, c->v, NULL, &c->sh, c->scratch);
	return dot(c->out, c->R, c->nout);
}

/* fused q|k|v rows with h query heads and kvh key/value heads */
static void
test_gqa(int h, int kvh, int T)
{
	gq_ctx		c;
	int			B = 2,
				s = 4,
				d = h * s,
				kvd = kvh * s,
				w = d + 2 * kvd;
	float	   *qkv,
			   *dqkv,
			   *ref;
	char		name[64];

	memset(&c, 0, sizeof(c));
	c.sh.B = B;
	c.sh.Tq = c.sh.Tk = T;
	c.sh.h = h;
	c.sh.kvh = kvh;
	c.sh.s = s;
	c.sh.causal = 1;
	c.sh.rsq = c.sh.rsk = c.sh.rsv = w;
	c.sh.rso = d;
	c.nout = (size_t) B * T * d;
	qkv = randn((size_t) B * T * w, 1);
	c.q = qkv;
	c.k = qkv + d;
	c.v = qkv + d + kvd;
	c.out = zeros(c.nout);
	c.probs = zeros((size_t) B * h * T * T);
	c.scratch = zeros(tfm_attention_scratch(&c.sh, tfm_get_threads()));
	c.R = randn(c.nout, 1);
	gq_loss(&c);

	/* the same as full attention with each key/value head repeated */
	{
		int			wf = 3 * d;
		float	   *full = zeros((size_t) B * T * wf),
				   *out2 = zeros(c.nout),
				   *probs2 = zeros((size_t) B * h * T * T);
		tfm_attn_shape sh = c.sh;

		for (int r = 0; r < B * T; r++)
			for (int j = 0; j < h; j++)
			{
				int			jk = j / (h / kvh);

				memcpy(full + (size_t) r * wf + j * s, qkv + (size_t) r * w + j * s, sizeof(float) * s);
				memcpy(full + (size_t) r * wf + d + j * s, qkv + (size_t) r * w + d + jk * s,
					   sizeof(float) * s);
				memcpy(full + (size_t) r * wf + 2 * d + j * s,
					   qkv + (size_t) r * w + d + kvd + jk * s, sizeof(float) * s);
			}
		sh.kvh = 0;
		sh.rsq = sh.rsk = sh.rsv = wf;
		tfm_attention_forward(out2, probs2, full, full + d, full + 2 * d, NULL, &sh, c.scratch);
		snprintf(name, sizeof(name), "gqa h=%d kv=%d T=%d vs repeated heads", h, kvh, T);
		check_close(name, c.out, out2, c.nout, 1e-6, 0);
		free(full); free(out2); free(probs2);
	}
	dqkv = zeros((size_t) B * T * w);
	tfm_attention_backward(dqkv, dqkv + d, dqkv + d + kvd, c.R, c.probs, c.q, c.k, c.v,
						   &c.sh, c.scratch);
	snprintf(name, sizeof(name), "gqa h=%d kv=%d T=%d", h, kvh, T);
	check_fd(name, gq_loss, &c, qkv, dqkv, (size_t) B * T * w, 400, H, ATOL, RTOL);
	(void) ref;
	free(qkv); free(dqkv); free(c.out); free(c.probs); free(c.scratch); free(c.R);
}

/*
 * Gemma 2's attention: scores scaled by attn_scale and soft-capped,
 * S' = c·tanh(S/c), before the softmax; values against a direct
 * computation, gradients by finite differences (T 70: the row blocks)
 */
static void
test_softcap_attention(int T)
{
	gq_ctx		c;
	int			B = 2,
				h = 4,
				kvh = 2,
				s = 4,
				d = h * s,
				kvd = kvh * s,
				w = d + 2 * kvd;
	float	   *qkv,
			   *dqkv;
	double		worst = 0.0;
	char		name[64];

	memset(&c, 0, sizeof(c));
	c.sh.B = B;
	c.sh.Tq = c.sh.Tk = T;
	c.sh.h = h;
	c.sh.kvh = kvh;
	c.sh.s = s;
	c.sh.causal = 1;
	c.sh.rsq = c.sh.rsk = c.sh.rsv = w;
	c.sh.rso = d;
	c.sh.scale = 0.7f;
	c.sh.softcap = 1.5f;		/* scores reach ±5: the cap binds */
	c.nout = (size_t) B * T * d;
	qkv = randn((size_t) B * T * w, 1);
	c.q = qkv;
	c.k = qkv + d;
	c.v = qkv + d + kvd;
	c.out = zeros(c.nout);
	c.probs = zeros((size_t) B * h * T * T);
	c.scratch = zeros(tfm_attention_scratch(&c.sh, tfm_get_threads()));
	c.R = randn(c.nout, 1);
	gq_loss(&c);
	/* batch 1, query head 3 (key/value head 1), every row, directly */
	for (int t = 0; t < T; t++)
	{
		double		sc[80],
					mx = -1e30,
					sum = 0.0;
		const float *qr = qkv + ((size_t) T + t) * w + 3 * s;

		for (int j = 0; j <= t; j++)
		{
			const float *kr = qkv + ((size_t) T + j) * w + d + 1 * s;
			double		dotp = 0.0;

			for (int i = 0; i < s; i++)
				dotp += (double) qr[i] * kr[i];
			sc[j] = 1.5 * tanh(0.7 * dotp / 1.5);
			mx = fmax(mx, sc[j]);
		}
		for (int j = 0; j <= t; j++)
			sum += exp(sc[j] - mx);
		for (int i = 0; i < s; i++)
		{
			double		o = 0.0;

			for (int j = 0; j <= t; j++)
				o += exp(sc[j] - mx) / sum * qkv[((size_t) T + j) * w + d + kvd + 1 * s + i];
			worst = fmax(worst, fabs(o - c.out[((size_t) T + t) * d + 3 * s + i]));
		}
	}
	CHECK(worst < 1e-5, "soft-capped attention differs from the direct computation by %g", worst);
	dqkv = zeros((size_t) B * T * w);
	tfm_attention_backward(dqkv, dqkv + d, dqkv + d + kvd, c.R, c.probs, c.q, c.k, c.v,
						   &c.sh, c.scratch);
	snprintf(name, sizeof(name), "soft-capped attention T=%d", T);
	check_fd(name, gq_loss, &c, qkv, dqkv, (size_t) B * T * w, 400, H, ATOL, RTOL);
	free(qkv); free(dqkv); free(c.out); free(c.probs); free(c.scratch); free(c.R);
}

/* ---- Gemma 2's final soft cap ---- */
typedef struct
{
	float	   *x,
			   *y,
			   *R;
	size_t		n;
} cap_ctx;

static double
cap_loss(void *p)
{
	cap_ctx    *c = p;

	memcpy(c->y, c->x, sizeof(float) * c->n);
	tfm_softcap_forward(c->y, c->n, 3.0f);
	return dot(c->y, c->R, c->n);
}

static void
test_softcap(void)
{
	cap_ctx		c = {.n = 50};
	float	   *g;

	c.x = randn(c.n, 4);		/* values to ±10: the cap binds */
	c.y = zeros(c.n);
	c.R = randn(c.n, 1);
	cap_loss(&c);
	CHECK(fabs(c.y[7] - 3.0 * tanh(c.x[7] / 3.0)) < 1e-6, "soft cap value");
	g = zeros(c.n);
	memcpy(g, c.R, sizeof(float) * c.n);
	tfm_softcap_backward(g, c.y, c.n, 3.0f);
	check_fd("final soft cap", cap_loss, &c, c.x, g, c.n, 0, H, ATOL, RTOL);
	free(c.x); free(c.y); free(c.R); free(g);
}

static tfm_config tiny_config(int tie, int qkv_bias, int gemma);

/* Gemma 3's rope: a local layer's frequencies rope_local_theta's, unscaled;
 * a global layer's rope_theta's divided by the linear factor */
static void
test_rope_layers(void)
{
	tfm_config	c = tiny_config(1, 0, 9);
	float		inv[TFM_ROPE_MAX_HALF],
				want[TFM_ROPE_MAX_HALF];
	double		worst = 0.0;

	tfm_config_rope_freqs(inv, &c, 0, 0);
	for (int i = 0; i < 3; i++)
		worst = fmax(worst, fabs(inv[i] - pow(30.0, -2.0 * i / 6.0)));
	tfm_config_rope_freqs(inv, &c, 1, 0);
	for (int i = 0; i < 3; i++)
		worst = fmax(worst, fabs(inv[i] - pow(1000.0, -2.0 * i / 6.0) / 4.0));
	CHECK(worst < 1e-6, "Gemma 3's local and global rope frequencies differ by %g", worst);
	/* without rope_local_theta a windowed layer rotates as the others */
	c.rope_local_theta = 0.0f;
	tfm_config_rope_freqs(inv, &c, 0, 0);
	tfm_config_rope_freqs(want, &c, 1, 0);
	CHECK(memcmp(inv, want, sizeof(float) * 3) == 0, "rope_local_theta 0: one table");
}

/* ---- a whole tiny Llama ---- */
static tfm_config
tiny_config(int tie, int qkv_bias, int gemma)
{	/* gemma: 1 Gemma, 2 Gemma 2, 3 Gemma 2 with heads wider than d / heads;
	 * 4 Llama with Llama 3.1's rope scaling; 5 Qwen3: q/k norms, heads 6 wide;
	 * 6 SmolLM3: layer 1 of 2 without rotary positions; 7 a sliding window of 3
	 * on layer 0 (window_pattern 2, Gemma 2's), 8 on every layer (Mistral's);
	 * 9 Gemma 3: Gemma 2's without caps, q/k norms, layer 0 local (window 3,
	 * its own rope base), layer 1 global (linear rope scaling);
	 * 10 Phi-4-mini: longrope (original length 5) over the first 6 of 8-wide
	 * heads (partial_rotary_factor 0.75) */
	tfm_config	c;

	tfm_config_defaults(&c, TFM_TASK_LM);
	c.arch = TFM_ARCH_LLAMA;
	c.positions = TFM_POS_ROPE;
	c.vocab = 23;
	c.d_model = 16;
	c.heads = 4;
	c.kv_heads = 2;
	c.d_ff = 12;
	c.dec_layers = 2;
	c.max_len = 64;
	c.pad_id = -1;
	c.tie = tie;
	c.ln_eps = 1e-6f;
	c.rope_theta = 10000.0f;
	c.qkv_bias = qkv_bias;		/* Qwen2 */
	if (gemma == 7 || gemma == 8)
	{
		c.attn_window = 3;
		c.window_pattern = gemma == 7 ? 2 : 0;
		return c;
	}
	if (gemma == 6)
	{
		c.nope_interval = 2;
		return c;
	}
	if (gemma == 5)
	{
		c.qk_norm = 1;
		c.head_size = 6;
		return c;
	}
	if (gemma == 10)
	{
		static const float sf[3] = {1.0f, 1.3f, 2.1f},
					lf[3] = {1.7f, 4.0f, 9.5f};

		c.head_size = 8;
		c.rope_dim = 6;
		c.rope_type = TFM_ROPE_LONGROPE;
		c.rope_orig_max = 5;
		c.rope_attn_factor = 1.2f;
		c.rope_theta = 50.0f;
		memcpy(c.rope_short, sf, sizeof(sf));
		memcpy(c.rope_long, lf, sizeof(lf));
		return c;
	}
	if (gemma == 4)
	{
		/* a 4-wide head: one frequency mixed (wavelength 6.3), one divided (44) */
		c.rope_type = TFM_ROPE_LLAMA3;
		c.rope_factor = 8.0f;
		c.rope_low_freq = 1.0f;
		c.rope_high_freq = 4.0f;
		c.rope_orig_max = 20;
		c.rope_theta = 50.0f;
		return c;
	}
	if (gemma)
	{
		/* Gemma: GeGLU, embeddings ·√d, one key/value head */
		c.gated_act = TFM_GATED_GELU_TANH;
		c.scale_embeddings = 1;
		c.kv_heads = 1;
	}
	if (gemma == 3 || gemma == 9)
		c.head_size = 6;		/* q 24 wide, k and v 6 */
	if (gemma >= 2)
	{
		/* Gemma 2: norms after both sub-layers, scaled and soft-capped scores, capped logits */
		c.post_norms = 1;
		c.attn_scale = 0.4f;
		c.attn_softcap = 1.0f;
		c.final_softcap = 2.0f;
	}
	if (gemma == 9)
	{
		/* Gemma 3: no caps; q/k norms; layer 0 local, layer 1 global */
		c.attn_softcap = 0.0f;
		c.final_softcap = 0.0f;
		c.qk_norm = 1;
		c.attn_window = 3;
		c.window_pattern = 2;
		c.rope_theta = 1000.0f;
		c.rope_local_theta = 30.0f;
		c.rope_type = TFM_ROPE_LINEAR;
		c.rope_factor = 4.0f;
	}
	return c;
}

/*
 * longrope's factors follow the sequence's length: cached decoding, one
 * token at a time, gives at every step the logits of one pass over the
 * prefix (the short factors up to rope_orig_max 5 tokens, the long past it,
 * the cache recomputed when the sequence passes 5), and the two factors'
 * logits differ (the test could fail)
 */
static void
test_longrope_decode(tfm_model *m, int32_t *in, int32_t *tg)
{
	tfm_decoder *dec = tfm_decoder_create(m, 1, 16, 4);
	float		logits[23],
				prev[23];
	double		worst = 0.0,
				differ = 0.0;
	tfm_batch	b;

	CHECK(dec != NULL, "longrope decoder");
	if (!dec)
		return;
	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.input = in;
	tfm_decoder_feed(dec, in, NULL, 3, logits);
	for (int t = 2; t < 7; t++)
	{
		if (t > 2)
			tfm_decoder_feed(dec, in + t, NULL, 1, logits);
		b.T = t + 1;
		tfm_model_forward(m, &b, false, 0);
		for (int v = 0; v < 23; v++)
			worst = fmax(worst, fabs(logits[v] - m->logits[t * 23 + v]));
		if (t == 4)
			memcpy(prev, m->logits + 4 * 23, sizeof(prev));
		if (t == 5)				/* position 4 again, now with the long factors */
			for (int v = 0; v < 23; v++)
				differ = fmax(differ, fabs(prev[v] - m->logits[4 * 23 + v]));
	}
	CHECK(worst < 1e-5, "longrope cached decoding differs from each prefix's pass by %g", worst);
	CHECK(differ > 1e-3, "longrope's short and long factors give the same logits (%g)", differ);
	tfm_decoder_free(dec);
	/* the gradients with the short factors too (the model's test ran T 7: the long ones) */
	b.T = 5;
	b.target = tg;
	check_model_fd(m, &b, "longrope short factors", 60, H, ATOL, RTOL);
}

/* Phi-3.5's rope: inv_i = 1/(f_i·θ^(2i/r)), f short up to rope_orig_max, long past it */
static void
test_rope_longrope(void)
{
	tfm_config	c = tiny_config(1, 0, 10);
	float		inv[TFM_ROPE_MAX_HALF];
	double		worst = 0.0;

	tfm_config_rope_freqs(inv, &c, 0, 5);
	for (int i = 0; i < 3; i++)
		worst = fmax(worst, fabs(inv[i] - 1.0 / (c.rope_short[i] * pow(50.0, 2.0 * i / 6.0))));
	tfm_config_rope_freqs(inv, &c, 1, 6);
	for (int i = 0; i < 3; i++)
		worst = fmax(worst, fabs(inv[i] - 1.0 / (c.rope_long[i] * pow(50.0, 2.0 * i / 6.0))));
	CHECK(worst < 1e-6, "longrope frequencies differ by %g", worst);
	CHECK(tfm_config_check(&c) == NULL, "longrope config: %s", tfm_config_check(&c));
	c.rope_long[1] = 0.0f;
	CHECK(tfm_config_check(&c) != NULL, "a zero long factor refused");
	c.rope_long[1] = 4.0f;
	c.rope_short[3] = 1.0f;
	CHECK(tfm_config_check(&c) != NULL, "a factor past the rotated pairs refused");
	c.rope_short[3] = 0.0f;
	c.rope_dim = 7;
	CHECK(tfm_config_check(&c) != NULL, "an odd rope_dim refused");
	c.rope_dim = 10;
	CHECK(tfm_config_check(&c) != NULL, "a rope_dim over the head refused");
	c.rope_dim = 6;
	c.rope_attn_factor = 0.5f;
	CHECK(tfm_config_check(&c) != NULL, "an attention factor under 1 refused");
}

static void
test_model(int tie, int qkv_bias, int gemma)
{
	tfm_config	cfg = tiny_config(tie, qkv_bias, gemma);
	const char *bad = tfm_config_check(&cfg);
	tfm_model  *m;
	int32_t		in[2 * 7],
				tg[2 * 7];
	tfm_batch	b;
	char		what[64];

	CHECK(bad == NULL, "tiny llama config: %s", bad ? bad : "");
	m = tfm_model_create(&cfg);
	tfm_model_init(m, 7);
	/* norm gains away from 1, so their gradients are tested too */
	for (int i = 0; i < m->n_tensors; i++)
		if (m->info[i].ndim == 1)
			for (size_t j = 0; j < m->info[i].size; j++)
				m->params[m->info[i].offset + j] = 1.0f + 0.3f * tfm_rng_normal(&rng);
	for (int i = 0; i < 14; i++)
	{
		in[i] = (int32_t) tfm_rng_below(&rng, 23);
		tg[i] = (int32_t) tfm_rng_below(&rng, 23);
	}
	memset(&b, 0, sizeof(b));
	b.B = 2;
	b.T = 7;
	b.input = in;
	b.target = tg;
	snprintf(what, sizeof(what), "llama tie=%d qkv_bias=%d gemma=%d", tie, qkv_bias, gemma);
	check_model_fd(m, &b, what, 60, H, ATOL, RTOL);

	/* cached decoding, one token at a time after a prompt of 3, equals the full pass
	 * (longrope: each prefix's pass, test_longrope_decode) */
	if (cfg.rope_type != TFM_ROPE_LONGROPE)
	{
		tfm_decoder *dec = tfm_decoder_create(m, 1, 16, 4);
		float		logits[23];
		double		worst = 0.0;

		tfm_model_forward(m, &b, false, 0);
		CHECK(dec != NULL, "decoder");
		tfm_decoder_feed(dec, in, NULL, 3, logits);
		for (int v = 0; v < 23; v++)
			worst = fmax(worst, fabs(logits[v] - m->logits[2 * 23 + v]));
		for (int t = 3; t < 7; t++)
		{
			tfm_decoder_feed(dec, in + t, NULL, 1, logits);
			for (int v = 0; v < 23; v++)
				worst = fmax(worst, fabs(logits[v] - m->logits[t * 23 + v]));
		}
		CHECK(worst < 1e-5, "llama cached decoding differs from the full pass by %g", worst);
		tfm_decoder_free(dec);
	}
	if (cfg.rope_type == TFM_ROPE_LONGROPE)
		test_longrope_decode(m, in, tg);
	tfm_model_free(m);
}

/* ---- SentencePiece-style BPE: hostile bytes round-trip, never crash ---- */
static void
test_spiece(void)
{
	const char *base[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab",
	"\xE2\x96\x81" "ab", "\xC3\xA9"};
	const uint8_t *pieces[266];
	size_t		lens[266];
	char		hexp[256][7];
	int32_t		merges[6];
	tfm_tokenizer *t = NULL;
	tfm_status err;
	int			n = 0;

	for (int i = 0; i < 3; i++, n++)
	{
		pieces[n] = (const uint8_t *) base[i];
		lens[n] = strlen(base[i]);
	}
	for (int b = 0; b < 256; b++, n++)
	{
		snprintf(hexp[b], sizeof(hexp[b]), "<0x%02X>", b);
		pieces[n] = (const uint8_t *) hexp[b];
		lens[n] = 6;
	}
	for (int i = 3; i < 10; i++, n++)
	{
		pieces[n] = (const uint8_t *) base[i];
		lens[n] = strlen(base[i]);
	}
	/* ids: ▁ 259, a 260, b 261, ▁a 262, ab 263, ▁ab 264, é 265 */
	merges[0] = 259; merges[1] = 260;	/* ▁ a */
	merges[2] = 260; merges[3] = 261;	/* a b */
	merges[4] = 262; merges[5] = 261;	/* ▁a b */
	CHECK(tfm_tok_import_spiece(&t, pieces, lens, n, merges, 3, 0, 1, 2, TFM_TOK_INFO_TEXT_BOS, &err) == TFM_OK,
		  "spiece import: %s", err.msg);
	if (!t)
		return;
	{
		int32_t		ids[16];
		size_t		nid;
		char		out[64];
		size_t		no;

		CHECK(tfm_tok_encode(ids, NULL, 16, &nid, t, "ab ab", 5, 0, 0, &err) == TFM_OK, "encode");
		/* ▁ab ▁ab: "▁a" (rank 0) before "ab" (rank 1), then "▁a b" */
		CHECK(nid == 2 && ids[0] == 264 && ids[1] == 264, "ab ab -> %zu ids, %d", nid, ids[0]);
		CHECK(tfm_tok_encode(ids, NULL, 16, &nid, t, "x\xC3\xA9", 3, 0, 0, &err) == TFM_OK &&
			  nid == 3 && ids[1] == 3 + 'x' && ids[2] == 265, "byte fallback and é");
		CHECK(tfm_tok_decode(out, sizeof(out), &no, t, ids, nid, 0, &err) == TFM_OK &&
			  no == 3 && memcmp(out, "x\xC3\xA9", 3) == 0, "decode");
		CHECK(tfm_tok_encode(ids, NULL, 16, &nid, t, "", 0, 0, 0, &err) == TFM_OK && nid == 0,
			  "empty text");
	}
	/* random bytes, invalid UTF-8 included: ids in range and an exact round trip */
	for (int round = 0; round < 2000; round++)
	{
		int			len = (int) tfm_rng_below(&rng, 40);
		char		text[40],
					out[400];
		int32_t		ids[48];
		size_t		nid,
					no;
		bool		ok = true;

		for (int i = 0; i < len; i++)
		{
			uint64_t	r = tfm_rng_below(&rng, 8);

			text[i] = r < 3 ? "ab "[r] : (char) tfm_rng_below(&rng, 256);
		}
		ok = tfm_tok_encode(ids, NULL, tfm_tok_encode_bound(len, 0), &nid, t, text, len, 0, 0,
							&err) == TFM_OK;
		for (size_t i = 0; ok && i < nid; i++)
			ok = ids[i] >= 0 && ids[i] < n;
		ok = ok && tfm_tok_decode(out, sizeof(out), &no, t, ids, nid, 0, &err) == TFM_OK &&
			no == (size_t) len && memcmp(out, text, len) == 0;
		if (!ok)
		{
			CHECK(0, "spiece round trip failed on a text of %d bytes", len);
			break;
		}
	}
	tfm_tok_free(t);
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
	tfm_rng_seed(&rng, 4321);
	for (int threads = 1; threads <= 2; threads++)
	{
		tfm_set_threads(threads);
		test_rmsnorm();
		test_rope(0);
		test_rope(1);
		test_swiglu();
		test_geglu(4);
		test_geglu(40);			/* rows over the threads */
		test_gqa(4, 2, 5);
		test_gqa(4, 1, 5);
		test_gqa(6, 3, 70);		/* causal row blocks */
		test_gqa(2, 2, 3);		/* no grouping, fewer than PANEL_MIN queries */
		test_model(1, 0, 0);
		test_model(0, 0, 0);
		test_model(1, 1, 0);	/* Qwen2: q/k/v biases, their gradients too */
		test_model(1, 0, 1);	/* Gemma: GeGLU, scaled embeddings, multi-query */
		test_model(1, 0, 2);	/* Gemma 2: and post-norms, soft caps, attn_scale */
		test_model(0, 0, 3);	/* and head_size 6, not d / heads = 4 */
		test_model(0, 0, 4);	/* Llama 3.1's rope scaling */
		test_model(1, 0, 5);	/* Qwen3's q/k norms */
		test_model(1, 0, 6);	/* SmolLM3's NoPE layers */
		test_model(1, 0, 7);	/* a sliding window on one layer of two */
		test_model(0, 0, 8);	/* on every layer */
		test_model(1, 0, 9);	/* Gemma 3: q/k norms, local and global layers' rope */
		test_model(1, 0, 10);	/* Phi-4-mini: longrope, partial rotation */
		test_rope_longrope();
		test_rope_llama3();
		test_rope_layers();
		test_softcap_attention(5);
		test_softcap_attention(70);
		test_softcap();
	}
	tfm_set_threads(2);
	test_spiece();
	return check_summary("test_llama");
}
