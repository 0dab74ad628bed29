/*
 * tokenizer_json.c — readers of a tokenizer.json's model section shared by
 * the byte-level BPE / WordPiece import (tokenizer_import.c) and the
 * SentencePiece-style one (spiece.c): the malformed-file error, integer
 * values, model.vocab and its ids, model.merges as id pairs.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "tfm/tokenizer.h"
#include "runtime/rows.h"

void
tfm_hf_malformed(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("tokenizer.json is malformed: %s", what)));
}

/* the "type" of an object field, NULL if the field is absent or null */
int
tfm_hf_uint(const JsonbValue *v, const char *what, int max)
{
	double		d;

	if (v->type != jbvNumeric)
		tfm_hf_malformed(psprintf("%s must be an integer", what));
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (d != floor(d) || d < 0 || d > max)
		tfm_hf_malformed(psprintf("%s must be a non-negative integer", what));
	return (int) d;
}

int
tfm_hf_vocab_id(JsonbContainer *vocab, const char *piece, int len, int max)
{
	JsonbValue	b,
			   *v = getKeyJsonValueFromContainer(vocab, piece, len, &b);

	return v ? tfm_hf_uint(v, "a model.vocab id", max) : -1;
}

JsonbContainer *
tfm_hf_model_vocab(JsonbContainer *model, int model_vocab, const char *range_err, int *n)
{
	JsonbValue	buf,
			   *v = tfm_jget(model, "vocab", &buf);
	JsonbContainer *vocab;

	if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		tfm_hf_malformed("model.vocab must be an object");
	vocab = v->val.binary.data;
	*n = JsonContainerSize(vocab);
	if (*n < 1 || *n > TFM_TOK_MAX_VOCAB_SIZE - 8)
		tfm_hf_malformed(range_err);
	if (*n > model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json has %d pieces, but the model's vocab_size is %d", *n, model_vocab)));
	return vocab;
}

JsonbContainer *
tfm_hf_array(JsonbContainer *c, const char *key, const char *what)
{
	JsonbValue	buf,
			   *v = tfm_jget(c, key, &buf);

	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		tfm_hf_malformed(psprintf("%s must be an array", what));
	return v->val.binary.data;
}

/* a merge "a b" or [a, b] (the rank-th, from 0) as two model.vocab ids */
static void
merge_ids(JsonbContainer *vocab, const JsonbValue *jv, int rank, int32_t *lr, int max)
{
	char	   *a,
			   *b;

	if (jv->type == jbvString)
	{
		char	   *s = pnstrdup(jv->val.string.val, jv->val.string.len),
				   *sp = strchr(s, ' ');

		if (!sp || sp == s || sp[1] == '\0' || strchr(sp + 1, ' '))
			tfm_hf_malformed("a merge must be two pieces separated by one space");
		*sp = '\0';
		a = s;
		b = sp + 1;
	}
	else if (jv->type == jbvBinary && JsonContainerIsArray(jv->val.binary.data) &&
			 JsonContainerSize(jv->val.binary.data) == 2)
	{
		JsonbValue *x = getIthJsonbValueFromContainer(jv->val.binary.data, 0),
				   *y = getIthJsonbValueFromContainer(jv->val.binary.data, 1);

		if (!x || !y || x->type != jbvString || y->type != jbvString)
			tfm_hf_malformed("a merge pair must hold two strings");
		a = pnstrdup(x->val.string.val, x->val.string.len);
		b = pnstrdup(y->val.string.val, y->val.string.len);
	}
	else
		tfm_hf_malformed("a merge must be a string \"a b\" or a pair [a, b]");
	lr[0] = tfm_hf_vocab_id(vocab, a, strlen(a), max);
	lr[1] = tfm_hf_vocab_id(vocab, b, strlen(b), max);
	if (lr[0] < 0 || lr[1] < 0)
		tfm_hf_malformed(psprintf("merge %d names a piece not in model.vocab", rank + 1));
}

int32_t *
tfm_hf_merges(JsonbContainer *model, JsonbContainer *vocab, int max, int *n_merges)
{
	JsonbValue	jv;
	JsonbContainer *merges = tfm_hf_array(model, "merges", "model.merges");
	JsonbIterator *it;
	JsonbIteratorToken tok;
	int32_t    *merge_lr;

	merge_lr = palloc(sizeof(int32_t) * 2 * Max(JsonContainerSize(merges), 1));
	*n_merges = 0;
	it = JsonbIteratorInit(merges);
	while ((tok = JsonbIteratorNext(&it, &jv, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		CHECK_FOR_INTERRUPTS();
		merge_ids(vocab, &jv, *n_merges, merge_lr + 2 * *n_merges, max);
		(*n_merges)++;
	}
	return merge_lr;
}

/* a boolean field of an added token: absent or null gives dflt */
static bool
added_flag(JsonbContainer *c, const char *key, bool dflt)
{
	JsonbValue	b,
			   *v = tfm_jget(c, key, &b);

	if (!v || v->type == jbvNull)
		return dflt;
	if (v->type != jbvBool)
		tfm_hf_malformed(psprintf("an added token's \"%s\" must be true or false", key));
	return v->val.boolean;
}

TfmHfAdded *
tfm_hf_added_tokens(JsonbContainer *root, JsonbContainer *vocab, int *n)
{
	JsonbValue	buf,
			   *v = tfm_jget(root, "added_tokens", &buf);
	TfmHfAdded *out;

	*n = 0;
	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		tfm_hf_malformed("added_tokens must be an array");
	*n = JsonContainerSize(v->val.binary.data);
	if (*n > TFM_TOK_MAX_VOCAB_SIZE)
		tfm_hf_malformed("added_tokens has more entries than a vocabulary may have ids");
	out = palloc0(sizeof(TfmHfAdded) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(v->val.binary.data, i),
					b1,
					b2,
				   *idv,
				   *cv;
		JsonbContainer *o;
		bool		special;

		CHECK_FOR_INTERRUPTS();
		if (!t || t->type != jbvBinary || !JsonContainerIsObject(t->val.binary.data))
			tfm_hf_malformed("an added token must be an object");
		o = t->val.binary.data;
		idv = tfm_jget(o, "id", &b1);
		cv = tfm_jget(o, "content", &b2);
		if (!idv || !cv || cv->type != jbvString || cv->val.string.len == 0)
			tfm_hf_malformed("an added token needs an id and a non-empty content");
		if (cv->val.string.len > TFM_TOK_MAX_PIECE_BYTES)
			tfm_hf_malformed("an added token's content is longer than a piece may be");
		out[i].id = tfm_hf_uint(idv, "an added token's id", TFM_TOK_MAX_VOCAB_SIZE);
		out[i].content = pnstrdup(cv->val.string.val, cv->val.string.len);
		out[i].len = cv->val.string.len;
		out[i].in_vocab = vocab ? tfm_hf_vocab_id(vocab, cv->val.string.val, cv->val.string.len,
												   TFM_TOK_MAX_VOCAB_SIZE) : -1;
		special = added_flag(o, "special", false);
		/* Hugging Face's AddedToken: normalized defaults to !special */
		out[i].flags = (special ? TFM_TOK_ADDED_SPECIAL : 0) |
			(added_flag(o, "lstrip", false) ? TFM_TOK_ADDED_LSTRIP : 0) |
			(added_flag(o, "rstrip", false) ? TFM_TOK_ADDED_RSTRIP : 0) |
			(added_flag(o, "single_word", false) ? TFM_TOK_ADDED_SINGLE_WORD : 0) |
			(added_flag(o, "normalized", !special) ? TFM_TOK_ADDED_NORMALIZED : 0);
	}
	return out;
}

void
tfm_hf_added_list(TfmAddedTokens *list, const TfmHfAdded *added, int n)
{
	list->n = n;
	list->ids = palloc(sizeof(int32_t) * Max(n, 1));
	list->flags = palloc(Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		list->ids[i] = added[i].id;
		list->flags[i] = (uint8_t) added[i].flags;
	}
}

int
tfm_hf_place_added(const TfmHfAdded *added, int n_added, const uint8_t **pieces, size_t *lens,
				   uint8_t *literal, int n, int max_id, int model_vocab)
{
	for (int i = 0; i < n_added; i++)
	{
		int			id = added[i].id;

		if (added[i].in_vocab == id)
		{
			if (literal)
				literal[id] |= 2;	/* an added token in model.vocab */
			continue;
		}
		if (added[i].in_vocab >= 0 || id >= n || pieces[id])
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("added token \"%s\" (id %d) is not that piece of the vocabulary",
							pnstrdup(added[i].content, Min(added[i].len, 64)), id),
					 errdetail("tfm keeps the ids of added tokens when model.vocab has them "
							   "or when they follow its ids.")));
		/* a token after model.vocab (Llama 3's specials): its text as is */
		pieces[id] = (const uint8_t *) added[i].content;
		lens[id] = added[i].len;
		if (literal)
			literal[id] = 1 | 2;
		max_id = Max(max_id, id);
	}
	for (int i = 0; i <= max_id; i++)
		if (!pieces[i])
			tfm_hf_malformed(psprintf("id %d is neither in model.vocab nor an added token", i));
	if (max_id + 1 > model_vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer.json has token id %d, but the model's vocab_size is %d",
						max_id, model_vocab)));
	return max_id + 1;
}
