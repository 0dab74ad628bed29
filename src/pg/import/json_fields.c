/*
 * json_fields.c — the two jsonb helpers every reader of a Hugging Face
 * JSON file uses (config.json, tokenizer.json, tokenizer_config.json,
 * generation_config.json): a key's value, and a value's type as error
 * messages name it.
 */
#include "postgres.h"

#include "import/json_fields.h"

JsonbValue *
tfm_jget(JsonbContainer *c, const char *key, JsonbValue *buf)
{
	JsonbValue *v = getKeyJsonValueFromContainer(c, key, strlen(key), buf);

	return v;
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
