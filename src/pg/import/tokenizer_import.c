/*
 * tokenizer_import.c — a Hugging Face tokenizer.json stored as a tfm
 * tokenizer.  Supported:
 *
 * Byte-level BPE (model.type "BPE", no normalizer).  GPT-2's shape (the
 * ByteLevel pre-tokenizer alone, no post-processor specials) is exactly
 * tfm's GPT-2 import, fed with the encoder.json and vocab.bpe texts that
 * the file's model.vocab and model.merges ("a b" strings or [a, b] pairs)
 * spell.  The other published shapes become a bpe tokenizer with the
 * tokenizer.json flag (tok_hf.c): ByteLevel with add_prefix_space
 * (RoBERTa's option), Sequence[Split(Llama 3's or GPT-2's pattern,
 * Isolated), ByteLevel(use_regex false)] (Llama 3), Sequence[Digits,
 * ByteLevel] (SmolLM) — these run by tfm's hand-written scanners — and any
 * other Sequence of Digits and Split steps (any regular expression, any
 * behavior, invert; Qwen2's, GPT-4o's, DeepSeek's) before a ByteLevel, run
 * by PCRE2 (tok_split_pcre.c); the NFC normalizer (Qwen2's), alone or in a
 * Sequence (DeepSeek V3's empty one); model.ignore_merges; the added
 * tokens, in model.vocab or after it (Llama 3's specials), found in a text
 * as Hugging Face finds them (tok_added.c; read as plain text with
 * tfm.split_special_tokens),
 * and the post-processor's specials: RobertaProcessing / BertProcessing /
 * TemplateProcessing "X $A Y" give <cls> and <sep> (an encoder reads text
 * as X text Y), TemplateProcessing "X $A" gives <bos>, which a model's text
 * begins with.  Ids are kept as the file gives them.
 * A BPE with byte_fallback is SentencePiece-style (spiece.c: Llama 2,
 * Gemma 3).
 *
 * WordPiece with BERT's normalizer (BertNormalizer with clean_text and
 * handle_chinese_chars; lowercase and strip_accents as the file says,
 * strip_accents null following lowercase) and BertPreTokenizer, as a tfm
 * wordpiece tokenizer with the bert flag (and the cased and keep-accents
 * flags): the file's ids; its unk_token, the [PAD] (tokenizer.json's
 * padding token, else "[PAD]"), and the post-processor's [CLS] and [SEP]
 * become tfm's <unk>, <pad>, <cls> and <sep>; <bos> and <eos> are added
 * after the last id.
 *
 * Other models, normalizers, pre-tokenizers, templates and options are
 * refused by name.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "tfm/tokenizer.h"
#include "storage/tokenizers/tokenizers.h"
#include "runtime/rows.h"

static void
refuse(const char *what, const char *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer %s %s is not supported yet", what, value),
			 errdetail("tfm imports byte-level BPE tokenizers (GPT-2, RoBERTa, Llama 3, Qwen2, SmolLM), "
					   "SentencePiece-style BPE (Llama 2) and BERT WordPiece ones.")));
}

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
		tfm_hf_malformed(psprintf("\"%s\" must be an object", key));
	*obj = v->val.binary.data;
	t = tfm_jget(*obj, "type", &tb);
	if (!t || t->type != jbvString)
		tfm_hf_malformed(psprintf("\"%s\" has no \"type\"", key));
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
	return tfm_hf_uint(v, what, INT_MAX);
}

/*
 * model.vocab (an object piece → id) by id into pieces/lens (limit slots,
 * zeroed): every id below limit and given once, no empty piece.  The
 * pieces point into the jsonb.  Returns the largest id.
 */
