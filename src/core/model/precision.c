/*
 * precision.c — a model's matrices packed for bf16 or int8 inference or
 * for bf16 training, and the switch the linear layers consult (see
 * tfm/precision.h).
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
	bool		transposed;		/* W stored (N, K): the tied head's embedding */
	tfm_bf16_weights b;
	tfm_bf16_weights bt;		/* training: Wᵀ (N × K), for dX = dY·Wᵀ */
	tfm_int8_weights q;
} lowp_entry;

struct tfm_lowp_set
{
	tfm_precision prec;
	bool		training;		/* W and Wᵀ, repacked per optimizer step */
	int			n;
	lowp_entry *e;
	char	   *packed;			/* one block for every entry */
	size_t		packed_bytes;
	/* a borrowed block (tfm_model_set_precision_from): released, not freed */
	void		(*release) (void *block, void *arg);
	void	   *release_arg;
	void	   *work;			/* the products' work buffer, grown on demand */
	size_t		work_cap;
	void	   *act;			/* training: an activation packed as W (dW) */
	size_t		act_cap;
};

static const struct tfm_lowp_set *active = NULL;

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

/* training adds the classifier's dense layer (inference leaves it fp32) */
static int
matrices(const tfm_model *md, mat *list, bool training)
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
		if (training && md->w.cls_pre_w)
		{
			if (list)
				list[n] = (mat) {md->w.cls_pre_w, d, d, false};
			n++;
		}
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

static void
set_free(struct tfm_lowp_set *s)
{
	if (!s)
		return;
	if (active == s)
		active = NULL;
	free(s->e);
	if (s->release)
		s->release(s->packed, s->release_arg);
	else
		free(s->packed);
	free(s->work);
	free(s->act);
	free(s);
}

/* both the inference and the training copies (tfm_model_free calls it) */
void
tfm_model_precision_free(tfm_model *m)
{
	set_free(m->lowp);
	m->lowp = NULL;
	set_free(m->lowp_train);
	m->lowp_train = NULL;
}

static size_t
align64(size_t n)
{
	return (n + 63) & ~(size_t) 63;
}

/* bytes of the packed copy of one matrix at p, with its alignment */
static size_t
entry_bytes(const mat *x, tfm_precision p)
{
	return align64(p == TFM_PREC_BF16 ? tfm_bf16_pack_bytes(x->K, x->N) :
				   tfm_int8_pack_bytes(x->K, x->N));
}

/*
 * The inference set of m at p (not fp32): packed here, or (block non-NULL)
 * the entries laid over a block packed before, released by release(block,
 * arg) when the set goes — if the set cannot be made, at once.
 */
static int
set_inference(tfm_model *m, tfm_precision p, void *block,
			  void (*release) (void *, void *), void *release_arg,
			  int (*stop) (void *), void *stop_arg)
{
	struct tfm_lowp_set *s;
	mat		   *list;
	int			n;
	size_t		off = 0;

	set_free(m->lowp);
	m->lowp = NULL;
	n = matrices(m, NULL, false);
	list = calloc(n > 0 ? n : 1, sizeof(mat));
	s = calloc(1, sizeof(*s));
	if (!list || !s || !(s->e = calloc(n > 0 ? n : 1, sizeof(lowp_entry))))
		goto nomem;
	matrices(m, list, false);
	for (int i = 0; i < n; i++)
		off += entry_bytes(&list[i], p);
	s->packed_bytes = off;
	if (block)
	{
		s->packed = block;
		s->release = release;
		s->release_arg = release_arg;
	}
	else if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
		goto nomem;
	off = 0;
	for (int i = 0; i < n; i++)
	{
		const mat  *x = &list[i];
		lowp_entry *e = &s->e[i];
		/* element [k][j]: W[k·N + j] stored (in, out); E[j·K + k] transposed */
		ptrdiff_t	rs = x->transposed ? 1 : x->N,
					cs = x->transposed ? x->K : 1;

		/* a matrix packs in milliseconds; a model of 300M values in seconds */
		if (stop && !block && stop(stop_arg))
		{
			free(s->packed);
			free(s->e);
			free(s);
			free(list);
			return -2;
		}
		e->W = x->W;
		e->K = x->K;
		e->N = x->N;
		e->transposed = x->transposed;
		if (p == TFM_PREC_BF16 && block)
			tfm_bf16_view(&e->b, s->packed + off, x->K, x->N);
		else if (p == TFM_PREC_BF16)
			tfm_bf16_pack(&e->b, s->packed + off, x->W, rs, cs, x->K, x->N);
		else if (block)
			tfm_int8_view(&e->q, s->packed + off, x->K, x->N);
		else
			tfm_int8_pack(&e->q, s->packed + off, x->W, rs, cs, x->K, x->N);
		off += entry_bytes(x, p);
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
		free(s);
	}
	if (block && release)
		release(block, release_arg);
	free(list);
	return -1;
}

