/*
 * import_tokenizer.c — a Hugging Face tokenizer.json stored as a tfm
 * tokenizer.  Supported: byte-level BPE (model.type "BPE" with the
 * ByteLevel pre-tokenizer and no normalizer: GPT-2's), which is exactly
 * tfm's GPT-2 import, fed with the encoder.json and vocab.bpe texts that
 * the file's model.vocab and model.merges ("a b" strings or [a, b] pairs)
 * spell.  Ids are kept as the file gives them; every added token must be
 * a piece of the vocabulary with the same id.  A BPE with byte_fallback is
 * SentencePiece-style (import_spiece.c).  Also WordPiece with BERT's
 * uncased normalizer (BertNormalizer with clean_text, handle_chinese_chars,
 * lowercase and strip_accents on) and BertPreTokenizer, as a tfm wordpiece
 * tokenizer with the bert flag: the file's ids; its unk_token, the [PAD]
 * (tokenizer.json's padding token, else "[PAD]"), and the post-processor's
 * [CLS] and [SEP] (TemplateProcessing "[CLS] $A [SEP]", BertProcessing or
 * RobertaProcessing) become tfm's <unk>, <pad>, <cls> and <sep>; <bos> and
 * <eos> are added after the last id.  Other models, normalizers,
 * pre-tokenizers and options are refused by name.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import.h"
#include "tfm/tokenizer.h"
#include "tfm_pg.h"
#include "tfm_rows.h"

static void
refuse(const char *what, const char *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer %s %s is not supported yet", what, value),
			 errdetail("tfm imports byte-level BPE tokenizers (GPT-2's) and uncased BERT WordPiece ones.")));
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

/* the id of a model.vocab piece, or -1 */
static int
vocab_id(JsonbContainer *vocab, const char *piece, int len)
{
	JsonbValue	b,
			   *v = getKeyJsonValueFromContainer(vocab, piece, len, &b);

	return v ? int_value(v, "a model.vocab id") : -1;
}

/* a string field of an object, or NULL */
static char *
str_field(JsonbContainer *c, const char *key)
{
	JsonbValue	b,
			   *v = tfm_jget(c, key, &b);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvString)
		malformed(psprintf("\"%s\" must be a string", key));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* the post-processor's [CLS] and [SEP] ids */
static void
post_processor_ids(JsonbContainer *root, int *cls, int *sep)
{
	JsonbContainer *pp;
	char	   *type = field_type(root, "post_processor", &pp);

	*cls = *sep = -1;
	if (!type)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a WordPiece tokenizer.json without a post_processor is not supported"),
				 errdetail("tfm adds the [CLS] and [SEP] tokens the post-processor names.")));
	if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0)
	{
		const char *keys[2] = {"cls", "sep"};

		for (int k = 0; k < 2; k++)
		{
			JsonbValue	b,
					   *v = tfm_jget(pp, keys[k], &b),
					   *id;

			if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
				JsonContainerSize(v->val.binary.data) != 2 ||
				!(id = getIthJsonbValueFromContainer(v->val.binary.data, 1)))
				malformed(psprintf("post_processor.%s must be a [token, id] pair", keys[k]));
			*(k ? sep : cls) = int_value(id, "a post_processor id");
		}
		return;
	}
	if (strcmp(type, "TemplateProcessing") != 0)
		refuse("post_processor", type);
	{
		/* single must be SpecialToken, Sequence A, SpecialToken (type ids 0) */
		JsonbValue	b,
				   *single = tfm_jget(pp, "single", &b),
					sb,
				   *st = tfm_jget(pp, "special_tokens", &sb);
		int			ids[3] = {-1, -1, -1};

		if (!single || single->type != jbvBinary || !JsonContainerIsArray(single->val.binary.data) ||
			JsonContainerSize(single->val.binary.data) != 3 ||
			!st || st->type != jbvBinary || !JsonContainerIsObject(st->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("post_processor template is not supported"),
					 errdetail("tfm applies templates of the form \"[CLS] $A [SEP]\".")));
		for (int i = 0; i < 3; i++)
		{
			JsonbValue *el = getIthJsonbValueFromContainer(single->val.binary.data, i);
			JsonbValue	ib,
					   *inner;
			bool		want_seq = i == 1;

			if (!el || el->type != jbvBinary || !JsonContainerIsObject(el->val.binary.data))
				malformed("a post_processor template element must be an object");
			inner = tfm_jget(el->val.binary.data, want_seq ? "Sequence" : "SpecialToken", &ib);
			if (!inner || inner->type != jbvBinary)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("post_processor template is not supported"),
						 errdetail("tfm applies templates of the form \"[CLS] $A [SEP]\".")));
			if (!want_seq)
			{
				char	   *tokname = str_field(inner->val.binary.data, "id");
				JsonbValue	tb,
						   *spec,
						   *idsv;

				if (!tokname)
					malformed("a SpecialToken needs an id");
				spec = getKeyJsonValueFromContainer(st->val.binary.data, tokname, strlen(tokname), &tb);
				if (!spec || spec->type != jbvBinary ||
					!(idsv = tfm_jget(spec->val.binary.data, "ids", &ib)) ||
					idsv->type != jbvBinary || JsonContainerSize(idsv->val.binary.data) != 1)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("post_processor special token \"%s\" must be one id", tokname)));
				ids[i] = int_value(getIthJsonbValueFromContainer(idsv->val.binary.data, 0),
								   "a special token id");
			}
		}
		*cls = ids[0];
		*sep = ids[2];
	}
}

