/*
 * tfm/safetensors.h: a strict reader of Hugging Face's .safetensors files
 * (plain C, no postgres.h).
 *
 * The format: 8 bytes, the little-endian length N of the header; N bytes of
 * UTF-8 JSON, the header; then the data buffer, every tensor's bytes in
 * little-endian order.  The header is one object: a key per tensor,
 *
 *   "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 *
 * with byte offsets relative to the data buffer, and optionally one key
 * "__metadata__" whose value is an object of strings.
 *
 * Reading happens in two steps, so that a caller can stream a file too
 * large to hold in memory:
 *
 *   tfm_st_header_length   the first 8 bytes and the file size -> N
 *   tfm_st_parse_header    the N header bytes and the file size -> tensors
 *
 * after which the caller reads each tensor at data_start + begin and
 * converts it with tfm_st_to_f32 (element-wise, so any whole number of
 * values at a time).  tfm_st_parse does both steps on a file in memory.
 *
 * What is refused (TFM_EBADFILE, with a message naming the tensor):
 *   - a header length < 2, > TFM_ST_MAX_HEADER or beyond the end of the file;
 *   - a header that is not one JSON object starting at its first byte (only
 *     JSON whitespace may follow it: the format pads with spaces), strings
 *     that are not UTF-8 or hold U+0000, lone surrogates, numbers that are
 *     not integers where integers are due;
 *   - duplicate keys (tensor names, metadata keys, fields), empty tensor
 *     names, fields other than dtype, shape and data_offsets, metadata
 *     values that are not strings;
 *   - a dtype that the format does not define, a rank > TFM_ST_MAX_RANK,
 *     negative dimensions, a shape whose byte size overflows 64 bits or
 *     differs from end - begin;
 *   - ranges outside the data buffer, overlapping ranges, and bytes of the
 *     data buffer that no tensor covers (the format forbids holes, so that
 *     no file is also something else).
 *
 * Every dtype the format defines is parsed (a checkpoint may hold int64
 * buffers such as BERT's position_ids, which an importer skips), but only
 * F32, F16 and BF16 convert to float32: tfm_st_tensor_to_f32 refuses the
 * others by name (TFM_EUNSUPPORTED, "dtype \"I64\" of tensor \"x\" is not
 * supported").  NaN and infinities are not checked by the parser (the
 * format allows them); tfm_st_find_nonfinite finds them after conversion.
 *
 * Errors (tfm/status.h): functions that can fail return a tfm_code
 * (TFM_EBADFILE for a file that is not valid safetensors, TFM_EUNSUPPORTED
 * for a dtype, TFM_EINVAL, TFM_ENOMEM) and, when err is not NULL, a one-line message (lower case, no period, names quoted and cut
 * at 64 bytes on a UTF-8 boundary) that the SQL layer can report as is.
 * Nothing here prints, exits or asserts on input; on failure nothing is
 * left allocated.  Memory comes from malloc.
 */
#ifndef TFM_SAFETENSORS_H
#define TFM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* limits (the docs repeat these numbers) */
#define TFM_ST_MAX_HEADER  ((uint64_t) 100000000)	/* bytes, as the reference reader */
#define TFM_ST_MAX_RANK    8
#define TFM_ST_PREFIX      8	/* bytes of the header length */

/* every dtype of the format; only F32, F16 and BF16 convert to float32 */
typedef enum tfm_st_dtype
{
	TFM_ST_F32 = 1,
	TFM_ST_F16,
	TFM_ST_BF16,
	TFM_ST_F64,
	TFM_ST_F8_E5M2,
	TFM_ST_F8_E4M3,
	TFM_ST_BOOL,
	TFM_ST_U8,
	TFM_ST_I8,
	TFM_ST_I16,
	TFM_ST_U16,
	TFM_ST_I32,
	TFM_ST_U32,
	TFM_ST_I64,
	TFM_ST_U64
} tfm_st_dtype;

