/*
 * test_tok_hf.c — byte-level BPE of Hugging Face tokenizer.json files
 * (tok_hf.c, the HF_BPE flag and its pre-tokenizer options) against the ids
 * of test/reference/make_hf_bpe_tokenizers.py, read from
 * test/fixtures/tokenizer/hf/NAME.cases.tsv: RoBERTa's ByteLevel (with and without
 * add_prefix_space), Llama 3's Split pattern with ignore_merges, SmolLM's
 * Digits + ByteLevel, each by tfm's scanners and again by PCRE2
 * (tok_split_pcre.c); Qwen2's (with NFC), GPT-4o's and DeepSeek-V3's
 * patterns and every Split behavior, by PCRE2.  Every text's ids must be the reference's exactly,
 * decode must give the text back, and the specials must be the file's
 * where it names them.  Then hand-checked pre-token boundaries of the
 * Llama 3 pattern, and random bytes that must encode and decode back.
 */
#include "check.h"
#include "../src/core/tokenizer/tok_internal.h"

typedef struct hfcase
{
	uint8_t   **pieces;
	size_t	   *lens;
	int32_t		n;
	int32_t    *merges;
	int32_t		n_merges;
	char	  **texts;
	size_t	   *text_lens;
	int32_t   **ids;
	size_t	   *n_ids;
	int			n_texts;
	char	   *rules[TFM_TOK_MAX_SPLITS];	/* the Split steps on PCRE2 (S lines) */
	size_t		rule_lens[TFM_TOK_MAX_SPLITS];
	tfm_tok_split_behavior behaviors[TFM_TOK_MAX_SPLITS];
	int			inverts[TFM_TOK_MAX_SPLITS];
	int			n_rules;
	int			nfc;			/* an N line: the text is put in NFC */
} hfcase;

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static uint8_t *
unhex(const char *h, size_t *len)
{
	size_t		n = 0;
	uint8_t    *out = malloc(strlen(h) / 2 + 1);

	while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0)
	{
		out[n++] = (uint8_t) (hexval(h[0]) * 16 + hexval(h[1]));
		h += 2;
	}
	*len = n;
	return out;
}

static int
load(hfcase *f, const char *name)
{
	char		path[256],
				line[65536];
	FILE	   *fp;

	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "test/fixtures/tokenizer/hf/%s.cases.tsv", name);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	f->pieces = calloc(4096, sizeof(uint8_t *));
	f->lens = calloc(4096, sizeof(size_t));
	f->merges = calloc(8192, sizeof(int32_t));
	f->texts = calloc(256, sizeof(char *));
	f->text_lens = calloc(256, sizeof(size_t));
	f->ids = calloc(256, sizeof(int32_t *));
	f->n_ids = calloc(256, sizeof(size_t));
	while (fgets(line, sizeof(line), fp))
	{
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'P' && f->n < 4096)
		{
			f->pieces[f->n] = unhex(line + 2, &f->lens[f->n]);
			f->n++;
		}
		else if (line[0] == 'M' && f->n_merges < 4096)
		{
			char	   *p = line + 2;

			f->merges[2 * f->n_merges] = (int32_t) strtol(p, &p, 10);
			f->merges[2 * f->n_merges + 1] = (int32_t) strtol(p, &p, 10);
			f->n_merges++;
		}
		else if (line[0] == 'S' && f->n_rules < TFM_TOK_MAX_SPLITS)
		{
			char	   *b = line + 2,
					   *inv = strchr(b, '\t'),
					   *pat;
			int			k = f->n_rules++;

			*inv++ = '\0';
			pat = strchr(inv, '\t') + 1;
			tfm_tok_split_behavior_parse(&f->behaviors[k], b);
			f->inverts[k] = atoi(inv);
			f->rules[k] = (char *) unhex(pat, &f->rule_lens[k]);
		}
		else if (line[0] == 'N')
			f->nfc = 1;
		else if (line[0] == 'T' && f->n_texts < 256)
		{
			char	   *tab = strchr(line + 2, '\t'),
					   *p;
			int			k = f->n_texts++;

			*tab = '\0';
			f->texts[k] = (char *) unhex(line + 2, &f->text_lens[k]);
			f->ids[k] = calloc(strlen(tab + 1) + 1, sizeof(int32_t));
			for (p = tab + 1; *p;)
			{
				char	   *e;
				long		v = strtol(p, &e, 10);

				if (e == p)
					break;
				f->ids[k][f->n_ids[k]++] = (int32_t) v;
				p = e;
			}
		}
	}
	fclose(fp);
	return 0;
}

