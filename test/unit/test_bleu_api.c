/*
 * test_bleu_api.c — tfm_bleu's API (include/tfm/bleu.h) on hand-made
 * inputs, and the polled tokenizer.  test_bleu.c checks against sacreBLEU
 * on the fixtures.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/bleu.h"
#include "bleu_tokenize.h"


/* ---- the API ------------------------------------------------------------------- */

static void
test_api(void)
{
	int64_t		s[TFM_BLEU_N_STATS] = {0},
				z[TFM_BLEU_N_STATS] = {0};
	tfm_bleu_result r;
	const char *refs[3];
	size_t		lens[3];

	/* sacreBLEU test_bleu.py test_scoring: compute_bleu([9,7,5,3], [10,8,6,4], 11, 11) */
	{
		int64_t		t[TFM_BLEU_N_STATS] = {11, 11, 9, 7, 5, 3, 10, 8, 6, 4};

		tfm_bleu_score(&r, t);
		CHECK(fabs(r.score / 100 - 0.8375922397) < 1e-8, "test_scoring: %.12g", r.score);
	}
	/* a perfect match is 100.00000000000004, as sacreBLEU prints it (exp(log(100))) */
	refs[0] = "The cat sat on the mat.";
	lens[0] = strlen(refs[0]);
	CHECK(tfm_bleu_add(s, refs[0], lens[0], refs, lens, 1) == TFM_OK, "perfect");
	tfm_bleu_score(&r, s);
	CHECK(r.score == 100.00000000000004, "perfect: %.17g", r.score);
	CHECK(r.bp == 1.0 && r.ratio == 1.0 && r.precisions[3] == 100.0, "perfect details");

	/* sacreBLEU test_statistics: counts [4,2,1,0], totals [6,5,4,3] */
	memset(s, 0, sizeof(s));
	refs[0] = "I am a symbol string sequence a a";
	lens[0] = strlen(refs[0]);
	CHECK(tfm_bleu_add(s, "am I am a character sequence", 28, refs, lens, 1) == TFM_OK, "stats");
	CHECK(s[2] == 4 && s[3] == 2 && s[4] == 1 && s[5] == 0 && s[6] == 6 && s[7] == 5 &&
		  s[8] == 4 && s[9] == 3 && s[0] == 6 && s[1] == 8, "test_statistics: %lld %lld %lld %lld / %lld %lld %lld %lld",
		  (long long) s[2], (long long) s[3], (long long) s[4], (long long) s[5],
		  (long long) s[6], (long long) s[7], (long long) s[8], (long long) s[9]);

	/* no usable reference: NULL and "" are ignored; " " is a reference */
	memset(s, 0, sizeof(s));
	refs[0] = NULL;
	refs[1] = "";
	lens[0] = 5;
	lens[1] = 0;
	CHECK(tfm_bleu_add(s, "a b", 3, refs, lens, 2) == TFM_EINVAL, "only NULL and empty refs");
	CHECK(tfm_bleu_add(s, "a b", 3, refs, lens, 0) == TFM_EINVAL, "no refs");
	CHECK(memcmp(s, z, sizeof(s)) == 0, "stats untouched on error");
	refs[2] = " ";
	lens[2] = 1;
	CHECK(tfm_bleu_add(s, "a b", 3, refs, lens, 3) == TFM_OK, "blank ref");
	CHECK(s[0] == 2 && s[1] == 0 && s[6] == 2 && s[2] == 0, "blank ref counts");
	tfm_bleu_score(&r, s);
	CHECK(r.score == 0.0 && r.bp == 1.0 && r.ratio == 0.0, "blank ref: score %g", r.score);

	/* empty hypothesis: sys_len 0, bp 0, score 0 */
	memset(s, 0, sizeof(s));
	refs[0] = "x y z";
	lens[0] = 5;
	CHECK(tfm_bleu_add(s, "", 0, refs, lens, 1) == TFM_OK, "empty hyp");
	tfm_bleu_score(&r, s);
	CHECK(s[0] == 0 && s[1] == 3 && r.score == 0.0 && r.bp == 0.0, "empty hyp score");

	/* statistics checks */
	{
		int64_t		ok[TFM_BLEU_N_STATS] = {10, 9, 8, 5, 3, 1, 10, 9, 8, 7},
					t[TFM_BLEU_N_STATS];

		CHECK(tfm_bleu_stats_check(ok) == TFM_OK, "valid stats");
		CHECK(tfm_bleu_stats_check(z) == TFM_OK, "zero stats");
		memcpy(t, ok, sizeof(t));
		t[1] = -1;
		CHECK(tfm_bleu_stats_check(t) == TFM_EFORMAT, "negative");
		memcpy(t, ok, sizeof(t));
		t[0] = 11;
		CHECK(tfm_bleu_stats_check(t) == TFM_EFORMAT, "sys_len != t1");
		memcpy(t, ok, sizeof(t));
		t[5] = 8;
		CHECK(tfm_bleu_stats_check(t) == TFM_EFORMAT, "matches > totals");
		memcpy(t, ok, sizeof(t));
		t[9] = 9;
		CHECK(tfm_bleu_stats_check(t) == TFM_EFORMAT, "totals grow");

		/* overflow leaves a unchanged */
		memcpy(t, ok, sizeof(t));
		{
			int64_t		big[TFM_BLEU_N_STATS] = {0};

			big[1] = INT64_MAX;
			CHECK(tfm_bleu_stats_add(t, big) == TFM_ERANGE, "overflow");
			CHECK(memcmp(t, ok, sizeof(t)) == 0, "unchanged after overflow");
		}
	}

	/* combining partial sums in any split gives the corpus statistics */
	{
		const char *hyps[4] = {"The dog bit the man.", "It wasn't surprising.",
		"The man had just bitten him.", "Nothing here matches at all."};
		const char *r2[4][2] = {{"The dog bit the man.", "The dog had bit the man."},
		{"It was not unexpected.", "No one was surprised."},
		{"The man bit him first.", "The man had bitten the dog."},
		{"Something else entirely.", NULL}};
		int64_t		all[TFM_BLEU_N_STATS] = {0};

		for (int i = 0; i < 4; i++)
		{
			size_t		l2[2] = {strlen(r2[i][0]), r2[i][1] ? strlen(r2[i][1]) : 0};

			CHECK(tfm_bleu_add(all, hyps[i], strlen(hyps[i]), r2[i], l2, 2) == TFM_OK, "seg %d", i);
		}
		for (int split = 0; split <= 4; split++)
		{
			int64_t		a[TFM_BLEU_N_STATS] = {0},
						b[TFM_BLEU_N_STATS] = {0};

			for (int i = 0; i < 4; i++)
			{
				size_t		l2[2] = {strlen(r2[i][0]), r2[i][1] ? strlen(r2[i][1]) : 0};

				tfm_bleu_add(i < split ? a : b, hyps[i], strlen(hyps[i]), r2[i], l2, 2);
			}
			CHECK(tfm_bleu_stats_add(b, a) == TFM_OK && memcmp(b, all, sizeof(b)) == 0,
				  "split at %d", split);
		}
	}

	/* long inputs: every byte value, runs of specials; must not overrun (valgrind) */
	{
		size_t		n = quick_mode() ? 5000 : 200000,
					k;
		char	   *t = malloc(n),
				   *out;
		uint64_t	x = 88172645463325252ULL;

		for (size_t i = 0; i < n; i++)
		{
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t[i] = (char) ((x >> 24) % 4 == 0 ? ".,-&"[(x >> 8) % 4] : (char) (x >> 32));
		}
		out = tokenize(t, n, &k);
		CHECK(k <= 2 * n && out[k] == '\0', "long input: length %zu", k);
		free(out);
		memset(t, '.', n);
		out = tokenize(t, n, &k);
		CHECK(k == 2 * n - 1, "all dots: %zu", k);	/* ". . . ." */
		free(out);
		refs[0] = t;
		lens[0] = n;
		memset(s, 0, sizeof(s));
		CHECK(tfm_bleu_add(s, t, n, refs, lens, 1) == TFM_OK, "long add");
		CHECK(s[0] == (int64_t) n && s[2] == (int64_t) n && s[5] == (int64_t) n - 3, "long add counts");
		free(t);
	}
	CHECK(strcmp(tfm_code_name(TFM_EINVAL), "invalid argument") == 0, "status name");
}

