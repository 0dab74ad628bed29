/*
 * tokenizer_splits.c — a tokenizer's Split rules (the regular-expression
 * pre-tokenizer of a tokenizer.json, TFM_TOK_INFO_SPLIT) in its row:
 * tfm.tokenizers.options->'splits' is an array of {"pattern", "behavior",
 * "invert"} in the order they apply, written when the tokenizer is stored
 * and compiled again (tfm_tok_add_split) when it is read back; and its
 * added tokens found in text (a tokenizer.json's added_tokens,
 * tfm_tok_set_added): options->'added' is an array of [id, flags] pairs.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "tfm/tokenizer.h"
#include "base/base.h"
#include "storage/tokenizers/tokenizer_splits.h"

void
tfm_tokenizer_splits_json(StringInfo buf, const tfm_tokenizer *t)
{
	int			n = tfm_tok_n_splits(t);

	appendStringInfoChar(buf, '[');
	for (int i = 0; i < n; i++)
	{
		const char *pat;
		size_t		len;
		tfm_tok_split_behavior b;
		int			invert;

		if (tfm_tok_get_split(&pat, &len, &b, &invert, t, i) != TFM_OK)
			elog(ERROR, "split rule %d of %d is missing", i, n);
		appendStringInfoString(buf, i ? ", {\"pattern\": " : "{\"pattern\": ");
		escape_json(buf, pat);
		appendStringInfo(buf, ", \"behavior\": \"%s\", \"invert\": %s}",
						 tfm_tok_split_behavior_name(b), invert ? "true" : "false");
	}
	appendStringInfoChar(buf, ']');
}

static void
damaged(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("tokenizer \"%s\" has malformed Split rules", name)));
}

void
tfm_tokenizer_add_splits(tfm_tokenizer *t, const char *name, Jsonb *splits)
{
	tfm_tok_info info;
	int			n;

	tfm_tok_get_info(&info, t);
	if (!(info.flags & TFM_TOK_INFO_SPLIT))
	{
		if (splits)
			damaged(name);
		return;
	}
	if (!splits || !JB_ROOT_IS_ARRAY(splits) || JB_ROOT_IS_SCALAR(splits))
		damaged(name);
	n = JB_ROOT_COUNT(splits);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *el = getIthJsonbValueFromContainer(&splits->root, i),
					pb,
					bb,
					ib,
				   *p,
				   *b,
				   *inv;
		tfm_tok_split_behavior behavior;
		tfm_status	err;

		if (!el || el->type != jbvBinary ||
			!(p = getKeyJsonValueFromContainer(el->val.binary.data, "pattern", 7, &pb)) ||
			!(b = getKeyJsonValueFromContainer(el->val.binary.data, "behavior", 8, &bb)) ||
			!(inv = getKeyJsonValueFromContainer(el->val.binary.data, "invert", 6, &ib)) ||
			p->type != jbvString || b->type != jbvString || inv->type != jbvBool ||
			tfm_tok_split_behavior_parse(&behavior, pnstrdup(b->val.string.val, b->val.string.len)) != TFM_OK)
			damaged(name);
		tfm_raise(tfm_tok_add_split(t, p->val.string.val, p->val.string.len, behavior,
									inv->val.boolean, &err),
				  &err, psprintf("cannot load tokenizer \"%s\"", name));
	}
}

void
tfm_tokenizer_added_json(StringInfo buf, const tfm_tokenizer *t)
{
	int32		n = tfm_tok_n_added(t);

	appendStringInfoChar(buf, '[');
	for (int32 k = 0; k < n; k++)
	{
		int32_t		id;
		uint8_t		flags;

		if (tfm_tok_get_added(&id, &flags, t, k) != TFM_OK)
			elog(ERROR, "added token %d of %d is missing", k, n);
		appendStringInfo(buf, "%s[%d, %u]", k ? ", " : "", id, (unsigned) flags);
	}
	appendStringInfoChar(buf, ']');
}

void
tfm_tokenizer_set_added_json(tfm_tokenizer *t, const char *name, Jsonb *added)
{
	int			n;
	int32_t    *ids;
	uint8_t    *flags;
	tfm_status	err;

	if (!added)
		return;
	if (!JB_ROOT_IS_ARRAY(added) || JB_ROOT_IS_SCALAR(added))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("tokenizer \"%s\" has a malformed list of added tokens", name)));
	n = JB_ROOT_COUNT(added);
	ids = palloc(sizeof(int32_t) * Max(n, 1));
	flags = palloc(Max(n, 1));
	for (int k = 0; k < n; k++)
	{
		JsonbValue *el = getIthJsonbValueFromContainer(&added->root, k),
				   *a = NULL,
				   *b = NULL;

		if (el && el->type == jbvBinary && JsonContainerIsArray(el->val.binary.data) &&
			JsonContainerSize(el->val.binary.data) == 2)
		{
			a = getIthJsonbValueFromContainer(el->val.binary.data, 0);
			b = getIthJsonbValueFromContainer(el->val.binary.data, 1);
		}
		if (!a || !b || a->type != jbvNumeric || b->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tokenizer \"%s\" has a malformed list of added tokens", name)));
		ids[k] = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(a->val.numeric)));
		flags[k] = (uint8_t) DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(b->val.numeric)));
	}
	tfm_raise(tfm_tok_set_added(t, ids, flags, n, &err), &err,
			  psprintf("cannot load tokenizer \"%s\"", name));
}
