/*
 * tok_added.c — a tokenizer.json's added tokens found in a text as Hugging
 * Face's AddedVocabulary finds them (tokenizers' added_vocabulary.rs), for
 * byte-level and SentencePiece-style BPE:
 *   - the tokens with normalized false are found first, in the text as
 *     given; then those with normalized true in each part between them
 *     (tfm's BPE normalizers are NFC or none there, which a token's own
 *     text is already in: the parts are matched as they are);
 *   - a match is the leftmost one, the longest there (Aho-Corasick's
 *     LeftmostLongest): a byte trie walked from each position, so a text
 *     costs at most its length times the longest token (tokens of at most
 *     1 KiB, 4 MiB in all; the cancel hook asked every 2^20 steps);
 *   - single_word: a match with a letter, digit or "_" beside it is no
 *     match; lstrip / rstrip: the White_Space before / after it belongs to
 *     it (within the part);
 *   - with TFM_TOK_SPLIT_SPECIALS (split_special_tokens: text from people
 *     who must not write control tokens) the special ones are not matched
 *     and read as plain text; the others still are.
 * The parts between matches are encoded on their own by the caller.  The
 * same matcher finds a Unigram tokenizer's specials in text
 * (tok_unigram_specials.c).
 */
#include "tok_internal.h"
#include "unicode/tok_unicode.h"

/* the trie's nodes: at most one a byte of the tokens' texts (13 bytes a
 * node); a search from one position walks at most the longest token */
#define TFM_TOK_ADDED_MAX_BYTES (4 << 20)
#define TFM_TOK_ADDED_MAX_TOKEN 1024
/* trie steps between two cancel polls */
#define ADDED_POLL_STEPS (1 << 20)

typedef struct trie
{
	int32_t    *child,			/* first child of a node, -1 none */
			   *sibling,		/* next child of the parent, -1 none */
			   *term;			/* index of the token ending here, -1 none */
	uint8_t    *byte;
	int32_t		n,
				cap;
} trie;

struct tfm_tok_added
{
	int32_t		n;
	int32_t    *ids;
	uint8_t    *flags;
	trie		pass[2];		/* 0: normalized false, 1: normalized true */
};

static void
trie_free(trie *tr)
{
	tfm_tok_dealloc(tr->child);
	tfm_tok_dealloc(tr->sibling);
	tfm_tok_dealloc(tr->term);
	tfm_tok_dealloc(tr->byte);
	memset(tr, 0, sizeof(*tr));
}

void
tfm_tok_added_free(struct tfm_tok_added *a)
{
	if (!a)
		return;
	tfm_tok_dealloc(a->ids);
	tfm_tok_dealloc(a->flags);
	trie_free(&a->pass[0]);
	trie_free(&a->pass[1]);
	tfm_tok_dealloc(a);
}

static int32_t
trie_node(trie *tr, uint8_t b)
{
	if (tr->n == tr->cap)
	{
		int32_t		cap = tr->cap ? 2 * tr->cap : 64;
		int32_t    *c = tfm_tok_alloc((size_t) cap * sizeof(int32_t)),
				   *s = tfm_tok_alloc((size_t) cap * sizeof(int32_t)),
				   *t = tfm_tok_alloc((size_t) cap * sizeof(int32_t));
		uint8_t    *by = tfm_tok_alloc((size_t) cap);

		if (!c || !s || !t || !by)
		{
			tfm_tok_dealloc(c);
			tfm_tok_dealloc(s);
			tfm_tok_dealloc(t);
			tfm_tok_dealloc(by);
			return -1;
		}
		if (tr->n)
		{
			memcpy(c, tr->child, (size_t) tr->n * sizeof(int32_t));
			memcpy(s, tr->sibling, (size_t) tr->n * sizeof(int32_t));
			memcpy(t, tr->term, (size_t) tr->n * sizeof(int32_t));
			memcpy(by, tr->byte, (size_t) tr->n);
		}
		tfm_tok_dealloc(tr->child);
		tfm_tok_dealloc(tr->sibling);
		tfm_tok_dealloc(tr->term);
		tfm_tok_dealloc(tr->byte);
		tr->child = c;
		tr->sibling = s;
		tr->term = t;
		tr->byte = by;
		tr->cap = cap;
	}
	tr->child[tr->n] = tr->sibling[tr->n] = tr->term[tr->n] = -1;
	tr->byte[tr->n] = b;
	return tr->n++;
}

