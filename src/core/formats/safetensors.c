/*
 * safetensors.c: the strict reader of .safetensors headers (the contract is
 * in include/tfm/safetensors.h): the header length, the schema of the
 * header, the checks of the tensors' ranges, lookups.  JSON lexing is in
 * safetensors_json.c, value conversions in safetensors_values.c.
 *
 * The header is read by a schema-directed JSON parser rather than a
 * general one: the only shapes allowed are
 *
 *   { "name": { "dtype": "...", "shape": [int, ...], "data_offsets": [int, int] },
 *     "__metadata__": { "key": "value", ... }, ... }
 *
 * so the parser is three nested loops with no recursion and no stack to
 * overflow; a value nested deeper than the schema allows (or of the wrong
 * type) is refused where it starts.
 *
 * Strings are decoded into one pool of header_len bytes allocated up front,
 * which always suffices (see safetensors_json.c), so pointers into it stay
 * valid while the header is read.
 *
 * After the parse, tensors are sorted by (begin, end) and checked to tile
 * the data buffer exactly (no overlap, no hole, nothing after the last),
 * and an index by name finds duplicates and serves tfm_st_find.
 */
#include <stdlib.h>
#include <string.h>

#include "tfm/safetensors.h"
#include "safetensors_json.h"

/* ---- names, messages ---------------------------------------------------------- */

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

static int
oom(tfm_status *err)
{
	return tfm_status_set(err, TFM_ENOMEM, "out of memory reading a safetensors header");
}

/* ---- the header length -------------------------------------------------------- */

static int
check_length(uint64_t n, uint64_t file_size, tfm_status *err)
{
	if (n < 2)
		return tfm_status_set(err, TFM_EBADFILE,
					   "safetensors header length %llu is too small (at least 2)",
					   (unsigned long long) n);
	if (n > TFM_ST_MAX_HEADER)
		return tfm_status_set(err, TFM_EBADFILE,
					   "safetensors header length %llu exceeds the limit of %llu bytes",
					   (unsigned long long) n, (unsigned long long) TFM_ST_MAX_HEADER);
	if (file_size < TFM_ST_PREFIX || n > file_size - TFM_ST_PREFIX)
		return tfm_status_set(err, TFM_EBADFILE,
					   "safetensors header length %llu exceeds the file: %llu bytes follow the length",
					   (unsigned long long) n,
					   (unsigned long long) (file_size < TFM_ST_PREFIX ? 0 : file_size - TFM_ST_PREFIX));
	return TFM_OK;
}

int
tfm_st_header_length(uint64_t *header_len, const uint8_t *prefix, size_t prefix_len,
					 uint64_t file_size, tfm_status *err)
{
	uint64_t	n = 0;
	int			st;

	*header_len = 0;
	if (err)
		err->msg[0] = '\0';
	if (file_size < TFM_ST_PREFIX)
		return tfm_status_set(err, TFM_EBADFILE,
					   "file of %llu bytes is too short for a safetensors header length (8 bytes)",
					   (unsigned long long) file_size);
	if (prefix_len < TFM_ST_PREFIX)
		return tfm_status_set(err, TFM_EINVAL, "the first 8 bytes of the file are needed, got %zu",
					   prefix_len);
	for (int i = TFM_ST_PREFIX - 1; i >= 0; i--)
		n = (n << 8) | prefix[i];
	if ((st = check_length(n, file_size, err)) != TFM_OK)
		return st;
	*header_len = n;
	return TFM_OK;
}

/* ---- the schema: tensors, metadata --------------------------------------------- */

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
	if (!st_accept(r, '['))
		return tfm_status_set(r->err, TFM_EBADFILE, "%s of tensor %s is not an array", what, q->s);
	if (st_peek(r, ']'))
	{
		r->p++;
		return TFM_OK;
	}
	for (;;)
	{
		uint64_t	v;
		const uint8_t *at;
		int			more;

		st_skip_ws(r);
		at = r->p;
		switch (st_read_number(r, &v))
		{
			case NUM_UINT:
				break;
			case NUM_NEGATIVE:
				return tfm_status_set(r->err, TFM_EBADFILE, "%s of tensor %s holds a negative number",
							   what, q->s);
			case NUM_FRACTION:
				return tfm_status_set(r->err, TFM_EBADFILE, "%s of tensor %s holds a number that is not an integer",
							   what, q->s);
			case NUM_HUGE:
				return tfm_status_set(r->err, TFM_EBADFILE, "%s of tensor %s holds an integer above 2^64 - 1",
							   what, q->s);
			case NUM_NONE:
				if (r->p == at && r->p < r->end &&
					(*r->p == '[' || *r->p == '{' || *r->p == '"' ||
					 *r->p == 't' || *r->p == 'f' || *r->p == 'n'))
					return tfm_status_set(r->err, TFM_EBADFILE,
								   "%s of tensor %s must be an array of integers", what, q->s);
				return st_syntax(r, "invalid number");
		}
		if (*n == max)
			return TOO_MANY;
		vals[(*n)++] = v;
		if ((more = st_next_member(r, ']')) != 1)
			return more == 0 ? TFM_OK : TFM_EBADFILE;
	}
}

