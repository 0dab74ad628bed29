/*
 * unigram.c — a SentencePiece Unigram tokenizer.json (T5, mT5, XLM-RoBERTa,
 * ALBERT, Marian; what Hugging Face's convert_slow_tokenizer writes) stored
 * as a tfm unigram tokenizer (src/core/tokenizer/unigram/tok_unigram.c).
 *
 * Read: model {"type": "Unigram", "unk_id", "vocab": [[piece, score], ...],
 * "byte_fallback"}; the normalizer (none, one, or a Sequence, nested ones
 * flattened) of Precompiled (the base64 precompiled_charsmap), Replace (a
 * String pattern, or the Regex " {2,}" the converter writes), Strip,
 * Prepend, Lowercase, NFC, NFD, NFKC, NFKD and StripAccents (ALBERT's and
 * XLNet's NFKD + StripAccents + Lowercase); the pre-tokenizer Metaspace (replacement,
 * prepend_scheme first / always / never or the older add_prefix_space,
 * split), WhitespaceSplit, or a Sequence of them; the decoder Metaspace or
 * a Sequence of Replace (the replacement -> " "), ByteFallback, Fuse and
 * Strip (" ", start 0 or 1, stop 0).  The added tokens marked special must
 * be their pieces of model.vocab: the model never matches them, but they
 * are found in the text before it is normalised, as Hugging Face does
 * (leftmost, then longest; lstrip / rstrip honoured; normalized or
 * single_word ones refused).  The
 * file's unk, "<s>", "</s>" and "<pad>" are tfm's <unk>, <bos>, <eos> and
 * <pad>; the other tfm specials go after the last id.  A TemplateProcessing
 * "$A </s>" (T5's) or "<s> $A" makes a model's text end with eos or begin
 * with bos (tfm_tokenize adds them only when asked); other post-processors
 * are not applied.  Anything else
 * (other regular expressions, other pre-tokenizers and decoders) is
 * refused by name.
 */
#include "postgres.h"

#include <limits.h>

#include "common/base64.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "runtime/rows.h"
#include "storage/tokenizers/tokenizers.h"
#include "tfm/tokenizer.h"

#define SP "\xE2\x96\x81"		/* U+2581 ▁ */

static void
refuse(const char *what, const char *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer %s %s is not supported for a Unigram model", what, value),
			 errdetail("tfm's Unigram tokenizers take the normalizers Precompiled, Replace, Strip, "
					   "Prepend, Lowercase, NFC, NFD, NFKC, NFKD and StripAccents, the pre-tokenizers Metaspace and WhitespaceSplit, "
					   "and the decoders Metaspace, Replace, ByteFallback, Fuse and Strip.")));
}

/* the object field key of c (NULL if absent or null; else it must be an object) */
static JsonbContainer *
obj_field(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		tfm_hf_malformed(psprintf("\"%s\" must be an object", key));
	return v->val.binary.data;
}

/* a string field (NULL if absent or null; else it must be a string) */
static char *
str_field(JsonbContainer *c, const char *key, int *len)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvString)
		tfm_hf_malformed(psprintf("\"%s\" must be a string", key));
	if (len)
		*len = v->val.string.len;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static char *
type_of(JsonbContainer *c)
{
	char	   *t = str_field(c, "type", NULL);

	if (!t)
		tfm_hf_malformed("a normalizer, pre-tokenizer or decoder has no \"type\"");
	return t;
}

/* a boolean field; dflt when absent or null */
static bool
bool_field(JsonbContainer *c, const char *key, bool dflt)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (!v || v->type == jbvNull)
		return dflt;
	if (v->type != jbvBool)
		tfm_hf_malformed(psprintf("\"%s\" must be true or false", key));
	return v->val.boolean;
}

