/*
 * test_tokenizer.c: unit tests of the tokenizers (include/tfm/tokenizer.h).
 *
 *   - Unicode classes, UTF-8 error units, the GPT-2 pre-tokenizer corners
 *   - every kind: specials, unknowns, invalid UTF-8, bos/eos/max_length,
 *     offsets, decode rules, errors with their messages
 *   - split + serialized + merged counting gives the same vocabulary as one
 *     state, for every kind
 *   - rows round trip (info + pieces + merges -> tfm_tok_load)
 *   - decode(encode(x)) == x for byte and bpe on every row of the corpora in
 *     shared/data (and char on Moby Dick)
 *   - GPT-2 parity: ids equal to those of the npm package gpt-3-encoder on
 *     the texts of test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz
 *
 * Environment: TFM_SHARED_DATA (default: shared/data beside the checkout,
 * found from the working directory or TFM_TEST_DATA; corpus tests are
 * skipped when absent), TFM_TOK_DATA (default test/fixtures/tokenizer), TFM_TEST_QUICK=1 (small subsets, for valgrind),
 * TFM_TOK_BENCH=1 (timings: bpe 8k/32k on sotu, encode MB/s).
 * Exits non-zero on any failure; the last line is "N passed, M failed".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/tokenizer.h"
#include "../src/core/tokenizer/unicode/tok_unicode.h"
#include "../src/core/tokenizer/tok_internal.h"

static int n_pass, n_fail, quick;

#define CHECK(cond, ...) \
	do { \
		if (cond) \
			n_pass++; \
		else \
		{ \
			n_fail++; \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- files ------------------------------------------------------------------ */

