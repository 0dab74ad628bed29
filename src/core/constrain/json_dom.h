/*
 * json_dom.h — the small JSON tree a schema is read into (json_dom.c; not
 * a public API): parsing with limits, members, and writing values back as
 * compact JSON text.
 */
#ifndef TFM_JSON_DOM_H
#define TFM_JSON_DOM_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/status_codes.h"

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

#endif							/* TFM_JSON_DOM_H */
