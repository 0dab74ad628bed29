/*
 * test_generate.c — the language model's decode loop (tfm_generate_run) on
 * small models with learned and sinusoidal positions: greedy decoding picks
 * the argmax of a full forward pass over the context at every step (also
 * across a slide of the window) with its log-probability; a left-padded
 * batch of two prompts gives each prompt's tokens alone, greedy and
 * sampled; a seed repeats, top-k 1 is greedy; <eos>, <bos>, padding, the
 * stop hook and the poll hook do what generate.h says; the mask hook
 * limits each row to the tokens it leaves and ends a row when it says so.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/generate.h"
#include "tfm/model.h"

#define V 29

static void
config(tfm_config *c, int positions, int norm)
{
	tfm_config_defaults(c, TFM_TASK_LM);
	c->vocab = V;
	c->d_model = 16;
	c->heads = 4;
	c->d_ff = 32;
	c->max_len = 24;
	c->norm = norm;
	c->positions = positions;
	c->tie = positions == TFM_POS_LEARNED;
	c->dropout = c->attn_dropout = 0.0f;
	c->dec_layers = 2;
}

static tfm_model *
model(const tfm_config *c, uint64_t seed)
{
	tfm_model  *m = tfm_model_create(c);

	tfm_model_init(m, seed);
	/* larger weights, so that the distribution is far from uniform */
	for (size_t i = 0; i < m->n_floats; i++)
		m->params[i] += 0.3f * ((float) ((i * 2654435761u + seed) % 1000) / 500.0f - 1.0f);
	return m;
}

/*
 * The log-softmax of the last position of ids[0..t) by a full forward pass,
 * without padding (0) and <bos> (1), as the loop chooses.
 */
static void
full_logp(tfm_model *m, const int32_t *ids, int t, float *out)
{
	int32_t		tgt[64];
	float		logits[V];
	tfm_batch	b;

	memset(&b, 0, sizeof(b));
	b.B = 1;
	b.T = t;
	b.input = ids;
	b.target = tgt;
	for (int i = 0; i < t; i++)
		tgt[i] = 1;
	CHECK(tfm_model_forward(m, &b, false, 0) == 0, "forward");
	memcpy(logits, m->logits + (size_t) (t - 1) * V, sizeof(logits));
	logits[0] = logits[1] = -INFINITY;
	tfm_log_softmax(out, logits, V);
}

static tfm_gen_opts
opts(int max_tokens, float temperature, uint64_t seed)
{
	tfm_gen_opts o;

	memset(&o, 0, sizeof(o));
	o.max_tokens = max_tokens;
	o.temperature = temperature;
	o.top_k = 0;
	o.top_p = 1.0f;
	o.seed = seed;
	o.bos = 1;
	o.eos = 2;
	o.pad = 0;
	o.pad_is_token = true;
	return o;
}

/* decode B prompts; rows copied to ids (B, max_tokens), lens, logprobs */
static int
run(tfm_model *m, int32_t *const *prompts, const int *plens, int B, const tfm_gen_opts *o,
	int32_t *ids, int *lens, float *lps)
{
	tfm_generator *g = tfm_generator_create(m, prompts, plens, B, o);
	const tfm_gen_row *rows;
	int			rc;

	CHECK(g != NULL, "generator");
	if (!g)
		return -1;
	rc = tfm_generate_run(g);
	rows = tfm_generator_rows(g);
	for (int b = 0; b < B; b++)
	{
		lens[b] = rows[b].n;
		memcpy(ids + (size_t) b * o->max_tokens, rows[b].ids, sizeof(int32_t) * rows[b].n);
		if (lps)
			memcpy(lps + (size_t) b * o->max_tokens, rows[b].logprob, sizeof(float) * rows[b].n);
	}
	tfm_generator_free(g);
	return rc;
}

/*
 * Greedy decoding of one prompt against full passes: the context a step
 * sees is the last ctx tokens, ctx growing by one and, when the cache is
 * full (cap), starting over from the last keep tokens.
 */
static void
test_greedy(int positions, int norm, uint64_t seed, int max_tokens, int cap, int keep)
{
	tfm_config	c;
	tfm_model  *m;
	int32_t		prompt[5] = {7, 12, 3, 25, 9},
			   *pp = prompt,
				hist[64],
				got[64];
	float		lps[64],
				logp[V];
	int			plen = 5,
				n,
				ctx = 5,
				h = 5;
	tfm_gen_opts o = opts(max_tokens, 0.0f, 1);
	char		what[160];

	config(&c, positions, norm);
	m = model(&c, seed);
	/* no <eos>: every step produces a token */
	o.eos = -1;
	CHECK(run(m, &pp, &plen, 1, &o, got, &n, lps) == 0, "run");
	CHECK(n == max_tokens, "greedy pos=%d norm=%d: %d tokens, not %d", positions, norm, n,
		  max_tokens);
	{
		int			seen[V] = {0},
					distinct = 0;

		for (int s = 0; s < n; s++)
			distinct += seen[got[s]]++ == 0;
		CHECK(distinct >= 4, "greedy pos=%d norm=%d: only %d distinct tokens", positions, norm,
			  distinct);
	}
	memcpy(hist, prompt, sizeof(prompt));
	for (int s = 0; s < n; s++)
	{
		int			best = -1;

		full_logp(m, hist + h - ctx, ctx, logp);
		for (int i = 0; i < V; i++)
			if (i != o.pad && i != o.bos && (best < 0 || logp[i] > logp[best]))
				best = i;
		snprintf(what, sizeof(what), "greedy pos=%d norm=%d step %d (context %d)", positions,
				 norm, s, ctx);
		CHECK(got[s] == best, "%s: %d, the argmax is %d", what, got[s], best);
		CHECK(fabsf(lps[s] - logp[best]) <= 1e-4f + 1e-4f * fabsf(logp[best]),
			  "%s: logprob %g, not %g", what, lps[s], logp[best]);
		hist[h++] = got[s];
		ctx = ctx + 1 > cap ? keep : ctx + 1;
	}
	tfm_model_free(m);
}

