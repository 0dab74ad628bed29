/*
 * train_data.c — rows to examples to batches (see train_data.h).
 *
 * Which rows are held out for validation depends only on the row's tokens
 * (a hash of the first column's ids, or for an lm row of each sequence of
 * max_len tokens), not on its position or the seed: the same rows are held
 * out in every epoch, every run and after a resume, and duplicates of a
 * text fall on the same side.  Only the caps (val_max_rows, val_max_tokens)
 * depend on the order, once reached.
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "tfm/truncate.h"
#include "runtime/train/train_data.h"
#include "runtime/train/task_rows.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

void
tfm_reader_init(TfmReader *r, const TfmModelRow *row, const char *query)
{
	int			want = row->cfg.task == TFM_TASK_LM ? 1 : 2;
	const char *expect = row->cfg.task == TFM_TASK_CLASSIFY ? "(text or int[], label)" :
		row->cfg.task == TFM_TASK_LM ? "(text or int[])" : "(source text or int[], target text or int[])";
	TupleDesc	td;

	r->row = row;
	r->kind = TFM_ROWS_LABEL;
	r->pair = false;
	tfm_model_specials(row, &r->sp);
	r->plan = SPI_prepare(query, 0, NULL);
	if (r->plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("cannot prepare the training query: %s", SPI_result_code_string(SPI_result))));
	if (!SPI_is_cursor_plan(r->plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the training query must be a single SELECT")));
	/* column check: open once to see the result's row type */
	r->portal = SPI_cursor_open(NULL, r->plan, NULL, NULL, true);
	td = r->portal->tupDesc;
	r->ncols = td->natts;
	if (row->cfg.task == TFM_TASK_CLASSIFY)
	{
		/* every kind of a classifier's rows (task_rows.c) */
		tfm_task_columns(r, td);
		SPI_cursor_close(r->portal);
		r->portal = NULL;
		return;
	}
	if (td->natts != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a %s model reads rows %s, but the query returns %d column%s",
						row->task, expect, td->natts, td->natts == 1 ? "" : "s")));
	for (int i = 0; i < td->natts; i++)
	{
		Oid			t = TupleDescAttr(td, i)->atttypid;

		r->types[i] = t;
		if (row->cfg.task == TFM_TASK_CLASSIFY && i == 1)
			continue;			/* labels: any type, compared as text */
		if (!tfm_column_is_ids(t) && !tfm_column_is_text(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column %d of the training query is %s; expected text or int[]",
							i + 1, format_type_be(t)),
					 errdetail("A %s model reads rows %s.", row->task, expect)));
	}
	SPI_cursor_close(r->portal);
	r->portal = NULL;
}

char *
tfm_subquery(const char *query)
{
	char	   *q = pstrdup(query);
	size_t		n = strlen(q);

	while (n > 0 && (q[n - 1] == ';' || isspace((unsigned char) q[n - 1])))
		q[--n] = '\0';
	/* a newline ends a trailing -- comment before the closing parenthesis */
	return psprintf("%s\n", q);
}

void
tfm_reader_open(TfmReader *r)
{
	r->portal = SPI_cursor_open(NULL, r->plan, NULL, NULL, true);
	r->row_number = 0;
	r->val_rows = 0;
	r->val_candidates = 0;
	r->val_tokens = 0;
	r->skipped_null = 0;
	r->truncated = 0;
}

/*
 * Open a new pass at row rows + 1 (resuming after a commit closed the
 * cursor): the rows before it are skipped unread.  Counters other than the
 * row number are the caller's to restore.
 */
void
tfm_reader_open_at(TfmReader *r, int64 rows)
{
	tfm_reader_open(r);
	if (rows > 0)
	{
		SPI_cursor_move(r->portal, true, (long) rows);
		if ((int64) SPI_processed != rows)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the training query returned %lld rows, fewer than the %lld the run had read",
							(long long) SPI_processed, (long long) rows),
					 errdetail("A run can only be resumed over the same rows in the same order.")));
	}
	r->row_number = rows;
}

void
tfm_reader_close(TfmReader *r)
{
	if (r->portal)
		SPI_cursor_close(r->portal);
	r->portal = NULL;
}

/* keep at most max ids: the head (seq2seq) */
static int
truncate_ids(TfmReader *r, int32 *ids, int n, int max)
{
	if (n > max)
		r->truncated++;
	return tfm_truncate_ids(ids, n, max, TFM_TRUNC_HEAD);
}

