/*
 * precision.c — a model's matrices packed for bf16, int8 or int4 inference or
 * for bf16 training (see tfm/precision.h; int4 with the blocks a GGUF file
 * gave kept as they are: int4_kept.c), as sets of packed weights
 * (kernels/lowp/lowp_set.h) with an index by block (tfm_packed_w,
 * model_internal.h) that the passes hand to the linear layers.  The tied
 * output head (logits = h · Eᵀ) is packed from the embedding read as
 * (d, V).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/blas.h"
#include "tfm/kquant.h"
#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "model_internal.h"

const char *
tfm_precision_name(tfm_precision p)
{
	return p == TFM_PREC_BF16 ? "bf16" : p == TFM_PREC_INT8 ? "int8" :
		p == TFM_PREC_INT4 ? "int4" : p == TFM_PREC_GGUF ? "gguf" : "fp32";
}

/* the matrices of a forward pass: W (K × N) stored (in, out), or transposed */
typedef struct mat
{
	const float *W;
	int			K,
				N;
	bool		transposed;		/* stored (N, K): the tied head's embedding */
	const tfm_lowp_entry **slot;	/* where the index keeps its entry */
} mat;

/* pk: the block's record in the index being filled (NULL: none) */
static int
add_block(mat *list, int n, const tfm_block_w *w, const tfm_config *c, tfm_block_packed *pk)
{
	int			d = c->d_model,
				f = c->d_ff,
				cw = tfm_config_cross_dim(c);	/* T5's cross-attention: heads · d_kv */
#define SLOT(x) (pk ? &pk->x : NULL)
	mat			m[] = {
		{w->qkv_w, d, tfm_config_qkv_width(c), false, SLOT(qkv)},
		{w->attn_out_w, tfm_config_q_dim(c), d, false, SLOT(attn_out)},
		{w->cq_w, d, cw, false, SLOT(cq)}, {w->ckv_w, d, 2 * cw, false, SLOT(ckv)},
		{w->cout_w, cw, d, false, SLOT(cout)},
		{w->ff1_w, d, tfm_config_ff1_width(c), false, SLOT(ff1)},
		{w->ff2_w, f, d, false, SLOT(ff2)}
	};
#undef SLOT

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i].W)
		{
			if (list)
				list[n] = m[i];
			n++;
		}
	return n;
}

/*
 * The matrices a set packs, in order; with list, each one's slot in the
 * index pw (its block records allocated).  Training adds the classifier's
 * dense layer (inference leaves it fp32).
 */
static int
matrices(const tfm_model *md, mat *list, bool training, tfm_packed_w *pw)
{
	const tfm_config *c = &md->cfg;
	int			n = 0,
				d = c->d_model;

	for (int i = 0; i < c->enc_layers; i++)
		n = add_block(list, n, &md->w.enc[i], c, pw ? &pw->enc[i] : NULL);
	for (int i = 0; i < c->dec_layers; i++)
		n = add_block(list, n, &md->w.dec[i], c, pw ? &pw->dec[i] : NULL);
	if (c->task == TFM_TASK_CLASSIFY)
	{
		if (list)
			list[n] = (mat) {md->w.cls_w, d, c->n_classes, false, pw ? &pw->cls : NULL};
		n++;
		if (training && md->w.cls_pre_w)
		{
			if (list)
				list[n] = (mat) {md->w.cls_pre_w, d, d, false, pw ? &pw->cls_pre : NULL};
			n++;
		}
	}
	else
	{
		bool		s2s_tgt = c->task == TFM_TASK_SEQ2SEQ && c->tgt_vocab > 0;
		int			V = s2s_tgt ? c->tgt_vocab : c->vocab;

		if (list)
			list[n] = c->tie ?
				(mat) {s2s_tgt ? md->w.tgt_emb : md->w.tok_emb, d, V, true, pw ? &pw->head : NULL} :
				(mat) {md->w.out_w, d, V, false, pw ? &pw->head : NULL};
		n++;
	}
	return n;
}

/* an empty index of m's blocks (one allocation, owned by the set it indexes) */
static tfm_packed_w *
new_index(const tfm_model *m)
{
	const tfm_config *c = &m->cfg;
	tfm_packed_w *pw = calloc(1, sizeof(tfm_packed_w) +
							  sizeof(tfm_block_packed) * (c->enc_layers + c->dec_layers + 1));

	if (pw)
	{
		pw->enc = (tfm_block_packed *) (pw + 1);
		pw->dec = pw->enc + c->enc_layers;
	}
	return pw;
}

