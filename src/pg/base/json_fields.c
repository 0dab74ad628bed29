/*
 * json_fields.c — the jsonb helpers the readers of Hugging Face JSON
 * files share (config.json, tokenizer.json, tokenizer_config.json,
 * generation_config.json): a key's value, an object's entries keyed by
 * ids (config.json's id2label, tokenizer_config.json's
 * added_tokens_decoder), and a value's type as error messages name it.
 */
#include "postgres.h"

#include "base/json_fields.h"

JsonbValue *
tfm_jget(JsonbContainer *c, const char *key, JsonbValue *buf)
{
	JsonbValue *v = getKeyJsonValueFromContainer(c, key, strlen(key), buf);

	return v;
}

bool
tfm_jnext_id_key(JsonbIterator **it, char **key, long *id, JsonbValue *val)
{
	JsonbValue	k;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(it, &k, true)) != WJB_DONE)
	{
		char	   *end;

		if (tok != WJB_KEY)
			continue;
		*key = pnstrdup(k.val.string.val, k.val.string.len);
		(void) JsonbIteratorNext(it, val, true);
		*id = strtol(*key, &end, 10);
		if (**key == '\0' || *end != '\0')
			*id = -1;
		return true;
	}
	return false;
}

const char *
tfm_jtype(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "a string";
		case jbvNumeric:
			return "a number";
		case jbvBool:
			return "a boolean";
		default:
			return "an array or object";
	}
}
