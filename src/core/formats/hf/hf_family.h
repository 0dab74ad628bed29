/*
 * hf_family.h — what a family of Hugging Face architectures is and builds
 * with (hf_family.c).  One file per family (gpt2.c, bert.c, llama.c,
 * marian.c, t5.c) holds its config.json keys, its tfm_config and the names
 * of its tensors as an hf_family; hf_arch_table.h lists them.  Not a
 * public API (that is tfm/hf_config.h and tfm/hf_map.h).
 */
#ifndef TFM_HF_FAMILY_H
#define TFM_HF_FAMILY_H

#include "tfm/hf_config.h"
#include "tfm/hf_map.h"


/* a tfm_hf_map being filled (map->arch set) */
typedef struct hf_builder
{
	tfm_hf_map *map;
	int			cap;
	bool		failed;
} hf_builder;

/* a family of architectures: what is its own */
typedef struct hf_family
{
	const hf_keys *keys;
	/* cfg from p, already checked against keys (hf_config.c) */
	void		(*config) (tfm_config *cfg, const tfm_hf_params *p);
	/* the tensors of a model of config c, added to b (b->map->arch says which) */
	void		(*entries) (hf_builder *b, const tfm_config *c);
} hf_family;

/* what every architecture's config sets alike, and its stacks as task says
 * (LM: p->layers in the decoder; classify: in the encoder; seq2seq: both) */
void		hf_base_config(tfm_config *cfg, const tfm_hf_params *p, tfm_task task);


/* an entry added to b (NULL once an allocation failed: b->failed) */
tfm_hf_entry *hf_add(hf_builder *b, const char *name, bool prefixable, tfm_hf_use use,
					 const char *target, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
/* layer i's tensor "<hfl>.<i>.<hf>" into "<tfl>.<i>.<tf>" (col0: its first
 * column in a fused target, else 0) */
void		hf_add_layer(hf_builder *b, const char *hfl, int i, const char *hf, const char *tfl,
						 const char *tf, tfm_hf_use use, int ndim, int64_t d0, int64_t d1,
						 int64_t col0);
/* an nn.Linear(in, out): "<hf>.weight" transposed into "<tf>.w" (in, out),
 * "<hf>.bias" into "<tf>.b" (out) */
void		hf_add_linear(hf_builder *b, const char *hf, bool prefixable, const char *tf, int64_t out,
						  int64_t in);
/* the output projection: tied to the token embedding or its own */
void		hf_add_lm_head(hf_builder *b, const tfm_config *c);

#endif							/* TFM_HF_FAMILY_H */
