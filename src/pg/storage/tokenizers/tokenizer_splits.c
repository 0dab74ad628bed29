/*
 * tokenizer_splits.c — a tokenizer's Split rules (the regular-expression
 * pre-tokenizer of a tokenizer.json, TFM_TOK_INFO_SPLIT) in its row:
 * tfm.tokenizers.options->'splits' is an array of {"pattern", "behavior",
 * "invert"} in the order they apply, written when the tokenizer is stored
 * and compiled again (tfm_tok_add_split) when it is read back.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "tfm/tokenizer.h"
#include "storage/tokenizers/tokenizers.h"

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
