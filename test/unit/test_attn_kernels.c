/*
 * test_attn_kernels.c — attention's inner kernels (src/core/layers/
 * attention_kernels.c) on whichever path this CPU runs (make unittest runs
 * it again with TFM_ATTN_KERNELS=avx2 and with TFM_NO_AVX512_ATTN=1, the
 * portable path):
 *
 *   - tfm_attn_gemm against a double-precision product at every shape
 *     edge (rows 1-33 around the 12- and 16-row groups, 1-100 columns
 *     around the 16- and 32-lane vectors, K 1-64, padded leading
 *     dimensions, alpha; A by rows or transposed; O = or O +=), equal bit
 *     for bit to BLIS's micro-kernel on packed panels (what the portable
 *     path runs: fp32 outputs do not depend on the path), and that nothing
 *     outside the m × n result moves;
 *   - tfm_attn_copy_kv: Kᵀ and V exactly, tails of 16 in both directions;
 *   - the softmax row against double: padding, fewer visible keys than
 *     the row, a row that sees nothing, large and -inf scores;
 *   - the whole forward pass with the attention weights kept (training)
 *     and without them (inference, one block of weights at a time): the
 *     same outputs bit for bit, causal or not, with padding, grouped
 *     heads, one query (decoding) and head sizes 8 to 64; and against a
 *     double-precision reference;
 *   - the dropout bits in 32-bit runs equal tfm_drop_bits, across 2^32;
 *   - the bf16 product with its epilogue (bias, ReLU/GELU in the blocks)
 *     against the unfused product, bias and activation.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"
#include "../src/core/kernels/attention/attention_kernels.h"

static float
urand(tfm_rng *r)
{
	return 2.0f * tfm_rng_uniform(r) - 1.0f;
}

static void
fill(tfm_rng *r, float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = urand(r);
}

static void
test_gemm(void)
{
	static const int ms[] = {1, 2, 5, 11, 12, 13, 16, 17, 24, 32, 33};
	static const int ns[] = {1, 7, 15, 16, 17, 31, 32, 33, 48, 64, 100};
	static const int ks[] = {1, 3, 16, 17, 64, 300};
	tfm_rng		r;
	int			bad = 0,
				differ = 0,
				ran = 0;

	tfm_rng_seed(&r, 11);
	if (!tfm_attn_gemm_ok())
	{
		float		o = 7.0f,
					a = 1.0f,
					b = 1.0f;

		CHECK(!tfm_attn_gemm(&o, 1, &a, 1, 1, 1, 1, &b, 1, 1, 1.0f, false) && o == 7.0f,
			  "portable path: tfm_attn_gemm declines and writes nothing");
		return;
	}
	for (size_t im = 0; im < sizeof(ms) / sizeof(ms[0]); im++)
		for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++)
			for (size_t ik = 0; ik < sizeof(ks) / sizeof(ks[0]); ik++)
				for (int mode = 0; mode < 4; mode++)
				{
					/* mode bit 0: A transposed (read down its columns); bit 1: O += */
					int			m = ms[im],
								n = ns[in],
								k = ks[ik],
								lda = (mode & 1) ? m + 3 : k + 3,
								ldb = n + 5,
								ldo = n + 7;
					bool		tr = mode & 1,
								add = mode & 2;
					ptrdiff_t	rsa = tr ? 1 : lda,
								csa = tr ? lda : 1;
					float	   *a = malloc(sizeof(float) * (tr ? k : m) * lda),
							   *b = malloc(sizeof(float) * k * ldb),
							   *o = malloc(sizeof(float) * (m + 1) * ldo),
							   *o0 = malloc(sizeof(float) * (m + 1) * ldo);
					float		alpha = 0.25f + (float) k / 7;

					fill(&r, a, (size_t) (tr ? k : m) * lda);
					fill(&r, b, (size_t) k * ldb);
					for (int i = 0; i < (m + 1) * ldo; i++)
						o0[i] = o[i] = i / ldo < m && i % ldo < n && add ? urand(&r) : 12345.0f;
					ran++;
					CHECK(tfm_attn_gemm(o, ldo, a, rsa, csa, m, k, b, ldb, n, alpha, add),
						  "gemm %dx%dx%d runs", m, n, k);
					for (int i = 0; i < m + 1; i++)
						for (int j = 0; j < ldo; j++)
						{
							double		ref = 0.0,
										mag = 0.0;
							float		got = o[(size_t) i * ldo + j];

							if (i >= m || j >= n)
							{
								bad += got != 12345.0f;
								continue;
							}
							for (int p = 0; p < k; p++)
							{
								double		t = (double) a[i * rsa + p * csa] * b[(size_t) p * ldb + j];

								ref += t;
								mag += fabs(t);
							}
							ref *= alpha;
							if (add)
								ref += o0[(size_t) i * ldo + j];
							if (fabs(got - ref) > 1e-6 * (alpha * mag + 1.0) + 1e-7)
							{
								if (bad < 5)
									fprintf(stderr, "gemm %dx%dx%d mode %d [%d][%d]: %g vs %g\n",
											m, n, k, mode, i, j, got, ref);
								bad++;
							}
						}
					{
						/* BLIS's micro-kernel on the same operands: the same bits */
						float	   *pa = malloc(sizeof(float) * (tfm_panels_floats(m, k) + 64)),
								   *pb = malloc(sizeof(float) * (tfm_panels_floats(n, k) + 64));
						tfm_panels	ap = tfm_pack_left(pa, m, k, a, rsa, csa),
									bp = tfm_pack_right(pb, k, n, b, ldb, 1);

						tfm_gemm_panels(m, n, k, alpha, &ap, 0, &bp, 0, add ? 1.0f : 0.0f, o0, ldo, 1);
						for (int i = 0; i < m; i++)
							differ += memcmp(o + (size_t) i * ldo, o0 + (size_t) i * ldo,
											 sizeof(float) * n) != 0;
						free(pa);
						free(pb);
					}
					free(a);
					free(b);
					free(o);
					free(o0);
				}
	CHECK(bad == 0, "tfm_attn_gemm: %d of %d shapes' elements off the double product or "
		  "written outside the result", bad, ran);
	CHECK(differ == 0, "tfm_attn_gemm (%s): %d rows not BLIS's micro-kernel's bits (%s)",
		  tfm_attn_kernels(), differ, tfm_blas_arch());
}

