/*
 * tok_encode.c: text -> ids for every kind, with optional byte offsets,
 * bos/eos and truncation.
 *
 * bpe keeps a cache of pre-token -> ids (pre-tokens up to CACHE_MAX_KEY
 * bytes, cleared when it holds CACHE_MAX_ENTRIES), so running text costs
 * about one hash lookup per pre-token.
 */
#include "tok_internal.h"
#include "pretokenize/tok_split.h"
#include "unicode/tok_unicode_forms.h"
#include "unicode/tok_unicode.h"

#define CACHE_MAX_KEY     64
#define CACHE_MAX_ENTRIES (1 << 17)

typedef struct emitter
{
	int32_t *ids;
	size_t  *offs;
	size_t   n;
	size_t   limit;      /* room for content ids */
	int      full;
	const tfm_tokenizer *t;  /* its poll */
	int      canceled;   /* the poll said stop (full is set too: encoders stop) */
	tfm_status *err;     /* the caller's, for the Split rules' messages */
	int      err_set;    /* a failure already described in err */
	size_t   base;       /* added to every offset: the part's place in the text */
} emitter;

#define EMIT_POLL_EVERY 65536

static inline int
emit(emitter *e, int32_t id, size_t off)
{
	if (e->n >= e->limit)
	{
		e->full = 1;
		return 0;
	}
	if (e->t->poll && (e->n & (EMIT_POLL_EVERY - 1)) == EMIT_POLL_EVERY - 1 &&
		e->t->poll(e->t->poll_arg) != 0)
	{
		e->canceled = 1;
		e->full = 1;
		return 0;
	}
	e->ids[e->n] = id;
	if (e->offs)
		e->offs[e->n] = e->base + off;
	e->n++;
	return 1;
}

void
tfm_tok_set_poll(tfm_tokenizer *t, int (*poll)(void *arg), void *arg)
{
	t->poll = poll;
	t->poll_arg = arg;
}

size_t
tfm_tok_encode_bound(size_t len, uint32_t flags)
{
	/* + 1: a SentencePiece tokenizer puts "▁" before the text (its import
	 * requires the piece "▁", so a space is one symbol) */
	return len + 1 + ((flags & TFM_TOK_ADD_BOS) ? 1 : 0) + ((flags & TFM_TOK_ADD_EOS) ? 1 : 0);
}

size_t
tfm_tok_encode_bound_text(tfm_tokenizer *t, const char *text, size_t len, uint32_t flags)
{
	size_t n;

	if (t->info.flags & TFM_TOK_INFO_NFC)
		return tfm_tok_encode_bound(len <= SIZE_MAX / 3 ? 3 * len : len, flags);
	/* added tokens: each part between them may get its own "▁" */
	if (t->added)
		return tfm_tok_encode_bound(len <= SIZE_MAX / 2 ? 2 * len : len, flags);
	if (t->info.kind != TFM_TOK_UNIGRAM)
		return tfm_tok_encode_bound(len, flags);
	/* each id covers at least one byte of the normalized words */
	n = tfm_tok_unigram_normalized_len(t, (const uint8_t *) text, len);
	return n == SIZE_MAX ? n : tfm_tok_encode_bound(n, flags);
}

size_t
tfm_tok_encode_scratch_bytes(const tfm_tokenizer *t, size_t len)
{
	if (t->info.kind == TFM_TOK_UNIGRAM)
		/* len: the normalized length (tfm_tok_encode_bound_text); three
		 * copies of it with an offset a byte, Viterbi's 12 bytes a byte and
		 * a token's id and start */
		return len * (3 * (1 + sizeof(size_t)) + 12 + 8) + 4096;
	if (t->info.kind != TFM_TOK_BPE)
		return len + 64;	/* a word's copy at most */
	if (t->info.flags & TFM_TOK_INFO_SPIECE)
		/* 3 symbols a byte, each with an id, an offset, next and prev; the heap */
		return (3 * len + 3) * (3 * sizeof(int32_t) + sizeof(size_t)) + (3 * len + 16) * sizeof(uint64_t);
	/* the prefixed copy, then a pre-token's id, next and prev, and its heap;
	 * NFC's copy (at most 3 bytes a byte) and each byte's offset; the Split
	 * rules' pieces (two offsets and a span of three words a byte at most) */
	return len + 1 + len * (3 * sizeof(int32_t) + sizeof(uint64_t)) + 16 * sizeof(uint64_t) +
		((t->info.flags & TFM_TOK_INFO_NFC) ? 3 * len * (1 + sizeof(size_t)) + 4 * len * 12 : 0) +
		((t->info.flags & TFM_TOK_INFO_SPLIT) ? (3 * len + 2) * (5 * sizeof(size_t)) : 0);
}