/* element i of array field key of c, an object */
static JsonbContainer *
element(JsonbContainer *c, const char *key, int i)
{
	JsonbContainer *arr = tfm_hf_array(c, key, key);
	JsonbValue *e = getIthJsonbValueFromContainer(arr, i);

	if (!e || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
		tfm_hf_malformed(psprintf("the elements of \"%s\" must be objects", key));
	return e->val.binary.data;
}

/* ---- normalizer ------------------------------------------------------------ */
static tfm_tok_norm_step *
new_step(tfm_tok_unigram_spec *s, tfm_tok_norm_kind kind)
{
	tfm_tok_norm_step *st;

	if (s->n_steps >= TFM_TOK_UNI_MAX_NORMALIZERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tokenizer.json has more than %d normalizers", TFM_TOK_UNI_MAX_NORMALIZERS)));
	st = &s->steps[s->n_steps++];
	memset(st, 0, sizeof(*st));
	st->kind = kind;
	return st;
}

/* a Replace / Prepend text: at most TFM_TOK_UNI_MAX_TEXT_BYTES */
static const uint8_t *
short_text(JsonbContainer *c, const char *key, size_t *len, bool required)
{
	int			l = 0;
	char	   *s = str_field(c, key, &l);

	if (!s && required)
		tfm_hf_malformed(psprintf("a normalizer needs its \"%s\"", key));
	if (l > TFM_TOK_UNI_MAX_TEXT_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a normalizer's \"%s\" has %d bytes, more than %d", key, l,
						TFM_TOK_UNI_MAX_TEXT_BYTES)));
	*len = s ? (size_t) l : 0;
	return (const uint8_t *) s;
}

static void
normalizer(tfm_tok_unigram_spec *s, JsonbContainer *nz, int depth)
{
	char	   *type = type_of(nz);

	CHECK_FOR_INTERRUPTS();
	if (strcmp(type, "Sequence") == 0)
	{
		JsonbContainer *arr = tfm_hf_array(nz, "normalizers", "normalizer.normalizers");
		int			n = JsonContainerSize(arr);

		if (depth > 4)
			refuse("normalizer", "Sequence nested more than 4 deep");
		for (int i = 0; i < n; i++)
			normalizer(s, element(nz, "normalizers", i), depth + 1);
	}
	else if (strcmp(type, "Precompiled") == 0)
	{
		int			l = 0;
		char	   *b64 = str_field(nz, "precompiled_charsmap", &l);
		void	   *bin;		/* char * before 18, uint8 * since */
		int			bl;
		tfm_tok_norm_step *st;

		if (!b64 || l == 0)
			return;				/* no map: the identity */
		if ((size_t) l / 4 * 3 > TFM_TOK_CHARSMAP_MAX_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("precompiled_charsmap is longer than %d bytes", TFM_TOK_CHARSMAP_MAX_BYTES)));
		bin = palloc(pg_b64_dec_len(l) + 1);
		bl = pg_b64_decode(b64, l, bin, pg_b64_dec_len(l));
		if (bl < 0)
			tfm_hf_malformed("precompiled_charsmap is not base64");
		st = new_step(s, TFM_TOK_NORM_PRECOMPILED);
		st->a = (const uint8_t *) bin;
		st->a_len = (size_t) bl;
	}
	else if (strcmp(type, "Replace") == 0)
	{
		JsonbContainer *pat = obj_field(nz, "pattern");
		size_t		l;
		const uint8_t *str,
				   *re;
		tfm_tok_norm_step *st;

		if (!pat)
			tfm_hf_malformed("Replace has no \"pattern\"");
		str = short_text(pat, "String", &l, false);
		if (str)
		{
			if (l == 0)
				tfm_hf_malformed("a Replace pattern is empty");
			st = new_step(s, TFM_TOK_NORM_REPLACE);
			st->a = str;
			st->a_len = l;
		}
		else if ((re = short_text(pat, "Regex", &l, false)) != NULL)
		{
			if (l != 5 || memcmp(re, " {2,}", 5) != 0)
				refuse("normalizer", psprintf("Replace with the regular expression \"%s\"",
											  pnstrdup((const char *) re, Min(l, 64))));
			st = new_step(s, TFM_TOK_NORM_REPLACE_SPACES);
		}
		else
			tfm_hf_malformed("a Replace pattern is {\"String\": ...} or {\"Regex\": ...}");
		st->b = short_text(nz, "content", &st->b_len, true);
	}
	else if (strcmp(type, "Strip") == 0)
	{
		tfm_tok_norm_step *st = new_step(s, TFM_TOK_NORM_STRIP);

		st->left = bool_field(nz, "strip_left", false);
		st->right = bool_field(nz, "strip_right", false);
	}
	else if (strcmp(type, "Prepend") == 0)
	{
		tfm_tok_norm_step *st = new_step(s, TFM_TOK_NORM_PREPEND);

		st->a = short_text(nz, "prepend", &st->a_len, true);
		if (st->a_len == 0)
			s->n_steps--;		/* prepending "" does nothing */
	}
	else if (strcmp(type, "Lowercase") == 0)
		(void) new_step(s, TFM_TOK_NORM_LOWERCASE);
	else if (strcmp(type, "NFC") == 0)
		(void) new_step(s, TFM_TOK_NORM_NFC);
	else if (strcmp(type, "NFD") == 0)
		(void) new_step(s, TFM_TOK_NORM_NFD);
	else if (strcmp(type, "NFKC") == 0)
		(void) new_step(s, TFM_TOK_NORM_NFKC);
	else if (strcmp(type, "NFKD") == 0)
		(void) new_step(s, TFM_TOK_NORM_NFKD);
	else if (strcmp(type, "StripAccents") == 0)
		(void) new_step(s, TFM_TOK_NORM_STRIP_ACCENTS);
	else
		refuse("normalizer", type);
}