static void
test_copy_kv(void)
{
	static const int Ts[] = {1, 15, 16, 17, 40};
	static const int ss[] = {8, 16, 24, 32, 64};
	tfm_rng		r;
	int			bad = 0;

	if (!tfm_attn_gemm_ok())
		return;
	tfm_rng_seed(&r, 12);
	for (size_t it = 0; it < sizeof(Ts) / sizeof(Ts[0]); it++)
		for (size_t is = 0; is < sizeof(ss) / sizeof(ss[0]); is++)
		{
			int			T = Ts[it],
						s = ss[is],
						rs = 3 * s + 4;
			float	   *k = malloc(sizeof(float) * T * rs),
					   *v = malloc(sizeof(float) * T * rs),
					   *kt = malloc(sizeof(float) * T * s),
					   *vc = malloc(sizeof(float) * T * s);

			fill(&r, k, (size_t) T * rs);
			fill(&r, v, (size_t) T * rs);
			tfm_attn_copy_kv(kt, vc, k, rs, v, rs, T, s);
			for (int t = 0; t < T; t++)
				for (int c = 0; c < s; c++)
					bad += kt[(size_t) c * T + t] != k[(size_t) t * rs + c] ||
						vc[(size_t) t * s + c] != v[(size_t) t * rs + c];
			free(k);
			free(v);
			free(kt);
			free(vc);
		}
	CHECK(bad == 0, "tfm_attn_copy_kv: %d values not copied exactly", bad);
}

