/*
 * test_tokenizer.c: unit tests of the tokenizers (include/tfm/tokenizer.h)
 * that need no corpus; test_tokenizer_corpus.c has the rest.
 *
 *   - Unicode classes, UTF-8 error units, the GPT-2 pre-tokenizer corners
 *   - every kind: specials, unknowns, invalid UTF-8, bos/eos/max_length,
 *     offsets, decode rules, errors with their messages
 *   - counter images and their errors, rows that tfm_tok_load refuses,
 *     gpt-3-encoder's string-key aliases
 *
 * Environment: TFM_TEST_QUICK=1 (small subsets, for valgrind).
 * Exits non-zero on any failure; the last line is "N passed, M failed".
 */
#include "tokenizer_helpers.h"


/* ---- unicode and pre-tokenizer ----------------------------------------------------- */

static void
test_unicode(void)
{
	int32_t cp;
	size_t l;

	CHECK(tfm_tok_uclass('a') == TFM_UC_LETTER && tfm_tok_uclass('7') == TFM_UC_NUMBER &&
		  tfm_tok_uclass(' ') == TFM_UC_SPACE && tfm_tok_uclass('!') == TFM_UC_OTHER,
		  "ascii classes");
	CHECK(tfm_tok_uclass(0xE9) == TFM_UC_LETTER, "U+00E9 is a letter");
	CHECK(tfm_tok_uclass(0x301) == TFM_UC_MARK, "U+0301 is a mark");
	CHECK(tfm_tok_uclass(0x3000) == TFM_UC_SPACE && tfm_tok_uclass(0xFEFF) == TFM_UC_SPACE &&
		  tfm_tok_uclass(0xA0) == TFM_UC_SPACE && tfm_tok_uclass(0x2029) == TFM_UC_SPACE,
		  "JavaScript \\s");
	CHECK(tfm_tok_uclass(0x180E) == TFM_UC_OTHER && tfm_tok_uclass(0x200B) == TFM_UC_OTHER,
		  "U+180E, U+200B are not \\s in JavaScript");
	CHECK(tfm_tok_uclass(0x661) == TFM_UC_NUMBER && tfm_tok_uclass(0xBD) == TFM_UC_NUMBER &&
		  tfm_tok_uclass(0x2167) == TFM_UC_NUMBER, "\\p{N}");
	CHECK(tfm_tok_uclass(0x65E5) == TFM_UC_LETTER && tfm_tok_uclass(0x1F600) == TFM_UC_OTHER,
		  "CJK letter, emoji other");
	CHECK(tfm_tok_uclass(0x10FFFF) == TFM_UC_OTHER, "last code point");
	CHECK(tfm_tok_lower('A') == 'a' && tfm_tok_lower(0xC9) == 0xE9 && tfm_tok_lower(0x3A3) == 0x3C3 &&
		  tfm_tok_lower('a') == 'a' && tfm_tok_lower(0x130) == 0x130, "lower-case");
	l = tfm_tok_utf8_next(&cp, (const uint8_t *) "\xE2\x82" "a", 3);
	CHECK(l == 2 && cp == -1, "truncated sequence is one unit of 2 bytes (got %zu)", l);
	l = tfm_tok_utf8_next(&cp, (const uint8_t *) "\xED\xA0\x80", 3);
	CHECK(l == 1 && cp == -1, "surrogate lead is one invalid byte");
	l = tfm_tok_utf8_next(&cp, (const uint8_t *) "\xC0\xAF", 2);
	CHECK(l == 1 && cp == -1, "overlong");
	l = tfm_tok_utf8_next(&cp, (const uint8_t *) "\xF0\x9F\x98\x80", 4);
	CHECK(l == 4 && cp == 0x1F600, "4-byte sequence");
	l = tfm_tok_utf8_next(&cp, (const uint8_t *) "\xF4\x90\x80\x80", 4);
	CHECK(l == 1 && cp == -1, "above U+10FFFF");
	CHECK(tfm_tok_utf8_valid("h\xC3\xA9", 3) && !tfm_tok_utf8_valid("h\xC3", 2), "utf8_valid");
}

