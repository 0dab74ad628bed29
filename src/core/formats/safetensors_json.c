/*
 * safetensors_json.c: the JSON lexing of the safetensors reader — white
 * space, punctuation, strings (escapes, surrogate pairs, strict UTF-8) and
 * numbers — with its allocation and messages (safetensors_json.h).  The
 * schemas that drive it are in safetensors.c and safetensors_index.c.
 *
 * Every read checks the end of the buffer first.  Strings decode into the
 * reader's pool, which holds header_len bytes: a string of k raw bytes
 * between its quotes decodes to at most k bytes (an escape never grows:
 * \uXXXX is at most 3 bytes of UTF-8, a surrogate pair of 12 bytes is 4),
 * plus its NUL where the closing quote was.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors_json.h"
#include "../util/hex.h"

/* ---- allocation ---------------------------------------------------------------- */

void *
st_alloc(size_t n)
{
	return malloc(n ? n : 1);
}

void
st_free(void *p)
{
	if (p)
		free(p);
}

/* ---- messages ------------------------------------------------------------------ */

quoted
st_quote(const char *name, size_t len)
{
	quoted		q;
	size_t		n = len > QUOTE_MAX ? tfm_utf8_cut(name, QUOTE_MAX) : len,
				o = 0;

	q.s[o++] = '"';
	for (size_t i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) name[i];

		q.s[o++] = (c < 0x20 || c == 0x7F) ? '?' : (char) c;
	}
	if (n < len)
	{
		memcpy(q.s + o, "...", 3);
		o += 3;
	}
	q.s[o++] = '"';
	q.s[o] = '\0';
	return q;
}

int
st_syntax(reader *r, const char *what)
{
	return tfm_status_set(r->err, TFM_EBADFILE,
				   "invalid JSON in %s at byte %zu: %s",
				   r->doc ? r->doc : "the safetensors header",
				   (size_t) (r->p - r->start), what);
}

