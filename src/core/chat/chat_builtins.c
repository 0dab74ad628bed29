/*
 * chat_builtins.c — what a chat template can ask of its values when it
 * renders (chat_eval.c evaluates the operands and calls these with the
 * values; nothing here evaluates an expression):
 *   filters  trim, length, upper, lower, string, tojson (chat_json.c)
 *   tests    defined, undefined, none, string, number, boolean, true,
 *            false, mapping, iterable, sequence
 *   methods  strip, lstrip, rstrip (with or without the characters),
 *            startswith, endswith, upper, lower
 *   loop     index, index0, first, last, length, revindex, revindex0
 * a mapping's keys as attributes (a message's role, content, tool_calls
 * ...; any other undefined) and the one
 * function, raise_exception(message).  Every byte a method or filter reads
 * or writes is work for the host's cancel poll (render_tick).
 */
#include <stdio.h>
#include <string.h>

#include "chat_builtins.h"
#include "chat_json.h"

int
render_attribute(render *r, const value *v, const char *k, size_t n, value *out, int line)
{
	/* Jinja: x.k of a mapping is its item k */
	if (v->k == V_MAP)
	{
		*out = render_map_get(r, v, k, n);
		return TFM_OK;
	}
	if (v->k == V_NS)
	{
		*out = render_ns_get(r, v->ns, k, n);
		return TFM_OK;
	}
	if (v->k == V_LOOP)
	{
		const loop_info *l = v->loop;

		if (name_is(k, n, "index0"))
			*out = mkint(V_INT, l->index0);
		else if (name_is(k, n, "index"))
			*out = mkint(V_INT, l->index0 + 1);
		else if (name_is(k, n, "first"))
			*out = mkint(V_BOOL, l->index0 == 0);
		else if (name_is(k, n, "last"))
			*out = mkint(V_BOOL, l->index0 == l->length - 1);
		else if (name_is(k, n, "length"))
			*out = mkint(V_INT, l->length);
		else if (name_is(k, n, "revindex"))
			*out = mkint(V_INT, l->length - l->index0);
		else if (name_is(k, n, "revindex0"))
			*out = mkint(V_INT, l->length - l->index0 - 1);
		else
		{
			char		nm[40];

			snprintf(nm, sizeof(nm), "%.*s", (int) n, k);
			return render_fail(r, TFM_EINVAL, line, "loop.%s is not supported%s", nm, "");
		}
		return TFM_OK;
	}
	/* Jinja: a missing attribute is undefined */
	*out = mkint(V_UNDEF, 0);
	return TFM_OK;
}

static int
strip_chars(const char *set, size_t setn, char c)
{
	if (!set)
		return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
	return memchr(set, c, setn) != NULL;
}

/* strip / lstrip / rstrip of s (which: 3 both, 1 left, 2 right) */
static value
strip(const value *s, const value *chars, int which)
{
	const char *p = s->s,
			   *set = chars && chars->k == V_STR ? chars->s : NULL;
	size_t		n = s->len,
				setn = set ? chars->len : 0;

	if (which & 1)
		while (n > 0 && strip_chars(set, setn, *p))
		{
			p++;
			n--;
		}
	if (which & 2)
		while (n > 0 && strip_chars(set, setn, p[n - 1]))
			n--;
	return mkstr(p, n);
}

