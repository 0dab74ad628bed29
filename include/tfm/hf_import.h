/*
 * hf_import.h — the two entry points of the Hugging Face import that look
 * an architecture up in its table (hf_import.c): its tfm_config from a
 * config.json's hyper-parameters (tfm/hf_config.h), and the table of the
 * tensors its checkpoints hold (tfm/hf_map.h).
 */
#ifndef TFM_HF_IMPORT_H
#define TFM_HF_IMPORT_H

#include "tfm/hf_config.h"
#include "tfm/hf_map.h"

/*
 * NULL and *cfg filled, or a message (lower case, no period; valid until
 * the next call): the one check of a config.json's hyper-parameters against
 * tfm/limits.h, then tfm_config_check
 */
const char *tfm_hf_config(tfm_config *cfg, const tfm_hf_params *p);

/* the expected tensors of a model of that config (malloc'd; NULL if out of memory) */
tfm_hf_map *tfm_hf_map_create(tfm_hf_arch arch, const tfm_config *cfg);

#endif							/* TFM_HF_IMPORT_H */
