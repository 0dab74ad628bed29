/*
 * tfm/hf_map.h — the tensors of a Hugging Face checkpoint into a tfm model
 * (plain C, no postgres.h): a table naming every tensor the checkpoint
 * must hold, its shape, and where its values go in the tfm model (and how:
 * copied, or transposed from nn.Linear's (out, in) to tfm's (in, out)),
 * built for a config (tfm/hf_config.h) by formats/hf/hf_map.c.
 *
 * The SQL layer asks tfm_hf_config for the tfm_config, builds the model,
 * then walks the safetensors file: every tensor is looked up with
 * tfm_hf_match, checked and converted with tfm_hf_load_tensor, and at the
 * end tfm_hf_finish names any expected tensor that never came.
 */
#ifndef TFM_HF_MAP_H
#define TFM_HF_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm/hf_config.h"
#include "tfm/model.h"
#include "tfm/safetensors.h"

/* what becomes of a checkpoint tensor */
typedef enum tfm_hf_use
{
	TFM_HF_COPY = 0,			/* values as they are (Conv1D is already (in, out)) */
	TFM_HF_TRANSPOSE,			/* a 2-D (a, b) tensor stored as (b, a) */
	TFM_HF_TIED,				/* must equal the tensor it is tied to (lm_head) */
	TFM_HF_BUFFER,				/* a non-parameter buffer: shape checked, values ignored */
	TFM_HF_SLICE,				/* nn.Linear (out, in) transposed into columns col0.. of
								 * an (in, wider) target, or a bias into col0.. (q/k/v) */
	TFM_HF_TRANSPOSE_COLS,		/* (a, b) stored as columns col0 .. col0+a-1 of a (b, n)
								 * tfm tensor (Llama's q/k/v and gate/up, fused) */
	TFM_HF_COPY_PLUS1,			/* values + 1 (Gemma's RMSNorm computes x·(1 + w)) */
	TFM_HF_SHARED				/* one of several names of one tensor (Marian's shared,
								 * encoder and decoder embeddings, tied lm_head): the
								 * first to come is copied, the others must equal it */
} tfm_hf_use;

typedef struct tfm_hf_entry
{
	char		name[96];		/* HF name, without the optional prefix */
	bool		prefixable;		/* may also appear as prefix + name */
	bool		required;
	tfm_hf_use	use;
	int			ndim;
	int64_t		dims[4];		/* the checkpoint's shape; -1 = any size */
	char		target[48];		/* tfm tensor name ("" for buffers) */
	int64_t		col0;			/* TFM_HF_SLICE, TFM_HF_TRANSPOSE_COLS: the first column */
} tfm_hf_entry;

typedef struct tfm_hf_map
{
	tfm_hf_arch arch;
	const char *prefix;			/* "transformer." for GPT-2, "model." for Llama */
	int			n;
	tfm_hf_entry *entries;
	bool	   *seen;
	float	   *tied;			/* a tied lm_head's values, compared at the end */
	const tfm_hf_entry *tied_entry;
	bool		shared_loaded;	/* a TFM_HF_SHARED tensor came */
} tfm_hf_map;

void		tfm_hf_map_free(tfm_hf_map *map);
/*
 * Values the required tensors of a checkpoint hold (buffers and a tied
 * head not counted): at 2 bytes a value (F16, BF16) a lower bound of the
 * weights' size, known before any model is built.
 */
uint64_t	tfm_hf_map_min_values(const tfm_hf_map *map);

/* the entry for a checkpoint tensor name (len bytes), or NULL if unexpected */
tfm_hf_entry *tfm_hf_match(tfm_hf_map *map, const char *name, size_t len);

/*
 * Check a tensor against its entry (dtype F32/F16/BF16 except for buffers,
 * shape, seen once) and store its values in m, converted to float32;
 * src holds its bytes (t->end - t->begin).  NaN and infinities are refused.
 * Returns 0, or -1 with a message in err (naming the tensor, and for a
 * shape both shapes).
 */
int			tfm_hf_load_tensor(tfm_model *m, tfm_hf_map *map, tfm_hf_entry *e,
							   const tfm_st_tensor *t, const uint8_t *src,
							   char *err, size_t errlen);
/*
 * tfm_hf_load_tensor's first checks alone (t's shape against its entry's,
 * seen once), counting t seen: 0, or -1 with a message in err.  For a
 * caller that stores a tensor's values itself (tfm_gguf_rows_begin).
 */
int			tfm_hf_claim(tfm_hf_map *map, tfm_hf_entry *e, const tfm_st_tensor *t,
						 char *err, size_t errlen);
/*
 * Where tfm_hf_load_tensor would copy a tensor of n values of entry e as
 * they are (no transpose, no slice): its place in m, or NULL.  A caller
 * that converts a tensor itself may write its float32 values there and
 * pass that place as src (dtype F32): then nothing is copied, and no
 * second copy of a large tensor (an embedding) is made.
 */
float	   *tfm_hf_copy_place(const tfm_model *m, const tfm_hf_entry *e, size_t n);

/*
 * After every tensor: 0, or -1 with a message if a required tensor never
 * came or a tied lm_head differs from the embedding.
 */
int			tfm_hf_finish(const tfm_model *m, const tfm_hf_map *map, char *err, size_t errlen);

#endif							/* TFM_HF_MAP_H */
