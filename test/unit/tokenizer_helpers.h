/*
 * tokenizer_helpers.h: what test_tokenizer.c and test_tokenizer_corpus.c
 * share: the pass/fail counters and CHECK, gzip and corpus readers, the
 * directories of the shared corpora and of test/fixtures/tokenizer, and
 * small tokenizer helpers (encode, round trip, train, compare, the rows
 * round trip).  Header-only; each test includes it once.
 */
#ifndef TFM_TEST_TOKENIZER_HELPERS_H
#define TFM_TEST_TOKENIZER_HELPERS_H

/* not every test uses every helper */
#pragma GCC diagnostic ignored "-Wunused-function"

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

#endif							/* TFM_TEST_TOKENIZER_HELPERS_H */