static int
vocab_by_id(JsonbContainer *vocab, int limit, const uint8 **pieces, size_t *lens)
{
	JsonbIterator *it = JsonbIteratorInit(vocab);
	JsonbValue	kv,
				jv;
	JsonbIteratorToken tok;
	int			max_id = -1;

	while ((tok = JsonbIteratorNext(&it, &kv, true)) != WJB_DONE)
	{
		int			id;

		if (tok != WJB_KEY)
			continue;
		CHECK_FOR_INTERRUPTS();
		(void) JsonbIteratorNext(&it, &jv, true);
		id = int_value(&jv, "a model.vocab id");
		if (id >= limit || pieces[id])
			tfm_hf_malformed(psprintf("model.vocab ids must be 0 to %d, each once (id %d)", limit - 1, id));
		if (kv.val.string.len == 0)
			tfm_hf_malformed("model.vocab has an empty piece");
		pieces[id] = (const uint8 *) kv.val.string.val;
		lens[id] = kv.val.string.len;
		max_id = Max(max_id, id);
	}
	return max_id;
}

/* a merge piece must be a single line without spaces to fit vocab.bpe */
static void
append_piece(StringInfo s, const char *p, int len)
{
	for (int i = 0; i < len; i++)
		if (p[i] == ' ' || p[i] == '\n' || p[i] == '\r')
			tfm_hf_malformed("a merge piece holds a space or a line break");
	appendBinaryStringInfo(s, p, len);
}

/* the id of a model.vocab piece, or -1 */
static int
vocab_id(JsonbContainer *vocab, const char *piece, int len)
{
	return tfm_hf_vocab_id(vocab, piece, len, INT_MAX);
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
		tfm_hf_malformed(psprintf("\"%s\" must be a string", key));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static void
template_refused(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("post_processor template is not supported"),
			 errdetail("tfm applies templates of the form \"[CLS] $A [SEP]\" (and, for byte-level BPE, "
					   "\"<s> $A\" and \"$A\").")));
}

/* the id of a TemplateProcessing special token of the given name */
static int
template_special_id(JsonbContainer *special_tokens, const char *tokname)
{
	JsonbValue	tb,
				ib,
			   *spec,
			   *idsv;

	spec = getKeyJsonValueFromContainer(special_tokens, tokname, strlen(tokname), &tb);
	if (!spec || spec->type != jbvBinary ||
		!(idsv = tfm_jget(spec->val.binary.data, "ids", &ib)) ||
		idsv->type != jbvBinary || JsonContainerSize(idsv->val.binary.data) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("post_processor special token \"%s\" must be one id", tokname)));
	return int_value(getIthJsonbValueFromContainer(idsv->val.binary.data, 0),
					 "a special token id");
}

/*
 * The specials one post-processor puts around a text: cls and sep
 * (BertProcessing, RobertaProcessing, "X $A Y"), or bos ("X $A"); a
 * ByteLevel one (offsets only) and "$A" add none.  bpe allows the forms
 * only byte-level files use.
 */
static void
one_post_processor(JsonbContainer *pp, const char *type, bool bpe, int *cls, int *sep, int *bos)
{
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
				tfm_hf_malformed(psprintf("post_processor.%s must be a [token, id] pair", keys[k]));
			*(k ? sep : cls) = int_value(id, "a post_processor id");
		}
		return;
	}
	if (bpe && strcmp(type, "ByteLevel") == 0)
		return;
	if (strcmp(type, "TemplateProcessing") != 0)
		refuse("post_processor", type);
	{
		/* single: SpecialToken $A SpecialToken, SpecialToken $A, or $A (type ids 0) */
		JsonbValue	b,
				   *single = tfm_jget(pp, "single", &b),
					sb,
				   *st = tfm_jget(pp, "special_tokens", &sb);
		int			ids[3] = {-1, -1, -1},
					n;

		if (!single || single->type != jbvBinary || !JsonContainerIsArray(single->val.binary.data))
			template_refused();
		n = JsonContainerSize(single->val.binary.data);
		if (n != 3 && !(bpe && (n == 1 || n == 2)))
			template_refused();
		for (int i = 0; i < n; i++)
		{
			JsonbValue *el = getIthJsonbValueFromContainer(single->val.binary.data, i);
			JsonbValue	ib,
					   *inner;
			bool		want_seq = (n == 1 && i == 0) || (n > 1 && i == 1);

			if (!el || el->type != jbvBinary || !JsonContainerIsObject(el->val.binary.data))
				tfm_hf_malformed("a post_processor template element must be an object");
			inner = tfm_jget(el->val.binary.data, want_seq ? "Sequence" : "SpecialToken", &ib);
			if (!inner || inner->type != jbvBinary)
				template_refused();
			if (!want_seq)
			{
				char	   *tokname = str_field(inner->val.binary.data, "id");

				if (!tokname)
					tfm_hf_malformed("a SpecialToken needs an id");
				if (!st || st->type != jbvBinary || !JsonContainerIsObject(st->val.binary.data))
					template_refused();
				ids[i] = template_special_id(st->val.binary.data, tokname);
			}
		}
		if (n == 3)
		{
			*cls = ids[0];
			*sep = ids[2];
		}
		else if (n == 2)
			*bos = ids[0];
	}
}

