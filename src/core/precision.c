/*
 * precision.c — a model's matrices packed for bf16 or int8 inference, and
 * the switch the linear layers consult (see tfm/precision.h).
 *
 * The packed copies are keyed by the fp32 weight's address: the forward
 * code calls tfm_linear_forward(out, inp, W, ...) with the same W pointers
 * the packer saw, so a lookup over the model's few hundred matrices finds
 * them without any change to the layers' signatures.  The tied output head
 * (logits = h · Eᵀ) is packed from the embedding read as (d, V).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/lowp.h"
#include "tfm/precision.h"

typedef struct lowp_entry
{
	const float *W;				/* the fp32 weight it stands for */
	int			K,
				N;
	tfm_bf16_weights b;
	tfm_int8_weights q;
} lowp_entry;

struct tfm_lowp_set
{
	tfm_precision prec;
	int			n;
	lowp_entry *e;
	char	   *packed;			/* one block for every entry */
	size_t		packed_bytes;
	void	   *work;			/* the products' work buffer, grown on demand */
	size_t		work_cap;
};

static const tfm_model *active = NULL;

const char *
tfm_precision_name(tfm_precision p)
{
	return p == TFM_PREC_BF16 ? "bf16" : p == TFM_PREC_INT8 ? "int8" : "fp32";
}

/* the matrices of a forward pass: W (K × N) stored (in, out), or transposed */
typedef struct mat
{
	const float *W;
	int			K,
				N;
	bool		transposed;		/* stored (N, K): the tied head's embedding */
} mat;

static int
add_block(mat *list, int n, const tfm_block_w *w, const tfm_config *c)
{
	int			d = c->d_model,
				f = c->d_ff;
	mat			m[] = {
		{w->qkv_w, d, tfm_config_qkv_width(c), false}, {w->attn_out_w, d, d, false},
		{w->cq_w, d, d, false}, {w->ckv_w, d, 2 * d, false}, {w->cout_w, d, d, false},
		{w->ff1_w, d, tfm_config_ff1_width(c), false}, {w->ff2_w, f, d, false}
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i].W)
		{
			if (list)
				list[n] = m[i];
			n++;
		}
	return n;
}

static int
matrices(const tfm_model *md, mat *list)
{
	const tfm_config *c = &md->cfg;
	int			n = 0,
				d = c->d_model;

	for (int i = 0; i < c->enc_layers; i++)
		n = add_block(list, n, &md->w.enc[i], c);
	for (int i = 0; i < c->dec_layers; i++)
		n = add_block(list, n, &md->w.dec[i], c);
	if (c->task == TFM_TASK_CLASSIFY)
	{
		if (list)
			list[n] = (mat) {md->w.cls_w, d, c->n_classes, false};
		n++;
	}
	else
	{
		bool		s2s_tgt = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0;
		int			V = s2s_tgt ? c->tgt_vocab : c->vocab;

		if (list)
			list[n] = c->tie ? (mat) {s2s_tgt ? md->w.tgt_emb : md->w.tok_emb, d, V, true} :
				(mat) {md->w.out_w, d, V, false};
		n++;
	}
	return n;
}

void
tfm_model_precision_free(tfm_model *m)
{
	struct tfm_lowp_set *s = m->lowp;

	if (!s)
		return;
	if (active == m)
		active = NULL;
	free(s->e);
	free(s->packed);
	free(s->work);
	free(s);
	m->lowp = NULL;
}

static size_t
align64(size_t n)
{
	return (n + 63) & ~(size_t) 63;
}

int
tfm_model_set_precision(tfm_model *m, tfm_precision p)
{
	struct tfm_lowp_set *s;
	mat		   *list;
	int			n;
	size_t		off = 0;

	if (tfm_model_precision(m) == p)
		return 0;
	tfm_model_precision_free(m);
	if (p == TFM_PREC_FP32)
		return 0;
	n = matrices(m, NULL);
	list = calloc(n > 0 ? n : 1, sizeof(mat));
	s = calloc(1, sizeof(*s));
	if (!list || !s || !(s->e = calloc(n > 0 ? n : 1, sizeof(lowp_entry))))
		goto nomem;
	matrices(m, list);
	for (int i = 0; i < n; i++)
		off += align64(p == TFM_PREC_BF16 ? tfm_bf16_pack_bytes(list[i].K, list[i].N) :
					   tfm_int8_pack_bytes(list[i].K, list[i].N));
	s->packed_bytes = off;
	if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
		goto nomem;
	off = 0;
	for (int i = 0; i < n; i++)
	{
		const mat  *x = &list[i];
		lowp_entry *e = &s->e[i];
		/* element [k][j]: W[k·N + j] stored (in, out); E[j·K + k] transposed */
		ptrdiff_t	rs = x->transposed ? 1 : x->N,
					cs = x->transposed ? x->K : 1;

		e->W = x->W;
		e->K = x->K;
		e->N = x->N;
		if (p == TFM_PREC_BF16)
		{
			tfm_bf16_pack(&e->b, s->packed + off, x->W, rs, cs, x->K, x->N);
			off += align64(tfm_bf16_pack_bytes(x->K, x->N));
		}
		else
		{
			tfm_int8_pack(&e->q, s->packed + off, x->W, rs, cs, x->K, x->N);
			off += align64(tfm_int8_pack_bytes(x->K, x->N));
		}
	}
	s->prec = p;
	s->n = n;
	free(list);
	m->lowp = s;
	return 0;

nomem:
	if (s)
	{
		free(s->e);
		free(s->packed);
		free(s);
	}
	free(list);
	return -1;
}

tfm_precision
tfm_model_precision(const tfm_model *m)
{
	return m->lowp ? m->lowp->prec : TFM_PREC_FP32;
}

size_t
tfm_model_precision_bytes(const tfm_model *m)
{
	return m->lowp ? m->lowp->packed_bytes : 0;
}

const tfm_model *
tfm_precision_activate(const tfm_model *m)
{
	const tfm_model *prev = active;

	active = m && m->lowp ? m : NULL;
	return prev;
}

bool
tfm_precision_linear(float *out, const float *inp, const float *W,
					 const float *b, int N, int in, int o)
{
	struct tfm_lowp_set *s;
	lowp_entry *e = NULL;
	size_t		need;
	float		beta = 0.0f;

	if (!active || N <= 0)
		return false;
	s = active->lowp;
	for (int i = 0; i < s->n; i++)
		if (s->e[i].W == W && s->e[i].K == in && s->e[i].N == o)
		{
			e = &s->e[i];
			break;
		}
	if (!e)
		return false;
	need = s->prec == TFM_PREC_BF16 ? tfm_bf16_work_bytes(N, in) : tfm_int8_work_bytes(N, in);
	if (need > s->work_cap)
	{
		void	   *w = aligned_alloc(64, align64(need));

		if (!w)
			return false;		/* the fp32 product still works */
		free(s->work);
		s->work = w;
		s->work_cap = align64(need);
	}
	if (b)
	{
		for (int n = 0; n < N; n++)
			memcpy(out + (size_t) n * o, b, sizeof(float) * o);
		beta = 1.0f;
	}
	if (s->prec == TFM_PREC_BF16)
		tfm_bf16_gemm(N, o, in, 1.0f, inp, in, &e->b, beta, out, o, s->work);
	else
		tfm_int8_gemm(N, o, in, 1.0f, inp, in, &e->q, beta, out, o, s->work);
	return true;
}
