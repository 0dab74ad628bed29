/*
 * test_tok_unigram.c — SentencePiece Unigram tokenizers (tok_unigram.c,
 * tok_unigram_norm.c, tok_precompiled.c) against the real SentencePiece:
 * two models trained by spm_train and converted to tokenizer.json by
 * test/reference/make_unigram_tokenizers.py (uni_nfkc: nmt_nfkc's
 * precompiled charsmap, unknown characters -> <unk>; uni_bytes: the same
 * normalizer with byte_fallback).  For the mixed texts of NAME.cases.tsv
 * and the corpus lines of ref_ids.tsv.gz (read from the shared corpora when
 * present) the ids must be SentencePiece's exactly and decode must give
 * SentencePiece's decode (where no <unk> is among the ids: SentencePiece
 * writes " ⁇ ", tfm U+FFFD).  Then the stored model data round trip, the
 * offsets, and hostile input: damaged charsmaps and model data, random
 * bytes, which must fail cleanly or encode without a crash.
 */
#include "check.h"
#include "../src/core/tokenizer/unigram/tok_unigram_model.h"

#define SP "\xE2\x96\x81"

typedef struct model
{
	uint8_t   **pieces;
	size_t	   *lens;
	double	   *scores;
	uint8_t    *control;
	int32_t		n;
	uint8_t    *charsmap;
	size_t		charsmap_len;
	int			byte_fallback;
	int			t5;				/* uni_t5: T5's ids and tokenizer.json shape */
} model;

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static uint8_t *
unhex(const char *h, size_t *len, const char **end)
{
	size_t		n = 0,
				cap = strcspn(h, "\t\n") / 2 + 1;
	uint8_t    *out = malloc(cap);

	while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0)
	{
		out[n++] = (uint8_t) (hexval(h[0]) * 16 + hexval(h[1]));
		h += 2;
	}
	*len = n;
	if (end)
		*end = h;
	return out;
}

static const char *
dir_of(void)
{
	static char d[1024];
	const char *td = getenv("TFM_TEST_DATA");
	FILE	   *f;

	snprintf(d, sizeof(d), "test/fixtures/tokenizer/unigram");
	snprintf(d + strlen(d), sizeof(d) - strlen(d), "/uni_nfkc.cases.tsv");
	if ((f = fopen(d, "r")) != NULL)
	{
		fclose(f);
		snprintf(d, sizeof(d), "test/fixtures/tokenizer/unigram");
		return d;
	}
	snprintf(d, sizeof(d), "%s/../tokenizer/unigram", td ? td : ".");
	return d;
}

static int
load_model(model *m, const char *name)
{
	char		path[1200];
	size_t		len;
	char	   *buf,
			   *line,
			   *save = NULL;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s/%s.model.tsv.gz", dir_of(), name);
	if (!(buf = check_read_gz(path, &len)))
		return -1;
	m->pieces = calloc(1 << 16, sizeof(uint8_t *));
	m->lens = calloc(1 << 16, sizeof(size_t));
	m->scores = calloc(1 << 16, sizeof(double));
	m->control = calloc(1 << 16, 1);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		const char *end;

		if (line[0] == 'V' && m->n < (1 << 16))
		{
			m->pieces[m->n] = unhex(line + 2, &m->lens[m->n], &end);
			m->scores[m->n] = strtod(end + 1, (char **) &end);
			m->control[m->n] = (uint8_t) atoi(end + 1);
			m->n++;
		}
		else if (line[0] == 'C')
			m->charsmap = unhex(line + 2, &m->charsmap_len, NULL);
		else if (line[0] == 'B')
			m->byte_fallback = atoi(line + 2);
	}
	free(buf);
	return 0;
}

static void
free_model(model *m)
{
	for (int32_t i = 0; i < m->n; i++)
		free(m->pieces[i]);
	free(m->pieces);
	free(m->lens);
	free(m->scores);
	free(m->control);
	free(m->charsmap);
}

/* what the converter writes: Sequence[Precompiled, Strip(right), Replace(" {2,}" -> "▁")],
 * Metaspace(always, split); the decoder Metaspace, or Llama's with byte_fallback.
 * T5's shape: Precompiled; Sequence[WhitespaceSplit, Metaspace]; "$A </s>" */