typedef struct tfm_st_tensor
{
	const char *name;			/* NUL-terminated UTF-8, non-empty, no NUL inside */
	size_t		name_len;
	tfm_st_dtype dtype;
	int			ndim;			/* 0 (a scalar) .. TFM_ST_MAX_RANK */
	uint64_t	dims[TFM_ST_MAX_RANK];	/* dims[ndim ..] are 0 */
	uint64_t	n_values;		/* product of the dims (1 for a scalar) */
	uint64_t	begin,
				end;			/* bytes [begin, end) of the data buffer */
} tfm_st_tensor;

typedef struct tfm_st_meta
{
	const char *key;			/* NUL-terminated UTF-8, no NUL inside */
	const char *value;
} tfm_st_meta;

typedef struct tfm_st_file
{
	uint64_t	header_len;		/* N */
	uint64_t	data_start;		/* 8 + N: file offset of the data buffer */
	uint64_t	data_len;		/* file size - data_start */
	size_t		n_tensors;
	tfm_st_tensor *tensors;		/* sorted by begin: the order of the file */
	size_t		n_meta;
	tfm_st_meta *meta;			/* __metadata__, sorted by key */
	/* private */
	const tfm_st_tensor **by_name;	/* the tensors sorted by name */
	char	   *pool;			/* every string */
} tfm_st_file;

const char *tfm_st_dtype_name(tfm_st_dtype dtype);	/* "F32", ... or NULL */
size_t		tfm_st_dtype_size(tfm_st_dtype dtype);	/* bytes per value, 0 if unknown */
int			tfm_st_dtype_is_float(tfm_st_dtype dtype);	/* F32, F16 or BF16 */

/* ---- parsing ---------------------------------------------------------------- */

/*
 * The header length N from the first prefix_len bytes of a file of
 * file_size bytes: refuses fewer than 8 bytes, N < 2, N > TFM_ST_MAX_HEADER
 * and N > file_size - 8.
 */
int			tfm_st_header_length(uint64_t *header_len, const uint8_t *prefix,
								 size_t prefix_len, uint64_t file_size,
								 tfm_status *err);

/*
 * Parses the header_len bytes of header (the file's bytes 8 .. 8 + N) of a
 * file of file_size bytes and checks every tensor against the data buffer
 * (file_size - 8 - N bytes).  On success *out owns everything; free it with
 * tfm_st_free.  On failure *out is NULL.
 */
int			tfm_st_parse_header(tfm_st_file **out, const uint8_t *header,
								size_t header_len, uint64_t file_size,
								tfm_status *err);

/* both steps on a whole file in memory (buf[0 .. len)) */
int			tfm_st_parse(tfm_st_file **out, const uint8_t *buf, size_t len,
						 tfm_status *err);

void		tfm_st_free(tfm_st_file *f);

/* the tensor of that name (len bytes), or NULL */
const tfm_st_tensor *tfm_st_find(const tfm_st_file *f, const char *name, size_t len);

/* the value of a __metadata__ key (NUL-terminated), or NULL */
const char *tfm_st_meta_get(const tfm_st_file *f, const char *key);

/* ---- values ----------------------------------------------------------------- */

/* exact conversions of one value (NaN payloads kept, subnormals exact) */
float		tfm_f16_to_f32(uint16_t h);
float		tfm_bf16_to_f32(uint16_t b);
/* float32 -> bfloat16, rounding to nearest even; NaN stays a (quiet) NaN */
uint16_t	tfm_f32_to_bf16(float x);

/*
 * n values of dtype at src (n * tfm_st_dtype_size(dtype) little-endian
 * bytes, any alignment) -> out[0 .. n).  TFM_EUNSUPPORTED (and out untouched)
 * unless dtype is F32, F16 or BF16.
 */
int			tfm_st_to_f32(float *out, const uint8_t *src, size_t n, tfm_st_dtype dtype);

/*
 * A whole tensor: src holds its src_len = end - begin bytes, out has room
 * for n_values floats.  Refuses other dtypes by name (TFM_EUNSUPPORTED) and a
 * src_len that is not the tensor's (TFM_EINVAL).
 */
int			tfm_st_tensor_to_f32(float *out, const tfm_st_tensor *t,
								 const uint8_t *src, size_t src_len,
								 tfm_status *err);

/* 1 and the index of the first NaN or infinity in x[0 .. n), else 0 */
int			tfm_st_find_nonfinite(size_t *index, const float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif							/* TFM_SAFETENSORS_H */