static void
import_wordpiece(const char *name, JsonbContainer *root, JsonbContainer *model, int model_vocab)
{
	JsonbContainer *obj,
			   *vocab;
	char	   *type,
			   *s;
	JsonbValue	buf,
			   *v,
				jv,
				kv;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	int			n,
				V,
				unk,
				pad,
				cls,
				sep;
	const uint8 **pieces;
	size_t	   *lens;
	tfm_tok_info info;

	type = field_type(root, "normalizer", &obj);
	if (!type || strcmp(type, "BertNormalizer") != 0)
		refuse("normalizer", type ? type : "null");
	if (!is_true(obj, "clean_text") || !is_true(obj, "handle_chinese_chars") || !is_true(obj, "lowercase"))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("BertNormalizer without clean_text, handle_chinese_chars or lowercase is not supported yet"),
				 errdetail("tfm imports uncased BERT tokenizers.")));
	v = tfm_jget(obj, "strip_accents", &buf);
	if (v && v->type != jbvNull && !(v->type == jbvBool && v->val.boolean))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("BertNormalizer with strip_accents false is not supported yet")));
	type = field_type(root, "pre_tokenizer", &obj);
	if (!type || strcmp(type, "BertPreTokenizer") != 0)
		refuse("pre_tokenizer", type ? type : "null");
	if ((type = field_type(root, "decoder", &obj)) != NULL && strcmp(type, "WordPiece") != 0)
		refuse("decoder", type);
	s = str_field(model, "continuing_subword_prefix");
	if (s && strcmp(s, "##") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.continuing_subword_prefix \"%s\" is not supported", s)));
	v = tfm_jget(model, "max_input_chars_per_word", &buf);
	if (v && v->type != jbvNull && int_value(v, "model.max_input_chars_per_word") != TFM_TOK_WORDPIECE_MAX_CHARS)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer option model.max_input_chars_per_word other than %d is not supported",
						TFM_TOK_WORDPIECE_MAX_CHARS)));
	v = tfm_jget(model, "vocab", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		malformed("model.vocab must be an object");
	vocab = v->val.binary.data;
	V = JsonContainerSize(vocab);
	if (V < 1 || V > TFM_TOK_MAX_VOCAB_SIZE - 8)
		malformed("model.vocab must hold between 1 and 4 million pieces");
	if (V > model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json has %d pieces, but the model's vocab_size is %d", V, model_vocab)));
	/* pieces by id: the ids must be 0 .. V-1, each once */
	n = V + 3;
	pieces = palloc0(sizeof(uint8 *) * n);
	lens = palloc0(sizeof(size_t) * n);
	it = JsonbIteratorInit(vocab);
	while ((tok = JsonbIteratorNext(&it, &kv, true)) != WJB_DONE)
	{
		int			id;

		if (tok != WJB_KEY)
			continue;
		CHECK_FOR_INTERRUPTS();
		tok = JsonbIteratorNext(&it, &jv, true);
		id = int_value(&jv, "a model.vocab id");
		if (id >= V || pieces[id])
			malformed(psprintf("model.vocab ids must be 0 to %d, each once (id %d)", V - 1, id));
		if (kv.val.string.len == 0)
			malformed("model.vocab has an empty piece");
		pieces[id] = (const uint8 *) kv.val.string.val;
		lens[id] = kv.val.string.len;
	}
	s = str_field(model, "unk_token");
	if (!s || (unk = vocab_id(vocab, s, strlen(s))) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model.unk_token \"%s\" is not a piece of model.vocab", s ? s : "")));
	pad = -1;
	v = tfm_jget(root, "padding", &buf);
	if (v && v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data) &&
		(s = str_field(v->val.binary.data, "pad_token")) != NULL)
		pad = vocab_id(vocab, s, strlen(s));
	if (pad < 0)
		pad = vocab_id(vocab, "[PAD]", 5);
	post_processor_ids(root, &cls, &sep);
	if (cls < 0 || cls >= V || sep < 0 || sep >= V || cls == sep || cls == unk || sep == unk ||
		pad == cls || pad == sep || pad == unk)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json special tokens must be distinct pieces of model.vocab "
						"(unk %d, pad %d, cls %d, sep %d)", unk, pad, cls, sep)));
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_WORDPIECE;
	info.flags = TFM_TOK_INFO_BERT;
	info.special_ids[TFM_TOK_UNK] = unk;
	info.special_ids[TFM_TOK_CLS] = cls;
	info.special_ids[TFM_TOK_SEP] = sep;
	n = V;
	if (pad < 0)
	{
		pad = n;
		pieces[n] = (const uint8 *) "<pad>";
		lens[n++] = 5;
	}
	info.special_ids[TFM_TOK_PAD] = pad;
	info.special_ids[TFM_TOK_BOS] = n;
	pieces[n] = (const uint8 *) "<bos>";
	lens[n++] = 5;
	info.special_ids[TFM_TOK_EOS] = n;
	pieces[n] = (const uint8 *) "<eos>";
	lens[n++] = 5;
	info.vocab_size = n;
	tfm_tokenizer_store_pieces(name, &info, pieces, lens);
}

bool
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
	if (strcmp(type, "WordPiece") == 0)
	{
		import_wordpiece(name, root, model, model_vocab);
		return true;
	}
	if (strcmp(type, "BPE") != 0)
		refuse("model", type);
	type = field_type(root, "pre_tokenizer", &obj);
	if (is_true(model, "byte_fallback") && (!type || strcmp(type, "ByteLevel") != 0))
	{
		/* SentencePiece-style BPE (Llama 2, TinyLlama), not byte-level */
		tfm_hf_import_spiece(name, tokenizer, model_vocab);
		return false;
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
	return false;
}
