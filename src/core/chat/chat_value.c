/*
 * chat_value.c: the bottom of rendering a chat template, what the
 * evaluator (chat_eval.c), the builtins (chat_builtins.c) and the walk
 * over statements (chat_render.c) all use: the first failure kept in the
 * render state, memory past the budget, the work counted for the host's
 * cancel poll, the nesting limit, a value's truth and its text (Python's
 * str()), a mapping's keys, and the names in scope (lookup and {% set %} /
 * loop bindings, over the names the render was given: messages,
 * add_generation_prompt, bos_token, eos_token, and with a JSON context any
 * others, tools or enable_thinking).  It calls nothing above it.
 */
#include <stdio.h>
#include <string.h>

#include "chat_value.h"

int
render_fail(render *r, int code, int line, const char *fmt, const char *a, const char *b)
{
	return chat_failure(r->err, &r->failed, &r->code, code, line, fmt, a, b);
}

int
render_oom(render *r)
{
	char		msg[128];
	int			code = chat_mem_failure(&r->mem, "rendering the chat template", msg, sizeof(msg));

	return render_fail(r, code, 0, "%s%s", msg, "");
}

int
render_tick(render *r, size_t units)
{
	if (!chat_poll_work(&r->poll, units))
		return TFM_OK;
	return render_fail(r, TFM_ECANCELED, 0, "%s%s", "rendering the chat template was canceled", "");
}

int
render_too_deep(render *r, int line, const char *what)
{
	char		b[16];

	snprintf(b, sizeof(b), "%d", TFM_CHAT_MAX_NESTING);
	return render_fail(r, TFM_ELIMIT, line, "%s nested deeper than %s levels", what, b);
}

int
render_truthy(const value *v)
{
	switch (v->k)
	{
		case V_UNDEF:
		case V_NONE:
			return 0;
		case V_BOOL:
		case V_INT:
			return v->i != 0;
		case V_STR:
		case V_LIST:
		case V_MAP:
			return v->len > 0;
		case V_NUM:
			/* a number's text: true unless its digits before the exponent are all 0 */
			for (size_t k = 0; k < v->len && v->s[k] != 'e' && v->s[k] != 'E'; k++)
				if (v->s[k] >= '1' && v->s[k] <= '9')
					return 1;
			return 0;
		default:
			return 1;
	}
}

int
render_text(render *r, const value *v, const char **s, size_t *n, int line)
{
	char	   *buf;

	switch (v->k)
	{
		case V_UNDEF:
			*s = "";
			*n = 0;
			return TFM_OK;
		case V_NONE:
			*s = "None";
			*n = 4;
			return TFM_OK;
		case V_BOOL:
			*s = v->i ? "True" : "False";
			*n = strlen(*s);
			return TFM_OK;
		case V_INT:
			if (!(buf = chat_alloc(&r->arena, 24)))
				return render_oom(r);
			*n = (size_t) snprintf(buf, 24, "%lld", (long long) v->i);
			*s = buf;
			return TFM_OK;
		case V_STR:
		case V_NUM:
			*s = v->s;
			*n = v->len;
			return TFM_OK;
		default:
			return render_fail(r, TFM_EINVAL, line, "%s cannot be printed%s", kind_name(v->k), "");
	}
}

/* ---- names ------------------------------------------------------------------------- */

value
render_lookup(render *r, const char *s, size_t n)
{
	for (int f = r->nframes - 1; f >= 0; f--)
	{
		/* many names set make each lookup long: their count is work too */
		(void) render_tick(r, (size_t) r->frames[f].n);
		for (int k = r->frames[f].n - 1; k >= 0; k--)
			if (r->frames[f].b[k].len == n && strncmp(r->frames[f].b[k].name, s, n) == 0)
				return r->frames[f].b[k].v;
	}
	{
		value		v = render_map_get(r, &r->names, s, n);

		return v.k != V_UNDEF ? v : render_map_get(r, &r->defaults, s, n);
	}
}

value
render_map_get(render *r, const value *m, const char *k, size_t n)
{
	if (m->k != V_MAP)
		return mkint(V_UNDEF, 0);
	/* a long mapping makes each lookup long: its keys are work */
	(void) render_tick(r, m->len);
	for (size_t j = 0; j < m->len; j++)
		if (m->items[2 * j].len == n && memcmp(m->items[2 * j].s, k, n) == 0)
			return m->items[2 * j + 1];
	return mkint(V_UNDEF, 0);
}

/* a scope's or namespace's binding of a name; NULL if none */
static binding *
find_binding(const frame *f, const char *s, size_t n)
{
	for (int k = 0; k < f->n; k++)
		if (f->b[k].len == n && strncmp(f->b[k].name, s, n) == 0)
			return &f->b[k];
	return NULL;
}

int
render_bind(render *r, const char *s, size_t n, value v)
{
	frame	   *f = &r->frames[r->nframes - 1];
	binding    *old = find_binding(f, s, n);

	if (old)
	{
		old->v = v;
		return TFM_OK;
	}
	if (f->n == f->cap)
	{
		int			cap = f->cap ? 2 * f->cap : 8;
		binding    *b = chat_mem_grow(&r->mem, f->b, sizeof(binding) * f->cap, sizeof(binding) * cap);

		if (!b)
			return render_oom(r);
		f->b = b;
		f->cap = cap;
	}
	f->b[f->n].name = s;
	f->b[f->n].len = n;
	f->b[f->n].v = v;
	f->n++;
	return TFM_OK;
}

/* ---- namespaces ------------------------------------------------------------------ */

value
render_ns_get(render *r, const frame *ns, const char *s, size_t n)
{
	const binding *b;

	(void) render_tick(r, (size_t) ns->n);
	b = find_binding(ns, s, n);
	return b ? b->v : mkint(V_UNDEF, 0);
}

int
render_ns_set(render *r, frame *ns, const char *s, size_t n, value v)
{
	binding    *old;

	if (render_tick(r, (size_t) ns->n))
		return TFM_ECANCELED;
	if ((old = find_binding(ns, s, n)))
	{
		old->v = v;
		return TFM_OK;
	}
	if (ns->n == ns->cap)
	{
		/* in the arena: a doubling leaves the old array behind, at most as much again */
		int			cap = ns->cap ? 2 * ns->cap : 4;
		binding    *b = chat_alloc(&r->arena, sizeof(binding) * (size_t) cap);

		if (!b)
			return render_oom(r);
		if (ns->n)
			memcpy(b, ns->b, sizeof(binding) * (size_t) ns->n);
		ns->b = b;
		ns->cap = cap;
	}
	ns->b[ns->n].name = s;
	ns->b[ns->n].len = n;
	ns->b[ns->n].v = v;
	ns->n++;
	return TFM_OK;
}
