/*
 * test_unicode_forms.c — the Unicode normalization forms NFC, NFD, NFKC and
 * NFKD (src/core/tokenizer/unicode/tok_unicode_forms.c) against Python's
 * unicodedata (test/fixtures/tokenizer/unicode_forms_cases.tsv.gz, written by
 * test/reference/make_unicode_forms_cases.py): every code point with a
 * decomposition, a combining class, a part in a composite or of category
 * Mark, each decomposable one between "a" and marks out of order, Hangul,
 * random mixes; the offsets each output byte keeps (within the input,
 * never decreasing); invalid UTF-8 copied as it is; General_Category Mark
 * (StripAccents) over every code point.
 */
#include "check.h"
#include "../src/core/tokenizer/unicode/tok_unicode_forms.h"

static const unsigned forms[4] = {TFM_TOK_UFORM_NFC, TFM_TOK_UFORM_NFD, TFM_TOK_UFORM_NFKC,
								  TFM_TOK_UFORM_NFKD};
static const char *const form_names[4] = {"NFC", "NFD", "NFKC", "NFKD"};

static char *
read_cases(size_t *len)
{
	char		path[1024];
	const char *td = getenv("TFM_TEST_DATA");
	FILE	   *f = fopen("test/fixtures/tokenizer/unicode_forms_cases.tsv.gz", "rb");

	if (f)
	{
		fclose(f);
		return check_read_gz("test/fixtures/tokenizer/unicode_forms_cases.tsv.gz", len);
	}
	snprintf(path, sizeof(path), "%s/../tokenizer/unicode_forms_cases.tsv.gz", td ? td : ".");
	return check_read_gz(path, len);
}

/* hex h[0..n) into out; its length */
static size_t
unhex(uint8_t *out, const char *h, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
	{
		unsigned	v;

		sscanf(h + i, "%2x", &v);
		out[i / 2] = (uint8_t) v;
	}
	return n / 2;
}

/* form f of s[0..n) must be want[0..wn), with offsets inside s, never decreasing */
static int
check_form(unsigned f, const uint8_t *s, size_t n, const uint8_t *want, size_t wn, const char *what)
{
	tfm_tok_bytes out = {0};
	size_t	   *align = NULL,
				cap = 0;
	int			same,
				ok = 1;

	if (tfm_tok_unicode_form(&out, &align, &cap, &same, s, n, f) != TFM_OK)
		return 0;
	if (same)
		ok = n == wn && memcmp(s, want, n) == 0;
	else
	{
		ok = out.len == wn && memcmp(out.data, want, wn) == 0;
		for (size_t k = 0; ok && k < out.len; k++)
			ok = align[k] < n && (k == 0 || align[k] >= align[k - 1]);
	}
	if (!ok)
		fprintf(stderr, "  %s of %s\n", form_names[f == TFM_TOK_UFORM_NFC ? 0 : f == TFM_TOK_UFORM_NFD ? 1 :
												  f == TFM_TOK_UFORM_NFKC ? 2 : 3], what);
	tfm_tok_bytes_free(&out);
	tfm_tok_dealloc(align);
	return ok;
}