static void
expect_split(const char *s, const char *const *want, int nwant)
{
	size_t n = strlen(s), pos = 0;
	int k = 0, ok = 1;

	while (pos < n)
	{
		size_t l = tfm_tok_gpt2_next((const uint8_t *) s + pos, n - pos);

		if (k >= nwant || strlen(want[k]) != l || memcmp(want[k], s + pos, l) != 0)
			ok = 0;
		k++;
		pos += l;
	}
	CHECK(ok && k == nwant, "gpt2 pre-tokens of \"%s\"", s);
}

static void
test_pretok(void)
{
	{
		const char *w[] = {"Hello", ",", " world", "'s", " 123", "!!", "  ", " x"};
		expect_split("Hello, world's 123!!   x", w, 8);
	}
	{
		const char *w[] = {"a", "\n\n", " b", "  "};
		expect_split("a\n\n b  ", w, 4);
	}
	{
		const char *w[] = {"x", "\n", "y", " '", "re", "'ll"};
		expect_split("x\ny 're'll", w, 6);
	}
	{
		const char *w[] = {"ab", "\xff\xfe", " \xff", "c"};
		expect_split("ab\xff\xfe \xff" "c", w, 4);
	}
	{
		size_t st, len, pos = 0;
		int inv, n = 0;
		const char *s = "  Don't stop-me \xff now";
		const char *want[] = {"Don", "'", "t", "stop", "-", "me", "\xff", "now"};
		int ok = 1;

		while (tfm_tok_word_next(&st, &len, &inv, (const uint8_t *) s, strlen(s), &pos))
		{
			if (n >= 8 || strlen(want[n]) != len || memcmp(want[n], s + st, len) != 0 ||
				inv != (n == 6))
				ok = 0;
			n++;
		}
		CHECK(ok && n == 8, "word splitter");
	}
}

/* ---- kinds ---------------------------------------------------------------------------- */

