/*
 * grow.h — the one growable-array step of the core (grow.c), used by the
 * safetensors reader and the tokenizer.
 */
#ifndef TFM_UTIL_GROW_H
#define TFM_UTIL_GROW_H

#include <stddef.h>

/* makes room for need elements of size bytes in *p (capacity *cap, doubled
 * from 16); returns TFM_OK or TFM_ENOMEM (then *p and *cap are unchanged) */
int			tfm_grow(void **p, size_t *cap, size_t need, size_t size);

#endif