/*
 * Element i of a Sequence's array: an object with a "type" (its type in
 * *type), else malformed ("a <what> of a Sequence must be ...").
 */
static JsonbContainer *
sequence_element(JsonbContainer *arr, int i, const char *what, char **type)
{
	JsonbValue *el = getIthJsonbValueFromContainer(arr, i),
				tb,
			   *t;

	if (!el || el->type != jbvBinary || !JsonContainerIsObject(el->val.binary.data) ||
		!(t = tfm_jget(el->val.binary.data, "type", &tb)) || t->type != jbvString)
		tfm_hf_malformed(psprintf("a %s of a Sequence must be an object with a \"type\"", what));
	*type = pnstrdup(t->val.string.val, t->val.string.len);
	return el->val.binary.data;
}

/* the post-processor's specials: cls, sep and bos ids, -1 where it has none */
static void
post_processor_ids(JsonbContainer *root, bool bpe, int *cls, int *sep, int *bos)
{
	JsonbContainer *pp;
	char	   *type = field_type(root, "post_processor", &pp);

	*cls = *sep = *bos = -1;
	if (!type)
	{
		if (bpe)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a WordPiece tokenizer.json without a post_processor is not supported"),
				 errdetail("tfm adds the [CLS] and [SEP] tokens the post-processor names.")));
	}
	if (bpe && strcmp(type, "Sequence") == 0)
	{
		/* Llama 3's: [ByteLevel, TemplateProcessing] */
		JsonbContainer *procs = tfm_hf_array(pp, "processors", "post_processor.processors");
		int			n = JsonContainerSize(procs),
					given = 0;

		for (int i = 0; i < n; i++)
		{
			char	   *et;
			JsonbContainer *el = sequence_element(procs, i, "post_processor", &et);
			int			c = -1,
						s = -1,
						o = -1;

			one_post_processor(el, et, true, &c, &s, &o);
			if (c >= 0 || o >= 0)
			{
				if (given++)
					refuse("post_processor", "Sequence with two processors that add tokens");
				*cls = c;
				*sep = s;
				*bos = o;
			}
		}
		return;
	}
	one_post_processor(pp, type, bpe, cls, sep, bos);
}

