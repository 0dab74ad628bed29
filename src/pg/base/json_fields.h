/*
 * json_fields.h — the jsonb helpers the readers of Hugging Face JSON
 * files and of the task heads' training rows share (json_fields.c): a
 * key's value, an object's entries keyed by ids, and a value's type as
 * error messages name it.
 */
#ifndef TFM_PG_JSON_FIELDS_H
#define TFM_PG_JSON_FIELDS_H

#include "postgres.h"

#include "utils/jsonb.h"

/* the value of key in object c (into buf), or NULL if c has no such key */
JsonbValue *tfm_jget(JsonbContainer *c, const char *key, JsonbValue *buf);
/*
 * the next entry of the object it iterates (it from JsonbIteratorInit):
 * its key (palloc'd), the key as a decimal number (-1 when it is not one)
 * and its value (into val); false after the last
 */
bool		tfm_jnext_id_key(JsonbIterator **it, char **key, long *id, JsonbValue *val);
/* "null", "a string", "a number", "a boolean" or "an array or object" */
const char *tfm_jtype(const JsonbValue *v);

#endif							/* TFM_PG_JSON_FIELDS_H */
