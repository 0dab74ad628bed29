/*
 * test_tok_added.c — added tokens found in a text as Hugging Face's
 * AddedVocabulary finds them (tok_added.c), on a small SentencePiece-style
 * BPE (the ids worked out by hand below): each token its id and the parts
 * between encoded on their own (each with its own "▁"), offsets in the
 * whole text, the leftmost and longest match, lstrip / rstrip, single_word,
 * normalized tokens in the second pass, TFM_TOK_SPLIT_SPECIALS reading only
 * the special ones as text; bad lists refused; a long hostile text bounded
 * by the longest token, and the cancel hook.
 */
#include "check.h"
#include "../src/core/tokenizer/tok_internal.h"

/* ids: <unk> 0, <s> 1, </s> 2, <0xNN> 3 + NN, ▁ 259, a 260, b 261, ▁a 262,
 * ab 263, ▁ab 264, é 265, "<<<...<x" (200 '<' and x) 266, 1100 "z" 267 */
static tfm_tokenizer *
tiny(void)
{
	static char longp[202],
				zs[1101];
	const char *base[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab",
	"\xE2\x96\x81" "ab", "\xC3\xA9", longp, zs};
	const uint8_t *pieces[268];
	size_t		lens[268];
	static char hexp[256][7];
	int32_t		merges[6] = {259, 260, 260, 261, 262, 261};
	tfm_tokenizer *t = NULL;
	tfm_status	err;
	int			n = 0;

	memset(longp, '<', 200);
	longp[200] = 'x';
	longp[201] = '\0';
	memset(zs, 'z', 1100);
	zs[1100] = '\0';
	for (int i = 0; i < 3; i++, n++)
	{
		pieces[n] = (const uint8_t *) base[i];
		lens[n] = strlen(base[i]);
	}
	for (int b = 0; b < 256; b++, n++)
	{
		snprintf(hexp[b], sizeof(hexp[b]), "<0x%02X>", b);
		pieces[n] = (const uint8_t *) hexp[b];
		lens[n] = 6;
	}
	for (int i = 3; i < 12; i++, n++)
	{
		pieces[n] = (const uint8_t *) base[i];
		lens[n] = strlen(base[i]);
	}
	CHECK(tfm_tok_import_spiece(&t, pieces, lens, n, merges, 3, 0, 1, 2, 0, &err) == TFM_OK,
		  "spiece import: %s", err.msg);
	return t;
}

static int
ids_are(tfm_tokenizer *t, const char *text, uint32_t flags, const int32_t *want, size_t n_want,
		const size_t *want_offs)
{
	int32_t		ids[64];
	size_t		offs[64],
				n;
	tfm_status	err;

	if (tfm_tok_encode(ids, offs, 64, &n, t, text, strlen(text), flags, 0, &err) != TFM_OK)
	{
		fprintf(stderr, "encode \"%s\": %s\n", text, err.msg);
		return 0;
	}
	if (n != n_want || memcmp(ids, want, n * sizeof(int32_t)) != 0)
	{
		fprintf(stderr, "\"%s\":", text);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %d@%zu", ids[i], offs[i]);
		fputc('\n', stderr);
		return 0;
	}
	for (size_t i = 0; want_offs && i < n; i++)
		if (offs[i] != want_offs[i])
		{
			fprintf(stderr, "\"%s\": id %zu at %zu, not %zu\n", text, i, offs[i], want_offs[i]);
			return 0;
		}
	return 1;
}

static int	polls = 0;
static int
stop_at_once(void *arg)
{
	(void) arg;
	polls++;
	return 1;
}