static void
test_reference(void)
{
	size_t		len;
	char	   *buf = read_cases(&len);
	char	   *line,
			   *save = NULL;
	int			texts = 0,
				runs = 0,
				bad_marks = 0;
	int32_t		next = 0;		/* the code point after the last mark run */
	uint8_t    *s = malloc(1 << 17),
			   *w = malloc(1 << 17);

	CHECK(buf != NULL, "cannot read test/fixtures/tokenizer/unicode_forms_cases.tsv.gz");
	if (!buf)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char	   *field[6];
		int			nf = 0;

		for (char *p = line; nf < 6; nf++)
		{
			field[nf] = p;
			p = strchr(p, '\t');
			if (!p)
			{
				nf++;
				break;
			}
			*p++ = '\0';
		}
		if (line[0] == 'F' && nf == 6 && strlen(field[1]) < (1 << 17) && strlen(field[2]) < (1 << 17) &&
			strlen(field[3]) < (1 << 17) && strlen(field[4]) < (1 << 17) && strlen(field[5]) < (1 << 17))
		{
			size_t		n = unhex(s, field[1], strlen(field[1]));

			texts++;
			for (int k = 0; k < 4; k++)
			{
				size_t		wn = unhex(w, field[2 + k], strlen(field[2 + k]));

				CHECK(check_form(forms[k], s, n, w, wn, field[1]), "%s of text %s", form_names[k], field[1]);
			}
		}
		else if (line[0] == 'M' && nf == 3)
		{
			int32_t		a = (int32_t) strtol(field[1], NULL, 16),
						b = (int32_t) strtol(field[2], NULL, 16);

			runs++;
			/* the code points before the run are no marks, the run's are */
			for (int32_t cp = next; cp < a; cp += (a - cp > 4096 ? 97 : 1))
				bad_marks += tfm_tok_is_mark(cp) != 0;
			for (int32_t cp = a; cp <= b; cp++)
				bad_marks += tfm_tok_is_mark(cp) != 1;
			next = b + 1;
		}
		else
			CHECK(0, "malformed case line %.40s", line);
	}
	for (int32_t cp = next; cp < 0x110000; cp += 13)
		bad_marks += tfm_tok_is_mark(cp) != 0;
	CHECK(texts > 14000 && runs > 250, "%d texts, %d mark runs read", texts, runs);
	CHECK(bad_marks == 0, "%d code points with the wrong General_Category Mark answer", bad_marks);
	free(s);
	free(w);
	free(buf);
}

/* what unicodedata cannot say: invalid units, the quick test, offsets */
static void
test_edges(void)
{
	/* "e" U+0301 (é decomposed), an invalid 0xFF, U+0301 after it */
	static const uint8_t in[] = {'e', 0xCC, 0x81, 0xFF, 0xCC, 0x81};
	static const uint8_t nfc[] = {0xC3, 0xA9, 0xFF, 0xCC, 0x81};
	/* "ﬁ" (U+FB01) and a no-break space: NFKC "fi" and " ", NFC unchanged */
	static const uint8_t lig[] = {0xEF, 0xAC, 0x81, 0xC2, 0xA0};
	tfm_tok_bytes out = {0};
	size_t	   *align = NULL,
				cap = 0;
	int			same;

	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, in, sizeof(in), TFM_TOK_UFORM_NFC) == TFM_OK &&
		  !same && out.len == sizeof(nfc) && memcmp(out.data, nfc, sizeof(nfc)) == 0,
		  "an invalid unit is copied and composes with nothing");
	CHECK(out.len == 5 && align[0] == 0 && align[1] == 0 && align[2] == 3 && align[3] == 4 && align[4] == 4,
		  "offsets of the composed é, the invalid byte and the mark after it");
	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, lig, sizeof(lig), TFM_TOK_UFORM_NFC) == TFM_OK &&
		  !same && out.len == sizeof(lig) && memcmp(out.data, lig, sizeof(lig)) == 0,
		  "NFC leaves a ligature and a no-break space as they are");
	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, lig + 3, 2, TFM_TOK_UFORM_NFC) == TFM_OK && same,
		  "NFC's quick test passes what is below U+0300");
	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, lig, sizeof(lig), TFM_TOK_UFORM_NFKC) == TFM_OK &&
		  !same && out.len == 3 && memcmp(out.data, "fi ", 3) == 0 && align[0] == 0 && align[1] == 0 &&
		  align[2] == 3, "NFKC: the ligature is \"fi\" from offset 0, the space from offset 3");
	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, (const uint8_t *) "plain ascii", 11,
							   TFM_TOK_UFORM_NFKD) == TFM_OK && same, "ASCII is every form as it is");
	CHECK(tfm_tok_unicode_form(&out, &align, &cap, &same, (const uint8_t *) "", 0, TFM_TOK_UFORM_NFD) == TFM_OK &&
		  same, "the empty text");
	tfm_tok_bytes_free(&out);
	tfm_tok_dealloc(align);
}

int
main(void)
{
	test_reference();
	test_edges();
	return check_summary("test_unicode_forms");
}