/* two prompts (5 and 3 tokens) left-padded together, as each alone */
static void
test_batch(int positions, float temperature, int top_k, float top_p)
{
	tfm_config	c;
	tfm_model  *m;
	int32_t		p0[5] = {4, 17, 8, 21, 6},
				p1[3] = {11, 5, 19},
			   *both[2] = {p0, p1},
				ids2[2 * 12],
				ids1[12];
	float		lp2[2 * 12],
				lp1[12];
	int			lens2[2] = {5, 3},
				n2[2],
				n1;
	tfm_gen_opts o = opts(12, temperature, 99);

	config(&c, positions, 0);
	m = model(&c, 31 + positions);
	o.top_k = top_k;
	o.top_p = top_p;
	CHECK(run(m, both, lens2, 2, &o, ids2, n2, lp2) == 0, "batch run");
	for (int b = 0; b < 2; b++)
	{
		tfm_gen_opts o1 = o;

		/* row b samples with seed + b */
		o1.seed = o.seed + b;
		CHECK(run(m, both + b, lens2 + b, 1, &o1, ids1, &n1, lp1) == 0, "single run");
		CHECK(n1 == n2[b], "batch pos=%d T=%g row %d: %d tokens, alone %d", positions,
			  temperature, b, n2[b], n1);
		for (int i = 0; i < n1 && i < n2[b]; i++)
		{
			CHECK(ids2[b * 12 + i] == ids1[i], "batch pos=%d T=%g row %d token %d: %d, alone %d",
				  positions, temperature, b, i, ids2[b * 12 + i], ids1[i]);
			CHECK(fabsf(lp2[b * 12 + i] - lp1[i]) <= 1e-4f, "batch row %d logprob %d", b, i);
		}
	}
	tfm_model_free(m);
}

typedef struct hook_state
{
	int			stop_at;		/* stop a row at this many tokens */
	int			polls;
	int			cancel_at;		/* poll returns nonzero on this call (0: never) */
} hook_state;

static bool
stop_hook(void *arg, int b, const int32_t *ids, int n)
{
	hook_state *h = arg;

	(void) b;
	(void) ids;
	return n >= h->stop_at + b;
}

static int
poll_hook(void *arg)
{
	hook_state *h = arg;

	return ++h->polls == h->cancel_at;
}

