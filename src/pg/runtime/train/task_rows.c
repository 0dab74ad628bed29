/*
 * task_rows.c — a classifier's training rows beyond (input, label), made
 * examples as the inference functions read them (see task_rows.h):
 *
 * - a model of one logit (a cross-encoder) learns a score in [0, 1] by
 *   binary cross-entropy (sentence-transformers' CrossEncoder default for
 *   one label: BCEWithLogitsLoss): (input, score) or (query, passage, score);
 * - pairs (a, b, label or score) are read as tfm_rerank and tfm_zero_shot
 *   read them: [CLS] a [SEP] b [SEP] with token types, cut longest_first;
 * - a token classifier's (text, spans jsonb): spans an array of {"start",
 *   "end", "label"} objects, characters of the text (0-based, end
 *   exclusive: tfm_entities' offsets), label an entity type ("PER") the
 *   model tags as B-PER / I-PER (or, for a model without B-/I- labels, a
 *   label of its own).  As transformers' run_ner labels words, each word's
 *   first token (a word as tfm_entities' 'first' tells them) is labelled:
 *   B- for the first word of a span, I- for the others, O outside the
 *   spans; the word's other tokens and the specials are ignored (-100).  A
 *   text longer than the positions is read in consecutive windows, as
 *   tfm_entities reads it;
 * - a question-answering model's (question, context, answer_start, answer
 *   text or answer_end): as transformers' run_qa prepares SQuAD, the context
 *   in windows beside the question (tfm_answer's: min(positions, 384)
 *   tokens, overlapping by min(128, half of them), less when the question
 *   leaves little room); in each window the answer's first token is the
 *   last whose start is at or before the answer's start and its last token
 *   the first whose end is at or after the answer's end; a window that does
 *   not hold the whole answer, and an empty answer, point at [CLS].
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"

#include "base/json_fields.h"
#include "runtime/infer/infer.h"
#include "runtime/train/task_rows.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"

/* tfm_answer's max_seq_len and the pipeline's default doc_stride */
#define TFM_QA_MAX_SEQ_LEN 384
#define TFM_QA_STRIDE 128

static bool
is_integer_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}

static bool
is_score_type(Oid t)
{
	return is_integer_type(t) || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID ||
		t == BOOLOID;
}

static void
column_count(const char *who, int got, int want, int want2, const char *expect)
{
	if (got != want && got != want2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s reads rows %s, but the query returns %d column%s",
						who, expect, got, got == 1 ? "" : "s")));
}

static void
column_type(const TfmReader *r, const char *who, int i, bool ok, const char *want,
			const char *expect)
{
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column %d of the training query is %s; expected %s", i + 1,
						format_type_be(r->types[i]), want),
				 errdetail("%c%s reads rows %s.", pg_toupper((unsigned char) who[0]), who + 1,
						   expect)));
}

