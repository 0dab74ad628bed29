/*
 * chat_json.c: JSON text read into a chat template's values, and values
 * written back as JSON (the tojson filter).
 *
 * Reading (render_json_parse): the context of
 * tfm_chat_template_render_json, whose members become the template's
 * names.  As Python's json.loads reads it for transformers: objects are
 * mappings keeping their keys' order (a repeated key keeps its first place
 * and its last value), integers that fit 64 bits are integers, any other
 * number is kept as its text (printed and written back as given; Python
 * would print a float's shortest form, 1.50 as 1.5), strings are decoded
 * (\uXXXX pairs to UTF-8; a lone surrogate, a raw control character or
 * bytes that are not UTF-8 are refused: Python could not print them).  The
 * text is hostile input: nesting is bounded by TFM_CHAT_MAX_NESTING (so the
 * recursion here and in every walk over the values is), memory by the
 * render's budget (values in the arena), time by the cancel poll (every
 * byte read is work).
 *
 * Writing (render_tojson): transformers' tojson, Python's json.dumps(x,
 * ensure_ascii=False): ", " between items, ": " after keys, keys in their
 * order, strings escaped as Python escapes them (\" \\ \n \r \t \b \f and
 * \u00XX for the other control characters; everything else as it is),
 * true / false / null; undefined, the loop and a namespace cannot be
 * written (Python's TypeError).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_json.h"

typedef struct jreader
{
	render	   *r;
	const char *p,
			   *start,
			   *end;
} jreader;

static int
jfail(jreader *j, const char *what)
{
	char		at[32];

	snprintf(at, sizeof(at), "%ld", (long) (j->p - j->start));
	return render_fail(j->r, TFM_EINVAL, 0, "the chat context's JSON: %s at byte %s", what, at);
}

static void
skip_ws(jreader *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
hex4(const char *p, unsigned *u)
{
	*u = 0;
	for (int k = 0; k < 4; k++)
	{
		char		c = p[k];

		*u = *u * 16 + (c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
						c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99);
		if (*u > 0xFFFF)
			return -1;
	}
	return 0;
}

static size_t
put_utf8(char *o, unsigned c)
{
	if (c < 0x80)
		return (o[0] = (char) c, 1);
	if (c < 0x800)
		return (o[0] = (char) (0xC0 | c >> 6), o[1] = (char) (0x80 | (c & 0x3F)), 2);
	if (c < 0x10000)
		return (o[0] = (char) (0xE0 | c >> 12), o[1] = (char) (0x80 | ((c >> 6) & 0x3F)),
				o[2] = (char) (0x80 | (c & 0x3F)), 3);
	o[0] = (char) (0xF0 | c >> 18);
	o[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	o[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	o[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}

/* the length of the UTF-8 sequence at p (at most n bytes), 0 if it is not one */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	unsigned	c = p[0];
	size_t		len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 :
		c >= 0xF0 && c <= 0xF4 ? 4 : 0;

	if (len == 0 || len > n)
		return 0;
	for (size_t k = 1; k < len; k++)
		if ((p[k] & 0xC0) != 0x80)
			return 0;
	/* no overlong forms, surrogates or code points past U+10FFFF */
	if ((len == 3 && c == 0xE0 && p[1] < 0xA0) || (len == 3 && c == 0xED && p[1] >= 0xA0) ||
		(len == 4 && c == 0xF0 && p[1] < 0x90) || (len == 4 && c == 0xF4 && p[1] >= 0x90))
		return 0;
	return len;
}

/* a string (at its opening quote) decoded into the arena */
static int
read_string(jreader *j, value *out)
{
	const char *q = ++j->p;
	char	   *buf,
			   *o;

	/* the decoded text is never longer than the source */
	while (q < j->end && *q != '"')
		q += (*q == '\\' && q + 1 < j->end) ? 2 : 1;
	if (q >= j->end)
		return jfail(j, "an unterminated string");
	if (render_tick(j->r, (size_t) (q - j->p)))
		return TFM_ECANCELED;
	if (!(buf = chat_alloc(&j->r->arena, (size_t) (q - j->p) + 1)))
		return render_oom(j->r);
	o = buf;
	while (*j->p != '"')
	{
		unsigned char c = (unsigned char) *j->p;

		if (c < 0x20)
			return jfail(j, "a control character in a string");
		if (c != '\\')
		{
			size_t		n = utf8_len((const unsigned char *) j->p, (size_t) (j->end - j->p));

			if (n == 0)
				return jfail(j, "a string that is not UTF-8");
			memcpy(o, j->p, n);
			o += n;
			j->p += n;
			continue;
		}
		j->p++;
		switch (*j->p)
		{
			case '"': *o++ = '"'; break;
			case '\\': *o++ = '\\'; break;
			case '/': *o++ = '/'; break;
			case 'b': *o++ = '\b'; break;
			case 'f': *o++ = '\f'; break;
			case 'n': *o++ = '\n'; break;
			case 'r': *o++ = '\r'; break;
			case 't': *o++ = '\t'; break;
			case 'u':
				{
					unsigned	u,
								lo;

					if (j->end - j->p < 5 || hex4(j->p + 1, &u))
						return jfail(j, "a bad \\u escape");
					j->p += 4;
					if (u >= 0xD800 && u <= 0xDBFF)
					{
						if (j->end - j->p < 7 || j->p[1] != '\\' || j->p[2] != 'u' ||
							hex4(j->p + 3, &lo) || lo < 0xDC00 || lo > 0xDFFF)
							return jfail(j, "a lone surrogate");
						u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
						j->p += 6;
					}
					else if (u >= 0xDC00 && u <= 0xDFFF)
						return jfail(j, "a lone surrogate");
					/* \uXXXX is 6 bytes of source for at most 3 of UTF-8, a pair 12 for 4 */
					o += put_utf8(o, u);
					break;
				}
			default:
				return jfail(j, "a bad escape");
		}
		j->p++;
	}
	j->p++;
	*o = '\0';
	*out = mkstr(buf, (size_t) (o - buf));
	return TFM_OK;
}