static inline int32_t
trie_step(const trie *tr, int32_t node, uint8_t b)
{
	for (int32_t c = tr->child[node]; c >= 0; c = tr->sibling[c])
		if (tr->byte[c] == b)
			return c;
	return -1;
}

/* token k (bytes p[0..l)) into the trie; the first of equal texts wins */
static int
trie_add(trie *tr, const uint8_t *p, size_t l, int32_t k)
{
	int32_t		node = 0;

	if (tr->n == 0 && trie_node(tr, 0) < 0)
		return TFM_ENOMEM;
	for (size_t i = 0; i < l; i++)
	{
		int32_t		c = trie_step(tr, node, p[i]);

		if (c < 0)
		{
			if ((c = trie_node(tr, p[i])) < 0)
				return TFM_ENOMEM;
			tr->sibling[c] = tr->child[node];
			tr->child[node] = c;
		}
		node = c;
	}
	if (tr->term[node] < 0)
		tr->term[node] = k;
	return TFM_OK;
}

int
tfm_tok_added_build(struct tfm_tok_added **out, const tfm_tokenizer *t, const int32_t *ids,
					const uint8_t *flags, int32_t n, tfm_status *err)
{
	struct tfm_tok_added *a;
	size_t		total = 0;

	*out = NULL;
	if (n < 0 || n > t->info.vocab_size)
		return tfm_status_set(err, TFM_EINVAL, "%d added tokens for %d ids", (int) n,
							  (int) t->info.vocab_size);
	for (int32_t k = 0; k < n; k++)
	{
		if (ids[k] >= 0 && ids[k] < t->info.vocab_size)
		{
			if (tfm_tok_piece_len(t, ids[k]) > TFM_TOK_ADDED_MAX_TOKEN)
				return tfm_status_set(err, TFM_ELIMIT, "added token %d is longer than %d bytes",
									  (int) ids[k], TFM_TOK_ADDED_MAX_TOKEN);
			total += tfm_tok_piece_len(t, ids[k]);
		}
		if (total > TFM_TOK_ADDED_MAX_BYTES)
			return tfm_status_set(err, TFM_ELIMIT, "the added tokens' texts are longer than %d bytes in all",
								  TFM_TOK_ADDED_MAX_BYTES);
		if (ids[k] < 0 || ids[k] >= t->info.vocab_size || tfm_tok_piece_len(t, ids[k]) == 0)
			return tfm_status_set(err, TFM_EINVAL, "added token %d is not an id with a piece",
								  (int) ids[k]);
		if (flags[k] & ~TFM_TOK_ADDED_ALL)
			return tfm_status_set(err, TFM_EINVAL, "unknown added token flags 0x%x", flags[k]);
	}
	a = tfm_tok_calloc(1, sizeof(*a));
	if (!a)
		return tfm_tok_oom(err);
	a->ids = tfm_tok_alloc(((size_t) n + 1) * sizeof(int32_t));
	a->flags = tfm_tok_alloc((size_t) n + 1);
	if (!a->ids || !a->flags)
		goto oom;
	a->n = n;
	if (n)
	{
		memcpy(a->ids, ids, (size_t) n * sizeof(int32_t));
		memcpy(a->flags, flags, (size_t) n);
	}
	for (int32_t k = 0; k < n; k++)
		if (trie_add(&a->pass[(flags[k] & TFM_TOK_ADDED_NORMALIZED) ? 1 : 0],
					 tfm_tok_piece_ptr(t, ids[k]), tfm_tok_piece_len(t, ids[k]), k) != TFM_OK)
			goto oom;
	*out = a;
	return TFM_OK;
oom:
	tfm_tok_added_free(a);
	return tfm_tok_oom(err);
}

