/*
 * spiece.c — a SentencePiece-style BPE tokenizer.json (Llama 2's,
 * TinyLlama's, Gemma 3's) stored as a tfm tokenizer (kind bpe with the
 * SentencePiece flag, src/core/tokenizer/bpe/tok_spiece.c).  Accepted
 * exactly as those files are: model BPE with byte_fallback; normalizer
 * Sequence[Prepend "▁", Replace " " → "▁"] (Llama 2) or Replace " " → "▁"
 * alone (Gemma 3: no "▁" before the text, the NO_PREFIX flag); no
 * pre-tokenizer, or a Split on " " (which finds nothing once spaces are
 * "▁"); the decoder Sequence[Replace "▁" → " ", ByteFallback, Fuse] with
 * Strip one leading space where the normalizer prepends (or none); a
 * TemplateProcessing post-processor (or none), whose first special is bos;
 * unk_token, and <s> / </s> (or <bos> / <eos>) as special added tokens.
 * The added tokens keep their ids (in the vocabulary, or after it) and are
 * found in a text as Hugging Face finds them (tok_added.c).  Anything else
 * is refused by name.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "storage/tokenizers/tokenizers.h"
#include "runtime/rows.h"
#include "tfm/tokenizer.h"

#define SP "\xE2\x96\x81"		/* U+2581 ▁ */

static void
refuse(const char *what, const char *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer %s %s is not supported", what, value),
			 errdetail("tfm imports SentencePiece-style BPE tokenizers as Llama 2 ships them.")));
}


