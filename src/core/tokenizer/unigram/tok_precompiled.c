/*
 * tok_precompiled.c — SentencePiece's precompiled character map (the
 * `Precompiled` normalizer of a tokenizer.json, normalizer_spec.
 * precompiled_charsmap of a .model): a little-endian uint32 size of a Darts
 * double-array trie, the trie's 32-bit units, then NUL-terminated
 * normalized strings that the trie's values point into.
 *
 * The lookup is sentencepiece's Normalizer::NormalizePrefix exactly: a
 * common-prefix search of the input (the first 32 matches kept, as its
 * stack array does), the longest one wins; without a match one character
 * is copied as it is, and one byte of malformed UTF-8 becomes U+FFFD.
 * Every index into the blob is checked, so a hostile map cannot read
 * outside it.
 */
#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"
#include "tok_unigram_model.h"

#define MAX_TRIE_RESULTS 32		/* sentencepiece's kMaxTrieResultsSize */

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

int
tfm_tok_charsmap_parse(tfm_tok_charsmap *m, const uint8_t *blob, size_t len, tfm_status *err)
{
	uint32_t trie_bytes;

	memset(m, 0, sizeof(*m));
	if (len > TFM_TOK_CHARSMAP_MAX_BYTES)
		return tfm_status_set(err, TFM_ELIMIT, "precompiled_charsmap has %zu bytes, more than %d",
							len, TFM_TOK_CHARSMAP_MAX_BYTES);
	if (len < 4)
		return tfm_status_set(err, TFM_EFORMAT, "precompiled_charsmap is shorter than its header");
	trie_bytes = le32(blob);
	if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > len - 4)
		return tfm_status_set(err, TFM_EFORMAT,
							"precompiled_charsmap's trie size %u does not fit its %zu bytes",
							(unsigned) trie_bytes, len);
	m->n_units = trie_bytes / 4;
	m->units = tfm_tok_alloc((size_t) m->n_units * sizeof(uint32_t));
	if (!m->units)
		return tfm_tok_oom(err);
	for (uint32_t i = 0; i < m->n_units; i++)
		m->units[i] = le32(blob + 4 + 4 * (size_t) i);
	m->strs = blob + 4 + trie_bytes;
	m->strs_len = len - 4 - trie_bytes;
	return TFM_OK;
}

void
tfm_tok_charsmap_free(tfm_tok_charsmap *m)
{
	tfm_tok_dealloc(m->units);
	memset(m, 0, sizeof(*m));
}

/* Darts' unit fields */
static inline int
has_leaf(uint32_t u)
{
	return (u >> 8) & 1;
}

static inline uint32_t
unit_value(uint32_t u)
{
	return u & ((1U << 31) - 1);
}

static inline uint32_t
unit_label(uint32_t u)
{
	return u & ((1U << 31) | 0xFF);
}

static inline uint32_t
unit_offset(uint32_t u)
{
	return (u >> 10) << ((u & (1U << 9)) >> 6);
}

/*
 * The longest match at the start of s[0..n): its length in bytes (0: none)
 * and the value stored for it.  Darts' commonPrefixSearch with sentencepiece's
 * 32 results.
 */
static size_t
longest_match(const tfm_tok_charsmap *m, const uint8_t *s, size_t n, uint32_t *value)
{
	uint32_t pos = 0, unit;
	size_t best = 0, found = 0;

	if (m->n_units == 0)
		return 0;
	unit = m->units[0];
	pos ^= unit_offset(unit);
	for (size_t i = 0; i < n; i++)
	{
		pos ^= s[i];
		if (pos >= m->n_units)
			return best;
		unit = m->units[pos];
		if (unit_label(unit) != s[i])
			return best;
		pos ^= unit_offset(unit);
		if (pos >= m->n_units)
			return best;
		if (has_leaf(unit))
		{
			if (found < MAX_TRIE_RESULTS && (best == 0 || i + 1 > best))
			{
				best = i + 1;
				*value = unit_value(m->units[pos]);
			}
			found++;
		}
	}
	return best;
}

size_t
tfm_tok_charsmap_prefix(const uint8_t **out, size_t *out_len, const tfm_tok_charsmap *m,
						const uint8_t *s, size_t n)
{
	static const uint8_t replacement[3] = {0xEF, 0xBF, 0xBD};
	uint32_t value = 0;
	size_t len = longest_match(m, s, n, &value);

	if (len > 0 && value < m->strs_len)
	{
		const uint8_t *p = m->strs + value;
		const uint8_t *z = memchr(p, 0, m->strs_len - value);

		/* a string without its NUL ends at the blob's end */
		*out = p;
		*out_len = z ? (size_t) (z - p) : m->strs_len - value;
		return len;
	}
	if (len > 0)
	{
		/* a value outside the strings: the match normalizes to nothing */
		*out = s;
		*out_len = 0;
		return len;
	}
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s, n);

		if (cp < 0)
		{
			*out = replacement;
			*out_len = 3;
			return 1;
		}
		*out = s;
		*out_len = ul;
		return ul;
	}
}