/* a header being read: the JSON reader's state, the tensors and metadata so far */
typedef struct header_reader
{
	reader		r;
	tfm_st_tensor *t;			/* tensors in header order */
	size_t		n_t,
				cap_t;
	tfm_st_meta *meta;
	size_t		n_meta,
				cap_meta;
	int			seen_meta;
} header_reader;

/* one key of "__metadata__": its value must be a string */
static int
meta_member(reader *r, void *ctx, const char *key, size_t klen)
{
	header_reader *h = ctx;
	const char *val;
	size_t		vlen;
	quoted		q;

	st_skip_ws(r);
	q = st_quote(key, klen);
	if (r->p >= r->end || *r->p != '"')
		return tfm_status_set(r->err, TFM_EBADFILE, "value of metadata key %s is not a string", q.s);
	if (st_read_string(r, &val, &vlen) != TFM_OK)
		return TFM_EBADFILE;
	if (tfm_grow((void **) &h->meta, &h->cap_meta, h->n_meta + 1, sizeof(tfm_st_meta)))
		return oom(r->err);
	h->meta[h->n_meta].key = key;
	h->meta[h->n_meta].value = val;
	h->n_meta++;
	return TFM_OK;
}

/* the value of "__metadata__": an object of strings */
static int
read_metadata(header_reader *h)
{
	reader	   *r = &h->r;

	if (h->seen_meta++)
		return tfm_status_set(r->err, TFM_EBADFILE, "duplicate key \"__metadata__\" in the safetensors header");
	if (!st_accept(r, '{'))
		return tfm_status_set(r->err, TFM_EBADFILE, "__metadata__ of the safetensors header is not an object");
	return st_members(r, meta_member, h);
}

/* the fields of one tensor's entry so far */
typedef struct tensor_fields
{
	tfm_st_tensor *t;
	const quoted *q;
	int			have_dtype,
				have_shape,
				have_offsets;
	uint64_t	off[2];
} tensor_fields;

/* one field of a tensor's entry */
static int
tensor_member(reader *r, void *ctx, const char *key, size_t klen)
{
	tensor_fields *f = ctx;
	int			st;

	if (strcmp(key, "dtype") == 0 && klen == 5)
	{
		const char *dt;
		size_t		dlen,
					i;

		if (f->have_dtype++)
			return tfm_status_set(r->err, TFM_EBADFILE, "duplicate field \"dtype\" in tensor %s", f->q->s);
		st_skip_ws(r);
		if (r->p >= r->end || *r->p != '"')
			return tfm_status_set(r->err, TFM_EBADFILE, "dtype of tensor %s is not a string", f->q->s);
		if (st_read_string(r, &dt, &dlen) != TFM_OK)
			return TFM_EBADFILE;
		for (i = 0; i < N_DTYPES; i++)
			if (strcmp(dt, dtypes[i].name) == 0)
				break;
		if (i == N_DTYPES)
		{
			quoted		qd = st_quote(dt, dlen);

			return tfm_status_set(r->err, TFM_EBADFILE, "unknown dtype %s of tensor %s", qd.s, f->q->s);
		}
		f->t->dtype = dtypes[i].dtype;
	}
	else if (strcmp(key, "shape") == 0 && klen == 5)
	{
		uint64_t	dims[TFM_ST_MAX_RANK];

		if (f->have_shape++)
			return tfm_status_set(r->err, TFM_EBADFILE, "duplicate field \"shape\" in tensor %s", f->q->s);
		st = read_uint_array(r, dims, TFM_ST_MAX_RANK, &f->t->ndim, "shape", f->q);
		if (st == TOO_MANY)
			return tfm_status_set(r->err, TFM_EBADFILE,
						   "rank of tensor %s exceeds the limit of %d", f->q->s, TFM_ST_MAX_RANK);
		if (st != TFM_OK)
			return st;
		memcpy(f->t->dims, dims, sizeof(uint64_t) * f->t->ndim);
	}
	else if (strcmp(key, "data_offsets") == 0 && klen == 12)
	{
		int			n;

		if (f->have_offsets++)
			return tfm_status_set(r->err, TFM_EBADFILE, "duplicate field \"data_offsets\" in tensor %s", f->q->s);
		st = read_uint_array(r, f->off, 2, &n, "data_offsets", f->q);
		if (st != TFM_OK && st != TOO_MANY)
			return st;
		if (st == TOO_MANY || n != 2)
			return tfm_status_set(r->err, TFM_EBADFILE,
						   "data_offsets of tensor %s must be 2 integers", f->q->s);
	}
	else
	{
		quoted		qk = st_quote(key, klen);

		return tfm_status_set(r->err, TFM_EBADFILE, "unknown field %s in tensor %s", qk.s, f->q->s);
	}
	return TFM_OK;
}