static void
import_wordpiece(const char *name, JsonbContainer *root, JsonbContainer *model, int model_vocab,
				 int32 *special_ids)
{
	JsonbContainer *obj,
			   *vocab;
	char	   *type,
			   *s;
	JsonbValue	buf,
			   *v;
	int			n,
				V,
				unk,
				pad,
				cls,
				sep,
				bos;
	bool		lower,
				strip;
	const uint8 **pieces;
	size_t	   *lens;
	tfm_tok_info info;

	type = field_type(root, "normalizer", &obj);
	if (!type || strcmp(type, "BertNormalizer") != 0)
		refuse("normalizer", type ? type : "null");
	if (!is_true(obj, "clean_text") || !is_true(obj, "handle_chinese_chars"))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("BertNormalizer without clean_text or handle_chinese_chars is not supported yet")));
	/* lowercase true or false; strip_accents null means "as lowercase" */
	v = tfm_jget(obj, "lowercase", &buf);
	if (v && v->type != jbvBool && v->type != jbvNull)
		tfm_hf_malformed("normalizer.lowercase must be true or false");
	lower = !v || v->type == jbvNull || v->val.boolean;
	v = tfm_jget(obj, "strip_accents", &buf);
	if (v && v->type != jbvBool && v->type != jbvNull)
		tfm_hf_malformed("normalizer.strip_accents must be true, false or null");
	strip = (!v || v->type == jbvNull) ? lower : v->val.boolean;
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
	vocab = tfm_hf_model_vocab(model, model_vocab,
							   "model.vocab must hold between 1 and 4 million pieces", &V);
	/* pieces by id: the ids must be 0 .. V-1, each once */
	n = V + 3;
	pieces = palloc0(sizeof(uint8 *) * n);
	lens = palloc0(sizeof(size_t) * n);
	(void) vocab_by_id(vocab, V, pieces, lens);
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
	post_processor_ids(root, false, &cls, &sep, &bos);
	if (cls < 0 || cls >= V || sep < 0 || sep >= V || cls == sep || cls == unk || sep == unk ||
		pad == cls || pad == sep || pad == unk)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json special tokens must be distinct pieces of model.vocab "
						"(unk %d, pad %d, cls %d, sep %d)", unk, pad, cls, sep)));
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_WORDPIECE;
	info.flags = TFM_TOK_INFO_BERT | (lower ? 0 : TFM_TOK_INFO_CASED) |
		(strip ? 0 : TFM_TOK_INFO_KEEP_ACCENTS);
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
	memcpy(special_ids, info.special_ids, sizeof(info.special_ids));
}

/* ---- byte-level BPE ------------------------------------------------------- */

/* the Split patterns tfm knows, exactly as tokenizer.json files spell them */
static const char GPT2_PATTERN[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char LLAMA3_PATTERN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
	" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* tiktoken's spelling of the same (possessive quantifiers: same matches) */
static const char CL100K_PATTERN[] =
	"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}|"
	" ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";

static void
option_refused(const char *option)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tokenizer option %s is not supported", option)));
}

/* a ByteLevel pre-tokenizer: its add_prefix_space and use_regex */
static void
byte_level_options(JsonbContainer *obj, bool *prefix, bool *use_regex)
{
	JsonbValue	buf,
			   *v;

	*prefix = is_true(obj, "add_prefix_space");
	v = tfm_jget(obj, "use_regex", &buf);
	*use_regex = !(v && v->type == jbvBool && !v->val.boolean);
}

/* a rule appended to rules (at most TFM_TOK_MAX_SPLITS) */
static void
add_rule(TfmSplitRule *rules, int *n, const char *pattern, int behavior, bool invert)
{
	if (*n >= TFM_TOK_MAX_SPLITS)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a pre-tokenizer of more than %d Split steps is not supported",
						TFM_TOK_MAX_SPLITS)));
	rules[*n].pattern = pattern;
	rules[*n].behavior = behavior;
	rules[*n].invert = invert;
	(*n)++;
}

/*
 * A Split pre-tokenizer as a rule: a Regex pattern as it is, a String one
 * quoted (\Q...\E); the behavior by its name.  Returns the flag of
 * tfm's hand-written scanner for it (0 for GPT-2's pattern, LLAMA3 for
 * Llama 3's and cl100k's) when it is one of those, Isolated and not
 * inverted, else -1.
 */
