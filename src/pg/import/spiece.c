/*
 * spiece.c — a SentencePiece-style BPE tokenizer.json (Llama 2's,
 * TinyLlama's) stored as a tfm tokenizer (kind bpe with the SentencePiece
 * flag, src/core/tokenizer/bpe/tok_spiece.c).  Accepted exactly as those files
 * are: model BPE with byte_fallback, normalizer Sequence[Prepend "▁",
 * Replace " " → "▁"], no pre-tokenizer, the decoder Sequence[Replace "▁" →
 * " ", ByteFallback, Fuse, Strip] (or none), a TemplateProcessing
 * post-processor (or none), unk_token and the pieces <s> and </s> in the
 * vocabulary.  Anything else is refused by name.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "import/json_fields.h"
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

/* normalizer Sequence[Prepend "▁", Replace " " → "▁"], nothing else */
static void
check_normalizer(JsonbContainer *root)
{
	JsonbContainer *nz = obj_field(root, "normalizer"),
			   *a,
			   *b,
			   *pat;
	char	   *type = str_field(nz, "type");
	int			n;

	if (!nz)
		refuse("normalizer", "null");
	if (!type)
		tfm_hf_malformed("\"normalizer\" has no \"type\"");
	if (strcmp(type, "Sequence") != 0)
		refuse("normalizer", type);
	a = array_obj(nz, "normalizers", 0, &n);
	b = array_obj(nz, "normalizers", 1, &n);
	pat = obj_field(b, "pattern");
	if (n != 2 || !str_is(a, "type", "Prepend") || !str_is(a, "prepend", SP) ||
		!str_is(b, "type", "Replace") || !str_is(pat, "String", " ") || !str_is(b, "content", SP))
		refuse("normalizer", "Sequence other than [Prepend \"▁\", Replace \" \" → \"▁\"]");
}

/* decoder Sequence[Replace "▁" → " ", ByteFallback, Fuse, Strip " " 1 0], or none */
static void
check_decoder(JsonbContainer *root)
{
	JsonbContainer *dc = obj_field(root, "decoder"),
			   *d[4],
			   *pat;
	char	   *type = str_field(dc, "type");
	int			n;
	JsonbValue	b1,
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
	start = d[3] ? tfm_jget(d[3], "start", &b1) : NULL;
	if (n != 4 || !str_is(d[0], "type", "Replace") || !str_is(pat, "String", SP) ||
		!str_is(d[0], "content", " ") || !str_is(d[1], "type", "ByteFallback") ||
		!str_is(d[2], "type", "Fuse") || !str_is(d[3], "type", "Strip") ||
		!str_is(d[3], "content", " ") || !start || start->type != jbvNumeric ||
		int_of(start, "Strip's start") != 1)
		refuse("decoder", "Sequence other than [Replace \"▁\" → \" \", ByteFallback, Fuse, Strip]");
	{
		JsonbValue	b2;

		stop = tfm_jget(d[3], "stop", &b2);
		if (!stop || stop->type != jbvNumeric || int_of(stop, "Strip's stop") != 0)
			refuse("decoder", "Strip other than one leading space");
	}
}

/* the id of a piece of model.vocab, -1 if none */
static int
piece_id(JsonbContainer *vocab, const char *piece)
{
	return tfm_hf_vocab_id(vocab, piece, strlen(piece), TFM_TOK_MAX_VOCAB_SIZE);
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
	bool		text_bos;

	check_normalizer(root);
	if ((pp = obj_field(root, "pre_tokenizer")) != NULL)
		refuse("pre_tokenizer", str_field(pp, "type") ? str_field(pp, "type") : "?");
	check_decoder(root);
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
			if (id >= n)
				tfm_hf_malformed(psprintf("model.vocab id %d is not below its %d pieces", id, n));
			if (pieces[id])
				tfm_hf_malformed(psprintf("model.vocab gives id %d twice", id));
			pieces[id] = (const uint8_t *) pnstrdup(key, keylen);
			lens[id] = keylen;
		}
	}

	/* model.merges: "a b" or [a, b], in rank order */
	merge_lr = tfm_hf_merges(model, vocab, TFM_TOK_MAX_VOCAB_SIZE, &n_merges);

	/* unk, bos and eos */
	key = str_field(model, "unk_token");
	if (!key)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a SentencePiece tokenizer without model.unk_token is not supported")));
	unk = piece_id(vocab, key);
	bos = piece_id(vocab, "<s>");
	eos = piece_id(vocab, "</s>");
	if (unk < 0 || bos < 0 || eos < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer.json must have the pieces %s, <s> and </s>", key)));

	/* added tokens keep their ids: each must be that piece of the vocabulary */
	v = tfm_jget(root, "added_tokens", &buf);
	if (v && v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		int			na = JsonContainerSize(v->val.binary.data);

		for (int i = 0; i < na; i++)
		{
			JsonbValue *t = getIthJsonbValueFromContainer(v->val.binary.data, i);
			JsonbValue	b1,
					   *idv;
			char	   *content;

			if (!t || t->type != jbvBinary || !JsonContainerIsObject(t->val.binary.data))
				tfm_hf_malformed("an added token must be an object");
			idv = tfm_jget(t->val.binary.data, "id", &b1);
			content = str_field(t->val.binary.data, "content");
			if (!idv || !content)
				tfm_hf_malformed("an added token needs an id and a content");
			if (piece_id(vocab, content) != int_of(idv, "an added token's id"))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("added token \"%s\" (id %d) is not that piece of the vocabulary",
								pnstrdup(content, Min(strlen(content), 64)),
								int_of(idv, "an added token's id")),
						 errdetail("tfm keeps the ids of added tokens only when model.vocab has them.")));
		}
	}
	else if (v && v->type != jbvNull)
		tfm_hf_malformed("added_tokens must be an array");

	/* does the post-processor put <s> first ("single": [<s>, $A])? */
	{
		JsonbContainer *pp2 = obj_field(root, "post_processor"),
				   *first,
				   *st;
		int			ns;

		first = pp2 ? array_obj(pp2, "single", 0, &ns) : NULL;
		st = obj_field(first, "SpecialToken");
		text_bos = st && str_is(st, "id", "<s>");
	}
	(void) tfm_tokenizer_import_spiece(name, pieces, lens, n, merge_lr, n_merges, unk, bos, eos,
									   text_bos);
}