static void
spec_of(tfm_tok_unigram_spec *s, const model *m, const uint8_t *charsmap, size_t charsmap_len)
{
	memset(s, 0, sizeof(*s));
	s->scores = m->scores;
	s->control = m->control;
	s->unk_id = m->t5 ? 2 : 0;
	s->byte_fallback = m->byte_fallback;
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		s->special_ids[k] = -1;
	s->special_ids[TFM_TOK_UNK] = s->unk_id;
	s->special_ids[TFM_TOK_BOS] = m->t5 ? -1 : 1;
	s->special_ids[TFM_TOK_EOS] = m->t5 ? 1 : 2;
	s->special_ids[TFM_TOK_PAD] = m->t5 ? 0 : -1;
	s->steps[0].kind = TFM_TOK_NORM_PRECOMPILED;
	s->steps[0].a = charsmap;
	s->steps[0].a_len = charsmap_len;
	s->steps[1].kind = TFM_TOK_NORM_STRIP;
	s->steps[1].right = 1;
	s->steps[2].kind = TFM_TOK_NORM_REPLACE_SPACES;
	s->steps[2].b = (const uint8_t *) SP;
	s->steps[2].b_len = 3;
	s->n_steps = 3;
	s->pretok = TFM_TOK_PRETOK_METASPACE | TFM_TOK_PRETOK_METASPACE_SPLIT;
	s->prepend = TFM_TOK_PREPEND_ALWAYS;
	s->replacement = (const uint8_t *) SP;
	s->replacement_len = 3;
	s->decoder = TFM_TOK_UDEC_REPLACE | TFM_TOK_UDEC_STRIP_FIRST |
		(m->byte_fallback ? TFM_TOK_UDEC_BYTE_FALLBACK : 0);
	if (m->t5)
	{
		s->n_steps = 1;
		s->pretok |= TFM_TOK_PRETOK_WHITESPACE_SPLIT;
		s->info_flags = TFM_TOK_INFO_TEXT_EOS;
	}
}

static int32_t *
parse_ids(const char *s, size_t *n)
{
	int32_t    *ids = malloc(sizeof(int32_t) * (strlen(s) / 2 + 2));
	char	   *end;

	*n = 0;
	while (*s && *s != '\t' && *s != '\n')
	{
		long		v = strtol(s, &end, 10);

		if (end == s)
			break;
		ids[(*n)++] = (int32_t) v;
		s = end;
		while (*s == ' ')
			s++;
	}
	return ids;
}

/* encodes text and compares with want (and decode with dec, unless an unk is in want) */
static int
check_text(tfm_tokenizer *t, const char *text, size_t len, const int32_t *want, size_t nw,
		   const uint8_t *dec, size_t dec_len, const char *what)
{
	tfm_tok_info info;
	uint32_t	flags;
	size_t		cap,
				n = 0,
				i,
				out_len = 0;
	int32_t    *ids;
	size_t	   *offs;
	tfm_status	err;
	int			ok,
				has_unk = 0;
	char	   *out;

	/* T5's text ends with </s> (its post-processor): what the model reads */
	tfm_tok_get_info(&info, t);
	flags = (info.flags & TFM_TOK_INFO_TEXT_EOS) ? TFM_TOK_ADD_EOS : 0;
	cap = tfm_tok_encode_bound_text(t, text, len, flags);
	ids = malloc(sizeof(int32_t) * (cap + 1));
	offs = malloc(sizeof(size_t) * (cap + 1));

	ok = tfm_tok_encode(ids, offs, cap, &n, t, text, len, flags, 0, &err) == TFM_OK;
	CHECK(ok, "%s: encode failed: %s", what, err.msg);
	ok = ok && n == nw && memcmp(ids, want, n * sizeof(int32_t)) == 0;
	if (!ok)
	{
		CHECK(0, "%s: %zu ids, want %zu", what, n, nw);
		for (i = 0; i < n && i < 40; i++)
			fprintf(stderr, "%d%s", ids[i], i + 1 < n ? " " : "\n");
		for (i = 0; i < nw && i < 40; i++)
			fprintf(stderr, "%d%s", want[i], i + 1 < nw ? " " : "\n");
	}
	for (i = 0; i < n; i++)
	{
		CHECK(offs[i] <= len && (i == 0 || offs[i] >= offs[i - 1]), "%s: offset %zu", what, i);
		has_unk |= ids[i] == info.special_ids[TFM_TOK_UNK];
	}
	if (ok && !has_unk && dec)
	{
		out = malloc(tfm_tok_decode_bound(t, n, 0) + 1);
		CHECK(tfm_tok_decode(out, tfm_tok_decode_bound(t, n, 0), &out_len, t, ids, n, 0, &err) == TFM_OK,
			  "%s: decode: %s", what, err.msg);
		CHECK(out_len == dec_len && memcmp(out, dec, dec_len) == 0,
			  "%s: decode gives \"%.*s\", SentencePiece \"%.*s\"", what, (int) out_len, out,
			  (int) dec_len, dec);
		free(out);
	}
	free(ids);
	free(offs);
	return ok;
}

