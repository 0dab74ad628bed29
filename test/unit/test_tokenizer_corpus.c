/*
 * test_tokenizer_corpus.c: the tokenizers (include/tfm/tokenizer.h) on
 * the corpora; test_tokenizer.c has the unit tests that need none.
 *
 *   - split + serialized + merged counting gives the same vocabulary as one
 *     state, for every kind
 *   - rows round trip (info + pieces + merges -> tfm_tok_load)
 *   - decode(encode(x)) == x for byte and bpe on every row of the corpora in
 *     shared/data (and char on Moby Dick); random bytes through every kind
 *   - GPT-2 parity: ids equal to those of the npm package gpt-3-encoder on
 *     the texts of test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz
 *
 * Environment: TFM_SHARED_DATA (default: shared/data beside the checkout,
 * found from the working directory or TFM_TEST_DATA; corpus tests are
 * skipped when absent), TFM_TOK_DATA (default test/fixtures/tokenizer), TFM_TEST_QUICK=1 (small subsets, for valgrind),
 * TFM_TOK_BENCH=1 (timings: bpe 8k/32k on sotu, encode MB/s).
 * Exits non-zero on any failure; the last line is "N passed, M failed".
 */
#include "tokenizer_helpers.h"

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
	printf("tokenizer tests on the corpora (Unicode %s tables)%s\n", tfm_tok_unicode_version_str(),
		   quick ? ", quick mode" : "");
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
	printf("test_tokenizer_corpus: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? EXIT_FAILURE : EXIT_SUCCESS;
}
