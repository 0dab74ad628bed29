/*
 * tok_decode.c: ids -> text.  byte, bpe and char concatenate pieces; word
 * joins tokens with one space; wordpiece joins with spaces and glues "##"
 * continuation pieces to what precedes them.  Specials are dropped (<unk>
 * becomes U+FFFD) unless TFM_TOK_DECODE_SPECIALS writes their names.  A
 * tokenizer that puts a space before the text (PREFIX_SPACE) drops the
 * first one, unless the ids continue a text.
 */
#include "tok_internal.h"
#include "unicode/tok_unicode.h"

static const uint8_t replacement[3] = {0xEF, 0xBF, 0xBD};

size_t
tfm_tok_decode_bound(const tfm_tokenizer *t, size_t n_ids, uint32_t flags)
{
	size_t per = t->max_piece_len < 5 ? 5 : t->max_piece_len;

	per += 1;                       /* a separating space */
	if (flags & TFM_TOK_DECODE_REPLACE)
		per *= 3;                   /* one invalid byte -> 3 bytes of U+FFFD */
	if (n_ids > SIZE_MAX / per)
		return SIZE_MAX;
	return n_ids * per;
}

static inline void
put(uint8_t *out, size_t *n, const void *p, size_t len)
{
	memcpy(out + *n, p, len);
	*n += len;
}

#define POLL_EVERY ((size_t) 1 << 20)	/* ids (or bytes) between two polls */

/* has t's cancel hook asked to stop (asked every POLL_EVERY steps)? */
static inline int
stopped(const tfm_tokenizer *t, size_t i)
{
	return t->poll && (i & (POLL_EVERY - 1)) == POLL_EVERY - 1 && t->poll(t->poll_arg) != 0;
}

/* out must hold tfm_tok_decode_bound(t, n, 0) bytes; TFM_ECANCELED if the poll stopped it */
static int
decode_raw(uint8_t *out, size_t *n_out, const tfm_tokenizer *t, const int32_t *ids, size_t n,
		   uint32_t flags)
{
	tfm_tok_kind kind = t->info.kind;
	size_t i, w = 0;
	int first = 1;

	for (i = 0; i < n; i++)
	{
		int32_t id = ids[i];
		const uint8_t *p = tfm_tok_piece_ptr(t, id);
		size_t l = tfm_tok_piece_len(t, id);
		int glue = 0;

		if (stopped(t, i))
			return TFM_ECANCELED;
		if (t->is_special[id] && !(flags & TFM_TOK_DECODE_SPECIALS))
		{
			if (id != t->info.special_ids[TFM_TOK_UNK])
				continue;
			p = replacement;
			l = 3;
		}
		else if (kind == TFM_TOK_WORDPIECE && !t->is_special[id] && l > 2 &&
				 p[0] == '#' && p[1] == '#')
		{
			p += 2;
			l -= 2;
			glue = 1;
		}
		if ((kind == TFM_TOK_WORD || kind == TFM_TOK_WORDPIECE) && !first && !glue)
			out[w++] = ' ';
		put(out, &w, p, l);
		first = 0;
	}
	*n_out = w;
	return TFM_OK;
}

static int decode_all(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
					  const int32_t *ids, size_t n_ids, uint32_t flags, tfm_status *err);

int
tfm_tok_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t, const int32_t *ids,
			   size_t n_ids, uint32_t flags, tfm_status *err)
{
	int st = decode_all(out, cap, n_out, t, ids, n_ids, flags, err);

	/* the space ByteLevel's add_prefix_space put before the text goes */
	if (st == TFM_OK && (t->info.flags & TFM_TOK_INFO_PREFIX_SPACE) &&
		!(flags & TFM_TOK_DECODE_CONTINUE) && *n_out > 0 && out[0] == ' ')
	{
		memmove(out, out + 1, *n_out - 1);
		(*n_out)--;
	}
	return st;
}

static int
decode_all(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t, const int32_t *ids,
		   size_t n_ids, uint32_t flags, tfm_status *err)
{
	size_t i, raw_len;
	uint8_t *raw;

	*n_out = 0;
	if (flags & ~(TFM_TOK_DECODE_SPECIALS | TFM_TOK_DECODE_REPLACE | TFM_TOK_DECODE_CONTINUE))
		return tfm_status_set(err, TFM_EINVAL, "unknown decode flags 0x%x", (unsigned) flags);
	if (t->info.flags & TFM_TOK_INFO_SPIECE)
		return tfm_tok_spiece_decode(out, cap, n_out, t, ids, n_ids, flags, err);
	if (t->info.kind == TFM_TOK_UNIGRAM)
		return tfm_tok_unigram_decode(out, cap, n_out, t, ids, n_ids, flags, err);
	for (i = 0; i < n_ids; i++)
		if (ids[i] < 0 || ids[i] >= t->info.vocab_size)
			return tfm_status_set(err, TFM_ERANGE,
								"token id %d at position %zu is out of range (the vocabulary has %d ids)",
								(int) ids[i], i + 1, (int) t->info.vocab_size);
	if (!(flags & TFM_TOK_DECODE_REPLACE))
	{
		/* exact size first, so that any cap >= the result works */
		size_t need = 0;
		int first = 1;

		for (i = 0; i < n_ids; i++)
		{
			int32_t id = ids[i];
			size_t l = tfm_tok_piece_len(t, id);
			int glue = 0;

			if (t->is_special[id] && !(flags & TFM_TOK_DECODE_SPECIALS))
			{
				if (id != t->info.special_ids[TFM_TOK_UNK])
					continue;
				l = 3;
			}
			else if (t->info.kind == TFM_TOK_WORDPIECE && !t->is_special[id] && l > 2 &&
					 tfm_tok_piece_ptr(t, id)[0] == '#' && tfm_tok_piece_ptr(t, id)[1] == '#')
			{
				l -= 2;
				glue = 1;
			}
			if ((t->info.kind == TFM_TOK_WORD || t->info.kind == TFM_TOK_WORDPIECE) && !first &&
				!glue)
				need++;
			need += l;
			first = 0;
		}
		if (need > cap)
			return tfm_status_set(err, TFM_ELIMIT, "output buffer too small for the text");
		if (decode_raw((uint8_t *) out, n_out, t, ids, n_ids, flags) != TFM_OK)
			return tfm_status_set(err, TFM_ECANCELED, "decoding canceled");
		return TFM_OK;
	}
	raw = tfm_tok_alloc(tfm_tok_decode_bound(t, n_ids, 0));
	if (!raw)
		return tfm_tok_oom(err);
	if (decode_raw(raw, &raw_len, t, ids, n_ids, flags) != TFM_OK)
	{
		tfm_tok_dealloc(raw);
		return tfm_status_set(err, TFM_ECANCELED, "decoding canceled");
	}
	{
		size_t r = 0, w = 0;

		for (size_t step = 0; r < raw_len; step++)
		{
			int32_t cp;
			size_t ul = tfm_tok_utf8_next(&cp, raw + r, raw_len - r);
			const uint8_t *p = cp < 0 ? replacement : raw + r;
			size_t l = cp < 0 ? 3 : ul;

			if (w + l > cap)
			{
				tfm_tok_dealloc(raw);
				return tfm_status_set(err, TFM_ELIMIT, "output buffer too small for the text");
			}
			if (stopped(t, step))
			{
				tfm_tok_dealloc(raw);
				return tfm_status_set(err, TFM_ECANCELED, "decoding canceled");
			}
			memcpy(out + w, p, l);
			w += l;
			r += ul;
		}
		*n_out = w;
	}
	tfm_tok_dealloc(raw);
	return TFM_OK;
}
