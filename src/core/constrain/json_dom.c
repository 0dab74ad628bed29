/*
 * json_dom.c — a JSON text read into a small tree (json_internal.h) for
 * the schema compiler: strict RFC 8259 syntax, strings decoded into a pool
 * (valid UTF-8 only, no \u0000), numbers kept as written, a bounded number
 * of values and nesting; and the compact writing of a value (enum and const
 * literals).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/status.h"
#include "json_dom.h"
#include "../util/grow.h"

typedef struct jd_reader
{
	jd_doc	   *d;
	const char *p,
			   *end;
	int32_t		max_values;
	int			max_depth;
	tfm_status *err;
} jd_reader;

static int
syntax(jd_reader *r, const char *what)
{
	return tfm_status_set(r->err, TFM_EFORMAT, "invalid JSON schema at byte %zu: %s",
						  (size_t) (r->p - r->d->text), what);
}

static void
skip_ws(jd_reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int
pool_put(jd_reader *r, const char *s, size_t n)
{
	jd_doc	   *d = r->d;

	if (tfm_grow((void **) &d->pool, &d->pool_cap, d->pool_len + n + 1, 1) != TFM_OK)
		return tfm_status_set(r->err, TFM_ENOMEM, "out of memory for the JSON schema");
	memcpy(d->pool + d->pool_len, s, n);
	d->pool_len += n;
	d->pool[d->pool_len] = '\0';
	return TFM_OK;
}

static int
hex4(jd_reader *r, unsigned *v)
{
	*v = 0;
	if (r->end - r->p < 4)
		return syntax(r, "a short \\u escape");
	for (int i = 0; i < 4; i++)
	{
		char		c = *r->p++;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned) (c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned) (c - 'A' + 10);
		else
			return syntax(r, "a bad \\u escape");
	}
	return TFM_OK;
}

/* a string at r->p (the opening quote), decoded into the pool */
static int
read_string(jd_reader *r, size_t *off, size_t *len)
{
	int			rc;

	r->p++;
	*off = r->d->pool_len;
	for (;;)
	{
		const char *run = r->p;
		unsigned char c;

		while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char) *r->p >= 0x20)
		{
			size_t		k = tfm_utf8_seq((const unsigned char *) r->p, (size_t) (r->end - r->p));

			if (k == 0)
				return syntax(r, "invalid UTF-8 in a string");
			r->p += k;
		}
		if ((rc = pool_put(r, run, (size_t) (r->p - run))) != TFM_OK)
			return rc;
		if (r->p >= r->end)
			return syntax(r, "an unterminated string");
		c = (unsigned char) *r->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return syntax(r, "a control character in a string");
		/* an escape */
		if (r->p >= r->end)
			return syntax(r, "an unterminated string");
		c = (unsigned char) *r->p++;
		{
			char		out[4];
			size_t		n = 1;
			unsigned	u,
						lo;

			switch (c)
			{
				case '"': case '\\': case '/':
					out[0] = (char) c; break;
				case 'b': out[0] = '\b'; break;
				case 'f': out[0] = '\f'; break;
				case 'n': out[0] = '\n'; break;
				case 'r': out[0] = '\r'; break;
				case 't': out[0] = '\t'; break;
				case 'u':
					if ((rc = hex4(r, &u)) != TFM_OK)
						return rc;
					if (u == 0)
						return syntax(r, "\\u0000 in a string");
					if (u >= 0xDC00 && u <= 0xDFFF)
						return syntax(r, "a lone low surrogate");
					if (u >= 0xD800 && u <= 0xDBFF)
					{
						if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u')
							return syntax(r, "a lone high surrogate");
						r->p += 2;
						if ((rc = hex4(r, &lo)) != TFM_OK)
							return rc;
						if (lo < 0xDC00 || lo > 0xDFFF)
							return syntax(r, "a lone high surrogate");
						u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
					}
					if (u < 0x80)
						out[0] = (char) u;
					else if (u < 0x800)
					{
						out[0] = (char) (0xC0 | (u >> 6));
						out[1] = (char) (0x80 | (u & 0x3F));
						n = 2;
					}
					else if (u < 0x10000)
					{
						out[0] = (char) (0xE0 | (u >> 12));
						out[1] = (char) (0x80 | ((u >> 6) & 0x3F));
						out[2] = (char) (0x80 | (u & 0x3F));
						n = 3;
					}
					else
					{
						out[0] = (char) (0xF0 | (u >> 18));
						out[1] = (char) (0x80 | ((u >> 12) & 0x3F));
						out[2] = (char) (0x80 | ((u >> 6) & 0x3F));
						out[3] = (char) (0x80 | (u & 0x3F));
						n = 4;
					}
					break;
				default:
					return syntax(r, "a bad escape");
			}
			if ((rc = pool_put(r, out, n)) != TFM_OK)
				return rc;
		}
	}
	*len = r->d->pool_len - *off;
	/* each string NUL-terminated in the pool */
	return pool_put(r, "", 0) == TFM_OK ? (r->d->pool_len++, TFM_OK) : TFM_ENOMEM;
}

