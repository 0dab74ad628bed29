/*
 * dropout.c — inverted dropout.  Element i is kept when the counter-based
 * hash of (key, i) is at or above p·2³², so the backward pass regenerates
 * the mask instead of storing it, and the mask does not depend on threads.
 * Also the other elementwise buffer work of a training step — residual
 * adds, zeroing, copies — so that it runs on all of the core's threads.
 */
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/rng.h"
#include "../kernels/vecmath.h"

static inline uint32_t
threshold(float p)
{
	double		t = (double) p * 4294967296.0;

	return t >= 4294967295.0 ? 4294967295u : (uint32_t) t;
}

/*
 * Each loop runs over [lo, hi) of the whole buffer; the mask bit of element
 * i is hashed from its absolute index, so splitting the range among threads
 * (PARALLEL_CHUNKS below) changes nothing in the result.
 */
TFM_HOT static void
drop(float *out, const float *inp, size_t lo, size_t hi, uint32_t th, float scale, uint64_t key)
{
	TFM_DROP_LOOP(i, lo, hi, key, 0, bits, out[i] = bits >= th ? inp[i] * scale : 0.0f);
}

TFM_HOT static void
drop_add(float *out, const float *inp, size_t lo, size_t hi, uint32_t th, float scale,
		 uint64_t key)
{
	TFM_DROP_LOOP(i, lo, hi, key, 0, bits, out[i] += bits >= th ? inp[i] * scale : 0.0f);
}

TFM_HOT static void
add(float *out, const float *x, const float *y, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		out[i] = x[i] + y[i];
}

TFM_HOT static void
add_drop(float *out, const float *x, const float *y, size_t lo, size_t hi, uint32_t th,
		 float scale, uint64_t key)
{
	TFM_DROP_LOOP(i, lo, hi, key, 0, bits, out[i] = x[i] + (bits >= th ? y[i] * scale : 0.0f));
}

TFM_HOT static void
accumulate(float *out, const float *inp, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		out[i] += inp[i];
}

/* run STMT for [lo, hi) over chunks of n on the core's threads */
#define PARALLEL_CHUNKS(n, STMT) \
	do { \
		size_t		n_ = (n), \
					chunks_ = (n_ + TFM_EW_CHUNK - 1) / TFM_EW_CHUNK; \
		_Pragma("omp parallel for num_threads(tfm_get_threads()) if(chunks_ > 1) schedule(static)") \
		for (size_t k_ = 0; k_ < chunks_; k_++) \
		{ \
			size_t		lo = k_ * TFM_EW_CHUNK, \
						hi = lo + TFM_EW_CHUNK < n_ ? lo + TFM_EW_CHUNK : n_; \
			STMT; \
		} \
	} while (0)

void
tfm_dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t key)
{
	uint32_t	th = threshold(p);
	float		scale = 1.0f / (1.0f - p);

	if (p <= 0.0f)
	{
		if (out != inp)
			tfm_copy(out, inp, n);
		return;
	}
	PARALLEL_CHUNKS(n, drop(out, inp, lo, hi, th, scale, key));
}

void
tfm_dropout_backward(float *dinp, const float *dout, size_t n, float p, uint64_t key)
{
	uint32_t	th = threshold(p);
	float		scale = 1.0f / (1.0f - p);

	if (p <= 0.0f)
		PARALLEL_CHUNKS(n, accumulate(dinp, dout, lo, hi));
	else
		PARALLEL_CHUNKS(n, drop_add(dinp, dout, lo, hi, th, scale, key));
}

void
tfm_residual_forward(float *out, const float *x, const float *y, size_t n,
					 float p, uint64_t key)
{
	uint32_t	th = threshold(p);
	float		scale = 1.0f / (1.0f - p);

	if (p <= 0.0f)
		PARALLEL_CHUNKS(n, add(out, x, y, lo, hi));
	else
		PARALLEL_CHUNKS(n, add_drop(out, x, y, lo, hi, th, scale, key));
}

void
tfm_residual_backward(float *dx, float *dy, const float *dout, size_t n,
					  float p, uint64_t key)
{
	if (dx)
		PARALLEL_CHUNKS(n, accumulate(dx, dout, lo, hi));
	if (dy)
		tfm_dropout_backward(dy, dout, n, p, key);
}

/* ---- buffers: zero, copy, add, on the core's threads ---- */

void
tfm_zero(float *x, size_t n)
{
	PARALLEL_CHUNKS(n, memset(x + lo, 0, (hi - lo) * sizeof(float)));
}

void
tfm_copy(float *dst, const float *src, size_t n)
{
	PARALLEL_CHUNKS(n, memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float)));
}

void
tfm_add_into(float *dst, const float *src, size_t n)
{
	PARALLEL_CHUNKS(n, accumulate(dst, src, lo, hi));
}

/* x *= s (s = 1 leaves x untouched: T5's tied head scale is the only other) */
static void
scale_range(float *x, float s, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		x[i] *= s;
}

void
tfm_scale(float *x, size_t n, float s)
{
	if (s != 1.0f)
		PARALLEL_CHUNKS(n, scale_range(x, s, lo, hi));
}
