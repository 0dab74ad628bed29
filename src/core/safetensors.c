/*
 * safetensors.c: the strict reader of .safetensors headers (the contract is
 * in include/tfm/safetensors.h; value conversions are in
 * safetensors_values.c).
 *
 * The header is read by a schema-directed JSON parser rather than a
 * general one: the only shapes allowed are
 *
 *   { "name": { "dtype": "...", "shape": [int, ...], "data_offsets": [int, int] },
 *     "__metadata__": { "key": "value", ... }, ... }
 *
 * so the parser is three nested loops with no recursion and no stack to
 * overflow; a value nested deeper than the schema allows (or of the wrong
 * type) is refused where it starts.  Every read checks the end of the
 * buffer first.
 *
 * Strings are decoded (escapes, surrogate pairs, strict UTF-8) into one
 * pool allocated up front: a string of k raw bytes between its quotes
 * decodes to at most k bytes, plus its NUL where the closing quote was, so
 * header_len bytes always suffice and pointers into the pool stay valid.
 *
 * After the parse, tensors are sorted by (begin, end) and checked to tile
 * the data buffer exactly (no overlap, no hole, nothing after the last),
 * and an index by name finds duplicates and serves tfm_st_find.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/safetensors.h"

/* ---- allocation, names, messages ------------------------------------------- */

static void *(*alloc_hook) (size_t) = malloc;
static void *(*realloc_hook) (void *, size_t) = realloc;
static void (*free_hook) (void *) = free;

void
tfm_st_set_allocator(void *(*alloc_fn) (size_t), void *(*realloc_fn) (void *, size_t),
					 void (*free_fn) (void *))
{
	alloc_hook = alloc_fn ? alloc_fn : malloc;
	realloc_hook = realloc_fn ? realloc_fn : realloc;
	free_hook = free_fn ? free_fn : free;
}

static void *
st_alloc(size_t n)
{
	return alloc_hook(n ? n : 1);
}

static void
st_free(void *p)
{
	if (p)
		free_hook(p);
}

/* makes room for need elements of size bytes in *p (capacity *cap) */
static int
st_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t		ncap;
	void	   *np;

	if (need <= *cap)
		return TFM_ST_OK;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
	{
		if (ncap > SIZE_MAX / 2)
			return TFM_ST_ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return TFM_ST_ENOMEM;
	np = *p ? realloc_hook(*p, ncap * size) : st_alloc(ncap * size);
	if (!np)
		return TFM_ST_ENOMEM;
	*p = np;
	*cap = ncap;
	return TFM_ST_OK;
}

static const struct
{
	const char *name;
	tfm_st_dtype dtype;
	size_t		size;
}			dtypes[] =
{
	{"F32", TFM_ST_F32, 4},
	{"F16", TFM_ST_F16, 2},
	{"BF16", TFM_ST_BF16, 2},
	{"F64", TFM_ST_F64, 8},
	{"F8_E5M2", TFM_ST_F8_E5M2, 1},
	{"F8_E4M3", TFM_ST_F8_E4M3, 1},
	{"BOOL", TFM_ST_BOOL, 1},
	{"U8", TFM_ST_U8, 1},
	{"I8", TFM_ST_I8, 1},
	{"I16", TFM_ST_I16, 2},
	{"U16", TFM_ST_U16, 2},
	{"I32", TFM_ST_I32, 4},
	{"U32", TFM_ST_U32, 4},
	{"I64", TFM_ST_I64, 8},
	{"U64", TFM_ST_U64, 8},
};
#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *
tfm_st_dtype_name(tfm_st_dtype dtype)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].name;
	return NULL;
}

size_t
tfm_st_dtype_size(tfm_st_dtype dtype)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].size;
	return 0;
}

int
tfm_st_dtype_is_float(tfm_st_dtype dtype)
{
	return dtype == TFM_ST_F32 || dtype == TFM_ST_F16 || dtype == TFM_ST_BF16;
}

const char *
tfm_st_status_name(int status)
{
	switch (status)
	{
		case TFM_ST_OK:
			return "ok";
		case TFM_ST_ENOMEM:
			return "out of memory";
		case TFM_ST_EFORMAT:
			return "invalid safetensors file";
		case TFM_ST_EDTYPE:
			return "unsupported dtype";
		case TFM_ST_EARG:
			return "invalid argument";
	}
	return "unknown status";
}