static int
run_cases(tfm_tokenizer *t, const char *name)
{
	char		path[1200],
				line[1 << 16];
	FILE	   *f;
	int			n = 0,
				good = 0;

	snprintf(path, sizeof(path), "%s/%s.cases.tsv", dir_of(), name);
	f = fopen(path, "r");
	CHECK(f != NULL, "cannot open %s", path);
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
	{
		const char *p;
		size_t		tl,
					nw,
					dl;
		uint8_t    *text = unhex(line + 2, &tl, &p),
				   *dec;
		int32_t    *want = parse_ids(p + 1, &nw);
		char		what[64];

		p = strchr(p + 1, '\t');
		dec = unhex(p ? p + 1 : "", &dl, NULL);
		snprintf(what, sizeof(what), "%s case %d", name, n + 1);
		good += check_text(t, (const char *) text, tl, want, nw, dec, dl, what);
		n++;
		free(text);
		free(want);
		free(dec);
	}
	fclose(f);
	CHECK(n >= 10, "%s: only %d cases", name, n);
	return good;
}

/* ---- the shared corpora's lines ------------------------------------------- */
typedef struct corpus
{
	char	   *buf;
	char	  **line;		/* data lines (after the header) */
	int			n;
} corpus;

static int
load_corpus(corpus *c, const char *file)
{
	const char *cands[3] = {getenv("TFM_SHARED_DATA"), "../shared/data", "/work/shared/data"};
	char		path[1200];
	size_t		len;
	char	   *p;

	memset(c, 0, sizeof(*c));
	for (int k = 0; k < 3 && !c->buf; k++)
		if (cands[k])
		{
			snprintf(path, sizeof(path), "%s/%s", cands[k], file);
			c->buf = check_read_gz(path, &len);
		}
	if (!c->buf)
		return -1;
	c->line = malloc(sizeof(char *) * (len / 2 + 2));
	p = strchr(c->buf, '\n');
	while (p && p[1])
	{
		char	   *e = strchr(p + 1, '\n');

		c->line[c->n++] = p + 1;
		if (e)
			*e = '\0';
		p = e;
	}
	return 0;
}

/* field f of a tab-separated line, as (pointer, length) */
static const char *
field(const char *line, int f, size_t *len)
{
	while (f-- > 0 && line)
	{
		line = strchr(line, '\t');
		if (line)
			line++;
	}
	if (!line)
	{
		*len = 0;
		return "";
	}
	*len = strcspn(line, "\t");
	return line;
}