static void
test_sampling_and_hooks(void)
{
	tfm_config	c;
	tfm_model  *m;
	int32_t		p[4] = {3, 14, 22, 9},
			   *pp[2] = {p, p},
				a[2 * 16],
				b[2 * 16],
				greedy[16];
	float		la[2 * 16],
				lb[2 * 16];
	int			plen[2] = {4, 4},
				na[2],
				nb[2],
				ng,
				differ = 0;
	tfm_gen_opts o;
	hook_state	hs;

	config(&c, TFM_POS_LEARNED, 0);
	m = model(&c, 77);

	/* a seed repeats, bit for bit; the two rows (seeds s and s + 1) differ */
	o = opts(16, 1.5f, 1234);
	o.eos = -1;
	CHECK(run(m, pp, plen, 2, &o, a, na, la) == 0, "sampled run");
	CHECK(run(m, pp, plen, 2, &o, b, nb, lb) == 0, "sampled run again");
	CHECK(na[0] == 16 && na[1] == 16 && nb[0] == 16 && nb[1] == 16, "sampled lengths");
	CHECK(memcmp(a, b, sizeof(a)) == 0 && memcmp(la, lb, sizeof(la)) == 0, "a seed repeats");
	for (int i = 0; i < 16; i++)
		differ += a[i] != a[16 + i];
	CHECK(differ > 0, "rows seeded apart sample apart");
	for (int i = 0; i < 2 * 16; i++)
		CHECK(a[i] != o.pad && a[i] != o.bos, "padding or <bos> produced at %d", i);

	/* top-k 1 at any temperature is greedy */
	o = opts(16, 0.0f, 1);
	o.eos = -1;
	CHECK(run(m, pp, plen, 1, &o, greedy, &ng, NULL) == 0, "greedy run");
	o.temperature = 2.0f;
	o.top_k = 1;
	o.seed = 555;
	CHECK(run(m, pp, plen, 1, &o, a, na, NULL) == 0, "top-1 run");
	CHECK(na[0] == ng && memcmp(a, greedy, sizeof(int32_t) * ng) == 0, "top-k 1 is greedy");

	/* <eos> ends a row and is not kept */
	o = opts(16, 0.0f, 1);
	o.eos = greedy[3];
	CHECK(run(m, pp, plen, 1, &o, a, na, NULL) == 0, "eos run");
	{
		int			first = 0;

		while (greedy[first] != o.eos)
			first++;
		CHECK(na[0] == first, "<eos> at %d ends the row: %d tokens", first, na[0]);
	}

	/* the stop hook ends a row after the token it saw; rows end apart */
	o = opts(16, 0.0f, 1);
	o.eos = -1;
	memset(&hs, 0, sizeof(hs));
	hs.stop_at = 5;
	o.stop = stop_hook;
	o.poll = poll_hook;
	o.hook_arg = &hs;
	CHECK(run(m, pp, plen, 2, &o, a, na, NULL) == 0, "stop run");
	CHECK(na[0] == 5 && na[1] == 6, "stopped at %d and %d tokens", na[0], na[1]);
	CHECK(memcmp(a, greedy, sizeof(int32_t) * 5) == 0, "stopped row as greedy");
	/* polled before every step: 6 steps, the last ending both rows */
	CHECK(hs.polls == 6, "polled %d times", hs.polls);

	/* a poll that says stop cancels */
	memset(&hs, 0, sizeof(hs));
	hs.stop_at = 100;
	hs.cancel_at = 3;
	CHECK(run(m, pp, plen, 2, &o, a, na, NULL) == TFM_ECANCELED, "cancelled");
	CHECK(na[0] == 2 && na[1] == 2, "cancelled after %d and %d tokens", na[0], na[1]);

	/* the bound covers more prompts and more tokens */
	CHECK(tfm_generate_bytes(&c, plen, 2, 16, false, 1) > tfm_generate_bytes(&c, plen, 1, 16, false, 1),
		  "bytes grow with the batch");
	CHECK(tfm_generate_bytes(&c, plen, 1, 32, false, 1) > tfm_generate_bytes(&c, plen, 1, 16, false, 1),
		  "bytes grow with max_tokens");
	tfm_model_free(m);
}

/* the mask hook: row b may produce only tokens 10 + b and 20 + b, alternately; it ends after 5 */
static bool
mask_two(void *arg, int b, float *logits, int n)
{
	int		   *steps = arg;
	int			keep = (steps[b] % 2 == 0 ? 10 : 20) + b;

	if (steps[b]++ >= 5)
		return true;
	for (int i = 0; i < n; i++)
		if (i != keep)
			logits[i] = -INFINITY;
	return false;
}

static void
test_mask_hook(void)
{
	tfm_config	c;
	tfm_model  *m;
	int32_t		p0[3] = {4, 5, 6},
				p1[2] = {7, 8},
			   *prompts[2] = {p0, p1},
				ids[2 * 16];
	int			plens[2] = {3, 2},
				lens[2],
				steps[2] = {0, 0};
	float		lps[2 * 16];
	tfm_gen_opts o;

	config(&c, TFM_POS_LEARNED, 0);
	m = model(&c, 5);
	o = opts(16, 1.0f, 9);
	o.mask = mask_two;
	o.hook_arg = steps;
	CHECK(run(m, prompts, plens, 2, &o, ids, lens, lps) == 0, "masked run");
	for (int b = 0; b < 2; b++)
	{
		CHECK(lens[b] == 5, "row %d: %d tokens, want 5 (the mask ended it)", b, lens[b]);
		for (int i = 0; i < lens[b] && i < 5; i++)
		{
			CHECK(ids[b * 16 + i] == (i % 2 == 0 ? 10 : 20) + b, "row %d token %d is %d", b, i, ids[b * 16 + i]);
			/* the one token left has all the probability */
			CHECK(fabsf(lps[b * 16 + i]) < 1e-6f, "row %d token %d log-probability %g", b, i, lps[b * 16 + i]);
		}
	}
	tfm_model_free(m);
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
	/*
	 * Learned positions: cap max_len (24), a slide keeps 18; 5 + 40 tokens
	 * slide three times.  Sinusoidal: cap 5 + 19 = 24, no slide.  (Seeds of
	 * models whose greedy text does not settle into a loop of one or two
	 * tokens.)
	 */
	test_greedy(TFM_POS_LEARNED, 0, 5, 40, 24, 18);
	test_greedy(TFM_POS_LEARNED, 1, 7, 40, 24, 18);
	test_greedy(TFM_POS_SINUSOIDAL, 0, 3, 19, 24, 24);
	for (int pos = 0; pos < 2; pos++)
	{
		test_batch(pos, 0.0f, 0, 1.0f);
		test_batch(pos, 1.0f, 0, 1.0f);
		test_batch(pos, 0.8f, 5, 0.9f);
	}
	test_sampling_and_hooks();
	test_mask_hook();
	return check_summary("test_generate");
}
