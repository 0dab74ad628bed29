/*
 * gguf_quants.c — ggml's tensor types as GGUF stores them: the block size
 * and bytes of each type tfm knows, and the conversion to float32 of those
 * it imports (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), each written from
 * ggml's dequantize_row_* and giving the same floats bit for bit: products
 * in float in ggml's order, none fused (NO_CONTRACT).
 *
 * Each block format is one function over whole blocks.  Every type is
 * converted to float32 at import (the weights every precision and training
 * use); tfm_gguf_kept() says which types a tfm kernel also runs as they
 * are, kept beside the float32 values (tfm_gguf_kept_place, gguf_model.c):
 * Q4_0, whose blocks are tfm's int4 layout, for int4 inference, and Q8_0,
 * Q4_K, Q5_K, Q6_K for gguf inference (tfm/kquant.h);
 * tfm_gguf_type_precision the tfm precision each type runs at under
 * tfm.precision = auto (source_precision.c tallies them).
 *
 * It stands here, beside the kernels that run the same blocks, below the
 * GGUF reader (formats/) and the model (model/absent_floats.c makes a
 * kept tensor's float32 values with it): it calls nothing above it, and
 * reads fp16 and bf16 with tfm/lowp.h's exact conversions (the same bits
 * as the safetensors reader's tfm_f16_to_f32 and tfm_bf16_to_f32).
 */
#include "tfm/gguf_quants.h"

#include <string.h>

#include "tfm/lowp.h"
#include "tfm/status_codes.h"

#define NO_CONTRACT(v) __asm__("" : "+x"(v))
#if !defined(__x86_64__)
#undef NO_CONTRACT
#define NO_CONTRACT(v) __asm__("" : "+w"(v))
#endif

/* nb blocks of x into y (nb · the type's values floats) */
typedef void (*block_to_f32) (float *y, const uint8_t *x, uint64_t nb);

typedef struct block_type
{
	uint32_t	type;
	const char *name;
	uint32_t	values;
	uint32_t	bytes;
	block_to_f32 to_f32;		/* NULL: tfm reads no tensor of this type */
} block_type;

static void f32(float *y, const uint8_t *x, uint64_t nb);
static void f16(float *y, const uint8_t *x, uint64_t nb);
static void bf16(float *y, const uint8_t *x, uint64_t nb);
static void q8_0(float *y, const uint8_t *x, uint64_t nb);
static void q4_0(float *y, const uint8_t *x, uint64_t nb);
static void q4_k(float *y, const uint8_t *x, uint64_t nb);
static void q5_k(float *y, const uint8_t *x, uint64_t nb);
static void q6_k(float *y, const uint8_t *x, uint64_t nb);

/* ggml's type numbers, block sizes (values), block bytes and the conversions tfm has */
static const block_type types[] = {
	{0, "F32", 1, 4, f32}, {1, "F16", 1, 2, f16}, {2, "Q4_0", 32, 18, q4_0},
	{3, "Q4_1", 32, 20, NULL}, {6, "Q5_0", 32, 22, NULL}, {7, "Q5_1", 32, 24, NULL},
	{8, "Q8_0", 32, 34, q8_0}, {9, "Q8_1", 32, 36, NULL}, {10, "Q2_K", 256, 84, NULL},
	{11, "Q3_K", 256, 110, NULL}, {12, "Q4_K", 256, 144, q4_k}, {13, "Q5_K", 256, 176, q5_k},
	{14, "Q6_K", 256, 210, q6_k}, {15, "Q8_K", 256, 292, NULL}, {24, "I8", 1, 1, NULL},
	{25, "I16", 1, 2, NULL}, {26, "I32", 1, 4, NULL}, {27, "I64", 1, 8, NULL},
	{28, "F64", 1, 8, NULL}, {30, "BF16", 1, 2, bf16},
};

static const block_type *
find(uint32_t type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return &types[i];
	return NULL;
}

void
tfm_gguf_block(uint32_t type, uint64_t *values, uint64_t *bytes)
{
	const block_type *b = find(type);

	*values = b ? b->values : 0;
	*bytes = b ? b->bytes : 0;
}

const char *
tfm_gguf_type_name(uint32_t type)
{
	const block_type *b = find(type);

	return b ? b->name : NULL;
}

bool
tfm_gguf_kept(uint32_t type)
{
	/* Q4_0: tfm's int4 blocks; Q8_0, Q4_K, Q5_K, Q6_K: tfm/kquant.h's */
	return type == 2 || type == 8 || type == 12 || type == 13 || type == 14;
}

static uint16_t
le16(const uint8_t *p)
{
	return (uint16_t) (p[0] | p[1] << 8);
}

static float
half(const uint8_t *p)
{
	return tfm_fp16_to_float(le16(p));
}

/* Q8_0: fp16 d, 32 int8: y = q·d */
static void
q8_0(float *y, const uint8_t *x, uint64_t nb)
{
	for (uint64_t i = 0; i < nb; i++, x += 34, y += 32)
	{
		float		d = half(x);

		for (int j = 0; j < 32; j++)
			y[j] = (float) (int8_t) x[2 + j] * d;
	}
}