/*
 * A new set of m's matrices (training: the training set's), its entries
 * describing *list (allocated here, for the caller to free) and each one's
 * slot in the index pointing to it; nothing packed yet.  NULL (and *list
 * NULL) if memory is short.
 */
static struct tfm_lowp_set *
new_set(tfm_model *m, bool training, mat **list)
{
	int			n = matrices(m, NULL, training, NULL);
	struct tfm_lowp_set *s = calloc(1, sizeof(*s));

	*list = calloc(n > 0 ? n : 1, sizeof(mat));
	if (!*list || !s || !(s->e = calloc(n > 0 ? n : 1, sizeof(tfm_lowp_entry))) ||
		!(s->index = new_index(m)))
	{
		tfm_lowp_set_free(s);
		free(*list);
		*list = NULL;
		return NULL;
	}
	matrices(m, *list, training, s->index);
	s->n = n;
	for (int i = 0; i < n; i++)
	{
		const mat  *x = &(*list)[i];
		tfm_lowp_entry *e = &s->e[i];

		e->set = s;
		if (x->slot)
			*x->slot = e;
		e->W = x->W;
		e->K = x->K;
		e->N = x->N;
		e->transposed = x->transposed;
	}
	return s;
}

/*
 * The kept blocks of m (int4_kept.c) for the matrix with weights W (K × N)
 * written over the columns they cover in w, packed from W just before
 * (moved into the interleaved layout, each block's bytes as they are)
 */
static void
int4_kept_apply(const tfm_model *m, const float *W, int K, int N, tfm_int4_weights *w)
{
	const struct tfm_int4_kept_set *s = m->int4_kept;

	for (int i = 0; s && i < s->n; i++)
	{
		const tfm_int4_kept *k = &s->k[i];

		if (k->type == 2 && !k->rows_only && W == m->params + k->offset && K == k->K && k->col0 + k->cols <= N)
			for (int j = 0; j < k->cols; j++)
				for (int b = 0; b < w->kb; b++)
					tfm_int4_put_block(w, k->col0 + j, b,
									   k->blocks + ((size_t) j * w->kb + b) * TFM_INT4_BLOCK_BYTES);
	}
}

/*
 * bytes of the packed copy of one matrix at p, with its alignment (gguf:
 * the blocks of the parts covering it, each part aligned; none where they
 * do not cover it)
 */
static size_t
entry_bytes(const tfm_model *m, const mat *x, tfm_precision p)
{
	if (p == TFM_PREC_GGUF)
	{
		int			n = tfm_kept_parts(m, x->W, x->K, x->N, NULL);
		tfm_kq_part *parts;
		size_t		bytes = 0;

		if (n == 0 || !(parts = malloc(sizeof(tfm_kq_part) * n)))
			return 0;
		tfm_kept_parts(m, x->W, x->K, x->N, parts);
		for (int i = 0; i < n; i++)
			bytes += tfm_lowp_align64((size_t) parts[i].cols * tfm_kq_row_bytes(parts[i].type, x->K));
		free(parts);
		return bytes;
	}
	return tfm_lowp_align64(p == TFM_PREC_BF16 ? tfm_bf16_pack_bytes(x->K, x->N) :
							p == TFM_PREC_INT4 ? tfm_int4_pack_bytes(x->K, x->N) :
							tfm_int8_pack_bytes(x->K, x->N));
}

/*
 * gguf: the entry of matrix x gets its parts (s->parts from *used on), their
 * blocks at s->packed + off, copied there from m's kept blocks unless the
 * set lays over a block packed before (view)
 */
