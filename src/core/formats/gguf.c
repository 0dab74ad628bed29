/*
 * gguf.c — the strict GGUF header parser (tfm/gguf.h): every count, length
 * and offset checked against the bytes given before it is used, then the
 * tensors' data checked against the file (aligned, in bounds, no overlap),
 * and the typed metadata getters (and two helpers of the architectures).
 */
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "gguf_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader
{
	const uint8_t *buf;
	uint64_t	avail;			/* bytes of buf */
	uint64_t	file_size;
	uint64_t	pos;
	tfm_status *st;
} reader;

/* pos + n within the bytes given; past them but within the file is ELIMIT */
static int
need(reader *r, uint64_t n, const char *what)
{
	if (n <= r->avail && r->pos <= r->avail - n)
		return TFM_OK;
	if (r->avail < r->file_size && n <= r->file_size && r->pos <= r->file_size - n)
		return tfm_status_set(r->st, TFM_ELIMIT,
							  "the header is larger than the %llu bytes read (at %s)",
							  (unsigned long long) r->avail, what);
	return tfm_status_set(r->st, TFM_EBADFILE, "the file ends inside %s (offset %llu)",
						  what, (unsigned long long) r->pos);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t) le32(p) | (uint64_t) le32(p + 4) << 32;
}

static int
rd32(reader *r, uint32_t *v, const char *what)
{
	int			rc = need(r, 4, what);

	if (rc)
		return rc;
	*v = le32(r->buf + r->pos);
	r->pos += 4;
	return TFM_OK;
}

static int
rd64(reader *r, uint64_t *v, const char *what)
{
	int			rc = need(r, 8, what);

	if (rc)
		return rc;
	*v = le64(r->buf + r->pos);
	r->pos += 8;
	return TFM_OK;
}

/* a string: its bytes in place */
static int
rdstr(reader *r, const uint8_t **s, uint64_t *len, const char *what)
{
	int			rc = rd64(r, len, what);

	if (rc)
		return rc;
	if (*len > TFM_GGUF_MAX_NAME)
		return tfm_status_set(r->st, TFM_EBADFILE, "%s has a length of %llu bytes (at most %d)",
							  what, (unsigned long long) *len, TFM_GGUF_MAX_NAME);
	if ((rc = need(r, *len, what)) != 0)
		return rc;
	*s = r->buf + r->pos;
	r->pos += *len;
	return TFM_OK;
}

