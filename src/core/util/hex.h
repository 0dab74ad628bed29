/*
 * hex.h — the four hex digits of a JSON \u escape, for the safetensors
 * reader and the tokenizer's JSON (both plain C, no allocation).
 */
#ifndef TFM_UTIL_HEX_H
#define TFM_UTIL_HEX_H

#include <stdint.h>

/* p[0..3] (all readable) as hex digits -> *v; -1 if one is not a hex digit */
static inline int
tfm_hex4(uint32_t *v, const uint8_t *p)
{
	*v = 0;
	for (int i = 0; i < 4; i++)
	{
		int			c = p[i],
					d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		*v = (*v << 4) | (uint32_t) d;
	}
	return 0;
}

#endif