int
tfm_model_set_precision_polled(tfm_model *m, tfm_precision p, int (*stop) (void *), void *arg)
{
	if (tfm_model_precision(m) == p)
		return 0;
	if (p == TFM_PREC_FP32)
	{
		set_free(m->lowp);
		m->lowp = NULL;
		return 0;
	}
	return set_inference(m, p, NULL, NULL, NULL, stop, arg);
}

int
tfm_model_set_precision(tfm_model *m, tfm_precision p)
{
	return tfm_model_set_precision_polled(m, p, NULL, NULL);
}

size_t
tfm_model_precision_block_bytes(const tfm_model *m, tfm_precision p)
{
	int			n;
	mat		   *list;
	size_t		bytes = 0;

	if (p == TFM_PREC_FP32)
		return 0;
	n = matrices(m, NULL, false);
	if (!(list = calloc(n > 0 ? n : 1, sizeof(mat))))
		return 0;
	matrices(m, list, false);
	for (int i = 0; i < n; i++)
		bytes += entry_bytes(&list[i], p);
	free(list);
	return bytes;
}

const void *
tfm_model_precision_block(const tfm_model *m)
{
	return m->lowp ? m->lowp->packed : NULL;
}

int
tfm_model_set_precision_from(tfm_model *m, tfm_precision p, void *block,
							 void (*release) (void *block, void *arg), void *arg)
{
	if (p == TFM_PREC_FP32 || !block || !release)
	{
		if (block && release)
			release(block, arg);
		return -1;
	}
	return set_inference(m, p, block, release, arg, NULL, NULL);
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

/* ---- training copies ------------------------------------------------------ */

int
tfm_model_set_train_precision(tfm_model *m, tfm_precision p)
{
	struct tfm_lowp_set *s;
	mat		   *list;
	int			n;
	size_t		off = 0;

	if (p == TFM_PREC_INT8)
		return -2;
	if (tfm_model_train_precision(m) == p)
		return 0;
	set_free(m->lowp_train);
	m->lowp_train = NULL;
	if (p == TFM_PREC_FP32)
		return 0;
	n = matrices(m, NULL, true);
	list = calloc(n > 0 ? n : 1, sizeof(mat));
	s = calloc(1, sizeof(*s));
	if (!list || !s || !(s->e = calloc(n > 0 ? n : 1, sizeof(lowp_entry))))
		goto nomem;
	matrices(m, list, true);
	for (int i = 0; i < n; i++)
		off += align64(tfm_bf16_pack_bytes(list[i].K, list[i].N)) +
			align64(tfm_bf16_pack_bytes(list[i].N, list[i].K));
	s->packed_bytes = off;
	if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
		goto nomem;
	off = 0;
	for (int i = 0; i < n; i++)
	{
		lowp_entry *e = &s->e[i];

		e->W = list[i].W;
		e->K = list[i].K;
		e->N = list[i].N;
		e->transposed = list[i].transposed;
		/* the buffers only: tfm_model_train_repack fills them */
		e->b = (tfm_bf16_weights) {(uint16_t *) (s->packed + off), e->K, e->N, 0};
		off += align64(tfm_bf16_pack_bytes(e->K, e->N));
		e->bt = (tfm_bf16_weights) {(uint16_t *) (s->packed + off), e->N, e->K, 0};
		off += align64(tfm_bf16_pack_bytes(e->N, e->K));
	}
	s->prec = p;
	s->training = true;
	s->n = n;
	free(list);
	m->lowp_train = s;
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
tfm_model_train_precision(const tfm_model *m)
{
	return m->lowp_train ? m->lowp_train->prec : TFM_PREC_FP32;
}

/*
 * W (K × N) as the forward product reads it, and Wᵀ (N × K): element [k][j]
 * of W is W[k·N + j] stored (in, out), E[j·K + k] for the tied head.
 */
void
tfm_model_train_repack(tfm_model *m)
{
	struct tfm_lowp_set *s = m->lowp_train;

	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
	{
		lowp_entry *e = &s->e[i];
		ptrdiff_t	rs = e->transposed ? 1 : e->N,
					cs = e->transposed ? e->K : 1;

		tfm_bf16_pack(&e->b, e->b.data, e->W, rs, cs, e->K, e->N);
		tfm_bf16_pack(&e->bt, e->bt.data, e->W, cs, rs, e->N, e->K);
	}
}

/* ---- the products ----------------------------------------------------------- */

tfm_lowp_scope
tfm_precision_activate(const tfm_model *m)
{
	tfm_lowp_scope prev = active;

	active = m ? m->lowp : NULL;
	return prev;
}

tfm_lowp_scope
tfm_precision_activate_training(const tfm_model *m)
{
	tfm_lowp_scope prev = active;

	active = m ? m->lowp_train : NULL;
	return prev;
}

void
tfm_precision_restore(tfm_lowp_scope prev)
{
	active = prev;
}

static lowp_entry *
find(const struct tfm_lowp_set *s, const float *W, int in, int o)
{
	for (int i = 0; i < s->n; i++)
		if (s->e[i].W == W && s->e[i].K == in && s->e[i].N == o)
			return &s->e[i];
	return NULL;
}

/* *buf holds at least need bytes (64-byte aligned); false if out of memory */
static bool
reserve(void **buf, size_t *cap, size_t need)
{
	void	   *w;

	if (need <= *cap)
		return true;
	if (!(w = aligned_alloc(64, align64(need))))
		return false;
	free(*buf);
	*buf = w;
	*cap = align64(need);
	return true;
}

tfm_precision
tfm_precision_in_effect(void)
{
	return active ? active->prec : TFM_PREC_FP32;
}

bool
tfm_precision_linear(float *out, const float *inp, const float *W,
					 const float *b, int N, int in, int o)
{
	return tfm_precision_linear_act(out, inp, W, b, N, in, o, NULL);
}

bool
tfm_precision_linear_act(float *out, const float *inp, const float *W,
						 const float *b, int N, int in, int o, tfm_row_fn act)
{
	struct tfm_lowp_set *s = (struct tfm_lowp_set *) active;
	lowp_entry *e;
	size_t		need;
	float		beta = 0.0f;

	if (!s || N <= 0 || !(e = find(s, W, in, o)))
		return false;
	need = s->prec == TFM_PREC_BF16 ? tfm_bf16_work_bytes(N, in) : tfm_int8_work_bytes(N, in);
	if (!reserve(&s->work, &s->work_cap, need))
		return false;			/* the fp32 product still works */
	if (s->prec == TFM_PREC_BF16)
	{
		/* the bias and the activation in the product's blocks (AMX) */
		tfm_bf16_gemm_fused(N, o, in, inp, in, &e->b, b, act, out, o, s->work);
		return true;
	}
	if (b)
	{
		tfm_lowp_rows_set(out, o, N, o, b);
		beta = 1.0f;
	}
	tfm_int8_gemm(N, o, in, 1.0f, inp, in, &e->q, beta, out, o, s->work);
	if (act)
		tfm_lowp_rows_apply(act, out, o, N, o);
	return true;
}

bool
tfm_precision_linear_backward(float *dinp, float beta_in, float *dW,
							  const float *dout, const float *inp,
							  const float *W, int N, int in, int o)
{
	struct tfm_lowp_set *s = (struct tfm_lowp_set *) active;
	lowp_entry *e;
	size_t		need = 0;

	if (!s || !s->training || N <= 0 || !(e = find(s, W, in, o)))
		return false;
	if (dinp)
		need = tfm_bf16_work_bytes(N, o);
	if (dW)
	{
		size_t		w = e->transposed ? tfm_bf16_work_bytes(o, N) : tfm_bf16_work_bytes(in, N);

		need = need > w ? need : w;
		if (!reserve(&s->act, &s->act_cap,
					 e->transposed ? tfm_bf16_pack_bytes(N, in) : tfm_bf16_pack_bytes(N, o)))
			return false;
	}
	if (!reserve(&s->work, &s->work_cap, need))
		return false;

	/* dinp (N × in) = beta_in·dinp + dout (N × o) · Wᵀ (o × in) */
	if (dinp)
		tfm_bf16_gemm(N, in, o, 1.0f, dout, o, &e->bt, beta_in, dinp, in, s->work);
	if (dW && !e->transposed)
	{
		/* dW (in × o) += inpᵀ (in × N, read in place) · dout (N × o) */
		tfm_bf16_weights dy;

		tfm_bf16_pack(&dy, s->act, dout, o, 1, N, o);
		tfm_bf16_gemm_strided(in, o, N, 1.0f, inp, 1, in, &dy, 1.0f, dW, o, s->work);
	}
	else if (dW)
	{
		/* the tied head's dE (o × in) += doutᵀ (o × N) · inp (N × in) */
		tfm_bf16_weights x;

		tfm_bf16_pack(&x, s->act, inp, in, 1, N, in);
		tfm_bf16_gemm_strided(o, in, N, 1.0f, dout, 1, o, &x, 1.0f, dW, in, s->work);
	}
	return true;
}
