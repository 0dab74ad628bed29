/*
 * new_model.h — a model made from a config (new_model.c): its size
 * checked, its weights initialised, its rows stored.
 */
#ifndef TFM_PG_NEW_MODEL_H
#define TFM_PG_NEW_MODEL_H

#include "postgres.h"

#include "storage/models/models.h"

/* a new model of config c for model name, guarded, initialised from seed */
tfm_model  *tfm_model_new(const tfm_config *c, const char *name, uint64 seed);
/* the same without initial values (zeros) for a caller that gives every
 * tensor its own: tfm_model_init_some for those it does not */
tfm_model  *tfm_model_new_blank(const tfm_config *c, const char *name);
/*
 * A new model of config c: nm's row (config_json and parameters filled
 * here) and weights initialised from seed; its parameters.
 */
int64		tfm_model_create_stored(TfmNewModel *nm, const tfm_config *c, uint64 seed);

#endif							/* TFM_PG_NEW_MODEL_H */
