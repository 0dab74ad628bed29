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

#endif							/* TFM_KEPT_BLOCK_H */
