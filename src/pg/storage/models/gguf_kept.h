/*
 * gguf_kept.h — the Q4_0 blocks a model imported from a GGUF file keeps
 * (tfm.gguf_tensors), given to its int4 copies (gguf_kept.c).
 */
#ifndef TFM_PG_GGUF_KEPT_H
#define TFM_PG_GGUF_KEPT_H

#include "postgres.h"

#include "storage/models/models.h"

/* the GGUF blocks kept for the row's version given to m for int4 (none: nothing) */
/* rows: also the blocks kept for storage only (an untied embedding's), which
 * serve the lookups of a table whose float32 values are left absent */
void		tfm_attach_kept(tfm_model *m, const TfmModelRow *row, bool rows);

#endif							/* TFM_PG_GGUF_KEPT_H */
