/*
 * truncate.h — which tokens of a sequence longer than a model's window are
 * kept: the first ones (head), the last ones (tail), or both ends
 * (head_tail: the opening and the end, where a review or an e-mail carries
 * its verdict; TRAINING-NOTES measured it better than the head alone).
 */
#ifndef TFM_TRUNCATE_H
#define TFM_TRUNCATE_H

#include <stdint.h>

typedef enum tfm_truncation
{
	TFM_TRUNC_HEAD_TAIL = 0,	/* classify's default (and every model's before 0.4) */
	TFM_TRUNC_HEAD = 1,
	TFM_TRUNC_TAIL = 2
} tfm_truncation;

/*
 * The window n tokens cut to at most max keep: the first *head tokens and
 * the last *tail (head + tail = min(n, max)).  head_tail keeps max / 2
 * (rounded down) from the start and the rest from the end.
 */
void		tfm_truncation_window(int n, int max, tfm_truncation mode, int *head, int *tail);

/* ids cut in place to that window; the number kept */
int			tfm_truncate_ids(int32_t *ids, int n, int max, tfm_truncation mode);

/* "head_tail", "head" or "tail"; NULL for another value */
const char *tfm_truncation_name(int mode);
/* the mode of a name, or -1 */
int			tfm_truncation_from_name(const char *name);

#endif							/* TFM_TRUNCATE_H */
