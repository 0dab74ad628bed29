/*
 * tok_bpe_encode.c: byte-level BPE of one pre-token.
 *
 * Short pre-tokens follow the reference loop literally: take the adjacent
 * pair of lowest rank (the last one among equals, as gpt-3-encoder keeps the
 * last pair it sees per rank), merge every occurrence of exactly that pair
 * left to right, repeat.  Long ones (more than BPE_SHORT bytes) use a heap of
 * (rank, position) over a linked list, O(n log n): the same result whenever
 * every merge's parts were created by earlier merges (true of GPT-2 and of
 * tfm-trained merges), which keeps a 10 MB pre-token tractable.  That heap
 * (tfm_tok_merge_all) also merges SentencePiece's whole text (tok_spiece.c).
 */
#include "../tok_internal.h"

#define BPE_SHORT 256
#define NO_RANK   INT32_MAX

/* the rank of merging a then b (NO_RANK: none) and its result; aliases: also
 * the ranks of pieces reachable by an alias (Hugging Face's BPE) */
static inline int32_t
merge_rank(const tfm_tokenizer *t, int32_t a, int32_t b, int32_t *result, int aliases)
{
	int32_t v = tfm_tok_u64map_get(&t->merge_rank, tfm_tok_pair_key(a, b));

	if (v < 0)
		return NO_RANK;
	if (v < t->info.n_merges)
	{
		*result = t->merge_result[v];
		return v;
	}
	if (!aliases)
		return NO_RANK;
	v -= t->info.n_merges;
	*result = t->alias_result.data[v];
	return t->alias_rank.data[v];
}

static int
reserve(tfm_tok_ivec *v, size_t n)
{
	return tfm_grow((void **) &v->data, &v->cap, n, sizeof(int32_t));
}

static int
encode_short(tfm_tok_ivec *out, tfm_tokenizer *t, const uint8_t *s, size_t n)
{
	int32_t *sym, *rk, *res;
	size_t m = n, i, j;

	if (reserve(&t->work, n) || reserve(&t->work2, n) || reserve(&t->work3, n))
		return TFM_ENOMEM;
	sym = t->work.data;
	rk = t->work2.data;
	res = t->work3.data;
	for (i = 0; i < n; i++)
		sym[i] = t->byte_id[s[i]];
	for (i = 0; i + 1 < m; i++)
		rk[i] = merge_rank(t, sym[i], sym[i + 1], &res[i], 1);
	while (m > 1)
	{
		int32_t best = NO_RANK, a, b, c;
		size_t bi = 0;

		for (i = 0; i + 1 < m; i++)
			if (rk[i] <= best && rk[i] != NO_RANK)
			{
				best = rk[i];
				bi = i;
			}
		if (best == NO_RANK)
			break;
		a = sym[bi];
		b = sym[bi + 1];
		c = res[bi];
		for (i = 0, j = 0; i < m;)
		{
			if (i + 1 < m && sym[i] == a && sym[i + 1] == b)
			{
				sym[j++] = c;
				i += 2;
			}
			else
				sym[j++] = sym[i++];
		}
		m = j;
		for (i = 0; i + 1 < m; i++)
			rk[i] = merge_rank(t, sym[i], sym[i + 1], &res[i], 1);
	}
	if (reserve(out, out->len + m))
		return TFM_ENOMEM;
	memcpy(out->data + out->len, sym, m * sizeof(int32_t));
	out->len += m;
	return TFM_OK;
}

/* ---- long pre-tokens: min-heap of (rank << 32 | position) ------------------ */

#define POLL_EVERY 65536		/* merges between two calls of the tokenizer's poll */