static int
change_case(render *r, const value *s, int upper, value *out)
{
	char	   *b;

	if (render_tick(r, s->len))
		return TFM_ECANCELED;
	if (!(b = chat_alloc(&r->arena, s->len + 1)))
		return render_oom(r);
	for (size_t k = 0; k < s->len; k++)
	{
		char		c = s->s[k];

		b[k] = upper ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	*out = mkstr(b, s->len);
	return TFM_OK;
}

/*
 * s.split(sep), as Python's: the pieces between the separators (in place,
 * in a new list); every comparison is work (quadratic at worst, as "in")
 */
static int
split(render *r, const value *self, const value *sep, value *out)
{
	size_t		count = 1,
				k;
	value	   *items;

	for (int pass = 0; pass < 2; pass++)
	{
		size_t		from = 0,
					n = 0;

		for (k = 0; k + sep->len <= self->len;)
		{
			if (render_tick(r, sep->len))
				return TFM_ECANCELED;
			if (memcmp(self->s + k, sep->s, sep->len) != 0)
			{
				k++;
				continue;
			}
			if (pass)
				items[n] = mkstr(self->s + from, k - from);
			n++;
			k += sep->len;
			from = k;
		}
		if (pass)
			items[n] = mkstr(self->s + from, self->len - from);
		else
		{
			count = n + 1;
			if (!(items = chat_alloc(&r->arena, sizeof(value) * count)))
				return render_oom(r);
		}
	}
	*out = mkint(V_LIST, 0);
	out->items = items;
	out->len = count;
	out->depth = 1;
	return TFM_OK;
}

int
render_method(render *r, const char *name, size_t len, const value *self, const value *args,
			  int nargs, int line, value *out)
{
	char		nm[40];

	snprintf(nm, sizeof(nm), "%.*s", (int) len, name);
	if (self->k == V_STR && render_tick(r, self->len))
		return TFM_ECANCELED;
	if (self->k != V_STR)
		return render_fail(r, TFM_EINVAL, line, "the method %s() of %s is not supported", nm,
								 kind_name(self->k));
	if (nargs > 1 || (nargs == 1 && args[0].k != V_STR && args[0].k != V_NONE))
		return render_fail(r, TFM_EINVAL, line, "%s() takes at most one string%s", nm, "");
	if (!strcmp(nm, "strip") || !strcmp(nm, "lstrip") || !strcmp(nm, "rstrip"))
		*out = strip(self, nargs ? &args[0] : NULL, nm[0] == 'l' ? 1 : nm[0] == 'r' ? 2 : 3);
	else if (!strcmp(nm, "startswith") || !strcmp(nm, "endswith"))
	{
		if (nargs != 1 || args[0].k != V_STR)
			return render_fail(r, TFM_EINVAL, line, "%s() needs a string%s", nm, "");
		*out = mkint(V_BOOL, args[0].len <= self->len &&
					 memcmp(nm[0] == 's' ? self->s : self->s + self->len - args[0].len, args[0].s,
							args[0].len) == 0);
	}
	else if (!strcmp(nm, "upper") || !strcmp(nm, "lower"))
		return change_case(r, self, nm[0] == 'u', out);
	else if (!strcmp(nm, "split"))
	{
		if (nargs != 1 || args[0].k != V_STR || args[0].len == 0)
			return render_fail(r, TFM_EINVAL, line, "%s%s", "split() needs a non-empty separator", "");
		return split(r, self, &args[0], out);
	}
	else
		return render_fail(r, TFM_EINVAL, line, "the string method %s() is not supported%s", nm, "");
	return TFM_OK;
}

int
render_function_exists(render *r, const char *name, size_t len, int line)
{
	char		nm[40];

	snprintf(nm, sizeof(nm), "%.*s", (int) len, name);
	if (strcmp(nm, "raise_exception") != 0)
		return render_fail(r, TFM_EINVAL, line, "the function %s() is not supported%s", nm, "");
	return TFM_OK;
}

int
render_function(render *r, const char *name, size_t len, const value *args, int nargs, int line)
{
	const char *msg;
	size_t		n;

	/* raise_exception() is the one function */
	if (render_function_exists(r, name, len, line))
		return TFM_EINVAL;
	if (nargs != 1 || render_text(r, &args[0], &msg, &n, line))
		return render_fail(r, TFM_EINVAL, line, "%s%s", "raise_exception() takes one message", "");
	{
		char	   *m = chat_alloc(&r->arena, n + 1);

		if (!m)
			return render_oom(r);
		memcpy(m, msg, n);
		return render_fail(r, TFM_EINVAL, 0, "the chat template refuses the conversation: %s%s", m, "");
	}
}

/* length in characters (UTF-8) */
static int64_t
chars(const char *s, size_t n)
{
	int64_t		c = 0;

	for (size_t k = 0; k < n; k++)
		c += (s[k] & 0xC0) != 0x80;
	return c;
}

int
render_filter(render *r, const char *name, size_t len, const value *v, int line, value *out)
{
	char		nm[40];

	snprintf(nm, sizeof(nm), "%.*s", (int) len, name);
	if (v->k == V_STR && render_tick(r, v->len))
		return TFM_ECANCELED;
	if (!strcmp(nm, "trim") && v->k == V_STR)
		*out = strip(v, NULL, 3);
	else if (!strcmp(nm, "length") && (v->k == V_STR || v->k == V_LIST || v->k == V_MAP))
		*out = mkint(V_INT, v->k == V_STR ? chars(v->s, v->len) : (int64_t) v->len);
	else if ((!strcmp(nm, "upper") || !strcmp(nm, "lower")) && v->k == V_STR)
		return change_case(r, v, nm[0] == 'u', out);
	else if (!strcmp(nm, "tojson"))
		return render_tojson(r, v, line, out);
	else if (!strcmp(nm, "string"))
	{
		const char *s;
		size_t		n;

		if (render_text(r, v, &s, &n, line))
			return TFM_EINVAL;
		*out = mkstr(s, n);
	}
	else
		return render_fail(r, TFM_EINVAL, line, "the filter \"%s\" on %s is not supported", nm,
								 kind_name(v->k));
	return TFM_OK;
}

int
render_test(render *r, const char *name, size_t len, int negate, const value *v, int line,
			value *out)
{
	int			res;
	char		nm[40];

	snprintf(nm, sizeof(nm), "%.*s", (int) len, name);
	if (!strcmp(nm, "defined"))
		res = v->k != V_UNDEF;
	else if (!strcmp(nm, "undefined"))
		res = v->k == V_UNDEF;
	else if (!strcmp(nm, "none"))
		res = v->k == V_NONE;
	else if (!strcmp(nm, "string"))
		res = v->k == V_STR;
	else if (!strcmp(nm, "number"))
		res = v->k == V_INT || v->k == V_NUM;
	else if (!strcmp(nm, "mapping"))
		res = v->k == V_MAP;
	else if (!strcmp(nm, "iterable"))
		res = v->k == V_STR || v->k == V_LIST || v->k == V_MAP;
	else if (!strcmp(nm, "sequence"))
		res = v->k == V_STR || v->k == V_LIST || v->k == V_MAP;
	else if (!strcmp(nm, "boolean"))
		res = v->k == V_BOOL;
	else if (!strcmp(nm, "true") || !strcmp(nm, "false"))
		res = v->k == V_BOOL && v->i == (nm[0] == 't');
	else
		return render_fail(r, TFM_EINVAL, line, "the test \"is %s\" is not supported%s", nm, "");
	*out = mkint(V_BOOL, negate ? !res : res);
	return TFM_OK;
}
