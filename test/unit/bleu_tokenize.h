/*
 * bleu_tokenize.h — tfm_bleu_tokenize_13a into a buffer of exactly the
 * documented size, for test_bleu.c and test_bleu_api.c.  Header-only.
 */
#ifndef TFM_TEST_BLEU_TOKENIZE_H
#define TFM_TEST_BLEU_TOKENIZE_H

#include <stdlib.h>
#include <string.h>

#include "tfm/bleu.h"


static char *
tokenize(const char *s, size_t n, size_t *outlen)
{
	/* exactly the documented size, poisoned, so valgrind sees any overrun */
	char	   *out = malloc(TFM_BLEU_TOKENIZED_MAX(n));

	memset(out, 0xa5, TFM_BLEU_TOKENIZED_MAX(n));
	*outlen = tfm_bleu_tokenize_13a(out, s, n);
	return out;
}

#endif							/* TFM_TEST_BLEU_TOKENIZE_H */
