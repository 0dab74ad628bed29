/*
 * beam.c — beam search (see beam.h).
 *
 * Rows of the decoder are (source, beam) pairs.  Each step proposes the
 * 2·beam best extensions of every live row (score + log p, the rows in
 * parallel), sorts a source's proposals by score with ties to the lower row
 * and token, files those ending in <eos> as finished and keeps the best
 * `beam` others as the next live rows; the decoder's rows follow their
 * parents, and the rows of sources that are done are dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/beam.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "../kernels/vecmath.h"

typedef struct cand
{
	float		score;
	int			row;			/* parent row within the source's beam */
	int			tok;
} cand;

static inline void
swap_ids(int32_t **a, int32_t **b)
{
	int32_t    *t = *a;

	*a = *b;
	*b = t;
}

static inline void
swap_floats(float **a, float **b)
{
	float	   *t = *a;

	*a = *b;
	*b = t;
}

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

/*
 * The divisor of a hypothesis of n tokens: GNMT's, or with hf_rules
 * Hugging Face's length^alpha, its length counting the <eos> that ended it
 */
static double
hyp_penalty(const tfm_beam_opts *o, int n, bool finished)
{
	if (!o->hf_rules)
		return penalty(o->length_penalty, n);
	return o->length_penalty == 0.0f ? 1.0 : pow((double) (n + (finished ? 1 : 0)), o->length_penalty);
}

typedef struct source_state
{
	tfm_hyp    *fin;			/* up to beam finished */
	int			nfin;
	bool		done;
} source_state;

