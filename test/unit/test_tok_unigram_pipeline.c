/*
 * test_tok_unigram_pipeline.c — the Unigram tokenizers' normalizer and
 * pre-tokenizer steps (tok_unigram_norm.c) on one-piece tokenizers,
 * checked by hand against Hugging Face's semantics.  test_tok_unigram.c
 * checks whole tokenizers against SentencePiece.
 */
#include "check.h"
#include "../src/core/tokenizer/unigram/tok_unigram_model.h"

#define SP "\xE2\x96\x81"


/* ---- the pipeline's steps, hand-checked against Hugging Face's semantics ---- */
/* a one-piece tokenizer with the given pipeline (the pieces do not matter here) */
static tfm_tokenizer *
pipeline(const tfm_tok_norm_step *steps, int n_steps, uint32_t pretok, int prepend)
{
	static const uint8_t *pieces[2] = {(const uint8_t *) "<unk>", (const uint8_t *) "a"};
	static const size_t lens[2] = {5, 1};
	static const double scores[2] = {0, -1};
	tfm_tok_unigram_spec s;
	tfm_tokenizer *t = NULL;
	tfm_status	err;

	memset(&s, 0, sizeof(s));
	s.scores = scores;
	s.unk_id = 0;
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		s.special_ids[k] = -1;
	s.special_ids[TFM_TOK_UNK] = 0;
	memcpy(s.steps, steps, sizeof(*steps) * n_steps);
	s.n_steps = n_steps;
	s.pretok = pretok;
	s.prepend = prepend;
	s.replacement = (const uint8_t *) SP;
	s.replacement_len = 3;
	CHECK(tfm_tok_import_unigram(&t, pieces, lens, 2, &s, &err) == TFM_OK, "pipeline: %s", err.msg);
	return t;
}

/* the words text becomes, joined by "|" */
static void
check_words(tfm_tokenizer *t, const char *text, const char *want, const char *what)
{
	tfm_tok_otext x = {0};
	tfm_tok_ivec starts = {0};
	char		got[512];
	size_t		w = 0;

	CHECK(tfm_tok_unigram_pretokenize(&x, &starts, t->uni, (const uint8_t *) text, strlen(text)) == TFM_OK,
		  "%s: pre-tokenize", what);
	for (size_t k = 0; k + 1 < starts.len && w < sizeof(got) - 8; k++)
	{
		size_t		a = (size_t) starts.data[k],
					b = (size_t) starts.data[k + 1];

		if (k > 0)
			got[w++] = '|';
		memcpy(got + w, x.b + a, b - a < sizeof(got) - 8 - w ? b - a : 0);
		w += b - a;
	}
	got[w] = '\0';
	CHECK(strcmp(got, want) == 0, "%s: \"%s\" gives \"%s\", want \"%s\"", what, text, got, want);
	tfm_tok_otext_free(&x);
	tfm_tok_ivec_free(&starts);
}

static void
pipeline_checks(void)
{
	tfm_tok_norm_step st[4];
	tfm_tokenizer *t;
	tfm_tok_otext x = {0};
	tfm_tok_ivec starts = {0};
	const uint32_t ms = TFM_TOK_PRETOK_METASPACE | TFM_TOK_PRETOK_METASPACE_SPLIT;

	/* Strip both ends (White_Space, U+3000 too), Lowercase, Replace a string, Prepend */
	memset(st, 0, sizeof(st));
	st[0].kind = TFM_TOK_NORM_STRIP;
	st[0].left = st[0].right = 1;
	st[1].kind = TFM_TOK_NORM_LOWERCASE;
	st[2].kind = TFM_TOK_NORM_REPLACE;
	st[2].a = (const uint8_t *) "x";
	st[2].a_len = 1;
	st[2].b = (const uint8_t *) "yy";
	st[2].b_len = 2;
	st[3].kind = TFM_TOK_NORM_PREPEND;
	st[3].a = (const uint8_t *) SP;
	st[3].a_len = 3;
	t = pipeline(st, 4, 0, TFM_TOK_PREPEND_NEVER);
	check_words(t, "  HeLLo x \xC3\x80\xC3\x89 \xE3\x80\x80", SP "hello yy \xC3\xA0\xC3\xA9", "strip, lowercase, replace, prepend");
	check_words(t, " \t ", "", "all White_Space: nothing, not even the prepended text");
	/* offsets: the prepended "▁" and the "yy" from the input's 'H' and 'x' */
	CHECK(tfm_tok_unigram_pretokenize(&x, &starts, t->uni, (const uint8_t *) "  Hx", 4) == TFM_OK &&
		  x.len == 6 && x.orig[0] == 2 && x.orig[3] == 2 && x.orig[4] == 3 && x.orig[5] == 3,
		  "offsets of the normalized bytes");
	tfm_tok_otext_free(&x);
	tfm_tok_ivec_free(&starts);
	tfm_tok_free(t);

	/* Replace Regex " {2,}": runs of two or more spaces only */
	memset(st, 0, sizeof(st));
	st[0].kind = TFM_TOK_NORM_REPLACE_SPACES;
	st[0].b = (const uint8_t *) SP;
	st[0].b_len = 3;
	t = pipeline(st, 1, 0, TFM_TOK_PREPEND_NEVER);
	check_words(t, "a   b c  ", "a" SP "b c" SP, "runs of spaces");
	tfm_tok_free(t);

	/* Metaspace: " " -> "▁", prepended, a new word before each "▁" (merged with what follows) */
	t = pipeline(NULL, 0, ms, TFM_TOK_PREPEND_ALWAYS);
	check_words(t, "a b  c", SP "a|" SP "b|" SP "|" SP "c", "Metaspace always, split");
	check_words(t, " a", SP "a", "a text starting with a space gets no second one");
	check_words(t, SP "a", SP "a", "nor one starting with the replacement");
	tfm_tok_free(t);
	t = pipeline(NULL, 0, ms, TFM_TOK_PREPEND_NEVER);
	check_words(t, "a b", "a|" SP "b", "Metaspace never");
	tfm_tok_free(t);
	t = pipeline(NULL, 0, TFM_TOK_PRETOK_METASPACE, TFM_TOK_PREPEND_ALWAYS);
	check_words(t, "a b", SP "a" SP "b", "Metaspace without split");
	tfm_tok_free(t);
	/* WhitespaceSplit then Metaspace: "first" is the word at the text's start only */
	t = pipeline(NULL, 0, ms | TFM_TOK_PRETOK_WHITESPACE_SPLIT, TFM_TOK_PREPEND_FIRST);
	check_words(t, "a b\tc", SP "a|b|c", "first: the word at offset 0");
	check_words(t, " a b", "a|b", "first: no word at offset 0");
	tfm_tok_free(t);
	t = pipeline(NULL, 0, ms | TFM_TOK_PRETOK_WHITESPACE_SPLIT, TFM_TOK_PREPEND_ALWAYS);
	check_words(t, " a\xC2\xA0" "b\xE2\x80\xA8 c ", SP "a|" SP "b|" SP "c", "WhitespaceSplit on White_Space");
	tfm_tok_free(t);
}

int
main(void)
{
	pipeline_checks();
	return check_summary("test_tok_unigram_pipeline");
}
