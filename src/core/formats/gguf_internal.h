/*
 * gguf_internal.h — what the GGUF importer's files share (not a public
 * API): metadata helpers of gguf.c and the gpt2, phi3 and gemma3
 * architectures of gguf_gpt2.c, gguf_phi3.c and gguf_gemma3.c, for
 * gguf_model.c.
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
/* gemma3.* beyond the llama keys and key_length (gguf_gemma3.c): Gemma 3's
 * flags, windows, rope scaling and attention scale (after p's sizes) */
int			tfm_gguf_gemma3_params(tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st);
extern const char *const tfm_gguf_gemma3_top[][2];
extern const char *const tfm_gguf_gemma3_blk[][2];
/* is t one of a gemma3 file's norm weights (stored plus 1)?  Then take the 1 off its n values */
bool		tfm_gguf_gemma3_norm(const tfm_hf_params *p, const tfm_gguf_tensor *t);
void		tfm_gguf_gemma3_norms(float *v, uint64_t n);

#endif							/* TFM_GGUF_INTERNAL_H */