static void
test_byte(void)
{
	tfm_tok_options opt;
	tfm_tokenizer *t;
	int32_t ids[64];
	size_t offs[64], n, got;
	char out[64];
	tfm_status err = {0};
	const char *s = "h\xC3\xA9\xff";

	tfm_tok_options_init(&opt, TFM_TOK_BYTE);
	t = train_on(&opt, NULL, 0);
	CHECK(t != NULL, "byte tokenizer");
	if (!t)
		return;
	CHECK(tfm_tok_encode(ids, offs, 64, &n, t, s, 4, TFM_TOK_ADD_BOS | TFM_TOK_ADD_EOS, 0, &err) ==
		  TFM_OK && n == 6, "encode");
	CHECK(ids[0] == TFM_TOK_BOS && ids[1] == 6 + 'h' && ids[2] == 6 + 0xC3 && ids[4] == 6 + 0xFF &&
		  ids[5] == TFM_TOK_EOS && offs[3] == 2 && offs[5] == 4, "byte ids and offsets");
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, n, 0, &err) == TFM_OK && got == 4 &&
		  memcmp(out, s, 4) == 0, "byte decode drops bos/eos");
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, n, TFM_TOK_DECODE_SPECIALS, &err) ==
		  TFM_OK && got == 14 && memcmp(out, "<bos>h\xC3\xA9\xff<eos>", 14) == 0,
		  "decode with specials");
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, n, TFM_TOK_DECODE_REPLACE, &err) ==
		  TFM_OK && got == 6 && memcmp(out, "h\xC3\xA9\xEF\xBF\xBD", 6) == 0,
		  "decode replacing invalid UTF-8");
	{
		/* spans: the tokens tile the text, a token of each byte */
		size_t ends[4], bad[2] = {2, 1};

		CHECK(tfm_tok_encode(ids, offs, 64, &n, t, s, 4, 0, 0, &err) == TFM_OK && n == 4 &&
			  tfm_tok_spans(ends, offs, n, t, s, 4, &err) == TFM_OK &&
			  ends[0] == 1 && ends[1] == 2 && ends[2] == 3 && ends[3] == 4, "byte spans");
		CHECK(tfm_tok_spans(ends, bad, 2, t, s, 4, &err) == TFM_EINVAL &&
			  strstr(err.msg, "before the token before it") != NULL, "spans out of order: %s", err.msg);
		bad[1] = 5;
		CHECK(tfm_tok_spans(ends, bad, 2, t, s, 4, &err) == TFM_EINVAL &&
			  strstr(err.msg, "past the end") != NULL, "spans past the end: %s", err.msg);
	}
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, t, "abcdef", 6, TFM_TOK_ADD_BOS | TFM_TOK_ADD_EOS, 4,
						 &err) == TFM_OK && n == 4 && ids[0] == TFM_TOK_BOS &&
		  ids[1] == 6 + 'a' && ids[2] == 6 + 'b' && ids[3] == TFM_TOK_EOS, "max_length keeps eos");
	CHECK(tfm_tok_encode(ids, NULL, 3, &n, t, "abcdef", 6, 0, 0, &err) == TFM_ELIMIT,
		  "small buffer is an error");
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, t, "abc", 3, TFM_TOK_ADD_BOS | TFM_TOK_ADD_EOS, 1,
						 &err) == TFM_EINVAL, "max_length below specials");
	ids[0] = 262;
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, 1, 0, &err) == TFM_ERANGE &&
		  strstr(err.msg, "262") != NULL, "decode id out of range: %s", err.msg);
	ids[0] = -1;
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, 1, 0, &err) == TFM_ERANGE,
		  "negative id");
	CHECK(tfm_tok_special_id(t, TFM_TOK_SEP) == 5 && tfm_tok_piece_id(t, (const uint8_t *) "<cls>", 5) == 4,
		  "special ids");
	{
		tfm_tok_options o2;
		tfm_tok_counter *c;
		tfm_tokenizer *t2;

		tfm_tok_options_init(&o2, TFM_TOK_BYTE);
		o2.vocab_size = 100;
		tfm_tok_counter_create(&c, &o2, NULL);
		CHECK(tfm_tok_train(&t2, c, NULL, NULL, &err) == TFM_EINVAL, "byte vocab too small");
		tfm_tok_counter_free(c);
	}
	tfm_tok_free(t);
}

static void
test_char(void)
{
	const char *texts[] = {"abcab\xC3\xA9", "aab!", "zz"};
	tfm_tok_options opt;
	tfm_tokenizer *t;
	int32_t ids[32];
	size_t n, got;
	char out[64];

	tfm_tok_options_init(&opt, TFM_TOK_CHAR);
	opt.min_count = 2;
	t = train_on(&opt, texts, 3);
	CHECK(t != NULL, "char tokenizer");
	if (!t)
		return;
	/* counts: a 4, b 3, z 2, c 1, é 1, ! 1 */
	CHECK(strcmp(piece_str(t, 6), "a") == 0 && strcmp(piece_str(t, 7), "b") == 0 &&
		  strcmp(piece_str(t, 8), "z") == 0, "char ids by count");
	{
		tfm_tok_info info;

		tfm_tok_get_info(&info, t);
		CHECK(info.vocab_size == 9, "min_count drops rare chars (%d)", (int) info.vocab_size);
	}
	CHECK(tfm_tok_encode(ids, NULL, 32, &n, t, "ab\xC3\xA9z\xff", 6, 0, 0, NULL) == TFM_OK &&
		  n == 5 && ids[0] == 6 && ids[2] == TFM_TOK_UNK && ids[3] == 8 && ids[4] == TFM_TOK_UNK,
		  "unknown and invalid -> <unk>");
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, n, 0, NULL) == TFM_OK && got == 9 &&
		  memcmp(out, "ab\xEF\xBF\xBDz\xEF\xBF\xBD", 9) == 0, "<unk> decodes to U+FFFD");
	CHECK(round_trip(t, "abba zz", 7) == 0, "space is unknown here");
	CHECK(round_trip(t, "abbazz", 6), "char round trip");
	tfm_tok_free(t);

	opt.min_count = 0;
	opt.vocab_size = 8;
	t = train_on(&opt, texts, 3);
	CHECK(t && tfm_tok_piece_id(t, (const uint8_t *) "b", 1) == 7 &&
		  tfm_tok_piece_id(t, (const uint8_t *) "z", 1) == -1, "vocab_size caps chars");
	tfm_tok_free(t);
	{
		tfm_tok_counter *c;
		tfm_status err = {0};

		opt.vocab_size = 3;
		CHECK(tfm_tok_counter_create(&c, &opt, &err) == TFM_EINVAL && c == NULL,
			  "vocab_size below specials: %s", err.msg);
	}
}