static int
cache_lookup_or_fill(const int32_t **ids, size_t *n, tfm_tokenizer *t, const uint8_t *s,
					 size_t len)
{
	int32_t e;
	int added, st;
	size_t start;

	if (len > CACHE_MAX_KEY)
		return TFM_ELIMIT;     /* not cached: the caller encodes it */
	e = tfm_tok_strtab_find(&t->cache, s, len);
	if (e >= 0)
	{
		*ids = t->cache_ids.data + t->cache_start[e];
		*n = t->cache_len[e];
		return TFM_OK;
	}
	if (t->cache.n >= CACHE_MAX_ENTRIES)
	{
		tfm_tok_strtab_clear(&t->cache);
		t->cache_ids.len = 0;
	}
	start = t->cache_ids.len;
	if ((st = tfm_tok_bpe_encode_word(&t->cache_ids, t, s, len)) != TFM_OK)
		return st;
	if ((st = tfm_tok_strtab_intern(&e, &added, &t->cache, s, len)) != TFM_OK)
		return st;
	if ((size_t) e >= t->cache_meta_cap)
	{
		size_t c1 = t->cache_meta_cap, c2 = t->cache_meta_cap;

		if (tfm_grow((void **) &t->cache_start, &c1, (size_t) e + 1, sizeof(uint32_t)) ||
			tfm_grow((void **) &t->cache_len, &c2, (size_t) e + 1, sizeof(uint16_t)))
			return TFM_ENOMEM;
		t->cache_meta_cap = c1 < c2 ? c1 : c2;
	}
	t->cache_start[e] = (uint32_t) start;
	t->cache_len[e] = (uint16_t) (t->cache_ids.len - start);
	*ids = t->cache_ids.data + start;
	*n = t->cache_ids.len - start;
	return TFM_OK;
}

/* length of the pre-token at s[0..n): the digit splitting of a Digits
 * pre-tokenizer first, then the pattern within what is left */
static size_t
next_pretoken(const tfm_tokenizer *t, const uint8_t *s, size_t n)
{
	uint32_t f = t->info.flags;

	if (f & (TFM_TOK_INFO_DIGITS | TFM_TOK_INFO_DIGIT_RUNS))
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s, n), i;

		if (tfm_tok_uclass(cp) == TFM_UC_NUMBER)
		{
			if (f & TFM_TOK_INFO_DIGITS)
				return ul;
			for (i = ul; i < n; i += ul)
			{
				ul = tfm_tok_utf8_next(&cp, s + i, n - i);
				if (tfm_tok_uclass(cp) != TFM_UC_NUMBER)
					break;
			}
			return i;
		}
		/* the pattern sees the text up to the next digit as a whole */
		for (i = ul; i < n; i += ul)
		{
			ul = tfm_tok_utf8_next(&cp, s + i, n - i);
			if (tfm_tok_uclass(cp) == TFM_UC_NUMBER)
				break;
		}
		n = i;
	}
	if (f & TFM_TOK_INFO_LLAMA3)
		return tfm_tok_llama3_next(s, n);
	return tfm_tok_gpt2_next(s, n);
}

/* one pre-token's ids, from the cache or encoded into tmp */
static int
pretoken_ids(const int32_t **ids, size_t *n, tfm_tok_ivec *tmp, tfm_tokenizer *t,
			 const uint8_t *s, size_t len)
{
	int st = cache_lookup_or_fill(ids, n, t, s, len);

	if (st != TFM_ELIMIT)
		return st;
	tmp->len = 0;
	if ((st = tfm_tok_bpe_encode_word(tmp, t, s, len)) != TFM_OK)
		return st;
	*ids = tmp->data;
	*n = tmp->len;
	return TFM_OK;
}

