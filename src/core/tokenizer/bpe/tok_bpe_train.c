/*
 * tok_bpe_train.c: learning merges from weighted words, shared by bpe
 * (symbols are bytes) and wordpiece (symbols are characters, "##" marks a
 * non-initial one).
 *
 * Design: every distinct word is laid out once in a flat array of symbols
 * with prev/next links; its count is its weight.  Each adjacent pair keeps
 * its weighted count and the list of positions (of its left symbol) where
 * it was ever created.  A merge visits only its own positions (sorted, so
 * left to right within a word), checks each one is still current, and
 * updates the counts of the neighbouring pairs incrementally (old pairs
 * lose the weight, new pairs gain it and record the position): no
 * recounting.  The best pair comes from a lazy max-heap of (count, pair):
 * entries are pushed when a count grows and re-validated when popped, and
 * ties are broken by the bytes of the left, then the right piece, so the
 * result depends on the counts alone, not on hash or insertion order.
 *
 * A merge whose result is already a piece (another split of the same
 * bytes) is not learned, so every piece has exactly one merge and merge
 * ranks order pieces consistently (the encoder relies on it).
 */
#include <stdlib.h>

#include "../tok_internal.h"

typedef struct pair_t
{
	int64_t  count;
	int32_t  left, right;
	int32_t *pos;
	uint32_t npos, cappos;
	uint32_t stamp;
	uint8_t  banned;
} pair_t;

typedef struct hentry
{
	int64_t count;
	int32_t pair;
} hentry;

typedef struct trainer
{
	tfm_tok_bpe_job *job;
	int32_t *sym, *next, *prev, *wid;
	pair_t  *pairs;
	size_t   npairs, cappairs;
	tfm_tok_u64map index;
	hentry  *heap;
	size_t   hn, hcap;
	tfm_tok_ivec changed;
	uint32_t stamp;
} trainer;

/* a before b: higher count, then smaller left piece, then smaller right piece */
static int
piece_cmp(const tfm_tok_strtab *v, int32_t a, int32_t b)
{
	size_t la = v->len[a], lb = v->len[b];
	int c = memcmp(tfm_tok_strtab_key(v, a), tfm_tok_strtab_key(v, b), la < lb ? la : lb);

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

static int
better(const trainer *tr, const hentry *a, const hentry *b)
{
	const pair_t *pa, *pb;
	int c;

	if (a->count != b->count)
		return a->count > b->count;
	if (a->pair == b->pair)
		return 0;
	pa = &tr->pairs[a->pair];
	pb = &tr->pairs[b->pair];
	c = piece_cmp(tr->job->vocab, pa->left, pb->left);
	if (c)
		return c < 0;
	return piece_cmp(tr->job->vocab, pa->right, pb->right) < 0;
}

static int
heap_push(trainer *tr, int64_t count, int32_t pair)
{
	hentry x = {count, pair};
	size_t i;

	if (tr->hn == tr->hcap &&
		tfm_grow((void **) &tr->heap, &tr->hcap, tr->hn + 1, sizeof(hentry)))
		return TFM_ENOMEM;
	i = tr->hn++;
	while (i > 0)
	{
		size_t p = (i - 1) / 2;

		if (!better(tr, &x, &tr->heap[p]))
			break;
		tr->heap[i] = tr->heap[p];
		i = p;
	}
	tr->heap[i] = x;
	return TFM_OK;
}

static hentry
heap_pop(trainer *tr)
{
	hentry top = tr->heap[0], x = tr->heap[--tr->hn];
	size_t i = 0, n = tr->hn;

	for (;;)
	{
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && better(tr, &tr->heap[c + 1], &tr->heap[c]))
			c++;
		if (!better(tr, &tr->heap[c], &x))
			break;
		tr->heap[i] = tr->heap[c];
		i = c;
	}
	if (n > 0)
		tr->heap[i] = x;
	return top;
}

/* index of pair (l, r), created if absent */
static int
pair_get(int32_t *idx, trainer *tr, int32_t l, int32_t r)
{
	uint64_t key = tfm_tok_pair_key(l, r);
	int32_t v = tfm_tok_u64map_get(&tr->index, key);

	if (v >= 0)
	{
		*idx = v;
		return TFM_OK;
	}
	if (tr->npairs >= INT32_MAX)
		return TFM_ELIMIT;
	if (tr->npairs == tr->cappairs &&
		tfm_grow((void **) &tr->pairs, &tr->cappairs, tr->npairs + 1, sizeof(pair_t)))
		return TFM_ENOMEM;
	v = (int32_t) tr->npairs++;
	memset(&tr->pairs[v], 0, sizeof(pair_t));
	tr->pairs[v].left = l;
	tr->pairs[v].right = r;
	if (tfm_tok_u64map_put(&tr->index, key, v))
		return TFM_ENOMEM;
	*idx = v;
	return TFM_OK;
}