/* ---- pre-tokenizer and decoder ------------------------------------------------ */
/* Metaspace's replacement (one character) and prepend scheme */
static void
metaspace(tfm_tok_unigram_spec *s, JsonbContainer *m, int *prepend)
{
	int			l = 0;
	char	   *r = str_field(m, "replacement", &l),
			   *scheme = str_field(m, "prepend_scheme", NULL);

	if (!r || l < 1 || l > 4 || pg_mblen(r) != l)
		tfm_hf_malformed("Metaspace's replacement must be one character");
	if (s->replacement && (s->replacement_len != (size_t) l || memcmp(s->replacement, r, l) != 0))
		refuse("decoder", "Metaspace with another replacement than the pre-tokenizer's");
	s->replacement = (const uint8_t *) r;
	s->replacement_len = (size_t) l;
	if (!scheme)
		*prepend = bool_field(m, "add_prefix_space", true) ? TFM_TOK_PREPEND_ALWAYS
			: TFM_TOK_PREPEND_NEVER;
	else if (strcmp(scheme, "always") == 0)
		*prepend = TFM_TOK_PREPEND_ALWAYS;
	else if (strcmp(scheme, "first") == 0)
		*prepend = TFM_TOK_PREPEND_FIRST;
	else if (strcmp(scheme, "never") == 0)
		*prepend = TFM_TOK_PREPEND_NEVER;
	else
		refuse("Metaspace prepend_scheme", scheme);
}

