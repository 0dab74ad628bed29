/*
 * lru.c — one least-recently-used cache for the model cache (model_cache.c) and
 * the tokenizer cache (tokenizer_cache.c): a fixed number of slots, each a
 * name, a payload its user fills, the statement it was last checked in and
 * when it was last used.  A new entry takes its name's slot, else the first
 * free one, else the least recently used one's.  Also the statement stamps.
 */
#include "postgres.h"

#include "access/xact.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "base/pg_compat.h"
#include "runtime/cache/lru.h"

typedef struct Slot
{
	bool		used;
	char	   *key;
	TfmStamp	stamp;
	uint64		last_use;
	void	   *payload;
} Slot;

struct TfmLru
{
	MemoryContext cxt;
	int			capacity;
	size_t		payload_size;
	void		(*free_payload) (void *payload);
	uint64		clock;
	Slot	   *slots;
};

void
tfm_stamp_now(TfmStamp *s)
{
	s->lxid = tfm_proc_lxid(MyProc);
	s->cid = GetCurrentCommandId(false);
	s->stmt_start = GetCurrentStatementStartTimestamp();
}

bool
tfm_stamp_is_now(const TfmStamp *s)
{
	return s->lxid == tfm_proc_lxid(MyProc) && s->cid == GetCurrentCommandId(false) &&
		s->stmt_start == GetCurrentStatementStartTimestamp();
}

TfmLru *
tfm_lru_create(const char *name, int capacity, size_t payload_size,
			   void (*free_payload) (void *payload))
{
	/* name: a string constant (a context keeps the pointer) */
	MemoryContext cxt = AllocSetContextCreateInternal(TopMemoryContext, name,
														 ALLOCSET_SMALL_SIZES);
	TfmLru	   *lru = MemoryContextAllocZero(cxt, sizeof(TfmLru));

	lru->cxt = cxt;
	lru->capacity = capacity;
	lru->payload_size = payload_size;
	lru->free_payload = free_payload;
	lru->slots = MemoryContextAllocZero(cxt, sizeof(Slot) * capacity);
	for (int i = 0; i < capacity; i++)
		lru->slots[i].payload = MemoryContextAllocZero(cxt, payload_size);
	return lru;
}

MemoryContext
tfm_lru_context(TfmLru *lru)
{
	return lru->cxt;
}

static Slot *
slot_of(TfmLru *lru, const void *payload)
{
	for (int i = 0; i < lru->capacity; i++)
		if (lru->slots[i].payload == payload)
			return &lru->slots[i];
	elog(ERROR, "tfm: not an entry of this cache");
	return NULL;
}

static Slot *
find(TfmLru *lru, const char *key)
{
	for (int i = 0; i < lru->capacity; i++)
		if (lru->slots[i].used && strcmp(lru->slots[i].key, key) == 0)
			return &lru->slots[i];
	return NULL;
}

static void
evict(TfmLru *lru, Slot *s)
{
	if (!s->used)
		return;
	lru->free_payload(s->payload);
	pfree(s->key);
	memset(s->payload, 0, lru->payload_size);
	s->used = false;
	s->key = NULL;
	memset(&s->stamp, 0, sizeof(s->stamp));
	s->last_use = 0;
}

void *
tfm_lru_find(TfmLru *lru, const char *key)
{
	Slot	   *s = find(lru, key);

	return s ? s->payload : NULL;
}

void *
tfm_lru_insert(TfmLru *lru, const char *key)
{
	Slot	   *s = find(lru, key);

	if (s)
		evict(lru, s);			/* the same name again: the same slot */
	for (int i = 0; i < lru->capacity && !s; i++)
		if (!lru->slots[i].used)
			s = &lru->slots[i];
	if (!s)
	{
		s = &lru->slots[0];
		for (int i = 1; i < lru->capacity; i++)
			if (lru->slots[i].last_use < s->last_use)
				s = &lru->slots[i];
		evict(lru, s);
	}
	s->key = MemoryContextStrdup(lru->cxt, key);
	s->used = true;
	return s->payload;
}

void
tfm_lru_evict(TfmLru *lru, void *payload)
{
	evict(lru, slot_of(lru, payload));
}

void
tfm_lru_use(TfmLru *lru, void *payload)
{
	slot_of(lru, payload)->last_use = ++lru->clock;
}

void
tfm_lru_stamp(TfmLru *lru, void *payload)
{
	Slot	   *s = slot_of(lru, payload);

	tfm_stamp_now(&s->stamp);
	s->last_use = ++lru->clock;
}

bool
tfm_lru_checked_now(TfmLru *lru, const void *payload)
{
	return tfm_stamp_is_now(&slot_of(lru, payload)->stamp);
}
