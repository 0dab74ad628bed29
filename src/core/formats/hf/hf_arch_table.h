/*
 * hf_arch_table.h — the one table of the Hugging Face architectures tfm
 * imports (hf_arch_table.c): each tfm_hf_arch with its family (hf_family.h)
 * and the prefix of its tensor names.  tfm_hf_config (hf_config.c) and
 * tfm_hf_map_create (hf_map.c) find an architecture's family here.  A new
 * family is one new file and one row.
 */
#ifndef TFM_HF_ARCH_TABLE_H
#define TFM_HF_ARCH_TABLE_H

#include "hf_family.h"

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

#endif							/* TFM_HF_ARCH_TABLE_H */