int
main(void)
{
	tfm_tokenizer *t = tiny();
	tfm_status	err;

	if (!t)
		return check_summary("test_tok_added");
	{
		/* no list: "<s>" is characters */
		const int32_t w[] = {259, 3 + '<', 3 + 's', 3 + '>'};

		CHECK(ids_are(t, "<s>", 0, w, 4, NULL), "no added tokens: <s> is text");
	}
	{
		int32_t		ids[] = {1, 2, 263};
		uint8_t		fl[] = {TFM_TOK_ADDED_SPECIAL, TFM_TOK_ADDED_SPECIAL, 0};

		CHECK(tfm_tok_set_added(t, ids, fl, 3, &err) == TFM_OK, "set_added: %s", err.msg);
		CHECK(tfm_tok_n_added(t) == 3, "three added tokens");
	}
	{
		/* each part between tokens its own "▁"; offsets in the whole text */
		CHECK(ids_are(t, "xy", 0, (const int32_t[]) {259, 3 + 'x', 3 + 'y'}, 3, NULL), "plain text");
		CHECK(ids_are(t, "ab<s>ab", 0, (const int32_t[]) {263, 1, 263}, 3, (const size_t[]) {0, 2, 5}),
			  "ab is an added token too: never split");
		CHECK(ids_are(t, "</s>", 0, (const int32_t[]) {2}, 1, NULL), "</s> whole");
		CHECK(ids_are(t, "a<s></s>b", 0, (const int32_t[]) {262, 1, 2, 259, 261}, 5,
					  (const size_t[]) {0, 1, 4, 8, 8}), "two specials side by side");
		/* split_special_tokens: the specials are text, ab still its token */
		CHECK(ids_are(t, "<s>ab", TFM_TOK_SPLIT_SPECIALS,
					  (const int32_t[]) {259, 3 + '<', 3 + 's', 3 + '>', 263}, 5, NULL),
			  "split specials: <s> is text, ab is still matched");
	}
	{
		/* lstrip / rstrip on <s>: the spaces beside it are its own */
		int32_t		ids[] = {1, 263};
		uint8_t		fl[] = {TFM_TOK_ADDED_SPECIAL | TFM_TOK_ADDED_LSTRIP | TFM_TOK_ADDED_RSTRIP,
		TFM_TOK_ADDED_SINGLE_WORD};

		CHECK(tfm_tok_set_added(t, ids, fl, 2, &err) == TFM_OK, "set_added: %s", err.msg);
		CHECK(ids_are(t, "a  <s> b", 0, (const int32_t[]) {262, 1, 259, 261}, 4,
					  (const size_t[]) {0, 1, 7, 7}), "lstrip and rstrip");
		/* single_word: "ab" inside "abab" is no match, " ab" at the end is */
		CHECK(ids_are(t, "abab", 0, (const int32_t[]) {264, 263}, 2, NULL), "single_word inside a word");
		CHECK(ids_are(t, "x ab", 0, (const int32_t[]) {259, 3 + 'x', 259, 263}, 4, NULL),
			  "single_word between spaces");
	}
	{
		/* normalized tokens: the second pass, inside the parts of the first */
		int32_t		ids[] = {1, 263};
		uint8_t		fl[] = {TFM_TOK_ADDED_SPECIAL, TFM_TOK_ADDED_NORMALIZED};

		CHECK(tfm_tok_set_added(t, ids, fl, 2, &err) == TFM_OK, "set_added: %s", err.msg);
		CHECK(ids_are(t, "ab<s>ab", 0, (const int32_t[]) {263, 1, 263}, 3, NULL), "two passes");
	}
	{
		/* refused lists leave the old one */
		int32_t		bad[] = {999};
		uint8_t		fl[] = {0},
					badfl[] = {64};
		int32_t		one[] = {1};

		CHECK(tfm_tok_set_added(t, bad, fl, 1, &err) == TFM_EINVAL, "id out of range refused");
		CHECK(tfm_tok_set_added(t, one, badfl, 1, &err) == TFM_EINVAL, "unknown flag refused");
		one[0] = 267;
		CHECK(tfm_tok_set_added(t, one, fl, 1, &err) == TFM_ELIMIT, "a token past 1024 bytes refused");
		CHECK(tfm_tok_n_added(t) == 2, "the old list stays");
	}
	{
		/* hostile: 256 KiB of '<' against a 201-byte token that never
		 * completes: bounded work, every byte one id, then the cancel hook */
		size_t		len = 256 * 1024,
					n;
		char	   *s = malloc(len + 2);
		int32_t    *ids = malloc(sizeof(int32_t) * (2 * len + 4));
		int32_t		id266[] = {266};
		uint8_t		fl[] = {TFM_TOK_ADDED_SPECIAL};

		memset(s, '<', len);
		s[len] = 'x';
		s[len + 1] = '\0';
		CHECK(tfm_tok_set_added(t, id266, fl, 1, &err) == TFM_OK, "set_added: %s", err.msg);
		CHECK(tfm_tok_encode(ids, NULL, 2 * len + 4, &n, t, s, len, 0, 0, &err) == TFM_OK &&
			  n == len + 1 && ids[0] == 259 && ids[len] == 3 + '<', "a long text of '<': %zu ids", n);
		CHECK(tfm_tok_encode(ids, NULL, 2 * len + 4, &n, t, s, len + 1, 0, 0, &err) == TFM_OK &&
			  n == (len - 200) + 2 && ids[n - 1] == 266, "the token at its end: %zu ids", n);
		tfm_tok_set_poll(t, stop_at_once, NULL);
		CHECK(tfm_tok_encode(ids, NULL, 2 * len + 4, &n, t, s, len, 0, 0, &err) == TFM_ECANCELED &&
			  polls > 0, "the cancel hook stops the search");
		tfm_tok_set_poll(t, NULL, NULL);
		free(s);
		free(ids);
	}
	tfm_tok_free(t);
	return check_summary("test_tok_added");
}
