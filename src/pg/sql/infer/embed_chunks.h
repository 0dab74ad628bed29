/*
 * embed_chunks.h — texts cut into token windows and embedded window by
 * window (embed_chunks.c): the window a model leaves for a chunk's tokens,
 * and the checks of chunk_tokens / chunk_overlap that tfm_embed_chunks and
 * jobs share.
 */
#ifndef TFM_EMBED_CHUNKS_H
#define TFM_EMBED_CHUNKS_H

#include "sql/args.h"
#include "storage/models/models.h"

/* the most tokens of a text one chunk may hold: max_len less the specials put around them */
int			tfm_chunk_window(const TfmModelRow *row);
/* ERROR unless 1 <= chunk_tokens <= the window and 0 <= chunk_overlap < chunk_tokens (22023) */
void		tfm_check_chunking(const TfmModelRow *row, int chunk_tokens, int chunk_overlap);

#endif							/* TFM_EMBED_CHUNKS_H */