/* the polled tokenizer: the same line; a poll that says stop ends it (SIZE_MAX) */
static int	polls;

static int
poll_count(void *arg)
{
	polls++;
	return arg != NULL && polls >= *(const int *) arg;
}

static void
test_tokenize_polled(void)
{
	size_t		n = 3 << 20,
				a,
				b;
	char	   *text = malloc(n),
			   *x,
			   *y = malloc(TFM_BLEU_TOKENIZED_MAX(n));
	int			stop_at = 3;

	for (size_t i = 0; i < n; i++)
		text[i] = "The cat, 3.5-4 &amp; <skipped> the\nsea."[i % 39];
	x = tokenize(text, n, &a);
	polls = 0;
	b = tfm_bleu_tokenize_13a_polled(y, text, n, poll_count, NULL);
	CHECK(a == b && memcmp(x, y, a + 1) == 0, "polled tokenization: the same line");
	CHECK(polls >= 32, "polled tokenization: %d polls over 3 MB (one per 64 kB at least)", polls);
	polls = 0;
	b = tfm_bleu_tokenize_13a_polled(y, text, n, poll_count, &stop_at);
	CHECK(b == SIZE_MAX && polls == stop_at, "polled tokenization stops at the poll's word (%d polls)", polls);
	free(text);
	free(x);
	free(y);
}

int
main(void)
{
	test_api();
	test_tokenize_polled();
	return check_summary("test_bleu_api");
}
