/*
 * tok_hash.c: hashing, the interned-string table (open addressing over
 * dense, insertion-ordered entries) and the 64-bit key map used for pairs.
 */
#include "tok_internal.h"

static inline uint64_t
mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

uint64_t
tfm_tok_hash(const uint8_t *s, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0x100000001B3ULL);
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
	{
		uint64_t v;

		memcpy(&v, s + i, 8);
		h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	if (i < n)
	{
		uint64_t v = 0;

		memcpy(&v, s + i, n - i);
		h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	return mix64(h);
}

/* ---- strtab ---------------------------------------------------------------- */

void
tfm_tok_strtab_free(tfm_tok_strtab *s)
{
	tfm_tok_dealloc(s->pool);
	tfm_tok_dealloc(s->off);
	tfm_tok_dealloc(s->len);
	tfm_tok_dealloc(s->hash);
	tfm_tok_dealloc(s->slots);
	memset(s, 0, sizeof(*s));
}

void
tfm_tok_strtab_clear(tfm_tok_strtab *s)
{
	s->pool_len = 0;
	s->n = 0;
	if (s->slots)
		memset(s->slots, 0xff, (s->mask + 1) * sizeof(int32_t));
}

int32_t
tfm_tok_strtab_find(const tfm_tok_strtab *s, const uint8_t *k, size_t n)
{
	uint64_t h;
	uint32_t h32;
	size_t i;

	if (!s->slots)
		return -1;
	h = tfm_tok_hash(k, n);
	h32 = (uint32_t) h;
	for (i = (size_t) (h >> 32) & s->mask;; i = (i + 1) & s->mask)
	{
		int32_t e = s->slots[i];

		if (e < 0)
			return -1;
		if (s->hash[e] == h32 && s->len[e] == n && memcmp(s->pool + s->off[e], k, n) == 0)
			return e;
	}
}

static int
strtab_rehash(tfm_tok_strtab *s, size_t nslots)
{
	int32_t *slots = tfm_tok_alloc(nslots * sizeof(int32_t));
	size_t mask = nslots - 1;
	int32_t e;

	if (!slots)
		return TFM_ENOMEM;
	memset(slots, 0xff, nslots * sizeof(int32_t));
	for (e = 0; e < s->n; e++)
	{
		uint64_t h = tfm_tok_hash(s->pool + s->off[e], s->len[e]);
		size_t i = (size_t) (h >> 32) & mask;

		while (slots[i] >= 0)
			i = (i + 1) & mask;
		slots[i] = e;
	}
	tfm_tok_dealloc(s->slots);
	s->slots = slots;
	s->mask = mask;
	return TFM_OK;
}

int
tfm_tok_strtab_intern(int32_t *idx, int *added, tfm_tok_strtab *s, const uint8_t *k, size_t n)
{
	uint64_t h;
	size_t i;
	int32_t e;

	if (n > UINT32_MAX)
		return TFM_ELIMIT;
	if (!s->slots || (size_t) (s->n + 1) * 4 > (s->mask + 1) * 3)
	{
		size_t nslots = s->slots ? (s->mask + 1) * 2 : 64;

		if (s->n >= INT32_MAX - 1)
			return TFM_ELIMIT;
		if (strtab_rehash(s, nslots))
			return TFM_ENOMEM;
	}
	h = tfm_tok_hash(k, n);
	for (i = (size_t) (h >> 32) & s->mask;; i = (i + 1) & s->mask)
	{
		e = s->slots[i];
		if (e < 0)
			break;
		if (s->hash[e] == (uint32_t) h && s->len[e] == n &&
			memcmp(s->pool + s->off[e], k, n) == 0)
		{
			*idx = e;
			if (added)
				*added = 0;
			return TFM_OK;
		}
	}
	/* append a new entry */
	if ((size_t) s->n >= s->cap)
	{
		size_t c1 = s->cap, c2 = s->cap, c3 = s->cap;

		if (tfm_grow((void **) &s->off, &c1, s->n + 1, sizeof(uint64_t)) ||
			tfm_grow((void **) &s->len, &c2, s->n + 1, sizeof(uint32_t)) ||
			tfm_grow((void **) &s->hash, &c3, s->n + 1, sizeof(uint32_t)))
			return TFM_ENOMEM;
		s->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
	}
	if (n > SIZE_MAX - s->pool_len ||
		tfm_grow((void **) &s->pool, &s->pool_cap, s->pool_len + n, 1))
		return TFM_ENOMEM;
	e = s->n++;
	if (n)
		memcpy(s->pool + s->pool_len, k, n);
	s->off[e] = s->pool_len;
	s->len[e] = (uint32_t) n;
	s->hash[e] = (uint32_t) h;
	s->pool_len += n;
	s->slots[i] = e;
	*idx = e;
	if (added)
		*added = 1;
	return TFM_OK;
}

size_t
tfm_tok_strtab_memory(const tfm_tok_strtab *s)
{
	return s->pool_cap + s->cap * (sizeof(uint64_t) + 2 * sizeof(uint32_t)) +
		(s->slots ? (s->mask + 1) * sizeof(int32_t) : 0);
}

/* ---- u64map ------------------------------------------------------------------ */

void
tfm_tok_u64map_free(tfm_tok_u64map *m)
{
	tfm_tok_dealloc(m->keys);
	tfm_tok_dealloc(m->vals);
	memset(m, 0, sizeof(*m));
}

int32_t
tfm_tok_u64map_get(const tfm_tok_u64map *m, uint64_t key)
{
	size_t i;

	if (!m->keys)
		return -1;
	for (i = (size_t) mix64(key) & m->mask;; i = (i + 1) & m->mask)
	{
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == UINT64_MAX)
			return -1;
	}
}

static int
u64map_resize(tfm_tok_u64map *m, size_t nslots)
{
	uint64_t *keys = tfm_tok_alloc(nslots * sizeof(uint64_t));
	int32_t *vals = tfm_tok_alloc(nslots * sizeof(int32_t));
	size_t mask = nslots - 1, j;

	if (!keys || !vals)
	{
		tfm_tok_dealloc(keys);
		tfm_tok_dealloc(vals);
		return TFM_ENOMEM;
	}
	memset(keys, 0xff, nslots * sizeof(uint64_t));
	if (m->keys)
		for (j = 0; j <= m->mask; j++)
			if (m->keys[j] != UINT64_MAX)
			{
				size_t i = (size_t) mix64(m->keys[j]) & mask;

				while (keys[i] != UINT64_MAX)
					i = (i + 1) & mask;
				keys[i] = m->keys[j];
				vals[i] = m->vals[j];
			}
	tfm_tok_dealloc(m->keys);
	tfm_tok_dealloc(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->mask = mask;
	return TFM_OK;
}

int
tfm_tok_u64map_put(tfm_tok_u64map *m, uint64_t key, int32_t val)
{
	size_t i;

	if (!m->keys || (m->n + 1) * 4 > (m->mask + 1) * 3)
		if (u64map_resize(m, m->keys ? (m->mask + 1) * 2 : 64))
			return TFM_ENOMEM;
	for (i = (size_t) mix64(key) & m->mask;; i = (i + 1) & m->mask)
	{
		if (m->keys[i] == key)
		{
			m->vals[i] = val;
			return TFM_OK;
		}
		if (m->keys[i] == UINT64_MAX)
		{
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return TFM_OK;
		}
	}
}