/* a string field of an object, NULL if absent or not a string */
static char *
str_field(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v;

	if (!c)
		return NULL;
	v = tfm_jget(c, key, &buf);
	if (!v || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static JsonbContainer *
obj_field(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = c ? tfm_jget(c, key, &buf) : NULL;

	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		return NULL;
	return v->val.binary.data;
}

/* the i-th object of array field key (NULL if there is none) */
static JsonbContainer *
array_obj(JsonbContainer *c, const char *key, int i, int *n)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf),
			   *e;

	*n = 0;
	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return NULL;
	*n = JsonContainerSize(v->val.binary.data);
	if (i >= *n)
		return NULL;
	e = getIthJsonbValueFromContainer(v->val.binary.data, i);
	if (!e || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
		return NULL;
	return e->val.binary.data;
}

static bool
str_is(JsonbContainer *c, const char *key, const char *want)
{
	char	   *s = str_field(c, key);

	return s && strcmp(s, want) == 0;
}

static int
int_of(const JsonbValue *v, const char *what)
{
	return tfm_hf_uint(v, what, TFM_TOK_MAX_VOCAB_SIZE);
}

/* a Replace " " → "▁" normalizer step? */
static bool
is_space_replace(JsonbContainer *c)
{
	return str_is(c, "type", "Replace") && str_is(obj_field(c, "pattern"), "String", " ") &&
		str_is(c, "content", SP);
}

/*
 * normalizer Sequence[Prepend "▁", Replace " " → "▁"] (Llama 2's: returns
 * true), or Replace " " → "▁" alone or in a Sequence (Gemma 3's: false)
 */
static bool
check_normalizer(JsonbContainer *root)
{
	JsonbContainer *nz = obj_field(root, "normalizer"),
			   *a,
			   *b;
	char	   *type = str_field(nz, "type");
	int			n;

	if (!nz)
		refuse("normalizer", "null");
	if (!type)
		tfm_hf_malformed("\"normalizer\" has no \"type\"");
	if (is_space_replace(nz))
		return false;
	if (strcmp(type, "Sequence") != 0)
		refuse("normalizer", type);
	a = array_obj(nz, "normalizers", 0, &n);
	b = array_obj(nz, "normalizers", 1, &n);
	if (n == 1 && is_space_replace(a))
		return false;
	if (n != 2 || !str_is(a, "type", "Prepend") || !str_is(a, "prepend", SP) || !is_space_replace(b))
		refuse("normalizer", "Sequence other than [Prepend \"▁\", Replace \" \" → \"▁\"] or [Replace \" \" → \"▁\"]");
	return true;
}

/*
 * pre_tokenizer: none, or a Split on the String " " (Gemma 3's), which
 * finds nothing once the normalizer has made every space "▁"
 */
static void
check_pre_tokenizer(JsonbContainer *root)
{
	JsonbContainer *pt = obj_field(root, "pre_tokenizer");
	JsonbValue	b,
			   *inv;

	if (!pt)
		return;
	inv = tfm_jget(pt, "invert", &b);
	if (!str_is(pt, "type", "Split") || !str_is(obj_field(pt, "pattern"), "String", " ") ||
		(inv && inv->type == jbvBool && inv->val.boolean))
		refuse("pre_tokenizer", str_field(pt, "type") ? str_field(pt, "type") : "?");
}

/*
 * decoder Sequence[Replace "▁" → " ", ByteFallback, Fuse, Strip " " 1 0]
 * where the normalizer prepends "▁" (Llama 2), the same without Strip where
 * it does not (Gemma 3), or none
 */
static void
check_decoder(JsonbContainer *root, bool prepend)
{
	JsonbContainer *dc = obj_field(root, "decoder"),
			   *d[4],
			   *pat;
	char	   *type = str_field(dc, "type");
	int			n,
				want = prepend ? 4 : 3;
	JsonbValue	b1,
				b2,
			   *start,
			   *stop;

	if (!dc)
		return;
	if (!type)
		tfm_hf_malformed("\"decoder\" has no \"type\"");
	if (strcmp(type, "Sequence") != 0)
		refuse("decoder", type);
	for (int i = 0; i < 4; i++)
		d[i] = array_obj(dc, "decoders", i, &n);
	pat = obj_field(d[0], "pattern");
	if (n != want || !str_is(d[0], "type", "Replace") || !str_is(pat, "String", SP) ||
		!str_is(d[0], "content", " ") || !str_is(d[1], "type", "ByteFallback") ||
		!str_is(d[2], "type", "Fuse"))
		refuse("decoder", prepend ? "Sequence other than [Replace \"▁\" → \" \", ByteFallback, Fuse, Strip]"
			   : "Sequence other than [Replace \"▁\" → \" \", ByteFallback, Fuse]");
	if (!prepend)
		return;
	start = tfm_jget(d[3], "start", &b1);
	stop = tfm_jget(d[3], "stop", &b2);
	if (!str_is(d[3], "type", "Strip") || !str_is(d[3], "content", " ") ||
		!start || start->type != jbvNumeric || int_of(start, "Strip's start") != 1 ||
		!stop || stop->type != jbvNumeric || int_of(stop, "Strip's stop") != 0)
		refuse("decoder", "Strip other than one leading space");
}

/* the id of a piece of model.vocab, -1 if none */
static int
piece_id(JsonbContainer *vocab, const char *piece)
{
	return tfm_hf_vocab_id(vocab, piece, strlen(piece), TFM_TOK_MAX_VOCAB_SIZE);
}

/*
 * the id of the first of two contents that is a special added token in
 * model.vocab; else of the first that is a piece; -1 if neither is
 */
static int
special_piece(JsonbContainer *vocab, const TfmHfAdded *added, int n, const char *a, const char *b)
{
	const char *want[2] = {a, b};
	int			id;

	for (int w = 0; w < 2; w++)
		for (int i = 0; i < n; i++)
			if ((added[i].flags & TFM_TOK_ADDED_SPECIAL) && added[i].in_vocab == added[i].id &&
				strcmp(added[i].content, want[w]) == 0)
				return added[i].id;
	id = piece_id(vocab, a);
	return id >= 0 ? id : piece_id(vocab, b);
}

void
tfm_hf_import_spiece(const char *name, Jsonb *tokenizer, int model_vocab)
{
	JsonbContainer *root = &tokenizer->root,
			   *model = obj_field(root, "model"),
			   *vocab,
			   *pp;
	JsonbValue	buf,
			   *v,
				jv;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	int			n = 0,
				n_merges = 0,
				unk,
				bos,
				eos;
	const uint8_t **pieces;
	size_t	   *lens;
	int32_t    *merge_lr;
	char	   *key = NULL;
	int			keylen = 0;
	bool		text_bos,
				prepend;
	TfmHfAdded *added;
	int			n_added,
				V;
	TfmAddedTokens added_list;
	char	   *bos_name = NULL;

	prepend = check_normalizer(root);
	check_pre_tokenizer(root);
	check_decoder(root, prepend);
	if ((pp = obj_field(root, "post_processor")) != NULL && !str_is(pp, "type", "TemplateProcessing"))
		refuse("post_processor", str_field(pp, "type") ? str_field(pp, "type") : "?");
	v = tfm_jget(model, "dropout", &buf);
	if (v && v->type != jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.dropout is not supported")));
	v = tfm_jget(model, "ignore_merges", &buf);
	if (v && v->type == jbvBool && v->val.boolean)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.ignore_merges is not supported")));
	if ((key = str_field(model, "continuing_subword_prefix")) != NULL && key[0])
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.continuing_subword_prefix is not supported")));
	if ((key = str_field(model, "end_of_word_suffix")) != NULL && key[0])
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.end_of_word_suffix is not supported")));

	/* model.vocab: piece -> id, every id from 0 given once */
	vocab = tfm_hf_model_vocab(model, model_vocab,
							   "model.vocab must have between 1 and 4194296 pieces", &n);
	added = tfm_hf_added_tokens(root, vocab, &n_added);
	V = n;
	n = V + n_added;
	pieces = palloc0(sizeof(uint8_t *) * n);
	lens = palloc0(sizeof(size_t) * n);
	it = JsonbIteratorInit(vocab);
	while ((tok = JsonbIteratorNext(&it, &jv, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = jv.val.string.val;
			keylen = jv.val.string.len;
		}
		else if (tok == WJB_VALUE)
		{
			int			id = int_of(&jv, "a model.vocab id");

			CHECK_FOR_INTERRUPTS();
			if (id >= V)
				tfm_hf_malformed(psprintf("model.vocab id %d is not below its %d pieces", id, V));
			if (pieces[id])
				tfm_hf_malformed(psprintf("model.vocab gives id %d twice", id));
			pieces[id] = (const uint8_t *) pnstrdup(key, keylen);
			lens[id] = keylen;
		}
	}

	/* added tokens keep their ids: that piece of the vocabulary, or after it */
	for (int i = 0; i < n_added; i++)
		if (added[i].flags & TFM_TOK_ADDED_NORMALIZED)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("added token \"%s\" with normalized true is not supported "
							"in a SentencePiece-style BPE",
							pnstrdup(added[i].content, Min(added[i].len, 64)))));
	n = tfm_hf_place_added(added, n_added, pieces, lens, NULL, n, V - 1, model_vocab);
	tfm_hf_added_list(&added_list, added, n_added);

	/* model.merges: "a b" or [a, b], in rank order */
	merge_lr = tfm_hf_merges(model, vocab, TFM_TOK_MAX_VOCAB_SIZE, &n_merges);

	/* does the post-processor put a special first ("single": [<s>, $A])? */
	{
		JsonbContainer *pp2 = obj_field(root, "post_processor"),
				   *first,
				   *st;
		int			ns;

		first = pp2 ? array_obj(pp2, "single", 0, &ns) : NULL;
		st = obj_field(first, "SpecialToken");
		bos_name = st ? str_field(st, "id") : NULL;
		text_bos = bos_name != NULL;
	}

	/* unk; bos: the post-processor's, else <s> or <bos>; eos: </s> or <eos>,
	 * whichever is a special added token (Gemma's vocabulary has all four) */
	key = str_field(model, "unk_token");
	if (!key)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a SentencePiece tokenizer without model.unk_token is not supported")));
	unk = piece_id(vocab, key);
	bos = bos_name ? piece_id(vocab, bos_name) : special_piece(vocab, added, n_added, "<s>", "<bos>");
	eos = special_piece(vocab, added, n_added, "</s>", "<eos>");
	if (unk < 0 || bos < 0 || eos < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer.json must have the piece %s and special added tokens <s> and </s> "
						"(or <bos> and <eos>)", key)));
	(void) tfm_tokenizer_import_spiece(name, pieces, lens, n, merge_lr, n_merges, unk, bos, eos,
									   (text_bos ? TFM_TOK_INFO_TEXT_BOS : 0) |
									   (prepend ? 0 : TFM_TOK_INFO_NO_PREFIX), &added_list);
}
