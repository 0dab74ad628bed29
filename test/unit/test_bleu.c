/*
 * test_bleu.c: unit tests of corpus BLEU (include/tfm/bleu.h) against the
 * reference data of test/fixtures/bleu/ (made by test/fixtures/bleu/make_reference.py, which
 * transcribes sacreBLEU 2.x and checks it against NLTK's corpus_bleu).
 *
 *   - the 13a tokenizer on hand-made corners and seeded random strings
 *     (tokenize.tsv), each in an output buffer of exactly the documented size
 *   - the statistics (exact) and the score (1e-9 relative, against both the
 *     sacreBLEU transcription and NLTK) of the hand-written corpora
 *     (segments.tsv) and of the corpora built from eng_fra_test
 *     (corpus.tsv; the sentences are read from shared/data)
 *   - the tokenization of every row of eng_fra_test (corpus_tokens.tsv)
 *
 * test_bleu_api.c has the API's own tests (references ignored or missing,
 * statistics checks, overflow, combining partial sums, sacreBLEU's own test
 * values, the polled tokenizer).
 *
 * Environment: TFM_BLEU_DATA (default test/fixtures/bleu, or beside TFM_TEST_DATA),
 * TFM_SHARED_DATA (default ../shared/data, then /work/shared/data; the
 * eng_fra checks are skipped when absent), TFM_TEST_QUICK=1 (fewer random
 * cases, for valgrind).  Exits non-zero on any failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/bleu.h"
#include "bleu_tokenize.h"

#define MAX_FIELDS 16
#define REL_TOL 1e-9

/* ---- files ------------------------------------------------------------------ */

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t) n + 1);
	if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = (size_t) n;
	return buf;
}

