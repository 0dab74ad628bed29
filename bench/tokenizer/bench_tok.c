/*
 * bench_tok.c: the tokenizer core on the State of the Union corpus, one
 * thread: BPE training time (counting, merges) for the vocabulary sizes
 * given, then encode throughput over the corpus speech by speech (a first
 * pass with the tokenizer's pre-token cache empty, then the best of two with
 * it warm),
 * decode throughput, and a check that every speech round-trips.
 *
 *   bench_tok SOTU_TSV_GZ [VOCAB ...]        (default 8000 32000)
 *
 * One line per vocabulary, "key=value" fields, for run.sh to tabulate.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfm/tokenizer.h"

typedef struct
{
	const char *p;
	size_t len;
} span;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
die(const char *what, const tfm_status *err)
{
	fprintf(stderr, "bench_tok: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
	exit(1);
}

/* the whole output of "gzip -dc path" */
static char *
read_gz(const char *path, size_t *len)
{
	char *cmd = malloc(strlen(path) + 32), *buf = NULL;
	size_t cap = 0, n = 0, got;
	FILE *f;

	sprintf(cmd, "gzip -dc '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		die("cannot run gzip", NULL);
	do
	{
		if (cap - n < 1 << 20)
		{
			cap = cap ? cap * 2 : 16 << 20;
			buf = realloc(buf, cap + 1);
			if (!buf)
				die("out of memory", NULL);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (pclose(f) != 0 || n == 0)
		die("cannot read the corpus", NULL);
	free(cmd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* field 3 (text) of every data line of sotu.tsv */
static span *
speeches(char *buf, size_t len, size_t *n)
{
	span *s = NULL;
	size_t cap = 0;
	char *line = memchr(buf, '\n', len), *end = buf + len;

	*n = 0;
	for (line = line ? line + 1 : end; line < end;)
	{
		char *nl = memchr(line, '\n', (size_t) (end - line)), *f = line;
		int k;

		if (!nl)
			nl = end;
		for (k = 0; k < 3 && f; k++)
		{
			f = memchr(f, '\t', (size_t) (nl - f));
			if (f)
				f++;
		}
		if (!f)
			die("a line without 4 fields", NULL);
		if (*n == cap)
		{
			cap = cap ? cap * 2 : 256;
			s = realloc(s, cap * sizeof(span));
		}
		s[*n].p = f;
		s[*n].len = (size_t) (nl - f);
		(*n)++;
		line = nl + 1;
	}
	return s;
}

static double
encode_all(tfm_tokenizer *t, const span *s, size_t n, size_t *total, int32_t **ids_out, size_t *nids_out)
{
	double t0 = now();
	size_t i;
	tfm_status err;

	*total = 0;
	for (i = 0; i < n; i++)
	{
		size_t cap = tfm_tok_encode_bound(s[i].len, 0), got;

		if (ids_out[i] == NULL)
			ids_out[i] = malloc(sizeof(int32_t) * (cap ? cap : 1));
		if (tfm_tok_encode(ids_out[i], NULL, cap, &got, t, s[i].p, s[i].len, 0, 0, &err))
			die("encode", &err);
		nids_out[i] = got;
		*total += got;
	}
	return now() - t0;
}

int
main(int argc, char **argv)
{
	size_t len, n, i, bytes = 0;
	char *buf;
	span *s;
	int v;
	int default_sizes[2] = {8000, 32000}, n_sizes = argc > 2 ? argc - 2 : 2;

	if (argc < 2)
	{
		fprintf(stderr, "usage: bench_tok SOTU_TSV_GZ [VOCAB ...]\n");
		return 2;
	}
	buf = read_gz(argv[1], &len);
	s = speeches(buf, len, &n);
	for (i = 0; i < n; i++)
		bytes += s[i].len;
	for (v = 0; v < n_sizes; v++)
	{
		int vocab = argc > 2 ? atoi(argv[2 + v]) : default_sizes[v];
		tfm_tok_options opt;
		tfm_tok_counter *c;
		tfm_tokenizer *t = NULL;
		tfm_status err;
		tfm_tok_info info;
		double t0, t_count, t_train, t_cold, t_warm, t_dec;
		size_t total, total2, bad = 0;
		int32_t **ids = calloc(n, sizeof(int32_t *));
		size_t *nids = calloc(n, sizeof(size_t));
		char *out = NULL;
		size_t out_cap = 0;

		tfm_tok_options_init(&opt, TFM_TOK_BPE);
		opt.vocab_size = vocab;
		t0 = now();
		if (tfm_tok_counter_create(&c, &opt, &err))
			die("counter", &err);
		for (i = 0; i < n; i++)
			if (tfm_tok_counter_add(c, s[i].p, s[i].len, &err))
				die("count", &err);
		t_count = now() - t0;
		t0 = now();
		if (tfm_tok_train(&t, c, NULL, NULL, &err))
			die("train", &err);
		t_train = now() - t0;
		tfm_tok_get_info(&info, t);
		t_cold = encode_all(t, s, n, &total, ids, nids);
		t_warm = encode_all(t, s, n, &total2, ids, nids);
		{
			double t_again = encode_all(t, s, n, &total2, ids, nids);

			if (t_again < t_warm)
				t_warm = t_again;
		}
		t0 = now();
		for (i = 0; i < n; i++)
		{
			size_t cap = tfm_tok_decode_bound(t, nids[i], 0), got;

			if (cap > out_cap)
			{
				out_cap = cap;
				out = realloc(out, out_cap);
			}
			if (tfm_tok_decode(out, cap, &got, t, ids[i], nids[i], 0, &err))
				die("decode", &err);
			bad += got != s[i].len || memcmp(out, s[i].p, got) != 0;
		}
		t_dec = now() - t0;
		printf("vocab=%d ids=%d merges=%d pretoken_types=%zu mb=%.2f count_s=%.2f train_s=%.2f "
			   "total_s=%.2f encode_cold_mbs=%.2f encode_warm_mbs=%.2f decode_mbs=%.1f tokens=%zu "
			   "round_trip_failures=%zu\n",
			   vocab, (int) info.vocab_size, (int) info.n_merges, tfm_tok_counter_n_entries(c),
			   bytes / 1e6, t_count, t_train, t_count + t_train, bytes / 1e6 / t_cold,
			   bytes / 1e6 / t_warm, bytes / 1e6 / t_dec, total, bad);
		fflush(stdout);
		if (total != total2 || bad)
			die("the two encode passes differ or a speech does not round-trip", NULL);
		for (i = 0; i < n; i++)
			free(ids[i]);
		free(ids);
		free(nids);
		free(out);
		tfm_tok_counter_free(c);
		tfm_tok_free(t);
	}
	free(s);
	free(buf);
	return 0;
}
