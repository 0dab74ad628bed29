/*
 * embed_chunks.c — embeddings of texts longer than a model's window, in
 * token windows:
 *
 *   SELECT * FROM tfm_embed_chunks('minilm', ARRAY[body], chunk_tokens => 128, chunk_overlap => 16);
 *   -> (ord, chunk, chunk_start, chunk_end, embedding), one row per window
 *
 * A text's tokens (tfm_tokenizer_encode_spans) are cut into windows of
 * chunk_tokens tokens, each starting chunk_tokens - chunk_overlap tokens
 * after the one before, the last ending at the text's last token (a text
 * of at most chunk_tokens tokens is one chunk).  A window's embedding is
 * tfm_embed(model, ids) of its token ids, with [CLS] ... [SEP] around them
 * for a BERT-family encoder and <s> before them for a tokenizer whose texts
 * begin with it, as tfm_embed(model, text) puts them around a whole text.
 * chunk_start and chunk_end are character offsets into the text (0-based,
 * end exclusive: the window is substr(text, chunk_start + 1, chunk_end -
 * chunk_start)) of its first token's start and its last token's end.
 * The windows run through varlen passes (tfm_classifier_run), each
 * embedding bit for bit tfm_embed(model, ids)'s.  Jobs with
 * chunk_tokens (runtime/jobs/job_run.c) call this.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "sql/args.h"
#include "sql/infer/embed_chunks.h"
#include "runtime/infer/infer.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

/* a batch of windows: about this many tokens (the last text's windows may go past it) */
#define EMBED_BATCH_TOKENS 65536

/* the specials a chunk's ids get around them (see the opening comment) */
typedef struct ChunkWrap
{
	int32		prefix;			/* -1: none */
	int32		suffix;
} ChunkWrap;

static void
chunk_wrap(const TfmModelRow *row, ChunkWrap *w)
{
	TfmSpecials sp;

	w->prefix = w->suffix = -1;
	if (row->tokenizer == NULL)
		return;
	tfm_tokenizer_specials(row->tokenizer, &sp);
	if (row->cfg.emb_norm)
	{
		w->prefix = sp.cls;
		w->suffix = sp.sep;
	}
	else if (tfm_tokenizer_cached(row->tokenizer)->info.flags & TFM_TOK_INFO_TEXT_BOS)
		w->prefix = sp.bos;
}

int
tfm_chunk_window(const TfmModelRow *row)
{
	ChunkWrap	w;
	int			n = row->cfg.max_len;

	chunk_wrap(row, &w);
	n -= (w.prefix >= 0) + (w.suffix >= 0);
	/* tfm_classifier_input puts a <cls> first for a model that pools on it */
	if (row->cfg.pooling == TFM_POOL_CLS && !row->cfg.emb_norm)
		n--;
	return n;
}

void
tfm_check_chunking(const TfmModelRow *row, int chunk_tokens, int chunk_overlap)
{
	int			window = tfm_chunk_window(row);

	if (row->tokenizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has no tokenizer, so its texts cannot be chunked", row->name)));
	if (chunk_tokens < 1 || chunk_tokens > window)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_tokens must be between 1 and %d for model \"%s\", not %d",
						Max(window, 1), row->name, chunk_tokens),
				 window < row->cfg.max_len ?
				 errdetail("The model reads at most %d tokens, %d of them the specials put around a chunk.",
						   row->cfg.max_len, row->cfg.max_len - window) :
				 errdetail("The model reads at most %d tokens.", row->cfg.max_len)));
	if (chunk_overlap < 0 || chunk_overlap >= chunk_tokens)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_overlap must be between 0 and chunk_tokens - 1 (%d), not %d",
						chunk_tokens - 1, chunk_overlap)));
}

/* chars[b] for b in 0..len: how many characters start before byte b */
static int32 *
char_counts(const char *s, int len)
{
	int32	   *chars = palloc_extended(sizeof(int32) * ((size_t) len + 1), MCXT_ALLOC_HUGE);
	int			c = 0;

	chars[0] = 0;
	for (int p = 0; p < len;)
	{
		int			l = Min(pg_mblen(s + p), len - p);

		c++;
		for (int b = p + 1; b <= p + l; b++)
			chars[b] = c;
		p += l;
	}
	return chars;
}

/* one text's windows appended to the lists (ids wrapped, offsets in characters) */
typedef struct Chunks
{
	int			n,
				cap;
	int32	  **ids;
	int		   *lens;
	int		   *ord;
	int		   *chunk;
	int		   *start;
	int		   *end;
} Chunks;

static void
chunks_add(Chunks *c, int ord, int chunk, int32 *ids, int len, int start, int end)
{
	if (c->n == c->cap)
	{
		c->cap = Max(16, c->cap * 2);
		c->ids = repalloc_huge(c->ids, sizeof(int32 *) * c->cap);
		c->lens = repalloc_huge(c->lens, sizeof(int) * c->cap);
		c->ord = repalloc_huge(c->ord, sizeof(int) * c->cap);
		c->chunk = repalloc_huge(c->chunk, sizeof(int) * c->cap);
		c->start = repalloc_huge(c->start, sizeof(int) * c->cap);
		c->end = repalloc_huge(c->end, sizeof(int) * c->cap);
	}
	c->ids[c->n] = ids;
	c->lens[c->n] = len;
	c->ord[c->n] = ord;
	c->chunk[c->n] = chunk;
	c->start[c->n] = start;
	c->end[c->n] = end;
	c->n++;
}

