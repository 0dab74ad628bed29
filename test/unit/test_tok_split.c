/*
 * test_tok_split.c — the Split pre-tokenizer on PCRE2 (tok_split_pcre.c)
 * against tfm's hand-written scanners (tok_pretok.c) for the two patterns
 * they run, GPT-2's and Llama 3's: the same pre-tokens on every line of the
 * shared corpora (Moby-Dick, eng-fra, State of the Union addresses, movie
 * reviews, SpamAssassin: TFM_SHARED_DATA, ../shared/data or
 * /work/shared/data) and on random texts of letters, digits, marks,
 * punctuation, CJK, emoji and ASCII whitespace; the classes of every code
 * point compared (where JavaScript's tables, which the scanners use, and
 * PCRE2's Unicode tables differ, counted and printed); each scanner's and
 * PCRE2's speed (printed, never asserted); then the limits: a pattern that
 * does not compile, one too long, a rule on a tokenizer without the SPLIT
 * flag, and a pattern that backtracks for ever (TFM_ELIMIT, quickly).
 */
#define _GNU_SOURCE
#include <time.h>

#include "check.h"
#include "../src/core/tokenizer/pretokenize/tok_split.h"
#include "../src/core/tokenizer/unicode/tok_unicode.h"

static const char GPT2[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
	" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* a byte-level tokenizer (the 256 bytes, no merges) with these flags */
static tfm_tokenizer *
byte_tokenizer(uint32_t flags)
{
	uint8_t		bytes[256];
	const uint8_t *pieces[256];
	size_t		lens[256];
	uint8_t		literal[256];
	int32_t		none[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
	tfm_tokenizer *t = NULL;
	tfm_status	err;

	for (int i = 0; i < 256; i++)
	{
		bytes[i] = (uint8_t) i;
		pieces[i] = &bytes[i];
		lens[i] = 1;
		literal[i] = 1;
	}
	CHECK(tfm_tok_import_hf_bpe(&t, pieces, lens, literal, 256, NULL, 0, none, flags, &err) == TFM_OK,
		  "byte tokenizer: %s", err.msg);
	return t;
}

/* the same with the SPLIT flag and one rule */
static tfm_tokenizer *
split_tokenizer(const char *pattern, tfm_tok_split_behavior behavior)
{
	tfm_tokenizer *t = byte_tokenizer(TFM_TOK_INFO_SPLIT);
	tfm_status	err;

	if (t && tfm_tok_add_split(t, pattern, strlen(pattern), behavior, 0, &err) != TFM_OK)
	{
		CHECK(0, "split tokenizer: %s", err.msg);
		tfm_tok_free(t);
		return NULL;
	}
	return t;
}

typedef size_t (*scanner_fn) (const uint8_t *s, size_t n);

/* 1 if the scanner's pre-tokens of s are PCRE2's; prints the first difference */
static int
same_pretokens(tfm_tokenizer *t, scanner_fn scan, const char *what, const uint8_t *s, size_t n)
{
	const size_t *pieces;
	size_t		np,
				pos = 0,
				k = 0;
	tfm_status	err;

	if (tfm_tok_split_run(&pieces, &np, t, s, n, &err) != TFM_OK)
	{
		CHECK(0, "%s: split: %s", what, err.msg);
		return 0;
	}
	while (pos < n)
	{
		size_t		l = scan(s + pos, n - pos);

		if (k >= np || pieces[2 * k] != pos || pieces[2 * k + 1] != pos + l)
		{
			fprintf(stderr, "%s: at byte %zu: scanner \"%.*s\", PCRE2 \"%.*s\"\n", what, pos,
					(int) l, s + pos, k < np ? (int) (pieces[2 * k + 1] - pieces[2 * k]) : 0,
					k < np ? (const char *) s + pieces[2 * k] : "");
			return 0;
		}
		pos += l;
		k++;
	}
	return k == np;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the corpora's text, one line a row */
static char *
corpora(size_t *len)
{
	static const char *const files[] = {
		"moby_dick.txt.gz", "eng_fra_train.tsv.gz", "sotu.tsv.gz", "rt_polarity_train.tsv.gz",
		"spamassassin_train.tsv.gz"
	};
	const char *dirs[3] = {getenv("TFM_SHARED_DATA"), "../shared/data", "/work/shared/data"};
	const char *dir = NULL;
	char		path[1200],
				cmd[1300];
	char	   *buf = NULL;
	size_t		cap = 0;

	*len = 0;
	for (int i = 0; i < 3 && !dir; i++)
	{
		FILE	   *f;

		if (!dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirs[i], files[0]);
		if ((f = fopen(path, "r")) != NULL)
		{
			fclose(f);
			dir = dirs[i];
		}
	}
	if (!dir)
		return NULL;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
	{
		FILE	   *p;
		size_t		got;

		snprintf(cmd, sizeof(cmd), "gzip -dc '%s/%s'", dir, files[i]);
		if (!(p = popen(cmd, "r")))
			continue;
		do
		{
			if (*len + 65536 > cap)
			{
				cap = (cap + 65536) * 2;
				buf = realloc(buf, cap);
			}
			got = fread(buf + *len, 1, 65536, p);
			*len += got;
		} while (got > 0);
		pclose(p);
	}
	return buf;
}

/* compares scanner and PCRE2 line by line (valid UTF-8 lines: PostgreSQL text) */
static void
compare_corpus(tfm_tokenizer *t, scanner_fn scan, const char *what, const char *buf, size_t len)
{
	size_t		lines = 0,
				same = 0,
				pos = 0;

	while (pos < len)
	{
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t		end = nl ? (size_t) (nl - buf) + 1 : len;

		if (tfm_tok_utf8_valid(buf + pos, end - pos))
		{
			lines++;
			same += same_pretokens(t, scan, what, (const uint8_t *) buf + pos, end - pos);
		}
		pos = end;
	}
	CHECK(lines > (quick_mode() ? 1000 : 100000) && same == lines, "%s: %zu of %zu corpus lines the same",
		  what, same, lines);
	printf("%s: %zu of %zu corpus lines (%zu bytes) give the same pre-tokens\n", what, same, lines, len);
}

/* random texts drawn from a palette of classes */
static void
compare_random(tfm_tokenizer *t, scanner_fn scan, const char *what)
{
	static const char *const palette[] = {
		"a", "Z", "é", "ß", "Ж", "ع", "中", "の", "한", "1", "٣", "²", "Ⅻ", "\xcc\x81", "\xe0\xa4\xbf",
		" ", "  ", "\t", "\n", "\r\n", "\r", "'", "'s", "'S", "'ll", "'LL", "'ve", "'re", "'d", "'m",
		"'t", ".", ",", "!", "?", "-", "—", "(", ")", "/", "#", "@", "🎉", "👍🏽", "😀", "$", "€"
	};
	uint64_t	r = 88172645463325252ull;
	int			same = 0,
				n = quick_mode() ? 500 : 20000;

	for (int i = 0; i < n; i++)
	{
		char		s[512];
		size_t		len = 0;
		int			parts = 1 + i % 40;

		for (int k = 0; k < parts; k++)
		{
			const char *p;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			p = palette[r % (sizeof(palette) / sizeof(palette[0]))];
			memcpy(s + len, p, strlen(p));
			len += strlen(p);
		}
		same += same_pretokens(t, scan, what, (const uint8_t *) s, len);
	}
	CHECK(same == n, "%s: %d of %d random texts the same", what, same, n);
}

/* code points whose class differs between tfm's tables (JavaScript's
 * \s, \p{L}, \p{N}) and PCRE2's: counted and the first few printed */
static void
compare_classes(void)
{
	const char *pats[3] = {"\\s", "\\p{L}", "\\p{N}"};
	int			cls[3] = {TFM_UC_SPACE, TFM_UC_LETTER, TFM_UC_NUMBER};

	for (int c = 0; c < 3; c++)
	{
		/* Removed: a character the pattern matches leaves no piece */
		tfm_tokenizer *t = split_tokenizer(pats[c], TFM_TOK_SPLIT_REMOVED);
		int			differ = 0;
		char		list[200] = "";

		if (!t)
			return;
		/* quick mode (valgrind): every 97th code point */
		for (uint32_t cp = 0; cp < 0x110000; cp += quick_mode() ? 97 : 1)
		{
			uint8_t		b[4];
			size_t		l,
						np;
			const size_t *pieces;

			if (cp >= 0xD800 && cp < 0xE000)
				continue;
			l = tfm_tok_utf8_put(b, cp);
			tfm_tok_split_run(&pieces, &np, t, b, l, NULL);
			if ((np == 0) != (tfm_tok_uclass((int32_t) cp) == cls[c]))
			{
				if (differ++ < 8)
					snprintf(list + strlen(list), sizeof(list) - strlen(list), " U+%04X%s", cp,
							 np == 0 ? "(PCRE2)" : "(tfm)");
			}
		}
		printf("%s: %d code points classed differently by tfm's tables and PCRE2's:%s%s\n",
			   pats[c], differ, list, differ > 8 ? " ..." : "");
		tfm_tok_free(t);
	}
}

static void
speed(tfm_tokenizer *t, scanner_fn scan, const char *what, const char *buf, size_t len)
{
	double		t0,
				t1,
				t2;
	size_t		pos = 0,
				count = 0,
				np;
	const size_t *pieces;
	tfm_status	err;

	t0 = now();
	while (pos < len)
	{
		pos += scan((const uint8_t *) buf + pos, len - pos);
		count++;
	}
	t1 = now();
	CHECK(tfm_tok_split_run(&pieces, &np, t, (const uint8_t *) buf, len, &err) == TFM_OK &&
		  np == count, "%s: whole corpus %zu pieces, scanner %zu", what, np, count);
	t2 = now();
	printf("%s: scanner %.1f MB/s, PCRE2 (%s) %.1f MB/s over %.1f MB\n", what,
		   len / (t1 - t0) / 1e6, tfm_tok_split_jit(t, 0) ? "JIT" : "interpreted",
		   len / (t2 - t1) / 1e6, len / 1e6);
}

static void
limits(void)
{
	tfm_tokenizer *t = split_tokenizer("x", TFM_TOK_SPLIT_ISOLATED);
	tfm_status	err;
	char	   *longpat = malloc(TFM_TOK_MAX_SPLIT_PATTERN_BYTES + 2);
	const size_t *pieces;
	size_t		np;
	char		text[80];
	double		t0;
	int			st;

	if (!t)
		return;
	CHECK(tfm_tok_add_split(t, "[a-", 3, TFM_TOK_SPLIT_ISOLATED, 0, &err) == TFM_EINVAL &&
		  strstr(err.msg, "missing terminating ]") != NULL, "a pattern that does not compile: %s", err.msg);
	memset(longpat, 'a', TFM_TOK_MAX_SPLIT_PATTERN_BYTES + 1);
	CHECK(tfm_tok_add_split(t, longpat, TFM_TOK_MAX_SPLIT_PATTERN_BYTES + 1, TFM_TOK_SPLIT_ISOLATED, 0,
							&err) == TFM_ELIMIT, "a pattern too long");
	CHECK(tfm_tok_add_split(t, "a", 1, (tfm_tok_split_behavior) 9, 0, &err) == TFM_EINVAL,
		  "an unknown behavior");
	CHECK(tfm_tok_add_split(t, "a\0b", 3, TFM_TOK_SPLIT_ISOLATED, 0, &err) == TFM_EINVAL, "a NUL");
	for (int i = 1; i < TFM_TOK_MAX_SPLITS; i++)
		CHECK(tfm_tok_add_split(t, "y", 1, TFM_TOK_SPLIT_ISOLATED, 0, &err) == TFM_OK, "rule %d", i);
	CHECK(tfm_tok_add_split(t, "y", 1, TFM_TOK_SPLIT_ISOLATED, 0, &err) == TFM_ELIMIT, "one rule too many");
	CHECK(tfm_tok_n_splits(t) == TFM_TOK_MAX_SPLITS, "%d rules", tfm_tok_n_splits(t));
	tfm_tok_free(t);
	free(longpat);

	/* catastrophic backtracking: stopped by the match limit, quickly */
	t = split_tokenizer("(x+x+)+y|\\s", TFM_TOK_SPLIT_ISOLATED);
	memset(text, 'x', 60);
	memcpy(text + 60, " y", 3);
	t0 = now();
	st = t ? tfm_tok_split_run(&pieces, &np, t, (const uint8_t *) text, 62, &err) : -99;
	CHECK(st == TFM_ELIMIT && strstr(err.msg, "match limit") != NULL,
		  "a backtracking pattern: %d %s", st, err.msg);
	printf("a backtracking pattern stopped by the match limit after %.2f s\n", now() - t0);
	tfm_tok_free(t);
	{
		/* a tokenizer without the SPLIT flag takes no rule */
		t = byte_tokenizer(0);
		CHECK(t && tfm_tok_add_split(t, "a", 1, TFM_TOK_SPLIT_ISOLATED, 0, &err) == TFM_EINVAL,
			  "a rule without the SPLIT flag");
		tfm_tok_free(t);
	}
}

int
main(void)
{
	tfm_tokenizer *gpt2 = split_tokenizer(GPT2, TFM_TOK_SPLIT_ISOLATED),
			   *llama3 = split_tokenizer(LLAMA3, TFM_TOK_SPLIT_ISOLATED);
	size_t		len;
	char	   *buf = corpora(&len);

	if (!gpt2 || !llama3)
		return check_summary("test_tok_split");
	if (!buf)
		printf("  shared data not found (set TFM_SHARED_DATA): the corpus comparison and speeds skipped\n");
	/* quick mode (valgrind): the first megabyte */
	if (buf && quick_mode() && len > (1 << 20))
		len = 1 << 20;
	if (buf)
	{
		compare_corpus(gpt2, tfm_tok_gpt2_next, "gpt2", buf, len);
		compare_corpus(llama3, tfm_tok_llama3_next, "llama3", buf, len);
	}
	compare_random(gpt2, tfm_tok_gpt2_next, "gpt2 random");
	compare_random(llama3, tfm_tok_llama3_next, "llama3 random");
	compare_classes();
	if (buf && !quick_mode())
	{
		/* the whole corpus as one text, valid UTF-8 only */
		size_t		w = 0;

		for (size_t pos = 0; pos < len;)
		{
			const char *nl = memchr(buf + pos, '\n', len - pos);
			size_t		end = nl ? (size_t) (nl - buf) + 1 : len;

			if (tfm_tok_utf8_valid(buf + pos, end - pos))
			{
				memmove(buf + w, buf + pos, end - pos);
				w += end - pos;
			}
			pos = end;
		}
		speed(gpt2, tfm_tok_gpt2_next, "gpt2", buf, w);
		speed(llama3, tfm_tok_llama3_next, "llama3", buf, w);
	}
	limits();
	tfm_tok_free(gpt2);
	tfm_tok_free(llama3);
	free(buf);
	return check_summary("test_tok_split");
}
