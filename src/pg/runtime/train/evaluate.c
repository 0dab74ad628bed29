/*
 * evaluate.c — what tfm_evaluate(model, query) measures (sql/train/evaluate_query.c):
 * a model's quality on a query's rows, streamed through a cursor in
 * bounded chunks.
 *
 * classify: (input, label) rows → accuracy, mean loss, macro F1, per-class
 * precision / recall / F1 / support (jsonb) and the confusion matrix (jsonb:
 * {"true label": {"predicted label": count}}).
 * lm: (text) rows scored as the training stream (each row's tokens, then
 * <eos>) in consecutive windows of max_len + 1 tokens, so every token after
 * the first is predicted exactly once → mean loss (nats per predicted
 * token), perplexity, nats per character and bits per byte over the text
 * (each row's <eos> counted as one character / byte, like a line break),
 * and the tokens predicted.
 * seq2seq: (source, reference) rows grouped by source, so a source on
 * several rows is translated once (tfm_translate's defaults: an imported
 * model's generation settings, else beam 4 and length penalty 0.6) and scored
 * against all its references → corpus BLEU (sacreBLEU's default), the
 * fraction of sources translated exactly as one of their references, the
 * mean teacher-forced loss per reference token, and the rows scored.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "tfm/bleu.h"
#include "runtime/train/evaluate.h"
#include "runtime/infer/infer.h"
#include "runtime/train/train_data.h"
#include "runtime/bleu_stats.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

static void
json_string(StringInfo s, const char *str)
{
	escape_json(s, str);
}

/*
 * The next chunk of rows, read into context chunk, which is current on
 * return (*old: the caller's); false at the end, in the caller's context.
 */
static bool
next_chunk(TfmReader *rd, MemoryContext chunk, TfmExample **ex, int *nex, MemoryContext *old)
{
	TfmExample *val;
	int			nval;

	MemoryContextReset(chunk);
	*old = MemoryContextSwitchTo(chunk);
	if (tfm_reader_next(rd, ex, nex, &val, &nval))
		return true;
	MemoryContextSwitchTo(*old);
	return false;
}

static void
evaluate_classify(tfm_model *m, const TfmModelRow *row, TfmReader *rd, Datum *v, bool *nulls,
				  MemoryContext result_cxt)
{
	int			C = row->n_labels;
	int64	   *conf = palloc0(sizeof(int64) * C * C);	/* [true][pred] */
	int64		n = 0,
				correct = 0;
	double		loss = 0.0,
				macro_f1 = 0.0;
	MemoryContext chunk = AllocSetContextCreate(CurrentMemoryContext, "tfm evaluate chunk",
												ALLOCSET_DEFAULT_SIZES);
	StringInfoData pc,
				cm;

	tfm_reader_open(rd);
	for (;;)
	{
		TfmExample *ex;
		int			nex;
		MemoryContext old;
		int32	  **ids;
		int		   *lens;
		float	   *p;

		if (!next_chunk(rd, chunk, &ex, &nex, &old))
			break;
		ids = palloc(sizeof(int32 *) * Max(nex, 1));
		lens = palloc(sizeof(int) * Max(nex, 1));
		for (int i = 0; i < nex; i++)
		{
			ids[i] = ex[i].src;
			lens[i] = ex[i].nsrc;
		}
		p = palloc(sizeof(float) * C * Max(nex, 1));
		tfm_classifier_run(m, row, ids, lens, nex, p, NULL);
		for (int i = 0; i < nex; i++)
		{
			const float *pi = p + (size_t) i * C;
			int			best = 0;

			for (int k = 1; k < C; k++)
				if (pi[k] > pi[best])
					best = k;
			conf[ex[i].label * C + best]++;
			correct += best == ex[i].label;
			loss -= log(Max(pi[ex[i].label], 1e-30f));
			n++;
		}
		MemoryContextSwitchTo(old);
	}
	tfm_reader_close(rd);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the evaluation query returned no rows to score")));

	initStringInfo(&pc);
	initStringInfo(&cm);
	appendStringInfoChar(&pc, '{');
	appendStringInfoChar(&cm, '{');
	for (int k = 0; k < C; k++)
	{
		int64		tp = conf[k * C + k],
					pred = 0,
					actual = 0;
		double		prec,
					rec,
					f1;

		for (int j = 0; j < C; j++)
		{
			pred += conf[j * C + k];
			actual += conf[k * C + j];
		}
		prec = pred ? (double) tp / pred : 0.0;
		rec = actual ? (double) tp / actual : 0.0;
		f1 = prec + rec > 0 ? 2 * prec * rec / (prec + rec) : 0.0;
		macro_f1 += f1 / C;
		if (k > 0)
		{
			appendStringInfoString(&pc, ", ");
			appendStringInfoString(&cm, ", ");
		}
		json_string(&pc, row->labels[k]);
		appendStringInfo(&pc, ": {\"precision\": %.6g, \"recall\": %.6g, \"f1\": %.6g, \"support\": " INT64_FORMAT "}",
						 prec, rec, f1, actual);
		json_string(&cm, row->labels[k]);
		appendStringInfoString(&cm, ": {");
		for (int j = 0; j < C; j++)
		{
			if (j > 0)
				appendStringInfoString(&cm, ", ");
			json_string(&cm, row->labels[j]);
			appendStringInfo(&cm, ": " INT64_FORMAT, conf[k * C + j]);
		}
		appendStringInfoChar(&cm, '}');
	}
	appendStringInfoChar(&pc, '}');
	appendStringInfoChar(&cm, '}');

	v[O_ACCURACY] = Float8GetDatum((double) correct / n);
	v[O_LOSS] = Float8GetDatum(loss / n);
	v[O_MACRO_F1] = Float8GetDatum(macro_f1);
	{
		/* the result outlives SPI_finish */
		MemoryContext old = MemoryContextSwitchTo(result_cxt);

		v[O_PER_CLASS] = DirectFunctionCall1(jsonb_in, CStringGetDatum(pc.data));
		v[O_CONFUSION] = DirectFunctionCall1(jsonb_in, CStringGetDatum(cm.data));
		MemoryContextSwitchTo(old);
	}
	v[O_ROWS] = Int64GetDatum(n);
	nulls[O_ACCURACY] = nulls[O_LOSS] = nulls[O_MACRO_F1] = false;
	nulls[O_PER_CLASS] = nulls[O_CONFUSION] = nulls[O_ROWS] = false;
}