void
tfm_task_columns(TfmReader *r, TupleDesc td)
{
	const TfmModelRow *row = r->row;
	const tfm_config *c = &row->cfg;
	const char *expect,
			   *who;
	bool		pairs;

	for (int i = 0; i < Min(td->natts, 4); i++)
		r->types[i] = TupleDescAttr(td, i)->atttypid;
	r->ncols = td->natts;
	r->pair = false;
	if (c->token_head != TFM_TOKEN_HEAD_NONE && row->tokenizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has no tokenizer: its rows' characters cannot be found in its tokens",
						row->name)));
	if (c->token_head == TFM_TOKEN_HEAD_TAGS)
	{
		who = "a token classifier";
		expect = "(text, spans jsonb)";
		column_count(who, td->natts, 2, 2, expect);
		column_type(r, who, 0, tfm_column_is_text(r->types[0]), "text", expect);
		column_type(r, who, 1, r->types[1] == JSONBOID, "jsonb", expect);
		r->kind = TFM_ROWS_TAGS;
		return;
	}
	if (c->token_head == TFM_TOKEN_HEAD_SPANS)
	{
		who = "a question-answering model";
		expect = "(question text, context text, answer_start integer, answer text or answer_end integer)";
		column_count(who, td->natts, 4, 4, expect);
		column_type(r, who, 0, tfm_column_is_text(r->types[0]), "text", expect);
		column_type(r, who, 1, tfm_column_is_text(r->types[1]), "text", expect);
		column_type(r, who, 2, is_integer_type(r->types[2]), "an integer", expect);
		column_type(r, who, 3, tfm_column_is_text(r->types[3]) || is_integer_type(r->types[3]),
					"text or an integer", expect);
		r->kind = TFM_ROWS_SPANS;
		return;
	}
	/* pairs: the BERT-family encoders imported with their tokenizer (pair_input.c) */
	pairs = c->emb_norm && row->tokenizer != NULL;
	who = c->n_classes == 1 ? "a classify model of one logit" : "a classify model";
	expect = c->n_classes == 1 ? (pairs ? "(text or int[], score) or (query text, passage text, score)" :
								  "(text or int[], score)") :
		(pairs ? "(text or int[], label) or (text, text, label)" : "(text or int[], label)");
	column_count(who, td->natts, 2, pairs ? 3 : 2, expect);
	r->pair = td->natts == 3;
	for (int i = 0; i < td->natts - 1; i++)
		column_type(r, who, i, tfm_column_is_text(r->types[i]) ||
					(!r->pair && tfm_column_is_ids(r->types[i])),
					r->pair ? "text" : "text or int[]", expect);
	if (r->pair)
		tfm_pair_check(row);
	r->kind = c->n_classes == 1 ? TFM_ROWS_SCORE : TFM_ROWS_LABEL;
	if (r->kind == TFM_ROWS_SCORE)
		column_type(r, who, td->natts - 1, is_score_type(r->types[td->natts - 1]),
					"a number or boolean (a score in [0, 1])", expect);
}

float
tfm_task_score(TfmReader *r, Datum d, Oid type)
{
	double		v;

	switch (type)
	{
		case BOOLOID:
			v = DatumGetBool(d) ? 1.0 : 0.0;
			break;
		case INT2OID:
			v = DatumGetInt16(d);
			break;
		case INT4OID:
			v = DatumGetInt32(d);
			break;
		case INT8OID:
			v = (double) DatumGetInt64(d);
			break;
		case FLOAT4OID:
			v = DatumGetFloat4(d);
			break;
		case FLOAT8OID:
			v = DatumGetFloat8(d);
			break;
		default:
			v = DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
			break;
	}
	if (!(v >= 0.0 && v <= 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the score %g of row %lld is not in [0, 1]", v, (long long) r->row_number),
				 errhint("Model \"%s\" has one logit: it learns a relevance by binary cross-entropy, 0 (irrelevant) to 1 (relevant).",
						 r->row->name)));
	return (float) v;
}

int32 *
tfm_task_pair(TfmReader *r, text *a, text *b, int32 **types, int *n)
{
	int			na,
				nb;
	int32	   *ia = tfm_pair_tokens(r->row, a, &na),
			   *ib = tfm_pair_tokens(r->row, b, &nb);
	int32	   *ids = tfm_pair_join(r->row, ia, na, ib, nb, false, types, n);

	if (*n < na + nb + 3)
		r->truncated++;
	return ids;
}

/* ---- a token classifier's (text, spans) ---- */

typedef struct Span
{
	int			start,
				end,
				first,			/* the label of its first word (B-) */
				rest,			/* of the others (I-) */
				words;			/* word starts inside it */
	int			k;				/* its place in the array */
	char	   *label;
} Span;

static int
cmp_span(const void *a, const void *b)
{
	const Span *x = a,
			   *y = b;

	return x->start != y->start ? (x->start < y->start ? -1 : 1) : (x->end < y->end ? -1 : x->end > y->end);
}

static int
label_of(const TfmModelRow *row, const char *s)
{
	for (int i = 0; i < row->n_labels; i++)
		if (strcmp(row->labels[i], s) == 0)
			return i;
	return -1;
}

