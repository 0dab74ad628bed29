/*
 * bleu_stats.h — the core's corpus BLEU statistics counted inside a
 * backend, stopped by a cancel (bleu_stats.c).
 */
#ifndef TFM_PG_BLEU_STATS_H
#define TFM_PG_BLEU_STATS_H

#include "postgres.h"


/* tfm_bleu_add that ends at a cancel or statement_timeout */
int			tfm_bleu_add_pg(int64 *stats, const char *hyp, size_t hyp_len,
							const char *const *refs, const size_t *ref_lens, int n_refs);

#endif							/* TFM_PG_BLEU_STATS_H */