static void
test_word(void)
{
	const char *texts[] = {"The cat sat. The dog sat!", "the CAT, the end"};
	tfm_tok_options opt;
	tfm_tokenizer *t;
	int32_t ids[32];
	size_t n, got;
	char out[128];

	tfm_tok_options_init(&opt, TFM_TOK_WORD);
	opt.flags = TFM_TOK_OPT_LOWERCASE;
	t = train_on(&opt, texts, 2);
	CHECK(t != NULL, "word tokenizer");
	if (!t)
		return;
	/* the 4, cat 2, sat 2, then 1s by bytes: ! , . dog end */
	CHECK(strcmp(piece_str(t, 6), "the") == 0 && strcmp(piece_str(t, 7), "cat") == 0 &&
		  strcmp(piece_str(t, 8), "sat") == 0 && strcmp(piece_str(t, 9), "!") == 0,
		  "word ids by count then bytes");
	CHECK(tfm_tok_encode(ids, NULL, 32, &n, t, "THE Cat ate.\xff", 13, 0, 0, NULL) == TFM_OK &&
		  n == 5 && ids[0] == 6 && ids[1] == 7 && ids[2] == TFM_TOK_UNK && ids[4] == TFM_TOK_UNK,
		  "lower-cased lookup, unknown word, invalid byte");
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, 4, TFM_TOK_DECODE_SPECIALS, NULL) ==
		  TFM_OK && got == 15 && memcmp(out, "the cat <unk> .", 15) == 0,
		  "word decode joins with spaces (%.*s)", (int) got, out);
	tfm_tok_free(t);
}