/* an integer of a span object, checked */
static int
span_int(TfmReader *r, JsonbContainer *o, const char *key, int k)
{
	JsonbValue	buf,
			   *v = tfm_jget(o, key, &buf);
	double		x;

	if (v == NULL || v->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("span %d of row %lld has %s \"%s\"; expected an integer", k + 1,
						(long long) r->row_number, v ? tfm_jtype(v) : "no", key)));
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (x != floor(x) || x < 0 || x > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("span %d of row %lld has \"%s\" %g; expected a character offset (an integer from 0)",
						k + 1, (long long) r->row_number, key, x)));
	return (int) x;
}

/* the spans of a row, checked against the text's nchars characters and the labels, by start */
static Span *
read_spans(TfmReader *r, Jsonb *j, int nchars, int *n)
{
	const TfmModelRow *row = r->row;
	Span	   *s;

	if (JB_ROOT_IS_SCALAR(j) || !JB_ROOT_IS_ARRAY(j))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the spans of row %lld are not a jsonb array", (long long) r->row_number),
				 errhint("Spans are an array of {\"start\": 0, \"end\": 5, \"label\": \"PER\"} objects, in characters of the text.")));
	*n = JB_ROOT_COUNT(j);
	s = palloc0(sizeof(Span) * Max(*n, 1));
	for (int k = 0; k < *n; k++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(&j->root, k);
		JsonbValue	buf,
				   *l;
		char	   *tag;

		if (e == NULL || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("span %d of row %lld is %s; expected a {\"start\", \"end\", \"label\"} object",
							k + 1, (long long) r->row_number, e ? tfm_jtype(e) : "missing")));
		s[k].k = k;
		s[k].start = span_int(r, e->val.binary.data, "start", k);
		s[k].end = span_int(r, e->val.binary.data, "end", k);
		if (s[k].start >= s[k].end || s[k].end > nchars)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("span %d of row %lld, characters %d to %d, is not inside the text's %d characters",
							k + 1, (long long) r->row_number, s[k].start, s[k].end, nchars),
					 errhint("A span's start is below its end; both count characters from 0, the end exclusive.")));
		l = tfm_jget(e->val.binary.data, "label", &buf);
		if (l == NULL || l->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("span %d of row %lld has %s \"label\"; expected a string", k + 1,
							(long long) r->row_number, l ? tfm_jtype(l) : "no")));
		s[k].label = pnstrdup(l->val.string.val, l->val.string.len);
		/* BIO: B-label and I-label; else the label itself on every word */
		tag = psprintf("B-%s", s[k].label);
		s[k].first = label_of(row, tag);
		tag[0] = 'I';
		s[k].rest = label_of(row, tag);
		if (s[k].first < 0 || s[k].rest < 0)
			s[k].first = s[k].rest = label_of(row, s[k].label);
		if (s[k].first < 0 || strcmp(s[k].label, "O") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("span %d of row %lld has label \"%s\", which is not an entity type of model \"%s\"",
							k + 1, (long long) r->row_number, s[k].label, row->name),
					 errhint("A span's label is a type the model tags as B-type and I-type (\"PER\" for B-PER, I-PER), or one of its labels.")));
	}
	qsort(s, *n, sizeof(Span), cmp_span);
	for (int k = 1; k < *n; k++)
		if (s[k].start < s[k - 1].end)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("spans %d and %d of row %lld overlap", Min(s[k - 1].k, s[k].k) + 1,
							Max(s[k - 1].k, s[k].k) + 1, (long long) r->row_number)));
	return s;
}