static int
pair_add(trainer *tr, int32_t l, int32_t r, int64_t w, int32_t pos)
{
	int32_t idx;
	pair_t *p;
	int st;

	if ((st = pair_get(&idx, tr, l, r)) != TFM_OK)
		return st;
	p = &tr->pairs[idx];
	p->count += w;
	if (p->npos == p->cappos)
	{
		size_t cap = p->cappos;

		if (p->npos == UINT32_MAX ||
			tfm_grow((void **) &p->pos, &cap, (size_t) p->npos + 1, sizeof(int32_t)))
			return TFM_ENOMEM;
		p->cappos = cap > UINT32_MAX ? UINT32_MAX : (uint32_t) cap;
	}
	p->pos[p->npos++] = pos;
	if (p->stamp != tr->stamp)
	{
		p->stamp = tr->stamp;
		if (tfm_tok_ivec_push(&tr->changed, idx))
			return TFM_ENOMEM;
	}
	return TFM_OK;
}

static void
pair_sub(trainer *tr, int32_t l, int32_t r, int64_t w)
{
	int32_t idx = tfm_tok_u64map_get(&tr->index, tfm_tok_pair_key(l, r));
	pair_t *p;

	if (idx < 0)
		return;
	p = &tr->pairs[idx];
	p->count -= w;
	if (p->count <= 0)
	{
		/* every recorded position is stale now */
		p->count = 0;
		tfm_tok_dealloc(p->pos);
		p->pos = NULL;
		p->npos = p->cappos = 0;
	}
}

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;

	return (x > y) - (x < y);
}

/* applies merge (a, b) -> c at every current position of pair idx */
static int
apply_merge(trainer *tr, int32_t idx, int32_t c)
{
	int32_t a = tr->pairs[idx].left, b = tr->pairs[idx].right;
	int32_t *pos = tr->pairs[idx].pos;
	uint32_t npos = tr->pairs[idx].npos, k;
	int st;

	/* take the list: new positions of this pair cannot appear (c is new) */
	tr->pairs[idx].pos = NULL;
	tr->pairs[idx].npos = tr->pairs[idx].cappos = 0;
	qsort(pos, npos, sizeof(int32_t), cmp_i32);
	for (k = 0; k < npos; k++)
	{
		int32_t p = pos[k], q, pp, nq;
		int64_t w;

		if (k > 0 && pos[k - 1] == p)
			continue;
		if (tr->sym[p] != a || (q = tr->next[p]) < 0 || tr->sym[q] != b)
			continue;
		w = tr->job->word_count[tr->wid[p]];
		pp = tr->prev[p];
		nq = tr->next[q];
		if (pp >= 0)
		{
			pair_sub(tr, tr->sym[pp], a, w);
			if ((st = pair_add(tr, tr->sym[pp], c, w, pp)) != TFM_OK)
				goto fail;
		}
		if (nq >= 0)
		{
			pair_sub(tr, b, tr->sym[nq], w);
			if ((st = pair_add(tr, c, tr->sym[nq], w, p)) != TFM_OK)
				goto fail;
		}
		tr->pairs[idx].count -= w;
		tr->sym[p] = c;
		tr->sym[q] = -1;
		tr->next[p] = nq;
		if (nq >= 0)
			tr->prev[nq] = p;
	}
	tfm_tok_dealloc(pos);
	tr->pairs[idx].count = 0;
	tfm_tok_dealloc(tr->pairs[idx].pos);
	tr->pairs[idx].pos = NULL;
	tr->pairs[idx].npos = tr->pairs[idx].cappos = 0;
	return TFM_OK;
fail:
	tfm_tok_dealloc(pos);
	return st;
}

static void
trainer_free(trainer *tr)
{
	size_t i;

	tfm_tok_dealloc(tr->sym);
	tfm_tok_dealloc(tr->next);
	tfm_tok_dealloc(tr->prev);
	tfm_tok_dealloc(tr->wid);
	for (i = 0; i < tr->npairs; i++)
		tfm_tok_dealloc(tr->pairs[i].pos);
	tfm_tok_dealloc(tr->pairs);
	tfm_tok_u64map_free(&tr->index);
	tfm_tok_dealloc(tr->heap);
	tfm_tok_ivec_free(&tr->changed);
}

/* the best valid pair, or -1 */
static int32_t
best_pair(trainer *tr, int *st)
{
	*st = TFM_OK;
	while (tr->hn > 0)
	{
		hentry top = heap_pop(tr);
		pair_t *p = &tr->pairs[top.pair];

		if (p->banned || p->count <= 0 || top.count < p->count)
			continue;          /* stale; an exact entry exists when count > 0 */
		if (top.count > p->count)
		{
			if ((*st = heap_push(tr, p->count, top.pair)) != TFM_OK)
				return -1;
			continue;
		}
		return top.pair;
	}
	return -1;
}

