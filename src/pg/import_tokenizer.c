/*
 * import_tokenizer.c — a Hugging Face tokenizer.json stored as a tfm
 * tokenizer.  Supported: byte-level BPE (model.type "BPE" with the
 * ByteLevel pre-tokenizer and no normalizer: GPT-2's), which is exactly
 * tfm's GPT-2 import, fed with the encoder.json and vocab.bpe texts that
 * the file's model.vocab and model.merges ("a b" strings or [a, b] pairs)
 * spell.  Ids are kept as the file gives them; every added token must be
 * a piece of the vocabulary with the same id.  A BPE with byte_fallback is
 * SentencePiece-style (import_spiece.c).  Other models, normalizers,
 * pre-tokenizers and options are refused by name.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import.h"
#include "tfm_pg.h"
#include "tfm_rows.h"

static void
refuse(const char *what, const char *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer %s %s is not supported yet", what, value),
			 errdetail("tfm imports byte-level BPE tokenizers (GPT-2's).")));
}

static void
malformed(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("tokenizer.json is malformed: %s", what)));
}

/* the "type" of an object field, NULL if the field is absent or null */
static char *
field_type(JsonbContainer *c, const char *key, JsonbContainer **obj)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf),
				tb,
			   *t;

	*obj = NULL;
	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		malformed(psprintf("\"%s\" must be an object", key));
	*obj = v->val.binary.data;
	t = tfm_jget(*obj, "type", &tb);
	if (!t || t->type != jbvString)
		malformed(psprintf("\"%s\" has no \"type\"", key));
	return pnstrdup(t->val.string.val, t->val.string.len);
}

static bool
is_true(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	return v && v->type == jbvBool && v->val.boolean;
}

/* a string field that must be absent, null or "" */
static void
require_empty(JsonbContainer *c, const char *key)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (!v || v->type == jbvNull)
		return;
	if (v->type == jbvString && v->val.string.len == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer option model.%s is not supported", key)));
}

static int
int_value(const JsonbValue *v, const char *what)
{
	double		d;

	if (v->type != jbvNumeric)
		malformed(psprintf("%s must be an integer", what));
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (d != (double) (int) d || d < 0)
		malformed(psprintf("%s must be a non-negative integer", what));
	return (int) d;
}

/* a merge piece must be a single line without spaces to fit vocab.bpe */
static void
append_piece(StringInfo s, const char *p, int len)
{
	for (int i = 0; i < len; i++)
		if (p[i] == ' ' || p[i] == '\n' || p[i] == '\r')
			malformed("a merge piece holds a space or a line break");
	appendBinaryStringInfo(s, p, len);
}