static int64
split_rule(JsonbContainer *obj, TfmSplitRule *rules, int *n)
{
	JsonbValue	buf,
			   *v = tfm_jget(obj, "pattern", &buf),
				rb,
			   *re;
	char	   *behavior = str_field(obj, "behavior"),
			   *pat;
	tfm_tok_split_behavior b;
	bool		invert = is_true(obj, "invert");

	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		tfm_hf_malformed("pre_tokenizer Split needs a pattern object");
	if (!behavior || tfm_tok_split_behavior_parse(&b, behavior) != TFM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pre-tokenizer Split behavior %s is not supported", behavior ? behavior : "null"),
				 errdetail("tfm applies Split with the behaviors Isolated, Removed, MergedWithPrevious, "
						   "MergedWithNext and Contiguous.")));
	if ((re = tfm_jget(v->val.binary.data, "Regex", &rb)) != NULL && re->type == jbvString)
		pat = pnstrdup(re->val.string.val, re->val.string.len);
	else if ((re = tfm_jget(v->val.binary.data, "String", &rb)) != NULL && re->type == jbvString &&
			 re->val.string.len > 0)
	{
		char	   *lit = pnstrdup(re->val.string.val, re->val.string.len);

		if (strstr(lit, "\\E"))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("pre-tokenizer Split with a String pattern holding \"\\E\" is not supported")));
		pat = psprintf("\\Q%s\\E", lit);
	}
	else
		tfm_hf_malformed("pre_tokenizer Split needs a Regex or a non-empty String pattern");
	if (strlen(pat) > TFM_TOK_MAX_SPLIT_PATTERN_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pre-tokenizer Split pattern is %zu bytes long, longer than tfm's limit of %d",
						strlen(pat), TFM_TOK_MAX_SPLIT_PATTERN_BYTES)));
	add_rule(rules, n, pat, b, invert);
	if (b != TFM_TOK_SPLIT_ISOLATED || invert)
		return -1;
	if (strcmp(pat, GPT2_PATTERN) == 0)
		return 0;
	if (strcmp(pat, LLAMA3_PATTERN) == 0 || strcmp(pat, CL100K_PATTERN) == 0)
		return TFM_TOK_INFO_LLAMA3;
	return -1;
}

/*
 * The pre-tokenizer of a byte-level BPE: ByteLevel alone (with or without
 * add_prefix_space), or a Sequence of Digits and Split steps ending with
 * ByteLevel (without add_prefix_space; its use_regex adds GPT-2's pattern
 * as a last step).  The shapes tfm's hand-written scanners run — ByteLevel
 * alone; Sequence[Digits?, Split(GPT-2's, Llama 3's or cl100k's pattern,
 * Isolated)?, ByteLevel] with use_regex true exactly when there is no
 * Split — give their flags and no rules; any other gives the SPLIT flag
 * and its steps as rules (*n_rules of them), run by PCRE2.  *plain is set
 * for GPT-2's (ByteLevel alone, no prefix space).
 */