static void
test_softmax(bool lowp)
{
	tfm_rng		r;
	int			bad = 0;

	tfm_rng_seed(&r, 13);
	for (int Tk = 1; Tk <= 70; Tk += 3)
		for (int nv = 0; nv <= Tk; nv += (Tk / 5) + 1)
			for (int with_pad = 0; with_pad < 2; with_pad++)
			{
				float		row[80];
				double		ref[80],
							mx = -INFINITY,
							sum = 0.0;
				uint8_t		pad[80];

				for (int c = 0; c < Tk; c++)
				{
					row[c] = 30.0f * urand(&r);
					pad[c] = with_pad && tfm_rng_uniform(&r) < 0.3f;
				}
				if (Tk > 3)
					row[2] = -INFINITY;
				for (int c = 0; c < nv; c++)
					if (!pad[c] && row[c] > mx)
						mx = row[c];
				for (int c = 0; c < Tk; c++)
				{
					ref[c] = c < nv && !pad[c] && mx > -INFINITY ? exp(row[c] - mx) : 0.0;
					sum += ref[c];
				}
				tfm_attn_softmax_row(row, with_pad ? pad : NULL, nv, Tk, lowp);
				for (int c = 0; c < Tk; c++)
				{
					double		want = sum > 0 ? ref[c] / sum : 0.0;

					if (!(fabs(row[c] - want) <= 2e-6 * want + 1e-12) ||
						(want == 0.0 && row[c] != 0.0f))
					{
						if (bad < 5)
							fprintf(stderr, "softmax Tk %d nv %d pad %d [%d]: %g vs %g\n",
									Tk, nv, with_pad, c, row[c], want);
						bad++;
					}
				}
			}
	CHECK(bad == 0, "softmax rows (%s): %d weights off the double reference",
		  lowp ? "bf16/int8 pass" : "fp32 pass", bad);
}

/* out = attention over q, k, v as in tfm_attention_forward, in double */
static void
attention_ref(double *out, const float *q, const float *k, const float *v, const uint8_t *pad,
			  const tfm_attn_shape *sh)
{
	int			group = sh->kvh > 0 ? sh->h / sh->kvh : 1;
	double	   *w = malloc(sizeof(double) * sh->Tk);

	for (int b = 0; b < sh->B; b++)
		for (int j = 0; j < sh->h; j++)
			for (int r = 0; r < sh->Tq; r++)
			{
				int			nv = sh->causal ? sh->Tk - sh->Tq + r + 1 : sh->Tk,
							jk = j / group;
				double		mx = -INFINITY,
							sum = 0.0;
				const float *qr = q + ((size_t) b * sh->Tq + r) * sh->rsq + (size_t) j * sh->s;

				for (int c = 0; c < sh->Tk; c++)
				{
					const float *kc = k + ((size_t) b * sh->Tk + c) * sh->rsk + (size_t) jk * sh->s;
					double		dot = 0.0;

					if (c >= nv || (pad && pad[(size_t) b * sh->Tk + c]))
					{
						w[c] = -INFINITY;
						continue;
					}
					for (int i = 0; i < sh->s; i++)
						dot += (double) qr[i] * kc[i];
					w[c] = dot / sqrt((double) sh->s);
					mx = w[c] > mx ? w[c] : mx;
				}
				for (int c = 0; c < sh->Tk; c++)
				{
					w[c] = w[c] == -INFINITY ? 0.0 : exp(w[c] - mx);
					sum += w[c];
				}
				for (int i = 0; i < sh->s; i++)
				{
					double		acc = 0.0;

					for (int c = 0; c < sh->Tk; c++)
						acc += w[c] * v[((size_t) b * sh->Tk + c) * sh->rsv + (size_t) jk * sh->s + i];
					out[((size_t) b * sh->Tq + r) * sh->rso + (size_t) j * sh->s + i] =
						sum > 0 ? acc / sum : 0.0;
				}
			}
	free(w);
}