static int
new_value(jd_reader *r, jd_kind kind, int32_t *idx)
{
	jd_doc	   *d = r->d;
	size_t		cap = (size_t) d->cap;

	if (d->n >= r->max_values)
		return tfm_status_set(r->err, TFM_ELIMIT, "the JSON schema has more than %d values",
							  r->max_values);
	if (tfm_grow((void **) &d->v, &cap, (size_t) d->n + 1, sizeof(jd_value)) != TFM_OK)
		return tfm_status_set(r->err, TFM_ENOMEM, "out of memory for the JSON schema");
	d->cap = (int32_t) cap;
	memset(&d->v[d->n], 0, sizeof(jd_value));
	d->v[d->n].kind = kind;
	d->v[d->n].first = -1;
	d->v[d->n].next = -1;
	*idx = d->n++;
	return TFM_OK;
}

static int	read_value(jd_reader *r, int depth, int32_t *idx);

static int
read_number(jd_reader *r, int32_t *idx)
{
	const char *s = r->p;
	int			rc;

	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (r->p < r->end && *r->p == '0')
		r->p++;
	else if (r->p < r->end && *r->p >= '1' && *r->p <= '9')
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	else
		return syntax(r, "an unexpected character");
	if (r->p < r->end && *r->p == '.')
	{
		r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return syntax(r, "a number without digits after its point");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E'))
	{
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return syntax(r, "a number without exponent digits");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if ((rc = new_value(r, JD_NUMBER, idx)) != TFM_OK)
		return rc;
	r->d->v[*idx].off = (size_t) (s - r->d->text);
	r->d->v[*idx].len = (size_t) (r->p - s);
	return TFM_OK;
}

static int
read_container(jd_reader *r, int depth, int32_t *idx, bool object)
{
	char		close = object ? '}' : ']';
	int32_t		last = -1;
	int			rc;

	if (depth >= r->max_depth)
		return tfm_status_set(r->err, TFM_ELIMIT, "the JSON schema nests more than %d levels",
							  r->max_depth);
	if ((rc = new_value(r, object ? JD_OBJECT : JD_ARRAY, idx)) != TFM_OK)
		return rc;
	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == close)
	{
		r->p++;
		return TFM_OK;
	}
	for (;;)
	{
		size_t		koff = 0,
					klen = 0;
		int32_t		el;

		skip_ws(r);
		if (object)
		{
			if (r->p >= r->end || *r->p != '"')
				return syntax(r, "a key expected");
			if ((rc = read_string(r, &koff, &klen)) != TFM_OK)
				return rc;
			skip_ws(r);
			if (r->p >= r->end || *r->p != ':')
				return syntax(r, "':' expected");
			r->p++;
		}
		if ((rc = read_value(r, depth + 1, &el)) != TFM_OK)
			return rc;
		r->d->v[el].key_off = koff;
		r->d->v[el].key_len = klen;
		if (last < 0)
			r->d->v[*idx].first = el;
		else
			r->d->v[last].next = el;
		last = el;
		r->d->v[*idx].count++;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',')
		{
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == close)
		{
			r->p++;
			return TFM_OK;
		}
		return syntax(r, object ? "',' or '}' expected" : "',' or ']' expected");
	}
}

static int
read_word(jd_reader *r, const char *w, jd_kind kind, int32_t *idx)
{
	size_t		n = strlen(w);

	if ((size_t) (r->end - r->p) < n || memcmp(r->p, w, n) != 0)
		return syntax(r, "an unexpected character");
	r->p += n;
	return new_value(r, kind, idx);
}

static int
read_value(jd_reader *r, int depth, int32_t *idx)
{
	int			rc;

	skip_ws(r);
	if (r->p >= r->end)
		return syntax(r, "a value expected");
	switch (*r->p)
	{
		case '{':
			return read_container(r, depth, idx, true);
		case '[':
			return read_container(r, depth, idx, false);
		case '"':
			{
				size_t		off,
							len;

				if ((rc = read_string(r, &off, &len)) != TFM_OK)
					return rc;
				if ((rc = new_value(r, JD_STRING, idx)) != TFM_OK)
					return rc;
				r->d->v[*idx].off = off;
				r->d->v[*idx].len = len;
				return TFM_OK;
			}
		case 't':
			return read_word(r, "true", JD_TRUE, idx);
		case 'f':
			return read_word(r, "false", JD_FALSE, idx);
		case 'n':
			return read_word(r, "null", JD_NULL, idx);
		default:
			return read_number(r, idx);
	}
}