static uint32
bpe_pre_tokenizer(JsonbContainer *root, bool *plain, TfmSplitRule *rules, int *n_rules)
{
	JsonbContainer *pt;
	char	   *type = field_type(root, "pre_tokenizer", &pt);
	bool		prefix,
				use_regex,
				have_bl = false,
				scanner = true;
	int			n_splits = 0;
	uint32		flags = 0;
	JsonbContainer *seq;
	int			n;

	*plain = false;
	*n_rules = 0;
	if (!type)
		refuse("pre_tokenizer", "null");
	if (strcmp(type, "ByteLevel") == 0)
	{
		byte_level_options(pt, &prefix, &use_regex);
		if (!use_regex)
			option_refused("pre_tokenizer.use_regex false (without a Split before it)");
		*plain = !prefix;
		return prefix ? TFM_TOK_INFO_PREFIX_SPACE : 0;
	}
	if (strcmp(type, "Sequence") != 0)
		refuse("pre_tokenizer", type);
	seq = tfm_hf_array(pt, "pretokenizers", "pre_tokenizer.pretokenizers");
	n = JsonContainerSize(seq);
	for (int i = 0; i < n; i++)
	{
		char	   *et;
		JsonbContainer *o = sequence_element(seq, i, "pre-tokenizer", &et);

		if (have_bl)
			refuse("pre_tokenizer", psprintf("%s after ByteLevel in a Sequence", et));
		if (strcmp(et, "Digits") == 0)
		{
			bool		one = is_true(o, "individual_digits");

			add_rule(rules, n_rules, one ? "\\p{N}" : "\\p{N}+", TFM_TOK_SPLIT_ISOLATED, false);
			if (i == 0)
				flags |= one ? TFM_TOK_INFO_DIGITS : TFM_TOK_INFO_DIGIT_RUNS;
			else
				scanner = false;
		}
		else if (strcmp(et, "Split") == 0)
		{
			int64		f = split_rule(o, rules, n_rules);

			if (f < 0 || n_splits++ > 0)
				scanner = false;
			else
				flags |= (uint32) f;
		}
		else if (strcmp(et, "ByteLevel") == 0)
		{
			byte_level_options(o, &prefix, &use_regex);
			if (prefix)
				option_refused("pre_tokenizer.add_prefix_space in a Sequence");
			if (use_regex)
				add_rule(rules, n_rules, GPT2_PATTERN, TFM_TOK_SPLIT_ISOLATED, false);
			if (use_regex == (n_splits > 0))
				scanner = false;
			have_bl = true;
		}
		else
			refuse("pre_tokenizer", psprintf("%s in a Sequence", et));
	}
	if (!have_bl)
		refuse("pre_tokenizer", "Sequence without a final ByteLevel");
	if (*n_rules == 0)
		option_refused("pre_tokenizer ByteLevel use_regex false without a Split");
	if (scanner)
	{
		*n_rules = 0;
		return flags;
	}
	return TFM_TOK_INFO_SPLIT;
}

/*
 * A byte-level BPE other than GPT-2's shape (tok_hf.c): model.vocab's
 * pieces and the added tokens outside it, by id; the merges; the
 * post-processor's specials.
 */
static void
import_hf_bpe(const char *name, JsonbContainer *root, JsonbContainer *model, int model_vocab,
			  uint32 flags, const TfmSplitRule *rules, int n_rules, int32 *special_ids)
{
	JsonbValue	buf,
			   *v;
	JsonbContainer *vocab;
	int			V,
				n,
				max_id = -1,
				n_merges = 0,
				cls,
				sep,
				bos;
	const uint8_t **pieces;
	size_t	   *lens;
	uint8_t    *literal;
	int32_t    *merge_lr;
	int32_t		specials[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
	char	   *s;
	TfmHfAdded *added;
	int			n_added;
	TfmAddedTokens added_list;

	v = tfm_jget(model, "vocab", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		tfm_hf_malformed("model.vocab must be an object");
	vocab = v->val.binary.data;
	V = JsonContainerSize(vocab);
	if (V < 1 || V > TFM_TOK_MAX_VOCAB_SIZE - 8)
		tfm_hf_malformed("model.vocab must hold between 1 and 4 million pieces");
	/* ids: model.vocab's and the added tokens', 0 .. n-1 each once */
	added = tfm_hf_added_tokens(root, vocab, &n_added);
	n = V + n_added;
	pieces = palloc0(sizeof(uint8_t *) * n);
	lens = palloc0(sizeof(size_t) * n);
	literal = palloc0(n);
	max_id = vocab_by_id(vocab, n, pieces, lens);
	n = tfm_hf_place_added(added, n_added, pieces, lens, literal, n, max_id, model_vocab);
	tfm_hf_added_list(&added_list, added, n_added);

	merge_lr = tfm_hf_merges(model, vocab, INT_MAX, &n_merges);

	post_processor_ids(root, true, &cls, &sep, &bos);
	if ((cls >= 0 && cls >= n) || (sep >= 0 && sep >= n) || (bos >= 0 && bos >= n))
		tfm_hf_malformed("a post_processor id is not one of the vocabulary's ids");
	specials[TFM_TOK_CLS] = cls;
	specials[TFM_TOK_SEP] = sep;
	specials[TFM_TOK_BOS] = bos;
	if (bos >= 0)
		flags |= TFM_TOK_INFO_TEXT_BOS;
	v = tfm_jget(root, "padding", &buf);
	if (v && v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data) &&
		(s = str_field(v->val.binary.data, "pad_token")) != NULL)
		specials[TFM_TOK_PAD] = vocab_id(vocab, s, strlen(s));
	if (cls >= 0 && cls == sep)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json special tokens must be distinct (cls %d, sep %d)", cls, sep)));
	if (specials[TFM_TOK_PAD] >= 0 &&
		(specials[TFM_TOK_PAD] == cls || specials[TFM_TOK_PAD] == sep || specials[TFM_TOK_PAD] == bos))
		specials[TFM_TOK_PAD] = -1;
	(void) tfm_tokenizer_import_hf_bpe(name, pieces, lens, literal, n, merge_lr, n_merges,
									   specials, flags, rules, n_rules, &added_list, special_ids);
}

/* does an added token lie outside model.vocab (a special after its ids)? */
static bool
added_outside_vocab(JsonbContainer *root, JsonbContainer *model)
{
	JsonbValue	b1,
				b2,
			   *v = tfm_jget(root, "added_tokens", &b1),
			   *voc = tfm_jget(model, "vocab", &b2);

	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
		!voc || voc->type != jbvBinary || !JsonContainerIsObject(voc->val.binary.data))
		return false;
	for (int i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(v->val.binary.data, i);
		char	   *content;

		if (!t || t->type != jbvBinary || !JsonContainerIsObject(t->val.binary.data))
			tfm_hf_malformed("an added token must be an object");
		content = str_field(t->val.binary.data, "content");
		if (content && vocab_id(voc->val.binary.data, content, strlen(content)) < 0)
			return true;
	}
	return false;
}

