/*
 * test_tok_bert.c — the BERT normalizer and pre-tokenizer of imported
 * WordPiece tokenizers (tok_bert.c, the bert flag): hand-checked cases
 * (accents, case, CJK, controls, punctuation, Hangul, unknown and long
 * words) on a tiny vocabulary, the cased and accent-keeping variants
 * (lowercase false, strip_accents false) in their four combinations, then
 * random bytes (invalid UTF-8 included) that must encode without
 * crashing, every id in range.
 */
#include "check.h"
#include "tfm/tokenizer.h"

static const char *vocab[] = {
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "##b", "cafe", "!", "北", "##c",
	"\xe1\x84\x92", "##\xe1\x85\xa1", "##\xe1\x86\xab",
	"H\xc3\xa9llo", "World", "hello", "world", "Hello", "Caf\xc3\xa9", "h\xc3\xa9llo",
	"<bos>", "<eos>",
};
#define NV ((int) (sizeof(vocab) / sizeof(vocab[0])))

static tfm_tokenizer *
make(uint32_t flags)
{
	tfm_tok_info info;
	const uint8_t *p[NV];
	size_t		l[NV];
	tfm_tokenizer *t = NULL;
	tfm_status err;

	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_WORDPIECE;
	info.flags = TFM_TOK_INFO_BERT | flags;
	info.vocab_size = NV;
	info.special_ids[TFM_TOK_PAD] = 0;
	info.special_ids[TFM_TOK_UNK] = 1;
	info.special_ids[TFM_TOK_CLS] = 2;
	info.special_ids[TFM_TOK_SEP] = 3;
	info.special_ids[TFM_TOK_BOS] = NV - 2;
	info.special_ids[TFM_TOK_EOS] = NV - 1;
	for (int i = 0; i < NV; i++)
	{
		p[i] = (const uint8_t *) vocab[i];
		l[i] = strlen(vocab[i]);
	}
	if (tfm_tok_load(&t, &info, p, l, NULL, NULL, &err) != TFM_OK)
		printf("load: %s\n", err.msg);
	return t;
}