int
tfm_tok_set_added(tfm_tokenizer *t, const int32_t *ids, const uint8_t *flags, int32_t n,
				  tfm_status *err)
{
	struct tfm_tok_added *a;
	int			st;

	if (t->info.kind != TFM_TOK_BPE || !(t->info.flags & (TFM_TOK_INFO_HF_BPE | TFM_TOK_INFO_SPIECE)))
		return tfm_status_set(err, TFM_EINVAL, "added tokens are found in text only by a tokenizer.json's BPE");
	if ((st = tfm_tok_added_build(&a, t, ids, flags, n, err)) != TFM_OK)
		return st;
	tfm_tok_added_free(t->added);
	t->added = a;
	return TFM_OK;
}

int32_t
tfm_tok_n_added(const tfm_tokenizer *t)
{
	return t->added ? t->added->n : 0;
}

int
tfm_tok_get_added(int32_t *id, uint8_t *flags, const tfm_tokenizer *t, int32_t k)
{
	if (!t->added || k < 0 || k >= t->added->n)
		return TFM_ERANGE;
	*id = t->added->ids[k];
	*flags = t->added->flags[k];
	return TFM_OK;
}

/* a letter, a number or "_" (Rust's is_alphanumeric, and "_") */
static int
word_char(int32_t cp)
{
	int			c = tfm_tok_uclass(cp);

	return cp == '_' || c == TFM_UC_LETTER || c == TFM_UC_NUMBER;
}

/* the start of the character that ends at end (> floor) */
static size_t
prev_start(const uint8_t *s, size_t floor, size_t end)
{
	size_t		i = end - 1;

	while (i > floor && end - i < 4 && (s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

/* the code point that ends at end (from floor), -1 if none */
static int32_t
char_before(const uint8_t *s, size_t floor, size_t end)
{
	int32_t		cp = -1;

	if (end > floor)
	{
		size_t		i = prev_start(s, floor, end);

		(void) tfm_tok_utf8_next(&cp, s + i, end - i);
	}
	return cp;
}

int
tfm_tok_added_find(int32_t *id, size_t *a, size_t *b, const struct tfm_tok_added *ad,
				   const tfm_tokenizer *t, int pass, int skip_specials, const uint8_t *s,
				   size_t len, size_t from)
{
	const trie *tr = ad ? &ad->pass[pass] : NULL;
	size_t		steps = 0;

	if (!tr || tr->n == 0)
		return 0;
	for (size_t i = from; i < len; i++)
	{
		int32_t		node = 0,
					best = -1;
		size_t		best_end = 0;

		for (size_t j = i; j < len; j++)
		{
			int32_t		k;

			if (++steps >= ADDED_POLL_STEPS)
			{
				steps = 0;
				if (t->poll && t->poll(t->poll_arg) != 0)
					return -1;
			}
			if ((node = trie_step(tr, node, s[j])) < 0)
				break;
			k = tr->term[node];
			if (k >= 0 && !(skip_specials && (ad->flags[k] & TFM_TOK_ADDED_SPECIAL)))
			{
				best = k;
				best_end = j + 1;
			}
		}
		if (best < 0)
			continue;
		if (ad->flags[best] & TFM_TOK_ADDED_SINGLE_WORD)
		{
			int32_t		before = char_before(s, from, i),
						after = -1;

			if (best_end < len)
				(void) tfm_tok_utf8_next(&after, s + best_end, len - best_end);
			if ((before >= 0 && word_char(before)) || (after >= 0 && word_char(after)))
				continue;
		}
		*id = ad->ids[best];
		*a = i;
		*b = best_end;
		if (ad->flags[best] & TFM_TOK_ADDED_LSTRIP)
			while (*a > from)
			{
				int32_t		cp = char_before(s, from, *a);

				if (cp < 0 || !tfm_tok_white_space(cp))
					break;
				*a = prev_start(s, from, *a);
			}
		if (ad->flags[best] & TFM_TOK_ADDED_RSTRIP)
			while (*b < len)
			{
				int32_t		cp;
				size_t		ul = tfm_tok_utf8_next(&cp, s + *b, len - *b);

				if (!tfm_tok_white_space(cp))
					break;
				*b += ul;
			}
		return 1;
	}
	return 0;
}
