/*
 * shared_weights.h — one copy of a model's weights for every backend
 * (shared_weights.c): a file in the temporary directory, mapped read-only;
 * the packed bf16/int8 copies shared the same way, or packed privately.
 */
#ifndef TFM_PG_SHARED_WEIGHTS_H
#define TFM_PG_SHARED_WEIGHTS_H

#include "postgres.h"

#include "storage/models/models.h"

/* a model for inference, over the one shared copy of its weights */
tfm_model  *tfm_shared_load(const TfmModelRow *row);
/*
 * a model to run at gguf: its kept blocks and the float32 values they do
 * not stand for (tfm_catalog_load_at), over the one shared copy of them
 */
tfm_model  *tfm_shared_load_gguf(const TfmModelRow *row);

/* remove the shared copies of a dropped model */
void		tfm_shared_forget(int32 model_id);
/* a mapped model's bf16/int8 copies from (or into) the shared file; false: pack privately */
bool		tfm_shared_precision(tfm_model *m, const TfmModelRow *row, tfm_precision p);
/* pack m for p privately, stopped by a cancel (raised); 0, or -1 without the memory */
int			tfm_pack_model(tfm_model *m, tfm_precision p);

#endif							/* TFM_PG_SHARED_WEIGHTS_H */