static void
expect(tfm_tokenizer *t, const char *text, const char *want)
{
	int32_t		ids[256];
	size_t		n;
	char		got[512] = "";
	tfm_status err;

	if (tfm_tok_encode(ids, NULL, 256, &n, t, text, strlen(text), 0, 0, &err) != TFM_OK)
	{
		CHECK(0, "encode \"%s\": %s", text, err.msg);
		return;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d", i ? " " : "", ids[i]);
	CHECK(strcmp(got, want) == 0, "\"%s\": got [%s], want [%s]", text, got, want);
}

/* the byte offsets of text's tokens, as "start start ..." */
static void
expect_offsets(tfm_tokenizer *t, const char *text, const char *want)
{
	int32_t		ids[256];
	size_t		offs[256],
				n;
	char		got[512] = "";
	tfm_status err;

	if (tfm_tok_encode(ids, offs, 256, &n, t, text, strlen(text), 0, 0, &err) != TFM_OK)
	{
		CHECK(0, "encode \"%s\": %s", text, err.msg);
		return;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%zu", i ? " " : "", offs[i]);
	CHECK(strcmp(got, want) == 0, "offsets of \"%s\": got [%s], want [%s]", text, got, want);
}

int
main(void)
{
	tfm_tokenizer *t = make(0);
	uint64_t	s = 12345;
	char		longword[300];

	CHECK(t != NULL, "tokenizer");
	if (!t)
		return check_summary("test_tok_bert");
	expect(t, "ab", "4 5");
	expect(t, "AB", "4 5");					/* lower-cased */
	expect(t, "Café!", "6 7");				/* accent stripped, ! split */
	expect(t, "CAFE\xcc\x81", "6");			/* a combining mark dropped */
	expect(t, "a!b", "4 7 1");				/* "b" alone is no piece */
	expect(t, "\xe5\x8c\x97\xe5\x8c\x97", "8 8");	/* CJK: each its own word */
	expect(t, "a\x01" "b", "4 5");			/* a control is dropped, not a space */
	expect(t, "a\xe2\x80\x8b" "b", "4 5");	/* U+200B (Cf) too */
	expect(t, "a\xe3\x80\x80" "ab", "4 4 5");	/* U+3000 is whitespace */
	expect(t, "a\xe2\x80\xa8" "a", "4 4");	/* U+2028 (Zl) is whitespace */
	expect(t, "abc", "4 5 9");
	expect(t, "abd", "1");					/* no "##d": the whole word is [UNK] */
	expect(t, "\xed\x95\x9c", "10 11 12");	/* Hangul: NFD into jamo */
	expect(t, "[CLS]", "1 1 1");			/* specials are text: [ CLS ] */
	expect(t, "\xef\xbc\xa1", "1");			/* fullwidth A: no canonical decomposition */
	expect(t, "", "");
	expect(t, "H\xc3\xa9llo World", "15 16");	/* héllo: uncased, "hello world" */
	/* each piece at the input character its first byte came from (the span
	 * tasks' offsets), through lower-casing, stripped accents and marks */
	expect_offsets(t, "abc", "0 1 2");
	expect_offsets(t, " ABC!", "1 2 3 4");
	expect_offsets(t, "\xc3\xa1" "bc ab", "0 2 3 5 6");	/* á: 2 bytes, one normalized a */
	expect_offsets(t, "a\xcc\x81" "bc", "0 3 4");		/* a combining mark after a */
	expect_offsets(t, "a\x01" "bc", "0 2 3");			/* a dropped control */
	expect_offsets(t, "\xed\x95\x9c", "0 0 0");		/* Hangul's jamo: one input character */
	expect_offsets(t, "abd ab", "0 4 5");				/* [UNK] at its word */

	/* bert-base-cased: lowercase false, strip_accents null (= false) */
	{
		tfm_tokenizer *c = make(TFM_TOK_INFO_CASED | TFM_TOK_INFO_KEEP_ACCENTS);

		CHECK(c != NULL, "cased tokenizer");
		if (c)
		{
			expect(c, "H\xc3\xa9llo World", "13 14");	/* stays cased, accent kept */
			expect(c, "hello world", "15 16");
			expect(c, "HELLO", "1");
			expect(c, "Caf\xc3\xa9!", "18 7");
			expect(c, "Cafe\xcc\x81", "1");		/* a combining mark is kept: no piece */
			expect(c, "\xe5\x8c\x97 a\x01" "b", "8 4 5");	/* CJK, controls as uncased */
			expect(c, "\xed\x95\x9c", "1");		/* Hangul is not decomposed */
			tfm_tok_free(c);
		}
		/* lowercase false, strip_accents true */
		c = make(TFM_TOK_INFO_CASED);
		CHECK(c != NULL, "cased stripping tokenizer");
		if (c)
		{
			expect(c, "H\xc3\xa9llo World", "17 14");	/* "Hello World" */
			expect(c, "Caf\xc3\xa9!", "1 7");		/* "Cafe": not a piece */
			tfm_tok_free(c);
		}
		/* lowercase true, strip_accents false */
		c = make(TFM_TOK_INFO_KEEP_ACCENTS);
		CHECK(c != NULL, "accent-keeping tokenizer");
		if (c)
		{
			expect(c, "H\xc3\xa9llo World", "19 16");	/* "héllo world" */
			expect(c, "HELLO", "15");
			expect(c, "Caf\xc3\xa9!", "1 7");		/* "café": not a piece */
			tfm_tok_free(c);
		}
	}
	/* "a" then 99 "b": 100 characters, pieces; one more "b": [UNK] */
	{
		char		want[400] = "4";

		memset(longword, 'b', sizeof(longword));
		longword[0] = 'a';
		longword[100] = '\0';
		for (int i = 1; i < 100; i++)
			strcat(want, " 5");
		expect(t, longword, want);
		longword[100] = 'b';
		longword[101] = '\0';
		expect(t, longword, "1");
	}

	/* hostile input: random bytes, every id in range, no crash */
	for (int r = 0; r < 20000; r++)
	{
		uint8_t		buf[64];
		int32_t		ids[128];
		size_t		n,
					len = (size_t) (r % 64);
		tfm_status err;
		int			st;

		for (size_t i = 0; i < len; i++)
		{
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			buf[i] = (uint8_t) (r % 3 == 0 ? (s & 0x7f) : s);
		}
		st = tfm_tok_encode(ids, NULL, 128, &n, t, (const char *) buf, len, 0, 0, &err);
		if (st != TFM_OK)
		{
			CHECK(0, "random input %d: %s", r, err.msg);
			break;
		}
		for (size_t i = 0; i < n; i++)
			if (ids[i] < 0 || ids[i] >= NV - 2)
			{
				CHECK(0, "random input %d: id %d out of range", r, ids[i]);
				break;
			}
	}
	tfm_tok_free(t);
	return check_summary("test_tok_bert");
}