static char *
read_gz(const char *path, size_t *len)
{
	char cmd[4096];
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!(f = fopen(path, "rb")))
		return NULL;
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
	if (!(f = popen(cmd, "r")))
		return NULL;
	for (;;)
	{
		if (n + 65536 + 1 > cap)
		{
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			if (!buf)
				exit(2);
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	if (pclose(f) != 0)
	{
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* first directory of the list holding the file */
static const char *
find_dir(char *dir, size_t size, const char *const *cands, int n, const char *file)
{
	int i;

	for (i = 0; i < n; i++)
	{
		char p[1400];
		FILE *f;

		if (!cands[i])
			continue;
		snprintf(p, sizeof(p), "%s/%s", cands[i], file);
		if ((f = fopen(p, "rb")))
		{
			fclose(f);
			snprintf(dir, size, "%s", cands[i]);
			return dir;
		}
	}
	return NULL;
}

/* TFM_SHARED_DATA, else shared/ beside the checkout (found from the cwd or
 * from TFM_TEST_DATA = <checkout>/test/fixtures) */
static const char *
shared_dir(void)
{
	static char dir[1024], rel[1100];
	const char *cands[4];
	const char *td = getenv("TFM_TEST_DATA");

	snprintf(rel, sizeof(rel), "%s/../../../shared/data", td ? td : ".");
	cands[0] = getenv("TFM_SHARED_DATA");
	cands[1] = "../shared/data";
	cands[2] = td ? rel : NULL;
	cands[3] = "/work/shared/data";
	return find_dir(dir, sizeof(dir), cands, 4, "rt_polarity_test.tsv.gz");
}

/* TFM_TOK_DATA, else test/fixtures/tokenizer (from the cwd or beside TFM_TEST_DATA) */
static const char *
tok_dir(void)
{
	static char dir[1024], rel[1100];
	const char *cands[3];
	const char *td = getenv("TFM_TEST_DATA");

	snprintf(rel, sizeof(rel), "%s/../tokenizer", td ? td : ".");
	cands[0] = getenv("TFM_TOK_DATA");
	cands[1] = "test/fixtures/tokenizer";
	cands[2] = td ? rel : NULL;
	if (find_dir(dir, sizeof(dir), cands, 3, "gpt2_vocab.bpe.gz"))
		return dir;
	return "test/fixtures/tokenizer";
}

/* a corpus: its text and the (row, field) texts in it */
typedef struct text_ref
{
	const char *p;
	size_t len;
	int row, field;
} text_ref;

typedef struct corpus
{
	const char *name;
	char *buf;
	size_t len;
	text_ref *t;
	size_t n;
} corpus;

/* splits lines; tsv: skips the header and yields the given fields */
static int
load_corpus(corpus *c, const char *dir, const char *name, const int *fields, int nfields,
			int max_rows)
{
	char path[1400];
	char *p, *end;
	int row = 0, tsv = strstr(name, ".tsv") != NULL;
	size_t cap = 0;

	memset(c, 0, sizeof(*c));
	c->name = name;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(c->buf = read_gz(path, &c->len)))
		return -1;
	p = c->buf;
	end = c->buf + c->len;
	if (tsv)
	{
		char *nl = memchr(p, '\n', (size_t) (end - p));

		p = nl ? nl + 1 : end;
	}
	while (p < end && (max_rows <= 0 || row < max_rows))
	{
		char *nl = memchr(p, '\n', (size_t) (end - p));
		char *le = nl ? nl : end;
		int f;

		for (f = 0; f < nfields; f++)
		{
			char *fs = p, *fe;
			int k;

			for (k = 0; tsv && k < fields[f] && fs < le; k++)
			{
				char *tab = memchr(fs, '\t', (size_t) (le - fs));

				fs = tab ? tab + 1 : le;
			}
			fe = tsv ? memchr(fs, '\t', (size_t) (le - fs)) : NULL;
			if (!fe)
				fe = le;
			if (c->n == cap)
			{
				cap = cap ? cap * 2 : 1024;
				c->t = realloc(c->t, cap * sizeof(text_ref));
			}
			c->t[c->n].p = fs;
			c->t[c->n].len = (size_t) (fe - fs);
			c->t[c->n].row = row;
			c->t[c->n].field = tsv ? fields[f] : 0;
			c->n++;
		}
		row++;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static void
free_corpus(corpus *c)
{
	free(c->buf);
	free(c->t);
}

/* ---- helpers -------------------------------------------------------------------- */

/* encodes with a buffer of the bound; returns malloc'd ids */
static int32_t *
enc(tfm_tokenizer *t, const char *s, size_t len, size_t *n, uint32_t flags)
{
	size_t cap = tfm_tok_encode_bound(len, flags) + 1;
	int32_t *ids = malloc(cap * sizeof(int32_t));
	tfm_status err = {0};
	int st = tfm_tok_encode(ids, NULL, cap, n, t, s, len, flags, 0, &err);

	if (st != TFM_OK)
	{
		fprintf(stderr, "encode failed: %s\n", err.msg);
		*n = 0;
	}
	return ids;
}

/* decode(encode(s)) == s ? */
static int
round_trip(tfm_tokenizer *t, const char *s, size_t len)
{
	size_t n, cap, got;
	int32_t *ids = enc(t, s, len, &n, 0);
	char *out;
	int ok;

	cap = tfm_tok_decode_bound(t, n, 0);
	out = malloc(cap + 1);
	ok = tfm_tok_decode(out, cap, &got, t, ids, n, 0, NULL) == TFM_OK && got == len &&
		memcmp(out, s, len) == 0;
	free(out);
	free(ids);
	return ok;
}

static tfm_tokenizer *
train_on(const tfm_tok_options *opt, const char *const *texts, int n)
{
	tfm_tok_counter *c;
	tfm_tokenizer *t = NULL;
	tfm_status err = {0};
	int i;

	if (tfm_tok_counter_create(&c, opt, &err) != TFM_OK)
	{
		fprintf(stderr, "counter_create: %s\n", err.msg);
		return NULL;
	}
	for (i = 0; i < n; i++)
		tfm_tok_counter_add(c, texts[i], strlen(texts[i]), NULL);
	if (tfm_tok_train(&t, c, NULL, NULL, &err) != TFM_OK)
		fprintf(stderr, "train: %s\n", err.msg);
	tfm_tok_counter_free(c);
	return t;
}

static const char *
piece_str(tfm_tokenizer *t, int32_t id)
{
	static char buf[256];
	const uint8_t *p;
	size_t l;

	if (tfm_tok_piece(&p, &l, t, id, NULL) != TFM_OK)
		return "?";
	if (l > 255)
		l = 255;
	memcpy(buf, p, l);
	buf[l] = 0;
	return buf;
}

/* same info, pieces and merges */
static int
same_tokenizer(const tfm_tokenizer *a, const tfm_tokenizer *b)
{
	tfm_tok_info ia, ib;
	int32_t i;

	tfm_tok_get_info(&ia, a);
	tfm_tok_get_info(&ib, b);
	if (memcmp(&ia, &ib, sizeof(ia)) != 0)
		return 0;
	for (i = 0; i < ia.vocab_size; i++)
	{
		const uint8_t *pa, *pb;
		size_t la, lb;

		tfm_tok_piece(&pa, &la, a, i, NULL);
		tfm_tok_piece(&pb, &lb, b, i, NULL);
		if (la != lb || memcmp(pa, pb, la) != 0)
			return 0;
	}
	for (i = 0; i < ia.n_merges; i++)
	{
		int32_t l1, r1, s1, l2, r2, s2;

		tfm_tok_merge(&l1, &r1, &s1, a, i, NULL);
		tfm_tok_merge(&l2, &r2, &s2, b, i, NULL);
		if (l1 != l2 || r1 != r2 || s1 != s2)
			return 0;
	}
	return 1;
}

/* exports as rows and loads back */
static tfm_tokenizer *
via_rows(const tfm_tokenizer *t, tfm_status *err)
{
	tfm_tok_info info;
	const uint8_t **pieces;
	size_t *lens;
	int32_t *ml, *mr, i, res;
	tfm_tokenizer *out = NULL;

	tfm_tok_get_info(&info, t);
	pieces = malloc(sizeof(*pieces) * (size_t) info.vocab_size);
	lens = malloc(sizeof(*lens) * (size_t) info.vocab_size);
	ml = malloc(sizeof(int32_t) * (size_t) (info.n_merges + 1));
	mr = malloc(sizeof(int32_t) * (size_t) (info.n_merges + 1));
	for (i = 0; i < info.vocab_size; i++)
		tfm_tok_piece(&pieces[i], &lens[i], t, i, NULL);
	for (i = 0; i < info.n_merges; i++)
		tfm_tok_merge(&ml[i], &mr[i], &res, t, i, NULL);
	tfm_tok_load(&out, &info, pieces, lens, ml, mr, err);
	free(pieces);
	free(lens);
	free(ml);
	free(mr);
	return out;
}

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

/* ---- split + merged counting ----------------------------------------------------------- */

static tfm_tokenizer *
train_split(const tfm_tok_options *opt, const text_ref *t, size_t n, int parts, int *ok)
{
	tfm_tok_counter **c = calloc((size_t) parts, sizeof(*c));
	tfm_tok_counter *acc = NULL;
	tfm_tokenizer *tok = NULL;
	tfm_status err = {0};
	size_t i;
	int p;

	*ok = 1;
	for (p = 0; p < parts; p++)
		tfm_tok_counter_create(&c[p], opt, NULL);
	for (i = 0; i < n; i++)
		/* interleaved, so that each part sees its own order */
		tfm_tok_counter_add(c[(i * 7 + i / 3) % (size_t) parts], t[i].p, t[i].len, NULL);
	/* serialize every part, deserialize, merge in reverse order */
	for (p = parts - 1; p >= 0; p--)
	{
		size_t sz = tfm_tok_counter_serialized_size(c[p]);
		uint8_t *buf = malloc(sz);
		tfm_tok_counter *d = NULL;

		if (tfm_tok_counter_serialize(buf, sz, c[p], &err) != TFM_OK ||
			tfm_tok_counter_deserialize(&d, buf, sz, &err) != TFM_OK)
			*ok = 0;
		if (d && !acc)
			acc = d;
		else if (d)
		{
			if (tfm_tok_counter_merge(acc, d, &err) != TFM_OK)
				*ok = 0;
			tfm_tok_counter_free(d);
		}
		free(buf);
		tfm_tok_counter_free(c[p]);
	}
	free(c);
	if (acc && tfm_tok_train(&tok, acc, NULL, NULL, &err) != TFM_OK)
		*ok = 0;
	tfm_tok_counter_free(acc);
	return tok;
}

static void
test_split_merge(const corpus *c)
{
	tfm_tok_kind kinds[] = {TFM_TOK_CHAR, TFM_TOK_WORD, TFM_TOK_BPE, TFM_TOK_WORDPIECE};
	int k;
	size_t n = quick ? (c->n < 300 ? c->n : 300) : c->n;

	for (k = 0; k < 4; k++)
	{
		tfm_tok_options opt;
		tfm_tokenizer *one, *split, *rows;
		tfm_status err = {0};
		int ok1, ok2;

		tfm_tok_options_init(&opt, kinds[k]);
		if (kinds[k] == TFM_TOK_BPE)
			opt.vocab_size = quick ? 400 : 1500;
		if (kinds[k] == TFM_TOK_WORDPIECE)
		{
			opt.vocab_size = quick ? 400 : 2000;
			opt.flags = TFM_TOK_OPT_LOWERCASE;
		}
		if (kinds[k] == TFM_TOK_WORD)
		{
			opt.vocab_size = 3000;
			opt.min_count = 2;
		}
		one = train_split(&opt, c->t, n, 1, &ok1);
		split = train_split(&opt, c->t, n, 3, &ok2);
		CHECK(one && split && ok1 && ok2, "%s: train", tfm_tok_kind_name(kinds[k]));
		if (one && split)
		{
			tfm_tok_info info;

			tfm_tok_get_info(&info, one);
			CHECK(same_tokenizer(one, split),
				  "%s: split + merged counting gives the same vocabulary (%d ids)",
				  tfm_tok_kind_name(kinds[k]), (int) info.vocab_size);
			rows = via_rows(one, &err);
			CHECK(rows && same_tokenizer(one, rows), "%s: rows round trip %s",
				  tfm_tok_kind_name(kinds[k]), err.msg);
			if (rows)
			{
				size_t i, same = 0, m = n < 200 ? n : 200;

				for (i = 0; i < m; i++)
				{
					size_t n1, n2;
					int32_t *a = enc(one, c->t[i].p, c->t[i].len, &n1, 0);
					int32_t *b = enc(rows, c->t[i].p, c->t[i].len, &n2, 0);

					same += n1 == n2 && memcmp(a, b, n1 * sizeof(int32_t)) == 0;
					free(a);
					free(b);
				}
				CHECK(same == m, "%s: reloaded tokenizer encodes the same", tfm_tok_kind_name(kinds[k]));
			}
			tfm_tok_free(rows);
		}
		tfm_tok_free(one);
		tfm_tok_free(split);
	}
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

/* random bytes through every kind: no crash, exact round trips for byte/bpe */
static void
test_fuzz(tfm_tokenizer *const *toks, int ntoks)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	int it, k, bad = 0, iters = quick ? 40 : 400;
	char s[600];

	for (it = 0; it < iters; it++)
	{
		size_t n = 0, len, i;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = x % sizeof(s);
		for (i = 0; i < len; i++)
		{
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* mostly text-like, with invalid and multi-byte pieces */
			s[i] = (x & 3) ? " aZ9,'\n\"\xC3\xA9\xE2\x80\x99\xF0\x9F\x98\x80"[(x >> 8) % 20]
				: (char) (x >> 16);
		}
		for (k = 0; k < ntoks; k++)
		{
			tfm_tok_info info;
			int32_t *ids;
			char *out;
			size_t cap, got;

			if (!toks[k])
				continue;
			tfm_tok_get_info(&info, toks[k]);
			ids = enc(toks[k], s, len, &n, 0);
			cap = tfm_tok_decode_bound(toks[k], n, TFM_TOK_DECODE_REPLACE);
			out = malloc(cap + 1);
			if (tfm_tok_decode(out, cap, &got, toks[k], ids, n, TFM_TOK_DECODE_REPLACE, NULL) != TFM_OK ||
				!tfm_tok_utf8_valid(out, got))
				bad++;
			if ((info.kind == TFM_TOK_BYTE || info.kind == TFM_TOK_BPE) && !round_trip(toks[k], s, len))
				bad++;
			free(out);
			free(ids);
		}
	}
	CHECK(bad == 0, "fuzzed text: %d failures", bad);
	/* corrupted counting states never crash and fail cleanly */
	{
		tfm_tok_options opt;
		tfm_tok_counter *c, *d;
		size_t sz;
		uint8_t *buf;
		int ok = 1;

		tfm_tok_options_init(&opt, TFM_TOK_BPE);
		tfm_tok_counter_create(&c, &opt, NULL);
		tfm_tok_counter_add(c, s, 200, NULL);
		sz = tfm_tok_counter_serialized_size(c);
		buf = malloc(sz);
		tfm_tok_counter_serialize(buf, sz, c, NULL);
		for (it = 0; it < iters; it++)
		{
			size_t pos = (size_t) (x % sz);
			uint8_t old = buf[pos];
			int st;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[pos] ^= (uint8_t) (1 + x % 255);
			st = tfm_tok_counter_deserialize(&d, buf, sz - (it % 3 == 0 ? x % 8 : 0), NULL);
			if (st != TFM_OK && d != NULL)
				ok = 0;
			tfm_tok_counter_free(d);
			buf[pos] = old;
		}
		CHECK(ok, "corrupted counting states");
		free(buf);
		tfm_tok_counter_free(c);
	}
}

/* ---- GPT-2 ---------------------------------------------------------------------------------- */

static tfm_tokenizer *
load_gpt2(void)
{
	char p1[1200], p2[1200];
	char *js, *bpe;
	size_t jl, bl;
	tfm_tokenizer *t = NULL;
	tfm_status err = {0};
	int st;

	snprintf(p1, sizeof(p1), "%s/gpt2_encoder.json.gz", tok_dir());
	snprintf(p2, sizeof(p2), "%s/gpt2_vocab.bpe.gz", tok_dir());
	js = read_gz(p1, &jl);
	bpe = read_gz(p2, &bl);
	CHECK(js && bpe, "gpt2 vocabulary files in %s", tok_dir());
	if (!js || !bpe)
	{
		free(js);
		free(bpe);
		return NULL;
	}
	st = tfm_tok_import_gpt2(&t, js, jl, bpe, bl, &err);
	CHECK(st == TFM_OK, "gpt2 import: %s", err.msg);

	/* malformed files */
	{
		tfm_tokenizer *x;
		const char *badjs[] = {"", "[1]", "{\"a\": 1}", "{\"!\": 0, \"\\\"\": 0}",
							   "{\"!\": 0, \"#\": 2}", "{\"\\u00ff\": 0,}", "{\"!\": -1}",
							   "{\"\\u0000\": 0}"};
		size_t i;

		for (i = 0; i < sizeof(badjs) / sizeof(badjs[0]); i++)
		{
			err.msg[0] = 0;
			CHECK(tfm_tok_import_gpt2(&x, badjs[i], strlen(badjs[i]), bpe, bl, &err) ==
				  TFM_EFORMAT && x == NULL && err.msg[0],
				  "malformed encoder.json %zu rejected (%s)", i, err.msg);
		}
		CHECK(tfm_tok_import_gpt2(&x, js, jl, "#version\nab c d\n", 16, &err) == TFM_EFORMAT &&
			  strstr(err.msg, "line 2"), "three pieces on a line: %s", err.msg);
		CHECK(tfm_tok_import_gpt2(&x, js, jl, "#version\nzzzzzzzzzzzzqq x\n", 26, &err) ==
			  TFM_EFORMAT && strstr(err.msg, "not in encoder.json"), "unknown piece: %s", err.msg);
		CHECK(tfm_tok_import_gpt2(&x, js, jl, "#version\nĠt Ġ\n", 17, &err) == TFM_EFORMAT &&
			  strstr(err.msg, "not in the vocabulary"), "merge result missing: %s", err.msg);
		CHECK(tfm_tok_import_gpt2(&x, js, jl, "no newline", 10, &err) == TFM_EFORMAT,
			  "vocab.bpe without lines");
	}
	free(js);
	free(bpe);
	if (t)
	{
		tfm_tok_info info;

		tfm_tok_get_info(&info, t);
		CHECK(info.vocab_size == 50263 && info.n_merges == 50000 &&
			  tfm_tok_special_id(t, TFM_TOK_PAD) == 50257 && tfm_tok_special_id(t, TFM_TOK_SEP) == 50262,
			  "gpt2: 50257 ids + 6 specials after them, 50000 merges");
		CHECK(tfm_tok_piece_id(t, (const uint8_t *) "<|endoftext|>", 13) == 50256, "<|endoftext|>");
		CHECK(tfm_tok_piece_id(t, (const uint8_t *) " the", 4) == 262, "' the' is 262");
	}
	return t;
}

static int
parse_hex(char *out, const char *h, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n + 1 && i / 2 < n / 2; i += 2)
	{
		unsigned v;

		if (sscanf(h + i, "%2x", &v) != 1)
			return -1;
		out[i / 2] = (char) v;
	}
	return (int) (n / 2);
}

static void
test_gpt2_parity(tfm_tokenizer *t, corpus *cs, int ncs)
{
	char path[1200];
	char *ref, *p, *end;
	size_t len, lines = 0, equal = 0, tokens = 0;
	int shown = 0;

	snprintf(path, sizeof(path), "%s/gpt2_ref_ids.tsv.gz", tok_dir());
	ref = read_gz(path, &len);
	CHECK(ref != NULL, "reference ids %s", path);
	if (!ref)
		return;
	for (p = ref, end = ref + len; p < end;)
	{
		char *nl = memchr(p, '\n', (size_t) (end - p)), *f[4], *q;
		const char *text = NULL;
		size_t tlen = 0, n, k, nref = 0;
		int row, field, i, ok;
		int32_t *ids, *want;
		char *hexbuf = NULL;

		if (!nl)
			nl = end;
		*nl = 0;
		f[0] = p;
		for (i = 1; i < 4; i++)
		{
			q = strchr(f[i - 1], '\t');
			if (!q)
				break;
			*q = 0;
			f[i] = q + 1;
		}
		p = nl + 1;
		if (i < 4)
			continue;
		row = atoi(f[1]);
		if (strcmp(f[0], "extra") == 0)
		{
			size_t hl = strlen(f[2]);

			hexbuf = malloc(hl / 2 + 1);
			parse_hex(hexbuf, f[2], hl);
			text = hexbuf;
			tlen = hl / 2;
		}
		else
		{
			field = atoi(f[2]);
			for (i = 0; i < ncs && !text; i++)
				if (cs[i].buf && strcmp(cs[i].name, f[0]) == 0)
					for (k = 0; k < cs[i].n; k++)
						if (cs[i].t[k].row == row && cs[i].t[k].field == field)
						{
							text = cs[i].t[k].p;
							tlen = cs[i].t[k].len;
							break;
						}
			if (!text)
				continue;     /* corpus not loaded (quick mode or no shared data) */
		}
		if (quick && lines >= 300)
		{
			free(hexbuf);
			continue;
		}
		want = malloc((strlen(f[3]) / 2 + 2) * sizeof(int32_t));
		for (q = f[3]; *q;)
		{
			char *e2;
			long v = strtol(q, &e2, 10);

			if (e2 == q)
				break;
			want[nref++] = (int32_t) v;
			q = e2;
		}
		ids = enc(t, text, tlen, &n, 0);
		ok = n == nref && memcmp(ids, want, n * sizeof(int32_t)) == 0;
		lines++;
		tokens += nref;
		equal += ok;
		if (!ok && shown++ < 5)
		{
			fprintf(stderr, "gpt2 mismatch: %s row %d: %zu ids, reference %zu\n", f[0], row, n, nref);
			for (k = 0; k < n && k < nref; k++)
				if (ids[k] != want[k])
				{
					fprintf(stderr, "  first difference at %zu: %d vs %d\n", k, ids[k], want[k]);
					break;
				}
		}
		free(ids);
		free(want);
		free(hexbuf);
	}
	free(ref);
	printf("gpt2 parity: %zu of %zu texts (%zu reference ids) equal to gpt-3-encoder\n", equal,
		   lines, tokens);
	CHECK(lines > 0 && equal == lines, "gpt2 parity %zu / %zu", equal, lines);
}

/* ---- corpora round trips -------------------------------------------------------------------- */

static void
test_round_trips(const char *label, tfm_tokenizer *t, corpus *cs, int ncs)
{
	size_t rows = 0, ok = 0, bytes = 0;
	int i;
	double t0 = now();

	for (i = 0; i < ncs; i++)
	{
		size_t k, m = cs[i].n;

		if (!cs[i].buf)
			continue;
		if (quick && m > 100)
			m = 100;
		for (k = 0; k < m; k++)
		{
			rows++;
			bytes += cs[i].t[k].len;
			if (round_trip(t, cs[i].t[k].p, cs[i].t[k].len))
				ok++;
			else if (ok + 5 > rows)
				fprintf(stderr, "%s: round trip fails on %s row %d\n", label, cs[i].name, cs[i].t[k].row);
		}
	}
	printf("%s: decode(encode(x)) == x on %zu of %zu rows (%.1f MB, %.2f s)\n", label, ok, rows,
		   bytes / 1e6, now() - t0);
	CHECK(rows > 0 && ok == rows, "%s round trips %zu / %zu", label, ok, rows);
}

/* a 10 MB row: counting memory stays proportional, encode works on it */
static void
test_big_row(tfm_tokenizer *bpe)
{
	size_t n = quick ? (1 << 20) : (10 << 20), i;
	char *s = malloc(n);
	uint64_t x = 88172645463325252ULL;
	tfm_tok_options opt;
	tfm_tok_counter *c;
	double t0;

	for (i = 0; i < n; i++)
	{
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s[i] = (x % 7 == 0) ? ' ' : (char) ('a' + x % 26);
	}
	tfm_tok_options_init(&opt, TFM_TOK_BPE);
	tfm_tok_counter_create(&c, &opt, NULL);
	CHECK(tfm_tok_counter_add(c, s, n, NULL) == TFM_OK, "count a big row");
	CHECK(tfm_tok_counter_memory(c) < 8 * n, "counting memory %zu for a %zu byte row",
		  tfm_tok_counter_memory(c), n);
	tfm_tok_counter_free(c);
	t0 = now();
	CHECK(round_trip(bpe, s, n), "round trip of a big row");
	/* one pre-token of the whole row: the long (heap) path */
	memset(s, 'a', n);
	CHECK(round_trip(bpe, s, n), "round trip of a single %zu byte pre-token", n);
	printf("big rows: 2 x %.1f MB encoded and decoded in %.2f s\n", n / 1e6, now() - t0);
	free(s);
}

/* ---- benchmark (TFM_TOK_BENCH=1) ------------------------------------------------------------ */

static int
progress_cb(void *arg, int32_t done, int32_t target)
{
	(void) arg;
	(void) done;
	(void) target;
	return 0;
}

static void
bench(corpus *sotu, tfm_tokenizer *gpt2)
{
	int sizes[2] = {8000, 32000}, k;
	size_t i, bytes = 0;

	for (i = 0; i < sotu->n; i++)
		bytes += sotu->t[i].len;
	for (k = 0; k < 2; k++)
	{
		tfm_tok_options opt;
		tfm_tok_counter *c;
		tfm_tokenizer *t = NULL;
		double t0 = now(), t1, t2, t3;
		size_t n, total = 0;

		tfm_tok_options_init(&opt, TFM_TOK_BPE);
		opt.vocab_size = sizes[k];
		tfm_tok_counter_create(&c, &opt, NULL);
		for (i = 0; i < sotu->n; i++)
			tfm_tok_counter_add(c, sotu->t[i].p, sotu->t[i].len, NULL);
		t1 = now();
		tfm_tok_train(&t, c, progress_cb, NULL, NULL);
		t2 = now();
		for (i = 0; i < sotu->n; i++)
		{
			int32_t *ids = enc(t, sotu->t[i].p, sotu->t[i].len, &n, 0);

			total += n;
			free(ids);
		}
		t3 = now();
		{
			tfm_tok_info info;

			tfm_tok_get_info(&info, t);
			printf("bench bpe %d on sotu (%.1f MB, %zu pre-token types): %d ids reached; count %.2f s, "
				   "merges %.2f s, total %.2f s; encode %.1f MB/s (%zu ids)\n",
				   sizes[k], bytes / 1e6, tfm_tok_counter_n_entries(c), (int) info.vocab_size,
				   t1 - t0, t2 - t1, t2 - t0, bytes / 1e6 / (t3 - t2), total);
		}
		tfm_tok_counter_free(c);
		tfm_tok_free(t);
	}
	if (gpt2)
	{
		double t0 = now();
		size_t n, total = 0;

		for (i = 0; i < sotu->n; i++)
		{
			int32_t *ids = enc(gpt2, sotu->t[i].p, sotu->t[i].len, &n, 0);

			total += n;
			free(ids);
		}
		printf("bench gpt2 encode on sotu: %.1f MB/s (%zu ids)\n", bytes / 1e6 / (now() - t0), total);
	}
}

int
main(void)
{
	const char *dir = shared_dir();
	const int f0[] = {0}, f01[] = {0, 1}, f3[] = {3};
	corpus cs[9];
	int ncs = 0, i;
	tfm_tokenizer *gpt2, *byte, *bpe = NULL;
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

	memset(cs, 0, sizeof(cs));
	if (dir)
	{
		int mr = quick ? 400 : 0;

		load_corpus(&cs[ncs++], dir, "rt_polarity_train.tsv.gz", f0, 1, mr);
		load_corpus(&cs[ncs++], dir, "rt_polarity_test.tsv.gz", f0, 1, mr);
		load_corpus(&cs[ncs++], dir, "eng_fra_train.tsv.gz", f01, 2, mr);
		load_corpus(&cs[ncs++], dir, "eng_fra_test.tsv.gz", f01, 2, quick ? 2500 : 0);
		load_corpus(&cs[ncs++], dir, "spamassassin_train.tsv.gz", f0, 1, mr);
		load_corpus(&cs[ncs++], dir, "spamassassin_test.tsv.gz", f0, 1, quick ? 50 : 0);
		load_corpus(&cs[ncs++], dir, "sotu.tsv.gz", f3, 1, quick ? 2 : 0);
		load_corpus(&cs[ncs++], dir, "moby_dick.txt.gz", f0, 1, mr);
		load_corpus(&cs[ncs++], dir, "moby_dick_val.txt.gz", f0, 1, mr);
		for (i = 0; i < ncs; i++)
			CHECK(cs[i].buf != NULL, "corpus %s", cs[i].name);
	}
	else
		printf("shared data not found (set TFM_SHARED_DATA): corpus tests skipped\n");

	gpt2 = load_gpt2();
	if (gpt2)
	{
		tfm_status err = {0};
		tfm_tokenizer *again = via_rows(gpt2, &err);

		CHECK(again && same_tokenizer(gpt2, again), "gpt2 rows round trip %s", err.msg);
		test_gpt2_parity(again ? again : gpt2, cs, ncs);
		tfm_tok_free(again);
	}
	{
		tfm_tok_options opt;

		tfm_tok_options_init(&opt, TFM_TOK_BYTE);
		byte = train_on(&opt, NULL, 0);
	}
	if (dir)
	{
		tfm_tok_options opt;
		tfm_tok_counter *c;
		size_t k;

		test_split_merge(&cs[0]);
		/* bpe trained on the rt and eng_fra training sets */
		tfm_tok_options_init(&opt, TFM_TOK_BPE);
		opt.vocab_size = quick ? 600 : 4000;
		tfm_tok_counter_create(&c, &opt, NULL);
		for (k = 0; k < cs[0].n; k++)
			tfm_tok_counter_add(c, cs[0].t[k].p, cs[0].t[k].len, NULL);
		for (k = 0; k < cs[2].n; k++)
			tfm_tok_counter_add(c, cs[2].t[k].p, cs[2].t[k].len, NULL);
		tfm_tok_train(&bpe, c, NULL, NULL, NULL);
		tfm_tok_counter_free(c);
		CHECK(bpe != NULL, "bpe on rt + eng_fra");
		test_round_trips("byte", byte, cs, ncs);
		if (bpe)
			test_round_trips("bpe (tfm-trained)", bpe, cs, ncs);
		if (gpt2)
			test_round_trips("bpe (gpt2)", gpt2, cs, ncs);
		/* char on Moby Dick: every character is known */
		{
			tfm_tokenizer *ch;
			corpus *moby = &cs[7];

			tfm_tok_options_init(&opt, TFM_TOK_CHAR);
			tfm_tok_counter_create(&c, &opt, NULL);
			for (k = 0; k < moby->n; k++)
				tfm_tok_counter_add(c, moby->t[k].p, moby->t[k].len, NULL);
			tfm_tok_train(&ch, c, NULL, NULL, NULL);
			tfm_tok_counter_free(c);
			if (ch)
			{
				tfm_tok_info info;

				tfm_tok_get_info(&info, ch);
				if (!quick)
					CHECK(info.vocab_size == 6 + 83 - 1, "moby dick: 82 characters besides newline (%d ids)",
						  (int) info.vocab_size);
				test_round_trips("char (moby dick)", ch, moby, 1);
				tfm_tok_free(ch);
			}
		}
		if (bpe)
			test_big_row(bpe);
		{
			tfm_tokenizer *fz[6] = {byte, bpe, gpt2, NULL, NULL, NULL};
			const char *small[] = {"the cat sat on the mat", "Caf\xC3\xA9 na\xC3\xAFve", "walking talking"};
			tfm_tok_kind kinds[3] = {TFM_TOK_CHAR, TFM_TOK_WORD, TFM_TOK_WORDPIECE};

			for (i = 0; i < 3; i++)
			{
				tfm_tok_options_init(&opt, kinds[i]);
				if (kinds[i] == TFM_TOK_WORDPIECE)
					opt.vocab_size = 60;
				fz[3 + i] = train_on(&opt, small, 3);
			}
			test_fuzz(fz, 6);
			for (i = 3; i < 6; i++)
				tfm_tok_free(fz[i]);
		}
		if (getenv("TFM_TOK_BENCH"))
			bench(&cs[6], gpt2);
	}
	tfm_tok_free(bpe);
	tfm_tok_free(byte);
	tfm_tok_free(gpt2);
	for (i = 0; i < ncs; i++)
		free_corpus(&cs[i]);
	printf("tokenizer tests took %.1f s\n", now() - t0);
	printf("test_tokenizer: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? EXIT_FAILURE : EXIT_SUCCESS;
}
