/*
 * tok_unicode.h — UTF-8 decoding and the Unicode character classes the
 * tokenizers need (internal to src/core/tokenizer).  The tables are
 * generated from node by scripts/tokenizer/gen_unicode.js, so the classes
 * are exactly JavaScript's \s, \p{L}, \p{N}, \p{M}.
 */
#ifndef TFM_TOK_UNICODE_H
#define TFM_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum
{
	TFM_UC_OTHER = 0,
	TFM_UC_LETTER = 1,     /* \p{L} */
	TFM_UC_NUMBER = 2,     /* \p{N} */
	TFM_UC_MARK = 3,       /* \p{M} */
	TFM_UC_SPACE = 4       /* JavaScript \s */
};

extern const char tfm_tok_unicode_version[];
extern const int32_t tfm_tok_uclass_n;
extern const uint32_t tfm_tok_uclass_start[];
extern const uint8_t tfm_tok_uclass_cls[];
extern const int32_t tfm_tok_lower_n;
extern const uint32_t tfm_tok_lower_from[];
extern const uint32_t tfm_tok_lower_to[];

extern const uint8_t tfm_tok_ascii_class[128];

/* class of a code point; invalid units (cp < 0) are TFM_UC_OTHER */
int      tfm_tok_uclass_slow(uint32_t cp);
uint32_t tfm_tok_lower(uint32_t cp);

static inline int
tfm_tok_uclass(int32_t cp)
{
	if (cp < 0)
		return TFM_UC_OTHER;
	if (cp < 128)
		return tfm_tok_ascii_class[cp];
	return tfm_tok_uclass_slow((uint32_t) cp);
}

/* Decodes one unit of s[0 .. n-1] (n >= 1): returns its length in bytes and
 * sets *cp to the code point, or to -1 for an invalid unit, which is the
 * maximal subpart of an ill-formed sequence (WHATWG / Unicode "best
 * practice"), at least one byte. */
size_t tfm_tok_utf8_next_slow(int32_t *cp, const uint8_t *s, size_t n);

static inline size_t
tfm_tok_utf8_next(int32_t *cp, const uint8_t *s, size_t n)
{
	if (s[0] < 0x80)
	{
		*cp = s[0];
		return 1;
	}
	return tfm_tok_utf8_next_slow(cp, s, n);
}

/* writes the UTF-8 form of a valid code point, returns its length (1..4) */
size_t tfm_tok_utf8_put(uint8_t *out, uint32_t cp);

/* Unicode White_Space (Rust's char::is_whitespace) */
static inline int
tfm_tok_white_space(int32_t cp)
{
	return (cp >= 9 && cp <= 13) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
		(cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
		cp == 0x205F || cp == 0x3000;
}

#endif /* TFM_TOK_UNICODE_H */