/* score windows of a stream; keeps the last token to start the next window */
static int64
score_stream(tfm_model *m, const char *name, const int32 *stream, int64 len, double *nats,
			 int64 *tokens)
{
	int			T = m->cfg.max_len;
	int64		pos = 0;

	while (len - pos >= T + 1)
	{
		int			cnt;

		CHECK_FOR_INTERRUPTS();
		*nats += tfm_lm_window_loss(m, stream, pos, T, "evaluating", name, NULL, &cnt);
		*tokens += cnt;
		pos += T;
	}
	return pos;
}

static void
evaluate_lm(tfm_model *m, const char *name, TfmReader *rd, Datum *v, bool *nulls)
{
	double		nats = 0.0;
	int64		tokens = 0,
				chars = 0,
				bytes = 0,
				rows = 0;
	bool		text_input = tfm_column_is_text(rd->types[0]);
	int32	   *carry = NULL;
	int64		ncarry = 0;
	MemoryContext keep = AllocSetContextCreate(CurrentMemoryContext, "tfm evaluate carry",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext chunk = AllocSetContextCreate(CurrentMemoryContext, "tfm evaluate chunk",
												ALLOCSET_DEFAULT_SIZES);

	tfm_reader_open(rd);
	for (;;)
	{
		TfmExample *ex;
		int			nex;
		MemoryContext old;
		int64		len = ncarry,
					used;
		int32	   *stream;

		if (!next_chunk(rd, chunk, &ex, &nex, &old))
			break;
		for (int i = 0; i < nex; i++)
			len += ex[i].nsrc + 1;
		stream = palloc_extended(sizeof(int32) * Max(len, 1), MCXT_ALLOC_HUGE);
		if (ncarry)
			memcpy(stream, carry, sizeof(int32) * ncarry);
		len = ncarry;
		for (int i = 0; i < nex; i++)
		{
			memcpy(stream + len, ex[i].src, sizeof(int32) * ex[i].nsrc);
			len += ex[i].nsrc;
			stream[len++] = rd->sp.eos;
			chars += ex[i].nchars + 1;
			bytes += ex[i].nbytes + 1;
			rows++;
		}
		used = score_stream(m, name, stream, len, &nats, &tokens);
		/* the unscored rest (and the last scored token) carries over */
		MemoryContextSwitchTo(keep);
		ncarry = len - used;
		{
			int32	   *c = palloc(sizeof(int32) * Max(ncarry, 1));

			memcpy(c, stream + used, sizeof(int32) * ncarry);
			if (carry)
				pfree(carry);
			carry = c;
		}
		MemoryContextSwitchTo(old);
	}
	tfm_reader_close(rd);
	/* the last, shorter window */
	if (ncarry >= 2)
	{
		TfmBatchBuf bb;
		int64		off = 0;
		int			cnt;

		tfm_batch_lm(&bb, carry, &off, 1, (int) ncarry - 1);
		tfm_batch_check(m, &bb.b, false, "evaluating", name, "the model's max_len");
		tfm_check_pass(tfm_model_forward(m, &bb.b, false, 0), NULL);
		nats += tfm_check_loss(tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &cnt), &cnt, NULL);
		tokens += cnt;
	}
	if (tokens == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the evaluation query has no tokens to score")));
	v[O_LOSS] = Float8GetDatum(nats / tokens);
	v[O_PERPLEXITY] = Float8GetDatum(exp(nats / tokens));
	v[O_TOKENS] = Int64GetDatum(tokens);
	v[O_ROWS] = Int64GetDatum(rows);
	nulls[O_LOSS] = nulls[O_PERPLEXITY] = nulls[O_TOKENS] = nulls[O_ROWS] = false;
	if (text_input && chars > 0)
	{
		v[O_NATS_PER_CHAR] = Float8GetDatum(nats / chars);
		v[O_BITS_PER_BYTE] = Float8GetDatum(nats / M_LN2 / bytes);
		nulls[O_NATS_PER_CHAR] = nulls[O_BITS_PER_BYTE] = false;
	}
}

#define EVAL_GROUPS 32

static void
evaluate_seq2seq(tfm_model *m, const TfmModelRow *row, const char *query, Datum *v, bool *nulls)
{
	StringInfoData sql;
	SPIPlanPtr	plan;
	Portal		portal;
	int64		stats[TFM_BLEU_N_STATS] = {0};
	int64		sources = 0,
				exact = 0,
				rows = 0,
				tokens = 0;
	double		nats = 0.0;
	TfmSpecials sp;
	TrOpts		o = TR_OPTS_UNSET;
	const char *ttok = row->target_tokenizer ? row->target_tokenizer : row->tokenizer;
	MemoryContext chunk = AllocSetContextCreate(CurrentMemoryContext, "tfm evaluate chunk",
												ALLOCSET_DEFAULT_SIZES);

	tfm_tr_defaults(&o, row);
	tfm_model_specials(row, &sp);
	{
		/* the query's own columns first: (source, reference) */
		TfmReader	rd;

		memset(&rd, 0, sizeof(rd));
		tfm_reader_init(&rd, row, query);
		if (!tfm_column_is_text(rd.types[0]) || !tfm_column_is_text(rd.types[1]))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("a seq2seq model is evaluated on (source text, reference text) rows")));
	}
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT tfm_src::text, array_agg(tfm_ref::text) FROM (%s) AS tfm_q(tfm_src, tfm_ref) "
					 "WHERE tfm_src IS NOT NULL AND tfm_ref IS NOT NULL GROUP BY 1", tfm_subquery(query));
	plan = SPI_prepare(sql.data, 0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("cannot prepare the evaluation query: %s", SPI_result_code_string(SPI_result)),
				 errdetail("A seq2seq model is evaluated on (source, reference) text rows.")));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPITupleTable *tt;
		int			n;
		MemoryContext old;
		int32	  **src;
		int		   *lens;
		tfm_hyp    *h;

		{
			MemoryContext cxt = CurrentMemoryContext;

			SPI_cursor_fetch(portal, true, EVAL_GROUPS);
			MemoryContextSwitchTo(cxt);
		}
		n = (int) SPI_processed;
		tt = SPI_tuptable;
		if (n == 0)
			break;
		MemoryContextReset(chunk);
		old = MemoryContextSwitchTo(chunk);
		src = palloc(sizeof(int32 *) * n);
		lens = palloc(sizeof(int) * n);
		for (int i = 0; i < n; i++)
		{
			bool		isnull;

			src[i] = tfm_source_ids(row, DatumGetTextPP(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull)),
									&lens[i]);
		}
		h = palloc(sizeof(tfm_hyp) * n);
		tfm_translate_sources(m, row, src, lens, n, &o, 1, h);
		for (int i = 0; i < n; i++)
		{
			bool		isnull;
			ArrayType  *refs = DatumGetArrayTypeP(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull));
			Datum	   *elems;
			bool	   *enulls;
			int			nref;
			const char **rp;
			size_t	   *rl;
			text	   *hyp = tfm_hyp_text(row, &h[i]);
			bool		match = false;

			deconstruct_array(refs, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &nref);
			rp = palloc(sizeof(char *) * nref);
			rl = palloc(sizeof(size_t) * nref);
			for (int r = 0; r < nref; r++)
			{
				text	   *t = DatumGetTextPP(elems[r]);
				int			nt;
				int32	   *tgt;
				TfmExample	ex;
				TfmBatchBuf bb;
				int			cnt;

				rp[r] = VARDATA_ANY(t);
				rl[r] = VARSIZE_ANY_EXHDR(t);
				if (rl[r] == VARSIZE_ANY_EXHDR(hyp) && memcmp(rp[r], VARDATA_ANY(hyp), rl[r]) == 0)
					match = true;
				/* teacher-forced loss of this reference */
				tgt = tfm_tokenizer_encode(ttok, rp[r], rl[r], &nt);
				memset(&ex, 0, sizeof(ex));
				ex.src = src[i];
				ex.nsrc = lens[i];
				ex.tgt = tgt;
				ex.ntgt = Min(nt, m->cfg.max_len - 1);
				tfm_batch_seq2seq(&bb, &ex, 1, &sp);
				tfm_batch_check(m, &bb.b, false, "evaluating", row->name, "the length of the texts");
				tfm_check_pass(tfm_model_forward(m, &bb.b, false, 0), row->name);
				nats += tfm_check_loss(tfm_model_loss_backward(m, &bb.b, 0.0f, false, 1.0f, &cnt), &cnt, NULL);
				tokens += cnt;
				rows++;
			}
			if (tfm_bleu_add_pg(stats, VARDATA_ANY(hyp), VARSIZE_ANY_EXHDR(hyp), rp, rl, nref) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("cannot count BLEU statistics")));
			exact += match;
			sources++;
		}
		tfm_hyps_free(h, n);
		MemoryContextSwitchTo(old);
		SPI_freetuptable(tt);
	}
	SPI_cursor_close(portal);
	if (sources == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the evaluation query returned no rows to score")));
	{
		tfm_bleu_result res;

		tfm_bleu_score(&res, stats);
		v[O_BLEU] = Float8GetDatum(res.score);
	}
	v[O_EXACT] = Float8GetDatum((double) exact / sources);
	v[O_LOSS] = Float8GetDatum(tokens ? nats / tokens : NAN);
	v[O_ROWS] = Int64GetDatum(rows);
	v[O_TOKENS] = Int64GetDatum(tokens);
	nulls[O_BLEU] = nulls[O_EXACT] = nulls[O_LOSS] = nulls[O_ROWS] = nulls[O_TOKENS] = false;
}

