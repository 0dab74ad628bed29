/*
 * tok_pretok.c: pre-tokenizers.
 *
 * GPT-2 (bpe): the pattern of the reference encoder, with JavaScript
 * semantics (u flag, so one code point at a time):
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Alternatives are tried in order at each position.  For a run of k
 * whitespace units that is followed by a non-space, \s+(?!\S) backtracks to
 * the first k-1 units (the last one then starts " ?\p{L}+" and friends); a
 * single whitespace unit before a non-space falls through to \s+.  Invalid
 * UTF-8 units count as [^\s\p{L}\p{N}] and keep their bytes.
 *
 * Word splitter (word, wordpiece; BERT's basic tokenizer): whitespace
 * separates, a run of letters, marks and numbers is a word, every other
 * character is a token of its own.
 */
#include "tfm/tok_internal.h"
#include "tfm/tok_unicode.h"

/* class of the unit at s[0..n): sets *ulen */
static inline int
unit_class(size_t *ulen, const uint8_t *s, size_t n)
{
	int32_t cp;

	*ulen = tfm_tok_utf8_next(&cp, s, n);
	return tfm_tok_uclass(cp);
}

/* GPT-2 runs group L, N and "other" (which includes marks) */
static inline int
gpt2_group(int cls)
{
	return cls == TFM_UC_MARK ? TFM_UC_OTHER : cls;
}

/* end of the run of units of group g starting at i */
static size_t
run_end(const uint8_t *s, size_t n, size_t i, int g)
{
	while (i < n)
	{
		size_t ul;

		if (s[i] < 0x80)
		{
			if (gpt2_group(tfm_tok_ascii_class[s[i]]) != g)
				break;
			i++;
			continue;
		}
		if (gpt2_group(unit_class(&ul, s + i, n - i)) != g)
			break;
		i += ul;
	}
	return i;
}

size_t
tfm_tok_gpt2_next(const uint8_t *s, size_t n)
{
	size_t ul, i, last;
	int g;

	if (s[0] == '\'' && n >= 2)
	{
		uint8_t c = s[1];

		if (c == 's' || c == 't' || c == 'm' || c == 'd')
			return 2;
		if (n >= 3 && ((c == 'r' && s[2] == 'e') || (c == 'v' && s[2] == 'e') ||
					   (c == 'l' && s[2] == 'l')))
			return 3;
	}
	if (s[0] == ' ' && n >= 2)
	{
		g = gpt2_group(unit_class(&ul, s + 1, n - 1));
		if (g != TFM_UC_SPACE)
			return run_end(s, n, 1 + ul, g);
	}
	g = gpt2_group(unit_class(&ul, s, n));
	if (g != TFM_UC_SPACE)
		return run_end(s, n, ul, g);

	/* whitespace run: \s+(?!\S) then \s+ */
	last = 0;
	i = ul;
	while (i < n)
	{
		size_t l2;

		if (unit_class(&l2, s + i, n - i) != TFM_UC_SPACE)
			break;
		last = i;
		i += l2;
	}
	if (i == n)
		return n;
	return last > 0 ? last : i;
}

int
tfm_tok_word_next(size_t *start, size_t *len, int *invalid, const uint8_t *s, size_t n,
				  size_t *pos)
{
	size_t i = *pos, ul;
	int32_t cp;
	int cls;

	/* skip whitespace */
	while (i < n)
	{
		ul = tfm_tok_utf8_next(&cp, s + i, n - i);
		if (tfm_tok_uclass(cp) != TFM_UC_SPACE)
			break;
		i += ul;
	}
	if (i >= n)
	{
		*pos = n;
		return 0;
	}
	*start = i;
	ul = tfm_tok_utf8_next(&cp, s + i, n - i);
	cls = tfm_tok_uclass(cp);
	*invalid = cp < 0;
	i += ul;
	if (cls == TFM_UC_LETTER || cls == TFM_UC_NUMBER || cls == TFM_UC_MARK)
	{
		while (i < n)
		{
			ul = tfm_tok_utf8_next(&cp, s + i, n - i);
			cls = tfm_tok_uclass(cp);
			if (cls != TFM_UC_LETTER && cls != TFM_UC_NUMBER && cls != TFM_UC_MARK)
				break;
			i += ul;
		}
	}
	*len = i - *start;
	*pos = i;
	return 1;
}

int
tfm_tok_lower_append(tfm_tok_bytes *b, const uint8_t *s, size_t n)
{
	size_t i = 0;

	if (tfm_tok_grow((void **) &b->data, &b->cap, b->len + n + 8, 1))
		return TFM_TOK_ENOMEM;
	while (i < n)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s + i, n - i);
		uint8_t tmp[4];
		size_t tl;

		if (cp < 0)
		{
			tl = ul;
			memcpy(tmp, s + i, ul);
		}
		else
			tl = tfm_tok_utf8_put(tmp, tfm_tok_lower((uint32_t) cp));
		if (tfm_tok_grow((void **) &b->data, &b->cap, b->len + tl, 1))
			return TFM_TOK_ENOMEM;
		memcpy(b->data + b->len, tmp, tl);
		b->len += tl;
		i += ul;
	}
	return TFM_TOK_OK;
}