static void
unload(hfcase *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->pieces[i]);
	for (int i = 0; i < f->n_texts; i++)
	{
		free(f->texts[i]);
		free(f->ids[i]);
	}
	for (int i = 0; i < f->n_rules; i++)
		free(f->rules[i]);
	free(f->pieces);
	free(f->lens);
	free(f->merges);
	free(f->texts);
	free(f->text_lens);
	free(f->ids);
	free(f->n_ids);
}

/* every text encodes to the reference ids and decodes back */
static void
run(const char *name, uint32_t flags, const int32_t specials[TFM_TOK_N_SPECIALS],
	const int32_t want_specials[TFM_TOK_N_SPECIALS])
{
	hfcase		f;
	tfm_tokenizer *t = NULL;
	tfm_status err;
	uint8_t    *literal;
	int			st,
				ok = 0;

	if (load(&f, name) != 0)
	{
		CHECK(0, "%s: cannot read test/fixtures/tokenizer/hf/%s.cases.tsv", name, name);
		return;
	}
	literal = malloc(f.n);
	memset(literal, 1, f.n);	/* the file holds raw bytes */
	/* with the SPLIT flag: the file's steps on PCRE2 (and its NFC) */
	if (flags & TFM_TOK_INFO_SPLIT)
		flags |= f.nfc ? TFM_TOK_INFO_NFC : 0;
	st = tfm_tok_import_hf_bpe(&t, (const uint8_t *const *) f.pieces, f.lens, literal, f.n,
							   f.merges, f.n_merges, specials, flags, &err);
	free(literal);
	for (int k = 0; st == TFM_OK && (flags & TFM_TOK_INFO_SPLIT) && k < f.n_rules; k++)
		st = tfm_tok_add_split(t, f.rules[k], f.rule_lens[k], f.behaviors[k], f.inverts[k], &err);
	if (st != TFM_OK && t)
	{
		tfm_tok_free(t);
		t = NULL;
	}
	CHECK(st == TFM_OK, "%s: import: %s", name, err.msg);
	if (st != TFM_OK)
	{
		unload(&f);
		return;
	}
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		CHECK(tfm_tok_special_id(t, (tfm_tok_special) k) == want_specials[k],
			  "%s: special %s is id %d, want %d", name, tfm_tok_special_piece((tfm_tok_special) k),
			  tfm_tok_special_id(t, (tfm_tok_special) k), want_specials[k]);
	for (int i = 0; i < f.n_texts; i++)
	{
		size_t		cap = tfm_tok_encode_bound_text(t, f.texts[i], f.text_lens[i], TFM_TOK_ADD_BOS),
					n,
					nd;
		int32_t    *ids = malloc(cap * sizeof(int32_t));
		size_t	   *offs = malloc(cap * sizeof(size_t));
		char	   *back;
		int			same;

		st = tfm_tok_encode(ids, offs, cap, &n, t, f.texts[i], f.text_lens[i], 0, 0, &err);
		same = st == TFM_OK && n == f.n_ids[i] &&
			(n == 0 || memcmp(ids, f.ids[i], n * sizeof(int32_t)) == 0);
		CHECK(same, "%s: text %d (\"%.*s\"): %zu ids, want %zu", name, i + 1,
			  (int) f.text_lens[i], f.texts[i], n, f.n_ids[i]);
		if (!same)
		{
			fprintf(stderr, "  got ");
			for (size_t j = 0; j < n; j++)
				fprintf(stderr, " %d", ids[j]);
			fprintf(stderr, "\n  want");
			for (size_t j = 0; j < f.n_ids[i]; j++)
				fprintf(stderr, " %d", f.ids[i][j]);
			fputc('\n', stderr);
		}
		ok += same;
		/* offsets grow and stay within the text */
		for (size_t j = 0; j < n; j++)
			if (offs[j] > f.text_lens[i] || (j > 0 && offs[j] < offs[j - 1]))
			{
				CHECK(0, "%s: text %d: offset %zu of id %zu", name, i + 1, offs[j], j);
				break;
			}
		back = malloc(tfm_tok_decode_bound(t, n, 0) + 1);
		st = tfm_tok_decode(back, tfm_tok_decode_bound(t, n, 0), &nd, t, ids, n, 0, &err);
		{
			/* with add_prefix_space, decode drops the first space: a text
			 * that began with one comes back without it */
			size_t		skip = (flags & TFM_TOK_INFO_PREFIX_SPACE) && f.text_lens[i] > 0 &&
				f.texts[i][0] == ' ';

			/* NFC and a Removed step change the text: the reference
			 * checked that its ids give NFC(text) without what was removed */
			int			changes = f.nfc;

			for (int k = 0; k < f.n_rules; k++)
				changes |= f.behaviors[k] == TFM_TOK_SPLIT_REMOVED && !f.inverts[k];
			CHECK(st == TFM_OK && (changes || (nd == f.text_lens[i] - skip &&
											   memcmp(back, f.texts[i] + skip, nd) == 0)),
				  "%s: text %d does not decode back (\"%.*s\")", name, i + 1, (int) nd, back);
		}
		/* bos is added when asked */
		st = tfm_tok_encode(ids, NULL, cap, &n, t, f.texts[i], f.text_lens[i], TFM_TOK_ADD_BOS, 0, &err);
		CHECK(st == TFM_OK && n == f.n_ids[i] + 1 && ids[0] == want_specials[TFM_TOK_BOS],
			  "%s: text %d with bos", name, i + 1);
		free(back);
		free(ids);
		free(offs);
	}
	printf("%s: %d of %d texts give the reference ids\n", name, ok, f.n_texts);
	tfm_tok_free(t);
	unload(&f);
}

