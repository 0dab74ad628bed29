/*
 * truncate.c — the tokens a sequence longer than a model's window keeps
 * (see tfm/truncate.h): one rule for training, evaluation and inference.
 */
#include <string.h>

#include "tfm/truncate.h"

static const char *const truncation_names[] = {"head_tail", "head", "tail"};

void
tfm_truncation_window(int n, int max, tfm_truncation mode, int *head, int *tail)
{
	if (max < 0)
		max = 0;
	if (n <= max)
	{
		*head = n;
		*tail = 0;
		return;
	}
	switch (mode)
	{
		case TFM_TRUNC_HEAD:
			*head = max;
			break;
		case TFM_TRUNC_TAIL:
			*head = 0;
			break;
		case TFM_TRUNC_HEAD_TAIL:
		default:
			*head = (max + 1) / 2;
			break;
	}
	*tail = max - *head;
}

int
tfm_truncate_ids(int32_t *ids, int n, int max, tfm_truncation mode)
{
	int			head,
				tail;

	tfm_truncation_window(n, max, mode, &head, &tail);
	if (tail > 0)
		memmove(ids + head, ids + n - tail, sizeof(int32_t) * (size_t) tail);
	return head + tail;
}

const char *
tfm_truncation_name(int mode)
{
	if (mode < 0 || mode >= (int) (sizeof(truncation_names) / sizeof(truncation_names[0])))
		return NULL;
	return truncation_names[mode];
}

int
tfm_truncation_from_name(const char *name)
{
	for (int i = 0; i < (int) (sizeof(truncation_names) / sizeof(truncation_names[0])); i++)
		if (strcmp(name, truncation_names[i]) == 0)
			return i;
	return -1;
}