int
tfm_tok_merge_all(const tfm_tokenizer *t, int32_t *sym, int32_t *next, int32_t *prev, size_t n,
				  int aliases)
{
	size_t hn = 0, hcap = n + 16, i;
	uint64_t *heap = tfm_tok_alloc(hcap * sizeof(uint64_t));
	int st = TFM_OK;

	if (!heap)
		return TFM_ENOMEM;
	for (i = 0; i < n; i++)
	{
		next[i] = i + 1 < n ? (int32_t) (i + 1) : -1;
		prev[i] = (int32_t) i - 1;
	}
	for (i = 0; i + 1 < n; i++)
	{
		int32_t res, r = merge_rank(t, sym[i], sym[i + 1], &res, aliases);

		if (r != NO_RANK)
			tfm_tok_heap_push(heap, &hn, ((uint64_t) (uint32_t) r << 32) | i);
	}
	for (size_t steps = 1; hn > 0; steps++)
	{
		uint64_t top;
		int32_t p, r, q, res = -1, nr;

		/* millions of symbols merge for seconds: ask to go on */
		if (t->poll && (steps & (POLL_EVERY - 1)) == 0 && t->poll(t->poll_arg) != 0)
		{
			st = TFM_ECANCELED;
			break;
		}
		top = tfm_tok_heap_pop(heap, &hn);
		p = (int32_t) (uint32_t) top;
		r = (int32_t) (top >> 32);
		if (sym[p] < 0 || (q = next[p]) < 0)
			continue;
		if (merge_rank(t, sym[p], sym[q], &res, aliases) != r)
			continue;
		sym[p] = res;
		sym[q] = -1;
		next[p] = next[q];
		if (next[q] >= 0)
			prev[next[q]] = p;
		/* at most two new pairs per merge */
		if (hn + 2 > hcap && tfm_grow((void **) &heap, &hcap, hn + 2, sizeof(uint64_t)))
		{
			st = TFM_ENOMEM;
			break;
		}
		if (prev[p] >= 0 && (nr = merge_rank(t, sym[prev[p]], sym[p], &res, aliases)) != NO_RANK)
			tfm_tok_heap_push(heap, &hn, ((uint64_t) (uint32_t) nr << 32) | (uint32_t) prev[p]);
		if (next[p] >= 0 && (nr = merge_rank(t, sym[p], sym[next[p]], &res, aliases)) != NO_RANK)
			tfm_tok_heap_push(heap, &hn, ((uint64_t) (uint32_t) nr << 32) | (uint32_t) p);
	}
	tfm_tok_dealloc(heap);
	return st;
}

static int
encode_long(tfm_tok_ivec *out, tfm_tokenizer *t, const uint8_t *s, size_t n)
{
	int32_t *sym = NULL, *next = NULL, *prev = NULL;
	size_t i;
	int st = TFM_ENOMEM;

	if (n > INT32_MAX)
		return TFM_ELIMIT;
	sym = tfm_tok_alloc(n * sizeof(int32_t));
	next = tfm_tok_alloc(n * sizeof(int32_t));
	prev = tfm_tok_alloc(n * sizeof(int32_t));
	if (!sym || !next || !prev)
		goto done;
	for (i = 0; i < n; i++)
		sym[i] = t->byte_id[s[i]];
	if ((st = tfm_tok_merge_all(t, sym, next, prev, n, 1)) != TFM_OK)
		goto done;
	st = TFM_ENOMEM;
	for (i = 0; i < n; i = next[i] < 0 ? n : (size_t) next[i])
		if (tfm_tok_ivec_push(out, sym[i]))
			goto done;
	st = TFM_OK;
done:
	tfm_tok_dealloc(sym);
	tfm_tok_dealloc(next);
	tfm_tok_dealloc(prev);
	return st;
}

int
tfm_tok_bpe_encode_word(tfm_tok_ivec *out, tfm_tokenizer *t, const uint8_t *s, size_t n)
{
	/* ignore_merges: a pre-token that is a piece is that one id */
	if (t->info.flags & TFM_TOK_INFO_IGNORE_MERGES)
	{
		int32_t id = tfm_tok_piece_id(t, s, n);

		if (id >= 0 && !t->is_special[id])
			return tfm_tok_ivec_push(out, id) ? TFM_ENOMEM : TFM_OK;
	}
	if (n <= BPE_SHORT)
		return encode_short(out, t, s, n);
	return encode_long(out, t, s, n);
}