/* the entry of one tensor; name is in the pool */
static int
read_tensor(header_reader *h, const char *name, size_t name_len)
{
	reader	   *r = &h->r;
	tfm_st_tensor *t;
	quoted		q = st_quote(name, name_len);
	tensor_fields f;
	uint64_t	bytes;
	size_t		size;
	int			st;

	if (name_len == 0)
		return tfm_status_set(r->err, TFM_EBADFILE, "empty tensor name in the safetensors header");
	if (tfm_grow((void **) &h->t, &h->cap_t, h->n_t + 1, sizeof(tfm_st_tensor)))
		return oom(r->err);
	t = &h->t[h->n_t++];
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->name_len = name_len;

	if (!st_accept(r, '{'))
		return tfm_status_set(r->err, TFM_EBADFILE, "entry of tensor %s is not an object", q.s);
	memset(&f, 0, sizeof(f));
	f.t = t;
	f.q = &q;
	if ((st = st_members(r, tensor_member, &f)) != TFM_OK)
		return st;
	if (!f.have_dtype || !f.have_shape || !f.have_offsets)
		return tfm_status_set(r->err, TFM_EBADFILE, "tensor %s has no %s", q.s,
					   !f.have_dtype ? "dtype" : !f.have_shape ? "shape" : "data_offsets");

	/* values, then bytes, with 64-bit overflow checks */
	t->n_values = 1;
	for (int i = 0; i < t->ndim; i++)
	{
		if (t->dims[i] != 0 && t->n_values > UINT64_MAX / t->dims[i])
			return tfm_status_set(r->err, TFM_EBADFILE,
						   "shape of tensor %s is too large: its number of values overflows 64 bits", q.s);
		t->n_values *= t->dims[i];
	}
	size = tfm_st_dtype_size(t->dtype);
	if (t->n_values > UINT64_MAX / size)
		return tfm_status_set(r->err, TFM_EBADFILE,
					   "shape of tensor %s is too large: its byte size overflows 64 bits", q.s);
	bytes = t->n_values * size;
	t->begin = f.off[0];
	t->end = f.off[1];
	if (t->begin > t->end)
		return tfm_status_set(r->err, TFM_EBADFILE,
					   "data_offsets [%llu, %llu] of tensor %s end before they begin",
					   (unsigned long long) t->begin, (unsigned long long) t->end, q.s);
	if (t->end - t->begin != bytes)
		return tfm_status_set(r->err, TFM_EBADFILE,
					   "shape of tensor %s does not match its data_offsets: %llu values of %s are %llu bytes, [%llu, %llu] holds %llu",
					   q.s, (unsigned long long) t->n_values, tfm_st_dtype_name(t->dtype),
					   (unsigned long long) bytes, (unsigned long long) t->begin,
					   (unsigned long long) t->end, (unsigned long long) (t->end - t->begin));
	return TFM_OK;
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
check_tensors(tfm_st_file *f, tfm_status *err)
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
			quoted		q = st_quote(t->name, t->name_len);

			return tfm_status_set(err, TFM_EBADFILE, "duplicate tensor name %s in the safetensors header", q.s);
		}
	}
	if (f->n_meta > 1)
		qsort(f->meta, f->n_meta, sizeof(tfm_st_meta), cmp_meta);
	for (size_t i = 1; i < f->n_meta; i++)
		if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0)
		{
			quoted		q = st_quote(f->meta[i].key, strlen(f->meta[i].key));

			return tfm_status_set(err, TFM_EBADFILE, "duplicate metadata key %s in the safetensors header", q.s);
		}

	/* the ranges tile the data buffer: no overlap, no hole, nothing after */
	for (size_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = &f->tensors[i];
		quoted		q = st_quote(t->name, t->name_len);

		if (t->end > f->data_len)
			return tfm_status_set(err, TFM_EBADFILE,
						   "data_offsets [%llu, %llu] of tensor %s lie outside the data buffer of %llu bytes",
						   (unsigned long long) t->begin, (unsigned long long) t->end, q.s,
						   (unsigned long long) f->data_len);
		if (t->begin < at)
		{
			const tfm_st_tensor *p = &f->tensors[i - 1];
			quoted		qp = st_quote(p->name, p->name_len);

			return tfm_status_set(err, TFM_EBADFILE,
						   "data of tensors %s [%llu, %llu] and %s [%llu, %llu] overlap",
						   qp.s, (unsigned long long) p->begin, (unsigned long long) p->end,
						   q.s, (unsigned long long) t->begin, (unsigned long long) t->end);
		}
		if (t->begin > at)
			return tfm_status_set(err, TFM_EBADFILE,
						   "bytes %llu to %llu of the data buffer, before tensor %s, belong to no tensor",
						   (unsigned long long) at, (unsigned long long) t->begin, q.s);
		at = t->end;
	}
	if (at < f->data_len)
		return tfm_status_set(err, TFM_EBADFILE,
					   "bytes %llu to %llu at the end of the data buffer belong to no tensor",
					   (unsigned long long) at, (unsigned long long) f->data_len);
	return TFM_OK;
}