static char *
read_gz(const char *path, size_t *len)
{
	char		cmd[2048];
	FILE	   *f;
	char	   *buf = NULL;
	size_t		cap = 0,
				n = 0,
				r;

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
			char	   *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb)
			{
				pclose(f);
				free(buf);
				return NULL;
			}
			buf = nb;
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
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* first of the candidate directories that holds file */
static const char *
find_dir(char *dir, size_t size, const char *const *cands, int n, const char *file)
{
	for (int i = 0; i < n; i++)
	{
		char		p[2048];
		FILE	   *f;

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

static const char *
bleu_dir(void)
{
	static char dir[1024],
				rel[1100];
	const char *td = getenv("TFM_TEST_DATA");
	const char *cands[3];

	snprintf(rel, sizeof(rel), "%s/../bleu", td ? td : ".");
	cands[0] = getenv("TFM_BLEU_DATA");
	cands[1] = "test/fixtures/bleu";
	cands[2] = td ? rel : NULL;
	return find_dir(dir, sizeof(dir), cands, 3, "expected.tsv");
}

static const char *
shared_dir(void)
{
	static char dir[1024],
				rel[1100];
	const char *td = getenv("TFM_TEST_DATA");
	const char *cands[4];

	snprintf(rel, sizeof(rel), "%s/../../../shared/data", td ? td : ".");
	cands[0] = getenv("TFM_SHARED_DATA");
	cands[1] = "../shared/data";
	cands[2] = td ? rel : NULL;
	cands[3] = "/work/shared/data";
	return find_dir(dir, sizeof(dir), cands, 4, "eng_fra_test.tsv.gz");
}

/*
 * Splits the next line of *p (up to end) at TABs, in place; returns the
 * number of fields (0 at the end of the buffer) and skips '#' comment lines.
 */
static int
next_line(char **p, char *end, char **f, int maxf)
{
	for (;;)
	{
		char	   *s = *p,
				   *nl;
		int			n = 0;

		if (s >= end)
			return 0;
		nl = memchr(s, '\n', (size_t) (end - s));
		if (!nl)
			nl = end;
		*nl = '\0';
		*p = nl + 1;
		if (s[0] == '#')
			continue;
		f[n++] = s;
		for (char *c = s; *c && n < maxf; c++)
			if (*c == '\t')
			{
				*c = '\0';
				f[n++] = c + 1;
			}
		return n;
	}
}

/* hex -> bytes in place; returns the length, or (size_t) -1 if malformed */
static size_t
unhex(char *s)
{
	size_t		n = strlen(s);

	if (n % 2)
		return (size_t) -1;
	for (size_t i = 0; i < n / 2; i++)
	{
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return (size_t) -1;
		s[i] = (char) v;
	}
	s[n / 2] = '\0';
	return n / 2;
}

static int
close_rel(double got, double want)
{
	return got == want || fabs(got - want) <= REL_TOL * fabs(want);
}

/* ---- tokenizer ---------------------------------------------------------------- */

static void
test_tokenizer_cases(const char *dir)
{
	char		path[1200],
			   *buf,
			   *p,
			   *f[MAX_FIELDS];
	size_t		len;
	int			nf,
				cases = 0,
				bad = 0,
				quick = quick_mode();

	snprintf(path, sizeof(path), "%s/tokenize.tsv", dir);
	buf = read_file(path, &len);
	CHECK(buf != NULL, "cannot read %s", path);
	if (!buf)
		return;
	p = buf;
	while ((nf = next_line(&p, buf + len, f, MAX_FIELDS)) > 0)
	{
		size_t		in_n,
					want_n,
					got_n;
		char	   *got;

		if (nf < 3)
		{
			CHECK(0, "tokenize.tsv: short line");
			continue;
		}
		if (quick && strncmp(f[0], "fuzz", 4) == 0 && atoi(f[0] + 4) >= 100)
			continue;
		in_n = unhex(f[1]);
		want_n = unhex(f[2]);
		if (in_n == (size_t) -1 || want_n == (size_t) -1)
		{
			CHECK(0, "tokenize.tsv: bad hex in %s", f[0]);
			continue;
		}
		got = tokenize(f[1], in_n, &got_n);
		cases++;
		if (got_n != want_n || memcmp(got, f[2], want_n) != 0 || got[got_n] != '\0')
		{
			if (bad++ < 5)
				fprintf(stderr, "  13a %s: input %s\n    got  [%s]\n    want [%s]\n",
						f[0], nf > 3 ? f[3] : "", got, f[2]);
		}
		free(got);
	}
	CHECK(bad == 0, "13a tokenizer: %d of %d cases differ", bad, cases);
	CHECK(cases >= 30, "13a tokenizer: only %d cases", cases);
	printf("  13a tokenizer: %d cases\n", cases);
	free(buf);
}

/* ---- expected corpus results ------------------------------------------------- */

typedef struct expect
{
	char		name[64];
	int			segments;
	int64_t		stats[TFM_BLEU_N_STATS];
	double		sacre;
	double		nltk;			/* NaN: not comparable */
	int			has_nltk;
	/* what the test computes */
	int			got_segments;
	int64_t		got[TFM_BLEU_N_STATS];
	int			status;
} expect;

typedef struct expects
{
	expect	   *e;
	int			n;
} expects;

static int
load_expected(expects *ex, const char *dir)
{
	char		path[1200],
			   *buf,
			   *p,
			   *f[MAX_FIELDS];
	size_t		len;
	int			nf;

	memset(ex, 0, sizeof(*ex));
	snprintf(path, sizeof(path), "%s/expected.tsv", dir);
	buf = read_file(path, &len);
	if (!buf)
		return -1;
	ex->e = calloc(256, sizeof(expect));
	p = buf;
	while ((nf = next_line(&p, buf + len, f, MAX_FIELDS)) > 0 && ex->n < 256)
	{
		expect	   *e = &ex->e[ex->n++];

		if (nf != 14)
		{
			free(buf);
			return -1;
		}
		snprintf(e->name, sizeof(e->name), "%s", f[0]);
		e->segments = atoi(f[1]);
		for (int i = 0; i < TFM_BLEU_N_STATS; i++)
			e->stats[i] = strtoll(f[2 + i], NULL, 10);
		e->sacre = strtod(f[12], NULL);
		e->has_nltk = strcmp(f[13], "-") != 0;
		e->nltk = e->has_nltk ? strtod(f[13], NULL) : 0.0;
	}
	free(buf);
	return 0;
}

static expect *
find_expect(expects *ex, const char *name)
{
	for (int i = 0; i < ex->n; i++)
		if (strcmp(ex->e[i].name, name) == 0)
			return &ex->e[i];
	return NULL;
}

static void
add_segment(expect *e, const char *hyp, size_t hyp_len, const char *const *refs,
			const size_t *lens, int n)
{
	int			st;

	if (e->status != TFM_OK)
		return;
	st = tfm_bleu_add(e->got, hyp, hyp_len, refs, lens, n);
	if (st != TFM_OK)
		e->status = st;
	e->got_segments++;
}

/* compares what was computed for the corpora whose name starts (or, with
 * !match, does not start) with prefix */
static void
compare_corpora(expects *ex, const char *prefix, int match, int *n_checked, int *n_bitexact)
{
	for (int i = 0; i < ex->n; i++)
	{
		expect	   *e = &ex->e[i];
		tfm_bleu_result r;
		int			same = 1;

		if ((strncmp(e->name, prefix, strlen(prefix)) == 0) != match)
			continue;
		(*n_checked)++;
		CHECK(e->status == TFM_OK, "%s: %s", e->name, tfm_code_name(e->status));
		CHECK(e->got_segments == e->segments, "%s: %d segments, expected %d",
			  e->name, e->got_segments, e->segments);
		for (int k = 0; k < TFM_BLEU_N_STATS; k++)
			same &= e->got[k] == e->stats[k];
		CHECK(same, "%s: statistics differ (sys_len %lld ref_len %lld m1 %lld t4 %lld; expected %lld %lld %lld %lld)",
			  e->name, (long long) e->got[0], (long long) e->got[1], (long long) e->got[2],
			  (long long) e->got[9], (long long) e->stats[0], (long long) e->stats[1],
			  (long long) e->stats[2], (long long) e->stats[9]);
		CHECK(tfm_bleu_stats_check(e->got) == TFM_OK, "%s: statistics invalid", e->name);
		tfm_bleu_score(&r, e->got);
		CHECK(close_rel(r.score, e->sacre), "%s: BLEU %.17g, sacreBLEU %.17g", e->name, r.score, e->sacre);
		if (e->has_nltk)
			CHECK(close_rel(r.score, e->nltk), "%s: BLEU %.17g, NLTK %.17g", e->name, r.score, e->nltk);
		CHECK(r.score >= 0.0 && r.score <= 100.0 + 1e-9, "%s: BLEU %g out of range", e->name, r.score);
		if (r.score == e->sacre)
			(*n_bitexact)++;
		if (getenv("TFM_TEST_VERBOSE"))
			printf("  %-20s BLEU %.17g (sacreBLEU %.17g)\n", e->name, r.score, e->sacre);
	}
}

/* segments.tsv: hand-written corpora */
static void
test_segments(const char *dir, expects *ex)
{
	char		path[1200],
			   *buf,
			   *p,
			   *f[MAX_FIELDS];
	size_t		len;
	int			nf,
				checked = 0,
				exact = 0;

	snprintf(path, sizeof(path), "%s/segments.tsv", dir);
	buf = read_file(path, &len);
	CHECK(buf != NULL, "cannot read %s", path);
	if (!buf)
		return;
	p = buf;
	while ((nf = next_line(&p, buf + len, f, MAX_FIELDS)) > 0)
	{
		const char *refs[4];
		size_t		lens[4],
					hl;
		expect	   *e = find_expect(ex, f[0]);

		CHECK(nf == 6 && e != NULL, "segments.tsv: bad line for %s", f[0]);
		if (nf != 6 || e == NULL)
			continue;
		hl = unhex(f[1]);
		for (int i = 0; i < 4; i++)
		{
			if (strcmp(f[2 + i], "\\N") == 0)
			{
				refs[i] = NULL;
				lens[i] = 0;
			}
			else
			{
				lens[i] = unhex(f[2 + i]);
				refs[i] = f[2 + i];
			}
		}
		add_segment(e, f[1], hl, refs, lens, 4);
	}
	free(buf);
	compare_corpora(ex, "ef_", 0, &checked, &exact);
	printf("  hand-written corpora: %d checked, %d bit-identical to the sacreBLEU transcription\n",
		   checked, exact);
}

/* ---- eng_fra corpora ------------------------------------------------------------ */

typedef struct rows
{
	char	   *buf;
	char	  **tgt;			/* French column of each data row */
	char	  **src;
	int			n;
} rows;

static int
load_eng_fra(rows *r, const char *dir)
{
	char		path[1200];
	size_t		len;
	char	   *p,
			   *end;
	int			cap = 1 << 15;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "%s/eng_fra_test.tsv.gz", dir);
	if (!(r->buf = read_gz(path, &len)))
		return -1;
	r->tgt = malloc(sizeof(char *) * (size_t) cap);
	r->src = malloc(sizeof(char *) * (size_t) cap);
	p = memchr(r->buf, '\n', len);
	p = p ? p + 1 : r->buf + len;	/* after the header */
	end = r->buf + len;
	while (p < end)
	{
		char	   *nl = memchr(p, '\n', (size_t) (end - p)),
				   *tab;

		if (!nl)
			nl = end;
		*nl = '\0';
		tab = strchr(p, '\t');
		if (!tab || r->n == cap)
			return -1;
		*tab = '\0';
		r->src[r->n] = p;
		r->tgt[r->n] = tab + 1;
		r->n++;
		p = nl + 1;
	}
	return 0;
}

static void
rows_free(rows *r)
{
	free(r->buf);
	free(r->tgt);
	free(r->src);
}

/* the words of s split on every ' ' (as Python's s.split(' ')), copied */
typedef struct words
{
	char	  **w;
	int			n,
				cap;
} words;

static void
words_insert(words *ws, int at, const char *s, size_t n)
{
	char	   *c = malloc(n + 1);

	memcpy(c, s, n);
	c[n] = '\0';
	if (ws->n == ws->cap)
	{
		ws->cap = ws->cap ? 2 * ws->cap : 16;
		ws->w = realloc(ws->w, sizeof(char *) * (size_t) ws->cap);
	}
	memmove(ws->w + at + 1, ws->w + at, sizeof(char *) * (size_t) (ws->n - at));
	ws->w[at] = c;
	ws->n++;
}

static void
words_delete(words *ws, int at)
{
	free(ws->w[at]);
	memmove(ws->w + at, ws->w + at + 1, sizeof(char *) * (size_t) (ws->n - at - 1));
	ws->n--;
}

static void
words_split(words *ws, const char *s)
{
	const char *sp;

	memset(ws, 0, sizeof(*ws));
	while ((sp = strchr(s, ' ')) != NULL)
	{
		words_insert(ws, ws->n, s, (size_t) (sp - s));
		s = sp + 1;
	}
	words_insert(ws, ws->n, s, strlen(s));
}

static void
words_free(words *ws)
{
	for (int i = 0; i < ws->n; i++)
		free(ws->w[i]);
	free(ws->w);
}

/* the hypothesis: row's words with the edits of make_reference.py applied; NULL if malformed */
static char *
make_hyp(const rows *r, int row, const char *edits)
{
	words		ws;
	char	   *copy = strdup(edits),
			   *save = NULL,
			   *out;
	size_t		total = 1;
	int			ok = 1;

	words_split(&ws, r->tgt[row]);
	for (char *e = strtok_r(copy, " ", &save); e && ok && strcmp(edits, "-") != 0;
		 e = strtok_r(NULL, " ", &save))
	{
		int			i = atoi(e + 2);
		char		op = e[0];

		if (e[1] != ':' || i < 0 || i > ws.n)
			ok = 0;
		else if (op == 'd' && i < ws.n)
			words_delete(&ws, i);
		else if (op == 's' && i + 1 < ws.n)
		{
			char	   *t = ws.w[i];

			ws.w[i] = ws.w[i + 1];
			ws.w[i + 1] = t;
		}
		else if (op == 'u' && i < ws.n)
			words_insert(&ws, i + 1, ws.w[i], strlen(ws.w[i]));
		else if (op == 'j' && i + 1 < ws.n)
		{
			size_t		a = strlen(ws.w[i]),
						b = strlen(ws.w[i + 1]);
			char	   *c = malloc(a + b + 1);

			memcpy(c, ws.w[i], a);
			memcpy(c + a, ws.w[i + 1], b + 1);
			words_delete(&ws, i + 1);
			free(ws.w[i]);
			ws.w[i] = c;
		}
		else if (op == 'r' && i < ws.n)
		{
			const char *f2 = strchr(e + 2, ':');
			const char *f3 = f2 ? strchr(f2 + 1, ':') : NULL;
			int			rr = f2 ? atoi(f2 + 1) : -1,
						j = f3 ? atoi(f3 + 1) : -1;
			words		src;

			if (rr < 0 || rr >= r->n || j < 0)
			{
				ok = 0;
				continue;
			}
			words_split(&src, r->tgt[rr]);
			if (j < src.n)
			{
				free(ws.w[i]);
				ws.w[i] = strdup(src.w[j]);
			}
			else
				ok = 0;
			words_free(&src);
		}
		else if (op == 'i')
		{
			const char *lit = strchr(e + 2, ':');

			if (lit)
				words_insert(&ws, i, lit + 1, strlen(lit + 1));
			else
				ok = 0;
		}
		else
			ok = 0;
	}
	free(copy);
	for (int i = 0; i < ws.n; i++)
		total += strlen(ws.w[i]) + 1;
	out = malloc(total);
	out[0] = '\0';
	for (int i = 0, at = 0; i < ws.n; i++)
	{
		size_t		k = strlen(ws.w[i]);

		if (i > 0)
			out[at++] = ' ';
		memcpy(out + at, ws.w[i], k + 1);
		at += (int) k;
	}
	words_free(&ws);
	if (!ok)
	{
		free(out);
		return NULL;
	}
	return out;
}

static uint64_t
fnv1a64(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void
test_corpus_tokens(const char *dir, const rows *r)
{
	char		path[1200],
			   *buf,
			   *p,
			   *f[MAX_FIELDS];
	size_t		len;
	int			nf,
				blocks = 0,
				bad = 0;

	snprintf(path, sizeof(path), "%s/corpus_tokens.tsv", dir);
	buf = read_file(path, &len);
	CHECK(buf != NULL, "cannot read %s", path);
	if (!buf)
		return;
	p = buf;
	while ((nf = next_line(&p, buf + len, f, MAX_FIELDS)) > 0)
	{
		int			first = atoi(f[1]),
					n = atoi(f[2]);
		uint64_t	h = 0xcbf29ce484222325ULL,
					want = strtoull(f[3], NULL, 16);

		if (nf != 4 || first < 0 || first + n > r->n)
		{
			CHECK(0, "corpus_tokens.tsv: bad line");
			continue;
		}
		for (int i = first; i < first + n; i++)
		{
			const char *col[2] = {r->src[i], r->tgt[i]};

			for (int c = 0; c < 2; c++)
			{
				size_t		k;
				char	   *t = tokenize(col[c], strlen(col[c]), &k);

				h = fnv1a64(h, t, k);
				h = fnv1a64(h, "\n", 1);
				free(t);
			}
		}
		blocks++;
		if (h != want && bad++ < 3)
			fprintf(stderr, "  eng_fra rows %d..%d: tokenization hash differs\n", first, first + n - 1);
	}
	CHECK(bad == 0, "eng_fra tokenization: %d of %d blocks differ", bad, blocks);
	CHECK(blocks > 0, "corpus_tokens.tsv is empty");
	free(buf);
}

static void
test_eng_fra(const char *dir, expects *ex)
{
	const char *sd = shared_dir();
	rows		r;
	char		path[1200],
			   *buf,
			   *p,
			   *f[MAX_FIELDS];
	size_t		len;
	int			nf,
				checked = 0,
				exact = 0;

	if (!sd)
	{
		printf("  shared data not found (set TFM_SHARED_DATA): eng_fra checks skipped\n");
		return;
	}
	CHECK(load_eng_fra(&r, sd) == 0, "cannot read eng_fra_test.tsv.gz in %s", sd);
	if (r.n == 0)
	{
		rows_free(&r);
		return;
	}
	if (!quick_mode())
		test_corpus_tokens(dir, &r);

	snprintf(path, sizeof(path), "%s/corpus.tsv", dir);
	buf = read_file(path, &len);
	CHECK(buf != NULL, "cannot read %s", path);
	if (!buf)
	{
		rows_free(&r);
		return;
	}
	p = buf;
	while ((nf = next_line(&p, buf + len, f, MAX_FIELDS)) > 0)
	{
		expect	   *e = find_expect(ex, f[0]);
		int			row = atoi(f[1]),
					nrefs = 0;
		const char *refs[64];
		size_t		lens[64];
		char	   *hyp,
				   *save = NULL;

		if (nf != 4 || e == NULL || row < 0 || row >= r.n)
		{
			CHECK(0, "corpus.tsv: bad line for %s", f[0]);
			continue;
		}
		for (char *t = strtok_r(f[3], ",", &save); t && nrefs < 64; t = strtok_r(NULL, ",", &save))
		{
			int			k = atoi(t);

			if (k < 0 || k >= r.n)
				break;
			refs[nrefs] = r.tgt[k];
			lens[nrefs++] = strlen(r.tgt[k]);
		}
		hyp = make_hyp(&r, row, f[2]);
		CHECK(hyp != NULL, "corpus.tsv: bad edits %s", f[2]);
		if (hyp)
			add_segment(e, hyp, strlen(hyp), refs, lens, nrefs);
		free(hyp);
	}
	free(buf);
	compare_corpora(ex, "ef_", 1, &checked, &exact);
	CHECK(checked >= 5, "only %d eng_fra corpora", checked);
	printf("  eng_fra corpora: %d checked, %d bit-identical to the sacreBLEU transcription\n",
		   checked, exact);
	rows_free(&r);
}

int
main(void)
{
	const char *dir = bleu_dir();
	expects		ex;

	CHECK(dir != NULL, "test/fixtures/bleu not found (set TFM_BLEU_DATA)");
	if (dir)
	{
		test_tokenizer_cases(dir);
		CHECK(load_expected(&ex, dir) == 0, "cannot read expected.tsv");
		if (ex.e)
		{
			test_segments(dir, &ex);
			test_eng_fra(dir, &ex);
			free(ex.e);
		}
	}
	return check_summary("test_bleu");
}