void
tfm_evaluate_model(tfm_model *m, const TfmModelRow *row, const char *name, const char *query,
				   Datum *v, bool *nulls)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	TfmReader	rd;

	if (row->cfg.task == TFM_TASK_SEQ2SEQ)
	{
		if (row->tokenizer == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\" has no tokenizer, so it cannot be evaluated on text", name)));
		SPI_connect();
		evaluate_seq2seq(m, row, query, v, nulls);
		SPI_finish();
		return;
	}
	memset(&rd, 0, sizeof(rd));
	rd.chunk_rows = 4096;
	SPI_connect();
	tfm_reader_init(&rd, row, query);
	if (row->cfg.task == TFM_TASK_CLASSIFY && (rd.kind != TFM_ROWS_LABEL || rd.pair))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tfm_evaluate measures classifiers of single texts; model \"%s\" is read %s",
						name, rd.kind == TFM_ROWS_TAGS ? "with tfm_entities" :
						rd.kind == TFM_ROWS_SPANS ? "with tfm_answer" :
						rd.kind == TFM_ROWS_SCORE ? "as a score" : "in pairs"),
				 errhint("tfm_train measures its held-out rows (val_loss, val_accuracy).")));
	if (row->cfg.task == TFM_TASK_CLASSIFY)
		evaluate_classify(m, row, &rd, v, nulls, caller_cxt);
	else
		evaluate_lm(m, name, &rd, v, nulls);
	v[O_SKIPPED] = Int64GetDatum(rd.skipped_null);
	nulls[O_SKIPPED] = false;
	SPI_finish();
}

/* consecutive windows of max_len: every token after the first predicted once */
double
tfm_lm_score(tfm_model *m, const int32 *ids, int n, const char *name, int64 *tokens)
{
	int			T = m->cfg.max_len;
	double		nats = 0.0;

	*tokens = 0;
	/* consecutive windows: every token after the first predicted once */
	for (int64 pos = 0; pos + 1 < n; pos += T)
	{
		int			w = (int) Min((int64) T, n - 1 - pos);
		int			cnt;

		CHECK_FOR_INTERRUPTS();
		nats += tfm_lm_window_loss(m, ids, pos, w, "running", name, name, &cnt);
		*tokens += cnt;
	}
	return nats;
}
