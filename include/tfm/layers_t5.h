/*
 * layers_t5.h — the layer T5 adds to tfm's own (see layers.h for the
 * conventions): its relative position bias (relpos.c).
 *
 * A query at position i and a key at position j are |j − i| apart; the
 * distance falls in one of `buckets` buckets (exact below half of them, then
 * logarithmic up to max_distance, beyond which all share the last), the
 * encoder's also by its sign (bidirectional), the decoder's only looking
 * back.  Each head has one learned value a bucket: table (buckets, heads),
 * Hugging Face's relative_attention_bias.weight.
 */
#ifndef TFM_LAYERS_T5_H
#define TFM_LAYERS_T5_H

#include <stdbool.h>

/* the bucket of rel = key position − query position (HF's _relative_position_bucket) */
int			tfm_relpos_bucket(int rel, bool bidirectional, int buckets, int max_distance);

/*
 * out (h, Tq, Tk): head k's bias for query r (at position q0 + r) and key j
 * (at position j), table[bucket · h + k]
 */
void		tfm_relpos_bias(float *out, const float *table, int h, int Tq, int Tk, int q0,
							bool bidirectional, int buckets, int max_distance);

/* dtable[bucket · h + k] += Σ dbias[k, r, j] over the pairs in that bucket */
void		tfm_relpos_bias_backward(float *dtable, const float *dbias, int h, int Tq, int Tk,
									 int q0, bool bidirectional, int buckets, int max_distance);

#endif							/* TFM_LAYERS_T5_H */