void
st_skip_ws(reader *r)
{
	while (r->p < r->end &&
		   (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* consumes c after optional whitespace */
int
st_expect(reader *r, char c, const char *what)
{
	st_skip_ws(r);
	if (r->p >= r->end || *r->p != (uint8_t) c)
		return st_syntax(r, what);
	r->p++;
	return TFM_OK;
}

/* after whitespace: 1 if the next byte is c (not consumed) */
int
st_peek(reader *r, char c)
{
	st_skip_ws(r);
	return r->p < r->end && *r->p == (uint8_t) c;
}

/* after whitespace: consumes c and returns 1 if it is the next byte, else 0 */
int
st_accept(reader *r, char c)
{
	st_skip_ws(r);
	if (r->p >= r->end || *r->p != (uint8_t) c)
		return 0;
	r->p++;
	return 1;
}

/* after ',' continue, else the closing byte; 1 = more, 0 = done, <0 error */
int
st_next_member(reader *r, char close)
{
	st_skip_ws(r);
	if (r->p < r->end && *r->p == ',')
	{
		r->p++;
		return 1;
	}
	return st_expect(r, close, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'") == TFM_OK ? 0 : -1;
}

/* a key and its ':' after optional whitespace; TFM_EBADFILE if not */
int
st_read_key(reader *r, const char **key, size_t *klen)
{
	st_skip_ws(r);
	if (st_read_string(r, key, klen) != TFM_OK ||
		st_expect(r, ':', "expected ':'") != TFM_OK)
		return TFM_EBADFILE;
	return TFM_OK;
}

int
st_members(reader *r, st_member_fn member, void *ctx)
{
	int			more;

	if (st_peek(r, '}'))
	{
		r->p++;
		return TFM_OK;
	}
	do
	{
		const char *key;
		size_t		klen;
		int			st;

		if (st_read_key(r, &key, &klen) != TFM_OK)
			return TFM_EBADFILE;
		if ((st = member(r, ctx, key, klen)) != TFM_OK)
			return st;
	} while ((more = st_next_member(r, '}')) == 1);
	return more == 0 ? TFM_OK : TFM_EBADFILE;
}

/* four hex digits at r->p -> *v */
static int
hex4(reader *r, unsigned *v)
{
	uint32_t	w;

	*v = 0;
	if (r->end - r->p < 4)
		return st_syntax(r, "truncated \\u escape");
	if (tfm_hex4(&w, r->p))
		return st_syntax(r, "invalid \\u escape");
	*v = w;
	r->p += 4;
	return TFM_OK;
}

/*
 * The string at r->p (which must be '"'), decoded into the pool: *s points
 * at it, NUL-terminated, *len bytes.  Refuses U+0000 (names and values
 * become C strings and PostgreSQL text).
 */
int
st_read_string(reader *r, const char **s, size_t *len)
{
	char	   *out = r->pool + r->pool_len;
	size_t		o = 0;

	if (r->p >= r->end || *r->p != '"')
		return st_syntax(r, "expected a string");
	r->p++;
	for (;;)
	{
		uint8_t		c;

		if (r->p >= r->end)
			return st_syntax(r, "unterminated string");
		c = *r->p;
		if (c == '"')
		{
			r->p++;
			break;
		}
		if (c < 0x20)
			return st_syntax(r, "control character in a string");
		if (c == '\\')
		{
			unsigned	cp;

			if (r->end - r->p < 2)
				return st_syntax(r, "unterminated string");
			c = r->p[1];
			r->p += 2;
			switch (c)
			{
				case '"':
				case '\\':
				case '/':
					out[o++] = (char) c;
					continue;
				case 'b':
					out[o++] = '\b';
					continue;
				case 'f':
					out[o++] = '\f';
					continue;
				case 'n':
					out[o++] = '\n';
					continue;
				case 'r':
					out[o++] = '\r';
					continue;
				case 't':
					out[o++] = '\t';
					continue;
				case 'u':
					break;
				default:
					r->p -= 2;
					return st_syntax(r, "invalid escape");
			}
			if (hex4(r, &cp) != TFM_OK)
				return TFM_EBADFILE;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return st_syntax(r, "lone low surrogate in a \\u escape");
			if (cp >= 0xD800 && cp <= 0xDBFF)
			{
				unsigned	lo;

				if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
					return st_syntax(r, "high surrogate not followed by a \\u escape");
				r->p += 2;
				if (hex4(r, &lo) != TFM_OK)
					return TFM_EBADFILE;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return st_syntax(r, "high surrogate not followed by a low surrogate");
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			if (cp == 0)
				return st_syntax(r, "\\u0000 is not allowed in a string");
			if (cp < 0x80)
				out[o++] = (char) cp;
			else if (cp < 0x800)
			{
				out[o++] = (char) (0xC0 | (cp >> 6));
				out[o++] = (char) (0x80 | (cp & 0x3F));
			}
			else if (cp < 0x10000)
			{
				out[o++] = (char) (0xE0 | (cp >> 12));
				out[o++] = (char) (0x80 | ((cp >> 6) & 0x3F));
				out[o++] = (char) (0x80 | (cp & 0x3F));
			}
			else
			{
				out[o++] = (char) (0xF0 | (cp >> 18));
				out[o++] = (char) (0x80 | ((cp >> 12) & 0x3F));
				out[o++] = (char) (0x80 | ((cp >> 6) & 0x3F));
				out[o++] = (char) (0x80 | (cp & 0x3F));
			}
		}
		else
		{
			size_t		n = tfm_utf8_seq(r->p, (size_t) (r->end - r->p));

			if (n == 0)
				return st_syntax(r, "invalid UTF-8 in a string");
			memcpy(out + o, r->p, n);
			o += n;
			r->p += n;
		}
	}
	out[o] = '\0';
	r->pool_len += o + 1;
	*s = out;
	*len = o;
	return TFM_OK;
}

/* a JSON number at r->p (after whitespace); NUM_NONE consumes nothing */
num_kind
st_read_number(reader *r, uint64_t *v)
{
	int			neg = 0,
				huge = 0,
				frac = 0;

	*v = 0;
	st_skip_ws(r);
	if (r->p < r->end && *r->p == '-')
	{
		if (r->end - r->p < 2 || r->p[1] < '0' || r->p[1] > '9')
			return NUM_NONE;
		neg = 1;
		r->p++;
	}
	if (r->p >= r->end || *r->p < '0' || *r->p > '9')
		return NUM_NONE;
	if (*r->p == '0')
		r->p++;					/* a leading 0 stands alone; "01" fails later */
	else
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
		{
			unsigned	d = *r->p++ - '0';

			if (*v > (UINT64_MAX - d) / 10)
				huge = 1;
			else
				*v = *v * 10 + d;
		}
	if (r->p < r->end && *r->p == '.')
	{
		frac = 1;
		r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return NUM_NONE;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E'))
	{
		frac = 1;
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return NUM_NONE;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (neg)
		return NUM_NEGATIVE;	/* -0 too: offsets and dims are unsigned */
	return frac ? NUM_FRACTION : huge ? NUM_HUGE : NUM_UINT;
}