static void
pre_tokenizer(tfm_tok_unigram_spec *s, JsonbContainer *pt, int depth)
{
	char	   *type = type_of(pt);

	if (strcmp(type, "Sequence") == 0)
	{
		JsonbContainer *arr = tfm_hf_array(pt, "pretokenizers", "pre_tokenizer.pretokenizers");
		int			n = JsonContainerSize(arr);

		if (depth > 0)
			refuse("pre_tokenizer", "Sequence inside a Sequence");
		for (int i = 0; i < n; i++)
			pre_tokenizer(s, element(pt, "pretokenizers", i), depth + 1);
	}
	else if (strcmp(type, "WhitespaceSplit") == 0)
	{
		if (s->pretok & (TFM_TOK_PRETOK_WHITESPACE_SPLIT | TFM_TOK_PRETOK_METASPACE))
			refuse("pre_tokenizer", "Sequence other than [WhitespaceSplit, Metaspace]");
		s->pretok |= TFM_TOK_PRETOK_WHITESPACE_SPLIT;
	}
	else if (strcmp(type, "Metaspace") == 0)
	{
		if (s->pretok & TFM_TOK_PRETOK_METASPACE)
			refuse("pre_tokenizer", "with two Metaspace");
		metaspace(s, pt, &s->prepend);
		s->pretok |= TFM_TOK_PRETOK_METASPACE;
		if (bool_field(pt, "split", true))
			s->pretok |= TFM_TOK_PRETOK_METASPACE_SPLIT;
	}
	else
		refuse("pre_tokenizer", type);
}

/* fused: a Fuse came before (a Strip after it strips the whole text, not each piece) */
static void
decoder(tfm_tok_unigram_spec *s, JsonbContainer *dc, int depth, bool *fused)
{
	char	   *type = type_of(dc);

	if (strcmp(type, "Sequence") == 0 && depth == 0)
	{
		JsonbContainer *arr = tfm_hf_array(dc, "decoders", "decoder.decoders");
		int			n = JsonContainerSize(arr);

		for (int i = 0; i < n; i++)
			decoder(s, element(dc, "decoders", i), depth + 1, fused);
	}
	else if (strcmp(type, "Metaspace") == 0)
	{
		int			prepend;

		metaspace(s, dc, &prepend);
		s->decoder |= TFM_TOK_UDEC_REPLACE | (prepend != TFM_TOK_PREPEND_NEVER ? TFM_TOK_UDEC_STRIP_FIRST : 0);
	}
	else if (strcmp(type, "Replace") == 0)
	{
		JsonbContainer *pat = obj_field(dc, "pattern");
		int			pl = 0,
					cl = 0;
		char	   *p = pat ? str_field(pat, "String", &pl) : NULL,
				   *c = str_field(dc, "content", &cl);

		if (!p || !c || cl != 1 || c[0] != ' ' || pl < 1 || pl > 4 || pg_mblen(p) != pl ||
			(s->replacement && (s->replacement_len != (size_t) pl ||
								memcmp(s->replacement, p, pl) != 0)))
			refuse("decoder", "Replace other than the replacement character -> \" \"");
		s->replacement = (const uint8_t *) p;
		s->replacement_len = (size_t) pl;
		s->decoder |= TFM_TOK_UDEC_REPLACE;
	}
	else if (strcmp(type, "ByteFallback") == 0)
		s->decoder |= TFM_TOK_UDEC_BYTE_FALLBACK;
	else if (strcmp(type, "Fuse") == 0)
		*fused = true;			/* pieces are concatenated anyway */
	else if (strcmp(type, "Strip") == 0)
	{
		JsonbValue	b1,
					b2,
				   *start = tfm_jget(dc, "start", &b1),
				   *stop = tfm_jget(dc, "stop", &b2);
		char	   *c = str_field(dc, "content", NULL);
		int			a = start ? tfm_hf_uint(start, "Strip's start", 1000) : 0,
					z = stop ? tfm_hf_uint(stop, "Strip's stop", 1000) : 0;

		if (!c || strcmp(c, " ") != 0 || a > 1 || z != 0 || !*fused)
			refuse("decoder", "Strip other than one leading space after Fuse");
		if (a == 1)
			s->decoder |= TFM_TOK_UDEC_STRIP_FIRST;
	}
	else
		refuse("decoder", type);
}

/* the template element el: 'A' for the text ($A), 'S' for the special named
 * want, 0 for anything else */