void
tfm_hf_import_tokenizer(const char *name, Jsonb *tokenizer, int model_vocab)
{
	JsonbContainer *root = &tokenizer->root,
			   *model,
			   *obj;
	char	   *type;
	JsonbValue	buf,
			   *v;
	JsonbIterator *it;
	JsonbValue	jv;
	JsonbIteratorToken tok;
	char	   *enc;
	StringInfoData bpe;
	int			max_id = -1,
				n_ids = 0;

	if (!JB_ROOT_IS_OBJECT(tokenizer) || JB_ROOT_IS_SCALAR(tokenizer))
		malformed("it must be a JSON object");
	type = field_type(root, "model", &model);
	if (!model)
		malformed("it has no \"model\"");
	if (strcmp(type, "BPE") != 0)
		refuse("model", type);
	type = field_type(root, "pre_tokenizer", &obj);
	if (is_true(model, "byte_fallback") && (!type || strcmp(type, "ByteLevel") != 0))
	{
		/* SentencePiece-style BPE (Llama 2, TinyLlama), not byte-level */
		tfm_hf_import_spiece(name, tokenizer, model_vocab);
		return;
	}
	if ((type = field_type(root, "normalizer", &obj)) != NULL)
		refuse("normalizer", type);
	type = field_type(root, "pre_tokenizer", &obj);
	if (!type || strcmp(type, "ByteLevel") != 0)
		refuse("pre_tokenizer", type ? type : "null");
	if (is_true(obj, "add_prefix_space"))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option pre_tokenizer.add_prefix_space is not supported")));
	v = tfm_jget(obj, "use_regex", &buf);
	if (v && v->type == jbvBool && !v->val.boolean)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option pre_tokenizer.use_regex false is not supported")));
	if ((type = field_type(root, "decoder", &obj)) != NULL && strcmp(type, "ByteLevel") != 0)
		refuse("decoder", type);
	v = tfm_jget(model, "dropout", &buf);
	if (v && v->type != jbvNull)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.dropout is not supported")));
	require_empty(model, "unk_token");
	require_empty(model, "continuing_subword_prefix");
	require_empty(model, "end_of_word_suffix");
	if (is_true(model, "byte_fallback"))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.byte_fallback is not supported")));

	/* model.vocab: piece -> id, as encoder.json */
	v = tfm_jget(model, "vocab", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		malformed("model.vocab must be an object");
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &jv, true)) != WJB_DONE)
		if (tok == WJB_VALUE)
		{
			int			id = int_value(&jv, "a model.vocab id");

			max_id = Max(max_id, id);
			n_ids++;
		}
	if (max_id >= model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json has token id %d, but the model's vocab_size is %d",
						max_id, model_vocab)));
	enc = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);

	/* model.merges: "a b" or [a, b], in rank order, as vocab.bpe */
	v = tfm_jget(model, "merges", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		malformed("model.merges must be an array");
	initStringInfo(&bpe);
	appendStringInfoString(&bpe, "#version: 0.2\n");
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &jv, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		CHECK_FOR_INTERRUPTS();
		if (jv.type == jbvString)
		{
			const char *s = jv.val.string.val;
			int			len = jv.val.string.len,
						sp = -1;

			for (int i = 0; i < len; i++)
				if (s[i] == ' ')
				{
					if (sp >= 0)
						malformed("a merge must be two pieces separated by one space");
					sp = i;
				}
				else if (s[i] == '\n' || s[i] == '\r')
					malformed("a merge holds a line break");
			if (sp <= 0 || sp == len - 1)
				malformed("a merge must be two pieces separated by one space");
			appendBinaryStringInfo(&bpe, s, len);
		}
		else if (jv.type == jbvBinary && JsonContainerIsArray(jv.val.binary.data) &&
				 JsonContainerSize(jv.val.binary.data) == 2)
		{
			for (int k = 0; k < 2; k++)
			{
				JsonbValue *e = getIthJsonbValueFromContainer(jv.val.binary.data, k);

				if (!e || e->type != jbvString || e->val.string.len == 0)
					malformed("a merge pair must hold two non-empty strings");
				if (k)
					appendStringInfoChar(&bpe, ' ');
				append_piece(&bpe, e->val.string.val, e->val.string.len);
			}
		}
		else
			malformed("a merge must be a string \"a b\" or a pair [a, b]");
		appendStringInfoChar(&bpe, '\n');
	}

	/* added tokens keep their ids: each must be that piece of the vocabulary */
	v = tfm_jget(root, "added_tokens", &buf);
	if (v && v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		JsonbValue	vbuf,
				   *vocab = tfm_jget(model, "vocab", &vbuf);
		int			n = JsonContainerSize(v->val.binary.data);

		for (int i = 0; i < n; i++)
		{
			JsonbValue *t = getIthJsonbValueFromContainer(v->val.binary.data, i);
			JsonbValue	b1,
						b2,
						b3,
					   *idv,
					   *cv,
					   *inv;
			int			id;

			if (!t || t->type != jbvBinary || !JsonContainerIsObject(t->val.binary.data))
				malformed("an added token must be an object");
			idv = tfm_jget(t->val.binary.data, "id", &b1);
			cv = tfm_jget(t->val.binary.data, "content", &b2);
			if (!idv || !cv || cv->type != jbvString)
				malformed("an added token needs an id and a content");
			id = int_value(idv, "an added token's id");
			inv = getKeyJsonValueFromContainer(vocab->val.binary.data, cv->val.string.val,
											   cv->val.string.len, &b3);
			if (!inv || int_value(inv, "a model.vocab id") != id)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("added token \"%s\" (id %d) is not that piece of the vocabulary",
								pnstrdup(cv->val.string.val, Min(cv->val.string.len, 64)), id),
						 errdetail("tfm keeps the ids of added tokens only when model.vocab has them.")));
		}
	}
	else if (v && v->type != jbvNull)
		malformed("added_tokens must be an array");

	(void) tfm_tokenizer_import_gpt2(name, enc, strlen(enc), bpe.data, bpe.len);
	(void) n_ids;
}