static void
run_corpora(tfm_tokenizer *t[3], const char *names[3])
{
	char		path[1200];
	size_t		len;
	char	   *ref,
			   *line,
			   *save = NULL;
	corpus		rt,
				ef;
	int			lines = 0,
				good = 0;

	if (load_corpus(&rt, "rt_polarity_test.tsv.gz") || load_corpus(&ef, "eng_fra_test.tsv.gz"))
	{
		printf("shared corpora not found: corpus checks skipped\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/ref_ids.tsv.gz", dir_of());
	ref = check_read_gz(path, &len);
	CHECK(ref != NULL, "cannot read %s", path);
	if (!ref)
		return;
	for (line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		size_t		ml,
					cl,
					rl,
					fl,
					il,
					dl,
					tl,
					nw,
					decl = 0;
		const char *mn = field(line, 0, &ml),
				   *cn = field(line, 1, &cl),
				   *ids = field(line, 4, &il),
				   *dec = field(line, 5, &dl),
				   *text;
		int			row = atoi(field(line, 2, &rl)),
					fld = atoi(field(line, 3, &fl)),
					k = 0;
		corpus	   *c = cl >= 3 && memcmp(cn, "rt_", 3) == 0 ? &rt : &ef;
		int32_t    *want;
		uint8_t    *d;
		char		what[96];

		while (k < 2 && !(ml == strlen(names[k]) && memcmp(mn, names[k], ml) == 0))
			k++;
		if (row < 0 || row >= c->n)
		{
			CHECK(0, "row %d outside the corpus", row);
			continue;
		}
		text = field(c->line[row], fld, &tl);
		want = parse_ids(ids, &nw);
		if (dl == 1 && dec[0] == '=')
		{
			d = malloc(tl + 1);
			memcpy(d, text, tl);
			decl = tl;
		}
		else
			d = unhex(dec, &decl, NULL);
		snprintf(what, sizeof(what), "%s %.*s row %d field %d", names[k], (int) cl, cn, row, fld);
		good += check_text(t[k], text, tl, want, nw, d, decl, what);
		lines++;
		free(want);
		free(d);
	}
	printf("corpus lines: %d of %d id for id with SentencePiece\n", good, lines);
	CHECK(lines >= 14000, "only %d corpus lines", lines);
	free(ref);
	free(rt.buf);
	free(rt.line);
	free(ef.buf);
	free(ef.line);
}

/* ---- stored model data and hostile input ---------------------------------- */
static tfm_tokenizer *
reload(const tfm_tokenizer *t)
{
	tfm_tok_info info;
	size_t		dl = tfm_tok_model_data_size(t);
	uint8_t    *data = malloc(dl);
	const uint8_t **pieces;
	size_t	   *lens;
	tfm_tokenizer *r = NULL;
	tfm_status	err;

	tfm_tok_get_info(&info, t);
	pieces = malloc(sizeof(*pieces) * info.vocab_size);
	lens = malloc(sizeof(size_t) * info.vocab_size);
	for (int32_t i = 0; i < info.vocab_size; i++)
		tfm_tok_piece(&pieces[i], &lens[i], t, i, &err);
	CHECK(tfm_tok_model_data(data, dl, t, &err) == TFM_OK, "model data: %s", err.msg);
	CHECK(tfm_tok_load(&r, &info, pieces, lens, NULL, NULL, &err) == TFM_EFORMAT,
		  "a unigram tokenizer without its data must be refused");
	CHECK(tfm_tok_load_unigram(&r, &info, pieces, lens, data, dl, &err) == TFM_OK,
		  "reload: %s", err.msg);
	/* every truncation and many single-byte changes fail cleanly or load */
	for (size_t cut = 0; cut < dl; cut += 1 + cut / 7)
	{
		tfm_tokenizer *x = NULL;
		int			st = tfm_tok_load_unigram(&x, &info, pieces, lens, data, cut, &err);

		CHECK(st == TFM_EFORMAT || st == TFM_ELIMIT, "data cut at %zu: status %d", cut, st);
		tfm_tok_free(x);
	}
	srand(7);
	for (int k = 0; k < 300; k++)
	{
		uint8_t    *bad = malloc(dl);
		tfm_tokenizer *x = NULL;
		size_t		pos = (size_t) rand() % (dl < 4096 ? dl : 4096);

		memcpy(bad, data, dl);
		bad[pos] ^= (uint8_t) (1 + rand() % 255);
		if (tfm_tok_load_unigram(&x, &info, pieces, lens, bad, dl, &err) == TFM_OK)
		{
			const char *txt = "hostile   ＡＢＣ text é 東京 \xff\xfe end";
			size_t		cap = tfm_tok_encode_bound_text(x, txt, strlen(txt), 0),
						n;
			int32_t    *ids = malloc(sizeof(int32_t) * (cap == SIZE_MAX ? 1 : cap + 1));

			if (cap != SIZE_MAX)
				(void) tfm_tok_encode(ids, NULL, cap, &n, x, txt, strlen(txt), 0, 0, &err);
			free(ids);
		}
		tfm_tok_free(x);
		free(bad);
	}
	free(data);
	free(pieces);
	free(lens);
	return r;
}

static void
hostile_charsmaps(const model *m)
{
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL;
	tfm_status	err;
	uint8_t    *cm = malloc(m->charsmap_len);
	const char *txt = "ＡＢＣ ½ ① ﬁ é naïve 東京 \xff end";

	/* a size beyond the blob, a size not a multiple of 4, too short */
	memcpy(cm, m->charsmap, m->charsmap_len);
	cm[3] = 0x7f;
	spec_of(&s, m, cm, m->charsmap_len);
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_EFORMAT,
		  "a trie size beyond the charsmap must be refused");
	spec_of(&s, m, cm, 3);
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_EFORMAT,
		  "a charsmap shorter than its header must be refused");
	/* random damage inside the trie and the strings: no read outside the blob */
	srand(11);
	for (int k = 0; k < 200; k++)
	{
		memcpy(cm, m->charsmap, m->charsmap_len);
		for (int j = 0; j < 64; j++)
			cm[4 + (size_t) rand() % (m->charsmap_len - 4)] = (uint8_t) rand();
		spec_of(&s, m, cm, m->charsmap_len);
		if (tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_OK)
		{
			size_t		cap = tfm_tok_encode_bound_text(t, txt, strlen(txt), 0),
						n;
			int32_t    *ids = malloc(sizeof(int32_t) * (cap + 1));

			CHECK(cap != SIZE_MAX, "a damaged map still normalizes");
			CHECK(tfm_tok_encode(ids, NULL, cap, &n, t, txt, strlen(txt), 0, 0, &err) == TFM_OK,
				  "encode with a damaged map: %s", err.msg);
			free(ids);
			tfm_tok_free(t);
			t = NULL;
		}
	}
	free(cm);
}