/* the ids of s[start .. start+pl), emitted with the offsets of the input:
 * align (NFC) maps s's bytes to the input's after the prefix shift */
static int
emit_pretoken(emitter *e, tfm_tok_ivec *tmp, tfm_tokenizer *t, const uint8_t *s, size_t start,
			  size_t pl, size_t shift, const size_t *align)
{
	const int32_t *ids;
	size_t n, i, off = start;
	int st = pretoken_ids(&ids, &n, tmp, t, s + start, pl);

	if (st != TFM_OK)
		return st;
	for (i = 0; i < n; i++)
	{
		size_t o = off > shift ? off - shift : 0;

		if (!emit(e, ids[i], align ? align[o] : o))
			break;
		off += tfm_tok_piece_len(t, ids[i]);
	}
	return TFM_OK;
}

static int
encode_bpe(emitter *e, tfm_tokenizer *t, const uint8_t *text, size_t text_len)
{
	size_t pos = 0, len = text_len, shift = 0;
	const uint8_t *s = text;
	const size_t *align = NULL;
	tfm_tok_ivec tmp = {0};
	tfm_tok_bytes prefixed = {0};
	int st = TFM_OK;

	/* a tokenizer.json's NFC normalizer first (offsets mapped back) */
	if (t->info.flags & TFM_TOK_INFO_NFC)
	{
		int same;

		if ((st = tfm_tok_unicode_form(&t->nbuf, &t->nalign, &t->nalign_cap, &same, text, len,
									 TFM_TOK_UFORM_NFC)) != TFM_OK)
			return st;
		if (!same)
		{
			s = t->nbuf.data;
			len = t->nbuf.len;
			align = t->nalign;
		}
	}
	/* ByteLevel's add_prefix_space: a space before a text without one
	 * (its offset is the text's start) */
	if ((t->info.flags & TFM_TOK_INFO_PREFIX_SPACE) && len > 0 && s[0] != ' ')
	{
		if (tfm_tok_bytes_append(&prefixed, " ", 1) ||
			tfm_tok_bytes_append(&prefixed, s, len))
		{
			tfm_tok_bytes_free(&prefixed);
			return TFM_ENOMEM;
		}
		s = prefixed.data;
		len = prefixed.len;
		shift = 1;
	}
	if (t->info.flags & TFM_TOK_INFO_SPLIT)
	{
		/* the Split rules' pieces (PCRE2), each through BPE */
		const size_t *pieces;
		size_t np, k;

		st = tfm_tok_split_run(&pieces, &np, t, s, len, e->err);
		e->err_set = st != TFM_OK;
		for (k = 0; st == TFM_OK && k < np && !e->full; k++)
			st = emit_pretoken(e, &tmp, t, s, pieces[2 * k], pieces[2 * k + 1] - pieces[2 * k],
							   shift, align);
	}
	else
		while (pos < len && !e->full && st == TFM_OK)
		{
			size_t pl = next_pretoken(t, s + pos, len - pos);

			st = emit_pretoken(e, &tmp, t, s, pos, pl, shift, align);
			pos += pl;
		}
	tfm_tok_ivec_free(&tmp);
	tfm_tok_bytes_free(&prefixed);
	return st;
}

static int
encode_char(emitter *e, const tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	int32_t unk = t->info.special_ids[TFM_TOK_UNK];
	size_t pos = 0;

	while (pos < len)
	{
		int32_t cp, id;
		size_t ul = tfm_tok_utf8_next(&cp, s + pos, len - pos);

		if (cp < 0)
			id = unk;
		else if (ul == 1)
			id = t->byte_id[s[pos]];
		else
			id = tfm_tok_piece_id(t, s + pos, ul);
		if (!emit(e, id < 0 ? unk : id, pos))
			break;
		pos += ul;
	}
	return TFM_OK;
}

/* the word as the vocabulary sees it (lower-cased when asked) */
static int
word_key(const uint8_t **k, size_t *kl, tfm_tokenizer *t, const uint8_t *s, size_t n)
{
	if (!(t->info.flags & TFM_TOK_INFO_LOWERCASE))
	{
		*k = s;
		*kl = n;
		return TFM_OK;
	}
	t->wbuf.len = 0;
	if (tfm_tok_lower_append(&t->wbuf, s, n))
		return TFM_ENOMEM;
	*k = t->wbuf.data;
	*kl = t->wbuf.len;
	return TFM_OK;
}

