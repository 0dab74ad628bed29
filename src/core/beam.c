/*
 * beam.c — beam search (see beam.h).
 *
 * Rows of the decoder are (source, beam) pairs.  Each step takes the
 * log-softmax of every live row, proposes the 2·beam best extensions per
 * source (score + log p), sorted by score with ties to the lower row and
 * token, files those ending in <eos> as finished and keeps the best `beam`
 * others as the next live rows; the cache rows are reordered to follow
 * their parents.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/beam.h"
#include "tfm/decode.h"

typedef struct cand
{
	float		score;
	int			row;			/* parent row within the source's beam */
	int			tok;
} cand;

static int
cand_cmp(const void *a, const void *b)
{
	const cand *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->row != y->row)
		return x->row - y->row;
	return x->tok - y->tok;
}

static float
penalty(float alpha, int n)
{
	return alpha <= 0.0f ? 1.0f : powf((5.0f + (float) n) / 6.0f, alpha);
}

typedef struct source_state
{
	tfm_hyp    *fin;			/* up to beam finished */
	int			nfin;
	bool		done;
} source_state;

static void
add_finished(source_state *s, int beam, const int32_t *ids, int n, float logprob, float alpha)
{
	float		score = logprob / penalty(alpha, n);
	int			worst = -1;

	if (s->nfin == beam)
	{
		for (int i = 0; i < s->nfin; i++)
			if (worst < 0 || s->fin[i].score < s->fin[worst].score)
				worst = i;
		if (s->fin[worst].score >= score)
			return;
		free(s->fin[worst].ids);
	}
	else
		worst = s->nfin++;
	s->fin[worst].ids = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
	if (s->fin[worst].ids && n > 0)
		memcpy(s->fin[worst].ids, ids, sizeof(int32_t) * n);
	s->fin[worst].n = n;
	s->fin[worst].score = score;
	s->fin[worst].logprob = logprob;
}

static int
hyp_cmp(const void *a, const void *b)
{
	const tfm_hyp *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return 0;
}