int
tfm_tok_bpe_learn(tfm_tok_bpe_job *job, tfm_status *err)
{
	trainer tr;
	size_t P = job->word_start[job->n_words], i;
	int32_t w, merges_done = 0;
	tfm_tok_bytes piece = {0};
	int st = TFM_OK;

	memset(&tr, 0, sizeof(tr));
	tr.job = job;
	if (P >= INT32_MAX)
		return tfm_status_set(err, TFM_ELIMIT, "too much distinct text to learn merges from");
	tr.sym = tfm_tok_alloc((P + 1) * sizeof(int32_t));
	tr.next = tfm_tok_alloc((P + 1) * sizeof(int32_t));
	tr.prev = tfm_tok_alloc((P + 1) * sizeof(int32_t));
	tr.wid = tfm_tok_alloc((P + 1) * sizeof(int32_t));
	if (!tr.sym || !tr.next || !tr.prev || !tr.wid)
	{
		st = TFM_ENOMEM;
		goto done;
	}
	memcpy(tr.sym, job->syms, P * sizeof(int32_t));
	tr.stamp = 1;
	for (w = 0; w < job->n_words; w++)
	{
		size_t s = job->word_start[w], e = job->word_start[w + 1];

		for (i = s; i < e; i++)
		{
			tr.next[i] = i + 1 < e ? (int32_t) (i + 1) : -1;
			tr.prev[i] = i > s ? (int32_t) (i - 1) : -1;
			tr.wid[i] = w;
			if (i + 1 < e &&
				(st = pair_add(&tr, tr.sym[i], tr.sym[i + 1], job->word_count[w], (int32_t) i)) != TFM_OK)
				goto done;
		}
	}
	for (i = 0; i < tr.npairs; i++)
		if (tr.pairs[i].count > 0 && (st = heap_push(&tr, tr.pairs[i].count, (int32_t) i)))
			goto done;

	while (job->vocab->n < job->target)
	{
		int32_t best = best_pair(&tr, &st), c, a, b, e;
		const uint8_t *rp;
		size_t rl;
		int added;

		if (st != TFM_OK)
			goto done;
		if (best < 0 || tr.pairs[best].count < job->min_count)
			break;
		a = tr.pairs[best].left;
		b = tr.pairs[best].right;
		rp = tfm_tok_strtab_key(job->vocab, b);
		rl = job->vocab->len[b];
		if (job->wordpiece && rl >= 2 && rp[0] == '#' && rp[1] == '#')
		{
			rp += 2;
			rl -= 2;
		}
		piece.len = 0;
		if (tfm_tok_bytes_append(&piece, tfm_tok_strtab_key(job->vocab, a), job->vocab->len[a]) ||
			tfm_tok_bytes_append(&piece, rp, rl))
		{
			st = TFM_ENOMEM;
			goto done;
		}
		if (piece.len > TFM_TOK_MAX_PIECE_BYTES)
		{
			tr.pairs[best].banned = 1;
			continue;
		}
		e = tfm_tok_strtab_find(job->vocab, piece.data, piece.len);
		if (e >= 0)
		{
			tr.pairs[best].banned = 1;
			continue;
		}
		if ((st = tfm_tok_strtab_intern(&c, &added, job->vocab, piece.data, piece.len)) != TFM_OK)
			goto done;
		if (tfm_tok_ivec_push(job->merges, a) || tfm_tok_ivec_push(job->merges, b))
		{
			st = TFM_ENOMEM;
			goto done;
		}
		tr.stamp++;
		if (tr.stamp == 0)
			tr.stamp = 1;
		tr.changed.len = 0;
		if ((st = apply_merge(&tr, best, c)) != TFM_OK)
			goto done;
		for (i = 0; i < tr.changed.len; i++)
		{
			int32_t pi = tr.changed.data[i];

			if (tr.pairs[pi].count > 0 && (st = heap_push(&tr, tr.pairs[pi].count, pi)))
				goto done;
		}
		merges_done++;
		if (job->progress && (merges_done & 255) == 0 &&
			job->progress(job->progress_arg, job->vocab->n, job->target))
		{
			st = tfm_status_set(err, TFM_ECANCELED, "tokenizer training canceled");
			goto done;
		}
	}
done:
	trainer_free(&tr);
	tfm_tok_bytes_free(&piece);
	if (st == TFM_ENOMEM)
		return tfm_tok_oom(err);
	if (st == TFM_ELIMIT)
		return tfm_status_set(err, st, "too many distinct pairs to learn merges from");
	return st;
}