/* the words of a text s[0..len) in turn (next_word): the current one's
 * start and length, and its key (NULL when the word is not valid UTF-8) */
typedef struct words
{
	emitter *e;
	tfm_tokenizer *t;
	const uint8_t *s;
	size_t len, pos;
	size_t start, wlen;
	const uint8_t *key;
	size_t key_len;
} words;

/* the next word while the emitter has room: 1 for a word, 0 at the end,
 * -1 when out of memory */
static int
next_word(words *w)
{
	int invalid;

	if (w->e->full || !tfm_tok_word_next(&w->start, &w->wlen, &invalid, w->s, w->len, &w->pos))
		return 0;
	w->key = NULL;
	w->key_len = 0;
	if (!invalid && word_key(&w->key, &w->key_len, w->t, w->s + w->start, w->wlen))
		return -1;
	return 1;
}

static int
encode_word(emitter *e, tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	words w = {.e = e, .t = t, .s = s, .len = len};
	int more;

	while ((more = next_word(&w)) > 0)
	{
		int32_t id = w.key ? tfm_tok_piece_id(t, w.key, w.key_len) : -1;

		if (id >= 0 && t->is_special[id])
			id = -1;
		emit(e, id < 0 ? t->info.special_ids[TFM_TOK_UNK] : id, w.start);
	}
	return more < 0 ? TFM_ENOMEM : TFM_OK;
}

/* the longest piece of k[at..kl) in the vocabulary and not a special
 * ("##" before it after the word's first piece), built in *piece: its id
 * and *end where it ends; -1 when there is none, -2 when out of memory */
static int32_t
longest_piece(size_t *end, tfm_tok_bytes *piece, tfm_tokenizer *t, const uint8_t *k,
			  size_t at, size_t kl)
{
	*end = kl;
	while (*end > at)
	{
		int32_t id;

		piece->len = 0;
		if ((at > 0 && tfm_tok_bytes_append(piece, "##", 2)) ||
			tfm_tok_bytes_append(piece, k + at, *end - at))
			return -2;
		id = tfm_tok_piece_id(t, piece->data, piece->len);
		if (id >= 0 && !t->is_special[id])
			return id;
		/* previous character boundary */
		do
			(*end)--;
		while (*end > at && (k[*end] & 0xC0) == 0x80);
	}
	return -1;
}

/* BERT's greedy longest-match-first over one word */
static int
encode_wordpiece(emitter *e, tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	int32_t unk = t->info.special_ids[TFM_TOK_UNK];
	words w = {.e = e, .t = t, .s = s, .len = len};
	int more;
	tfm_tok_bytes piece = {0};
	tfm_tok_ivec found = {0};
	int st = TFM_OK;

	while ((more = next_word(&w)) > 0)
	{
		const uint8_t *k = w.key;
		size_t start = w.start, wl = w.wlen, kl = w.key_len, at = 0, nchars = 0, i;
		int ok = k != NULL;

		if (ok)
		{
			for (i = 0; i < kl; i++)
				nchars += (k[i] & 0xC0) != 0x80;
			if (nchars > TFM_TOK_WORDPIECE_MAX_CHARS)
				ok = 0;
		}
		found.len = 0;
		while (ok && at < kl)
		{
			size_t end;
			int32_t id = longest_piece(&end, &piece, t, k, at, kl);

			if (id == -2)
			{
				st = TFM_ENOMEM;
				goto out;
			}
			if (id < 0)
				ok = 0;
			else
			{
				if (tfm_tok_ivec_push(&found, id))
				{
					st = TFM_ENOMEM;
					goto out;
				}
				at = end;
			}
		}
		if (!ok)
			emit(e, unk, start);
		else
		{
			/* offsets: map the key's pieces back onto the text when no
			 * lower-casing changed byte lengths, else the word's start */
			size_t off = start;

			for (i = 0; i < found.len; i++)
			{
				size_t pl = tfm_tok_piece_len(t, found.data[i]) - (i > 0 ? 2 : 0);

				if (!emit(e, found.data[i], kl == wl ? off : start))
					break;
				off += pl;
			}
		}
	}
	if (more < 0)
		st = TFM_ENOMEM;
out:
	tfm_tok_bytes_free(&piece);
	tfm_tok_ivec_free(&found);
	return st;
}

