/*
 * tfm/json_schema.h — constrained decoding: a JSON-schema subset compiled
 * to a recognizer of the schema's language (a pushdown automaton over
 * bytes), and a token mask that walks a byte trie of the vocabulary against
 * the recognizer's state (plain C, no postgres.h).
 *
 * The subset (anything else is refused, naming the keyword):
 *   type          "object", "array", "string", "number", "integer",
 *                 "boolean", "null", or a list of them (an anyOf)
 *   object        properties, required, additionalProperties (only false,
 *                 which is also what an absent one means here)
 *   array         items (one schema), minItems, maxItems
 *   string        minLength, maxLength (code points; an escape is one)
 *   enum, const   any JSON values (written compactly, as given)
 *   anyOf         alternatives that begin with different bytes (an object,
 *                 an array, a string, a number, true/false, null, or enums
 *                 whose first bytes differ)
 *   title, description, $schema, $id, $comment, examples, default: ignored
 *
 * The language (fixed, documented in doc/reference.md):
 *   - compact: no whitespace anywhere (none before, between or after);
 *   - an object's properties in the schema's order, each required one
 *     present, an optional one present or skipped; no other key;
 *   - strings: any UTF-8 except control bytes, the escapes of JSON, no
 *     \u0000 and no surrogate escape (PostgreSQL's jsonb refuses them);
 *   - numbers as JSON writes them, at most TFM_JSON_MAX_NUMBER bytes and
 *     TFM_JSON_MAX_EXPONENT exponent digits (jsonb's numeric takes them);
 *     integers without fraction or exponent;
 *   - enum/const values in their compact form, object keys in the order
 *     the schema gives them.
 *
 * Limits (hostile schemas): TFM_JSON_MAX_DEPTH nested schemas, TFM_JSON_MAX_NODES
 * schemas in all, TFM_JSON_MAX_ENUM values per enum, TFM_JSON_MAX_SCHEMA bytes
 * of schema text; $ref (and so recursion) is refused.
 *
 * A state is a stack of frames, copied by value (tfm_jstate_copy copies only
 * the frames in use).  tfm_jstate_step leaves the state undefined when it
 * answers false: step a copy.
 */
#ifndef TFM_JSON_SCHEMA_H
#define TFM_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/status_codes.h"

#define TFM_JSON_MAX_DEPTH   32			/* schemas nested in one another */
#define TFM_JSON_MAX_NODES   4096		/* schemas in all (properties, items, ...) */
#define TFM_JSON_MAX_ENUM    1024		/* values of one enum */
#define TFM_JSON_MAX_SCHEMA  (256 * 1024)	/* bytes of schema text */
#define TFM_JSON_MAX_NUMBER  32			/* bytes of a number */
#define TFM_JSON_MAX_EXPONENT 3			/* digits of its exponent (jsonb's numeric: up to 1e131071) */
#define TFM_JSON_MAX_TOKEN   512		/* bytes of a token the mask can allow */

typedef struct tfm_jschema tfm_jschema;

typedef struct tfm_jframe
{
	int32_t		node;			/* the schema node */
	int32_t		phase;
	int32_t		a,
				b,
				c;				/* per kind: counts, a candidate, a length */
} tfm_jframe;

typedef struct tfm_jstate
{
	int32_t		depth;			/* frames in use; 0 = the value is done */
	tfm_jframe	f[TFM_JSON_MAX_DEPTH + 2];
} tfm_jstate;

/* compile the schema text (JSON) of len bytes; TFM_EINVAL / TFM_EFORMAT /
 * TFM_ELIMIT / TFM_EUNSUPPORTED with a message naming what, or TFM_ENOMEM */
int			tfm_jschema_compile(tfm_jschema **out, const char *json, size_t len, tfm_status *err);
void		tfm_jschema_free(tfm_jschema *s);

/* the state before the first byte */
void		tfm_jstate_init(const tfm_jschema *s, tfm_jstate *st);
void		tfm_jstate_copy(tfm_jstate *dst, const tfm_jstate *src);
/* take one byte: true if the bytes so far are still a prefix of the language */
bool		tfm_jstate_step(const tfm_jschema *s, tfm_jstate *st, uint8_t c);
/* the bytes so far are a whole value (an end of text may come) */
bool		tfm_jstate_complete(const tfm_jschema *s, const tfm_jstate *st);
/* ... and no byte can follow */
bool		tfm_jstate_closed(const tfm_jstate *st);
/* 1 if text is a whole value of the language, 0 if not */
int			tfm_jschema_accepts(const tfm_jschema *s, const char *text, size_t len);

/*
 * A vocabulary's byte trie: token id's bytes are bytes[id][0 .. lens[id])
 * (copied; an empty one is never allowed, nor one over TFM_JSON_MAX_TOKEN
 * bytes).  The trie keeps scratch states, so use one per thread.
 */
typedef struct tfm_jvocab tfm_jvocab;

int			tfm_jvocab_create(tfm_jvocab **out, const uint8_t *const *bytes, const size_t *lens,
							  int32_t V, tfm_status *err);
void		tfm_jvocab_free(tfm_jvocab *v);

/*
 * allowed[id] = 1 for every token whose bytes keep st a prefix of the
 * language, else 0 (V entries); returns how many.  poll (may be NULL) is
 * called every 4,096 trie nodes: nonzero stops with TFM_ECANCELED.
 */
int			tfm_jvocab_allowed(tfm_jvocab *v, const tfm_jschema *s, const tfm_jstate *st,
							   uint8_t *allowed, int (*poll) (void *), void *poll_arg);

/* step st through token id's bytes: false if it leaves the language */
bool		tfm_jvocab_step_token(const tfm_jvocab *v, const tfm_jschema *s, tfm_jstate *st,
								  int32_t id);

#endif							/* TFM_JSON_SCHEMA_H */