static void
test_forward(void)
{
	static const struct
	{
		int			B,
					Tq,
					Tk,
					h,
					kvh,
					s;
		bool		causal,
					pad;
		float		drop;			/* attention dropout: then no reference, kept = not kept only */
	}			cases[] = {
		{2, 256, 256, 8, 0, 16, false, true},	/* the reference classifier's shape */
		{2, 70, 70, 4, 0, 16, false, true},
		{2, 70, 70, 4, 0, 16, true, false},
		{1, 45, 45, 2, 0, 32, true, true},
		{3, 33, 33, 4, 2, 8, false, true},	/* grouped heads, head size 8 */
		{1, 40, 40, 2, 0, 64, true, false},
		{2, 17, 17, 3, 0, 24, false, true},
		{2, 1, 29, 4, 0, 16, true, true},	/* one query over a cache: decoding */
		{1, 5, 37, 2, 0, 32, true, false},	/* fewer queries than keys */
		{1, 70, 20, 2, 0, 16, true, false},	/* more queries than keys: whole blocks see none */
		{2, 70, 70, 4, 0, 16, false, true, 0.1f},	/* dropout on the weights */
		{1, 45, 45, 2, 0, 32, true, true, 0.2f},
	};
	tfm_rng		r;

	tfm_rng_seed(&r, 14);
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		tfm_attn_shape sh;
		int			d,
					kvd;
		size_t		nq,
					nk,
					no,
					bad_ref = 0;
		float	   *q,
				   *kv,
				   *o1,
				   *o2,
				   *probs,
				   *scratch;
		double	   *ref;
		uint8_t    *pad = NULL;
		char		what[128];

		memset(&sh, 0, sizeof(sh));
		sh.B = cases[ci].B;
		sh.Tq = cases[ci].Tq;
		sh.Tk = cases[ci].Tk;
		sh.h = cases[ci].h;
		sh.kvh = cases[ci].kvh;
		sh.s = cases[ci].s;
		sh.causal = cases[ci].causal;
		sh.p_drop = cases[ci].drop;
		sh.key = 0xC0FFEE + ci;
		d = sh.h * sh.s;
		kvd = (sh.kvh > 0 ? sh.kvh : sh.h) * sh.s;
		sh.rsq = sh.rso = d;
		sh.rsk = sh.rsv = 2 * kvd;	/* k and v interleaved in one buffer, as after a fused product */
		nq = (size_t) sh.B * sh.Tq * d;
		nk = (size_t) sh.B * sh.Tk * 2 * kvd;
		no = nq;
		q = malloc(sizeof(float) * nq);
		kv = malloc(sizeof(float) * nk);
		o1 = malloc(sizeof(float) * no);
		o2 = malloc(sizeof(float) * no);
		ref = malloc(sizeof(double) * no);
		probs = malloc(sizeof(float) * sh.B * sh.h * sh.Tq * sh.Tk);
		scratch = malloc(tfm_attention_scratch(&sh, tfm_get_threads()) * sizeof(float));
		fill(&r, q, nq);
		for (size_t i = 0; i < nq; i++)
			q[i] *= 3.0f;
		fill(&r, kv, nk);
		if (cases[ci].pad)
		{
			pad = calloc((size_t) sh.B * sh.Tk, 1);
			for (int b = 0; b < sh.B; b++)
				for (int c = sh.Tk - 1 - 3 * b; c < sh.Tk; c++)
					pad[(size_t) b * sh.Tk + c] = 1;
		}
		tfm_attention_forward(o1, probs, q, kv, kv + kvd, pad, &sh, scratch);
		tfm_attention_forward(o2, NULL, q, kv, kv + kvd, pad, &sh, scratch);
		{
			/* and on two threads: the same bits (each pair runs on one thread) */
			int			was = tfm_get_threads();
			float	   *o3 = malloc(sizeof(float) * no),
					   *scratch2 = malloc(tfm_attention_scratch(&sh, 2) * sizeof(float));

			tfm_set_threads(2);
			tfm_attention_forward(o3, NULL, q, kv, kv + kvd, pad, &sh, scratch2);
			tfm_set_threads(was);
			CHECK(memcmp(o2, o3, sizeof(float) * no) == 0,
				  "case %zu: the same outputs on 1 and 2 threads", ci);
			free(o3);
			free(scratch2);
		}
		attention_ref(ref, q, kv, kv + kvd, pad, &sh);
		for (size_t i = 0; i < no && sh.p_drop == 0.0f; i++)
			if (fabs(o1[i] - ref[i]) > 1e-5 + 1e-5 * fabs(ref[i]))
				bad_ref++;
		snprintf(what, sizeof(what), "B %d Tq %d Tk %d h %d kvh %d s %d%s%s drop %.1f",
				 sh.B, sh.Tq, sh.Tk, sh.h, sh.kvh, sh.s, sh.causal ? " causal" : "",
				 pad ? " padded" : "", sh.p_drop);
		CHECK(bad_ref == 0, "%s: %zu outputs off the double reference", what, bad_ref);
		CHECK(memcmp(o1, o2, sizeof(float) * no) == 0,
			  "%s: the same outputs with and without the weights kept", what);
		free(q);
		free(kv);
		free(o1);
		free(o2);
		free(ref);
		free(probs);
		free(scratch);
		free(pad);
	}
}