static int
label_index(TfmReader *r, Datum d, Oid type)
{
	Oid			out;
	bool		varlena;
	char	   *s;

	getTypeOutputInfo(type, &out, &varlena);
	s = OidOutputFunctionCall(out, d);
	for (int i = 0; i < r->row->n_labels; i++)
		if (strcmp(r->row->labels[i], s) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("label \"%s\" is not one of model \"%s\"'s labels", s, r->row->name)));
	return -1;
}

/* the seed of the hold-out hash: fixed, so a run's seed does not move rows */
#define TFM_VAL_HASH_SEED UINT64CONST(0x76616C6964617465)

/* held out: the hash of ids below the fraction, and under the caps */
static bool
hold_out(TfmReader *r, const int32 *ids, int n)
{
	uint32		threshold = (uint32) (r->val_fraction * 4294967295.0);
	uint32		h;

	if (r->val_fraction <= 0.0f || n <= 0)
		return false;
	r->val_candidates++;
	h = (uint32) (hash_bytes_extended((const unsigned char *) ids, n * (int) sizeof(int32),
									  TFM_VAL_HASH_SEED) >> 32);
	if (h >= threshold ||
		(r->val_max_rows > 0 && r->val_rows >= r->val_max_rows) ||
		(r->val_max_tokens > 0 && r->val_tokens + n + 1 > r->val_max_tokens))
		return false;
	r->val_rows++;
	r->val_tokens += n + 1;
	return true;
}

/* append an example to a growing array */
static void
push_example(TfmExample **a, int *n, int *cap, const TfmExample *ex)
{
	if (*n == *cap)
	{
		*cap *= 2;
		*a = repalloc_huge(*a, sizeof(TfmExample) * *cap);
	}
	(*a)[(*n)++] = *ex;
}

/*
 * lm: cut a row into sequences of max_len tokens, hold out those whose
 * hash says so, and pass the runs of training sequences between them on as
 * pieces (no <eos> after a piece the row goes on from)
 */
static void
split_lm_row(TfmReader *r, const TfmExample *ex, TfmExample **tr, int *ntr, int *trcap,
			 TfmExample **va, int *nva, int *vacap)
{
	int			P = r->row->cfg.max_len;
	int			run_start = 0;

	for (int at = 0; at < ex->nsrc; at += P)
	{
		int			len = Min(P, ex->nsrc - at);
		TfmExample	piece = *ex;

		if (!hold_out(r, ex->src + at, len))
			continue;
		if (at > run_start)
		{
			piece.src = ex->src + run_start;
			piece.nsrc = at - run_start;
			piece.cont = true;
			push_example(tr, ntr, trcap, &piece);
		}
		piece.src = ex->src + at;
		piece.nsrc = len;
		piece.cont = at + len < ex->nsrc;
		push_example(va, nva, vacap, &piece);
		run_start = at + len;
	}
	if (run_start < ex->nsrc || ex->nsrc == 0)
	{
		TfmExample	piece = *ex;

		piece.src = ex->src + run_start;
		piece.nsrc = ex->nsrc - run_start;
		piece.cont = false;
		push_example(tr, ntr, trcap, &piece);
	}
}

/*
 * A classifier's row of pairs, (text, spans) or (question, context,
 * answer) (task_rows.c): its examples (a long text's or context's
 * windows), all held out or none, by the hash of the first one's tokens
 */
static void
task_row(TfmReader *r, Datum *dv, TfmExample **tr, int *ntr, int *trcap, TfmExample **va,
		 int *nva, int *vacap)
{
	TfmExample *ex,
				one;
	int			n = 1;
	bool		held_out;

	if (r->pair)
	{
		memset(&one, 0, sizeof(one));
		one.src = tfm_task_pair(r, DatumGetTextPP(dv[0]), DatumGetTextPP(dv[1]), &one.types,
								&one.nsrc);
		if (r->kind == TFM_ROWS_SCORE)
			one.score = tfm_task_score(r, dv[2], r->types[2]);
		else
			one.label = label_index(r, dv[2], r->types[2]);
		ex = &one;
	}
	else if (r->kind == TFM_ROWS_TAGS)
		ex = tfm_task_tags(r, DatumGetTextPP(dv[0]), DatumGetJsonbP(dv[1]), &n);
	else
		ex = tfm_task_answer(r, DatumGetTextPP(dv[0]), DatumGetTextPP(dv[1]), dv[2], r->types[2],
							 dv[3], r->types[3], &n);
	held_out = hold_out(r, ex[0].src, ex[0].nsrc);
	for (int k = 0; k < n; k++)
	{
		if (held_out)
			push_example(va, nva, vacap, &ex[k]);
		else
			push_example(tr, ntr, trcap, &ex[k]);
	}
}