static void
random_bytes(tfm_tokenizer *t)
{
	uint8_t		buf[512];
	int32_t		ids[4096];
	size_t		offs[4096];
	tfm_status	err;

	srand(3);
	for (int k = 0; k < 500; k++)
	{
		size_t		len = (size_t) rand() % sizeof(buf),
					n,
					cap;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t) (k % 2 ? rand() : " a\xe2\x96\x81\xc3\xa9\t"[rand() % 7]);
		cap = tfm_tok_encode_bound_text(t, (const char *) buf, len, 0);
		CHECK(cap <= 4096, "bound %zu", cap);
		CHECK(tfm_tok_encode(ids, offs, cap, &n, t, (const char *) buf, len, 0, 0, &err) == TFM_OK,
			  "random bytes: %s", err.msg);
		for (size_t i = 0; i < n; i++)
			CHECK(ids[i] >= 0 && ids[i] < 2000 && offs[i] <= len, "random bytes: id %d", ids[i]);
	}
}

static void
spot_checks(tfm_tokenizer *nfkc, tfm_tokenizer *bytes)
{
	int32_t		ids[64];
	size_t		n,
				out_len;
	char		out[256];
	tfm_status	err;
	tfm_tok_info info;

	tfm_tok_get_info(&info, nfkc);
	CHECK(info.kind == TFM_TOK_UNIGRAM && info.vocab_size == 2003, "kind %d, %d ids",
		  (int) info.kind, (int) info.vocab_size);
	CHECK(info.special_ids[TFM_TOK_UNK] == 0 && info.special_ids[TFM_TOK_BOS] == 1 &&
		  info.special_ids[TFM_TOK_EOS] == 2 && info.special_ids[TFM_TOK_PAD] == 2000,
		  "specials: the file's <unk>, <s>, </s>; tfm's <pad> after them");
	CHECK(strcmp(tfm_tok_kind_name(TFM_TOK_UNIGRAM), "unigram") == 0, "kind name");
	/* "東京" is one fused <unk>; bos / eos around */
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, nfkc, "東京", 6, TFM_TOK_ADD_BOS | TFM_TOK_ADD_EOS, 0, &err) == TFM_OK &&
		  n == 4 && ids[0] == 1 && ids[2] == 0 && ids[3] == 2, "東京: <s> ▁ <unk> </s>");
	/* decode: <unk> as U+FFFD, the specials by name when asked, a continuation keeps its space */
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, nfkc, ids, n, 0, &err) == TFM_OK &&
		  out_len == 3 && memcmp(out, "\xEF\xBF\xBD", 3) == 0, "decode of <unk>");
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, nfkc, ids, n, TFM_TOK_DECODE_SPECIALS, &err) == TFM_OK &&
		  out_len == 13 && memcmp(out, "<s> <unk></s>", 13) == 0, "decode with specials: %.*s",
		  (int) out_len, out);
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, bytes, "a b", 3, 0, 0, &err) == TFM_OK &&
		  tfm_tok_decode(out, sizeof(out), &out_len, bytes, ids, n, TFM_TOK_DECODE_CONTINUE, &err) == TFM_OK &&
		  out_len == 4 && memcmp(out, " a b", 4) == 0, "continuation keeps the space");
	/* byte pieces: U+FFFD for each byte not in a valid character, as sentencepiece */
	ids[0] = 3 + 0xE6;
	ids[1] = 3 + 0x41;
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, bytes, ids, 2, 0, &err) == TFM_OK &&
		  out_len == 4 && memcmp(out, "\xEF\xBF\xBD" "A", 4) == 0, "<0xE6><0x41> -> U+FFFD A");
	ids[0] = 3 + 0xE6;
	ids[1] = 3 + 0x9D;
	ids[2] = 3 + 0xB1;
	ids[3] = 3 + 0xE6;
	ids[4] = 3 + 0x9D;
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, bytes, ids, 5, 0, &err) == TFM_OK &&
		  out_len == 9 && memcmp(out, "\xE6\x9D\xB1\xEF\xBF\xBD\xEF\xBF\xBD", 9) == 0,
		  "<0xE6><0x9D><0xB1><0xE6><0x9D> -> 東 U+FFFD U+FFFD");
	ids[0] = 99999;
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, bytes, ids, 1, 0, &err) == TFM_ERANGE,
		  "an id out of range");
	/* text that spells a special or a byte piece is plain text */
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, bytes, "<0x41>", 6, 0, 0, &err) == TFM_OK && n > 1,
		  "<0x41> in text is not the byte piece");
}