/* BERT's words (tok_bert.c), each through the greedy longest match */
typedef struct bert_job
{
	emitter *e;
	tfm_tokenizer *t;
	tfm_tok_bytes piece;
	tfm_tok_ivec found;
} bert_job;

static int
bert_word(void *arg, const uint8_t *w, size_t wl, size_t off, const int32_t *rel)
{
	bert_job *j = arg;
	tfm_tokenizer *t = j->t;
	int32_t unk = t->info.special_ids[TFM_TOK_UNK];
	size_t at = 0, nchars = 0, i;

	for (i = 0; i < wl; i++)
		nchars += (w[i] & 0xC0) != 0x80;
	j->found.len = 0;
	if (nchars > TFM_TOK_WORDPIECE_MAX_CHARS)
		return emit(j->e, unk, off);
	while (at < wl)
	{
		size_t end;
		int32_t id = longest_piece(&end, &j->piece, t, w, at, wl);

		if (id == -2)
			return -1;
		if (id < 0)
			return emit(j->e, unk, off);
		if (tfm_tok_ivec_push(&j->found, id) || tfm_tok_ivec_push(&j->found, (int32_t) at))
			return -1;
		at = end;
	}
	/* each piece at the input character its first byte came from */
	for (i = 0; i < j->found.len; i += 2)
		if (!emit(j->e, j->found.data[i], off + (size_t) rel[j->found.data[i + 1]]))
			return 0;
	return 1;
}

static int
encode_bert(emitter *e, tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	bert_job j = {e, t, {0}, {0}};
	int st = tfm_tok_bert_words(&t->wbuf, s, len, !(t->info.flags & TFM_TOK_INFO_CASED),
								!(t->info.flags & TFM_TOK_INFO_KEEP_ACCENTS), bert_word, &j);

	tfm_tok_bytes_free(&j.piece);
	tfm_tok_ivec_free(&j.found);
	return st;
}

/* an encoder of the whole text at once (SentencePiece BPE, Unigram): it
 * counts every id, writing those that fit */
typedef int (*whole_text_fn)(int32_t *ids, size_t *offs, size_t cap, size_t *n_out,
							 tfm_tokenizer *t, const uint8_t *s, size_t len);

static int
encode_whole(emitter *e, whole_text_fn fn, tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	size_t got, room = e->limit - e->n;
	int st = fn(e->ids + e->n, e->offs ? e->offs + e->n : NULL, room, &got, t, s, len);

	if (got > room)
	{
		e->full = 1;
		got = room;
	}
	if (e->offs)
		for (size_t i = 0; i < got; i++)
			e->offs[e->n + i] += e->base;
	e->n += got;
	return st;
}

/* a part of a text without added tokens through the BPE */
static int
encode_bpe_part(emitter *e, tfm_tokenizer *t, const uint8_t *s, size_t len)
{
	if (t->info.flags & TFM_TOK_INFO_SPIECE)
		return encode_whole(e, tfm_tok_spiece_encode, t, s, len);
	return encode_bpe(e, t, s, len);
}

/*
 * s[0..len) (at offset base of the text) cut at the added tokens of pass
 * (tok_added.c), each token its id, each part between through the next
 * pass and then the BPE (an empty part gives nothing)
 */
static int
encode_added(emitter *e, tfm_tokenizer *t, const uint8_t *s, size_t len, int pass, int skip)
{
	size_t done = 0, a, b, base = e->base;
	int32_t id;
	int st = TFM_OK, found;

	if (pass == 2)
		return encode_bpe_part(e, t, s, len);
	while (st == TFM_OK && !e->full && done < len &&
		   (found = tfm_tok_added_find(&id, &a, &b, t->added, t, pass, skip, s, len, done)) != 0)
	{
		if (found < 0)
		{
			e->canceled = e->full = 1;
			break;
		}
		if (a > done)
		{
			e->base = base + done;
			st = encode_added(e, t, s + done, a - done, pass + 1, skip);
		}
		e->base = base;
		if (st == TFM_OK && !e->full)
			(void) emit(e, id, a);
		done = b;
	}
	if (st == TFM_OK && !e->full && done < len)
	{
		e->base = base + done;
		st = encode_added(e, t, s + done, len - done, pass + 1, skip);
	}
	e->base = base;
	return st;
}

