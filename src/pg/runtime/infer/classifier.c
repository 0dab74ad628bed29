/*
 * classifier.c — a classifier's inference: the model from the cache, a
 * value's ids as it reads them, and many inputs through varlen forward
 * passes of similar lengths within tfm.work_mem (tfm_classify, tfm_embed,
 * tfm_evaluate), pairs of texts with their token types (tfm_rerank,
 * tfm_zero_shot), and the logits of a head on every token (tfm_entities,
 * tfm_answer).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "tfm/blas.h"
#include "tfm/status_codes.h"

#include "tfm/precision.h"

#include "runtime/infer/infer.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"

/*
 * Tokens per varlen forward pass (tfm_batch.lens: the texts' rows one after
 * the other, nothing padded): texts join a pass while their tokens fit,
 * whatever their number; a longer text has a pass of its own.  Each text's
 * result is bit for bit the one it has alone, so the budget only trades
 * the products' width (more rows, better use of the kernels) against
 * activations that stay in L2 (a 128-token pass's widest, 128 × 1536 fp32
 * for a MiniLM shape, is 768 KB).  fp32, int8 and int4 run row kernels
 * whose rate is flat from ~100 rows, so 128 tokens; bf16 on AMX's 32 × 32
 * tiles gains from more rows, so 512 (doc/performance.md, "pass sizes").
 */
#define TFM_VARLEN_TOKENS 128
#define TFM_VARLEN_TOKENS_BF16 512

static int
varlen_tokens(const tfm_model *m)
{
	return tfm_model_precision(m) == TFM_PREC_BF16 ? TFM_VARLEN_TOKENS_BF16 : TFM_VARLEN_TOKENS;
}

static const char *const token_head_tasks[] = {NULL, "tfm_entities", "tfm_answer"};

/* a classifier of texts (its head on the pooled vector) */
tfm_model *
tfm_get_classifier(const char *name, const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_model_for(name, TFM_TASK_CLASSIFY, false, rowp);

	if ((*rowp)->cfg.token_head != TFM_TOKEN_HEAD_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has a head on every token, not a classifier of texts",
						(*rowp)->name),
				 errhint("It is read with %s.", token_head_tasks[(*rowp)->cfg.token_head])));
	return m;
}

/* a classifier with a head on every token of this kind (tfm_token_head), and a tokenizer */
tfm_model *
tfm_get_token_model(const char *name, int head, const TfmModelRow **rowp)
{
	tfm_model  *m = tfm_model_for(name, TFM_TASK_CLASSIFY, true, rowp);

	if ((*rowp)->cfg.token_head != head)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is not %s", (*rowp)->name,
						head == TFM_TOKEN_HEAD_TAGS ? "a token classifier (...ForTokenClassification)" :
						"an extractive question-answering model (...ForQuestionAnswering)")));
	return m;
}

/* the ids a classifier reads for one value; errors on empty text */
int32 *
tfm_classifier_ids(const TfmModelRow *row, Datum d, Oid type, int *n)
{
	TfmSpecials sp;
	int32	   *ids;

	tfm_model_specials(row, &sp);
	ids = tfm_datum_ids(d, type, row, false, n);
	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot classify an empty %s", tfm_column_is_text(type) ? "text" : "id array")));
	return tfm_classifier_input(row, &sp, ids, *n, n, NULL);
}

static int
cmp_by_len(const void *a, const void *b, void *arg)
{
	const int  *lens = arg;
	int			x = lens[*(const int *) a],
				y = lens[*(const int *) b];

	/* longest first: the first batch sizes the workspace once for all */
	return x > y ? -1 : (x < y);
}

/* one varlen pass of a group: its texts order[start .. start + b.B) */
typedef struct pass
{
	tfm_batch	b;
	int			start;
	float	   *logits,			/* (B, C) */
			   *pooled;			/* (B, d) or NULL */
} pass;

/*
 * The next pass from order[start]: texts join it while their tokens fit
 * the budget (at least one), fewer where it would not fit in a share of
 * tfm.work_mem (lanes: the passes run side by side); its ids (and types)
 * copied one after the other.
 */