static void
gguf_entry(const tfm_model *m, struct tfm_lowp_set *s, tfm_lowp_entry *e, const mat *x,
		   size_t off, int *used, bool view)
{
	tfm_kq_part *parts = s->parts + *used;
	int			n = tfm_kept_parts(m, x->W, x->K, x->N, parts);

	for (int i = 0; i < n && s->packed; i++)
	{
		size_t		b = (size_t) parts[i].cols * tfm_kq_row_bytes(parts[i].type, x->K);

		if (!view)
			memcpy(s->packed + off, parts[i].blocks, b);
		parts[i].blocks = (const uint8_t *) s->packed + off;
		off += tfm_lowp_align64(b);
	}
	e->kq = n > 0 ? parts : NULL;
	e->n_kq = n;
	*used += n;
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
	size_t		off = 0;
	int			parts = 0;

	tfm_lowp_set_free(m->lowp);
	m->lowp = NULL;
	tfm_model_drop_rows(m);		/* the packed precision runs the products */
	s = new_set(m, false, &list);
	if (!s)
		goto nomem;
	for (int i = 0; i < s->n; i++)
	{
		off += entry_bytes(m, &list[i], p);
		if (p == TFM_PREC_GGUF)
			parts += tfm_kept_parts(m, list[i].W, list[i].K, list[i].N, NULL);
	}
	if (p == TFM_PREC_GGUF && !(s->parts = malloc(sizeof(tfm_kq_part) * (parts > 0 ? parts : 1))))
		goto nomem;
	parts = 0;
	s->packed_bytes = off;
	if (block)
	{
		s->packed = block;
		s->release = release;
		s->release_arg = release_arg;
	}
	else if (p == TFM_PREC_GGUF)
	{
		/* no copy: the parts run the model's kept blocks where they are */
		s->packed = NULL;
		s->packed_bytes = 0;
	}
	else if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
		goto nomem;
	off = 0;
	for (int i = 0; i < s->n; i++)
	{
		const mat  *x = &list[i];
		tfm_lowp_entry *e = &s->e[i];
		/* element [k][j]: W[k·N + j] stored (in, out); E[j·K + k] transposed */
		ptrdiff_t	rs = x->transposed ? 1 : x->N,
					cs = x->transposed ? x->K : 1;

		/* a matrix packs in milliseconds; a model of 300M values in seconds */
		if (stop && !block && stop(stop_arg))
		{
			tfm_lowp_set_free(s);
			free(list);
			return TFM_ECANCELED;
		}
		if (p == TFM_PREC_GGUF)
			gguf_entry(m, s, e, x, off, &parts, block != NULL);
		else if (p == TFM_PREC_BF16 && block)
			tfm_bf16_view(&e->b, s->packed + off, x->K, x->N);
		else if (p == TFM_PREC_BF16)
			tfm_bf16_pack(&e->b, s->packed + off, x->W, rs, cs, x->K, x->N);
		else if (p == TFM_PREC_INT4 && block)
			tfm_int4_view(&e->q4, s->packed + off, x->K, x->N);
		else if (p == TFM_PREC_INT4)
		{
			tfm_int4_pack(&e->q4, s->packed + off, x->W, rs, cs, x->K, x->N);
			int4_kept_apply(m, x->W, x->K, x->N, &e->q4);
		}
		else if (block)
			tfm_int8_view(&e->q, s->packed + off, x->K, x->N);
		else
			tfm_int8_pack(&e->q, s->packed + off, x->W, rs, cs, x->K, x->N);
		off += entry_bytes(m, x, p);
	}
	s->prec = p;
	free(list);
	m->lowp = s;
	return 0;

nomem:
	/* (the set never holds the block here: nothing fails after it takes it) */
	tfm_lowp_set_free(s);
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
	/* away from gguf, the float32 values left to the blocks are made first */
	if (p != TFM_PREC_GGUF && m->absent && m->make_floats)
	{
		int			rc = m->make_floats(m);

		if (rc != 0)
			return rc;
	}
	if (p == TFM_PREC_FP32)
	{
		tfm_lowp_set_free(m->lowp);
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
	n = matrices(m, NULL, false, NULL);
	if (!(list = calloc(n > 0 ? n : 1, sizeof(mat))))
		return 0;
	matrices(m, list, false, NULL);
	for (int i = 0; i < n; i++)
		bytes += entry_bytes(m, &list[i], p);
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

bool
tfm_model_kept_matrix(const tfm_model *m, const tfm_int4_kept *k, int *N, bool *transposed)
{
	int			n = matrices(m, NULL, false, NULL);
	mat		   *list;
	bool		fits = false;

	if (tfm_kept_bytes(k) == 0 || k->col0 < 0 ||
		k->offset >= m->n_floats || !(list = calloc(n > 0 ? n : 1, sizeof(mat))))
		return false;
	matrices(m, list, false, NULL);
	for (int i = 0; i < n && !fits; i++)
		if (list[i].W == m->params + k->offset && list[i].K == k->K &&
			(long) k->col0 + k->cols <= list[i].N)
		{
			fits = true;
			*N = list[i].N;
			*transposed = list[i].transposed;
		}
	free(list);
	return fits;
}

int
tfm_model_matrix_uses(const tfm_model *m, const float *W, bool *covered)
{
	int			n = matrices(m, NULL, false, NULL),
				uses = 0;
	mat		   *list;

	*covered = false;
	if (!(list = calloc(n > 0 ? n : 1, sizeof(mat))))
		return -1;
	matrices(m, list, false, NULL);
	*covered = true;
	for (int i = 0; i < n; i++)
		if (list[i].W == W)
		{
			uses++;
			if (tfm_kept_parts(m, W, list[i].K, list[i].N, NULL) == 0)
				*covered = false;
		}
	free(list);
	return uses;
}

bool
tfm_model_int4_fits(const tfm_model *m, const tfm_int4_kept *k)
{
	int			N;
	bool		transposed;

	return tfm_model_kept_matrix(m, k, &N, &transposed);
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

/* ---- fp32 panels for the row-exact products ------------------------------ */

int
tfm_model_pack_rows(tfm_model *m, size_t max_bytes)
{
	struct tfm_lowp_set *s;
	mat		   *list;
	size_t		off = 0;

	if (m->rows32)
		return 0;
	if (m->cfg.task != TFM_TASK_CLASSIFY || m->cfg.arch != TFM_ARCH_TFM)
		return 0;				/* only block.c's varlen passes read them */
	s = new_set(m, false, &list);
	if (!s)
		return TFM_ENOMEM;
	for (int i = 0; i < s->n; i++)
		off += tfm_lowp_align64(tfm_gemm_rows_pack_bytes(list[i].K, list[i].N));
	if (max_bytes > 0 && off > max_bytes)
	{
		tfm_lowp_set_free(s);
		free(list);
		return TFM_ELIMIT;
	}
	s->packed_bytes = off;
	if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
	{
		tfm_lowp_set_free(s);
		free(list);
		return TFM_ENOMEM;
	}
	off = 0;
	for (int i = 0; i < s->n; i++)
	{
		const mat  *x = &list[i];
		float	   *dst = (float *) (s->packed + off);

		tfm_gemm_rows_pack(dst, x->W, x->transposed ? 1 : x->N, x->transposed ? x->K : 1,
						   x->K, x->N);
		s->e[i].p32 = dst;
		off += tfm_lowp_align64(tfm_gemm_rows_pack_bytes(x->K, x->N));
	}
	s->prec = TFM_PREC_FP32;
	free(list);
	m->rows32 = s;
	return 0;
}

void
tfm_model_drop_rows(tfm_model *m)
{
	tfm_lowp_set_free(m->rows32);
	m->rows32 = NULL;
}

size_t
tfm_model_rows_bytes(const tfm_model *m)
{
	return m->rows32 ? m->rows32->packed_bytes : 0;
}

/* ---- training copies ------------------------------------------------------ */

int
tfm_model_set_train_precision(tfm_model *m, tfm_precision p)
{
	struct tfm_lowp_set *s;
	mat		   *list;
	size_t		off = 0;

	if (p == TFM_PREC_INT8 || p == TFM_PREC_INT4)
		return TFM_EUNSUPPORTED;
	if (tfm_model_train_precision(m) == p)
		return 0;
	tfm_lowp_set_free(m->lowp_train);
	m->lowp_train = NULL;
	if (p == TFM_PREC_FP32)
		return 0;
	s = new_set(m, true, &list);
	if (!s)
		return -1;
	for (int i = 0; i < s->n; i++)
		off += tfm_lowp_align64(tfm_bf16_pack_bytes(list[i].K, list[i].N)) +
			tfm_lowp_align64(tfm_bf16_pack_bytes(list[i].N, list[i].K));
	s->packed_bytes = off;
	free(list);
	if (!(s->packed = aligned_alloc(64, off > 0 ? off : 64)))
	{
		tfm_lowp_set_free(s);
		return -1;
	}
	off = 0;
	for (int i = 0; i < s->n; i++)
	{
		tfm_lowp_entry *e = &s->e[i];

		/* the buffers only: tfm_model_train_repack fills them */
		e->b = (tfm_bf16_weights) {(uint16_t *) (s->packed + off), e->K, e->N, 0};
		off += tfm_lowp_align64(tfm_bf16_pack_bytes(e->K, e->N));
		e->bt = (tfm_bf16_weights) {(uint16_t *) (s->packed + off), e->N, e->K, 0};
		off += tfm_lowp_align64(tfm_bf16_pack_bytes(e->N, e->K));
	}
	s->prec = p;
	s->training = true;
	m->lowp_train = s;
	return 0;
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
		tfm_lowp_entry *e = &s->e[i];
		ptrdiff_t	rs = e->transposed ? 1 : e->N,
					cs = e->transposed ? e->K : 1;

		tfm_bf16_pack(&e->b, e->b.data, e->W, rs, cs, e->K, e->N);
		tfm_bf16_pack(&e->bt, e->bt.data, e->W, cs, rs, e->N, e->K);
	}
}
