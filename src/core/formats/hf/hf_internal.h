/*
 * hf_internal.h — what the Hugging Face importer's files share (not a
 * public API; that is tfm/hf_map.h).  One file per family of
 * architectures (gpt2.c, bert.c, llama.c, marian.c, t5.c) holds its
 * config.json keys, its tfm_config and the names of its tensors as an
 * hf_family; hf_arch_table.c lists every tfm_hf_arch with its family and
 * its tensors' prefix; hf_config.c (the checks of a config.json) and
 * hf_map.c (the tensors' table, their checks and conversions) look the
 * architecture up there.  A new family is one new file and one row.
 */
#ifndef TFM_HF_INTERNAL_H
#define TFM_HF_INTERNAL_H

#include "tfm/hf_map.h"

/* the config.json names of the hyper-parameters every architecture checks */
typedef struct hf_keys
{
	const char *d_model,
			   *heads,
			   *layers,
			   *max_len,
			   *d_ff,
			   *ln_eps;
} hf_keys;

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

extern const hf_family hf_gpt2;		/* gpt2.c */
extern const hf_family hf_bert;		/* bert.c: BERT, RoBERTa, DistilBERT */
extern const hf_family hf_llama;	/* llama.c: Llama, Qwen2, Mistral, Phi-3, Gemma (2) */
extern const hf_family hf_marian;	/* marian.c */
extern const hf_family hf_t5;		/* t5.c: T5, mT5 */

/* a row of the table of architectures (hf_arch_table.c) */
typedef struct hf_arch_row
{
	tfm_hf_arch arch;
	const char *prefix;			/* the optional prefix of its tensor names, or NULL */
	const hf_family *family;
} hf_arch_row;

/* the row of arch, or NULL for an unknown one */
const hf_arch_row *hf_arch_find(tfm_hf_arch arch);

/* ---- for the families (hf_config.c) ---- */
/* what every architecture's config sets alike, and its stacks as task says
 * (LM: p->layers in the decoder; classify: in the encoder; seq2seq: both) */
void		hf_base_config(tfm_config *cfg, const tfm_hf_params *p, tfm_task task);

/* the rotated width of a head: int(head size · partial_rotary_factor), 0 for whole heads */
int			hf_rope_dim(const tfm_hf_params *p);

/* ---- for the families (hf_map.c) ---- */
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

#endif							/* TFM_HF_INTERNAL_H */