static void
add_finished(source_state *s, int beam, const int32_t *ids, int n, float logprob,
			 const tfm_beam_opts *o, bool finished)
{
	float		score = (float) (logprob / hyp_penalty(o, n, finished));
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

/* log Σ exp over a row of logits */
TFM_HOT static float
row_logsumexp(const float *z, int V)
{
	float		mx = z[0],
				sum = 0.0f;

#pragma omp simd reduction(max:mx)
	for (int v = 1; v < V; v++)
		mx = z[v] > mx ? z[v] : mx;
#pragma omp simd reduction(+:sum)
	for (int v = 0; v < V; v++)
		sum += tfm_expf(z[v] - mx);
	return mx + logf(sum);
}

/*
 * The w best extensions of one live row: its score plus the log-probability
 * of each of its w likeliest next tokens, best first (ties to the lower id);
 * padding and <bos> are never produced; with eos_only (forced_eos's last
 * step) only <eos>, at the row's score.  Returns how many (fewer than w only
 * if the vocabulary is that small).
 */
static int
row_candidates(const float *z, int V, float score, int row, int w, const tfm_beam_opts *o,
			   bool eos_only, int *tok, cand *out)
{
	int			n = 0;
	float		lse = row_logsumexp(z, V);

	for (int v = 0; v < V; v++)
	{
		int			i;

		if (v == o->pad || (v == o->bos && o->bos != o->eos) || (eos_only && v != o->eos))
			continue;
		if (n == w && !(z[v] > z[tok[n - 1]]))
			continue;
		i = n < w ? n++ : w - 1;
		while (i > 0 && z[tok[i - 1]] < z[v])
		{
			tok[i] = tok[i - 1];
			i--;
		}
		tok[i] = v;
	}
	for (int i = 0; i < n; i++)
	{
		/* a forced <eos> has probability 1 (generate's ForcedEOSTokenLogitsProcessor) */
		out[i].score = eos_only ? score : score + (z[tok[i]] - lse);
		out[i].row = row;
		out[i].tok = tok[i];
	}
	return n;
}

size_t
tfm_beam_bytes(const tfm_config *c, int B, int Ts, const tfm_beam_opts *o, bool lowp,
			   int threads)
{
	const size_t K = o->beam,
				W = 2 * (size_t) o->beam,
				R = (size_t) B * K,
				T = o->max_tokens,
				V = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab;

	return tfm_decoder_bytes(c, (int) R, (int) T + 1, 1, Ts, lowp, threads) +
		2 * sizeof(int32_t) * R * (T + 1) + 6 * sizeof(int32_t) * R + sizeof(float) * R * V +
		sizeof(int) * B + sizeof(int) * R * W + sizeof(cand) * (R * W + K * W) +
		(size_t) B * (sizeof(source_state) + K * sizeof(tfm_hyp)) +
		/* finished hypotheses: up to beam per source, each up to max_tokens ids */
		R * (sizeof(int32_t) * (T + 1) + 16);
}

/*
 * Rows of the decoder are (active source, beam) pairs: the K rows of the
 * j-th source still decoding are j·K .. j·K + K - 1.  Each step the decoder
 * keeps only the rows of sources not yet done (tfm_decoder_select), so a
 * batch costs what its unfinished sources need.
 */
int
tfm_beam_search(tfm_model *m, const int32_t *src, int B, int Ts,
				const tfm_beam_opts *o, tfm_hyp *out,
				int (*cancel) (void *), void *cancel_arg)
{
	const tfm_config *c = &m->cfg;
	int			K = o->beam,
				W = 2 * o->beam,
				R = B * K,
				V = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? c->tgt_vocab : c->vocab,
				T = o->max_tokens,
				nA = B;			/* sources still decoding */
	tfm_decoder *d = NULL;
	int32_t    *hist = NULL,
			   *nhist = NULL,
			   *next = NULL,
			   *nnext = NULL;
	float	   *score = NULL,
			   *nscore = NULL,
			   *logits = NULL;
	int		   *from = NULL,
			   *act = NULL,
			   *ncand = NULL,
			   *toks = NULL;
	cand	   *rowc = NULL,
			   *cands = NULL;
	source_state *st = NULL;
	int			rc = -1;

	d = tfm_decoder_create(m, R, T + 1, 1);
	hist = malloc(sizeof(int32_t) * R * (T + 1));
	nhist = malloc(sizeof(int32_t) * R * (T + 1));
	next = malloc(sizeof(int32_t) * R);
	nnext = malloc(sizeof(int32_t) * R);
	score = malloc(sizeof(float) * R);
	nscore = malloc(sizeof(float) * R);
	logits = malloc(sizeof(float) * R * V);
	from = malloc(sizeof(int) * R);
	act = malloc(sizeof(int) * B);
	ncand = malloc(sizeof(int) * R);
	toks = malloc(sizeof(int) * R * W);
	rowc = malloc(sizeof(cand) * R * W);
	cands = malloc(sizeof(cand) * K * W);
	st = calloc(B, sizeof(source_state));
	if (!d || !hist || !nhist || !next || !nnext || !score || !nscore || !logits || !from ||
		!act || !ncand || !toks || !rowc || !cands || !st)
		goto done;
	for (int b = 0; b < B; b++)
	{
		st[b].fin = calloc(K, sizeof(tfm_hyp));
		if (!st[b].fin)
			goto done;
		act[b] = b;
	}
	if (tfm_decoder_encode(d, src, Ts, K) != 0)
		goto done;
	for (int r = 0; r < R; r++)
	{
		next[r] = o->bos;
		/* one live hypothesis per source to start with */
		score[r] = r % K == 0 ? 0.0f : -INFINITY;
	}

	for (int t = 0; t < T && nA > 0; t++)
	{
		int			nR = nA * K,
					kept = 0;

		if (tfm_decoder_feed(d, next, NULL, 1, logits) != 0)
			goto done;
		/* the W best extensions of every live row, rows in parallel */
#pragma omp parallel for num_threads(tfm_get_threads()) if((size_t) nR * V >= 65536) \
	schedule(dynamic, 4)
		for (int r = 0; r < nR; r++)
			ncand[r] = score[r] == -INFINITY ? 0 :
				row_candidates(logits + (size_t) r * V, V, score[r], r % K, W, o,
							   o->forced_eos && t == T - 1, toks + (size_t) r * W, rowc + (size_t) r * W);

		/* per source: the K best live extensions; those ending in <eos> finish */
		for (int j = 0; j < nA; j++)
		{
			source_state *s = &st[act[j]];
			int			nc = 0,
						live = 0;
			float		best_live = -INFINITY;

			for (int k = 0; k < K; k++)
			{
				memcpy(cands + nc, rowc + (size_t) (j * K + k) * W, sizeof(cand) * ncand[j * K + k]);
				nc += ncand[j * K + k];
			}
			qsort(cands, nc, sizeof(cand), cand_cmp);
			for (int i = 0; i < nc && live < K; i++)
			{
				cand	   *cd = &cands[i];
				int			parent = j * K + cd->row;

				if (cd->tok == o->eos)
				{
					if (i < K)
						add_finished(s, K, hist + (size_t) parent * (T + 1), t, cd->score, o, true);
					continue;
				}
				from[kept + live] = parent;
				nscore[kept + live] = cd->score;
				nnext[kept + live] = cd->tok;
				if (cd->score > best_live)
					best_live = cd->score;
				live++;
			}
			/* done: enough finished and no live one can catch up (scores only fall) */
			if (s->nfin == K)
			{
				float		worst_fin = INFINITY;

				for (int i = 0; i < s->nfin; i++)
					if (s->fin[i].score < worst_fin)
						worst_fin = s->fin[i].score;
				if (live == 0 || (o->hf_rules ?
								  worst_fin >= (float) (cands[0].score / hyp_penalty(o, t + 1, false)) :
								  best_live / penalty(o->length_penalty, T) <= worst_fin))
					s->done = true;
			}
			else if (live == 0)
				s->done = true;
			if (s->done)
				continue;		/* its rows are dropped */
			for (int k = live; k < K; k++)
			{
				/* an empty slot: never extended, so whatever its row holds will do */
				from[kept + k] = kept + k;
				nscore[kept + k] = -INFINITY;
				nnext[kept + k] = o->eos;
			}
			act[kept / K] = act[j];
			kept += K;
		}
		nA = kept / K;

		/* histories follow their parents; the decoder keeps the surviving rows */
		for (int r = 0; r < kept; r++)
		{
			memcpy(nhist + (size_t) r * (T + 1), hist + (size_t) from[r] * (T + 1), sizeof(int32_t) * t);
			nhist[(size_t) r * (T + 1) + t] = nnext[r];
		}
		swap_ids(&hist, &nhist);
		swap_ids(&next, &nnext);
		swap_floats(&score, &nscore);
		if (tfm_decoder_select(d, from, kept) != 0)
			goto done;
		if (cancel && cancel(cancel_arg))
		{
			rc = TFM_ECANCELED;
			goto done;
		}
		if (t == T - 1)
		{
			/* out of length: live hypotheses count as finished */
			for (int r = 0; r < kept; r++)
				if (score[r] > -INFINITY)
					add_finished(&st[act[r / K]], K, hist + (size_t) r * (T + 1), t + 1, score[r],
								 o, false);
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
	free(nnext);
	free(score);
	free(nscore);
	free(logits);
	free(from);
	free(act);
	free(ncand);
	free(toks);
	free(rowc);
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
