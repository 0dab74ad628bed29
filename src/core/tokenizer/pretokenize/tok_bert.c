/*
 * tok_bert.c: BERT's normalizer and pre-tokenizer as Hugging Face
 * tokenizers applies them for a tokenizer.json with BertNormalizer
 * (clean_text, handle_chinese_chars, strip_accents, lowercase all on) and
 * BertPreTokenizer:
 *   clean text    drop U+0000, U+FFFD and controls (category C* but tab,
 *                 newline, return); whitespace (White_Space) becomes ' '
 *   Chinese       every CJK ideograph becomes a word of its own
 *   strip accents NFD, then every mark (M*) dropped (when asked)
 *   lowercase     full lower-case mapping (when asked)
 *   pre-tokenize  split on whitespace; every punctuation character (ASCII
 *                 punctuation or P*) is a word of its own
 * The tables (tok_bert_data.c) are generated from Python's unicodedata by
 * scripts/tokenizer/gen_bert_unicode.py.  Each word goes to cb with the
 * byte offset in the input of its first character and, for each of its
 * bytes, where its input character is from there (a piece's offsets).
 */
#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"

extern const int32_t tfm_bert_class_n;
extern const uint32_t tfm_bert_class_start[];
extern const uint8_t tfm_bert_class_bits[];
extern const int32_t tfm_bert_strip_n, tfm_bert_lower_n;
extern const uint32_t tfm_bert_strip_from[], tfm_bert_strip_off[], tfm_bert_strip_pool[];
extern const uint32_t tfm_bert_lower_from[], tfm_bert_lower_off[], tfm_bert_lower_pool[];

#define B_CTRL  1
#define B_SPACE 2
#define B_PUNCT 4
#define B_MARK  8
#define B_CJK   16

static int
bert_bits(uint32_t cp)
{
	int32_t lo = 0, hi = tfm_bert_class_n - 1;

	while (lo < hi)
	{
		int32_t mid = (lo + hi + 1) / 2;

		if (tfm_bert_class_start[mid] <= cp)
			lo = mid;
		else
			hi = mid - 1;
	}
	return tfm_bert_class_bits[lo];
}

