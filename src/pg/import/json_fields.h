/*
 * json_fields.h — the two jsonb helpers every reader of a Hugging Face
 * JSON file uses (json_fields.c): a key's value, and a value's type as
 * error messages name it.
 */
#ifndef TFM_PG_JSON_FIELDS_H
#define TFM_PG_JSON_FIELDS_H

#include "postgres.h"

#include "utils/jsonb.h"

/* the value of key in object c (into buf), or NULL if c has no such key */
JsonbValue *tfm_jget(JsonbContainer *c, const char *key, JsonbValue *buf);
/* "null", "a string", "a number", "a boolean" or "an array or object" */
const char *tfm_jtype(const JsonbValue *v);

#endif							/* TFM_PG_JSON_FIELDS_H */