static void
bad_specs(const model *m)
{
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL;
	tfm_status	err;

	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.unk_id = 5;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_EFORMAT,
		  "unk_id that is not the unk special");
	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.n_steps = TFM_TOK_UNI_MAX_NORMALIZERS + 1;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_ELIMIT,
		  "too many normalizers");
	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.replacement = (const uint8_t *) "ab";
	s.replacement_len = 2;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_EFORMAT,
		  "a replacement of two characters");
	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.steps[1].kind = (tfm_tok_norm_kind) 99;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_EFORMAT,
		  "an unknown normalizer");
	CHECK(t == NULL, "nothing built");
}

/* T5's shape: <pad> 0, </s> 1, <unk> 2, tfm's <bos> after the extra ids,
 * which are never matched in text and decode to nothing */
static void
t5_checks(tfm_tokenizer *t)
{
	tfm_tok_info info;
	int32_t		ids[64];
	size_t		n,
				out_len;
	char		out[64];
	tfm_status	err;
	int32_t		extra0 = tfm_tok_piece_id(t, (const uint8_t *) "<extra_id_0>", 12);

	tfm_tok_get_info(&info, t);
	CHECK(info.special_ids[TFM_TOK_PAD] == 0 && info.special_ids[TFM_TOK_EOS] == 1 &&
		  info.special_ids[TFM_TOK_UNK] == 2 && info.special_ids[TFM_TOK_BOS] == 1010 &&
		  info.vocab_size == 1013 && (info.flags & TFM_TOK_INFO_TEXT_EOS),
		  "T5's specials and text-eos flag");
	CHECK(extra0 == 1009, "<extra_id_0> is the last of the file's ids (%d)", (int) extra0);
	CHECK(tfm_tok_encode(ids, NULL, 64, &n, t, "<extra_id_0>", 12, 0, 0, &err) == TFM_OK && n > 1,
		  "<extra_id_0> in text is plain text");
	ids[0] = extra0;
	ids[1] = 1;
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, t, ids, 2, 0, &err) == TFM_OK && out_len == 0,
		  "extra ids and </s> decode to nothing");
	CHECK(tfm_tok_decode(out, sizeof(out), &out_len, t, ids, 2, TFM_TOK_DECODE_SPECIALS, &err) == TFM_OK &&
		  out_len == 16 && memcmp(out, "<extra_id_0></s>", 16) == 0, "with specials: %.*s",
		  (int) out_len, out);
}

/* ALBERT's and XLNet's normalizers (Replace "``" and "''", NFKD,
 * StripAccents, Lowercase) before the converter's, on uni_nfkc's pieces:
 * SentencePiece's ids for the texts normalised so (make_unigram_albert.py),
 * the same after a reload of the stored image, and random bytes */