static void
text_chunks(Chunks *c, const TfmModelRow *row, const ChunkWrap *w, TfmSpecials *sp, text *t,
			int ord, int chunk_tokens, int chunk_overlap)
{
	const char *s = VARDATA_ANY(t);
	int			len = VARSIZE_ANY_EXHDR(t);
	size_t	   *starts,
			   *ends;
	int			n;
	int32	   *ids = tfm_tokenizer_encode_spans(row->tokenizer, s, len, &n, &starts, &ends);
	int32	   *chars;
	int			stride = chunk_tokens - chunk_overlap;

	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot embed an empty text")));
	chars = char_counts(s, len);
	for (int k = 0, from = 0;; k++, from += stride)
	{
		int			to = Min(from + chunk_tokens, n);
		int			m = to - from;
		int32	   *win = palloc(sizeof(int32) * (m + 3));
		int			wl = 0;

		CHECK_FOR_INTERRUPTS();
		if (w->prefix >= 0)
			win[wl++] = w->prefix;
		memcpy(win + wl, ids + from, sizeof(int32) * m);
		wl += m;
		if (w->suffix >= 0)
			win[wl++] = w->suffix;
		win = tfm_classifier_input(row, sp, win, wl, &wl, NULL);
		/* the first token's character (a byte inside one: that character), to the last's end */
		chunks_add(c, ord, k, win, wl,
				   starts[from] < (size_t) len ? chars[starts[from] + 1] - 1 : chars[len],
				   chars[ends[to - 1]]);
		if (to == n)
			break;
	}
	pfree(ids);
	pfree(starts);
	pfree(ends);
	pfree(chars);
}

PG_FUNCTION_INFO_V1(tfm_embed_chunks);
Datum
tfm_embed_chunks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	tfm_model  *m;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				d,
				chunk_tokens,
				chunk_overlap;
	ChunkWrap	w;
	TfmSpecials sp;
	Chunks		c;
	float	   *pooled;
	Datum	   *vals;
	MemoryContext batch_cxt;

	TFM_ARG_NOT_NULL(2, "chunk_tokens");
	TFM_ARG_NOT_NULL(3, "chunk_overlap");
	chunk_tokens = PG_GETARG_INT32(2);
	chunk_overlap = PG_GETARG_INT32(3);
	InitMaterializedSRF(fcinfo, 0);
	m = tfm_get_classifier(name, &row);
	tfm_check_chunking(row, chunk_tokens, chunk_overlap);
	n = tfm_text_array_arg(fcinfo, 1, "inputs", true, &elems, &nulls);
	chunk_wrap(row, &w);
	tfm_model_specials(row, &sp);

	d = m->cfg.d_model;
	/*
	 * the inputs a batch at a time (at most EMBED_BATCH_TOKENS tokens of
	 * windows, or one text's), its rows put out and its memory let go: what
	 * a call holds does not grow with the number of inputs (each window's
	 * embedding is tfm_embed's, whatever its batch)
	 */
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "tfm_embed_chunks batch",
									  ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < n;)
	{
		MemoryContext outer = MemoryContextSwitchTo(batch_cxt);
		int64		tokens = 0;

		memset(&c, 0, sizeof(c));
		c.cap = 16;
		c.ids = palloc(sizeof(int32 *) * c.cap);
		c.lens = palloc(sizeof(int) * c.cap);
		c.ord = palloc(sizeof(int) * c.cap);
		c.chunk = palloc(sizeof(int) * c.cap);
		c.start = palloc(sizeof(int) * c.cap);
		c.end = palloc(sizeof(int) * c.cap);
		for (; i < n && tokens < EMBED_BATCH_TOKENS; i++)
		{
			int			from = c.n;

			CHECK_FOR_INTERRUPTS();
			if (nulls[i])
				continue;
			text_chunks(&c, row, &w, &sp, DatumGetTextPP(elems[i]), i + 1, chunk_tokens, chunk_overlap);
			for (int k = from; k < c.n; k++)
				tokens += c.lens[k];
		}
		pooled = palloc_extended(sizeof(float) * d * Max(c.n, 1), MCXT_ALLOC_HUGE);
		if (c.n > 0)
			tfm_classifier_run(m, row, c.ids, c.lens, c.n, NULL, pooled);
		vals = palloc(sizeof(Datum) * d);
		for (int k = 0; k < c.n; k++)
		{
			Datum		values[5];
			bool		isnull[5] = {false, false, false, false, false};

			for (int j = 0; j < d; j++)
				vals[j] = Float4GetDatum(pooled[(size_t) k * d + j]);
			values[0] = Int32GetDatum(c.ord[k]);
			values[1] = Int32GetDatum(c.chunk[k]);
			values[2] = Int32GetDatum(c.start[k]);
			values[3] = Int32GetDatum(c.end[k]);
			values[4] = PointerGetDatum(construct_array(vals, d, FLOAT4OID, 4, true, TYPALIGN_INT));
			/* (the tuplestore copies the row into its own memory) */
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
		}
		MemoryContextSwitchTo(outer);
		MemoryContextReset(batch_cxt);
	}
	MemoryContextDelete(batch_cxt);
	return (Datum) 0;
}
