/*
 * gguf_internal.h — what the GGUF importer's files share (not a public
 * API): metadata helpers of gguf.c and the gpt2 architecture of
 * gguf_gpt2.c, for gguf_model.c.
 */
#ifndef TFM_GGUF_INTERNAL_H
#define TFM_GGUF_INTERNAL_H

#include "tfm/gguf.h"

/* an integer key within lo..hi into *v (left alone if absent and optional) */
int			tfm_gguf_get_range(int *v, const tfm_gguf_file *f, const char *key, bool required,
							   int64_t lo, int64_t hi, tfm_status *st);
/* the tensor of that name, or NULL */
const tfm_gguf_tensor *tfm_gguf_find_tensor(const tfm_gguf_file *f, const char *name);

/* gpt2.*: a Hugging Face GPT-2's hyper-parameters */
int			tfm_gguf_gpt2_params(tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st);
/* GGUF names -> Hugging Face names ({NULL, NULL} last): whole names, and a block's */
extern const char *const tfm_gguf_gpt2_top[][2];
/* phi3.* beyond the llama keys (gguf_phi3.c): its rope (rope_dims the file's
 * rope.dimension_count, ctx its context_length before tfm's cap) */
int			tfm_gguf_phi3_params(tfm_hf_params *p, const tfm_gguf_file *f, int rope_dims,
								 int64_t ctx, tfm_status *st);
extern const char *const tfm_gguf_phi3_top[][2];
extern const char *const tfm_gguf_phi3_blk[][2];
extern const char *const tfm_gguf_gpt2_blk[][2];

#endif							/* TFM_GGUF_INTERNAL_H */