TfmExample *
tfm_task_tags(TfmReader *r, text *t, Jsonb *j, int *nex)
{
	const TfmModelRow *row = r->row;
	int			W = row->cfg.max_len - 2,
				n,
				ns,
				o = label_of(row, "O"),
				nchars = pg_mbstrlen_with_len(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	TfmTokSpan *tok;
	Span	   *s;
	int32	   *tags;
	TfmExample *ex;
	int			nw;

	if (o < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has no label \"O\" for the tokens outside every span", row->name)));
	s = read_spans(r, j, nchars, &ns);
	tok = tfm_token_spans(row, t, &n);
	tags = palloc(sizeof(int32) * Max(n, 1));
	for (int i = 0, k = 0; i < n; i++)
	{
		if (i > 0 && tok[i].subword)
		{
			tags[i] = TFM_LABEL_IGNORE;	/* a word's first token only */
			continue;
		}
		while (k < ns && s[k].end <= tok[i].start)
			k++;
		if (k < ns && s[k].start <= tok[i].start)
			tags[i] = s[k].words++ == 0 ? s[k].first : s[k].rest;
		else
			tags[i] = o;
	}
	for (int k = 0; k < ns; k++)
		if (s[k].words == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("span %d of row %lld, characters %d to %d, holds no word's first character",
							s[k].k + 1, (long long) r->row_number, s[k].start, s[k].end),
					 errhint("Each word's first token is labelled; a span starts where a word does.")));
	/* consecutive windows of the positions, as tfm_entities reads them */
	nw = n == 0 ? 1 : (n + W - 1) / W;
	ex = palloc0(sizeof(TfmExample) * nw);
	for (int w = 0; w < nw; w++)
	{
		int			a = w * W,
					k = Min(W, n - a);

		ex[w].src = tfm_token_window(row, tok + a, k, &ex[w].nsrc);
		ex[w].tags = palloc(sizeof(int32) * ex[w].nsrc);
		ex[w].tags[0] = ex[w].tags[k + 1] = TFM_LABEL_IGNORE;
		memcpy(ex[w].tags + 1, tags + a, sizeof(int32) * k);
		ex[w].nbytes = VARSIZE_ANY_EXHDR(t);
		ex[w].nchars = nchars;
	}
	*nex = nw;
	return ex;
}

/* ---- a question-answering model's (question, context, answer) ---- */

/* the byte offset of character ch of s (len bytes), or -1 past the end */
static int64
byte_of_char(const char *s, int64 len, int64 ch)
{
	int64		b = 0;

	for (int64 c = 0; c < ch; c++)
	{
		if (b >= len)
			return -1;
		b += pg_mblen(s + b);
	}
	return b <= len ? b : -1;
}