static int
read_number(jreader *j, value *out)
{
	const char *s = j->p;
	int			integer = 1;
	char		tmp[32];

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return jfail(j, "a bad number");
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.')
	{
		integer = 0;
		if (++j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(j, "a bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E'))
	{
		integer = 0;
		if (++j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return jfail(j, "a bad number");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (render_tick(j->r, (size_t) (j->p - s)))
		return TFM_ECANCELED;
	/* integers of up to 18 characters are integers (-0 is 0); any other number its text */
	if (integer && j->p - s <= 18)
	{
		memcpy(tmp, s, (size_t) (j->p - s));
		tmp[j->p - s] = '\0';
		*out = mkint(V_INT, strtoll(tmp, NULL, 10));
		return TFM_OK;
	}
	*out = mkint(V_NUM, 0);
	out->s = s;
	out->len = (size_t) (j->p - s);
	return TFM_OK;
}

static int	read_value(jreader *j, int depth, value *out);

/*
 * room for two more items after the n of a growing array (in the arena: a
 * doubling leaves the old one behind, at most as much again)
 */
static int
grow(jreader *j, value **items, size_t *cap, size_t n)
{
	value	   *b;

	if (n + 2 <= *cap)
		return TFM_OK;
	*cap = *cap ? 2 * *cap : 8;
	if (!(b = chat_alloc(&j->r->arena, sizeof(value) * *cap)))
		return render_oom(j->r);
	if (n)
		memcpy(b, *items, sizeof(value) * n);
	*items = b;
	return TFM_OK;
}

/* an array or object (at its bracket): its items, the deepest inside it */
static int
read_container(jreader *j, int depth, value *out)
{
	int			object = *j->p == '{';
	char		close = object ? '}' : ']';
	value	   *items = NULL;
	size_t		n = 0,
				cap = 0;
	int			inner = 0;

	if (depth >= TFM_CHAT_MAX_NESTING)
		return render_too_deep(j->r, 0, "the chat context's arrays and objects");
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == close)
		j->p++;
	else
		for (;;)
		{
			value		key,
						v;
			size_t		at = n;

			if (render_tick(j->r, CHAT_STEP))
				return TFM_ECANCELED;
			skip_ws(j);
			if (object)
			{
				if (j->p >= j->end || *j->p != '"')
					return jfail(j, "an object key that is not a string");
				if (read_string(j, &key))
					return TFM_EINVAL;
				skip_ws(j);
				if (j->p >= j->end || *j->p != ':')
					return jfail(j, "no ':' after a key");
				j->p++;
			}
			if (read_value(j, depth + 1, &v))
				return TFM_EINVAL;
			if ((v.k == V_LIST || v.k == V_MAP) && v.depth > inner)
				inner = v.depth;
			if (object)
			{
				/* a repeated key: its first place, its last value (Python's dict) */
				for (size_t k = 0; k < n; k += 2)
					if (items[k].len == key.len && memcmp(items[k].s, key.s, key.len) == 0)
					{
						at = k;
						break;
					}
				if (render_tick(j->r, n))
					return TFM_ECANCELED;
				if (at < n)
					items[at + 1] = v;
				else
				{
					if (grow(j, &items, &cap, n))
						return TFM_EINVAL;
					items[n++] = key;
					items[n++] = v;
				}
			}
			else
			{
				if (grow(j, &items, &cap, n))
					return TFM_EINVAL;
				items[n++] = v;
			}
			skip_ws(j);
			if (j->p < j->end && *j->p == ',')
			{
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == close)
			{
				j->p++;
				break;
			}
			return jfail(j, object ? "no ',' or '}' in an object" : "no ',' or ']' in an array");
		}
	*out = mkint(object ? V_MAP : V_LIST, 0);
	if (!items && !(items = chat_alloc(&j->r->arena, sizeof(value))))
		return render_oom(j->r);
	out->items = items;
	out->len = object ? n / 2 : n;
	out->depth = inner + 1;
	return TFM_OK;
}

static int
read_word(jreader *j, const char *w, value v, value *out)
{
	size_t		n = strlen(w);

	if ((size_t) (j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return jfail(j, "an unknown word");
	j->p += n;
	*out = v;
	return TFM_OK;
}

static int
read_value(jreader *j, int depth, value *out)
{
	skip_ws(j);
	if (j->p >= j->end)
		return jfail(j, "the text ends early");
	switch (*j->p)
	{
		case '{':
		case '[':
			return read_container(j, depth, out);
		case '"':
			return read_string(j, out);
		case 't':
			return read_word(j, "true", mkint(V_BOOL, 1), out);
		case 'f':
			return read_word(j, "false", mkint(V_BOOL, 0), out);
		case 'n':
			return read_word(j, "null", mkint(V_NONE, 0), out);
		default:
			return read_number(j, out);
	}
}

int
render_json_parse(render *r, const char *text, size_t len, value *out)
{
	jreader		j = {r, text, text, text + len};

	if (read_value(&j, 0, out))
		return r->failed ? r->code : TFM_EINVAL;
	skip_ws(&j);
	if (j.p != j.end)
		return jfail(&j, "text after the value");
	return TFM_OK;
}

/* ---- tojson ------------------------------------------------------------------------------- */

typedef struct jwriter
{
	render	   *r;
	char	   *buf;
	size_t		len,
				cap;
	int			line;
} jwriter;

static int
put(jwriter *w, const char *s, size_t n)
{
	if (render_tick(w->r, n))
		return TFM_ECANCELED;
	if (w->len + n + 1 > w->cap)
	{
		size_t		cap = (w->len + n + 1) * 2;
		char	   *b;

		if (w->len + n > TFM_CHAT_MAX_OUTPUT_BYTES)
			return render_fail(w->r, TFM_ELIMIT, w->line, "tojson writes more than %s bytes%s",
							   "67108864", "");
		/* in the arena: a doubling leaves the old buffer behind, at most as much again */
		if (!(b = chat_alloc(&w->r->arena, cap)))
			return render_oom(w->r);
		if (w->len)
			memcpy(b, w->buf, w->len);
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	return TFM_OK;
}

static int
put_string(jwriter *w, const char *s, size_t n)
{
	size_t		from = 0;

	if (put(w, "\"", 1))
		return TFM_EINVAL;
	for (size_t k = 0; k < n; k++)
	{
		unsigned char c = (unsigned char) s[k];
		char		esc[8];
		const char *e = NULL;

		if (c == '"')
			e = "\\\"";
		else if (c == '\\')
			e = "\\\\";
		else if (c == '\n')
			e = "\\n";
		else if (c == '\r')
			e = "\\r";
		else if (c == '\t')
			e = "\\t";
		else if (c == '\b')
			e = "\\b";
		else if (c == '\f')
			e = "\\f";
		else if (c < 0x20)
		{
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			e = esc;
		}
		if (!e)
			continue;
		if (put(w, s + from, k - from) || put(w, e, strlen(e)))
			return TFM_EINVAL;
		from = k + 1;
	}
	return put(w, s + from, n - from) || put(w, "\"", 1);
}

/* v written; as deep as values nest (TFM_CHAT_MAX_NESTING at most) */
static int
put_value(jwriter *w, const value *v)
{
	char		num[24];

	switch (v->k)
	{
		case V_NONE:
			return put(w, "null", 4);
		case V_BOOL:
			return v->i ? put(w, "true", 4) : put(w, "false", 5);
		case V_INT:
			return put(w, num, (size_t) snprintf(num, sizeof(num), "%lld", (long long) v->i));
		case V_NUM:
			return put(w, v->s, v->len);
		case V_STR:
			return put_string(w, v->s, v->len);
		case V_LIST:
			if (put(w, "[", 1))
				return TFM_EINVAL;
			for (size_t k = 0; k < v->len; k++)
				if ((k && put(w, ", ", 2)) || put_value(w, &v->items[k]))
					return TFM_EINVAL;
			return put(w, "]", 1);
		case V_MAP:
			if (put(w, "{", 1))
				return TFM_EINVAL;
			for (size_t k = 0; k < v->len; k++)
				if ((k && put(w, ", ", 2)) || put_string(w, v->items[2 * k].s, v->items[2 * k].len) ||
					put(w, ": ", 2) || put_value(w, &v->items[2 * k + 1]))
					return TFM_EINVAL;
			return put(w, "}", 1);
		default:
			return render_fail(w->r, TFM_EINVAL, w->line, "tojson of %s is not supported%s",
							   kind_name(v->k), "");
	}
}

int
render_tojson(render *r, const value *v, int line, value *out)
{
	jwriter		w = {r, NULL, 0, 0, line};

	if (put_value(&w, v) || put(&w, "", 0))
		return r->failed ? r->code : TFM_EINVAL;
	*out = mkstr(w.buf, w.len);
	return TFM_OK;
}