static void
test_wordpiece(void)
{
	/* hand-made vocabulary: greedy longest match */
	const char *pieces[] = {"<pad>", "<unk>", "<bos>", "<eos>", "<cls>", "<sep>",
							"walk", "##ing", "##s", "w", "##a", "##l", "##k", "un", "##walk",
							"!", "##i", "##n", "##g", "talk"};
	size_t lens[20];
	tfm_tok_info info;
	tfm_tokenizer *t;
	tfm_status err = {0};
	int32_t ids[32];
	size_t n, got, offs[32];
	char out[128];
	int i;

	for (i = 0; i < 20; i++)
		lens[i] = strlen(pieces[i]);
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_WORDPIECE;
	info.flags = TFM_TOK_INFO_LOWERCASE;
	info.vocab_size = 20;
	for (i = 0; i < 6; i++)
		info.special_ids[i] = i;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_OK, "load wordpiece: %s", err.msg);
	if (!t)
		return;
	CHECK(tfm_tok_encode(ids, offs, 32, &n, t, "Walking unwalks talkx!", 22, 0, 0, NULL) ==
		  TFM_OK && n == 7, "wordpiece encode (%zu ids)", n);
	CHECK(ids[0] == 6 && ids[1] == 7 && ids[2] == 13 && ids[3] == 14 && ids[4] == 8 &&
		  ids[5] == TFM_TOK_UNK && ids[6] == 15, "walk ##ing, un ##walk ##s, <unk>, !");
	CHECK(offs[1] == 4 && offs[2] == 8 && offs[3] == 10 && offs[5] == 16, "wordpiece offsets");
	{
		/* spans: pieces end where the next piece starts; the space after a word is no token's */
		size_t ends[7];

		CHECK(tfm_tok_spans(ends, offs, n, t, "Walking unwalks talkx!", 22, &err) == TFM_OK &&
			  ends[0] == 4 && ends[1] == 7 && ends[2] == 10 && ends[3] == 14 && ends[4] == 15 &&
			  ends[5] == 21 && ends[6] == 22, "wordpiece spans");
	}
	{
		/* spaces before and after: in no token's span */
		int32_t ids3[3];
		size_t ends[3], offs3[3], n3;

		CHECK(tfm_tok_encode(ids3, offs3, 3, &n3, t, "  walks !\t ", 11, 0, 0, NULL) == TFM_OK &&
			  n3 == 3 && tfm_tok_spans(ends, offs3, n3, t, "  walks !\t ", 11, &err) == TFM_OK &&
			  offs3[0] == 2 && ends[0] == 6 && offs3[1] == 6 && ends[1] == 7 && offs3[2] == 8 &&
			  ends[2] == 9, "wordpiece spans between spaces");
	}
	CHECK(tfm_tok_decode(out, sizeof(out), &got, t, ids, n, 0, NULL) == TFM_OK &&
		  got == strlen("walking unwalks \xEF\xBF\xBD !") &&
		  memcmp(out, "walking unwalks \xEF\xBF\xBD !", got) == 0, "wordpiece decode");
	tfm_tok_free(t);

	/* trained */
	{
		const char *texts[] = {"walking talking walked talked walks talks jumping jumped",
							   "walk talk jump walking talking", "sing singing sang"};
		tfm_tok_options opt;
		tfm_tok_counter *c;

		tfm_tok_options_init(&opt, TFM_TOK_WORDPIECE);
		opt.vocab_size = 40;
		t = train_on(&opt, texts, 3);
		CHECK(t != NULL, "trained wordpiece");
		if (t)
		{
			tfm_tok_get_info(&info, t);
			CHECK(info.vocab_size > 30 && info.vocab_size <= 40 && info.n_merges == 0, "wordpiece size %d", (int) info.vocab_size);
			CHECK(tfm_tok_piece_id(t, (const uint8_t *) "##i", 3) > 5 &&
				  tfm_tok_piece_id(t, (const uint8_t *) "w", 1) > 5, "alphabet pieces");
			CHECK(round_trip(t, "walking talks", 13), "wordpiece round trip on known text");
			tfm_tok_free(t);
		}
		opt.vocab_size = 10;
		tfm_tok_counter_create(&c, &opt, NULL);
		tfm_tok_counter_add(c, texts[0], strlen(texts[0]), NULL);
		CHECK(tfm_tok_train(&t, c, NULL, NULL, &err) == TFM_EINVAL &&
			  strstr(err.msg, "alphabet") != NULL, "wordpiece vocab too small: %s", err.msg);
		tfm_tok_counter_free(c);
	}
}

/* ---- bpe on a small text --------------------------------------------------------------- */

