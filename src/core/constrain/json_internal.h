/*
 * json_internal.h — what the files of constrained decoding share (not a
 * public API): the small JSON tree a schema is read into (json_dom.c), the
 * compiled schema's nodes (json_schema.c) that the recognizer (json_match.c)
 * and the vocabulary's trie (json_vocab.c) walk.
 */
#ifndef TFM_JSON_INTERNAL_H
#define TFM_JSON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/json_schema.h"

/* ---- a parsed JSON text ---------------------------------------------- */
typedef enum jd_kind
{
	JD_NULL, JD_FALSE, JD_TRUE, JD_NUMBER, JD_STRING, JD_ARRAY, JD_OBJECT
} jd_kind;

typedef struct jd_value
{
	jd_kind		kind;
	int32_t		first;			/* array/object: the first element (-1: none) */
	int32_t		next;			/* the next element of the parent (-1: last) */
	int32_t		count;			/* array/object: elements */
	size_t		off,
				len;			/* string: decoded bytes in the pool; number: its text */
	size_t		key_off,
				key_len;		/* an object member's key (decoded, in the pool) */
} jd_value;

typedef struct jd_doc
{
	jd_value   *v;				/* v[0] is the root */
	int32_t		n,
				cap;
	char	   *pool;
	size_t		pool_len,
				pool_cap;
	const char *text;			/* the source (numbers point into it) */
} jd_doc;

/* parse text (at most max_values values, max_depth nesting); 0 or a tfm_code */
int			jd_parse(jd_doc *d, const char *text, size_t len, int32_t max_values,
					 int max_depth, tfm_status *err);
void		jd_free(jd_doc *d);
/* the member of object o named key, or -1 */
int32_t		jd_member(const jd_doc *d, int32_t o, const char *key);
/* the compact JSON text of value i appended to *out (malloc'd, grown) */
int			jd_write(const jd_doc *d, int32_t i, char **out, size_t *len, size_t *cap);
/* string s escaped as a JSON string's contents (no quotes) appended to *out */
int			jd_write_escaped(const char *s, size_t n, char **out, size_t *len, size_t *cap);

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
