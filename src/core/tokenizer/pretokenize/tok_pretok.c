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
 * Llama 3 (tokenizer.json's Split, the same as tiktoken's cl100k_base):
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * by hand with the same backtracking: \s*[\r\n]+ ends after the last CR or
 * LF of a whitespace run; the contractions match in either case (and "'ſ",
 * which case-folds to "'s").
 *
 * Word splitter (word, wordpiece; BERT's basic tokenizer): whitespace
 * separates, a run of letters, marks and numbers is a word, every other
 * character is a token of its own.
 */
#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"

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

static inline int
is_crlf(uint8_t c)
{
	return c == '\r' || c == '\n';
}

/*
 * The end of the whitespace run whose first unit ends at i: all of it at
 * the end of s, else up to its last unit (\s+(?!\S), then \s+ for a
 * single unit).  With lastnl (which holds 1 if s[0] is '\r' or '\n', else
 * 0): one past the run's last '\r' or '\n' instead, where there is one.
 */
static size_t
space_run_end(const uint8_t *s, size_t n, size_t i, size_t *lastnl)
{
	size_t last = 0;

	while (i < n)
	{
		size_t l2;

		if (unit_class(&l2, s + i, n - i) != TFM_UC_SPACE)
			break;
		last = i;
		if (lastnl && is_crlf(s[i]))
			*lastnl = i + 1;
		i += l2;
	}
	if (lastnl && *lastnl > 0)
		return *lastnl;
	if (i == n)
		return n;
	return last > 0 ? last : i;
}

size_t
tfm_tok_gpt2_next(const uint8_t *s, size_t n)
{
	size_t ul;
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
	return space_run_end(s, n, ul, NULL);
}

/* [^\s\p{L}\p{N}]: marks and invalid units included */
static inline int
is_other(int cls)
{
	return cls != TFM_UC_SPACE && cls != TFM_UC_LETTER && cls != TFM_UC_NUMBER;
}

/* end of the run of units of class cls (exactly) starting at i */
static size_t
class_run_end(const uint8_t *s, size_t n, size_t i, int cls)
{
	while (i < n)
	{
		size_t ul;

		if (unit_class(&ul, s + i, n - i) != cls)
			break;
		i += ul;
	}
	return i;
}

static inline uint8_t
ascii_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t) (c + 32) : c;
}

size_t
tfm_tok_llama3_next(const uint8_t *s, size_t n)
{
	size_t ul, ul1, i, lastnl;
	int c0, c1;

	/* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
	if (s[0] == '\'' && n >= 2)
	{
		uint8_t c = ascii_lower(s[1]);

		if (c == 's' || c == 't' || c == 'm' || c == 'd')
			return 2;
		if (n >= 3)
		{
			uint8_t c2 = ascii_lower(s[2]);

			if (s[1] == 0xC5 && s[2] == 0xBF)	/* U+017F long s */
				return 3;
			if ((c == 'r' && c2 == 'e') || (c == 'v' && c2 == 'e') || (c == 'l' && c2 == 'l'))
				return 3;
		}
	}
	c0 = unit_class(&ul, s, n);
	/* [^\r\n\p{L}\p{N}]?\p{L}+ */
	if (c0 == TFM_UC_LETTER)
		return class_run_end(s, n, ul, TFM_UC_LETTER);
	if (c0 != TFM_UC_NUMBER && !is_crlf(s[0]) && ul < n)
	{
		c1 = unit_class(&ul1, s + ul, n - ul);
		if (c1 == TFM_UC_LETTER)
			return class_run_end(s, n, ul + ul1, TFM_UC_LETTER);
	}
	/* \p{N}{1,3} */
	if (c0 == TFM_UC_NUMBER)
	{
		int k;

		for (i = ul, k = 1; k < 3 && i < n; k++)
		{
			size_t l2;

			if (unit_class(&l2, s + i, n - i) != TFM_UC_NUMBER)
				break;
			i += l2;
		}
		return i;
	}
	/*  ?[^\s\p{L}\p{N}]+[\r\n]* */
	i = 0;
	if (s[0] == ' ' && n >= 2 && is_other(unit_class(&ul1, s + 1, n - 1)))
		i = 1;
	if (i == 1 || is_other(c0))
	{
		while (i < n)
		{
			size_t l2;

			if (!is_other(unit_class(&l2, s + i, n - i)))
				break;
			i += l2;
		}
		while (i < n && is_crlf(s[i]))
			i++;
		return i;
	}
	/* s[0] is whitespace: \s*[\r\n]+, then \s+(?!\S), then \s+ */
	lastnl = is_crlf(s[0]) ? 1 : 0;
	return space_run_end(s, n, ul, &lastnl);
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

	if (tfm_grow((void **) &b->data, &b->cap, b->len + n + 8, 1))
		return TFM_ENOMEM;
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
		if (tfm_grow((void **) &b->data, &b->cap, b->len + tl, 1))
			return TFM_ENOMEM;
		memcpy(b->data + b->len, tmp, tl);
		b->len += tl;
		i += ul;
	}
	return TFM_OK;
}
