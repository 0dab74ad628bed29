/*
 * test_truncate.c — the window a sequence longer than a model's max_len
 * keeps (tfm/truncate.h): head, tail and head_tail at even and odd
 * lengths, the exact ids each keeps, nothing cut when it fits, and the
 * modes' names both ways.
 */
#include "check.h"
#include "tfm/truncate.h"

/* ids 0..n-1 cut to max; the kept ids must be want[0..nwant) */
static void
check_cut(int n, int max, tfm_truncation mode, const int32_t *want, int nwant, const char *what)
{
	int32_t		ids[64];
	int			kept;

	for (int i = 0; i < n; i++)
		ids[i] = i;
	kept = tfm_truncate_ids(ids, n, max, mode);
	CHECK(kept == nwant, "%s: kept %d, want %d", what, kept, nwant);
	for (int i = 0; i < nwant && i < kept; i++)
		CHECK(ids[i] == want[i], "%s: id %d is %d, want %d", what, i, ids[i], want[i]);
}

static void
test_windows(void)
{
	int			head,
				tail;

	/* 10 ids in 6: head_tail keeps 3 + 3, head 6 + 0, tail 0 + 6 */
	tfm_truncation_window(10, 6, TFM_TRUNC_HEAD_TAIL, &head, &tail);
	CHECK(head == 3 && tail == 3, "head_tail 10 in 6: %d + %d", head, tail);
	tfm_truncation_window(10, 6, TFM_TRUNC_HEAD, &head, &tail);
	CHECK(head == 6 && tail == 0, "head 10 in 6: %d + %d", head, tail);
	tfm_truncation_window(10, 6, TFM_TRUNC_TAIL, &head, &tail);
	CHECK(head == 0 && tail == 6, "tail 10 in 6: %d + %d", head, tail);
	/* an odd window: the extra token goes to the start */
	tfm_truncation_window(10, 7, TFM_TRUNC_HEAD_TAIL, &head, &tail);
	CHECK(head == 4 && tail == 3, "head_tail 10 in 7: %d + %d", head, tail);
	/* what fits is kept whole, in every mode */
	for (int mode = TFM_TRUNC_HEAD_TAIL; mode <= TFM_TRUNC_TAIL; mode++)
	{
		tfm_truncation_window(6, 6, (tfm_truncation) mode, &head, &tail);
		CHECK(head == 6 && tail == 0, "mode %d, 6 in 6: %d + %d", mode, head, tail);
		tfm_truncation_window(0, 6, (tfm_truncation) mode, &head, &tail);
		CHECK(head == 0 && tail == 0, "mode %d, 0 in 6: %d + %d", mode, head, tail);
	}
	/* a window of one token: head_tail keeps the first */
	tfm_truncation_window(5, 1, TFM_TRUNC_HEAD_TAIL, &head, &tail);
	CHECK(head == 1 && tail == 0, "head_tail 5 in 1: %d + %d", head, tail);
}

static void
test_ids(void)
{
	static const int32_t ht[] = {0, 1, 2, 7, 8, 9};
	static const int32_t ht7[] = {0, 1, 2, 3, 7, 8, 9};
	static const int32_t hd[] = {0, 1, 2, 3, 4, 5};
	static const int32_t tl[] = {4, 5, 6, 7, 8, 9};
	static const int32_t all[] = {0, 1, 2, 3, 4};
	/* 300 ids in 256: the first 128 and the last 128 */
	int32_t		ids[300];
	int			kept;

	check_cut(10, 6, TFM_TRUNC_HEAD_TAIL, ht, 6, "head_tail");
	check_cut(10, 7, TFM_TRUNC_HEAD_TAIL, ht7, 7, "head_tail odd");
	check_cut(10, 6, TFM_TRUNC_HEAD, hd, 6, "head");
	check_cut(10, 6, TFM_TRUNC_TAIL, tl, 6, "tail");
	check_cut(5, 6, TFM_TRUNC_TAIL, all, 5, "tail, fits");
	check_cut(5, 5, TFM_TRUNC_HEAD_TAIL, all, 5, "head_tail, fits exactly");
	for (int i = 0; i < 300; i++)
		ids[i] = 1000 + i;
	kept = tfm_truncate_ids(ids, 300, 256, TFM_TRUNC_HEAD_TAIL);
	CHECK(kept == 256, "256 kept: %d", kept);
	CHECK(ids[127] == 1127 && ids[128] == 1172 && ids[255] == 1299,
		  "head ends at 1127, tail runs 1172..1299: %d %d %d", ids[127], ids[128], ids[255]);
}

static void
test_names(void)
{
	CHECK(tfm_truncation_from_name("head_tail") == TFM_TRUNC_HEAD_TAIL, "head_tail");
	CHECK(tfm_truncation_from_name("head") == TFM_TRUNC_HEAD, "head");
	CHECK(tfm_truncation_from_name("tail") == TFM_TRUNC_TAIL, "tail");
	CHECK(tfm_truncation_from_name("middle") == -1, "unknown name");
	CHECK(tfm_truncation_from_name("") == -1, "empty name");
	CHECK(strcmp(tfm_truncation_name(TFM_TRUNC_TAIL), "tail") == 0, "tail's name");
	CHECK(tfm_truncation_name(3) == NULL && tfm_truncation_name(-1) == NULL, "no name out of range");
}

int
main(void)
{
	test_windows();
	test_ids();
	test_names();
	return check_summary("test_truncate");
}
