/*
 * grow.c — growing an array by doubling (see grow.h): malloc for the first
 * block, realloc after, every size checked for overflow.
 */
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"
#include "tfm/status.h"

int
tfm_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t		ncap;
	void	   *np;

	if (need <= *cap)
		return TFM_OK;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
	{
		if (ncap > SIZE_MAX / 2)
			return TFM_ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return TFM_ENOMEM;
	np = *p ? realloc(*p, ncap * size) : malloc(ncap * size);
	if (!np)
		return TFM_ENOMEM;
	*p = np;
	*cap = ncap;
	return TFM_OK;
}
