/*
 * tok_spans.c: where each token of an encoded text ends (tfm_tok_spans),
 * from the start offsets tfm_tok_encode gives: what chunking a long text
 * into token windows needs to tell each window's place in the text.
 *
 * A token ends where the next token that starts later starts (tokens that
 * share a start, such as the pieces of one Hangul syllable, share
 * that end), the last at the end of the text.  Tokenizers that skip
 * whitespace (word and wordpiece) leave it out of the token before it.
 */
#include "tok_internal.h"
#include "unicode/tok_unicode.h"

/* the end of the last character of s[from .. to) that is not whitespace; from if none */
static size_t
trim_space(const uint8_t *s, size_t from, size_t to)
{
	size_t end = from, i = from;

	while (i < to)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s + i, to - i);

		i += ul;
		if (tfm_tok_uclass(cp) != TFM_UC_SPACE)
			end = i;
	}
	return end;
}

int
tfm_tok_spans(size_t *ends, const size_t *starts, size_t n, const tfm_tokenizer *t,
			  const char *text, size_t len, tfm_status *err)
{
	const uint8_t *s = (const uint8_t *) text;
	int skips = t->info.kind == TFM_TOK_WORD || t->info.kind == TFM_TOK_WORDPIECE;
	size_t next = len, i;

	for (i = 0; i < n; i++)
		if (starts[i] > len || (i > 0 && starts[i] < starts[i - 1]))
			return tfm_status_set(err, TFM_EINVAL,
								"token %zu starts at byte %zu, %s", i, starts[i],
								starts[i] > len ? "past the end of the text" : "before the token before it");
	for (i = n; i-- > 0;)
	{
		if (i + 1 < n && starts[i + 1] > starts[i])
			next = starts[i + 1];
		ends[i] = skips ? trim_space(s, starts[i], next) : next;
		/* a token with a start of its own always covers at least that character */
		if (ends[i] == starts[i] && starts[i] < len)
		{
			int32_t cp;

			ends[i] = starts[i] + tfm_tok_utf8_next(&cp, s + starts[i], len - starts[i]);
		}
	}
	return TFM_OK;
}