static char
template_part(JsonbContainer *tp, int i, const char *want)
{
	JsonbContainer *el = element(tp, "single", i),
			   *x;

	if ((x = obj_field(el, "Sequence")) != NULL)
	{
		char	   *id = str_field(x, "id", NULL);

		return id && strcmp(id, "A") == 0 ? 'A' : 0;
	}
	if ((x = obj_field(el, "SpecialToken")) != NULL)
	{
		char	   *id = str_field(x, "id", NULL);

		return id && strcmp(id, want) == 0 ? 'S' : 0;
	}
	return 0;
}

/*
 * A TemplateProcessing post-processor's single template "$A </s>" (T5's)
 * makes a model's text end with eos, "<s> $A" begin with bos; other
 * post-processors are not applied.
 */
static uint32
post_processor(JsonbContainer *root, const tfm_tok_unigram_spec *s)
{
	JsonbContainer *pp = obj_field(root, "post_processor");
	char	   *type = pp ? type_of(pp) : NULL;
	JsonbValue	buf,
			   *v;

	if (!type || strcmp(type, "TemplateProcessing") != 0)
		return 0;
	v = tfm_jget(pp, "single", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
		JsonContainerSize(v->val.binary.data) != 2)
		return 0;
	if (s->special_ids[TFM_TOK_EOS] >= 0 && template_part(pp, 0, "</s>") == 'A' &&
		template_part(pp, 1, "</s>") == 'S')
		return TFM_TOK_INFO_TEXT_EOS;
	if (s->special_ids[TFM_TOK_BOS] >= 0 && template_part(pp, 0, "<s>") == 'S' &&
		template_part(pp, 1, "<s>") == 'A')
		return TFM_TOK_INFO_TEXT_BOS;
	return 0;
}