/* n bytes of strict UTF-8 */
static bool
valid_utf8(const uint8_t *s, uint64_t n)
{
	for (uint64_t i = 0; i < n;)
	{
		size_t		k = tfm_utf8_seq(s + i, (size_t) (n - i));

		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* bytes of a scalar value type, 0 for strings and arrays, -1 if unknown */
static int
scalar_size(uint32_t t)
{
	static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

	return t < sizeof(sz) / sizeof(sz[0]) ? sz[t] : -1;
}

/* a value of type t (not an array) skipped over */
static int
skip_value(reader *r, uint32_t t, const char *what)
{
	int			sz = scalar_size(t),
				rc;
	const uint8_t *s;
	uint64_t	len;

	if (t == TFM_GGUF_STRING)
		return rdstr(r, &s, &len, what);	/* (validated by the caller where it must be UTF-8) */
	if (sz <= 0)
		return tfm_status_set(r->st, TFM_EBADFILE, "%s has an unknown value type %u", what, t);
	if (t == TFM_GGUF_BOOL && r->pos < r->avail && r->buf[r->pos] > 1)
		return tfm_status_set(r->st, TFM_EBADFILE, "%s is a bool of value %u", what, r->buf[r->pos]);
	if ((rc = need(r, (uint64_t) sz, what)) != 0)
		return rc;
	r->pos += (uint64_t) sz;
	return TFM_OK;
}

static int
read_kv(reader *r, tfm_gguf_kv *kv)
{
	const uint8_t *key = NULL;
	uint64_t	len = 0;
	int			rc;

	if ((rc = rdstr(r, &key, &len, "a metadata key")) != 0)
		return rc;
	if (len == 0)
		return tfm_status_set(r->st, TFM_EBADFILE, "a metadata key is empty");
	if (!valid_utf8(key, len))
		return tfm_status_set(r->st, TFM_EBADFILE, "a metadata key is not UTF-8");
	kv->key = (const char *) key;
	kv->key_len = (size_t) len;
	if ((rc = rd32(r, &kv->type, "a metadata value type")) != 0)
		return rc;
	kv->n = 1;
	if (kv->type == TFM_GGUF_ARRAY)
	{
		uint64_t	n;
		int			sz;

		if ((rc = rd32(r, &kv->elem, "an array's element type")) != 0 ||
			(rc = rd64(r, &n, "an array's count")) != 0)
			return rc;
		if (kv->elem == TFM_GGUF_ARRAY)
			return tfm_status_set(r->st, TFM_EBADFILE, "metadata \"%.*s\" is an array of arrays",
								  (int) tfm_utf8_cut(kv->key, len < 64 ? len : 64), kv->key);
		sz = scalar_size(kv->elem);
		if (sz < 0)
			return tfm_status_set(r->st, TFM_EBADFILE, "metadata \"%.*s\" has an unknown element type %u",
								  (int) tfm_utf8_cut(kv->key, len < 64 ? len : 64), kv->key, kv->elem);
		kv->n = n;
		kv->val = r->buf + r->pos;
		if (sz > 0)
		{
			/* n·sz within what is left (no overflow: checked by division) */
			if (n > (r->file_size - (r->pos < r->file_size ? r->pos : r->file_size)) / (uint64_t) sz)
				return tfm_status_set(r->st, TFM_EBADFILE,
									  "metadata \"%.*s\" has %llu elements, past the end of the file",
									  (int) tfm_utf8_cut(kv->key, len < 64 ? len : 64), kv->key,
									  (unsigned long long) n);
			if ((rc = need(r, n * (uint64_t) sz, "an array")) != 0)
				return rc;
			if (kv->elem == TFM_GGUF_BOOL)
				for (uint64_t i = 0; i < n; i++)
					if (r->buf[r->pos + i] > 1)
						return tfm_status_set(r->st, TFM_EBADFILE, "an array holds a bool of value %u",
											  r->buf[r->pos + i]);
			r->pos += n * (uint64_t) sz;
			return TFM_OK;
		}
		/* strings: each at least 8 bytes, so n is bounded by the file */
		if (n > r->file_size / 8)
			return tfm_status_set(r->st, TFM_EBADFILE,
								  "metadata \"%.*s\" has %llu strings, more than the file can hold",
								  (int) tfm_utf8_cut(kv->key, len < 64 ? len : 64), kv->key,
								  (unsigned long long) n);
		for (uint64_t i = 0; i < n; i++)
			if ((rc = skip_value(r, TFM_GGUF_STRING, "an array's string")) != 0)
				return rc;
		return TFM_OK;
	}
	kv->val = r->buf + r->pos;
	if ((rc = skip_value(r, kv->type, "a metadata value")) != 0)
		return rc;
	if (kv->type == TFM_GGUF_STRING && !valid_utf8(kv->val + 8, le64(kv->val)))
		return tfm_status_set(r->st, TFM_EBADFILE, "metadata \"%.*s\" is not UTF-8",
							  (int) tfm_utf8_cut(kv->key, len < 64 ? len : 64), kv->key);
	return TFM_OK;
}

static int
read_tensor(reader *r, tfm_gguf_tensor *t)
{
	const uint8_t *name = NULL;
	uint64_t	len = 0,
				bv,
				bb;
	uint32_t	nd;
	int			rc;

	if ((rc = rdstr(r, &name, &len, "a tensor name")) != 0)
		return rc;
	if (len == 0 || memchr(name, 0, len) || !valid_utf8(name, len))
		return tfm_status_set(r->st, TFM_EBADFILE, "a tensor name is empty, holds a NUL byte or is not UTF-8");
	t->name = malloc(len + 1);
	if (!t->name)
		return tfm_status_set(r->st, TFM_ENOMEM, "out of memory");
	memcpy(t->name, name, len);
	t->name[len] = '\0';
	t->name_len = (size_t) len;
	if ((rc = rd32(r, &nd, "a tensor's n_dims")) != 0)
		return rc;
	if (nd < 1 || nd > TFM_GGUF_MAX_DIMS)
		return tfm_status_set(r->st, TFM_EBADFILE, "tensor \"%.*s\" has %u dimensions (1 to %d)",
							  TFM_GGUF_SHOWN(t->name, t->name_len), nd, TFM_GGUF_MAX_DIMS);
	t->ndim = (int) nd;
	t->n_values = 1;
	for (int k = 0; k < TFM_GGUF_MAX_DIMS; k++)
	{
		t->ne[k] = 1;
		if (k >= t->ndim)
			continue;
		if ((rc = rd64(r, &t->ne[k], "a tensor's dimension")) != 0)
			return rc;
		if (t->ne[k] == 0 || t->ne[k] > (uint64_t) INT64_MAX / t->n_values)
			return tfm_status_set(r->st, TFM_EBADFILE, "tensor \"%.*s\" has a dimension of %llu",
								  TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->ne[k]);
		t->n_values *= t->ne[k];
	}
	if ((rc = rd32(r, &t->type, "a tensor's type")) != 0 ||
		(rc = rd64(r, &t->offset, "a tensor's offset")) != 0)
		return rc;
	tfm_gguf_block(t->type, &bv, &bb);
	if (bv == 0)
		return tfm_status_set(r->st, TFM_EUNSUPPORTED,
							  "tensor \"%.*s\" has ggml type %u, which tfm does not read",
							  TFM_GGUF_SHOWN(t->name, t->name_len), t->type);
	if (t->ne[0] % bv != 0)
		return tfm_status_set(r->st, TFM_EBADFILE,
							  "tensor \"%.*s\" of type %s has rows of %llu values, not whole blocks of %llu",
							  TFM_GGUF_SHOWN(t->name, t->name_len), tfm_gguf_type_name(t->type), (unsigned long long) t->ne[0],
							  (unsigned long long) bv);
	if (t->n_values / bv > r->file_size / bb)
		return tfm_status_set(r->st, TFM_EBADFILE, "tensor \"%.*s\" is larger than the file",
							  TFM_GGUF_SHOWN(t->name, t->name_len));
	t->bytes = t->n_values / bv * bb;
	return TFM_OK;
}

static int
cmp_offset(const void *a, const void *b)
{
	const tfm_gguf_tensor *x = *(tfm_gguf_tensor *const *) a,
			   *y = *(tfm_gguf_tensor *const *) b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int
cmp_name(const void *a, const void *b)
{
	const tfm_gguf_tensor *x = *(tfm_gguf_tensor *const *) a,
			   *y = *(tfm_gguf_tensor *const *) b;

	return strcmp(x->name, y->name);
}

static int
cmp_key(const void *a, const void *b)
{
	const tfm_gguf_kv *x = *(tfm_gguf_kv *const *) a,
			   *y = *(tfm_gguf_kv *const *) b;
	size_t		n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int			c = memcmp(x->key, y->key, n);

	return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* no duplicate keys or names; data aligned, within the file, not overlapping */
static int
check_layout(tfm_gguf_file *f, tfm_status *st)
{
	uint64_t	n = f->n_tensors > f->n_kv ? f->n_tensors : f->n_kv;
	void	  **p = malloc(sizeof(void *) * (n ? n : 1));
	int			rc = TFM_OK;

	if (!p)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < f->n_kv; i++)
		p[i] = &f->kv[i];
	qsort(p, f->n_kv, sizeof(void *), cmp_key);
	for (uint64_t i = 1; i < f->n_kv && !rc; i++)
		if (cmp_key(&p[i - 1], &p[i]) == 0)
		{
			const tfm_gguf_kv *k = p[i];

			rc = tfm_status_set(st, TFM_EBADFILE, "metadata key \"%.*s\" appears twice",
								(int) tfm_utf8_cut(k->key, k->key_len < 64 ? k->key_len : 64), k->key);
		}
	for (uint64_t i = 0; i < f->n_tensors && !rc; i++)
		p[i] = &f->tensors[i];
	if (!rc)
		qsort(p, f->n_tensors, sizeof(void *), cmp_name);
	for (uint64_t i = 1; i < f->n_tensors && !rc; i++)
		if (cmp_name(&p[i - 1], &p[i]) == 0)
			rc = tfm_status_set(st, TFM_EBADFILE, "tensor \"%.*s\" appears twice",
								TFM_GGUF_SHOWN(((tfm_gguf_tensor *) p[i])->name, ((tfm_gguf_tensor *) p[i])->name_len));
	if (!rc)
		qsort(p, f->n_tensors, sizeof(void *), cmp_offset);
	for (uint64_t i = 0; i < f->n_tensors && !rc; i++)
	{
		const tfm_gguf_tensor *t = p[i];
		uint64_t	room = f->file_size - f->data_start;

		if (t->offset % f->alignment != 0)
			rc = tfm_status_set(st, TFM_EBADFILE, "tensor \"%.*s\" is at offset %llu, not a multiple of the alignment %llu",
								TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->offset,
								(unsigned long long) f->alignment);
		else if (t->offset > room || t->bytes > room - t->offset)
			rc = tfm_status_set(st, TFM_EBADFILE, "tensor \"%.*s\" (%llu bytes at %llu) runs past the end of the file",
								TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->bytes,
								(unsigned long long) t->offset);
		else if (i > 0)
		{
			const tfm_gguf_tensor *prev = p[i - 1];

			if (prev->offset + prev->bytes > t->offset)
				rc = tfm_status_set(st, TFM_EBADFILE, "tensors \"%.*s\" and \"%.*s\" overlap",
									TFM_GGUF_SHOWN(prev->name, prev->name_len), TFM_GGUF_SHOWN(t->name, t->name_len));
		}
	}
	free(p);
	return rc;
}

int
tfm_gguf_parse(tfm_gguf_file **out, const uint8_t *buf, uint64_t avail, uint64_t file_size,
			   tfm_status *st)
{
	reader		r = {buf, avail < file_size ? avail : file_size, file_size, 0, st};
	tfm_gguf_file *f;
	int			rc;
	const tfm_gguf_kv *al;

	*out = NULL;
	if (file_size < 24 || r.avail < 24)
		return tfm_status_set(st, TFM_EBADFILE, "%llu bytes is too short for a GGUF file",
							  (unsigned long long) (file_size < r.avail ? file_size : r.avail));
	if (memcmp(buf, "GGUF", 4) != 0)
		return tfm_status_set(st, TFM_EBADFILE, "the file does not start with \"GGUF\"");
	f = calloc(1, sizeof(*f));
	if (!f)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	f->file_size = file_size;
	r.pos = 4;
	(void) rd32(&r, &f->version, "the version");
	(void) rd64(&r, &f->n_tensors, "the tensor count");
	(void) rd64(&r, &f->n_kv, "the metadata count");
	if (f->version != 2 && f->version != 3)
	{
		rc = tfm_status_set(st, TFM_EBADFILE, "GGUF version %u is not supported (2 or 3)", f->version);
		goto fail;
	}
	if (f->n_tensors > TFM_GGUF_MAX_TENSORS || f->n_kv > TFM_GGUF_MAX_KV)
	{
		rc = tfm_status_set(st, TFM_EBADFILE,
							"the file claims %llu tensors and %llu metadata keys (at most %d each)",
							(unsigned long long) f->n_tensors, (unsigned long long) f->n_kv,
							TFM_GGUF_MAX_TENSORS);
		goto fail;
	}
	f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof(tfm_gguf_kv));
	f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof(tfm_gguf_tensor));
	if (!f->kv || !f->tensors)
	{
		rc = tfm_status_set(st, TFM_ENOMEM, "out of memory");
		goto fail;
	}
	for (uint64_t i = 0; i < f->n_kv; i++)
		if ((rc = read_kv(&r, &f->kv[i])) != 0)
			goto fail;
	f->alignment = 32;
	if ((al = tfm_gguf_find(f, "general.alignment")) != NULL)
	{
		if (al->type != TFM_GGUF_U32)
		{
			rc = tfm_status_set(st, TFM_EBADFILE, "general.alignment is not a uint32");
			goto fail;
		}
		f->alignment = le32(al->val);
		if (f->alignment == 0 || (f->alignment & (f->alignment - 1)) != 0 ||
			f->alignment > 1024 * 1024)
		{
			rc = tfm_status_set(st, TFM_EBADFILE, "general.alignment %llu is not a power of two up to 1 MiB",
								(unsigned long long) f->alignment);
			goto fail;
		}
	}
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if ((rc = read_tensor(&r, &f->tensors[i])) != 0)
			goto fail;
	f->data_start = (r.pos + f->alignment - 1) / f->alignment * f->alignment;
	if (f->data_start > file_size)
	{
		rc = tfm_status_set(st, TFM_EBADFILE, "the file ends before its data section");
		goto fail;
	}
	if ((rc = check_layout(f, st)) != 0)
		goto fail;
	*out = f;
	return TFM_OK;
fail:
	tfm_gguf_free(f);
	return rc;
}

void
tfm_gguf_free(tfm_gguf_file *f)
{
	if (!f)
		return;
	if (f->tensors)
		for (uint64_t i = 0; i < f->n_tensors; i++)
			free(f->tensors[i].name);
	free(f->tensors);
	free(f->kv);
	free(f);
}

const tfm_gguf_kv *
tfm_gguf_find(const tfm_gguf_file *f, const char *key)
{
	size_t		n = strlen(key);

	for (uint64_t i = 0; i < f->n_kv; i++)
		if (f->kv[i].key_len == n && memcmp(f->kv[i].key, key, n) == 0)
			return &f->kv[i];
	return NULL;
}

/* the key, or an error if required and absent */
static int
lookup(const tfm_gguf_kv **kv, const tfm_gguf_file *f, const char *key, bool required,
	   tfm_status *st)
{
	*kv = tfm_gguf_find(f, key);
	if (!*kv && required)
		return tfm_status_set(st, TFM_EBADFILE, "metadata key \"%s\" is missing", key);
	return TFM_OK;
}

int
tfm_gguf_get_int(int64_t *v, const tfm_gguf_file *f, const char *key, bool required,
				 tfm_status *st)
{
	const tfm_gguf_kv *kv;
	int			rc = lookup(&kv, f, key, required, st);
	const uint8_t *p;

	if (rc || !kv)
		return rc;
	p = kv->val;
	switch (kv->type)
	{
		case TFM_GGUF_U8:
			*v = p[0];
			return TFM_OK;
		case TFM_GGUF_I8:
			*v = (int8_t) p[0];
			return TFM_OK;
		case TFM_GGUF_U16:
			*v = (uint16_t) (p[0] | p[1] << 8);
			return TFM_OK;
		case TFM_GGUF_I16:
			*v = (int16_t) (p[0] | p[1] << 8);
			return TFM_OK;
		case TFM_GGUF_U32:
			*v = le32(p);
			return TFM_OK;
		case TFM_GGUF_I32:
			*v = (int32_t) le32(p);
			return TFM_OK;
		case TFM_GGUF_U64:
			if (le64(p) > (uint64_t) INT64_MAX)
				break;
			*v = (int64_t) le64(p);
			return TFM_OK;
		case TFM_GGUF_I64:
			*v = (int64_t) le64(p);
			return TFM_OK;
	}
	return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is not an integer in range", key);
}

int
tfm_gguf_get_float(double *v, const tfm_gguf_file *f, const char *key, bool required,
				   tfm_status *st)
{
	const tfm_gguf_kv *kv;
	int			rc = lookup(&kv, f, key, required, st);
	uint32_t	u;
	uint64_t	u8;
	float		x;

	if (rc || !kv)
		return rc;
	if (kv->type == TFM_GGUF_F32V)
	{
		u = le32(kv->val);
		memcpy(&x, &u, 4);
		*v = x;
		return TFM_OK;
	}
	if (kv->type == TFM_GGUF_F64)
	{
		u8 = le64(kv->val);
		memcpy(v, &u8, 8);
		return TFM_OK;
	}
	return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is not a float", key);
}

int
tfm_gguf_get_bool(bool *v, const tfm_gguf_file *f, const char *key, bool required,
				  tfm_status *st)
{
	const tfm_gguf_kv *kv;
	int			rc = lookup(&kv, f, key, required, st);

	if (rc || !kv)
		return rc;
	if (kv->type != TFM_GGUF_BOOL)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is not a bool", key);
	*v = kv->val[0] != 0;
	return TFM_OK;
}

int
tfm_gguf_get_str(const char **s, size_t *len, const tfm_gguf_file *f, const char *key,
				 bool required, tfm_status *st)
{
	const tfm_gguf_kv *kv;
	int			rc = lookup(&kv, f, key, required, st);

	if (rc || !kv)
		return rc;
	if (kv->type != TFM_GGUF_STRING)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is not a string", key);
	*len = (size_t) le64(kv->val);
	*s = (const char *) kv->val + 8;
	return TFM_OK;
}

const uint8_t *
tfm_gguf_next_str(const uint8_t *p, const char **s, size_t *len)
{
	*len = (size_t) le64(p);
	*s = (const char *) p + 8;
	return p + 8 + *len;
}

/* an integer key within lo..hi */
int
tfm_gguf_get_range(int *v, const tfm_gguf_file *f, const char *key, bool required, int64_t lo,
		  int64_t hi, tfm_status *st)
{
	int64_t		x = *v;
	int			rc = tfm_gguf_get_int(&x, f, key, required, st);

	if (rc)
		return rc;
	if (x < lo || x > hi)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is %lld (%lld to %lld)", key,
							  (long long) x, (long long) lo, (long long) hi);
	*v = (int) x;
	return TFM_OK;
}

const tfm_gguf_tensor *
tfm_gguf_find_tensor(const tfm_gguf_file *f, const char *name)
{
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if (strcmp(f->tensors[i].name, name) == 0)
			return &f->tensors[i];
	return NULL;
}
