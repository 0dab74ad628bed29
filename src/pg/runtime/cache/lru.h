/*
 * lru.h — a small least-recently-used cache keyed by name (lru.c), and the
 * statement stamps that say when an entry was last checked.
 */
#ifndef TFM_PG_LRU_H
#define TFM_PG_LRU_H

#include "postgres.h"

/*
 * When something was last checked against the catalog: valid for the rest
 * of that statement (same transaction, command and statement start).
 */
typedef struct TfmStamp
{
	uint32		lxid;
	uint32		cid;
	int64		stmt_start;
} TfmStamp;
void		tfm_stamp_now(TfmStamp *s);
bool		tfm_stamp_is_now(const TfmStamp *s);

/*
 * At most capacity entries, each a key and a zeroed payload of
 * payload_size bytes that the caller fills; free_payload releases what a
 * payload holds when its entry is evicted (the payload itself stays).
 * Payloads live for the backend, in the cache's memory context.
 */
typedef struct TfmLru TfmLru;
TfmLru	   *tfm_lru_create(const char *name, int capacity, size_t payload_size,
						   void (*free_payload) (void *payload));
/* the cache's memory context, for what payloads point to */
MemoryContext tfm_lru_context(TfmLru *lru);
/* the payload under key, or NULL */
void	   *tfm_lru_find(TfmLru *lru, const char *key);
/* a new, zeroed payload under key: an entry of that key, else the least recently used, goes */
void	   *tfm_lru_insert(TfmLru *lru, const char *key);
void		tfm_lru_evict(TfmLru *lru, void *payload);
/* the payload was used: it is now the most recently used */
void		tfm_lru_use(TfmLru *lru, void *payload);
/* it was checked in this statement (and used) */
void		tfm_lru_stamp(TfmLru *lru, void *payload);
bool		tfm_lru_checked_now(TfmLru *lru, const void *payload);

#endif							/* TFM_PG_LRU_H */