/* length of the longest prefix of s[0 .. n) that ends on a UTF-8 boundary */
static size_t
utf8_cut(const char *s, size_t n)
{
	size_t		k = n;

	/* back over continuation bytes, then drop the lead byte if incomplete */
	while (k > 0 && ((unsigned char) s[k - 1] & 0xC0) == 0x80)
		k--;
	if (k > 0 && ((unsigned char) s[k - 1] & 0x80))
	{
		unsigned char c = (unsigned char) s[k - 1];
		size_t		want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;

		if (n - (k - 1) < want)
			k--;
		else
			k = n;
	}
	else
		k = n;
	return k;
}

/* a quoted, one-line, cut-short copy of a name for messages (80 bytes) */
#define QUOTE_MAX 64
typedef struct quoted
{
	char		s[QUOTE_MAX + 8];
} quoted;

static quoted
quote(const char *name, size_t len)
{
	quoted		q;
	size_t		n = len > QUOTE_MAX ? utf8_cut(name, QUOTE_MAX) : len,
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

static int
fail(tfm_st_err *err, int status, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static int
fail(tfm_st_err *err, int status, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (!err)
		return status;
	va_start(ap, fmt);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n >= (int) sizeof(err->msg))
		err->msg[utf8_cut(err->msg, sizeof(err->msg) - 1)] = '\0';
	return status;
}

static int
oom(tfm_st_err *err)
{
	return fail(err, TFM_ST_ENOMEM, "out of memory reading a safetensors header");
}

/* ---- the header length -------------------------------------------------------- */

static int
check_length(uint64_t n, uint64_t file_size, tfm_st_err *err)
{
	if (n < 2)
		return fail(err, TFM_ST_EFORMAT,
					"safetensors header length %llu is too small (at least 2)",
					(unsigned long long) n);
	if (n > TFM_ST_MAX_HEADER)
		return fail(err, TFM_ST_EFORMAT,
					"safetensors header length %llu exceeds the limit of %llu bytes",
					(unsigned long long) n, (unsigned long long) TFM_ST_MAX_HEADER);
	if (file_size < TFM_ST_PREFIX || n > file_size - TFM_ST_PREFIX)
		return fail(err, TFM_ST_EFORMAT,
					"safetensors header length %llu exceeds the file: %llu bytes follow the length",
					(unsigned long long) n,
					(unsigned long long) (file_size < TFM_ST_PREFIX ? 0 : file_size - TFM_ST_PREFIX));
	return TFM_ST_OK;
}

int
tfm_st_header_length(uint64_t *header_len, const uint8_t *prefix, size_t prefix_len,
					 uint64_t file_size, tfm_st_err *err)
{
	uint64_t	n = 0;
	int			st;

	*header_len = 0;
	if (err)
		err->msg[0] = '\0';
	if (file_size < TFM_ST_PREFIX)
		return fail(err, TFM_ST_EFORMAT,
					"file of %llu bytes is too short for a safetensors header length (8 bytes)",
					(unsigned long long) file_size);
	if (prefix_len < TFM_ST_PREFIX)
		return fail(err, TFM_ST_EARG, "the first 8 bytes of the file are needed, got %zu",
					prefix_len);
	for (int i = TFM_ST_PREFIX - 1; i >= 0; i--)
		n = (n << 8) | prefix[i];
	if ((st = check_length(n, file_size, err)) != TFM_ST_OK)
		return st;
	*header_len = n;
	return TFM_ST_OK;
}

/* ---- the JSON reader ---------------------------------------------------------- */

typedef struct reader
{
	const uint8_t *start,
			   *p,
			   *end;
	tfm_st_err *err;
	char	   *pool;			/* decoded strings, NUL-terminated */
	size_t		pool_len;
	tfm_st_tensor *t;			/* tensors in header order */
	size_t		n_t,
				cap_t;
	tfm_st_meta *meta;
	size_t		n_meta,
				cap_meta;
	int			seen_meta;
} reader;

static int
syntax(reader *r, const char *what)
{
	return fail(r->err, TFM_ST_EFORMAT,
				"invalid JSON in the safetensors header at byte %zu: %s",
				(size_t) (r->p - r->start), what);
}

static void
skip_ws(reader *r)
{
	while (r->p < r->end &&
		   (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* consumes c after optional whitespace */
static int
expect(reader *r, char c, const char *what)
{
	skip_ws(r);
	if (r->p >= r->end || *r->p != (uint8_t) c)
		return syntax(r, what);
	r->p++;
	return TFM_ST_OK;
}

/* after whitespace: 1 if the next byte is c (not consumed) */
static int
peek(reader *r, char c)
{
	skip_ws(r);
	return r->p < r->end && *r->p == (uint8_t) c;
}

/* length of the strict UTF-8 sequence at s (n > 0 bytes left), or 0 */
static size_t
utf8_seq(const uint8_t *s, size_t n)
{
	uint8_t		c = s[0],
				lo = 0x80,
				hi = 0xBF;
	size_t		len;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;			/* no overlongs */
		else if (c == 0xED)
			hi = 0x9F;			/* no surrogates */
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;			/* <= U+10FFFF */
	}
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* four hex digits at r->p -> *v */
static int
hex4(reader *r, unsigned *v)
{
	*v = 0;
	if (r->end - r->p < 4)
		return syntax(r, "truncated \\u escape");
	for (int i = 0; i < 4; i++)
	{
		uint8_t		c = r->p[i];
		unsigned	d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return syntax(r, "invalid \\u escape");
		*v = (*v << 4) | d;
	}
	r->p += 4;
	return TFM_ST_OK;
}

/*
 * The string at r->p (which must be '"'), decoded into the pool: *s points
 * at it, NUL-terminated, *len bytes.  Refuses U+0000 (names and values
 * become C strings and PostgreSQL text).
 */
static int
read_string(reader *r, const char **s, size_t *len)
{
	char	   *out = r->pool + r->pool_len;
	size_t		o = 0;

	if (r->p >= r->end || *r->p != '"')
		return syntax(r, "expected a string");
	r->p++;
	for (;;)
	{
		uint8_t		c;

		if (r->p >= r->end)
			return syntax(r, "unterminated string");
		c = *r->p;
		if (c == '"')
		{
			r->p++;
			break;
		}
		if (c < 0x20)
			return syntax(r, "control character in a string");
		if (c == '\\')
		{
			unsigned	cp;

			if (r->end - r->p < 2)
				return syntax(r, "unterminated string");
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
					return syntax(r, "invalid escape");
			}
			if (hex4(r, &cp) != TFM_ST_OK)
				return TFM_ST_EFORMAT;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return syntax(r, "lone low surrogate in a \\u escape");
			if (cp >= 0xD800 && cp <= 0xDBFF)
			{
				unsigned	lo;

				if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
					return syntax(r, "high surrogate not followed by a \\u escape");
				r->p += 2;
				if (hex4(r, &lo) != TFM_ST_OK)
					return TFM_ST_EFORMAT;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return syntax(r, "high surrogate not followed by a low surrogate");
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			if (cp == 0)
				return syntax(r, "\\u0000 is not allowed in a string");
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
			size_t		n = utf8_seq(r->p, (size_t) (r->end - r->p));

			if (n == 0)
				return syntax(r, "invalid UTF-8 in a string");
			memcpy(out + o, r->p, n);
			o += n;
			r->p += n;
		}
	}
	out[o] = '\0';
	r->pool_len += o + 1;
	*s = out;
	*len = o;
	return TFM_ST_OK;
}

typedef enum num_kind
{
	NUM_UINT,					/* a non-negative integer that fits uint64 */
	NUM_NEGATIVE,
	NUM_FRACTION,				/* has a fraction or an exponent */
	NUM_HUGE,					/* an integer above 2^64 - 1 */
	NUM_NONE					/* not a number: a string, array, ... */
} num_kind;

/* a JSON number at r->p (after whitespace); NUM_NONE consumes nothing */
static num_kind
read_number(reader *r, uint64_t *v)
{
	int			neg = 0,
				huge = 0,
				frac = 0;

	*v = 0;
	skip_ws(r);
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

#define TOO_MANY (-1)

/*
 * An array of at most max non-negative integers -> vals[0 .. *n).  what
 * names it in messages ("shape", "data_offsets"), q the tensor.  TOO_MANY
 * (no message) when it holds more than max: the caller says why.
 */
static int
read_uint_array(reader *r, uint64_t *vals, int max, int *n, const char *what,
				const quoted *q)
{
	*n = 0;
	skip_ws(r);
	if (r->p >= r->end || *r->p != '[')
		return fail(r->err, TFM_ST_EFORMAT, "%s of tensor %s is not an array", what, q->s);
	r->p++;
	if (peek(r, ']'))
	{
		r->p++;
		return TFM_ST_OK;
	}
	for (;;)
	{
		uint64_t	v;
		const uint8_t *at;

		skip_ws(r);
		at = r->p;
		switch (read_number(r, &v))
		{
			case NUM_UINT:
				break;
			case NUM_NEGATIVE:
				return fail(r->err, TFM_ST_EFORMAT, "%s of tensor %s holds a negative number",
							what, q->s);
			case NUM_FRACTION:
				return fail(r->err, TFM_ST_EFORMAT, "%s of tensor %s holds a number that is not an integer",
							what, q->s);
			case NUM_HUGE:
				return fail(r->err, TFM_ST_EFORMAT, "%s of tensor %s holds an integer above 2^64 - 1",
							what, q->s);
			case NUM_NONE:
				if (r->p == at && r->p < r->end &&
					(*r->p == '[' || *r->p == '{' || *r->p == '"' ||
					 *r->p == 't' || *r->p == 'f' || *r->p == 'n'))
					return fail(r->err, TFM_ST_EFORMAT,
								"%s of tensor %s must be an array of integers", what, q->s);
				return syntax(r, "invalid number");
		}
		if (*n == max)
			return TOO_MANY;
		vals[(*n)++] = v;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',')
		{
			r->p++;
			continue;
		}
		return expect(r, ']', "expected ',' or ']'");
	}
}

/* the value of "__metadata__": an object of strings */
static int
read_metadata(reader *r)
{
	if (r->seen_meta++)
		return fail(r->err, TFM_ST_EFORMAT, "duplicate key \"__metadata__\" in the safetensors header");
	skip_ws(r);
	if (r->p >= r->end || *r->p != '{')
		return fail(r->err, TFM_ST_EFORMAT, "__metadata__ of the safetensors header is not an object");
	r->p++;
	if (peek(r, '}'))
	{
		r->p++;
		return TFM_ST_OK;
	}
	for (;;)
	{
		const char *key,
				   *val;
		size_t		klen,
					vlen;
		quoted		q;

		skip_ws(r);
		if (read_string(r, &key, &klen) != TFM_ST_OK ||
			expect(r, ':', "expected ':'") != TFM_ST_OK)
			return TFM_ST_EFORMAT;
		skip_ws(r);
		q = quote(key, klen);
		if (r->p >= r->end || *r->p != '"')
			return fail(r->err, TFM_ST_EFORMAT, "value of metadata key %s is not a string", q.s);
		if (read_string(r, &val, &vlen) != TFM_ST_OK)
			return TFM_ST_EFORMAT;
		if (st_grow((void **) &r->meta, &r->cap_meta, r->n_meta + 1, sizeof(tfm_st_meta)))
			return oom(r->err);
		r->meta[r->n_meta].key = key;
		r->meta[r->n_meta].value = val;
		r->n_meta++;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',')
		{
			r->p++;
			continue;
		}
		return expect(r, '}', "expected ',' or '}'");
	}
}

/* the entry of one tensor; name is in the pool */
static int
read_tensor(reader *r, const char *name, size_t name_len)
{
	tfm_st_tensor *t;
	quoted		q = quote(name, name_len);
	int			have_dtype = 0,
				have_shape = 0,
				have_offsets = 0;
	uint64_t	off[2] = {0, 0},
				bytes;
	size_t		size;
	int			st;

	if (name_len == 0)
		return fail(r->err, TFM_ST_EFORMAT, "empty tensor name in the safetensors header");
	if (st_grow((void **) &r->t, &r->cap_t, r->n_t + 1, sizeof(tfm_st_tensor)))
		return oom(r->err);
	t = &r->t[r->n_t++];
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->name_len = name_len;

	skip_ws(r);
	if (r->p >= r->end || *r->p != '{')
		return fail(r->err, TFM_ST_EFORMAT, "entry of tensor %s is not an object", q.s);
	r->p++;
	if (!peek(r, '}'))
		for (;;)
		{
			const char *key;
			size_t		klen;

			skip_ws(r);
			if (read_string(r, &key, &klen) != TFM_ST_OK ||
				expect(r, ':', "expected ':'") != TFM_ST_OK)
				return TFM_ST_EFORMAT;
			if (strcmp(key, "dtype") == 0 && klen == 5)
			{
				const char *dt;
				size_t		dlen,
							i;

				if (have_dtype++)
					return fail(r->err, TFM_ST_EFORMAT, "duplicate field \"dtype\" in tensor %s", q.s);
				skip_ws(r);
				if (r->p >= r->end || *r->p != '"')
					return fail(r->err, TFM_ST_EFORMAT, "dtype of tensor %s is not a string", q.s);
				if (read_string(r, &dt, &dlen) != TFM_ST_OK)
					return TFM_ST_EFORMAT;
				for (i = 0; i < N_DTYPES; i++)
					if (strcmp(dt, dtypes[i].name) == 0)
						break;
				if (i == N_DTYPES)
				{
					quoted		qd = quote(dt, dlen);

					return fail(r->err, TFM_ST_EFORMAT, "unknown dtype %s of tensor %s", qd.s, q.s);
				}
				t->dtype = dtypes[i].dtype;
			}
			else if (strcmp(key, "shape") == 0 && klen == 5)
			{
				uint64_t	dims[TFM_ST_MAX_RANK];

				if (have_shape++)
					return fail(r->err, TFM_ST_EFORMAT, "duplicate field \"shape\" in tensor %s", q.s);
				st = read_uint_array(r, dims, TFM_ST_MAX_RANK, &t->ndim, "shape", &q);
				if (st == TOO_MANY)
					return fail(r->err, TFM_ST_EFORMAT,
								"rank of tensor %s exceeds the limit of %d", q.s, TFM_ST_MAX_RANK);
				if (st != TFM_ST_OK)
					return st;
				memcpy(t->dims, dims, sizeof(uint64_t) * t->ndim);
			}
			else if (strcmp(key, "data_offsets") == 0 && klen == 12)
			{
				int			n;

				if (have_offsets++)
					return fail(r->err, TFM_ST_EFORMAT, "duplicate field \"data_offsets\" in tensor %s", q.s);
				st = read_uint_array(r, off, 2, &n, "data_offsets", &q);
				if (st != TFM_ST_OK && st != TOO_MANY)
					return st;
				if (st == TOO_MANY || n != 2)
					return fail(r->err, TFM_ST_EFORMAT,
								"data_offsets of tensor %s must be 2 integers", q.s);
			}
			else
			{
				quoted		qk = quote(key, klen);

				return fail(r->err, TFM_ST_EFORMAT, "unknown field %s in tensor %s", qk.s, q.s);
			}
			skip_ws(r);
			if (r->p < r->end && *r->p == ',')
			{
				r->p++;
				continue;
			}
			break;
		}
	if (expect(r, '}', "expected ',' or '}'") != TFM_ST_OK)
		return TFM_ST_EFORMAT;
	if (!have_dtype || !have_shape || !have_offsets)
		return fail(r->err, TFM_ST_EFORMAT, "tensor %s has no %s", q.s,
					!have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");

	/* values, then bytes, with 64-bit overflow checks */
	t->n_values = 1;
	for (int i = 0; i < t->ndim; i++)
	{
		if (t->dims[i] != 0 && t->n_values > UINT64_MAX / t->dims[i])
			return fail(r->err, TFM_ST_EFORMAT,
						"shape of tensor %s is too large: its number of values overflows 64 bits", q.s);
		t->n_values *= t->dims[i];
	}
	size = tfm_st_dtype_size(t->dtype);
	if (t->n_values > UINT64_MAX / size)
		return fail(r->err, TFM_ST_EFORMAT,
					"shape of tensor %s is too large: its byte size overflows 64 bits", q.s);
	bytes = t->n_values * size;
	t->begin = off[0];
	t->end = off[1];
	if (t->begin > t->end)
		return fail(r->err, TFM_ST_EFORMAT,
					"data_offsets [%llu, %llu] of tensor %s end before they begin",
					(unsigned long long) t->begin, (unsigned long long) t->end, q.s);
	if (t->end - t->begin != bytes)
		return fail(r->err, TFM_ST_EFORMAT,
					"shape of tensor %s does not match its data_offsets: %llu values of %s are %llu bytes, [%llu, %llu] holds %llu",
					q.s, (unsigned long long) t->n_values, tfm_st_dtype_name(t->dtype),
					(unsigned long long) bytes, (unsigned long long) t->begin,
					(unsigned long long) t->end, (unsigned long long) (t->end - t->begin));
	return TFM_ST_OK;
}

/* ---- the whole header --------------------------------------------------------- */

static int
cmp_offsets(const void *a, const void *b)
{
	const tfm_st_tensor *x = a,
			   *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp((*(const tfm_st_tensor *const *) a)->name,
				  (*(const tfm_st_tensor *const *) b)->name);
}

static int
cmp_meta(const void *a, const void *b)
{
	return strcmp(((const tfm_st_meta *) a)->key, ((const tfm_st_meta *) b)->key);
}

/* sorts, indexes and checks the tensors and the metadata of f */
static int
check_tensors(tfm_st_file *f, tfm_st_err *err)
{
	uint64_t	at = 0;

	if (f->n_tensors > 1)
		qsort(f->tensors, f->n_tensors, sizeof(tfm_st_tensor), cmp_offsets);
	for (size_t i = 0; i < f->n_tensors; i++)
		f->by_name[i] = &f->tensors[i];
	if (f->n_tensors > 1)
		qsort(f->by_name, f->n_tensors, sizeof(f->by_name[0]), cmp_names);
	for (size_t i = 1; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = f->by_name[i];

		if (strcmp(f->by_name[i - 1]->name, t->name) == 0)
		{
			quoted		q = quote(t->name, t->name_len);

			return fail(err, TFM_ST_EFORMAT, "duplicate tensor name %s in the safetensors header", q.s);
		}
	}
	if (f->n_meta > 1)
		qsort(f->meta, f->n_meta, sizeof(tfm_st_meta), cmp_meta);
	for (size_t i = 1; i < f->n_meta; i++)
		if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0)
		{
			quoted		q = quote(f->meta[i].key, strlen(f->meta[i].key));

			return fail(err, TFM_ST_EFORMAT, "duplicate metadata key %s in the safetensors header", q.s);
		}

	/* the ranges tile the data buffer: no overlap, no hole, nothing after */
	for (size_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = &f->tensors[i];
		quoted		q = quote(t->name, t->name_len);

		if (t->end > f->data_len)
			return fail(err, TFM_ST_EFORMAT,
						"data_offsets [%llu, %llu] of tensor %s lie outside the data buffer of %llu bytes",
						(unsigned long long) t->begin, (unsigned long long) t->end, q.s,
						(unsigned long long) f->data_len);
		if (t->begin < at)
		{
			const tfm_st_tensor *p = &f->tensors[i - 1];
			quoted		qp = quote(p->name, p->name_len);

			return fail(err, TFM_ST_EFORMAT,
						"data of tensors %s [%llu, %llu] and %s [%llu, %llu] overlap",
						qp.s, (unsigned long long) p->begin, (unsigned long long) p->end,
						q.s, (unsigned long long) t->begin, (unsigned long long) t->end);
		}
		if (t->begin > at)
			return fail(err, TFM_ST_EFORMAT,
						"bytes %llu to %llu of the data buffer, before tensor %s, belong to no tensor",
						(unsigned long long) at, (unsigned long long) t->begin, q.s);
		at = t->end;
	}
	if (at < f->data_len)
		return fail(err, TFM_ST_EFORMAT,
					"bytes %llu to %llu at the end of the data buffer belong to no tensor",
					(unsigned long long) at, (unsigned long long) f->data_len);
	return TFM_ST_OK;
}

/* the top-level object into r */
static int
read_header(reader *r)
{
	if (r->p >= r->end || *r->p != '{')
		return syntax(r, "the header does not start with '{'");
	r->p++;
	if (!peek(r, '}'))
		for (;;)
		{
			const char *key;
			size_t		klen;
			int			st;

			skip_ws(r);
			if (read_string(r, &key, &klen) != TFM_ST_OK ||
				expect(r, ':', "expected ':'") != TFM_ST_OK)
				return TFM_ST_EFORMAT;
			if (klen == 12 && strcmp(key, "__metadata__") == 0)
				st = read_metadata(r);
			else
				st = read_tensor(r, key, klen);
			if (st != TFM_ST_OK)
				return st;
			skip_ws(r);
			if (r->p < r->end && *r->p == ',')
			{
				r->p++;
				continue;
			}
			break;
		}
	if (expect(r, '}', "expected ',' or '}'") != TFM_ST_OK)
		return TFM_ST_EFORMAT;
	skip_ws(r);
	if (r->p != r->end)
		return syntax(r, "trailing bytes after the JSON object");
	return TFM_ST_OK;
}

void
tfm_st_free(tfm_st_file *f)
{
	if (!f)
		return;
	st_free(f->tensors);
	st_free(f->meta);
	st_free((void *) f->by_name);
	st_free(f->pool);
	st_free(f);
}

int
tfm_st_parse_header(tfm_st_file **out, const uint8_t *header, size_t header_len,
					uint64_t file_size, tfm_st_err *err)
{
	reader		r;
	tfm_st_file *f;
	int			st;

	*out = NULL;
	if (err)
		err->msg[0] = '\0';
	if ((st = check_length(header_len, file_size, err)) != TFM_ST_OK)
		return st;
	memset(&r, 0, sizeof(r));
	r.start = r.p = header;
	r.end = header + header_len;
	r.err = err;
	f = st_alloc(sizeof(tfm_st_file));
	r.pool = st_alloc(header_len);
	if (!f || !r.pool)
	{
		st_free(f);
		st_free(r.pool);
		return oom(err);
	}
	memset(f, 0, sizeof(*f));
	f->pool = r.pool;
	st = read_header(&r);
	f->tensors = r.t;
	f->n_tensors = r.n_t;
	f->meta = r.meta;
	f->n_meta = r.n_meta;
	f->header_len = header_len;
	f->data_start = TFM_ST_PREFIX + (uint64_t) header_len;
	f->data_len = file_size - f->data_start;
	if (st == TFM_ST_OK && !(f->by_name = st_alloc(sizeof(f->by_name[0]) * f->n_tensors)))
		st = oom(err);
	if (st == TFM_ST_OK)
		st = check_tensors(f, err);
	if (st != TFM_ST_OK)
	{
		tfm_st_free(f);
		return st;
	}
	*out = f;
	return TFM_ST_OK;
}

int
tfm_st_parse(tfm_st_file **out, const uint8_t *buf, size_t len, tfm_st_err *err)
{
	uint64_t	n;
	int			st;

	*out = NULL;
	if ((st = tfm_st_header_length(&n, buf, len, len, err)) != TFM_ST_OK)
		return st;
	return tfm_st_parse_header(out, buf + TFM_ST_PREFIX, (size_t) n, len, err);
}

const tfm_st_tensor *
tfm_st_find(const tfm_st_file *f, const char *name, size_t len)
{
	size_t		lo = 0,
				hi = f->n_tensors;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;
		const tfm_st_tensor *t = f->by_name[mid];
		size_t		m = t->name_len < len ? t->name_len : len;
		int			c = memcmp(t->name, name, m);

		if (c == 0)
			c = t->name_len < len ? -1 : t->name_len > len ? 1 : 0;
		if (c == 0)
			return t;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
tfm_st_meta_get(const tfm_st_file *f, const char *key)
{
	for (size_t i = 0; i < f->n_meta; i++)
		if (strcmp(f->meta[i].key, key) == 0)
			return f->meta[i].value;
	return NULL;
}
