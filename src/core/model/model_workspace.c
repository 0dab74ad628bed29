/*
 * model_workspace.c — the activation workspace of a model's passes
 * (model_forward.c): its size for a batch's shape (the blocks' activations,
 * the stacks, the heads, the low-precision buffers, the arena), counted
 * before anything is allocated, and its reservation, carved into the
 * buffers each pass uses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/layers.h"
#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "tfm/kquant.h"
#include "model_internal.h"

/* ---- workspace ---------------------------------------------------------- */

typedef struct carver
{
	float	   *base;			/* NULL while counting */
	size_t		off;
} carver;

static float *
carve(carver *cv, size_t n)
{
	float	   *p = cv->base ? cv->base + cv->off : NULL;

	/* 64-byte aligned, with 16 floats of slack for BLIS's small-matrix kernels */
	cv->off += ((n + 15) & ~(size_t) 15) + 16;
	return p;
}

/*
 * The activations of one block over N rows (qd: the attention's output
 * width, qkv: its fused projection's), in this order: self-attention,
 * cross-attention over Nx encoder rows (if cross), feed-forward (f1 wide
 * before the activation, f after).
 */
static void
carve_block(carver *cv, tfm_block_acts *a, size_t N, size_t d, size_t qd, size_t qkv,
			size_t f1, size_t f, bool hd, bool probs, size_t n_probs, bool cross, size_t Nx,
			size_t n_cprobs, size_t qkn_w, size_t qkn_h)
{
	a->u1 = carve(cv, N * d);
	/* q/k norms (Qwen3): the queries' and keys' widths before them, their heads' rstd */
	a->qk_pre = qkn_w ? carve(cv, N * qkn_w) : NULL;
	a->qk_rstd = qkn_w ? carve(cv, N * qkn_h) : NULL;
	a->ln1_mean = carve(cv, N);
	a->ln1_rstd = carve(cv, N);
	a->qkv = carve(cv, N * (qkv > 3 * d ? qkv : 3 * d));
	a->probs = probs ? carve(cv, n_probs) : NULL;
	a->cat = carve(cv, N * (qd > d ? qd : d));
	a->r1 = carve(cv, N * d);
	a->x1 = carve(cv, N * d);
	if (cross)
	{
		/* T5's cross-attention is heads · d_kv wide (qd), tfm's d */
		size_t		cw = qd > d ? qd : d;

		a->u2 = carve(cv, N * d);
		a->lnx_mean = carve(cv, N);
		a->lnx_rstd = carve(cv, N);
		a->cq = carve(cv, N * cw);
		a->ckv = carve(cv, Nx * 2 * cw);
		a->cprobs = probs ? carve(cv, n_cprobs) : NULL;
		a->ccat = carve(cv, N * cw);
		a->r2 = carve(cv, N * d);
		a->x2 = carve(cv, N * d);
	}
	a->u3 = carve(cv, N * d);
	a->ln2_mean = carve(cv, N);
	a->ln2_rstd = carve(cv, N);
	a->hpre = carve(cv, N * f1);
	a->hact = carve(cv, N * f);
	a->hd = hd ? carve(cv, N * f) : NULL;
	a->r3 = carve(cv, N * d);
	a->out = carve(cv, N * d);
}

/*
 * A stack's L blocks: each with its own activations, or (shared: activation
 * checkpointing) one block's activations for all of them, every layer
 * keeping only its own output, the next layer's input.
 */
static void
carve_stack(carver *cv, tfm_block_acts *acts, int L, bool shared, size_t N, size_t d,
			size_t qd, size_t qkv, size_t f1, size_t f, bool hd, bool probs, size_t n_probs, bool cross, size_t Nx,
			size_t n_cprobs, size_t qkn_w, size_t qkn_h)
{
	for (int l = 0; l < L; l++)
	{
		if (shared && l > 0)
		{
			acts[l] = acts[0];
			acts[l].out = carve(cv, N * d);
		}
		else
			carve_block(cv, &acts[l], N, d, qd, qkv, f1, f, hd, probs, n_probs, cross, Nx, n_cprobs,
						qkn_w, qkn_h);
	}
}