static void
test_bpe_small(void)
{
	const char *texts[] = {"low lower lowest low low", "newer newest new new wider", "\xff\xfe low"};
	tfm_tok_options opt;
	tfm_tokenizer *t;
	tfm_tok_info info;
	tfm_status err = {0};
	tfm_tok_counter *c;

	tfm_tok_options_init(&opt, TFM_TOK_BPE);
	opt.vocab_size = 280;
	t = train_on(&opt, texts, 3);
	CHECK(t != NULL, "bpe tokenizer");
	if (!t)
		return;
	tfm_tok_get_info(&info, t);
	CHECK(info.n_merges == info.vocab_size - 262 && info.n_merges > 0,
		  "one piece per merge (%d merges, %d ids)", (int) info.n_merges, (int) info.vocab_size);
	CHECK(strcmp(piece_str(t, 6 + 'a'), "a") == 0, "byte pieces at 6 + byte");
	{
		/* the most frequent pair is " l"+... ; whatever it is, rank 0 is a max-count pair */
		int32_t l, r, res;

		tfm_tok_merge(&l, &r, &res, t, 0, NULL);
		CHECK(res == 262, "first merge makes id 262");
	}
	CHECK(round_trip(t, "lowest newer \xff\xfe\x80 wider", 23), "bpe round trip with invalid bytes");
	{
		size_t n;
		int32_t *ids = enc(t, " low", 4, &n, 0);

		CHECK(n == 1, "' low' is one token (%zu)", n);
		free(ids);
	}
	tfm_tok_free(t);

	opt.vocab_size = 200;
	tfm_tok_counter_create(&c, &opt, NULL);
	CHECK(tfm_tok_train(&t, c, NULL, NULL, &err) == TFM_EINVAL && strstr(err.msg, "262"),
		  "bpe vocab too small: %s", err.msg);
	tfm_tok_counter_free(c);
}

/* ---- counter image and errors ------------------------------------------------------------ */

static void
test_counter_errors(void)
{
	tfm_tok_options a, b;
	tfm_tok_counter *ca, *cb, *d;
	tfm_status err = {0};
	uint8_t *buf;
	size_t sz;

	tfm_tok_options_init(&a, TFM_TOK_BPE);
	tfm_tok_options_init(&b, TFM_TOK_WORD);
	tfm_tok_counter_create(&ca, &a, NULL);
	tfm_tok_counter_create(&cb, &b, NULL);
	tfm_tok_counter_add(ca, "hello hello world", 17, NULL);
	CHECK(tfm_tok_counter_n_entries(ca) == 3, "three distinct pre-tokens");
	CHECK(tfm_tok_counter_merge(ca, cb, &err) == TFM_EINVAL, "merge of different options");
	sz = tfm_tok_counter_serialized_size(ca);
	buf = malloc(sz);
	CHECK(tfm_tok_counter_serialize(buf, sz - 1, ca, &err) == TFM_ELIMIT, "small buffer");
	tfm_tok_counter_serialize(buf, sz, ca, NULL);
	CHECK(tfm_tok_counter_deserialize(&d, buf, sz - 1, &err) == TFM_EFORMAT && !d, "truncated");
	CHECK(tfm_tok_counter_deserialize(&d, buf, 10, &err) == TFM_EFORMAT, "header only");
	buf[8] = 9;
	CHECK(tfm_tok_counter_deserialize(&d, buf, sz, &err) == TFM_EFORMAT &&
		  strstr(err.msg, "version"), "version: %s", err.msg);
	buf[8] = 1;
	buf[0] = 'X';
	CHECK(tfm_tok_counter_deserialize(&d, buf, sz, &err) == TFM_EFORMAT, "magic");
	buf[0] = 'T';
	CHECK(tfm_tok_counter_deserialize(&d, buf, sz, &err) == TFM_OK && d &&
		  tfm_tok_counter_n_entries(d) == 3, "intact image");
	tfm_tok_counter_free(d);
	free(buf);
	tfm_tok_counter_free(ca);
	tfm_tok_counter_free(cb);
	a.flags = TFM_TOK_OPT_LOWERCASE;
	CHECK(tfm_tok_counter_create(&ca, &a, &err) == TFM_EINVAL && strstr(err.msg, "bpe"),
		  "lowercase on bpe: %s", err.msg);
	a.flags = 0;
	a.min_count = -1;
	CHECK(tfm_tok_counter_create(&ca, &a, &err) == TFM_EINVAL, "negative min_count");
	a.min_count = 0;
	a.vocab_size = TFM_TOK_MAX_VOCAB_SIZE + 1;
	CHECK(tfm_tok_counter_create(&ca, &a, &err) == TFM_EINVAL, "vocab_size above the maximum");
	a.vocab_size = 0;
	a.kind = (tfm_tok_kind) 9;
	CHECK(tfm_tok_counter_create(&ca, &a, &err) == TFM_EINVAL, "bad kind");
	{
		tfm_tok_kind k;

		CHECK(tfm_tok_kind_parse(&k, "wordpiece") == TFM_OK && k == TFM_TOK_WORDPIECE &&
			  tfm_tok_kind_parse(&k, "sentencepiece") == TFM_EINVAL, "kind names");
	}
}

