/*
 * chat_value.h — the bottom of rendering a chat template: values, the
 * render state, the small helpers every step uses (mkstr, mkint,
 * kind_name, name_is) and what chat_value.c defines.  Above it, in this
 * order: chat_builtins.h (what values can do), chat_eval.h (expressions)
 * and chat_render.c (statements, and tfm_chat_template_render).
 */
#ifndef TFM_CHAT_VALUE_H
#define TFM_CHAT_VALUE_H

#include <string.h>

#include "chat_ast.h"

typedef enum
{
	V_UNDEF, V_NONE, V_BOOL, V_INT, V_STR, V_LIST, V_MAP, V_LOOP, V_NS, V_NUM
} vkind;

typedef struct value
{
	vkind		k;
	int			depth;			/* V_LIST, V_MAP: lists and maps inside each other (1: none inside) */
	int64_t		i;				/* V_BOOL, V_INT */
	const char *s;				/* V_STR; V_NUM: a JSON number's text (not an integer) */
	size_t		len;			/* V_STR, V_NUM bytes, V_LIST items, V_MAP pairs */
	struct value *items;		/* V_LIST; V_MAP: key, value, key, value ... (keys strings) */
	const struct loop_info *loop;	/* V_LOOP */
	struct frame *ns;			/* V_NS: its attributes, set in place */
} value;

typedef struct loop_info
{
	int64_t		index0,
				length;
} loop_info;

typedef struct binding
{
	const char *name;
	size_t		len;
	value		v;
} binding;

typedef struct frame
{
	binding    *b;
	int			n,
				cap;
} frame;

typedef struct render
{
	chat_mem	mem;			/* the host's allocator and the budget */
	chat_arena	arena;			/* values made while rendering */
	chat_poll	poll;
	tfm_status *err;
	value		names;			/* V_MAP: the template's names (messages, add_generation_prompt ...) */
	value		defaults;		/* V_MAP: names where names has none (or undefined) */
	frame		frames[TFM_CHAT_MAX_NESTING + 2];
	int			nframes;
	int			depth;			/* blocks and expressions being walked */
	char	   *out;
	size_t		len,
				cap;
	int			failed,
				code;			/* the first failure's */
} render;

static inline value
mkstr(const char *s, size_t len)
{
	value		v = {V_STR, 0, 0, s, len, NULL, NULL, NULL};

	return v;
}

static inline value
mkint(vkind k, int64_t i)
{
	value		v = {k, 0, i, NULL, 0, NULL, NULL, NULL};

	return v;
}

static inline const char *
kind_name(vkind k)
{
	static const char *const names[] = {"undefined", "none", "a boolean", "an integer", "a string",
	"a list", "a mapping", "the loop", "a namespace", "a number"};

	return names[k];
}

static inline int
name_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && strncmp(s, w, n) == 0;
}

/* ---- chat_value.c ---- */
/* a failure (the first one counts; line 0: none named); returns code */
int			render_fail(render *r, int code, int line, const char *fmt, const char *a, const char *b);
/* an allocation failed: past the budget (TFM_ELIMIT) or out of memory */
int			render_oom(render *r);
/* units of work done (a step is CHAT_STEP, a byte one): TFM_ECANCELED when the host says stop */
int			render_tick(render *r, size_t units);
/* what (blocks and expressions, lists) nested past TFM_CHAT_MAX_NESTING: TFM_ELIMIT */
int			render_too_deep(render *r, int line, const char *what);
/* the value of key k in map m (a V_MAP); undefined if none */
value		render_map_get(render *r, const value *m, const char *k, size_t n);
/* a value's truth, as Python's bool() */
int			render_truthy(const value *v);
/* a value as text (Python's str()): *s and *n, in the arena */
int			render_text(render *r, const value *v, const char **s, size_t *n, int line);
/* the value of a name: the innermost scope's first, then the template's names; else undefined */
value		render_lookup(render *r, const char *s, size_t n);
/* name = v in the innermost scope */
int			render_bind(render *r, const char *s, size_t n, value v);
/* name = v in a namespace's attributes (held in the arena) */
int			render_ns_set(render *r, struct frame *ns, const char *s, size_t n, value v);
/* a namespace's attribute; undefined if not set */
value		render_ns_get(render *r, const struct frame *ns, const char *s, size_t n);

#endif							/* TFM_CHAT_VALUE_H */