/*
 * Lay out (or count) every buffer for capacity (B, T, Tt).  The attention
 * weights of every layer (B·h·T² floats each) are kept only for a backward
 * pass or for tfm_model_attention (probs); other passes need none.  ckpt
 * (activation checkpointing): each stack's blocks share one block's
 * activations.
 */
static void
carve_all(const tfm_config *c, tfm_workspace *ws, carver *cv, int B, int T, int Tt,
		  bool training, bool probs, bool ckpt, int threads)
{
	const size_t d = c->d_model,
				f = c->d_ff,
				h = c->heads;
	const int	Td = tfm_model_dec_len(c, T, Tt);
	const size_t Ne = (size_t) B * T,
				Nd = (size_t) B * Td,
				Nmax = Ne > Nd ? Ne : Nd;
	const int	Tmax = T > Td ? T : Td;
	const bool	hd = training && c->dropout > 0.0f;
	const size_t f1 = tfm_config_ff1_width(c);	/* llama: gate | up */
	const size_t qd = tfm_config_q_dim(c),	/* heads · head size: d unless head_size */
				qkv = tfm_config_qkv_width(c),
				dq = qd > d ? qd : d;
	const size_t V = c->task == TFM_TASK_CLASSIFY ? (size_t) c->n_classes :
		(c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? (size_t) c->tgt_vocab : (size_t) c->vocab);

	const size_t qkn_w = c->qk_norm ? (size_t) (qd + tfm_config_kv_dim(c)) : 0,
				qkn_h = (size_t) (c->heads + tfm_config_kv_heads(c));

	carve_stack(cv, ws->enc, c->enc_layers, ckpt, Ne, d, qd, qkv, f1, f, hd, probs,
				(size_t) B * h * T * T, false, 0, 0, 0, 0);
	carve_stack(cv, ws->dec, c->dec_layers, ckpt, Nd, d, qd, qkv, f1, f, hd, probs,
				(size_t) B * h * Td * Td, c->task == TFM_TASK_SEQ2SEQ, Ne,
				(size_t) B * h * Td * T, qkn_w, qkn_h);
	ws->enc_x = carve(cv, Ne * d);
	ws->dec_x = carve(cv, Nd * d);
	ws->enc_pad = (uint8_t *) carve(cv, (Ne + 3) / 4);
	ws->dec_pad = (uint8_t *) carve(cv, (Nd + 3) / 4);
	ws->enc_top = carve(cv, Ne * d);
	ws->enc_lnf_mean = carve(cv, Ne);
	ws->enc_lnf_rstd = carve(cv, Ne);
	ws->dec_top = carve(cv, Nd * d);
	ws->dec_lnf_mean = carve(cv, Nd);
	ws->dec_lnf_rstd = carve(cv, Nd);
	ws->pooled = carve(cv, (size_t) B * d);
	/* a head on every token: a padded pass's logits are its tokens' */
	ws->logits = carve(cv, c->task == TFM_TASK_CLASSIFY ?
					   (c->token_head != TFM_TOKEN_HEAD_NONE ? Ne : (size_t) B) * V : Nd * V);
	ws->capped = training && c->final_softcap > 0.0f ? carve(cv, Nd * V) : NULL;
	ws->sub_out = carve(cv, Nmax * d);
	if (c->emb_norm)
	{
		ws->emb_raw = carve(cv, Ne * d);
		ws->emb_mean = carve(cv, Ne);
		ws->emb_rstd = carve(cv, Ne);
	}
	if (c->cls_pre != TFM_CLS_PRE_NONE)
		ws->pre_out = carve(cv, (size_t) B * d);
	if (c->arch == TFM_ARCH_T5)
	{
		/* the stacks' position biases; training, their gradients */
		ws->enc_bias = carve(cv, h * T * T);
		ws->dec_bias = carve(cv, h * Td * Td);
		if (training)
		{
			ws->g_scores = carve(cv, (size_t) B * h * Tmax * Tmax);
			ws->g_enc_bias = carve(cv, h * T * T);
			ws->g_dec_bias = carve(cv, h * Td * Td);
		}
	}
	{
		tfm_attn_shape sh = {.Tq = Tmax, .Tk = Tmax, .s = tfm_config_head_size(c)};

		ws->attn_scratch = carve(cv, tfm_attention_scratch(&sh, threads));
	}
	if (training)
	{
		ws->g_a = carve(cv, Nmax * d);
		ws->g_b = carve(cv, Nmax * d);
		ws->g_x = carve(cv, Nmax * d);
		ws->g_y = carve(cv, Nmax * d);
		ws->g_t = carve(cv, Nmax * dq);
		ws->g_u = carve(cv, Nmax * d);
		ws->g_h = carve(cv, Nmax * (f + f1));	/* llama: dh, then d(gate | up) */
		ws->g_qkv = carve(cv, Nmax * (qkv > 3 * d ? qkv : 3 * d));
		ws->g_ckv = carve(cv, Ne * 2 * (size_t) tfm_config_cross_dim(c));
		ws->g_mem = carve(cv, Ne * d);
	}
}