static void
albert_checks(const model *m)
{
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL,
			   *r;
	tfm_status	err;
	int			good;

	spec_of(&s, m, m->charsmap, m->charsmap_len);
	memmove(&s.steps[5], &s.steps[0], sizeof(s.steps[0]) * s.n_steps);
	memset(&s.steps[0], 0, sizeof(s.steps[0]) * 5);
	s.steps[0].kind = s.steps[1].kind = TFM_TOK_NORM_REPLACE;
	s.steps[0].a = (const uint8_t *) "``";
	s.steps[1].a = (const uint8_t *) "''";
	s.steps[0].a_len = s.steps[1].a_len = 2;
	s.steps[0].b = s.steps[1].b = (const uint8_t *) "\"";
	s.steps[0].b_len = s.steps[1].b_len = 1;
	s.steps[2].kind = TFM_TOK_NORM_NFKD;
	s.steps[3].kind = TFM_TOK_NORM_STRIP_ACCENTS;
	s.steps[4].kind = TFM_TOK_NORM_LOWERCASE;
	s.n_steps += 5;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) == TFM_OK,
		  "uni_albert: %s", err.msg);
	if (!t)
		return;
	good = run_cases(t, "uni_albert");
	printf("uni_albert: %d texts id for id\n", good);
	r = reload(t);
	CHECK(r != NULL, "uni_albert: no reload");
	if (r)
		CHECK(run_cases(r, "uni_albert") == good, "uni_albert: the reloaded tokenizer differs");
	tfm_tok_free(r);
	random_bytes(t);
	/* a step kind past the last is refused */
	s.steps[2].kind = (tfm_tok_norm_kind) (TFM_TOK_NORM_STRIP_ACCENTS + 1);
	tfm_tok_free(t);
	t = NULL;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) ==
		  TFM_EFORMAT && t == NULL, "an unknown normalizer kind is refused");
}

/* T5's specials found in text as Hugging Face finds them
 * (make_unigram_specials.py), the same after a reload; the flag off, they
 * stay plain text (t5_checks) */
static void
specials_checks(const model *m)
{
	const char *name = "uni_t5_specials";
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL,
			   *r;
	tfm_status	err;
	int			good;

	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.info_flags |= TFM_TOK_INFO_SPECIALS_IN_TEXT;
	CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) ==
		  TFM_OK, "%s: %s", name, err.msg);
	if (!t)
		return;
	good = run_cases(t, name);
	printf("%s: %d texts id for id\n", name, good);
	r = reload(t);
	CHECK(r != NULL && run_cases(r, name) == good, "%s: the reloaded tokenizer differs", name);
	tfm_tok_free(r);
	random_bytes(t);
	tfm_tok_free(t);
}

/* the ids of text (no specials in it) */
static size_t
ids_of(int32_t *ids, tfm_tokenizer *t, const char *text)
{
	size_t		n = 0;
	tfm_status	err;

	if (tfm_tok_encode(ids, NULL, 64, &n, t, text, strlen(text), 0, 0, &err) != TFM_OK)
		return 0;
	return n;
}

/* lstrip / rstrip where White_Space matters: uni_nfkc's pipeline without
 * its Strip step, "</s>" special; "Hello </s>  world" is "▁Hello", "▁",
 * </s>, "▁world" plain, and the "▁" is gone when </s> takes the spaces */
static void
strip_checks(const model *m)
{
	for (int strip = 0; strip <= 1; strip++)
	{
		tfm_tok_unigram_spec s;
		tfm_tokenizer *t = NULL;
		tfm_status	err;
		uint8_t    *control = malloc((size_t) m->n);
		int32_t		got[64],
					want[64],
					part[64];
		size_t		n = 0,
					nw = 0,
					np;

		spec_of(&s, m, m->charsmap, m->charsmap_len);
		s.steps[1] = s.steps[2];	/* Precompiled, Replace: no Strip */
		s.n_steps = 2;
		s.info_flags |= TFM_TOK_INFO_SPECIALS_IN_TEXT;
		for (int32_t i = 0; i < m->n; i++)
			control[i] = m->control[i] ? TFM_TOK_UNI_SPECIAL : 0;
		control[2] |= strip ? (TFM_TOK_UNI_LSTRIP | TFM_TOK_UNI_RSTRIP) : 0;
		s.control = control;
		CHECK(tfm_tok_import_unigram(&t, (const uint8_t *const *) m->pieces, m->lens, m->n, &s, &err) ==
			  TFM_OK, "strip %d: %s", strip, err.msg);
		free(control);
		if (!t)
			continue;
		np = ids_of(part, t, "Hello");
		memcpy(want, part, np * sizeof(int32_t));
		nw = np;
		if (!strip)
			want[nw++] = tfm_tok_piece_id(t, (const uint8_t *) SP, 3);
		want[nw++] = 2;
		np = ids_of(part, t, "world");
		memcpy(want + nw, part, np * sizeof(int32_t));
		nw += np;
		CHECK(tfm_tok_encode(got, NULL, 64, &n, t, "Hello </s>  world", 17, 0, 0, &err) == TFM_OK &&
			  n == nw && memcmp(got, want, n * sizeof(int32_t)) == 0 && want[0] != want[1],
			  "strip %d: %zu ids, want %zu", strip, n, nw);
		tfm_tok_free(t);
	}
}

