/*
 * bleu_stats.c — the core's corpus BLEU statistics counted inside a backend: a
 * cancel or timeout stops the count (tfm_bleu, tfm_evaluate).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "tfm/bleu.h"
#include "base/base.h"
#include "runtime/bleu_stats.h"

/*
 * The core's BLEU polls tfm_interrupt_pending: a pending cancel or timeout
 * stops it (the core frees its memory and returns), then
 * CHECK_FOR_INTERRUPTS raises the error.  An interrupt that raises nothing
 * (a barrier, a catchup) has been served by then: the segment is counted
 * again from the start.
 */
int
tfm_bleu_add_pg(int64 *stats, const char *hyp, size_t hyp_len,
				const char *const *refs, const size_t *ref_lens, int n_refs)
{
	for (;;)
	{
		int			st = tfm_bleu_add_polled(stats, hyp, hyp_len, refs, ref_lens, n_refs,
											 tfm_interrupt_pending, NULL);

		if (st != TFM_ECANCELED)
			return st;
		CHECK_FOR_INTERRUPTS();
	}
}