/* floats of the arena for a capacity */
static size_t
arena_floats(const tfm_config *c, int B, int T, int Tt, bool training, bool probs,
			 bool ckpt, int threads)
{
	tfm_workspace ws;
	tfm_block_acts *enc = calloc(c->enc_layers + 1, sizeof(tfm_block_acts));
	tfm_block_acts *dec = calloc(c->dec_layers + 1, sizeof(tfm_block_acts));
	carver		cv = {NULL, 0};

	memset(&ws, 0, sizeof(ws));
	ws.enc = enc;
	ws.dec = dec;
	if (enc && dec)
		carve_all(c, &ws, &cv, B, T, Tt, training, probs, ckpt, threads);
	else
		cv.off = SIZE_MAX / sizeof(float);	/* cannot count: too much */
	free(enc);
	free(dec);
	return cv.off;
}

static inline size_t
zmax(size_t a, size_t b)
{
	return a > b ? a : b;
}

/*
 * The work buffers of bf16/int8 products (precision.c keeps one of each per
 * model, grown to the largest product): inference reads an (N, in) operand,
 * training also packs (N, in or out) operands and multiplies by them.
 */
static size_t
lowp_bytes(const tfm_config *c, size_t N, bool training, bool int4)
{
	size_t		d = c->d_model,
				V = c->task == TFM_TASK_CLASSIFY ? (size_t) c->n_classes :
		(c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0 ? (size_t) c->tgt_vocab : (size_t) c->vocab),
				kin = zmax(d, (size_t) c->d_ff),
				kall = zmax(zmax(kin, (size_t) tfm_config_qkv_width(c)),
							zmax(zmax((size_t) tfm_config_ff1_width(c), 2 * d), V));
	int			n = N > INT32_MAX / 2 ? INT32_MAX / 2 : (int) N;

	if (kall > INT32_MAX / 2)
		kall = INT32_MAX / 2;
	if (!training)
	{
		/* gguf: the activations as Q8_K (K-quants) or Q8_0 blocks, K whole blocks */
		int			k256 = (int) ((kin + TFM_QK_K - 1) / TFM_QK_K * TFM_QK_K);
		size_t		kq = zmax(tfm_kq_work_bytes(12, n, k256), tfm_kq_work_bytes(8, n, k256));

		return zmax(zmax(zmax(tfm_bf16_work_bytes(n, (int) kin), tfm_int8_work_bytes(n, (int) kin)),
						 int4 ? tfm_int4_work_bytes(n, (int) kin) : 0), kq) + 64;
	}
	return zmax(zmax(tfm_bf16_work_bytes(n, (int) kin), tfm_bf16_work_bytes(n, (int) kall)),
				tfm_bf16_work_bytes((int) kall, n)) +
		tfm_bf16_pack_bytes(n, (int) kall) + 128;
}

size_t
tfm_model_workspace_bytes(const tfm_config *cfg, int B, int T, int Tt, int flags,
						  int threads)
{
	bool		training = (flags & TFM_WS_TRAINING) != 0;
	bool		probs = training || (flags & TFM_WS_ATTENTION) != 0;
	bool		ckpt = training && (flags & TFM_WS_CHECKPOINT) != 0;
	int			Td;
	size_t		Nmax,
				bytes;

	if (cfg->task != TFM_TASK_SEQ2SEQ)
		Tt = 0;
	Td = tfm_model_dec_len(cfg, T, Tt);
	Nmax = (size_t) B * (T > Td ? T : Td);
	/* 16 kB: the allocator's headers and page rounding */
	bytes = arena_floats(cfg, B, T, Tt, training, probs, ckpt, threads) * sizeof(float) + 16384;
	bytes += sizeof(tfm_workspace) + (cfg->enc_layers + cfg->dec_layers + 2) * sizeof(tfm_block_acts);
	if (cfg->positions == TFM_POS_SINUSOIDAL)
		bytes += (size_t) (T > Tt ? T : Tt) * cfg->d_model * sizeof(float);
	if (flags & (TFM_WS_LOWP | TFM_WS_INT4))
		bytes += lowp_bytes(cfg, Nmax, training, (flags & TFM_WS_INT4) != 0);
	return bytes;
}