/* ---- model ------------------------------------------------------------------- */
void
tfm_hf_import_unigram(const char *name, Jsonb *tokenizer, int model_vocab, int32 *special_ids)
{
	JsonbContainer *root = &tokenizer->root,
			   *model = obj_field(root, "model"),
			   *vocab,
			   *obj;
	JsonbValue	buf,
			   *v;
	tfm_tok_unigram_spec spec;
	const uint8_t **pieces;
	size_t	   *lens;
	double	   *scores;
	uint8_t    *control;
	int			n;

	memset(&spec, 0, sizeof(spec));
	v = tfm_jget(model, "unk_id", &buf);
	if (!v || v->type == jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a Unigram tokenizer.json without model.unk_id is not supported")));
	spec.unk_id = tfm_hf_uint(v, "model.unk_id", INT_MAX);
	spec.byte_fallback = bool_field(model, "byte_fallback", false);

	/* model.vocab: [[piece, score], ...] in id order */
	vocab = tfm_hf_array(model, "vocab", "model.vocab");
	n = JsonContainerSize(vocab);
	if (n < 1 || n > TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS)
		tfm_hf_malformed(psprintf("model.vocab must have between 1 and %d pieces",
								  TFM_TOK_MAX_VOCAB_SIZE - TFM_TOK_N_SPECIALS));
	if (n > model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json has %d pieces, but the model's vocab_size is %d", n, model_vocab)));
	if (spec.unk_id >= n)
		tfm_hf_malformed(psprintf("model.unk_id %d is not below its %d pieces", spec.unk_id, n));
	pieces = palloc0(sizeof(uint8_t *) * n);
	lens = palloc0(sizeof(size_t) * n);
	scores = palloc0(sizeof(double) * n);
	control = palloc0(n);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(vocab, i),
				   *p,
				   *sc;

		CHECK_FOR_INTERRUPTS();
		if (!e || e->type != jbvBinary || !JsonContainerIsArray(e->val.binary.data) ||
			JsonContainerSize(e->val.binary.data) != 2 ||
			!(p = getIthJsonbValueFromContainer(e->val.binary.data, 0)) || p->type != jbvString ||
			!(sc = getIthJsonbValueFromContainer(e->val.binary.data, 1)) || sc->type != jbvNumeric)
			tfm_hf_malformed("a model.vocab entry must be [piece, score]");
		pieces[i] = (const uint8_t *) p->val.string.val;
		lens[i] = p->val.string.len;
		scores[i] = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
													   NumericGetDatum(sc->val.numeric)));
	}

	/* special added tokens: their pieces of model.vocab, never matched in text */
	v = tfm_jget(root, "added_tokens", &buf);
	if (v && v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		int			na = JsonContainerSize(v->val.binary.data);

		for (int i = 0; i < na; i++)
		{
			JsonbContainer *t = element(root, "added_tokens", i);
			JsonbValue	b1,
					   *idv = tfm_jget(t, "id", &b1);
			int			cl = 0;
			char	   *content = str_field(t, "content", &cl);
			int			id;

			if (!idv || !content)
				tfm_hf_malformed("an added token needs an id and a content");
			id = tfm_hf_uint(idv, "an added token's id", INT_MAX);
			if (id >= n || lens[id] != (size_t) cl || memcmp(pieces[id], content, cl) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("added token \"%s\" (id %d) is not that piece of the vocabulary",
								pnstrdup(content, Min(cl, 64)), id),
						 errdetail("tfm keeps the ids of added tokens only when model.vocab has them.")));
			if (bool_field(t, "special", false))
			{
				/* found in text as Hugging Face finds it: as written (not in
				 * the normalized text), anywhere (not only as a whole word) */
				if (bool_field(t, "normalized", false) || bool_field(t, "single_word", false))
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("special added token \"%s\" with %s true is not supported",
									pnstrdup(content, Min(cl, 64)),
									bool_field(t, "normalized", false) ? "normalized" : "single_word"),
							 errdetail("tfm finds a Unigram tokenizer's special tokens in the text as "
									   "written, wherever they are.")));
				control[id] = TFM_TOK_UNI_SPECIAL |
					(bool_field(t, "lstrip", false) ? TFM_TOK_UNI_LSTRIP : 0) |
					(bool_field(t, "rstrip", false) ? TFM_TOK_UNI_RSTRIP : 0);
			}
		}
	}
	else if (v && v->type != jbvNull)
		tfm_hf_malformed("added_tokens must be an array");

	/* tfm's specials: the file's unk, <s>, </s>, <pad>; the others added after */
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		spec.special_ids[k] = -1;
	spec.special_ids[TFM_TOK_UNK] = spec.unk_id;
	for (int i = 0; i < n; i++)
	{
		if (i == spec.unk_id)
			continue;
		if (lens[i] == 3 && memcmp(pieces[i], "<s>", 3) == 0)
			spec.special_ids[TFM_TOK_BOS] = i;
		else if (lens[i] == 4 && memcmp(pieces[i], "</s>", 4) == 0)
			spec.special_ids[TFM_TOK_EOS] = i;
		else if (lens[i] == 5 && memcmp(pieces[i], "<pad>", 5) == 0)
			spec.special_ids[TFM_TOK_PAD] = i;
	}

	if ((obj = obj_field(root, "normalizer")) != NULL)
		normalizer(&spec, obj, 0);
	if ((obj = obj_field(root, "pre_tokenizer")) != NULL)
		pre_tokenizer(&spec, obj, 0);
	if ((obj = obj_field(root, "decoder")) != NULL)
	{
		bool		fused = false;

		decoder(&spec, obj, 0, &fused);
	}
	if (!spec.replacement)
	{
		spec.replacement = (const uint8_t *) SP;
		spec.replacement_len = 3;
	}
	v = tfm_jget(model, "dropout", &buf);
	if (v && v->type != jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.dropout is not supported")));
	spec.info_flags = post_processor(root, &spec) | TFM_TOK_INFO_SPECIALS_IN_TEXT;
	spec.scores = scores;
	spec.control = control;
	tfm_tokenizer_import_unigram(name, pieces, lens, n, &spec, special_ids);
	/* tfm's specials added after the file's ids are no ids of the checkpoint */
	for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
		if (special_ids[k] >= n)
			special_ids[k] = INT_MAX;
}
