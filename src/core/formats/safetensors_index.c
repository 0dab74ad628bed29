/*
 * safetensors_index.c: the strict reader of model.safetensors.index.json,
 * the index of a sharded checkpoint, and the checks of the shards' headers
 * against it (the contract is in include/tfm/safetensors_index.h).
 *
 * Like the header reader (safetensors.c) this is a schema-directed parser
 * on the lexer of safetensors_json.c: the top-level object, "metadata"
 * (whose other keys' values are skipped by a recursion bounded by
 * TFM_ST_INDEX_MAX_DEPTH) and "weight_map", an object of strings.  Strings
 * decode into one pool of len bytes allocated up front, which always
 * suffices.  After the parse the tensors are sorted by name (duplicates
 * refused) and the shard file names sorted and made unique, each tensor
 * keeping the number of its shard.
 */
#include <stdlib.h>
#include <string.h>

#include "tfm/safetensors_index.h"
#include "safetensors_json.h"

/* a weight_map entry while reading: the tensor, then its file name */
typedef struct pair
{
	const char *name;
	size_t		name_len;
	const char *file;
} pair;

typedef struct ix_reader
{
	reader		r;				/* the lexer's state and the pool */
	pair	   *pairs;
	size_t		n_pairs,
				cap_pairs;
	const char **meta_keys;		/* for the duplicate check */
	size_t		n_keys,
				cap_keys;
	int			seen_meta,
				seen_map,
				has_total;
	uint64_t	total;
} ix_reader;

static int
oom(tfm_status *err)
{
	return tfm_status_set(err, TFM_ENOMEM, "out of memory reading a safetensors index");
}

static int
literal(reader *r, const char *lit)
{
	size_t		n = strlen(lit);

	if ((size_t) (r->end - r->p) < n || memcmp(r->p, lit, n) != 0)
		return st_syntax(r, "invalid value");
	r->p += n;
	return TFM_OK;
}