static void
test_load_errors(void)
{
	const char *pieces[] = {"<pad>", "<unk>", "<bos>", "<eos>", "<cls>", "<sep>", "a", "b", "ab", "a"};
	size_t lens[10];
	tfm_tok_info info;
	tfm_tokenizer *t;
	tfm_status err = {0};
	int32_t ml[2] = {6, 8}, mr[2] = {7, 7};
	int i;

	for (i = 0; i < 10; i++)
		lens[i] = strlen(pieces[i]);
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_WORD;
	info.vocab_size = 10;
	for (i = 0; i < 6; i++)
		info.special_ids[i] = i;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_EFORMAT && strstr(err.msg, "same piece"), "duplicate piece: %s", err.msg);
	info.vocab_size = 9;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_OK, "valid word rows");
	tfm_tok_free(t);
	info.format_version = 99;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_EFORMAT && strstr(err.msg, "version"), "unknown version: %s", err.msg);
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.special_ids[3] = 2;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_EFORMAT, "shared special id: %s", err.msg);
	info.special_ids[3] = 3;
	info.special_ids[0] = 6;
	info.special_ids[6 - 6] = 6;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_EFORMAT, "special with a wrong piece: %s", err.msg);
	info.special_ids[0] = 0;
	info.kind = TFM_TOK_WORD;
	info.n_merges = 1;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, ml, mr, &err) ==
		  TFM_EFORMAT, "merges on a word tokenizer: %s", err.msg);
	info.kind = TFM_TOK_BPE;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, ml, mr, &err) ==
		  TFM_EFORMAT && strstr(err.msg, "one-byte"), "bpe without all bytes: %s", err.msg);
	info.kind = TFM_TOK_CHAR;
	info.n_merges = 0;
	CHECK(tfm_tok_load(&t, &info, (const uint8_t *const *) pieces, lens, NULL, NULL, &err) ==
		  TFM_EFORMAT && strstr(err.msg, "character"), "char piece of 2 chars: %s", err.msg);
	/* a bpe vocabulary: bytes + "ab"; merge (ab, b) has no result */
	{
		const uint8_t *bp[300];
		size_t bl[300];
		uint8_t bytes[256];
		int32_t l1[2] = {6 + 'a', 262}, r1[2] = {6 + 'b', 6 + 'b'};

		for (i = 0; i < 6; i++)
		{
			bp[i] = (const uint8_t *) pieces[i];
			bl[i] = lens[i];
		}
		for (i = 0; i < 256; i++)
		{
			bytes[i] = (uint8_t) i;
			bp[6 + i] = &bytes[i];
			bl[6 + i] = 1;
		}
		bp[262] = (const uint8_t *) "ab";
		bl[262] = 2;
		info.kind = TFM_TOK_BPE;
		info.vocab_size = 263;
		info.n_merges = 1;
		CHECK(tfm_tok_load(&t, &info, bp, bl, l1, r1, &err) == TFM_OK, "valid bpe rows: %s", err.msg);
		if (t)
		{
			size_t n;
			int32_t *ids = enc(t, "abab", 4, &n, 0);

			CHECK(n == 2 && ids[0] == 262 && ids[1] == 262, "merge applied");
			free(ids);
			tfm_tok_free(t);
		}
		info.n_merges = 2;
		CHECK(tfm_tok_load(&t, &info, bp, bl, l1, r1, &err) == TFM_EFORMAT &&
			  strstr(err.msg, "not in the vocabulary"), "merge result missing: %s", err.msg);
		l1[1] = 6 + 'a';
		CHECK(tfm_tok_load(&t, &info, bp, bl, l1, r1, &err) == TFM_EFORMAT &&
			  strstr(err.msg, "duplicate"), "duplicate merge: %s", err.msg);
		l1[1] = 300;
		CHECK(tfm_tok_load(&t, &info, bp, bl, l1, r1, &err) == TFM_EFORMAT, "merge id out of range");
	}
}