/* Q4_0: fp16 d, 16 bytes: element j in the low nibble of byte j, j + 16 in its high one */
static void
q4_0(float *y, const uint8_t *x, uint64_t nb)
{
	for (uint64_t i = 0; i < nb; i++, x += 18, y += 32)
	{
		float		d = half(x);

		for (int j = 0; j < 16; j++)
		{
			y[j] = (float) ((x[2 + j] & 0x0F) - 8) * d;
			y[j + 16] = (float) ((x[2 + j] >> 4) - 8) * d;
		}
	}
}

/* the 6-bit scale and min of sub-block j of a Q4_K block (ggml's get_scale_min_k4) */
static void
scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
	if (j < 4)
	{
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	}
	else
	{
		*d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

/*
 * Q4_K: fp16 d, fp16 dmin, 12 bytes of scales and mins, 128 bytes of 4-bit
 * values; Q5_K (five): the same with 32 bytes of fifth bits before the
 * nibbles (value l of sub-block j: bit j of byte l)
 */
static void
q45_k(float *y, const uint8_t *x, uint64_t nb, int five)
{
	for (uint64_t i = 0; i < nb; i++, x += five ? 176 : 144)
	{
		float		d = half(x),
					dmin = half(x + 2);
		const uint8_t *sc = x + 4,
				   *qh = x + 16,
				   *q = x + (five ? 48 : 16);

		for (int j = 0, is = 0; j < 256; j += 64, q += 32, is += 2)
		{
			uint8_t		s,
						m;
			float		d1,
						m1,
						d2,
						m2;

			scale_min_k4(is, sc, &s, &m);
			d1 = d * s;
			m1 = dmin * m;
			scale_min_k4(is + 1, sc, &s, &m);
			d2 = d * s;
			m2 = dmin * m;
			for (int l = 0; l < 32; l++)
			{
				float		v = d1 * (float) ((q[l] & 0xF) + (five ? ((qh[l] >> is) & 1) << 4 : 0));

				NO_CONTRACT(v);
				*y++ = v - m1;
			}
			for (int l = 0; l < 32; l++)
			{
				float		v = d2 * (float) ((q[l] >> 4) + (five ? ((qh[l] >> (is + 1)) & 1) << 4 : 0));

				NO_CONTRACT(v);
				*y++ = v - m2;
			}
		}
	}
}

/* Q6_K: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, fp16 d */
static void
q4_k(float *y, const uint8_t *x, uint64_t nb)
{
	q45_k(y, x, nb, 0);
}

static void
q5_k(float *y, const uint8_t *x, uint64_t nb)
{
	q45_k(y, x, nb, 1);
}

static void
q6_k(float *y, const uint8_t *x, uint64_t nb)
{
	for (uint64_t i = 0; i < nb; i++, x += 210)
	{
		const uint8_t *ql = x,
				   *qh = x + 128;
		const int8_t *sc = (const int8_t *) (x + 192);
		float		d = half(x + 208);

		for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
			for (int l = 0; l < 32; l++)
			{
				int			is = l / 16;
				int			q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32,
							q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32,
							q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
							q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;

				y[l] = d * sc[is] * q1;
				y[l + 32] = d * sc[is + 2] * q2;
				y[l + 64] = d * sc[is + 4] * q3;
				y[l + 96] = d * sc[is + 6] * q4;
			}
	}
}

/* the unquantized types: one value a block */
static void
f32(float *y, const uint8_t *x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
	{
		uint32_t	u = (uint32_t) x[4 * i] | (uint32_t) x[4 * i + 1] << 8 |
			(uint32_t) x[4 * i + 2] << 16 | (uint32_t) x[4 * i + 3] << 24;

		memcpy(&y[i], &u, 4);
	}
}

static void
f16(float *y, const uint8_t *x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] = tfm_fp16_to_float(le16(x + 2 * i));
}

static void
bf16(float *y, const uint8_t *x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] = tfm_bf16_to_float(le16(x + 2 * i));
}

int
tfm_gguf_to_f32(float *out, const uint8_t *src, uint32_t type, uint64_t n)
{
	const block_type *b = find(type);

	if (!b || !b->to_f32)
		return TFM_EUNSUPPORTED;
	b->to_f32(out, src, n / b->values);
	return TFM_OK;
}

tfm_precision
tfm_gguf_type_precision(uint32_t type)
{
	switch (type)
	{
		case TFM_GGML_BF16:
			return TFM_PREC_BF16;
		case TFM_GGML_Q8_0:
		case TFM_GGML_Q4_K:
		case TFM_GGML_Q5_K:
		case TFM_GGML_Q6_K:
			return TFM_PREC_GGUF;
		case TFM_GGML_Q4_0:
			return TFM_PREC_INT4;
		default:				/* F32, F16 */
			return TFM_PREC_FP32;
	}
}