int
jd_parse(jd_doc *d, const char *text, size_t len, int32_t max_values, int max_depth,
		 tfm_status *err)
{
	jd_reader	r;
	int32_t		root;
	int			rc;

	memset(d, 0, sizeof(*d));
	d->text = text;
	r.d = d;
	r.p = text;
	r.end = text + len;
	r.max_values = max_values;
	r.max_depth = max_depth;
	r.err = err;
	if ((rc = read_value(&r, 0, &root)) != TFM_OK)
		return rc;
	skip_ws(&r);
	if (r.p != r.end)
		return syntax(&r, "text after the value");
	return TFM_OK;
}

void
jd_free(jd_doc *d)
{
	free(d->v);
	free(d->pool);
	memset(d, 0, sizeof(*d));
}

int32_t
jd_member(const jd_doc *d, int32_t o, const char *key)
{
	size_t		n = strlen(key);

	if (d->v[o].kind != JD_OBJECT)
		return -1;
	for (int32_t i = d->v[o].first; i >= 0; i = d->v[i].next)
		if (d->v[i].key_len == n && memcmp(d->pool + d->v[i].key_off, key, n) == 0)
			return i;
	return -1;
}

static int
put(const char *s, size_t n, char **out, size_t *len, size_t *cap)
{
	if (tfm_grow((void **) out, cap, *len + n + 1, 1) != TFM_OK)
		return TFM_ENOMEM;
	memcpy(*out + *len, s, n);
	*len += n;
	(*out)[*len] = '\0';
	return TFM_OK;
}

int
jd_write_escaped(const char *s, size_t n, char **out, size_t *len, size_t *cap)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) s[i];
		char		e[6];
		size_t		k = 2;

		e[0] = '\\';
		switch (c)
		{
			case '"': e[1] = '"'; break;
			case '\\': e[1] = '\\'; break;
			case '\b': e[1] = 'b'; break;
			case '\f': e[1] = 'f'; break;
			case '\n': e[1] = 'n'; break;
			case '\r': e[1] = 'r'; break;
			case '\t': e[1] = 't'; break;
			default:
				if (c >= 0x20)
				{
					e[0] = (char) c;
					k = 1;
				}
				else
				{
					e[1] = 'u';
					e[2] = '0';
					e[3] = '0';
					e[4] = hex[c >> 4];
					e[5] = hex[c & 15];
					k = 6;
				}
		}
		if (put(e, k, out, len, cap) != TFM_OK)
			return TFM_ENOMEM;
	}
	return TFM_OK;
}

int
jd_write(const jd_doc *d, int32_t i, char **out, size_t *len, size_t *cap)
{
	const jd_value *v = &d->v[i];
	int			rc = TFM_OK;

	switch (v->kind)
	{
		case JD_NULL:
			return put("null", 4, out, len, cap);
		case JD_FALSE:
			return put("false", 5, out, len, cap);
		case JD_TRUE:
			return put("true", 4, out, len, cap);
		case JD_NUMBER:
			return put(d->text + v->off, v->len, out, len, cap);
		case JD_STRING:
			if (put("\"", 1, out, len, cap) || jd_write_escaped(d->pool + v->off, v->len, out, len, cap))
				return TFM_ENOMEM;
			return put("\"", 1, out, len, cap);
		case JD_ARRAY:
		case JD_OBJECT:
			if (put(v->kind == JD_ARRAY ? "[" : "{", 1, out, len, cap))
				return TFM_ENOMEM;
			for (int32_t k = v->first; k >= 0 && rc == TFM_OK; k = d->v[k].next)
			{
				if (k != v->first && put(",", 1, out, len, cap))
					return TFM_ENOMEM;
				if (v->kind == JD_OBJECT &&
					(put("\"", 1, out, len, cap) ||
					 jd_write_escaped(d->pool + d->v[k].key_off, d->v[k].key_len, out, len, cap) ||
					 put("\":", 2, out, len, cap)))
					return TFM_ENOMEM;
				rc = jd_write(d, k, out, len, cap);
			}
			if (rc != TFM_OK)
				return rc;
			return put(v->kind == JD_ARRAY ? "]" : "}", 1, out, len, cap);
	}
	return TFM_OK;
}
