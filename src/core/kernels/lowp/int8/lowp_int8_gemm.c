/*
 * lowp_int8_gemm.c — C = alpha · A · W + beta · C with W quantized per
 * column (tfm_int8_pack) and A quantized here, per row, into the caller's
 * work buffer (the rows' scales, then A's panels of unsigned bytes
 * a + 128); the kernel is the dispatched one (lowp_dispatch_x86.c,
 * lowp_dispatch_arm.c).
 *
 * The loops are lowp_drive.c's, without K blocking: each kernel call
 * sums all of K in int32 before scaling (so every path gives the same
 * bits).  A task's A block (LOWP_MC rows × K bytes) and one weight panel
 * (32 × K bytes) stay in L2 for the model's K (≤ a few thousand).
 */
#include "tfm/blas.h"
#include "../lowp_internal.h"
#include "../../vecmath.h"

static size_t
scales_bytes(int M)
{
	return lowp_round_up(lowp_round_up(M > 0 ? M : 1, LOWP_MR) * sizeof(float), LOWP_ALIGN);
}

size_t
tfm_int8_work_bytes(int M, int K)
{
	size_t		rows = M <= TFM_LOWP_GEMV_ROWS ? (size_t) (M > 0 ? M : 1) :
		lowp_round_up(M, LOWP_MR),
				quads = lowp_round_up(K > 0 ? K : 1, 4) / 4;

	return scales_bytes(M) + lowp_round_up(rows * quads * sizeof(uint32_t), LOWP_ALIGN);
}

#define PACK_CHUNK 1024		/* activations quantized at a time, contiguously */

/*
 * rows [r0, r0 + h) of A quantized into one panel of height h (rows past M
 * and k past K: zero activations, i.e. bytes 128); their scales to rs[].
 * Each row is quantized PACK_CHUNK values at a time into a contiguous
 * buffer (a loop the compiler vectorizes), then spread to its panel slots.
 */
TFM_HOT static void
pack_panel(uint32_t *restrict dst, float *rs, int h, const float *A, ptrdiff_t lda,
		   int M, int K, int r0)
{
	int			quads = (K + 3) / 4;
	uint32_t	buf[PACK_CHUNK / 4];
	uint8_t    *b = (uint8_t *) buf;

	for (int r = 0; r < h; r++)
	{
		const float *x = A + (size_t) (r0 + r) * lda;
		float		mx = 0.0f,
					s;

		if (r0 + r >= M)
		{
			for (int p = 0; p < quads; p++)
				dst[(size_t) p * h + r] = 0x80808080u;
			rs[r] = 0.0f;
			continue;
		}
		for (int k = 0; k < K; k++)
		{
			float		v = __builtin_fabsf(x[k]);

			mx = v > mx ? v : mx;
		}
		s = mx / 127.0f;
		rs[r] = s;
		for (int k0 = 0; k0 < quads * 4; k0 += PACK_CHUNK)
		{
			int			n = quads * 4 - k0 < PACK_CHUNK ? quads * 4 - k0 : PACK_CHUNK,
						real = K - k0 < n ? K - k0 : n;

			if (s > 0.0f)
				for (int k = 0; k < real; k++)
					b[k] = (uint8_t) (lowp_quantize(x[k0 + k], s) + 128);
			else
				for (int k = 0; k < real; k++)
					b[k] = 128;
			for (int k = real; k < n; k++)
				b[k] = 128;
			for (int p = 0; p < n / 4; p++)
				dst[(size_t) (k0 / 4 + p) * h + r] = buf[p];
		}
	}
}

/* an int8 product for lowp_gemm_drive */
typedef struct int8_job
{
	lowp_gemm_job base;
	lowp_int8_kernel kernel;
	const float *A;
	ptrdiff_t	lda;
	const tfm_int8_weights *W;
	float	   *rs;				/* A's row scales */
} int8_job;

static void
int8_pack(const lowp_gemm_job *job, int r0, int h)
{
	const int8_job *q = (const int8_job *) job;

	pack_panel(job->a + (size_t) r0 * job->slots, q->rs + r0, h, q->A, q->lda,
			   job->pr.M, job->pr.K, r0);
}

/* one block takes all of K (kblock = slots: k0 is 0) */
static void
int8_block(const lowp_gemm_job *job, int h, int i, int m, int j, int n, int k0, int kc)
{
	const int8_job *q = (const int8_job *) job;
	const lowp_product *pr = &job->pr;

	(void) k0;
	q->kernel(kc, job->a + (size_t) i * job->slots, h,
			  (const uint32_t *) q->W->data + (size_t) j * job->slots,
			  pr->C + (size_t) i * pr->ldc + j, pr->ldc, m, n, pr->alpha, q->rs + i,
			  q->W->scale + j, q->W->colsum + j, pr->beta);
}

void
tfm_int8_gemm(int M, int N, int K, float alpha,
			  const float *A, ptrdiff_t lda,
			  const tfm_int8_weights *W,
			  float beta, float *C, ptrdiff_t ldc, void *work)
{
	int8_job	job = {
		.base = {
			.slots = W->kp / 4,
			.kblock = W->kp / 4,
			.a = (uint32_t *) ((char *) work + scales_bytes(M)),
			.pack = int8_pack,
			.block = int8_block,
		},
		.kernel = lowp_int8_chosen(),
		.A = A, .lda = lda, .W = W,
		.rs = work,
	};

	if (lowp_gemm_trivial(M, N, K, beta, C, ldc))
		return;
	lowp_gemm_drive(&job.base, M, N, K, alpha, beta, C, ldc);
}