int
tfm_tok_encode(int32_t *ids, size_t *offsets, size_t cap, size_t *n_ids, tfm_tokenizer *t,
			   const char *text, size_t len, uint32_t flags, size_t max_length,
			   tfm_status *err)
{
	const uint8_t *s = (const uint8_t *) text;
	size_t nspec = ((flags & TFM_TOK_ADD_BOS) ? 1 : 0) + ((flags & TFM_TOK_ADD_EOS) ? 1 : 0);
	size_t room = cap, i;
	emitter e;
	int st = TFM_OK, by_length = 0;

	*n_ids = 0;
	if (flags & ~(TFM_TOK_ADD_BOS | TFM_TOK_ADD_EOS | TFM_TOK_SPLIT_SPECIALS))
		return tfm_status_set(err, TFM_EINVAL, "unknown encode flags 0x%x", (unsigned) flags);
	if (max_length > 0 && max_length < nspec)
		return tfm_status_set(err, TFM_EINVAL,
							"max_length %zu leaves no room for the bos and eos tokens",
							max_length);
	if (max_length > 0 && max_length <= room)
	{
		room = max_length;
		by_length = 1;
	}
	if (room < nspec)
		return tfm_status_set(err, TFM_ELIMIT, "output buffer too small");
	e.ids = ids;
	e.offs = offsets;
	e.n = 0;
	e.full = 0;
	e.t = t;
	e.canceled = 0;
	e.err = err;
	e.err_set = 0;
	e.base = 0;
	if (flags & TFM_TOK_ADD_BOS)
	{
		ids[0] = t->info.special_ids[TFM_TOK_BOS];
		if (offsets)
			offsets[0] = 0;
	}
	e.ids = ids + ((flags & TFM_TOK_ADD_BOS) ? 1 : 0);
	e.offs = offsets ? offsets + ((flags & TFM_TOK_ADD_BOS) ? 1 : 0) : NULL;
	e.limit = room - nspec;
	switch (t->info.kind)
	{
		case TFM_TOK_BYTE:
			for (i = 0; i < len; i++)
				if (!emit(&e, t->byte_id[s[i]], i))
					break;
			break;
		case TFM_TOK_CHAR:
			st = encode_char(&e, t, s, len);
			break;
		case TFM_TOK_WORD:
			st = encode_word(&e, t, s, len);
			break;
		case TFM_TOK_BPE:
			if (t->added)
				st = encode_added(&e, t, s, len, 0, (flags & TFM_TOK_SPLIT_SPECIALS) != 0);
			else
				st = encode_bpe_part(&e, t, s, len);
			break;
		case TFM_TOK_UNIGRAM:
			st = encode_whole(&e, tfm_tok_unigram_encode, t, s, len);
			break;
		case TFM_TOK_WORDPIECE:
			if (t->info.flags & TFM_TOK_INFO_BERT)
				st = encode_bert(&e, t, s, len);
			else
				st = encode_wordpiece(&e, t, s, len);
			break;
	}
	if (e.canceled || st == TFM_ECANCELED)
		return tfm_status_set(err, TFM_ECANCELED, "encoding canceled");
	if (st == TFM_ENOMEM)
		return tfm_tok_oom(err);
	if (st != TFM_OK && e.err_set)
		return st;
	if (st != TFM_OK)
		return tfm_status_set(err, st, "pre-token too long to encode");
	if (e.full && !by_length)
		return tfm_status_set(err, TFM_ELIMIT, "output buffer too small for the token ids");
	if (flags & TFM_TOK_ADD_EOS)
	{
		e.ids[e.n] = t->info.special_ids[TFM_TOK_EOS];
		if (e.offs)
			e.offs[e.n] = len;
		e.n++;
	}
	*n_ids = e.n + ((flags & TFM_TOK_ADD_BOS) ? 1 : 0);
	return TFM_OK;
}
