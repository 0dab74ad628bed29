/*
 * generate.c — a language model's decode loop (see generate.h): the
 * prompts left-padded into one history, fed at once, then a token per step
 * per row until each row ends; the window slides when the cache is full.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/decode.h"
#include "tfm/generate.h"

struct tfm_generator
{
	tfm_model  *m;
	tfm_gen_opts o;
	int			B,
				V,
				P,				/* the longest prompt */
				cap,			/* the decoder's positions */
				keep,			/* positions kept when the window slides */
				hist_cap,
				hlen;
	tfm_decoder *d;
	int32_t    *hist;			/* (B, hist_cap) every fed token */
	uint8_t    *hpad;
	float	   *logits;			/* (B, V) */
	float	   *scratch;		/* 2 · V */
	int		   *iscratch;		/* V */
	tfm_sampler *samp;			/* B */
	int32_t    *next;			/* B */
	uint8_t    *next_pad;
	int32_t    *buf;			/* (B, max(P, keep)) a feed of many positions */
	uint8_t    *pbuf;
	tfm_gen_row *rows;
};

static inline int
imax(int a, int b)
{
	return a > b ? a : b;
}

static inline int
imin(int a, int b)
{
	return a < b ? a : b;
}

/* the window: the longest prompt P, the decoder's cap and what a slide keeps */
static void
geometry(const tfm_config *c, const int *plens, int B, int max_tokens, int *P, int *cap,
		 int *keep)
{
	*P = 1;
	for (int b = 0; b < B; b++)
		*P = imax(*P, plens[b]);
	*keep = imax(1, (3 * c->max_len) / 4);
	/* sinusoidal positions continue past max_len, up to a bounded window */
	*cap = c->positions != TFM_POS_SINUSOIDAL ? c->max_len : imin(*P + max_tokens, 8 * c->max_len);
	if (c->positions == TFM_POS_SINUSOIDAL)
		*keep = imax(1, *cap - c->max_len / 4);
	/*
	 * When the prompt and every new token fit, the window never slides: the
	 * cache needs only those positions and the largest feed is the prompt
	 * (sizing for a slide that cannot happen asked 1.5 GB of a Llama with
	 * 2,048 positions for 80 tokens).
	 */
	if (*P + max_tokens <= *cap)
	{
		*cap = *P + max_tokens;
		*keep = *P;
	}
}

size_t
tfm_generate_bytes(const tfm_config *c, const int *plens, int B, int max_tokens, bool lowp,
				   int threads)
{
	int			P,
				cap,
				keep,
				V = c->vocab,
				hist_cap;

	geometry(c, plens, B, max_tokens, &P, &cap, &keep);
	hist_cap = P + max_tokens;
	/* the decoder, its pass and the loop's own arrays */
	return tfm_decoder_bytes(c, B, cap, imax(P, keep), 0, lowp, threads) +
		(size_t) B * (V * sizeof(float) + hist_cap * 5 + max_tokens * 8 + P * 5 +
					  sizeof(tfm_sampler) + 8) + (size_t) V * 12;
}

void
tfm_generator_free(tfm_generator *g)
{
	if (!g)
		return;
	if (g->rows)
		for (int b = 0; b < g->B; b++)
		{
			free(g->rows[b].ids);
			free(g->rows[b].logprob);
		}
	free(g->rows);
	tfm_decoder_free(g->d);
	free(g->hist);
	free(g->hpad);
	free(g->logits);
	free(g->scratch);
	free(g->iscratch);
	free(g->samp);
	free(g->next);
	free(g->next_pad);
	free(g->buf);
	free(g->pbuf);
	free(g);
}