static void
plan_pass(pass *p, tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
		  const int *lens, const int *order, int start, int n, int lanes, bool want_pooled,
		  bool token_out)
{
	int			T = Max(1, lens[order[start]]); /* the longest of the pass */
	int64		tokens = T;
	int			B;
	size_t		r = 0;
	int32	   *buf,
			   *tbuf = NULL;
	int		   *blens;

	for (B = 1; start + B < n && tokens + lens[order[start + B]] <= varlen_tokens(m); B++)
		tokens += lens[order[start + B]];
	while (B > 1 && !tfm_work_mem_fits(m, lanes * tfm_pass_bytes(m, B, T, 0, false, false)))
		B /= 2;
	buf = palloc(sizeof(int32) * (size_t) B * T);
	blens = palloc(sizeof(int) * B);
	if (types)
		tbuf = palloc(sizeof(int32) * (size_t) B * T);
	for (int i = 0; i < B; i++)
	{
		int			k = order[start + i];

		blens[i] = lens[k];
		memcpy(buf + r, ids[k], sizeof(int32) * lens[k]);
		if (types)
			memcpy(tbuf + r, types[k], sizeof(int32) * lens[k]);
		r += lens[k];
	}
	memset(p, 0, sizeof(*p));
	p->b.B = B;
	p->b.T = T;
	p->b.input = buf;
	p->b.lens = blens;
	p->b.types = tbuf;
	if (token_out)
		p->b.token_logits = palloc(sizeof(float) * Max(r, 1) * row->n_labels);
	p->start = start;
	p->logits = palloc(sizeof(float) * B * row->n_labels);
	p->pooled = want_pooled ? palloc(sizeof(float) * B * m->cfg.d_model) : NULL;
}

static void
free_pass(pass *p)
{
	pfree((void *) p->b.input);
	pfree((void *) p->b.lens);
	if (p->b.types)
		pfree((void *) p->b.types);
	if (p->b.token_logits)
		pfree(p->b.token_logits);
	pfree(p->logits);
	if (p->pooled)
		pfree(p->pooled);
}

/*
 * The g passes of a group side by side (tfm_model_forward_lanes).  Their
 * threads run no PostgreSQL code: they stop at a cancel or a statement
 * timeout (QueryCancelPending), which is served here; if serving it did
 * not end the call, the passes that stopped run again (those that ended
 * are kept).  Other interrupts wait for the group's end.  Where interrupts
 * are held off, or the flag stays set once served, nothing stops them.
 */
static int
run_lanes(tfm_model *m, pass *group, int g, float **logits, float **vecs)
{
	tfm_batch	b[TFM_MAX_THREADS];
	float	   *lo[TFM_MAX_THREADS],
			   *po[TFM_MAX_THREADS];
	int			status[TFM_MAX_THREADS],
				idx[TFM_MAX_THREADS],
				n = g;
	bool		stops = INTERRUPTS_CAN_BE_PROCESSED();

	for (int i = 0; i < g; i++)
		idx[i] = i;
	for (;;)
	{
		int			rc,
					left = 0;

		for (int i = 0; i < n; i++)
		{
			b[i] = group[idx[i]].b;
			lo[i] = logits[idx[i]];
			po[i] = vecs[idx[i]];
		}
		rc = tfm_model_forward_lanes(m, b, n, lo, po,
									 stops ? (const volatile int *) &QueryCancelPending : NULL,
									 status);
		if (rc != TFM_ECANCELED)
			return rc;
		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
			if (status[i] == TFM_ECANCELED)
				idx[left++] = idx[i];
			else if (status[i] != 0)
				return status[i];
		n = left;
		if (n == 0)
			return 0;
		/* a flag that serving did not clear would stop every run: none then */
		stops = stops && !QueryCancelPending;
	}
}

/*
 * n inputs (types: their token types, or NULL) through varlen passes of
 * similar lengths (longest first, so the first pass sizes the workspace),
 * tfm.threads passes at a time side by side (tfm_model_forward_lanes)
 * where a share of tfm.work_mem holds each; each input's probabilities
 * (probs; its logits where raw) or pooled vector (pooled) to its row k,
 * the same bits as its pass alone
 */