/* gpt-3-encoder's string keys: ("\",", "\"") finds the rank of ("\"", ",\"") */
static void
test_js_alias(void)
{
	const uint8_t *bp[266];
	size_t bl[266];
	uint8_t bytes[256];
	int32_t ml[3] = {6 + '"', 6 + ',', 6 + '"'}, mr[3] = {6 + ',', 6 + '"', 263};
	tfm_tok_info info;
	tfm_tokenizer *t;
	tfm_status err = {0};
	int i, js;

	for (i = 0; i < 6; i++)
	{
		bp[i] = (const uint8_t *) tfm_tok_special_piece((tfm_tok_special) i);
		bl[i] = strlen((const char *) bp[i]);
	}
	for (i = 0; i < 256; i++)
	{
		bytes[i] = (uint8_t) i;
		bp[6 + i] = &bytes[i];
		bl[6 + i] = 1;
	}
	bp[262] = (const uint8_t *) "\",";
	bp[263] = (const uint8_t *) ",\"";
	bp[264] = (const uint8_t *) "\",\"";
	bl[262] = bl[263] = 2;
	bl[264] = 3;
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_BPE;
	info.vocab_size = 265;
	info.n_merges = 3;
	for (i = 0; i < 6; i++)
		info.special_ids[i] = i;
	for (js = 0; js < 2; js++)
	{
		size_t n, offs[8];
		int32_t ids[8];

		info.flags = js ? TFM_TOK_INFO_GPT2_JS : 0;
		CHECK(tfm_tok_load(&t, &info, bp, bl, ml, mr, &err) == TFM_OK, "alias vocabulary: %s", err.msg);
		if (!t)
			continue;
		tfm_tok_encode(ids, offs, 8, &n, t, "x\",\"", 4, 0, 0, NULL);
		if (js)
			CHECK(n == 2 && ids[1] == 264 && offs[1] == 1, "JS alias merges \",\" + \" (%zu ids)", n);
		else
			CHECK(n == 3 && ids[1] == 262 && ids[2] == 6 + '"' && offs[2] == 3,
				  "without the flag \",\" + \" stays apart (%zu ids)", n);
		tfm_tok_free(t);
	}
}

int
main(void)
{
	double t0 = now();

	quick = getenv("TFM_TEST_QUICK") && getenv("TFM_TEST_QUICK")[0] == '1';
	printf("tokenizer tests (Unicode %s tables)%s\n", tfm_tok_unicode_version_str(),
		   quick ? ", quick mode" : "");
	test_unicode();
	test_pretok();
	test_byte();
	test_char();
	test_word();
	test_wordpiece();
	test_bpe_small();
	test_counter_errors();
	test_load_errors();
	test_js_alias();
	printf("tokenizer tests took %.1f s\n", now() - t0);
	printf("test_tokenizer: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? EXIT_FAILURE : EXIT_SUCCESS;
}