int
tfm_beam_search(tfm_model *m, const int32_t *src, int B, int Ts,
				const tfm_beam_opts *o, tfm_hyp *out,
				int (*cancel) (void *), void *cancel_arg)
{
	const tfm_config *c = &m->cfg;
	int			K = o->beam,
				R = B * K,
				V = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab,
				T = o->max_tokens;
	tfm_decoder *d = NULL;
	int32_t    *hist = NULL,
			   *nhist = NULL,
			   *next = NULL;
	float	   *score = NULL,
			   *nscore = NULL,
			   *logits = NULL,
			   *logp = NULL;
	int		   *from = NULL;
	cand	   *cands = NULL;
	source_state *st = NULL;
	int			rc = -1;

	d = tfm_decoder_create(m, R, T + 1, 1);
	hist = malloc(sizeof(int32_t) * R * (T + 1));
	nhist = malloc(sizeof(int32_t) * R * (T + 1));
	next = malloc(sizeof(int32_t) * R);
	score = malloc(sizeof(float) * R);
	nscore = malloc(sizeof(float) * R);
	logits = malloc(sizeof(float) * R * V);
	logp = malloc(sizeof(float) * V);
	from = malloc(sizeof(int) * R);
	cands = malloc(sizeof(cand) * 2 * (size_t) K * K);
	st = calloc(B, sizeof(source_state));
	if (!d || !hist || !nhist || !next || !score || !nscore || !logits || !logp ||
		!from || !cands || !st)
		goto done;
	for (int b = 0; b < B; b++)
	{
		st[b].fin = calloc(K, sizeof(tfm_hyp));
		if (!st[b].fin)
			goto done;
	}
	if (tfm_decoder_encode(d, src, Ts, K) != 0)
		goto done;
	for (int r = 0; r < R; r++)
	{
		next[r] = o->bos;
		/* one live hypothesis per source to start with */
		score[r] = r % K == 0 ? 0.0f : -INFINITY;
	}

	for (int t = 0; t < T; t++)
	{
		bool		all_done = true;

		if (tfm_decoder_feed(d, next, NULL, 1, logits) != 0)
			goto done;
		for (int b = 0; b < B; b++)
		{
			int			nc = 0;
			int			live = 0;
			float		best_live = -INFINITY;

			if (st[b].done)
			{
				for (int k = 0; k < K; k++)
				{
					from[b * K + k] = b * K;
					nscore[b * K + k] = -INFINITY;
					next[b * K + k] = o->eos;
				}
				continue;
			}
			/* the 2K best extensions of each live row, then the 2K best overall */
			for (int k = 0; k < K; k++)
			{
				int			r = b * K + k;
				cand	   *row_c = cands + nc;
				int			take = 0;

				if (score[r] == -INFINITY)
					continue;
				tfm_log_softmax(logp, logits + (size_t) r * V, V);
				/* padding and <bos> are never produced */
				if (o->pad >= 0 && o->pad < V)
					logp[o->pad] = -INFINITY;
				if (o->bos >= 0 && o->bos < V && o->bos != o->eos)
					logp[o->bos] = -INFINITY;
				for (int v = 0; v < V; v++)
				{
					float		sc = score[r] + logp[v];

					if (take < 2 * K)
					{
						row_c[take].score = sc;
						row_c[take].row = k;
						row_c[take].tok = v;
						take++;
						if (take == 2 * K)
							qsort(row_c, take, sizeof(cand), cand_cmp);
					}
					else if (sc > row_c[take - 1].score)
					{
						int			i = take - 1;

						while (i > 0 && row_c[i - 1].score < sc)
						{
							row_c[i] = row_c[i - 1];
							i--;
						}
						row_c[i].score = sc;
						row_c[i].row = k;
						row_c[i].tok = v;
					}
				}
				if (take < 2 * K)
					qsort(row_c, take, sizeof(cand), cand_cmp);
				nc += take;
			}
			qsort(cands, nc, sizeof(cand), cand_cmp);
			for (int i = 0; i < nc && live < K; i++)
			{
				cand	   *cd = &cands[i];
				int			parent = b * K + cd->row;

				if (cd->tok == o->eos)
				{
					if (i < K)
						add_finished(&st[b], K, hist + (size_t) parent * (T + 1), t, cd->score,
									 o->length_penalty);
					continue;
				}
				from[b * K + live] = parent;
				nscore[b * K + live] = cd->score;
				next[b * K + live] = cd->tok;
				if (cd->score > best_live)
					best_live = cd->score;
				live++;
			}
			for (int k = live; k < K; k++)
			{
				from[b * K + k] = b * K;
				nscore[b * K + k] = -INFINITY;
				next[b * K + k] = o->eos;
			}
			/* done: enough finished and no live one can catch up (scores only fall) */
			if (st[b].nfin == K)
			{
				float		worst_fin = INFINITY;

				for (int i = 0; i < st[b].nfin; i++)
					if (st[b].fin[i].score < worst_fin)
						worst_fin = st[b].fin[i].score;
				if (live == 0 || best_live / penalty(o->length_penalty, T) <= worst_fin)
					st[b].done = true;
			}
			else if (live == 0)
				st[b].done = true;
			if (!st[b].done)
				all_done = false;
		}
		/* histories follow their parents */
		for (int r = 0; r < R; r++)
		{
			memcpy(nhist + (size_t) r * (T + 1), hist + (size_t) from[r] * (T + 1), sizeof(int32_t) * t);
			nhist[(size_t) r * (T + 1) + t] = next[r];
			score[r] = nscore[r];
		}
		{
			int32_t    *tmp = hist;

			hist = nhist;
			nhist = tmp;
		}
		if (tfm_decoder_reorder(d, from) != 0)
			goto done;
		if (cancel && cancel(cancel_arg))
		{
			rc = -2;
			goto done;
		}
		if (all_done)
			break;
		if (t == T - 1)
		{
			/* out of length: live hypotheses count as finished */
			for (int b = 0; b < B; b++)
				for (int k = 0; k < K && !st[b].done; k++)
				{
					int			r = b * K + k;

					if (score[r] > -INFINITY)
						add_finished(&st[b], K, hist + (size_t) r * (T + 1), t + 1, score[r],
									 o->length_penalty);
				}
		}
	}
	for (int b = 0; b < B; b++)
	{
		qsort(st[b].fin, st[b].nfin, sizeof(tfm_hyp), hyp_cmp);
		for (int i = 0; i < o->nbest; i++)
		{
			tfm_hyp    *h = &out[(size_t) b * o->nbest + i];

			if (i < st[b].nfin)
			{
				*h = st[b].fin[i];
				st[b].fin[i].ids = NULL;
			}
			else
			{
				h->ids = NULL;
				h->n = -1;
			}
		}
	}
	rc = 0;
done:
	if (st)
		for (int b = 0; b < B; b++)
		{
			if (st[b].fin)
				for (int i = 0; i < st[b].nfin; i++)
					free(st[b].fin[i].ids);
			free(st[b].fin);
		}
	free(st);
	tfm_decoder_free(d);
	free(hist);
	free(nhist);
	free(next);
	free(score);
	free(nscore);
	free(logits);
	free(logp);
	free(from);
	free(cands);
	return rc;
}

void
tfm_hyps_free(tfm_hyp *h, int n)
{
	for (int i = 0; i < n; i++)
	{
		free(h[i].ids);
		h[i].ids = NULL;
	}
}