static void
pretokens(const char *text, const char *want)
{
	const uint8_t *s = (const uint8_t *) text;
	size_t		n = strlen(text),
				pos = 0;
	char		got[512] = "";

	while (pos < n)
	{
		size_t		l = tfm_tok_llama3_next(s + pos, n - pos);

		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%.*s", pos ? "|" : "",
				 (int) l, text + pos);
		pos += l;
	}
	CHECK(strcmp(got, want) == 0, "llama3 pre-tokens of \"%s\": \"%s\", want \"%s\"", text, got,
		  want);
}

int
main(void)
{
	/* RoBERTa: <s> 0, <pad> 1, </s> 2, <unk> 3 are the file's; 561 ids, then <bos>, <eos> */
	int32_t		rob[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, 0, 2};
	int32_t		rob_want[TFM_TOK_N_SPECIALS] = {1, 3, 561, 562, 0, 2};
	/* Llama 3: <|begin_of_text|> is id 561, an added token after model.vocab */
	int32_t		ll[TFM_TOK_N_SPECIALS] = {-1, -1, 561, -1, -1, -1};
	int32_t		ll_want[TFM_TOK_N_SPECIALS] = {564, 565, 561, 566, 567, 568};
	int32_t		sm[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
	int32_t		sm_want[TFM_TOK_N_SPECIALS] = {559, 560, 561, 562, 563, 564};

	run("roberta", 0, rob, rob_want);
	run("roberta_prefix", TFM_TOK_INFO_PREFIX_SPACE, rob, rob_want);
	run("llama3", TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_IGNORE_MERGES | TFM_TOK_INFO_TEXT_BOS, ll,
		ll_want);
	run("smollm", TFM_TOK_INFO_DIGITS, sm, sm_want);

	/* the same files with their steps on PCRE2 instead of the scanners */
	run("roberta", TFM_TOK_INFO_SPLIT, rob, rob_want);
	run("roberta_prefix", TFM_TOK_INFO_PREFIX_SPACE | TFM_TOK_INFO_SPLIT, rob, rob_want);
	run("llama3", TFM_TOK_INFO_SPLIT | TFM_TOK_INFO_IGNORE_MERGES | TFM_TOK_INFO_TEXT_BOS, ll,
		ll_want);
	run("smollm", TFM_TOK_INFO_SPLIT, sm, sm_want);
	/* patterns only PCRE2 runs: Qwen2's (with NFC), GPT-4o's, DeepSeek-V3's
	 * three steps, every behavior and invert; tfm's specials after the ids */
	{
		int32_t		none[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
		int32_t		at376[TFM_TOK_N_SPECIALS] = {376, 377, 378, 379, 380, 381};
		int32_t		at557[TFM_TOK_N_SPECIALS] = {557, 558, 559, 560, 561, 562};
		int32_t		at558[TFM_TOK_N_SPECIALS] = {558, 559, 560, 561, 562, 563};

		run("qwen2", TFM_TOK_INFO_SPLIT, none, at376);
		run("gpt4o", TFM_TOK_INFO_SPLIT, none, at557);
		run("deepseek", TFM_TOK_INFO_SPLIT, none, at558);
		run("behaviors", TFM_TOK_INFO_SPLIT, none, at376);
	}

	/* the Llama 3 pattern's alternatives, hand-checked */
	pretokens("I'M 'll'x", "I|'M| '|ll|'x");
	pretokens("12345 x", "123|45| x");
	pretokens("a  b", "a| | b");
	pretokens("a \n\n b", "a| \n\n| b");
	pretokens("x...\n\ny", "x|...\n\n|y");
	pretokens(" (x)", " (|x|)");
	pretokens("\tword", "\tword");
	pretokens("end   ", "end|   ");
	pretokens("e\xcc\x81t", "e|\xcc\x81t");

	/* hostile input: random bytes encode and decode back exactly */
	{
		hfcase		f;
		tfm_tokenizer *t = NULL;
		tfm_status err;
		uint8_t    *literal;
		uint64_t	s = 987654321;

		if (load(&f, "llama3") == 0)
		{
			literal = malloc(f.n);
			memset(literal, 1, f.n);
			tfm_tok_import_hf_bpe(&t, (const uint8_t *const *) f.pieces, f.lens, literal, f.n,
								  f.merges, f.n_merges, ll,
								  TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_IGNORE_MERGES |
								  TFM_TOK_INFO_DIGITS, &err);
			free(literal);
			for (int r = 0; t && r < 5000; r++)
			{
				uint8_t		buf[64];
				int32_t		ids[80];
				char		back[2048];
				size_t		n,
							nd,
							len = (size_t) (r % 64);

				for (size_t i = 0; i < len; i++)
				{
					s ^= s << 13;
					s ^= s >> 7;
					s ^= s << 17;
					buf[i] = (uint8_t) (r % 3 == 0 ? (s & 0x7f) : s);
				}
				if (tfm_tok_encode(ids, NULL, 80, &n, t, (const char *) buf, len, 0, 0, &err) != TFM_OK ||
					tfm_tok_decode(back, sizeof(back), &nd, t, ids, n, 0, &err) != TFM_OK ||
					nd != len || memcmp(back, buf, len) != 0)
				{
					CHECK(0, "random input %d does not round-trip", r);
					break;
				}
			}
			CHECK(t != NULL, "llama3 with digits");
			tfm_tok_free(t);
			unload(&f);
		}
	}
	return check_summary("test_tok_hf");
}