/* any JSON value (another metadata key's), nested at most TFM_ST_INDEX_MAX_DEPTH deep */
static int
skip_value(reader *r, int depth, const quoted *key)
{
	const char *s;
	size_t		n;
	uint64_t	v;
	int			more;

	st_skip_ws(r);
	if (r->p >= r->end)
		return st_syntax(r, "expected a value");
	switch (*r->p)
	{
		case '"':
			return st_read_string(r, &s, &n);
		case 't':
			return literal(r, "true");
		case 'f':
			return literal(r, "false");
		case 'n':
			return literal(r, "null");
		case '{':
		case '[':
			{
				char		close = *r->p == '{' ? '}' : ']';

				if (depth > TFM_ST_INDEX_MAX_DEPTH)
					return tfm_status_set(r->err, TFM_EBADFILE,
								   "value of metadata key %s is nested deeper than %d levels",
								   key->s, TFM_ST_INDEX_MAX_DEPTH);
				r->p++;
				if (st_peek(r, close))
				{
					r->p++;
					return TFM_OK;
				}
				do
				{
					int			st;

					if (close == '}' && st_read_key(r, &s, &n) != TFM_OK)
						return TFM_EBADFILE;
					if ((st = skip_value(r, depth + 1, key)) != TFM_OK)
						return st;
				} while ((more = st_next_member(r, close)) == 1);
				return more == 0 ? TFM_OK : TFM_EBADFILE;
			}
		default:
			if (st_read_number(r, &v) == NUM_NONE)
				return st_syntax(r, "invalid value");
			return TFM_OK;
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* one key of "metadata" */
static int
meta_member(reader *r, void *ctx, const char *key, size_t klen)
{
	ix_reader  *x = ctx;
	quoted		q;

	if (tfm_grow((void **) &x->meta_keys, &x->cap_keys, x->n_keys + 1, sizeof(char *)))
		return oom(r->err);
	x->meta_keys[x->n_keys++] = key;
	q = st_quote(key, klen);
	if (klen == 10 && strcmp(key, "total_size") == 0)
	{
		st_skip_ws(r);
		switch (st_read_number(r, &x->total))
		{
			case NUM_UINT:
				x->has_total = 1;
				break;
			case NUM_HUGE:
				return tfm_status_set(r->err, TFM_EBADFILE,
							   "metadata.total_size of the index is above 2^64 - 1");
			default:
				return tfm_status_set(r->err, TFM_EBADFILE,
							   "metadata.total_size of the index is not a non-negative integer");
		}
		return TFM_OK;
	}
	return skip_value(r, 1, &q);
}

/* the value of "metadata": an object; total_size a non-negative integer */
static int
read_metadata(ix_reader *x)
{
	reader	   *r = &x->r;
	int			st;

	if (x->seen_meta++)
		return tfm_status_set(r->err, TFM_EBADFILE, "duplicate key \"metadata\" in the index");
	if (!st_accept(r, '{'))
		return tfm_status_set(r->err, TFM_EBADFILE, "metadata of the index is not an object");
	if ((st = st_members(r, meta_member, x)) != TFM_OK)
		return st;
	if (x->n_keys > 1)
		qsort(x->meta_keys, x->n_keys, sizeof(char *), cmp_str);
	for (size_t i = 1; i < x->n_keys; i++)
		if (strcmp(x->meta_keys[i - 1], x->meta_keys[i]) == 0)
		{
			quoted		q = st_quote(x->meta_keys[i], strlen(x->meta_keys[i]));

			return tfm_status_set(r->err, TFM_EBADFILE, "duplicate metadata key %s in the index", q.s);
		}
	return TFM_OK;
}

/* NULL if file (n bytes) is a plain shard file name, else why not */
static const char *
bad_shard_name(const char *file, size_t n)
{
	static const char ext[] = ".safetensors";
	size_t		ext_len = sizeof(ext) - 1;

	if (n == 0)
		return "it is empty";
	if (n > TFM_ST_MAX_SHARD_NAME)
		return "it is longer than 255 bytes";
	for (size_t i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) file[i];

		if (c == '/' || c == '\\')
			return "it holds a '/' or '\\': shards must be in the index's directory";
		if (c < 0x20 || c == 0x7F)
			return "it holds a control character";
	}
	if (file[0] == '.')
		return "it starts with '.'";
	if (n <= ext_len || memcmp(file + n - ext_len, ext, ext_len) != 0)
		return "it does not end in \".safetensors\"";
	return NULL;
}

/* one tensor of "weight_map" */
static int
map_member(reader *r, void *ctx, const char *name, size_t nlen)
{
	ix_reader  *x = ctx;
	const char *file,
			   *why;
	size_t		flen;
	quoted		q;

	q = st_quote(name, nlen);
	if (nlen == 0)
		return tfm_status_set(r->err, TFM_EBADFILE, "empty tensor name in the weight_map of the index");
	st_skip_ws(r);
	if (r->p >= r->end || *r->p != '"')
		return tfm_status_set(r->err, TFM_EBADFILE,
					   "shard of tensor %s in the weight_map of the index is not a string", q.s);
	if (st_read_string(r, &file, &flen) != TFM_OK)
		return TFM_EBADFILE;
	if ((why = bad_shard_name(file, flen)) != NULL)
	{
		quoted		qf = st_quote(file, flen);

		return tfm_status_set(r->err, TFM_EBADFILE,
					   "shard file name %s of tensor %s is not allowed: %s", qf.s, q.s, why);
	}
	if (tfm_grow((void **) &x->pairs, &x->cap_pairs, x->n_pairs + 1, sizeof(pair)))
		return oom(r->err);
	x->pairs[x->n_pairs].name = name;
	x->pairs[x->n_pairs].name_len = nlen;
	x->pairs[x->n_pairs].file = file;
	x->n_pairs++;
	return TFM_OK;
}

/* the value of "weight_map": tensor name -> shard file name */
static int
read_weight_map(ix_reader *x)
{
	reader	   *r = &x->r;

	if (x->seen_map++)
		return tfm_status_set(r->err, TFM_EBADFILE, "duplicate key \"weight_map\" in the index");
	if (!st_accept(r, '{'))
		return tfm_status_set(r->err, TFM_EBADFILE, "weight_map of the index is not an object");
	return st_members(r, map_member, x);
}

/* one key of the index: "metadata" or "weight_map" */
static int
index_member(reader *r, void *ctx, const char *key, size_t klen)
{
	ix_reader  *x = ctx;
	quoted		q;

	if (klen == 8 && strcmp(key, "metadata") == 0)
		return read_metadata(x);
	if (klen == 10 && strcmp(key, "weight_map") == 0)
		return read_weight_map(x);
	q = st_quote(key, klen);
	return tfm_status_set(r->err, TFM_EBADFILE,
				   "unknown key %s in the index (only \"metadata\" and \"weight_map\")", q.s);
}

static int
read_index(ix_reader *x)
{
	reader	   *r = &x->r;
	int			st;

	/* JSON text may start with white space */
	if (!st_accept(r, '{'))
		return st_syntax(r, "the index does not start with '{'");
	if ((st = st_members(r, index_member, x)) != TFM_OK)
		return st;
	st_skip_ws(r);
	if (r->p != r->end)
		return st_syntax(r, "trailing bytes after the JSON object");
	if (!x->seen_map)
		return tfm_status_set(r->err, TFM_EBADFILE, "the index has no weight_map");
	if (x->n_pairs == 0)
		return tfm_status_set(r->err, TFM_EBADFILE, "the weight_map of the index names no tensor");
	return TFM_OK;
}

static int
cmp_tensors(const void *a, const void *b)
{
	return strcmp(((const tfm_st_index_tensor *) a)->name, ((const tfm_st_index_tensor *) b)->name);
}

/* the pairs -> ix's sorted tensors and unique sorted shards */
static int
build(tfm_st_index *ix, const ix_reader *x, tfm_status *err)
{
	const char **files;
	size_t		n = x->n_pairs,
				u = 0;

	ix->tensors = st_alloc(sizeof(tfm_st_index_tensor) * n);
	files = st_alloc(sizeof(char *) * n);
	if (!ix->tensors || !files)
	{
		st_free(files);
		return oom(err);
	}
	ix->n_tensors = n;
	for (size_t i = 0; i < n; i++)
	{
		/* shard holds the file name until the shards are numbered */
		ix->tensors[i].name = x->pairs[i].name;
		ix->tensors[i].name_len = x->pairs[i].name_len;
		files[i] = x->pairs[i].file;
	}
	qsort(ix->tensors, n, sizeof(tfm_st_index_tensor), cmp_tensors);
	for (size_t i = 1; i < n; i++)
		if (strcmp(ix->tensors[i - 1].name, ix->tensors[i].name) == 0)
		{
			quoted		q = st_quote(ix->tensors[i].name, ix->tensors[i].name_len);

			st_free(files);
			return tfm_status_set(err, TFM_EBADFILE, "tensor %s appears twice in the weight_map of the index", q.s);
		}
	qsort(files, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (u == 0 || strcmp(files[u - 1], files[i]) != 0)
			files[u++] = files[i];
	if (u > TFM_ST_MAX_SHARDS)
	{
		st_free(files);
		return tfm_status_set(err, TFM_EBADFILE, "the index names %zu shard files, more than the limit of %d",
					   u, TFM_ST_MAX_SHARDS);
	}
	ix->shards = files;
	ix->n_shards = u;
	/* each tensor's shard number, from its pair's file name */
	for (size_t i = 0; i < n; i++)
	{
		long		t = tfm_st_index_find(ix, x->pairs[i].name, x->pairs[i].name_len);
		const char **f = bsearch(&x->pairs[i].file, files, u, sizeof(char *), cmp_str);

		ix->tensors[t].shard = (size_t) (f - files);
	}
	return TFM_OK;
}

void
tfm_st_index_free(tfm_st_index *ix)
{
	if (!ix)
		return;
	st_free(ix->tensors);
	st_free((void *) ix->shards);
	st_free(ix->pool);
	st_free(ix);
}

int
tfm_st_parse_index(tfm_st_index **out, const uint8_t *json, size_t len, tfm_status *err)
{
	ix_reader	x;
	tfm_st_index *ix;
	int			st;

	*out = NULL;
	if (err)
		err->msg[0] = '\0';
	if (len > TFM_ST_MAX_INDEX)
		return tfm_status_set(err, TFM_EBADFILE, "the index of %zu bytes exceeds the limit of %llu bytes",
					   len, (unsigned long long) TFM_ST_MAX_INDEX);
	memset(&x, 0, sizeof(x));
	x.r.start = x.r.p = json;
	x.r.end = json + len;
	x.r.err = err;
	x.r.doc = "the index";
	ix = st_alloc(sizeof(tfm_st_index));
	x.r.pool = st_alloc(len);
	if (!ix || !x.r.pool)
	{
		st_free(ix);
		st_free(x.r.pool);
		return oom(err);
	}
	memset(ix, 0, sizeof(*ix));
	ix->pool = x.r.pool;
	st = read_index(&x);
	if (st == TFM_OK)
		st = build(ix, &x, err);
	ix->has_total_size = x.has_total;
	ix->total_size = x.total;
	st_free(x.pairs);
	st_free((void *) x.meta_keys);
	if (st != TFM_OK)
	{
		tfm_st_index_free(ix);
		return st;
	}
	*out = ix;
	return TFM_OK;
}

long
tfm_st_index_find(const tfm_st_index *ix, const char *name, size_t len)
{
	size_t		lo = 0,
				hi = ix->n_tensors;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;
		const tfm_st_index_tensor *t = &ix->tensors[mid];
		size_t		m = t->name_len < len ? t->name_len : len;
		int			c = memcmp(t->name, name, m);

		/* strcmp order: a proper prefix sorts first (names hold no NUL) */
		if (c == 0)
			c = t->name_len < len ? -1 : t->name_len > len ? 1 : 0;
		if (c == 0)
			return (long) mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int
tfm_st_index_check_shard(const tfm_st_index *ix, size_t shard, const tfm_st_file *f,
						 uint8_t *found, uint64_t *bytes, tfm_status *err)
{
	quoted		qs;

	if (err)
		err->msg[0] = '\0';
	if (shard >= ix->n_shards)
		return tfm_status_set(err, TFM_EINVAL, "shard %zu of an index of %zu shards", shard, ix->n_shards);
	qs = st_quote(ix->shards[shard], strlen(ix->shards[shard]));
	for (size_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = &f->tensors[i];
		long		k = tfm_st_index_find(ix, t->name, t->name_len);
		quoted		q = st_quote(t->name, t->name_len);

		if (k < 0)
			return tfm_status_set(err, TFM_EBADFILE,
						   "tensor %s of shard %s is not in the weight_map of the index", q.s, qs.s);
		if (ix->tensors[k].shard != shard)
		{
			const char *want = ix->shards[ix->tensors[k].shard];
			quoted		qw = st_quote(want, strlen(want));

			return tfm_status_set(err, TFM_EBADFILE,
						   "tensor %s is in shard %s but the index puts it in %s", q.s, qs.s, qw.s);
		}
		if (found[k])
			return tfm_status_set(err, TFM_EBADFILE, "tensor %s of shard %s was already read", q.s, qs.s);
		found[k] = 1;
		if (*bytes > UINT64_MAX - (t->end - t->begin))
			return tfm_status_set(err, TFM_EBADFILE, "the shards' tensors hold more than 2^64 - 1 bytes");
		*bytes += t->end - t->begin;
	}
	return TFM_OK;
}

int
tfm_st_index_check_done(const tfm_st_index *ix, const uint8_t *found, uint64_t bytes,
						tfm_status *err)
{
	if (err)
		err->msg[0] = '\0';
	for (size_t i = 0; i < ix->n_tensors; i++)
		if (!found[i])
		{
			const tfm_st_index_tensor *t = &ix->tensors[i];
			const char *file = ix->shards[t->shard];
			quoted		q = st_quote(t->name, t->name_len),
						qf = st_quote(file, strlen(file));

			return tfm_status_set(err, TFM_EBADFILE,
						   "tensor %s of the index's weight_map is not in shard %s", q.s, qf.s);
		}
	if (ix->has_total_size && ix->total_size != bytes)
		return tfm_status_set(err, TFM_EBADFILE,
					   "metadata.total_size of the index is %llu bytes but the shards' tensors hold %llu",
					   (unsigned long long) ix->total_size, (unsigned long long) bytes);
	return TFM_OK;
}
