/*
 * tfm/gguf_quants.h: ggml's tensor types as GGUF stores them (plain C, no
 * postgres.h): each type's block (values and bytes), its name, the
 * conversion of whole blocks to float32 (kernels/lowp/kquant/gguf_quants.c,
 * below the reader and the model), which types a tfm kernel runs as they
 * are, and the tfm precision each type runs at under tfm.precision = auto.
 * The reader of the file around them is tfm/gguf.h.
 */
#ifndef TFM_GGUF_QUANTS_H
#define TFM_GGUF_QUANTS_H

#include <stdbool.h>
#include <stdint.h>

#include "tfm/lowp.h"			/* tfm_precision */

/* the ggml tensor types tfm converts (the numbers are the format's) */
typedef enum tfm_gguf_type
{
	TFM_GGML_F32 = 0,
	TFM_GGML_F16 = 1,
	TFM_GGML_Q4_0 = 2,
	TFM_GGML_Q8_0 = 8,
	TFM_GGML_Q4_K = 12,
	TFM_GGML_Q5_K = 13,
	TFM_GGML_Q6_K = 14,
	TFM_GGML_BF16 = 30
} tfm_gguf_type;

/* values a block holds and its bytes (0, 0 for a type tfm does not know) */
void		tfm_gguf_block(uint32_t type, uint64_t *values, uint64_t *bytes);
/* "Q4_K", ... or NULL if unknown */
const char *tfm_gguf_type_name(uint32_t type);
/*
 * n values (whole blocks) of a tensor of that type to float32, as ggml's
 * dequantize_row_* (bit for bit): TFM_OK or TFM_EUNSUPPORTED for a type
 * tfm does not convert.  Every type tfm imports is converted at import (the
 * float32 weights every precision and training use).
 */
int			tfm_gguf_to_f32(float *out, const uint8_t *src, uint32_t type, uint64_t n);
/*
 * Is the type one a tfm kernel runs as it is, its blocks kept beside the
 * float32 values (Q4_0: tfm's int4 layout; Q8_0, Q4_K, Q5_K, Q6_K:
 * tfm/kquant.h's)?  The others (F16, BF16) are only converted.
 */
bool		tfm_gguf_kept(uint32_t type);

/* a ggml tensor type's: F32/F16 fp32, BF16 bf16, Q4_0 int4, Q8_0/Q4_K/Q5_K/Q6_K gguf
 * (the blocks as they are) */
tfm_precision tfm_gguf_type_precision(uint32_t type);

#endif							/* TFM_GGUF_QUANTS_H */
