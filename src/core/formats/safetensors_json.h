/*
 * safetensors_json.h — the JSON lexing of safetensors_json.c that the
 * schemas of the safetensors reader share (not a public API): the
 * reader's state and its steps, used by safetensors.c (a file's header)
 * and safetensors_index.c (a sharded index).
 */
#ifndef TFM_SAFETENSORS_JSON_H
#define TFM_SAFETENSORS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/status.h"
#include "../util/grow.h"

/* a JSON text being read: the bytes, the string pool, where it stands */
typedef struct reader
{
	const uint8_t *start,
			   *p,
			   *end;
	tfm_status *err;
	char	   *pool;			/* decoded strings, NUL-terminated */
	size_t		pool_len;
	const char *doc;			/* for syntax messages; NULL = "the safetensors header" */
} reader;

typedef enum num_kind
{
	NUM_UINT,					/* a non-negative integer that fits uint64 */
	NUM_NEGATIVE,
	NUM_FRACTION,				/* has a fraction or an exponent */
	NUM_HUGE,					/* an integer above 2^64 - 1 */
	NUM_NONE					/* not a number: a string, array, ... */
} num_kind;

/* allocation (safetensors_json.c): malloc (a size of 0 is 1), free (NULL: nothing) */
void	   *st_alloc(size_t n);
void		st_free(void *p);
/* makes room for need elements of size bytes in *p (capacity *cap) */

/* a quoted, one-line, cut-short copy of a name for messages (at most 74 bytes) */
#define QUOTE_MAX 64
typedef struct quoted
{
	char		s[QUOTE_MAX + 8];
} quoted;

quoted		st_quote(const char *name, size_t len);



/* "invalid JSON in <doc> at byte <pos>: <what>"; TFM_EBADFILE */
int			st_syntax(reader *r, const char *what);

void		st_skip_ws(reader *r);
/* consumes c after optional whitespace, else st_syntax(what) */
int			st_expect(reader *r, char c, const char *what);
/* after whitespace: 1 if the next byte is c (not consumed) */
int			st_peek(reader *r, char c);
/* after whitespace: consumes c and returns 1 if it is the next byte, else 0 */
int			st_accept(reader *r, char c);
/* after ',' continue, else the closing byte: 1 = more, 0 = done, <0 error */
int			st_next_member(reader *r, char close);
/* a key and its ':' after optional whitespace; TFM_EBADFILE if not */
int			st_read_key(reader *r, const char **key, size_t *klen);

/* one member of an object: key (klen bytes, in the pool) is read, its value next */
typedef int (*st_member_fn) (reader *r, void *ctx, const char *key, size_t klen);

/*
 * The members of an object whose '{' is consumed, up to and with its '}':
 * member() for each; the first status that is not TFM_OK stops it.
 */
int			st_members(reader *r, st_member_fn member, void *ctx);

/*
 * The string at r->p (which must be '"'), decoded into the pool: *s points
 * at it, NUL-terminated, *len bytes.  Refuses U+0000.
 */
int			st_read_string(reader *r, const char **s, size_t *len);

/* a JSON number at r->p (after whitespace); NUM_NONE consumes nothing */
num_kind	st_read_number(reader *r, uint64_t *v);

#endif							/* TFM_SAFETENSORS_JSON_H */