TfmExample *
tfm_task_answer(TfmReader *r, text *q, text *c, Datum start, Oid start_type, Datum answer,
				Oid answer_type, int *nex)
{
	const TfmModelRow *row = r->row;
	const char *cs = VARDATA_ANY(c);
	int64		clen = VARSIZE_ANY_EXHDR(c),
				nchars = pg_mbstrlen_with_len(cs, (int) clen),
				s = start_type == INT2OID ? DatumGetInt16(start) :
		start_type == INT4OID ? DatumGetInt32(start) : DatumGetInt64(start),
				e;
	int			nq,
				nc,
				max_seq = Min(row->cfg.max_len, TFM_QA_MAX_SEQ_LEN),
				first,
				room,
				stride,
				nwin = 0;
	TfmTokSpan *qt,
			   *ct;
	int32	   *qids;
	TfmExample *ex;

	if (s < 0 || s > nchars)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the answer_start %lld of row %lld is outside the context's %lld characters",
						(long long) s, (long long) r->row_number, (long long) nchars)));
	if (tfm_column_is_text(answer_type))
	{
		text	   *a = DatumGetTextPP(answer);
		int64		alen = VARSIZE_ANY_EXHDR(a),
					b0 = byte_of_char(cs, clen, s);

		e = s + pg_mbstrlen_with_len(VARDATA_ANY(a), (int) alen);
		if (e > nchars || b0 < 0 || b0 + alen > clen || memcmp(cs + b0, VARDATA_ANY(a), alen) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the answer of row %lld is not the context's characters from answer_start %lld",
							(long long) r->row_number, (long long) s),
					 errhint("answer_start counts the context's characters from 0; the answer is the text found there.")));
	}
	else
	{
		e = answer_type == INT2OID ? DatumGetInt16(answer) :
			answer_type == INT4OID ? DatumGetInt32(answer) : DatumGetInt64(answer);
		if (e < s || e > nchars)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the answer_end %lld of row %lld is not between answer_start %lld and the context's %lld characters",
							(long long) e, (long long) r->row_number, (long long) s, (long long) nchars)));
	}
	qt = tfm_token_spans(row, q, &nq);
	ct = tfm_token_spans(row, c, &nc);
	first = nq + (row->cfg.pos_offset > 0 ? 3 : 2);
	room = max_seq - first - 1;
	if (room < 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the question of row %lld has %d tokens; model \"%s\" reads at most %d beside a context",
						(long long) r->row_number, nq, row->name, max_seq - (first - nq) - 2)));
	stride = Min(TFM_QA_STRIDE, max_seq / 2);
	if (stride >= room)
		stride = room / 2;
	qids = palloc(sizeof(int32) * Max(nq, 1));
	for (int i = 0; i < nq; i++)
		qids[i] = qt[i].id;
	ex = palloc0(sizeof(TfmExample) * (nc <= room ? 1 : (nc - room) / (room - stride) + 2));
	for (int a = 0;; a += room - stride)
	{
		int			k = Min(room, nc - a);
		int32	   *cids = palloc(sizeof(int32) * Max(k, 1));
		TfmExample *x = &ex[nwin++];

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < k; i++)
			cids[i] = ct[a + i].id;
		x->src = tfm_pair_join(row, qids, nq, cids, k, false, &x->types, &x->nsrc);
		x->nbytes = clen;
		x->nchars = nchars;
		/* the whole answer in the window: its tokens (run_qa's search), else [CLS] */
		if (e > s && k > 0 && ct[a].start <= s && ct[a + k - 1].end >= e)
		{
			int			ts = a,
						te = a + k - 1;

			while (ts < a + k && ct[ts].start <= s)
				ts++;
			ts--;
			while (te >= a && ct[te].end >= e)
				te--;
			te = Max(te + 1, ts);
			x->label = first + ts - a;
			x->span_end = first + te - a;
		}
		pfree(cids);
		if (a + room >= nc)
			break;
	}
	*nex = nwin;
	return ex;
}

/* ---- grading a validation batch ---- */

/* the best of n values a stride apart, skipping pads (NULL: none) */
static int
argmax(const float *z, int n, int stride, const int32 *ids, int pad)
{
	int			best = -1;

	for (int i = 0; i < n; i++)
		if ((ids == NULL || ids[i] != pad) && (best < 0 || z[(size_t) i * stride] > z[(size_t) best * stride]))
			best = i;
	return best;
}

void
tfm_task_grade(const tfm_model *m, const TfmBatchBuf *bb, int kind, int64 *correct, int64 *graded)
{
	const tfm_batch *b = &bb->b;
	const int	C = m->cfg.n_classes;
	const float *z = m->logits;

	for (int r = 0; r < b->B; r++)
		switch (kind)
		{
			case TFM_ROWS_LABEL:
				*correct += argmax(z + (size_t) r * C, C, 1, NULL, 0) == b->labels[r];
				(*graded)++;
				break;
			case TFM_ROWS_SCORE:
				*correct += (z[r] > 0.0f) == (b->scores[r] >= 0.5f);
				(*graded)++;
				break;
			case TFM_ROWS_TAGS:
				for (int t = 0; t < b->T; t++)
				{
					size_t		i = (size_t) r * b->T + t;

					if (b->token_labels[i] == TFM_LABEL_IGNORE)
						continue;
					*correct += argmax(z + i * C, C, 1, NULL, 0) == b->token_labels[i];
					(*graded)++;
				}
				break;
			case TFM_ROWS_SPANS:
				{
					const float *zr = z + (size_t) r * b->T * 2;
					const int32 *ids = b->input + (size_t) r * b->T;

					/* both ends exact: the window's answer, or [CLS] for none */
					*correct += argmax(zr, b->T, 2, ids, m->cfg.pad_id) == b->spans[2 * r] &&
						argmax(zr + 1, b->T, 2, ids, m->cfg.pad_id) == b->spans[2 * r + 1];
					(*graded)++;
				}
				break;
		}
}