static void
test_bf16_epilogue(void)
{
	static const int Ms[] = {3, 9, 32, 45, 96};
	static const int Ns[] = {7, 32, 50, 128};
	static const int Ks[] = {16, 33, 128, 800};
	tfm_rng		r;

	tfm_rng_seed(&r, 15);
	for (size_t im = 0; im < sizeof(Ms) / sizeof(Ms[0]); im++)
		for (size_t in = 0; in < sizeof(Ns) / sizeof(Ns[0]); in++)
			for (size_t ik = 0; ik < sizeof(Ks) / sizeof(Ks[0]); ik++)
				for (int act = 0; act < 4; act++)
				{
					int			M = Ms[im],
								N = Ns[in],
								K = Ks[ik];
					float	   *A = malloc(sizeof(float) * M * K),
							   *W = malloc(sizeof(float) * K * N),
							   *bias = malloc(sizeof(float) * N),
							   *c1 = malloc(sizeof(float) * M * N),
							   *c2 = malloc(sizeof(float) * M * N);
					void	   *pk = malloc(tfm_bf16_pack_bytes(K, N)),
							   *work = malloc(tfm_bf16_work_bytes(M > TFM_LOWP_GEMV_ROWS ? M : TFM_LOWP_GEMV_ROWS + 1, K));	/* the rows path's too */
					tfm_bf16_weights bw;
					/* ReLU, GELU, GELU (tanh), none */
					tfm_row_fn	fn = act == 3 ? NULL : tfm_activation_fn((tfm_activation) act);
					char		what[96];
					/* sums in K blocks against all of K at once: rounding grows with K */
					double		tol = K > 128 ? 2e-5 : 1e-6;

					fill(&r, A, (size_t) M * K);
					fill(&r, W, (size_t) K * N);
					fill(&r, bias, N);
					tfm_bf16_pack(&bw, pk, W, N, 1, K, N);
					for (int i = 0; i < M; i++)
						memcpy(c1 + (size_t) i * N, bias, sizeof(float) * N);
					tfm_bf16_gemm(M, N, K, 1.0f, A, K, &bw, 1.0f, c1, N, work);
					if (fn)
						fn(c1, c1, (size_t) M * N);
					tfm_bf16_gemm_fused(M, N, K, A, K, &bw, bias, fn, c2, N, work);
					snprintf(what, sizeof(what), "bf16 fused %dx%dx%d act %d (%s)", M, N, K, act,
							 tfm_lowp_bf16_kernel());
					check_close(what, c2, c1, (size_t) M * N, tol, tol);
					/* the rows path (every kernel's bits): the bias set in C's blocks as they start */
					tfm_bf16_gemm_rows(M, N, K, A, K, &bw, bias, fn, c2, N, work);
					/* (up to TFM_LOWP_GEMV_ROWS rows c1 went the matrix-vector way, all of K at once) */
					if (M > TFM_LOWP_GEMV_ROWS && strcmp(tfm_lowp_bf16_kernel(), "amx") != 0)
						CHECK(memcmp(c1, c2, sizeof(float) * M * N) == 0,
							  "bf16 rows %dx%dx%d act %d (%s): not the bits of bias + product",
							  M, N, K, act, tfm_lowp_bf16_kernel());
					else
						check_close(what, c2, c1, (size_t) M * N, tol, tol);
					/* a row's bits whatever rows share the call: the last rows, and the last one, alone */
					for (int i0 = M / 2; i0 < M; i0 = i0 == M - 1 ? M : M - 1)
					{
						float	   *c3 = malloc(sizeof(float) * (M - i0) * N);

						tfm_bf16_gemm_rows(M - i0, N, K, A + (size_t) i0 * K, K, &bw, bias, fn, c3, N, work);
						CHECK(memcmp(c3, c2 + (size_t) i0 * N, sizeof(float) * (M - i0) * N) == 0,
							  "bf16 rows %dx%dx%d act %d (%s): rows %d.. alone differ from the same rows of %d",
							  M, N, K, act, tfm_lowp_bf16_kernel(), i0, M);
						free(c3);
					}
					free(A);
					free(W);
					free(bias);
					free(c1);
					free(c2);
					free(pk);
					free(work);
				}
}

