/*
 * json_constraint.c — generation constrained by a JSON schema (see
 * json_constraint.h): a jsonb schema compiled by the core, the model's
 * tokens' bytes (each id decoded alone as a continuation; specials and ids
 * past the tokenizer have none and are never allowed) in the core's trie,
 * and per row the recognizer's state, stepped by each token produced.
 *
 * Only tokenizers that write a text by concatenating their tokens' bytes
 * can be constrained (byte, char, bpe, unigram); word and wordpiece join
 * tokens with spaces and are refused.  The text returned is checked once
 * more against the language, so a tokenizer whose decoding differs from
 * its tokens' bytes is an ERROR, never an invalid value.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "tfm/json_schema.h"
#include "base/base.h"
#include "runtime/runtime.h"
#include "runtime/infer/json_constraint.h"
#include "runtime/cache/tokenizer_cache.h"

struct JsonRows
{
	const tfm_jschema *schema;
	tfm_jvocab *vocab;
	TfmGuard   *guard;
	int			V,
				B;
	int32		eos;
	const int32 *stop_ids;
	int			n_stop;
	tfm_jstate *st;				/* B */
	uint8	   *allowed;		/* V */
	const char *model;
};

static void
free_schema(void *s)
{
	tfm_jschema_free(s);
}

static void
free_vocab(void *v)
{
	tfm_jvocab_free(v);
}

tfm_jschema *
tfm_json_schema_compile(Jsonb *schema)
{
	char	   *txt = JsonbToCString(NULL, &schema->root, VARSIZE(schema));
	tfm_jschema *s = NULL;
	tfm_status	err;
	int			rc;

	memset(&err, 0, sizeof(err));
	rc = tfm_jschema_compile(&s, txt, strlen(txt), &err);
	if (rc != TFM_OK)
		tfm_report(ERROR, rc, psprintf("invalid json_schema: %s", tfm_status_msg(&err, rc)), NULL,
				   rc == TFM_EUNSUPPORTED ?
				   "doc/reference.md, Structured extraction, lists the keywords supported." : NULL);
	(void) tfm_guard(free_schema, s);
	pfree(txt);
	return s;
}

static int
poll_interrupts(void *arg)
{
	(void) arg;
	CHECK_FOR_INTERRUPTS();
	return 0;
}