static void
run_passes(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types, const int *lens,
		   int n, float *probs, bool raw, float *pooled, float **token_out)
{
	int			C = row->n_labels,
				d = m->cfg.d_model;
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	pass		group[TFM_MAX_THREADS];
	float	   *logits[TFM_MAX_THREADS],
			   *vecs[TFM_MAX_THREADS];

	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), cmp_by_len, (void *) lens);
	for (int start = 0; start < n;)
	{
		int			lanes = Min(tfm_get_threads(), TFM_MAX_THREADS),
					g = 0,
					rc;

		CHECK_FOR_INTERRUPTS();
		/* as many lanes as a share of tfm.work_mem holds the longest pass in */
		while (lanes > 1 &&
			   !tfm_work_mem_fits(m, lanes * tfm_pass_bytes(m, 1, Max(1, lens[order[start]]),
															 0, false, false)))
			lanes--;
		tfm_work_mem_check(m, tfm_pass_bytes(m, 1, Max(1, lens[order[start]]), 0, false, false),
						   "running", row->name, "the length of the input");
		for (; g < lanes && start < n; g++)
		{
			plan_pass(&group[g], m, row, ids, types, lens, order, start, n, lanes,
					  pooled != NULL, token_out != NULL);
			start += group[g].b.B;
			logits[g] = group[g].logits;
			vecs[g] = group[g].pooled;
		}
		if (g == 1)
		{
			/* one pass: on the model's own workspace, polled between blocks */
			pass	   *p = &group[0];

			rc = tfm_model_forward(m, &p->b, false, 0);
			if (rc == 0)
			{
				memcpy(p->logits, m->logits, sizeof(float) * p->b.B * C);
				if (p->pooled)
					memcpy(p->pooled, m->pooled, sizeof(float) * p->b.B * d);
			}
		}
		else
			rc = run_lanes(m, group, g, logits, vecs);
		tfm_check_pass(rc, row->name);
		for (int q = 0; q < g; q++)
		{
			pass	   *p = &group[q];
			size_t		r = 0;

			for (int i = 0; i < p->b.B; i++)
			{
				int			k = order[p->start + i];

				if (token_out)
					memcpy(token_out[k], p->b.token_logits + r * C, sizeof(float) * lens[k] * C);
				r += lens[k];
				if (probs)
				{
					memcpy(probs + (size_t) k * C, p->logits + (size_t) i * C, sizeof(float) * C);
					if (!raw)
						tfm_softmax_rows(probs + (size_t) k * C, 1, C);
				}
				if (pooled)
					memcpy(pooled + (size_t) k * d, p->pooled + (size_t) i * d, sizeof(float) * d);
			}
			free_pass(p);
		}
	}
	/*
	 * The lanes' workspaces stay with the cached model, as its own does
	 * (made afresh each call, 32 texts at bf16 ran 16% slower), while
	 * with it they fit in tfm.work_mem
	 */
	if (tfm_model_held_bytes(m) > tfm_work_mem_bytes())
		tfm_model_free_lanes(m);
	pfree(order);
}

void
tfm_classifier_run(tfm_model *m, const TfmModelRow *row, int32 **ids, const int *lens, int n,
				   float *probs, float *pooled)
{
	run_passes(m, row, ids, NULL, lens, n, probs, false, pooled, NULL);
}

void
tfm_classifier_run_pairs(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
						 const int *lens, int n, float *logits)
{
	run_passes(m, row, ids, types, lens, n, logits, true, NULL, NULL);
}

/*
 * n inputs (types may be NULL) through a token head's varlen passes: each
 * input's (lens[k], n_labels) logits, a row per token, to tokens[k]
 */
void
tfm_classifier_run_tokens(tfm_model *m, const TfmModelRow *row, int32 **ids, int32 **types,
						  const int *lens, int n, float **tokens)
{
	run_passes(m, row, ids, types, lens, n, NULL, true, NULL, tokens);
}