/*
 * tfm_int8_gemm_fused (bias, activation) against the bias set first, the
 * product with beta 1 and the activation over each row after: the same
 * bits, on AMX-INT8's blocks (K a multiple of 64), on VNNI's (AMX off)
 * and between the two
 */
static void
test_int8_epilogue(void)
{
	static const int Ms[] = {3, 9, 33, 70};
	static const int Ns[] = {7, 32, 50};
	static const int Ks[] = {64, 100, 256};
	const bool	amx = strcmp(tfm_lowp_int8_kernel(), "amx") == 0;
	tfm_rng		r;

	tfm_rng_seed(&r, 16);
	for (size_t im = 0; im < sizeof(Ms) / sizeof(Ms[0]); im++)
		for (size_t in = 0; in < sizeof(Ns) / sizeof(Ns[0]); in++)
			for (size_t ik = 0; ik < sizeof(Ks) / sizeof(Ks[0]); ik++)
				for (int act = 0; act < 4; act++)
				{
					int			M = Ms[im],
								N = Ns[in],
								K = Ks[ik];
					float	   *A = malloc(sizeof(float) * M * K),
							   *W = malloc(sizeof(float) * K * N),
							   *bias = malloc(sizeof(float) * N),
							   *c1 = malloc(sizeof(float) * M * N),
							   *c2 = malloc(sizeof(float) * M * N);
					void	   *pk = malloc(tfm_int8_pack_bytes(K, N)),
							   *work = malloc(tfm_int8_work_bytes(M, K));
					tfm_int8_weights iw;
					tfm_row_fn	fn = act == 3 ? NULL : tfm_activation_fn((tfm_activation) act);

					fill(&r, A, (size_t) M * K);
					fill(&r, W, (size_t) K * N);
					fill(&r, bias, N);
					tfm_int8_pack(&iw, pk, W, N, 1, K, N);
					for (int pass = 0; pass < (amx ? 2 : 1); pass++)
					{
						tfm_lowp_force_noamx(pass == 1);
						for (int i = 0; i < M; i++)
							memcpy(c1 + (size_t) i * N, bias, sizeof(float) * N);
						tfm_int8_gemm(M, N, K, 1.0f, A, K, &iw, 1.0f, c1, N, work);
						if (fn)
							for (int i = 0; i < M; i++)
								fn(c1 + (size_t) i * N, c1 + (size_t) i * N, (size_t) N);
						if (pass == 1)
							CHECK(memcmp(c1, c2, sizeof(float) * M * N) == 0,
								  "int8 %dx%dx%d act %d: AMX's bits and VNNI's differ", M, N, K, act);
						tfm_int8_gemm_fused(M, N, K, A, K, &iw, bias, fn, c2, N, work);
						CHECK(memcmp(c1, c2, sizeof(float) * M * N) == 0,
							  "int8 fused %dx%dx%d act %d (%s): not the bits of bias + product",
							  M, N, K, act, tfm_lowp_int8_kernel());
					}
					tfm_lowp_force_noamx(false);
					free(A);
					free(W);
					free(bias);
					free(c1);
					free(c2);
					free(pk);
					free(work);
				}
}

/* the split dropout hash: the same bits as tfm_drop_bits, across the 2^32 boundary */
static void
test_drop_loop(void)
{
	const uint64_t key = 0x0123456789ABCDEFULL,
				off = 0xFFFFFFF0ULL;
	int			bad = 0,
				seen = 0;

	TFM_DROP_LOOP(i, 0, 40, key, off, bits,
				  {
					  seen++;
					  bad += bits != tfm_drop_bits(key, off + i);
				  });
	CHECK(seen == 40 && bad == 0, "TFM_DROP_LOOP over the 2^32 boundary: %d of %d bits differ",
		  bad, seen);
}

int
main(void)
{
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "BLIS: %s\n", err);
		return 1;
	}
	printf("  attention kernels: %s, BLIS kernels %s\n", tfm_attn_kernels(), tfm_blas_arch());
	test_drop_loop();
	test_gemm();
	test_copy_kv();
	test_softmax(false);
	test_softmax(true);
	test_forward();
	test_bf16_epilogue();
	test_int8_epilogue();
	return check_summary("test_attn_kernels");
}
