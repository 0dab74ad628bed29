/*
 * lowp_int4_quant.c — int4 quantization: weights into GGUF Q4_0 blocks
 * exactly as ggml's quantize_row_q4_0_ref rounds them, stored interleaved
 * in groups of 16 columns (include/tfm/lowp.h; a column's block written
 * and read in GGUF's form here); activations per block of 32 for the
 * matrix-vector path.
 */
#include <math.h>
#include <string.h>

#include "../lowp_internal.h"

/* the nibbles of every group's blocks; the scales follow them */
static size_t
nibble_bytes(int kb, int groups)
{
	return (size_t) kb * (size_t) groups * LOWP_INT4_GROUP_BLOCK_BYTES;
}

size_t
tfm_int4_pack_bytes(int K, int N)
{
	int			kb = ((K > 0 ? K : 1) + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK,
				groups = ((N > 0 ? N : 1) + TFM_INT4_GROUP - 1) / TFM_INT4_GROUP;

	return lowp_round_up(nibble_bytes(kb, groups) +
						 (size_t) kb * groups * TFM_INT4_GROUP * sizeof(uint16_t), LOWP_ALIGN);
}

void
tfm_int4_view(tfm_int4_weights *w, void *buf, int K, int N)
{
	int			kb = K > 0 ? (K + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK : 0,
				groups = N > 0 ? (N + TFM_INT4_GROUP - 1) / TFM_INT4_GROUP : 0;

	*w = (tfm_int4_weights) {buf, (uint16_t *) ((uint8_t *) buf + nibble_bytes(kb, groups)),
	K, N, kb, groups};
}

/*
 * block b of column j: byte t of its nibbles at the group's block + 64·(t/4)
 * + 4·(j % 16) + t % 4, its scale at scales[(g·kb + b)·16 + j % 16]
 */
void
tfm_int4_put_block(tfm_int4_weights *w, int j, int b, const uint8_t *blk)
{
	size_t		gb = (size_t) (j / TFM_INT4_GROUP) * w->kb + b;
	uint8_t    *nib = w->data + gb * LOWP_INT4_GROUP_BLOCK_BYTES + 4 * (j % TFM_INT4_GROUP);

	memcpy(&w->scales[gb * TFM_INT4_GROUP + j % TFM_INT4_GROUP], blk, 2);
	for (int i = 0; i < 4; i++)
		memcpy(nib + 64 * i, blk + 2 + 4 * i, 4);
}

void
tfm_int4_get_block(const tfm_int4_weights *w, int j, int b, uint8_t *blk)
{
	size_t		gb = (size_t) (j / TFM_INT4_GROUP) * w->kb + b;
	const uint8_t *nib = w->data + gb * LOWP_INT4_GROUP_BLOCK_BYTES + 4 * (j % TFM_INT4_GROUP);

	memcpy(blk, &w->scales[gb * TFM_INT4_GROUP + j % TFM_INT4_GROUP], 2);
	for (int i = 0; i < 4; i++)
		memcpy(blk + 2 + 4 * i, nib + 64 * i, 4);
}

/* one block of 32 values (past K: zeros) as Q4_0 */
static void
quantize_block(uint8_t *blk, const float *x)
{
	float		amax = 0.0f,
				max = 0.0f,
				d,
				id;
	uint16_t	h;

	for (int t = 0; t < TFM_INT4_BLOCK; t++)
		if (fabsf(x[t]) > amax)
		{
			amax = fabsf(x[t]);
			max = x[t];
		}
	d = max / -8.0f;
	id = d != 0.0f ? 1.0f / d : 0.0f;
	h = tfm_fp16_from_float(d);
	memcpy(blk, &h, 2);
	for (int t = 0; t < 16; t++)
	{
		float		v0 = x[t] * id + 8.5f,
					v1 = x[16 + t] * id + 8.5f;
		int			q0 = v0 >= 15.0f ? 15 : v0 > 0.0f ? (int) v0 : 0,
					q1 = v1 >= 15.0f ? 15 : v1 > 0.0f ? (int) v1 : 0;

		blk[2 + t] = (uint8_t) (q0 | q1 << 4);
	}
}

void
tfm_int4_pack(tfm_int4_weights *w, void *buf, const float *W,
			  ptrdiff_t rs, ptrdiff_t cs, int K, int N)
{
	tfm_int4_view(w, buf, K, N);
	/* the padding columns: scale 0, nibbles 0 (weights 0) */
	memset(buf, 0, tfm_int4_pack_bytes(K, N));
	for (int j = 0; j < N; j++)
		for (int b = 0; b < w->kb; b++)
		{
			float		x[TFM_INT4_BLOCK];
			uint8_t		blk[TFM_INT4_BLOCK_BYTES];

			for (int t = 0; t < TFM_INT4_BLOCK; t++)
			{
				int			k = b * TFM_INT4_BLOCK + t;

				x[t] = k < K ? W[(size_t) k * rs + (size_t) j * cs] : 0.0f;
			}
			quantize_block(blk, x);
			tfm_int4_put_block(w, j, b, blk);
		}
}

float
tfm_int4_weight(const tfm_int4_weights *w, int k, int j)
{
	uint8_t		blk[TFM_INT4_BLOCK_BYTES];
	int			t = k % TFM_INT4_BLOCK;
	uint16_t	h;

	tfm_int4_get_block(w, j, k / TFM_INT4_BLOCK, blk);
	memcpy(&h, blk, 2);
	return tfm_fp16_to_float(h) *
		(float) ((t < 16 ? blk[2 + t] & 0x0F : blk[2 + t - 16] >> 4) - 8);
}

void
tfm_int4_quantize_row(int8_t *q, float *d, const float *x, int n)
{
	int			kb = (n + TFM_INT4_BLOCK - 1) / TFM_INT4_BLOCK;

	for (int b = 0; b < kb; b++)
	{
		int			k0 = b * TFM_INT4_BLOCK,
					len = n - k0 < TFM_INT4_BLOCK ? n - k0 : TFM_INT4_BLOCK;
		float		mx = 0.0f,
					r;

		for (int t = 0; t < len; t++)
			mx = fabsf(x[k0 + t]) > mx ? fabsf(x[k0 + t]) : mx;
		r = mx / 127.0f;
		d[b] = r;
		for (int t = 0; t < TFM_INT4_BLOCK; t++)
			q[k0 + t] = t < len && r > 0.0f ? lowp_quantize(x[k0 + t], r) : 0;
	}
}