/* Marian's language codes on uni_nfkc with one more piece ">>fra<<" that
 * the model never matches (make_unigram_specials.py), and a reload */
static void
codes_checks(const model *m)
{
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL,
			   *r;
	tfm_status	err;
	int32_t		n = m->n + 1;
	const uint8_t **pieces = malloc(sizeof(uint8_t *) * (size_t) n);
	size_t	   *lens = malloc(sizeof(size_t) * (size_t) n);
	double	   *scores = malloc(sizeof(double) * (size_t) n);
	uint8_t    *control = malloc((size_t) n);
	int			good;

	memcpy(pieces, m->pieces, sizeof(uint8_t *) * (size_t) m->n);
	memcpy(lens, m->lens, sizeof(size_t) * (size_t) m->n);
	memcpy(scores, m->scores, sizeof(double) * (size_t) m->n);
	memcpy(control, m->control, (size_t) m->n);
	pieces[m->n] = (const uint8_t *) ">>fra<<";
	lens[m->n] = 7;
	scores[m->n] = 0;
	control[m->n] = TFM_TOK_UNI_SPECIAL;
	spec_of(&s, m, m->charsmap, m->charsmap_len);
	s.scores = scores;
	s.control = control;
	s.info_flags |= TFM_TOK_INFO_LANG_CODES;
	CHECK(tfm_tok_import_unigram(&t, pieces, lens, n, &s, &err) == TFM_OK, "uni_nfkc_codes: %s", err.msg);
	if (t)
	{
		good = run_cases(t, "uni_nfkc_codes");
		printf("uni_nfkc_codes: %d texts id for id\n", good);
		r = reload(t);
		CHECK(r != NULL && run_cases(r, "uni_nfkc_codes") == good, "uni_nfkc_codes: the reloaded tokenizer differs");
		tfm_tok_free(r);
		random_bytes(t);
		tfm_tok_free(t);
	}
	/* the two flags exclude each other */
	t = NULL;
	s.info_flags |= TFM_TOK_INFO_SPECIALS_IN_TEXT;
	CHECK(tfm_tok_import_unigram(&t, pieces, lens, n, &s, &err) == TFM_EFORMAT && !t,
		  "specials-in-text with language codes is refused");
	free(pieces);
	free(lens);
	free(scores);
	free(control);
}

int
main(void)
{
	const char *names[3] = {"uni_nfkc", "uni_bytes", "uni_t5"};
	model		m[3];
	tfm_tokenizer *t[3] = {NULL, NULL, NULL},
			   *r;
	tfm_status	err;

	for (int k = 0; k < 3; k++)
	{
		tfm_tok_unigram_spec s;
		int			good;

		CHECK(load_model(&m[k], names[k]) == 0, "cannot read %s.model.tsv.gz", names[k]);
		if (m[k].n == 0)
			return check_summary("test_tok_unigram");
		m[k].t5 = k == 2;
		spec_of(&s, &m[k], m[k].charsmap, m[k].charsmap_len);
		CHECK(tfm_tok_import_unigram(&t[k], (const uint8_t *const *) m[k].pieces, m[k].lens, m[k].n,
									 &s, &err) == TFM_OK, "%s: %s", names[k], err.msg);
		if (!t[k])
			return check_summary("test_tok_unigram");
		good = run_cases(t[k], names[k]);
		printf("%s: %d mixed texts id for id\n", names[k], good);
		r = reload(t[k]);
		if (r)
			CHECK(run_cases(r, names[k]) == good, "%s: the reloaded tokenizer differs", names[k]);
		tfm_tok_free(r);
	}
	run_corpora(t, names);
	spot_checks(t[0], t[1]);
	hostile_charsmaps(&m[0]);
	random_bytes(t[0]);
	random_bytes(t[1]);
	bad_specs(&m[0]);
	t5_checks(t[2]);
	albert_checks(&m[0]);
	specials_checks(&m[2]);
	strip_checks(&m[0]);
	codes_checks(&m[0]);
	for (int k = 0; k < 3; k++)
	{
		tfm_tok_free(t[k]);
		free_model(&m[k]);
	}
	return check_summary("test_tok_unigram");
}