int
tfm_workspace_reserve(tfm_model *m, int B, int T, int Tt, bool training, bool probs)
{
	const tfm_config *c = &m->cfg;
	tfm_workspace *ws = m->ws;
	int			threads = tfm_get_threads();
	carver		cv = {NULL, 0};
	int			Tmax;
	bool		ckpt = training && m->checkpoint_activations;

	probs = probs || training;
	/* values left to kept blocks are read by gguf's products only (absent_floats.c) */
	if (m->absent && (training || tfm_model_precision(m) != TFM_PREC_GGUF))
		return -1;
	/*
	 * A pass that keeps every layer's activations (training, attention
	 * weights) needs the workspace's layout, shared or not; any other runs
	 * in either.
	 */
	if (ws && B <= ws->B && T <= ws->T && Tt <= ws->Tt &&
		(!training || ws->training) && (!probs || ws->probs) && threads <= ws->threads &&
		(!probs || ckpt == ws->checkpoint))
		return 0;
	if (ws)
	{
		int			uB = B > ws->B ? B : ws->B,
					uT = T > ws->T ? T : ws->T,
					uTt = Tt > ws->Tt ? Tt : ws->Tt,
					uth = threads > ws->threads ? threads : ws->threads;
		bool		utr = training || ws->training,
					upr = probs || ws->probs,
					uck = probs ? ckpt : ws->checkpoint;

		/*
		 * Grow to cover both the old and the new shape, unless that union
		 * (a batch as wide as the widest and as long as the longest) is
		 * larger than the host's limit: then fit the new shape alone.
		 */
		if (m->ws_limit == 0 ||
			arena_floats(c, uB, uT, uTt, utr, upr, uck, uth) * sizeof(float) <= m->ws_limit)
		{
			B = uB;
			T = uT;
			Tt = uTt;
			threads = uth;
			training = utr;
			probs = upr;
			ckpt = uck;
		}
		free(ws->arena);
		ws->arena = NULL;
	}
	else
	{
		ws = calloc(1, sizeof(tfm_workspace));
		if (!ws)
			return -1;
		ws->enc = calloc(c->enc_layers + 1, sizeof(tfm_block_acts));
		ws->dec = calloc(c->dec_layers + 1, sizeof(tfm_block_acts));
		m->ws = ws;
		if (!ws->enc || !ws->dec)
			return -1;
	}
	ws->B = ws->T = ws->Tt = 0;
	ws->floats = 0;
	carve_all(c, ws, &cv, B, T, Tt, training, probs, ckpt, threads);
	ws->arena = aligned_alloc(64, (cv.off * sizeof(float) + 63) & ~(size_t) 63);
	if (!ws->arena)
		return -1;
	ws->floats = cv.off;
	cv.base = ws->arena;
	cv.off = 0;
	carve_all(c, ws, &cv, B, T, Tt, training, probs, ckpt, threads);
	ws->checkpoint = ckpt;
	ws->B = B;
	ws->T = T;
	ws->Tt = Tt;
	ws->training = training;
	ws->probs = probs;
	ws->threads = threads;

	Tmax = T > Tt ? T : Tt;
	if (c->positions == TFM_POS_SINUSOIDAL && ws->sinus_rows < Tmax)
	{
		float	   *s;

		free(ws->sinus);
		ws->sinus = NULL;
		ws->sinus_rows = 0;
		s = malloc((size_t) Tmax * c->d_model * sizeof(float));
		if (!s)
			return -1;
		tfm_config_sinusoids(c, s, Tmax);
		ws->sinus = s;
		ws->sinus_rows = Tmax;
	}
	return 0;
}
