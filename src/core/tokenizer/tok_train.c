/*
 * tok_train.c: the final step of training: counts -> vocabulary.
 *
 * Ids of a tfm-trained vocabulary: 0..5 the specials, then
 *   byte       the 256 bytes in order (id 6 + byte);
 *   char, word the kept keys by count (descending), then bytes;
 *   bpe        the 256 bytes, then one piece per merge in rank order;
 *   wordpiece  the alphabet ("x" for word-initial, "##x" for the others)
 *              in byte order, then one piece per learned merge.
 * Keys are sorted by bytes before anything is done with them, so hash and
 * insertion order (which differ between one state and merged parts) never
 * matter.
 */
#include <stdlib.h>

#include "tok_internal.h"
#include "unicode/tok_unicode.h"

typedef struct sort_ctx_entry
{
	const uint8_t *key;
	uint32_t len;
	int64_t count;
} key_entry;

static int
cmp_bytes(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

static int
cmp_key(const void *x, const void *y)
{
	const key_entry *a = x, *b = y;

	return cmp_bytes(a->key, a->len, b->key, b->len);
}

static int
cmp_count_then_key(const void *x, const void *y)
{
	const key_entry *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return cmp_key(x, y);
}

/* the counter's keys with a count > 0, sorted by bytes */
static key_entry *
sorted_keys(const tfm_tok_counter *c, size_t *n)
{
	key_entry *k = tfm_tok_alloc(((size_t) c->keys.n + 1) * sizeof(key_entry));
	int32_t e;
	size_t m = 0;

	if (!k)
		return NULL;
	for (e = 0; e < c->keys.n; e++)
		if (c->counts[e] > 0)
		{
			k[m].key = tfm_tok_strtab_key(&c->keys, e);
			k[m].len = c->keys.len[e];
			k[m].count = c->counts[e];
			m++;
		}
	qsort(k, m, sizeof(key_entry), cmp_key);
	*n = m;
	return k;
}

static int
add_specials(tfm_tok_strtab *v, tfm_tok_info *info)
{
	int i;

	for (i = 0; i < TFM_TOK_N_SPECIALS; i++)
	{
		const char *p = tfm_tok_special_piece((tfm_tok_special) i);
		int32_t e;

		if (tfm_tok_strtab_intern(&e, NULL, v, (const uint8_t *) p, strlen(p)))
			return TFM_ENOMEM;
		info->special_ids[i] = e;
	}
	return TFM_OK;
}

static int
add_bytes(tfm_tok_strtab *v)
{
	int b;

	for (b = 0; b < 256; b++)
	{
		uint8_t x = (uint8_t) b;
		int32_t e;

		if (tfm_tok_strtab_intern(&e, NULL, v, &x, 1))
			return TFM_ENOMEM;
	}
	return TFM_OK;
}

/* char, word: most frequent keys */
static int
train_top(tfm_tok_strtab *v, key_entry *k, size_t n, int32_t vocab_size, int64_t min_count)
{
	size_t i;

	qsort(k, n, sizeof(key_entry), cmp_count_then_key);
	for (i = 0; i < n && v->n < vocab_size && k[i].count >= min_count; i++)
	{
		int32_t e;
		int added;

		if (tfm_tok_strtab_intern(&e, &added, v, k[i].key, k[i].len))
			return TFM_ENOMEM;
	}
	return TFM_OK;
}

/* bpe and wordpiece: initial symbols then merges */
/*
 * WordPiece: the symbol of the character at byte p of word k into tmp
 * ("##" before all but the first), its byte length to *ul; nonzero when
 * out of memory.
 */
static int
wp_symbol(tfm_tok_bytes *tmp, size_t *ul, const key_entry *k, size_t p)
{
	int32_t cp;

	*ul = tfm_tok_utf8_next(&cp, k->key + p, k->len - p);
	tmp->len = 0;
	return (p > 0 && tfm_tok_bytes_append(tmp, "##", 2)) ||
		tfm_tok_bytes_append(tmp, k->key + p, *ul);
}

static int
train_merges(tfm_tok_strtab *v, tfm_tok_ivec *merges, const tfm_tok_counter *c, key_entry *k,
			 size_t n, int32_t vocab_size, int64_t min_count, tfm_tok_progress_fn progress,
			 void *arg, tfm_status *err)
{
	int wordpiece = c->opt.kind == TFM_TOK_WORDPIECE;
	size_t total = 0, i, j;
	int32_t *syms = NULL;
	size_t *starts = NULL;
	int64_t *counts = NULL;
	tfm_tok_bytes tmp = {0};
	tfm_tok_bpe_job job;
	int st = TFM_OK;

	for (i = 0; i < n; i++)
		total += k[i].len;
	syms = tfm_tok_alloc((total + 1) * sizeof(int32_t));
	starts = tfm_tok_alloc((n + 1) * sizeof(size_t));
	counts = tfm_tok_alloc((n + 1) * sizeof(int64_t));
	if (!syms || !starts || !counts)
	{
		st = tfm_tok_oom(err);
		goto done;
	}
	if (!wordpiece)
	{
		if (vocab_size < TFM_TOK_N_SPECIALS + 256)
		{
			st = tfm_status_set(err, TFM_EINVAL,
							  "vocab_size %d is too small for bpe: %d special tokens and 256 bytes need at least %d",
							  (int) vocab_size, TFM_TOK_N_SPECIALS, TFM_TOK_N_SPECIALS + 256);
			goto done;
		}
		if (add_bytes(v))
		{
			st = tfm_tok_oom(err);
			goto done;
		}
	}
	else
	{
		/* alphabet: intern into a side table, then add to v sorted by bytes */
		tfm_tok_strtab alpha = {0};
		key_entry *ak;
		int32_t e;

		for (i = 0; i < n && st == TFM_OK; i++)
		{
			size_t p = 0;

			while (p < k[i].len)
			{
				size_t ul;

				if (wp_symbol(&tmp, &ul, &k[i], p) ||
					tfm_tok_strtab_intern(&e, NULL, &alpha, tmp.data, tmp.len))
				{
					st = TFM_ENOMEM;
					break;
				}
				p += ul;
			}
		}
		ak = st == TFM_OK ? tfm_tok_alloc(((size_t) alpha.n + 1) * sizeof(key_entry)) : NULL;
		if (!ak)
		{
			tfm_tok_strtab_free(&alpha);
			st = tfm_tok_oom(err);
			goto done;
		}
		for (e = 0; e < alpha.n; e++)
		{
			ak[e].key = tfm_tok_strtab_key(&alpha, e);
			ak[e].len = alpha.len[e];
			ak[e].count = 0;
		}
		qsort(ak, (size_t) alpha.n, sizeof(key_entry), cmp_key);
		if (vocab_size < TFM_TOK_N_SPECIALS + alpha.n)
			st = tfm_status_set(err, TFM_EINVAL,
							  "vocab_size %d is too small for wordpiece: %d special tokens and %d alphabet symbols need at least %d",
							  (int) vocab_size, TFM_TOK_N_SPECIALS, (int) alpha.n,
							  TFM_TOK_N_SPECIALS + (int) alpha.n);
		for (e = 0; e < alpha.n && st == TFM_OK; e++)
		{
			int32_t id;

			if (tfm_tok_strtab_intern(&id, NULL, v, ak[e].key, ak[e].len))
				st = tfm_tok_oom(err);
		}
		tfm_tok_dealloc(ak);
		tfm_tok_strtab_free(&alpha);
		if (st != TFM_OK)
			goto done;
	}
	/* initial symbols of every word */
	total = 0;
	for (i = 0; i < n; i++)
	{
		starts[i] = total;
		counts[i] = k[i].count;
		if (!wordpiece)
			for (j = 0; j < k[i].len; j++)
				syms[total++] = TFM_TOK_N_SPECIALS + k[i].key[j];
		else
		{
			size_t p = 0;

			while (p < k[i].len)
			{
				size_t ul;

				if (wp_symbol(&tmp, &ul, &k[i], p))
				{
					st = tfm_tok_oom(err);
					goto done;
				}
				syms[total++] = tfm_tok_strtab_find(v, tmp.data, tmp.len);
				p += ul;
			}
		}
	}
	starts[n] = total;
	memset(&job, 0, sizeof(job));
	job.vocab = v;
	job.syms = syms;
	job.word_start = starts;
	job.word_count = counts;
	job.n_words = (int32_t) n;
	job.target = vocab_size;
	job.min_count = min_count;
	job.wordpiece = wordpiece;
	job.progress = progress;
	job.progress_arg = arg;
	job.merges = merges;
	st = tfm_tok_bpe_learn(&job, err);
done:
	tfm_tok_dealloc(syms);
	tfm_tok_dealloc(starts);
	tfm_tok_dealloc(counts);
	tfm_tok_bytes_free(&tmp);
	return st;
}

int
tfm_tok_train(tfm_tokenizer **out, const tfm_tok_counter *c, tfm_tok_progress_fn progress,
			  void *progress_arg, tfm_status *err)
{
	tfm_tok_options opt = c->opt;
	tfm_tok_info info;
	tfm_tok_strtab v = {0};
	tfm_tok_ivec merges = {0};
	key_entry *k = NULL;
	size_t n = 0;
	int st = TFM_OK;
	int32_t vocab_size;
	int64_t min_count;

	*out = NULL;
	vocab_size = opt.vocab_size;
	if (vocab_size == 0)
		vocab_size = (opt.kind == TFM_TOK_BPE || opt.kind == TFM_TOK_WORDPIECE)
			? TFM_TOK_DEFAULT_VOCAB_SIZE : TFM_TOK_MAX_VOCAB_SIZE;
	min_count = opt.min_count ? opt.min_count
		: (opt.kind == TFM_TOK_BPE || opt.kind == TFM_TOK_WORDPIECE) ? 2 : 1;
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = opt.kind;
	if ((opt.flags & TFM_TOK_OPT_LOWERCASE) &&
		(opt.kind == TFM_TOK_WORD || opt.kind == TFM_TOK_WORDPIECE))
		info.flags |= TFM_TOK_INFO_LOWERCASE;
	if (add_specials(&v, &info))
	{
		st = tfm_tok_oom(err);
		goto done;
	}
	if (opt.kind != TFM_TOK_BYTE)
	{
		k = sorted_keys(c, &n);
		if (!k)
		{
			st = tfm_tok_oom(err);
			goto done;
		}
	}
	switch (opt.kind)
	{
		case TFM_TOK_BYTE:
			if (opt.vocab_size != 0 && opt.vocab_size < TFM_TOK_N_SPECIALS + 256)
			{
				st = tfm_status_set(err, TFM_EINVAL,
								  "vocab_size %d is too small for byte: %d special tokens and 256 bytes need %d",
								  (int) opt.vocab_size, TFM_TOK_N_SPECIALS,
								  TFM_TOK_N_SPECIALS + 256);
				goto done;
			}
			if (add_bytes(&v))
				st = tfm_tok_oom(err);
			break;
		case TFM_TOK_CHAR:
		case TFM_TOK_WORD:
			if (train_top(&v, k, n, vocab_size, min_count))
				st = tfm_tok_oom(err);
			break;
		case TFM_TOK_BPE:
		case TFM_TOK_WORDPIECE:
			st = train_merges(&v, &merges, c, k, n, vocab_size, min_count, progress,
							  progress_arg, err);
			break;
		case TFM_TOK_UNIGRAM:		/* refused by the counter's options check */
			st = tfm_status_set(err, TFM_EINVAL, "unigram tokenizers are not trained");
			break;
	}
	if (st != TFM_OK)
		goto done;
	info.vocab_size = v.n;
	info.n_merges = opt.kind == TFM_TOK_BPE ? (int32_t) (merges.len / 2) : 0;
	st = tfm_tok_build_from_strtab(out, &info, &v, merges.data, err);
done:
	tfm_tok_dealloc(k);
	tfm_tok_strtab_free(&v);
	tfm_tok_ivec_free(&merges);
	return st;
}