/* one key of the header: "__metadata__" or a tensor */
static int
header_member(reader *r, void *ctx, const char *key, size_t klen)
{
	(void) r;
	if (klen == 12 && strcmp(key, "__metadata__") == 0)
		return read_metadata(ctx);
	return read_tensor(ctx, key, klen);
}

/* the top-level object into h */
static int
read_header(header_reader *h)
{
	reader	   *r = &h->r;
	int			st;

	if (r->p >= r->end || *r->p != '{')
		return st_syntax(r, "the header does not start with '{'");
	r->p++;
	if ((st = st_members(r, header_member, h)) != TFM_OK)
		return st;
	st_skip_ws(r);
	if (r->p != r->end)
		return st_syntax(r, "trailing bytes after the JSON object");
	return TFM_OK;
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
					uint64_t file_size, tfm_status *err)
{
	header_reader h;
	reader	   *r = &h.r;
	tfm_st_file *f;
	int			st;

	*out = NULL;
	if (err)
		err->msg[0] = '\0';
	if ((st = check_length(header_len, file_size, err)) != TFM_OK)
		return st;
	memset(&h, 0, sizeof(h));
	r->start = r->p = header;
	r->end = header + header_len;
	r->err = err;
	f = st_alloc(sizeof(tfm_st_file));
	r->pool = st_alloc(header_len);
	if (!f || !r->pool)
	{
		st_free(f);
		st_free(r->pool);
		return oom(err);
	}
	memset(f, 0, sizeof(*f));
	f->pool = r->pool;
	st = read_header(&h);
	f->tensors = h.t;
	f->n_tensors = h.n_t;
	f->meta = h.meta;
	f->n_meta = h.n_meta;
	f->header_len = header_len;
	f->data_start = TFM_ST_PREFIX + (uint64_t) header_len;
	f->data_len = file_size - f->data_start;
	if (st == TFM_OK && !(f->by_name = st_alloc(sizeof(f->by_name[0]) * f->n_tensors)))
		st = oom(err);
	if (st == TFM_OK)
		st = check_tensors(f, err);
	if (st != TFM_OK)
	{
		tfm_st_free(f);
		return st;
	}
	*out = f;
	return TFM_OK;
}

int
tfm_st_parse(tfm_st_file **out, const uint8_t *buf, size_t len, tfm_status *err)
{
	uint64_t	n;
	int			st;

	*out = NULL;
	if ((st = tfm_st_header_length(&n, buf, len, len, err)) != TFM_OK)
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