JsonRows *
tfm_json_rows_begin(const TfmModelRow *row, int vocab, const tfm_jschema *s, int B, int32 eos,
					const int32 *stop_ids, int n_stop)
{
	JsonRows   *j = palloc0(sizeof(JsonRows));
	TfmCachedTokenizer *e;
	TfmSpecials sp;
	const uint8_t **bytes;
	size_t	   *lens,
				total = 0,
				cap;
	char	   *buf;
	tfm_status	err;
	int			rc;

	if (!row->tokenizer)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has no tokenizer, so it cannot be constrained by a JSON schema",
						row->name)));
	e = tfm_tokenizer_cached(row->tokenizer);
	if (e->info.kind == TFM_TOK_WORD || e->info.kind == TFM_TOK_WORDPIECE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\"'s tokenizer (kind %s) joins its tokens with spaces, so it cannot be constrained by a JSON schema",
						row->name, tfm_tok_kind_name(e->info.kind))));
	tfm_tokenizer_specials(row->tokenizer, &sp);
	j->schema = s;
	j->V = vocab;
	j->B = B;
	j->eos = eos;
	j->stop_ids = stop_ids;
	j->n_stop = n_stop;
	j->model = row->name;

	/* each id's bytes, decoded alone as a continuation */
	bytes = palloc(sizeof(uint8_t *) * vocab);
	lens = palloc0(sizeof(size_t) * vocab);
	cap = tfm_tok_decode_bound(e->tok, 1, TFM_TOK_DECODE_CONTINUE);
	buf = palloc(Max(cap, 1));
	for (int id = 0; id < vocab; id++)
	{
		size_t		got = 0;

		if ((id & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		bytes[id] = (const uint8_t *) "";
		if (id >= (int) e->info.vocab_size || id == sp.pad || id == sp.unk || id == sp.bos ||
			id == sp.eos || id == sp.cls || id == sp.sep)
			continue;
		rc = tfm_tok_decode(buf, cap, &got, e->tok, &id, 1, TFM_TOK_DECODE_CONTINUE, &err);
		if (rc != TFM_OK || got == 0)
			continue;
		/* each id's bytes copied at their length (the bound is the longest piece's) */
		bytes[id] = (const uint8_t *) memcpy(palloc(got), buf, got);
		lens[id] = got;
		total += got;
	}
	/* the trie: about 17 bytes a byte of every token, 12 an id, the walk's states */
	tfm_work_mem_require(total * 17 + (size_t) vocab * 12 + sizeof(tfm_jstate) * (TFM_JSON_MAX_TOKEN + 1),
						 "the JSON schema's token mask", "use a model with a smaller vocabulary");
	memset(&err, 0, sizeof(err));
	rc = tfm_jvocab_create(&j->vocab, bytes, lens, vocab, &err);
	tfm_raise(rc, &err, "cannot build the token mask");
	j->guard = tfm_guard(free_vocab, j->vocab);
	j->st = palloc(sizeof(tfm_jstate) * B);
	for (int b = 0; b < B; b++)
		tfm_jstate_init(s, &j->st[b]);
	j->allowed = palloc(vocab);
	return j;
}

bool
tfm_json_rows_mask(JsonRows *j, int b, float *logits)
{
	bool		complete = tfm_jstate_complete(j->schema, &j->st[b]);
	int			n;
	bool		end_allowed = false;
	float		eos_logit = j->eos >= 0 && j->eos < j->V ? logits[j->eos] : 0.0f;
	float	   *stop_logits = j->n_stop > 0 ? palloc(sizeof(float) * j->n_stop) : NULL;

	for (int k = 0; k < j->n_stop; k++)
		stop_logits[k] = j->stop_ids[k] >= 0 && j->stop_ids[k] < j->V ? logits[j->stop_ids[k]] : 0.0f;
	n = tfm_jvocab_allowed(j->vocab, j->schema, &j->st[b], j->allowed, poll_interrupts, NULL);
	if (n < 0)
		tfm_raise(n, NULL, "cannot mask the tokens");
	for (int i = 0; i < j->V; i++)
		if (!j->allowed[i])
			logits[i] = -INFINITY;
	/* what ends a text (the model's own logit): only after a whole value */
	if (complete && j->eos >= 0 && j->eos < j->V)
	{
		logits[j->eos] = eos_logit;
		end_allowed = true;
	}
	for (int k = 0; complete && k < j->n_stop; k++)
		if (j->stop_ids[k] >= 0 && j->stop_ids[k] < j->V)
		{
			logits[j->stop_ids[k]] = stop_logits[k];
			end_allowed = true;
		}
	if (stop_logits)
		pfree(stop_logits);
	if (n == 0 && !end_allowed)
	{
		if (complete)
			return true;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("no token of model \"%s\" continues the JSON value", j->model),
				 errdetail("The vocabulary lacks the bytes the schema needs next.")));
	}
	return false;
}

bool
tfm_json_rows_step(JsonRows *j, int b, int32 id)
{
	if (!tfm_jvocab_step_token(j->vocab, j->schema, &j->st[b], id))
		elog(ERROR, "token %d was produced outside the JSON schema's mask", id);
	return tfm_jstate_closed(&j->st[b]);
}

void
tfm_json_rows_check(JsonRows *j, int b, const text *t, int max_tokens)
{
	if (!tfm_jstate_complete(j->schema, &j->st[b]))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" reached max_tokens (%d) before the JSON value was complete",
						j->model, max_tokens),
				 errhint("Raise max_tokens, or bound the schema's strings (maxLength) and arrays (maxItems).")));
	if (!tfm_jschema_accepts(j->schema, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\"'s tokenizer decodes its tokens differently from their bytes alone, so it cannot be constrained by a JSON schema",
						j->model)));
}

void
tfm_json_rows_end(JsonRows *j)
{
	tfm_guard_release(j->guard);
	tfm_jvocab_free(j->vocab);
	j->vocab = NULL;
}
