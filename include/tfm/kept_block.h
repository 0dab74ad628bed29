/*
 * tfm/kept_block.h: blocks a model keeps as a GGUF file gave them (plain C,
 * no postgres.h): one entry's description, the set a model holds, an
 * entry's bytes and the parts covering a matrix (kept_block.c).
 * tfm/precision.h keeps them in a model (tfm_model_keep_int4) and runs them.
 */
#ifndef TFM_KEPT_BLOCK_H
#define TFM_KEPT_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/model.h"

/* one part of a matrix as a file's blocks (src/core/kernels/lowp/lowp_set.h) */
struct tfm_kq_part;

/*
 * Blocks kept as a GGUF file has them: output columns col0 .. col0 + cols
 * - 1 of the matrix whose fp32 weights are the tensor at `offset` in the
 * parameter block (its tfm_param_info.offset; the tied head's is the
 * embedding's), K inputs, each column's blocks in turn, of ggml type
 * `type`:
 *   Q4_0 (2): tfm's int4 layout (tfm/lowp.h, K a multiple of 32): an int4
 *        packing of the model takes these columns' blocks byte for byte
 *        instead of quantizing W's values;
 *   Q8_0 (8), Q4_K (12), Q5_K (13), Q6_K (14) (K a multiple of the type's
 *        block, tfm/kquant.h): TFM_PREC_GGUF runs every matrix whose
 *        columns they cover wholly on them (tfm_kq_gemm), the activations
 *        quantized as llama.cpp does; a matrix not covered runs fp32.
 * The fp32 weights, which every other precision and training use, are
 * their exact dequantization.
 */
typedef struct tfm_int4_kept
{
	size_t		offset;
	int			K,
				col0,
				cols;
	const uint8_t *blocks;		/* cols rows of the type's blocks */
	uint32_t	type;			/* ggml type */
	bool		rows_only;		/* the rows of a table no matrix runs (an untied
								 * embedding: its rows col0 .., K its width), kept
								 * for its lookups only */
} tfm_int4_kept;

/* bytes of k's blocks (0 for a type not kept) */
size_t		tfm_kept_bytes(const tfm_int4_kept *k);

/* the blocks a model keeps (int4_kept.c): one allocation, the bytes after the list */
struct tfm_int4_kept_set
{
	int			n;
	long		columns;
	tfm_int4_kept k[];
};

/*
 * The kept blocks of m run by TFM_PREC_GGUF (types tfm_kq_gemm takes) for
 * the matrix with weights W (K × N): the number of parts, in column order,
 * when they cover its N columns exactly once (into out, if non-NULL, the
 * blocks pointing into m's set), else 0
 */
int			tfm_kept_parts(const tfm_model *m, const float *W, int K, int N, struct tfm_kq_part *out);

/*
 * Float32 values left to the kept blocks (absent_floats.c).  A model run at
 * TFM_PREC_GGUF reads a matrix's values only through its blocks and an
 * embedding's rows only by lookups, so their float32 values need not be
 * made at all: the parameter block keeps their place (an anonymous mapping:
 * pages never written take no memory) and m->absent marks them.
 *
 * tfm_model_leave_absent: of the tensors want[i] names, leaves absent those
 * the kept blocks of a kquant type (tfm/kquant.h, not Q4_0) cover wholly
 * and that gguf reads only through them (every matrix over it run by its
 * parts; a table's rows — the tied head's columns or rows_only entries —
 * by tfm_model_embedding_forward); the others are left for the caller to
 * fill.  Returns how many are absent (-1: out of memory).
 */
int			tfm_model_leave_absent(tfm_model *m, const bool *want);

/*
 * The memory of tensor i's values given back, where the parameter block is
 * mapped (a model of 1 MB or more): the pages wholly inside them read as
 * zeros afterwards.  For an import that keeps a tensor as its blocks only,
 * once its values are checked against them (nothing else may read them).
 */
void		tfm_model_release_values(tfm_model *m, int i);
/*
 * The same for values [offset, offset + n) of the parameter block (the
 * pages wholly inside them): for an import that checks a large tensor a
 * range of rows at a time (tfm_gguf_load_rows)
 */
void		tfm_model_release_range(tfm_model *m, size_t offset, size_t n);
/* tensor i's values into out (size values), made from the blocks if absent: 0, TFM_EINVAL */
int			tfm_model_tensor_read(const tfm_model *m, int i, float *out);
/*
 * Make the values of every absent tensor in m->params (counted in
 * m->floats_made): 0; TFM_EINVAL if the parameter block is borrowed
 * (read-only: the caller loads a whole copy instead)
 */
int			tfm_model_make_floats(tfm_model *m);
/* tfm_embedding_forward over m's table tok (and pos), rows of absent tables made from their blocks */
int			tfm_model_embedding_forward(const tfm_model *m, float *out, const int32_t *ids,
										const float *tok, int V, const float *pos, float scale,
										int B, int T, int d, int pos0);
/*
 * The inference matrices (precision.c) whose weights are W: their number
 * (-1: out of memory), *covered whether the kept blocks run every one at gguf
 */
int			tfm_model_matrix_uses(const tfm_model *m, const float *W, bool *covered);

#endif							/* TFM_KEPT_BLOCK_H */
