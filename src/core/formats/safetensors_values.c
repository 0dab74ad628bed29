/*
 * safetensors_values.c: the values of safetensors tensors — exact F16 and
 * BF16 to float32 conversions, the float32 to BF16 rounding, the
 * conversion of a tensor's little-endian bytes and the search for NaN and
 * infinities (see include/tfm/safetensors.h).
 *
 * Every float16 and bfloat16 value is exactly a float32 (more exponent and
 * fraction bits), so the conversions only move bits: F16 subnormals
 * (0x0001 = 2^-24) are normalized, infinities and NaN keep their sign and
 * payload.  Bytes are assembled little-endian one at a time, so neither the
 * host's byte order nor the alignment of the source matters.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tfm/lowp.h"
#include "tfm/safetensors.h"

static inline float
bits_f32(uint32_t u)
{
	float		x;

	memcpy(&x, &u, sizeof(x));
	return x;
}

/* F16: the core's exact conversion (tfm/lowp.h, also int4's block scales) */
static inline float
f16_to_f32(uint16_t h)
{
	return tfm_fp16_to_float(h);
}

static inline float
bf16_to_f32(uint16_t b)
{
	return bits_f32((uint32_t) b << 16);
}

float
tfm_f16_to_f32(uint16_t h)
{
	return f16_to_f32(h);
}

float
tfm_bf16_to_f32(uint16_t b)
{
	return bf16_to_f32(b);
}

uint16_t
tfm_f32_to_bf16(float x)
{
	uint32_t	u;

	memcpy(&u, &x, sizeof(u));
	if ((u & 0x7FFFFFFF) > 0x7F800000)
		return (uint16_t) ((u >> 16) | 0x0040);	/* quiet NaN, sign kept */
	u += 0x7FFF + ((u >> 16) & 1);	/* to nearest, ties to even; may carry to inf */
	return (uint16_t) (u >> 16);
}

int
tfm_st_to_f32(float *out, const uint8_t *src, size_t n, tfm_st_dtype dtype)
{
	switch (dtype)
	{
		case TFM_ST_F32:
			for (size_t i = 0; i < n; i++)
			{
				const uint8_t *s = src + 4 * i;

				out[i] = bits_f32((uint32_t) s[0] | (uint32_t) s[1] << 8 |
								  (uint32_t) s[2] << 16 | (uint32_t) s[3] << 24);
			}
			return TFM_OK;
		case TFM_ST_F16:
			for (size_t i = 0; i < n; i++)
				out[i] = f16_to_f32((uint16_t) (src[2 * i] | src[2 * i + 1] << 8));
			return TFM_OK;
		case TFM_ST_BF16:
			for (size_t i = 0; i < n; i++)
				out[i] = bf16_to_f32((uint16_t) (src[2 * i] | src[2 * i + 1] << 8));
			return TFM_OK;
		default:
			return TFM_EUNSUPPORTED;
	}
}

int
tfm_st_tensor_to_f32(float *out, const tfm_st_tensor *t, const uint8_t *src,
					 size_t src_len, tfm_status *err)
{
	const char *dt = tfm_st_dtype_name(t->dtype);
	size_t		n = t->name_len > 64 ? 64 : t->name_len;

	if (err)
		err->msg[0] = '\0';
	/* the name was validated UTF-8; cut it on a character boundary */
	while (n < t->name_len && n > 0 && ((unsigned char) t->name[n] & 0xC0) == 0x80)
		n--;
	if (!tfm_st_dtype_is_float(t->dtype))
	{
		return tfm_status_set(err, TFM_EUNSUPPORTED,
							  "dtype %s of tensor \"%.*s%s\" is not supported (F32, F16 and BF16 are)",
							  dt ? dt : "?", (int) n, t->name, n < t->name_len ? "..." : "");
	}
	if (src_len != t->end - t->begin)
	{
		return tfm_status_set(err, TFM_EINVAL, "tensor \"%.*s%s\" has %llu bytes, %zu given",
							  (int) n, t->name, n < t->name_len ? "..." : "",
							  (unsigned long long) (t->end - t->begin), src_len);
	}
	return tfm_st_to_f32(out, src, (size_t) t->n_values, t->dtype);
}

int
tfm_st_find_nonfinite(size_t *index, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
		{
			*index = i;
			return 1;
		}
	*index = n;
	return 0;
}
