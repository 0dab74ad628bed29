/*
 * json_internal.h — what the files of constrained decoding share (not a
 * public API): the compiled schema's nodes (json_schema.c, from the JSON
 * tree of json_dom.h) that the recognizer (json_match.c) and the
 * vocabulary's trie (json_vocab.c) walk.
 */
#ifndef TFM_JSON_INTERNAL_H
#define TFM_JSON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/json_schema.h"

/* ---- the compiled schema --------------------------------------------- */
typedef enum jn_kind
{
	JN_OBJECT, JN_ARRAY, JN_STRING, JN_NUMBER, JN_INTEGER, JN_LITERALS, JN_ANYOF
} jn_kind;

typedef struct jn_node
{
	jn_kind		kind;
	int32_t		n;				/* properties, literals or alternatives */
	int32_t		first;			/* their first index in props/lits/alts */
	int32_t		lo,
				hi;				/* minItems/maxItems, minLength/maxLength (hi -1: none) */
	int32_t		items;			/* an array's items node */
	uint8_t		firsts[32];		/* the bytes a value of this node can begin with */
} jn_node;

typedef struct jn_prop
{
	size_t		key_off,
				key_len;		/* the key escaped, as it is written, without quotes */
	int32_t		node;
	uint8_t		required;
} jn_prop;

typedef struct jn_lit
{
	size_t		off,
				len;			/* a literal's compact text */
} jn_lit;

struct tfm_jschema
{
	jn_node    *nodes;
	int32_t		n_nodes;
	jn_prop    *props;
	int32_t		n_props;
	jn_lit	   *lits;
	int32_t		n_lits;
	int32_t    *alts;
	int32_t		n_alts;
	char	   *pool;			/* keys and literals */
	size_t		pool_len;
	int32_t		root;
};

static inline int
jn_has_first(const jn_node *n, uint8_t c)
{
	return (n->firsts[c >> 3] >> (c & 7)) & 1;
}

#endif							/* TFM_JSON_INTERNAL_H */
