/*
 * tfm/safetensors_index.h: a strict reader of the index of a sharded
 * safetensors checkpoint, model.safetensors.index.json (plain C, no
 * postgres.h), and the checks of each shard's header against it
 * (safetensors_index.c).
 *
 * The format, as Hugging Face writes it:
 *
 *   {"metadata": {"total_size": 123456, ...},
 *    "weight_map": {"tensor.name": "model-00001-of-00002.safetensors", ...}}
 *
 * with the shard files in the same directory as the index.  The index is
 * read by a schema-directed parser on the lexer of the safetensors reader
 * (the same strict JSON: UTF-8, no U+0000, no duplicate keys, nothing after
 * the object but white space).  What is refused (TFM_EBADFILE, with a
 * message naming the key, tensor or file):
 *   - a top-level key other than "metadata" and "weight_map", no
 *     "weight_map", an empty one, values of the wrong JSON type;
 *   - in "metadata": a "total_size" that is not a non-negative integer;
 *     other metadata keys (total_parameters, a merge tool's version, ...)
 *     may hold any JSON value nested at most TFM_ST_INDEX_MAX_DEPTH deep;
 *   - in "weight_map": an empty tensor name, a tensor named twice, and a
 *     shard file name that is not a plain file name of this directory:
 *     empty, longer than TFM_ST_MAX_SHARD_NAME bytes, holding '/', '\' or
 *     a control character, starting with '.', or not ending in
 *     ".safetensors" after at least one byte;
 *   - more than TFM_ST_MAX_SHARDS distinct shard files.
 *
 * Once parsed, each shard's header (tfm_st_parse_header) is checked with
 * tfm_st_index_check_shard: every tensor of the shard must be in the index,
 * which must name that very shard for it.  tfm_st_index_check_done, after
 * the last shard, names any tensor of the index that no shard held and
 * compares total_size, when present, with the sum of the tensors' byte
 * sizes.  So a checkpoint that passes has each of its tensors in exactly
 * the shard the index names, once.
 *
 * Errors and memory as in tfm/safetensors.h (same allocator, messages of
 * one line in tfm_status).
 */
#ifndef TFM_SAFETENSORS_INDEX_H
#define TFM_SAFETENSORS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TFM_ST_MAX_INDEX       TFM_ST_MAX_HEADER	/* bytes of an index file */
#define TFM_ST_MAX_SHARDS      4096
#define TFM_ST_MAX_SHARD_NAME  255	/* bytes, NAME_MAX */
#define TFM_ST_INDEX_MAX_DEPTH 16	/* nesting of other metadata values */

typedef struct tfm_st_index_tensor
{
	const char *name;			/* NUL-terminated UTF-8, non-empty */
	size_t		name_len;
	size_t		shard;			/* index into tfm_st_index.shards */
} tfm_st_index_tensor;

typedef struct tfm_st_index
{
	size_t		n_shards;
	const char **shards;		/* distinct file names, sorted (strcmp) */
	size_t		n_tensors;
	tfm_st_index_tensor *tensors;	/* sorted by name */
	int			has_total_size;
	uint64_t	total_size;		/* metadata.total_size */
	/* private */
	char	   *pool;
} tfm_st_index;

/* the len bytes of an index file -> *out (free with tfm_st_index_free), or NULL and an error */
int			tfm_st_parse_index(tfm_st_index **out, const uint8_t *json, size_t len,
							   tfm_status *err);
void		tfm_st_index_free(tfm_st_index *ix);

/* the position in ix->tensors of a tensor name (len bytes), or -1 */
long		tfm_st_index_find(const tfm_st_index *ix, const char *name, size_t len);

/*
 * Checks the parsed header f of shard number shard against the index: every
 * tensor of f must be in the index under that shard.  Marks found[i] for
 * each index tensor i it holds (found has ix->n_tensors bytes, zeroed by the
 * caller before the first shard) and adds the tensors' byte sizes to *bytes.
 */
int			tfm_st_index_check_shard(const tfm_st_index *ix, size_t shard,
									 const tfm_st_file *f, uint8_t *found,
									 uint64_t *bytes, tfm_status *err);

/* after every shard: each index tensor found, total_size (if any) == bytes */
int			tfm_st_index_check_done(const tfm_st_index *ix, const uint8_t *found,
									uint64_t bytes, tfm_status *err);

#ifdef __cplusplus
}
#endif

#endif							/* TFM_SAFETENSORS_INDEX_H */