bool
tfm_reader_next(TfmReader *r, TfmExample **train, int *ntrain,
				TfmExample **val, int *nval)
{
	const tfm_config *c = &r->row->cfg;
	SPITupleTable *tt;
	uint64		n;
	TfmExample *tr,
			   *va;
	int			trcap,
				vacap;

	{
		/* SPI returns in its own procedure context: keep the caller's */
		MemoryContext cxt = CurrentMemoryContext;

		SPI_cursor_fetch(r->portal, true, r->chunk_rows);
		MemoryContextSwitchTo(cxt);
	}
	n = SPI_processed;
	tt = SPI_tuptable;
	*ntrain = *nval = 0;
	if (n == 0)
	{
		SPI_freetuptable(tt);
		return false;
	}
	trcap = vacap = (int) n;
	tr = palloc(sizeof(TfmExample) * trcap);
	va = palloc(sizeof(TfmExample) * vacap);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = tt->vals[i];
		bool		null0,
					null1 = false,
					anynull;
		Datum		d0 = SPI_getbinval(tup, tt->tupdesc, 1, &null0);
		Datum		d1 = r->ncols > 1 ? SPI_getbinval(tup, tt->tupdesc, 2, &null1) : (Datum) 0;
		Datum		dv[4] = {d0, d1, 0, 0};
		TfmExample	ex;
		bool		held_out;

		r->row_number++;
		anynull = null0 || null1;
		for (int k = 2; k < r->ncols; k++)
		{
			bool		nk;

			dv[k] = SPI_getbinval(tup, tt->tupdesc, k + 1, &nk);
			anynull |= nk;
		}
		if (anynull)
		{
			r->skipped_null++;
			continue;
		}
		if (c->task == TFM_TASK_CLASSIFY && (r->pair || r->kind == TFM_ROWS_TAGS ||
											 r->kind == TFM_ROWS_SPANS))
		{
			task_row(r, dv, &tr, ntrain, &trcap, &va, nval, &vacap);
			continue;
		}
		memset(&ex, 0, sizeof(ex));
		ex.src = tfm_datum_ids(d0, r->types[0], r->row, false, &ex.nsrc);
		if (tfm_column_is_text(r->types[0]))
		{
			text	   *t = DatumGetTextPP(d0);

			ex.nbytes = VARSIZE_ANY_EXHDR(t);
			ex.nchars = pg_mbstrlen_with_len(VARDATA_ANY(t), (int) ex.nbytes);
		}
		if (c->task == TFM_TASK_LM)
		{
			split_lm_row(r, &ex, &tr, ntrain, &trcap, &va, nval, &vacap);
			continue;
		}
		/* held out by a hash of the input's tokens, until the caps are reached */
		held_out = hold_out(r, ex.src, ex.nsrc);
		if (c->task == TFM_TASK_CLASSIFY)
		{
			if (r->kind == TFM_ROWS_SCORE)
				ex.score = tfm_task_score(r, d1, r->types[1]);
			else
				ex.label = label_index(r, d1, r->types[1]);
			ex.src = tfm_classifier_input(r->row, &r->sp, ex.src, ex.nsrc, &ex.nsrc,
										  &r->truncated);
		}
		else
		{
			ex.tgt = tfm_datum_ids(d1, r->types[1], r->row, true, &ex.ntgt);
			ex.nsrc = truncate_ids(r, ex.src, ex.nsrc, c->max_len);
			ex.ntgt = truncate_ids(r, ex.tgt, ex.ntgt, c->max_len - 1);
			if (ex.nsrc == 0)
			{
				ex.src = palloc(sizeof(int32));
				ex.src[0] = r->sp.eos;
				ex.nsrc = 1;
			}
		}
		if (held_out)
			push_example(&va, nval, &vacap, &ex);
		else
			push_example(&tr, ntrain, &trcap, &ex);
	}
	SPI_freetuptable(tt);
	*train = tr;
	*val = va;
	return true;
}

static void
alloc_batch(TfmBatchBuf *bb, int B, int T, int Tt)
{
	memset(bb, 0, sizeof(*bb));
	bb->input = palloc(sizeof(int32) * B * T);
	if (Tt > 0)
	{
		bb->dec_input = palloc(sizeof(int32) * B * Tt);
		bb->target = palloc(sizeof(int32) * B * Tt);
	}
	bb->b.B = B;
	bb->b.T = T;
	bb->b.Tt = Tt;
	bb->b.input = bb->input;
	bb->b.dec_input = bb->dec_input;
	bb->b.target = bb->target;
}