tfm_generator *
tfm_generator_create(tfm_model *m, int32_t *const *prompts, const int *plens, int B,
					 const tfm_gen_opts *o)
{
	tfm_generator *g = calloc(1, sizeof(tfm_generator));
	int			nmax;
	bool		ok;

	if (!g)
		return NULL;
	g->m = m;
	g->o = *o;
	g->B = B;
	g->V = m->cfg.vocab;
	geometry(&m->cfg, plens, B, o->max_tokens, &g->P, &g->cap, &g->keep);
	g->hist_cap = g->P + o->max_tokens;
	nmax = imax(g->P, g->keep);
	g->d = tfm_decoder_create(m, B, g->cap, nmax);
	g->hist = malloc(sizeof(int32_t) * B * g->hist_cap);
	g->hpad = calloc((size_t) B * g->hist_cap, 1);
	g->logits = malloc(sizeof(float) * B * g->V);
	g->scratch = malloc(sizeof(float) * 2 * g->V);
	g->iscratch = malloc(sizeof(int) * g->V);
	g->samp = calloc(B, sizeof(tfm_sampler));
	g->next = malloc(sizeof(int32_t) * B);
	g->next_pad = calloc(B, 1);
	g->buf = malloc(sizeof(int32_t) * B * nmax);
	g->pbuf = malloc((size_t) B * nmax);
	g->rows = calloc(B, sizeof(tfm_gen_row));
	ok = g->d && g->hist && g->hpad && g->logits && g->scratch && g->iscratch && g->samp &&
		g->next && g->next_pad && g->buf && g->pbuf && g->rows;
	for (int b = 0; ok && b < B; b++)
	{
		g->rows[b].ids = malloc(sizeof(int32_t) * o->max_tokens);
		g->rows[b].logprob = malloc(sizeof(float) * o->max_tokens);
		ok = g->rows[b].ids && g->rows[b].logprob;
	}
	if (!ok)
	{
		tfm_generator_free(g);
		return NULL;
	}

	/* the prompts, left-padded */
	for (int b = 0; b < B; b++)
	{
		int			lead = g->P - plens[b];

		for (int t = 0; t < g->P; t++)
		{
			g->hist[(size_t) b * g->hist_cap + t] = t < lead ? o->pad : prompts[b][t - lead];
			g->hpad[(size_t) b * g->hist_cap + t] = t < lead;
		}
		g->samp[b].temperature = o->temperature;
		g->samp[b].top_k = o->top_k;
		g->samp[b].top_p = o->top_p;
		tfm_rng_seed(&g->samp[b].rng, o->seed + (uint64_t) b);
	}
	return g;
}

const tfm_gen_row *
tfm_generator_rows(const tfm_generator *g)
{
	return g->rows;
}

/* feed the last n positions of the history (a prompt, or a slid window) */
static int
feed_history(tfm_generator *g, int n)
{
	for (int b = 0; b < g->B; b++)
	{
		memcpy(g->buf + (size_t) b * n, g->hist + (size_t) b * g->hist_cap + g->hlen - n,
			   sizeof(int32_t) * n);
		memcpy(g->pbuf + (size_t) b * n, g->hpad + (size_t) b * g->hist_cap + g->hlen - n, n);
	}
	return tfm_decoder_feed(g->d, g->buf, g->pbuf, n, g->logits);
}

int
tfm_generate_run(tfm_generator *g)
{
	const tfm_gen_opts *o = &g->o;
	int			B = g->B,
				V = g->V,
				rc;

	g->hlen = g->P;
	rc = feed_history(g, g->P);
	if (rc != 0)
		return rc;

	for (int step = 0; step < o->max_tokens; step++)
	{
		bool		all_done = true;

		if (o->poll && o->poll(o->hook_arg) != 0)
			return TFM_ECANCELED;
		for (int b = 0; b < B; b++)
		{
			tfm_gen_row *r = &g->rows[b];
			float	   *logits = g->logits + (size_t) b * V;
			float		lp;
			int			tok;

			g->next[b] = o->pad;
			g->next_pad[b] = 1;
			if (r->done)
				continue;
			/* padding and <bos> are never produced */
			if (o->pad_is_token)
				logits[o->pad] = -INFINITY;
			if (o->bos != o->eos && o->bos < V)
				logits[o->bos] = -INFINITY;
			if (o->mask && o->mask(o->hook_arg, b, logits, V))
			{
				r->done = true;
				continue;
			}
			tok = tfm_sample(&g->samp[b], logits, V, g->scratch, g->iscratch, &lp);
			if (tok == o->eos)
			{
				r->done = true;
				continue;
			}
			r->ids[r->n] = tok;
			r->logprob[r->n] = lp;
			r->n++;
			if (o->stop && o->stop(o->hook_arg, b, r->ids, r->n))
				r->done = true;
			g->next[b] = tok;
			g->next_pad[b] = 0;
			if (!r->done && r->n < o->max_tokens)
				all_done = false;
		}
		if (all_done)
			break;
		for (int b = 0; b < B; b++)
		{
			g->hist[(size_t) b * g->hist_cap + g->hlen] = g->next[b];
			g->hpad[(size_t) b * g->hist_cap + g->hlen] = g->next_pad[b];
		}
		g->hlen++;
		if (tfm_decoder_len(g->d) + 1 > g->cap)
		{
			/* the positions end here: slide the window */
			tfm_decoder_reset(g->d);
			rc = feed_history(g, g->keep);
		}
		else
			rc = tfm_decoder_feed(g->d, g->next, g->next_pad, 1, g->logits);
		if (rc != 0)
			return rc;
	}
	return 0;
}