/* the mapping of cp in a (from, off, pool) table: count and first element, or 0 */
static int
lookup(const uint32_t **out, uint32_t cp, int32_t n, const uint32_t *from,
	   const uint32_t *off, const uint32_t *pool)
{
	int32_t lo = 0, hi = n - 1;

	while (lo <= hi)
	{
		int32_t mid = (lo + hi) / 2;

		if (from[mid] == cp)
		{
			*out = pool + off[mid];
			return (int) (off[mid + 1] - off[mid]);
		}
		if (from[mid] < cp)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static int
put_utf8(tfm_tok_bytes *b, uint32_t cp)
{
	uint8_t u[4];
	size_t n;

	if (cp < 0x80)
	{
		u[0] = (uint8_t) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = 0xC0 | (cp >> 6);
		u[1] = 0x80 | (cp & 0x3F);
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = 0xE0 | (cp >> 12);
		u[1] = 0x80 | ((cp >> 6) & 0x3F);
		u[2] = 0x80 | (cp & 0x3F);
		n = 3;
	}
	else
	{
		u[0] = 0xF0 | (cp >> 18);
		u[1] = 0x80 | ((cp >> 12) & 0x3F);
		u[2] = 0x80 | ((cp >> 6) & 0x3F);
		u[3] = 0x80 | (cp & 0x3F);
		n = 4;
	}
	return tfm_tok_bytes_append(b, u, n);
}

typedef struct wordbuf
{
	tfm_tok_bytes *w;
	tfm_tok_ivec rel;           /* per byte of w: its character's input offset - off */
	size_t      off;            /* input offset of the word's first character */
	tfm_tok_bert_cb cb;
	void       *arg;
	int         stop;
	int         lower;          /* lower-case */
	int         strip;          /* strip accents */
} wordbuf;

static int
flush(wordbuf *wb)
{
	int r;

	if (wb->w->len == 0 || wb->stop)
		return TFM_OK;
	r = wb->cb(wb->arg, wb->w->data, wb->w->len, wb->off, wb->rel.data);
	wb->w->len = 0;
	wb->rel.len = 0;
	if (r < 0)
		return TFM_ENOMEM;
	if (r == 0)
		wb->stop = 1;
	return TFM_OK;
}

/* cp's UTF-8 into the word, each byte from the input character at at */
static int
put_at(wordbuf *wb, uint32_t cp, size_t at)
{
	size_t before = wb->w->len;

	if (put_utf8(wb->w, cp))
		return TFM_ENOMEM;
	for (size_t i = before; i < wb->w->len; i++)
		if (tfm_tok_ivec_push(&wb->rel, (int32_t) (at - wb->off)))
			return TFM_ENOMEM;
	return TFM_OK;
}

/* one normalized character (after stripping and lower-casing) */
static int
add_char(wordbuf *wb, uint32_t cp, size_t at)
{
	int b = bert_bits(cp);

	if (b & B_SPACE)
		return flush(wb);
	if (b & B_PUNCT)
	{
		int st = flush(wb);

		if (st != TFM_OK)
			return st;
		wb->off = at;
		if (put_at(wb, cp, at) != TFM_OK)
			return TFM_ENOMEM;
		return flush(wb);
	}
	if (wb->w->len == 0)
		wb->off = at;
	return put_at(wb, cp, at);
}

/* lower-case one stripped character (when asked), then add it */
static int
add_lowered(wordbuf *wb, uint32_t cp, size_t at)
{
	const uint32_t *m;
	int k;

	/* what stripping leaves has no marks: a mark of the input goes too */
	if (wb->strip && (bert_bits(cp) & B_MARK))
		return TFM_OK;
	if (!wb->lower)
		return add_char(wb, cp, at);
	k = lookup(&m, cp, tfm_bert_lower_n, tfm_bert_lower_from, tfm_bert_lower_off,
			   tfm_bert_lower_pool);
	if (k < 0)
		return add_char(wb, cp, at);
	for (int i = 0; i < k; i++)
	{
		int st = add_char(wb, m[i], at);

		if (st != TFM_OK)
			return st;
	}
	return TFM_OK;
}

int
tfm_tok_bert_words(tfm_tok_bytes *scratch, const uint8_t *s, size_t len, int lower, int strip,
				   tfm_tok_bert_cb cb, void *arg)
{
	wordbuf wb = {scratch, {0}, 0, cb, arg, 0, lower, strip};
	size_t pos = 0;
	int st = TFM_OK;

	scratch->len = 0;
	while (pos < len && st == TFM_OK && !wb.stop)
	{
		int32_t cp;
		size_t at = pos, ul = tfm_tok_utf8_next(&cp, s + pos, len - pos);
		int b;

		pos += ul;
		if (cp < 0)
		{
			/* an invalid unit: a word of its own (it matches no piece) */
			st = flush(&wb);
			if (st == TFM_OK && tfm_tok_bytes_append(scratch, s + at, ul))
				st = TFM_ENOMEM;
			for (size_t i = 0; i < ul && st == TFM_OK; i++)
				if (tfm_tok_ivec_push(&wb.rel, 0))
					st = TFM_ENOMEM;
			wb.off = at;
			if (st == TFM_OK)
				st = flush(&wb);
			continue;
		}
		if (cp == 0 || cp == 0xFFFD)
			continue;
		b = bert_bits((uint32_t) cp);
		if (b & B_CTRL)
			continue;
		if (b & B_SPACE)
		{
			st = flush(&wb);
			continue;
		}
		if (b & B_CJK)
		{
			st = flush(&wb);
			if (st == TFM_OK)
			{
				wb.off = at;
				st = put_at(&wb, (uint32_t) cp, at);
				if (st == TFM_OK)
					st = flush(&wb);
			}
			continue;
		}
		if (!strip)
		{
			st = add_lowered(&wb, (uint32_t) cp, at);
			continue;
		}
		if (cp >= 0xAC00 && cp <= 0xD7A3)
		{
			/* Hangul syllable: NFD is L V (T) jamo */
			int32_t si = cp - 0xAC00;

			st = add_lowered(&wb, 0x1100 + si / 588, at);
			if (st == TFM_OK)
				st = add_lowered(&wb, 0x1161 + (si % 588) / 28, at);
			if (st == TFM_OK && si % 28)
				st = add_lowered(&wb, 0x11A7 + si % 28, at);
			continue;
		}
		{
			const uint32_t *m;
			int k = lookup(&m, (uint32_t) cp, tfm_bert_strip_n, tfm_bert_strip_from,
						   tfm_bert_strip_off, tfm_bert_strip_pool);

			if (k < 0)
				st = add_lowered(&wb, (uint32_t) cp, at);
			else
				for (int i = 0; i < k && st == TFM_OK; i++)
					st = add_lowered(&wb, m[i], at);
		}
	}
	if (st == TFM_OK)
		st = flush(&wb);
	tfm_tok_ivec_free(&wb.rel);
	return st;
}