/* an (n, T) array of the examples' per-token values (src's length each), the rest fill */
static int32 *
per_token(const TfmExample *ex, int n, int T, size_t field, int32 fill)
{
	int32	   *a = palloc(sizeof(int32) * n * T);

	for (int i = 0; i < n; i++)
	{
		const int32 *v = *(int32 *const *) ((const char *) &ex[i] + field);

		for (int t = 0; t < T; t++)
			a[(size_t) i * T + t] = v && t < ex[i].nsrc ? v[t] : fill;
	}
	return a;
}

void
tfm_batch_classify(TfmBatchBuf *bb, const TfmExample *ex, int n, int pad, int kind)
{
	int			T = 1;

	for (int i = 0; i < n; i++)
		T = Max(T, ex[i].nsrc);
	alloc_batch(bb, n, T, 0);
	bb->labels = palloc(sizeof(int32) * n);
	bb->b.labels = bb->labels;
	for (int i = 0; i < n; i++)
	{
		int32	   *row = bb->input + (size_t) i * T;

		memcpy(row, ex[i].src, sizeof(int32) * ex[i].nsrc);
		for (int t = ex[i].nsrc; t < T; t++)
			row[t] = pad;
		bb->labels[i] = ex[i].label;
		bb->tokens += ex[i].nsrc;
	}
	/* a pair's token types (type 0 on the padding) */
	if (n > 0 && ex[0].types)
		bb->b.types = bb->types = per_token(ex, n, T, offsetof(TfmExample, types), 0);
	switch (kind)
	{
		case TFM_ROWS_SCORE:
			bb->scores = palloc(sizeof(float) * n);
			for (int i = 0; i < n; i++)
				bb->scores[i] = ex[i].score;
			bb->b.scores = bb->scores;
			bb->b.labels = NULL;
			break;
		case TFM_ROWS_TAGS:
			bb->b.token_labels = bb->token_labels =
				per_token(ex, n, T, offsetof(TfmExample, tags), TFM_LABEL_IGNORE);
			bb->b.labels = NULL;
			break;
		case TFM_ROWS_SPANS:
			bb->spans = palloc(sizeof(int32) * 2 * n);
			for (int i = 0; i < n; i++)
			{
				bb->spans[2 * i] = ex[i].label;
				bb->spans[2 * i + 1] = ex[i].span_end;
			}
			bb->b.spans = bb->spans;
			bb->b.labels = NULL;
			break;
		default:
			break;
	}
}

void
tfm_batch_seq2seq(TfmBatchBuf *bb, const TfmExample *ex, int n, const TfmSpecials *sp)
{
	int			T = 1,
				Tt = 1;

	for (int i = 0; i < n; i++)
	{
		T = Max(T, ex[i].nsrc);
		Tt = Max(Tt, ex[i].ntgt + 1);
	}
	alloc_batch(bb, n, T, Tt);
	for (int i = 0; i < n; i++)
	{
		int32	   *in = bb->input + (size_t) i * T;
		int32	   *di = bb->dec_input + (size_t) i * Tt;
		int32	   *tg = bb->target + (size_t) i * Tt;

		memcpy(in, ex[i].src, sizeof(int32) * ex[i].nsrc);
		for (int t = ex[i].nsrc; t < T; t++)
			in[t] = sp->pad;
		di[0] = sp->bos;
		memcpy(di + 1, ex[i].tgt, sizeof(int32) * ex[i].ntgt);
		memcpy(tg, ex[i].tgt, sizeof(int32) * ex[i].ntgt);
		tg[ex[i].ntgt] = sp->eos;
		for (int t = ex[i].ntgt + 1; t < Tt; t++)
			di[t] = tg[t] = sp->pad;
		bb->tokens += ex[i].nsrc + ex[i].ntgt + 1;
	}
}

void
tfm_batch_lm(TfmBatchBuf *bb, const int32 *stream, const int64 *offsets, int B, int T)
{
	alloc_batch(bb, B, T, 0);
	bb->target = palloc(sizeof(int32) * B * T);
	bb->b.target = bb->target;
	for (int i = 0; i < B; i++)
	{
		memcpy(bb->input + (size_t) i * T, stream + offsets[i], sizeof(int32) * T);
		memcpy(bb->target + (size_t) i * T, stream + offsets[i] + 1, sizeof(int32) * T);
	}
	bb->tokens = (int64) B * T;
}

double
tfm_lm_window_loss(tfm_model *m, const int32 *stream, int64 pos, int w, const char *doing,
				   const char *name, const char *pass_model, int *cnt)
{
	TfmBatchBuf bb;
	int64		off = pos;

	tfm_batch_lm(&bb, stream, &off, 1, w);
	tfm_batch_check(m, &bb.b, false, doing, name, "the model's max_len");
	tfm_check_pass(tfm_model_forward(m, &bb.b, false, 0), pass_model);
	return tfm_check_loss(tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, cnt), cnt, NULL);
}