void
tfm_hf_import_tokenizer(const char *name, Jsonb *tokenizer, int model_vocab, int32 *special_ids)
{
	JsonbContainer *root = &tokenizer->root,
			   *model,
			   *obj,
			   *merges;
	char	   *type;
	JsonbValue	buf,
			   *v;
	JsonbIterator *it;
	JsonbValue	jv;
	JsonbIteratorToken tok;
	char	   *enc;
	StringInfoData bpe;
	int			max_id = -1,
				n_ids = 0,
				cls,
				sep,
				bos;
	uint32		flags,
				nfc = 0;
	bool		plain;
	TfmSplitRule rules[TFM_TOK_MAX_SPLITS];
	int			n_rules;

	if (!JB_ROOT_IS_OBJECT(tokenizer) || JB_ROOT_IS_SCALAR(tokenizer))
		tfm_hf_malformed("it must be a JSON object");
	type = field_type(root, "model", &model);
	if (!model)
		tfm_hf_malformed("it has no \"model\"");
	if (strcmp(type, "WordPiece") == 0)
	{
		import_wordpiece(name, root, model, model_vocab, special_ids);
		return;
	}
	if (strcmp(type, "Unigram") == 0)
	{
		tfm_hf_import_unigram(name, tokenizer, model_vocab, special_ids);
		return;
	}
	if (strcmp(type, "BPE") != 0)
		refuse("model", type);
	type = field_type(root, "pre_tokenizer", &obj);
	if (is_true(model, "byte_fallback") && (!type || strcmp(type, "ByteLevel") != 0))
	{
		/* SentencePiece-style BPE (Llama 2, TinyLlama), not byte-level */
		tfm_hf_import_spiece(name, tokenizer, model_vocab);
		for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
			special_ids[k] = INT_MAX;	/* unknown here: never an encoder's */
		return;
	}
	/* Unicode NFC (Qwen2's) is the one normalizer a byte-level BPE may
	 * have, alone or in a Sequence (DeepSeek V3's empty one) */
	if ((type = field_type(root, "normalizer", &obj)) != NULL)
	{
		if (strcmp(type, "Sequence") == 0)
		{
			JsonbContainer *seq = tfm_hf_array(obj, "normalizers", "normalizer.normalizers");

			for (int i = 0; i < (int) JsonContainerSize(seq); i++)
			{
				char	   *et;

				(void) sequence_element(seq, i, "normalizer", &et);
				if (strcmp(et, "NFC") != 0)
					refuse("normalizer", psprintf("%s in a Sequence", et));
				nfc = TFM_TOK_INFO_NFC;
			}
		}
		else if (strcmp(type, "NFC") == 0)
			nfc = TFM_TOK_INFO_NFC;
		else
			refuse("normalizer", type);
	}
	flags = bpe_pre_tokenizer(root, &plain, rules, &n_rules) | nfc;
	if ((type = field_type(root, "decoder", &obj)) != NULL && strcmp(type, "ByteLevel") != 0)
		refuse("decoder", type);
	v = tfm_jget(model, "dropout", &buf);
	if (v && v->type != jbvNull)
		option_refused("model.dropout");
	require_empty(model, "unk_token");
	require_empty(model, "continuing_subword_prefix");
	require_empty(model, "end_of_word_suffix");
	if (is_true(model, "byte_fallback"))
		option_refused("model.byte_fallback");
	if (is_true(model, "ignore_merges"))
		flags |= TFM_TOK_INFO_IGNORE_MERGES;
	post_processor_ids(root, true, &cls, &sep, &bos);
	if (!plain || flags != 0 || cls >= 0 || bos >= 0 || added_outside_vocab(root, model))
	{
		import_hf_bpe(name, root, model, model_vocab, flags, rules, n_rules, special_ids);
		return;
	}

	/* GPT-2's shape: model.vocab: piece -> id, as encoder.json */
	v = tfm_jget(model, "vocab", &buf);
	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		tfm_hf_malformed("model.vocab must be an object");
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
	merges = tfm_hf_array(model, "merges", "model.merges");
	initStringInfo(&bpe);
	appendStringInfoString(&bpe, "#version: 0.2\n");
	it = JsonbIteratorInit(merges);
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
						tfm_hf_malformed("a merge must be two pieces separated by one space");
					sp = i;
				}
				else if (s[i] == '\n' || s[i] == '\r')
					tfm_hf_malformed("a merge holds a line break");
			if (sp <= 0 || sp == len - 1)
				tfm_hf_malformed("a merge must be two pieces separated by one space");
			appendBinaryStringInfo(&bpe, s, len);
		}
		else if (jv.type == jbvBinary && JsonContainerIsArray(jv.val.binary.data) &&
				 JsonContainerSize(jv.val.binary.data) == 2)
		{
			for (int k = 0; k < 2; k++)
			{
				JsonbValue *e = getIthJsonbValueFromContainer(jv.val.binary.data, k);

				if (!e || e->type != jbvString || e->val.string.len == 0)
					tfm_hf_malformed("a merge pair must hold two non-empty strings");
				if (k)
					appendStringInfoChar(&bpe, ' ');
				append_piece(&bpe, e->val.string.val, e->val.string.len);
			}
		}
		else
			tfm_hf_malformed("a merge must be a string \"a b\" or a pair [a, b]");
		appendStringInfoChar(&bpe, '\n');
	}

	/* added tokens keep their ids: each must be that piece of the vocabulary */
	{
		int			na;
		TfmHfAdded *added = tfm_hf_added_tokens(root, v->val.binary.data, &na);

		for (int i = 0; i < na; i++)
			if (added[i].in_vocab != added[i].id)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("added token \"%s\" (id %d) is not that piece of the vocabulary",
								pnstrdup(added[i].content, Min(added[i].len, 64)), added[i].id),
						 errdetail("tfm keeps the ids of added tokens only when model.vocab has them.")));
	}

	{
		int32		n = tfm_tokenizer_import_gpt2(name, enc, strlen(enc), bpe.data, bpe.len);

		/* tfm's six specials follow the file's ids */
		for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
			special_ids[k] = n + k;
	}
	(void) n_ids;
}
