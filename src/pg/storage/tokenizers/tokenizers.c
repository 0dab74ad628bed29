/*
 * tokenizers.c — tokenizers' rows in tfm.tokenizers, tfm.vocab and
 * tfm.merges: does a name exist, store a core tokenizer (trained, or built
 * from imported parts), read one back, look up its id and the caller's use
 * right, and delete one.  Tokenizers never change once stored.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "tfm/tokenizer.h"
#include "storage/storage.h"
#include "storage/tokenizers/tokenizer_splits.h"
#include "storage/tokenizers/tokenizers.h"

/*
 * read_only: from the aggregate's transition function, which may run in a
 * parallel worker.  Otherwise the check takes a new snapshot and command id,
 * so it also sees what this statement stored a moment ago.
 */
bool
tfm_tokenizer_exists(const char *name, bool read_only)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	bool		found;

	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT 1 FROM tfm.tokenizers WHERE name = $1", 1, types, args,
						  NULL, read_only, 1);
	found = SPI_processed > 0;
	tfm_spi_finish_owner(&as);
	return found;
}

void
tfm_tokenizer_check_new(const char *name, bool read_only)
{
	tfm_check_new_name("tokenizer", name);
	if (tfm_tokenizer_exists(name, read_only))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("tokenizer \"%s\" already exists", name),
				 errhint("Drop it first with tfm_tokenizer_drop('%s').", name)));
}

/* the line tfm_tokenizer_train and the imports return */
char *
tfm_tokenizer_summary(const char *name, const tfm_tokenizer *t)
{
	tfm_tok_info info;

	tfm_tok_get_info(&info, t);
	if (info.n_merges > 0)
		return psprintf("tokenizer \"%s\": %s, %d ids, %d merges", name,
						tfm_tok_kind_name(info.kind), info.vocab_size, info.n_merges);
	return psprintf("tokenizer \"%s\": %s, %d ids", name, tfm_tok_kind_name(info.kind),
					info.vocab_size);
}

void
tfm_tokenizer_store(const char *name, const tfm_tokenizer *t, int32 min_count, Oid owner)
{
	TfmAsOwner	as;
	tfm_tok_info info;
	tfm_status err;
	Datum	   *pieces;
	Datum	   *lefts,
			   *rights;
	StringInfoData opts;
	int32		id;
	bool		isnull;

	tfm_tok_get_info(&info, t);
	initStringInfo(&opts);
	appendStringInfo(&opts, "{\"format_version\": %d, \"flags\": %u, \"n_merges\": %d, "
					 "\"min_count\": %d, \"pad_id\": %d, \"specials\": [",
					 info.format_version, info.flags, info.n_merges, min_count,
					 info.special_ids[TFM_TOK_PAD]);
	for (int i = 0; i < TFM_TOK_N_SPECIALS; i++)
		appendStringInfo(&opts, "%s%d", i ? ", " : "", info.special_ids[i]);
	appendStringInfoChar(&opts, ']');
	if (info.flags & TFM_TOK_INFO_SPLIT)
	{
		appendStringInfoString(&opts, ", \"splits\": ");
		tfm_tokenizer_splits_json(&opts, t);
	}
	if (tfm_tok_n_added(t) > 0)
	{
		appendStringInfoString(&opts, ", \"added\": ");
		tfm_tokenizer_added_json(&opts, t);
	}
	appendStringInfoChar(&opts, '}');

	pieces = palloc(sizeof(Datum) * info.vocab_size);
	for (int32 i = 0; i < info.vocab_size; i++)
	{
		const uint8_t *b;
		size_t		len;
		bytea	   *p;

		tfm_raise(tfm_tok_piece(&b, &len, t, i, &err), &err, "cannot store the tokenizer");
		p = palloc(VARHDRSZ + len);
		SET_VARSIZE(p, VARHDRSZ + len);
		memcpy(VARDATA(p), b, len);
		pieces[i] = PointerGetDatum(p);
	}
	lefts = palloc(sizeof(Datum) * Max(info.n_merges, 1));
	rights = palloc(sizeof(Datum) * Max(info.n_merges, 1));
	for (int32 r = 0; r < info.n_merges; r++)
	{
		int32_t		l,
					rr,
					res;

		tfm_raise(tfm_tok_merge(&l, &rr, &res, t, r, &err), &err, "cannot store the tokenizer");
		lefts[r] = Int32GetDatum(l);
		rights[r] = Int32GetDatum(rr);
	}

	tfm_spi_connect_owner(&as);
	{
		Oid			types[6] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, OIDOID, BYTEAOID};
		Datum		args[6];
		char		nulls[6] = "     n";
		size_t		dl = tfm_tok_model_data_size(t);

		args[0] = CStringGetTextDatum(name);
		args[1] = CStringGetTextDatum(tfm_tok_kind_name(info.kind));
		args[2] = Int32GetDatum(info.vocab_size);
		args[3] = CStringGetTextDatum(opts.data);
		args[4] = ObjectIdGetDatum(owner);
		if (dl > 0)
		{
			/* a unigram tokenizer's scores and pipeline (tok_unigram.c) */
			bytea	   *d;

			if (dl > MaxAllocSize - VARHDRSZ)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("the tokenizer's model data is too large to store")));
			d = palloc(VARHDRSZ + dl);
			SET_VARSIZE(d, VARHDRSZ + dl);
			tfm_raise(tfm_tok_model_data((uint8_t *) VARDATA(d), dl, t, &err), &err,
					  "cannot store the tokenizer");
			args[5] = PointerGetDatum(d);
			nulls[5] = ' ';
		}
		tfm_spi_exec("INSERT INTO tfm.tokenizers (name, kind, vocab_size, options, owner, model_data) "
					 "VALUES ($1, $2, $3, $4::jsonb, $5::regrole, $6) RETURNING id",
					 6, types, args, nulls, false, 1,
					 SPI_OK_INSERT_RETURNING, "cannot insert into tfm.tokenizers");
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	{
		Oid			types[2] = {INT4OID, BYTEAARRAYOID};
		Datum		args[2];

		args[0] = Int32GetDatum(id);
		args[1] = PointerGetDatum(construct_array(pieces, info.vocab_size, BYTEAOID, -1, false,
												  TYPALIGN_INT));
		tfm_spi_exec("INSERT INTO tfm.vocab (tokenizer_id, id, piece) "
					 "SELECT $1, (u.i - 1)::int, u.p FROM unnest($2) WITH ORDINALITY AS u(p, i)",
					 2, types, args, NULL, false, 0,
					 SPI_OK_INSERT, "cannot insert into tfm.vocab");
	}
	if (info.n_merges > 0)
	{
		Oid			types[3] = {INT4OID, INT4ARRAYOID, INT4ARRAYOID};
		Datum		args[3];

		args[0] = Int32GetDatum(id);
		args[1] = PointerGetDatum(construct_array(lefts, info.n_merges, INT4OID, 4, true, TYPALIGN_INT));
		args[2] = PointerGetDatum(construct_array(rights, info.n_merges, INT4OID, 4, true, TYPALIGN_INT));
		tfm_spi_exec("INSERT INTO tfm.merges (tokenizer_id, rank, left_id, right_id) "
					 "SELECT $1, (u.i - 1)::int, u.l, u.r "
					 "FROM unnest($2, $3) WITH ORDINALITY AS u(l, r, i)",
					 3, types, args, NULL, false, 0,
					 SPI_OK_INSERT, "cannot insert into tfm.merges");
	}
	tfm_spi_finish_owner(&as);
}

/* read a tokenizer's rows and rebuild it */
/* errors XX001: tokenizer "name" <what> */
static void
damaged(const char *name, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("tokenizer \"%s\" %s", name, what)));
}

tfm_tokenizer *
tfm_tokenizer_read(const char *name, int32 *idp)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	tfm_tok_info info;
	tfm_status err;
	tfm_tokenizer *tok = NULL;
	HeapTuple	tup;
	TupleDesc	td;
	bool		isnull;
	int32		id;
	char	   *kind;
	const uint8_t **pieces;
	size_t	   *lens;
	int32_t    *ml = NULL,
			   *mr = NULL;
	bytea	   *model_data = NULL;
	int			status;
	Jsonb	   *splits,
			   *added;

	tfm_spi_connect_owner(&as);
	tfm_spi_exec("SELECT id, kind, vocab_size, (options->>'format_version')::int, "
				 "(options->>'flags')::int, (options->>'n_merges')::int, "
				 "ARRAY(SELECT jsonb_array_elements_text(options->'specials')::int), "
				 "options->'splits', model_data, options->'added' FROM tfm.tokenizers WHERE name = $1",
				 1, types, args, NULL, true, 1,
				 SPI_OK_SELECT, "cannot read tfm.tokenizers");
	if (SPI_processed == 0)
		tfm_tokenizer_missing(name);
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	memset(&info, 0, sizeof(info));
	id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	kind = TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
	tfm_tok_kind_parse(&info.kind, kind);
	info.vocab_size = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
	info.format_version = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
	info.flags = (uint32) DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
	info.n_merges = DatumGetInt32(SPI_getbinval(tup, td, 6, &isnull));
	{
		ArrayType  *sp = DatumGetArrayTypeP(SPI_getbinval(tup, td, 7, &isnull));

		if (ArrayGetNItems(ARR_NDIM(sp), ARR_DIMS(sp)) != TFM_TOK_N_SPECIALS)
			damaged(name, "has a malformed list of special ids");
		memcpy(info.special_ids, ARR_DATA_PTR(sp), sizeof(info.special_ids));
	}
	{
		Datum		d = SPI_getbinval(tup, td, 8, &isnull);

		/* used after SPI_finish: copied to the caller's context */
		splits = isnull ? NULL : DatumGetJsonbP(SPI_datumTransfer(d, false, -1));
	}
	{
		Datum		d = SPI_getbinval(tup, td, 9, &isnull);

		if (!isnull)
			model_data = DatumGetByteaPCopy(d);
	}
	{
		Datum		d = SPI_getbinval(tup, td, 10, &isnull);

		added = isnull ? NULL : DatumGetJsonbP(SPI_datumTransfer(d, false, -1));
	}

	pieces = palloc0(sizeof(uint8_t *) * Max(info.vocab_size, 1));
	lens = palloc0(sizeof(size_t) * Max(info.vocab_size, 1));
	args[0] = Int32GetDatum(id);
	types[0] = INT4OID;
	if ((int64) tfm_spi_exec("SELECT id, piece FROM tfm.vocab WHERE tokenizer_id = $1",
							 1, types, args, NULL, true, 0,
							 SPI_OK_SELECT, "cannot read tfm.vocab") != info.vocab_size)
		damaged(name, psprintf("has %lld pieces for %d ids", (long long) SPI_processed,
							   info.vocab_size));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		int32		i = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
		bytea	   *p = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));

		if (i < 0 || i >= info.vocab_size)
			damaged(name, psprintf("has a piece for id %d, outside its vocabulary", i));
		pieces[i] = (const uint8_t *) VARDATA_ANY(p);
		lens[i] = VARSIZE_ANY_EXHDR(p);
	}
	if (info.n_merges > 0)
	{
		SPITupleTable *vt = SPI_tuptable;

		ml = palloc(sizeof(int32_t) * info.n_merges);
		mr = palloc(sizeof(int32_t) * info.n_merges);
		if ((int64) tfm_spi_exec("SELECT left_id, right_id FROM tfm.merges WHERE tokenizer_id = $1 "
								 "ORDER BY rank", 1, types, args, NULL, true, 0,
								 SPI_OK_SELECT, "cannot read tfm.merges") != info.n_merges)
			damaged(name, psprintf("has %lld merges, its row says %d", (long long) SPI_processed,
								   info.n_merges));
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			ml[r] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
			mr[r] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));
		}
		(void) vt;
	}
	if (info.kind == TFM_TOK_UNIGRAM)
		status = tfm_tok_load_unigram(&tok, &info, pieces, lens,
									  model_data ? (const uint8_t *) VARDATA(model_data) : NULL,
									  model_data ? VARSIZE(model_data) - VARHDRSZ : 0, &err);
	else
		status = tfm_tok_load(&tok, &info, pieces, lens, ml, mr, &err);
	tfm_spi_finish_owner(&as);
	tfm_raise(status, &err, psprintf("cannot load tokenizer \"%s\"", name));
	{
		/* owned by the context until the rules are compiled */
		TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);

		own->tok = tok;
		tfm_tokenizer_add_splits(tok, name, splits);
		tfm_tokenizer_set_added_json(tok, name, added);
		own->tok = NULL;
	}
	*idp = id;
	return tok;
}

/*
 * A tokenizer's row id (-1 if there is none) and whether the current user
 * may use it (tfm.may_use_tokenizer).
 */
int32
tfm_tokenizer_lookup(const char *name, bool *may_use)
{
	TfmAsOwner	as;
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		args[2];
	int32		id = -1;
	bool		isnull;

	*may_use = false;
	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(GetUserId());
	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT id, tfm.may_use_tokenizer(id, $2) FROM tfm.tokenizers WHERE name = $1",
						  2, types, args, NULL, true, 1);
	if (SPI_processed > 0)
	{
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*may_use = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	tfm_spi_finish_owner(&as);
	return id;
}

/* drop a tokenizer no model uses (the caller checked it owns it) */
void
tfm_tokenizer_delete(const char *name)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};

	tfm_spi_connect_owner(&as);
	SPI_execute_with_args("SELECT name FROM tfm.models WHERE tokenizer = $1 OR target_tokenizer = $1 "
						  "ORDER BY name LIMIT 1", 1, types, args, NULL, true, 1);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("tokenizer \"%s\" is used by model \"%s\"", name,
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Drop the models that use it first.")));
	tfm_spi_exec("DELETE FROM tfm.tokenizers WHERE name = $1", 1, types, args,
				 NULL, false, 0,
				 SPI_OK_DELETE, "cannot delete from tfm.tokenizers");
	if (SPI_processed == 0)
		tfm_tokenizer_missing(name);
	tfm_spi_finish_owner(&as);
}

/*
 * For tfm_import: a GPT-2 byte-level BPE from encoder.json and vocab.bpe
 * texts (built from a tokenizer.json), stored under name; returns the
 * number of ids before tfm's specials.
 */
int32
tfm_tokenizer_import_gpt2(const char *name, const char *enc, size_t enc_len,
						  const char *bpe, size_t bpe_len)
{
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status err;
	tfm_tok_info info;

	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_import_gpt2(&own->tok, enc, enc_len, bpe, bpe_len, &err),
			  &err, "cannot import the tokenizer");
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
	tfm_tok_get_info(&info, own->tok);
	return info.vocab_size - TFM_TOK_N_SPECIALS;
}

/* a tokenizer.json's added tokens (NULL or none: nothing) on a new tokenizer */
void
tfm_tokenizer_set_imported_added(tfm_tokenizer *t, const TfmAddedTokens *added)
{
	tfm_status	err;

	if (added && added->n > 0)
		tfm_raise(tfm_tok_set_added(t, added->ids, added->flags, added->n, &err), &err,
				  "cannot import the tokenizer's added tokens");
}

/*
 * For tfm_import: a SentencePiece-style BPE (Llama 2's tokenizer.json) from
 * its pieces and merges, stored under name; returns the number of ids
 * before tfm's specials.
 */
int32
tfm_tokenizer_import_spiece(const char *name, const uint8_t *const *pieces, const size_t *lens,
							int32 n, const int32_t *merge_lr, int32 n_merges, int32 unk,
							int32 bos, int32 eos, uint32 flags, const TfmAddedTokens *added)
{
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status err;

	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_import_spiece(&own->tok, pieces, lens, n, merge_lr, n_merges, unk, bos, eos,
									flags, &err),
			  &err, "cannot import the tokenizer");
	tfm_tokenizer_set_imported_added(own->tok, added);
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
	return n;
}

/*
 * For tfm_import: a tokenizer.json's byte-level BPE (RoBERTa, Llama 3,
 * SmolLM) from its pieces and merges, stored under name; the stored
 * tokenizer's special ids go to special_ids.  Returns the number of ids
 * before tfm's added specials.
 */
int32
tfm_tokenizer_import_hf_bpe(const char *name, const uint8_t *const *pieces, const size_t *lens,
							const uint8_t *literal, int32 n, const int32_t *merge_lr,
							int32 n_merges, const int32_t *specials, uint32 flags,
							const TfmSplitRule *rules, int n_rules, const TfmAddedTokens *added,
							int32_t *special_ids)
{
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status err;
	tfm_tok_info info;

	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_import_hf_bpe(&own->tok, pieces, lens, literal, n, merge_lr, n_merges,
									specials, flags, &err),
			  &err, "cannot import the tokenizer");
	for (int i = 0; i < n_rules; i++)
		tfm_raise(tfm_tok_add_split(own->tok, rules[i].pattern, strlen(rules[i].pattern),
									(tfm_tok_split_behavior) rules[i].behavior, rules[i].invert,
									&err),
				  &err, "cannot import the tokenizer's Split pre-tokenizer");
	tfm_tokenizer_set_imported_added(own->tok, added);
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
	tfm_tok_get_info(&info, own->tok);
	memcpy(special_ids, info.special_ids, sizeof(info.special_ids));
	return n;
}

/*
 * For tfm_import: a tokenizer.json's SentencePiece Unigram model, stored
 * under name; the stored tokenizer's special ids go to special_ids.
 */
void
tfm_tokenizer_import_unigram(const char *name, const uint8_t *const *pieces, const size_t *lens,
							 int32 n, const tfm_tok_unigram_spec *spec, int32_t *special_ids)
{
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status	err;
	tfm_tok_info info;

	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_import_unigram(&own->tok, pieces, lens, n, spec, &err),
			  &err, "cannot import the tokenizer");
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
	tfm_tok_get_info(&info, own->tok);
	memcpy(special_ids, info.special_ids, sizeof(info.special_ids));
}

/* a tokenizer built from its rows' parts (tfm_tok_load), stored as name */
void
tfm_tokenizer_store_pieces(const char *name, const tfm_tok_info *info,
						   const uint8 *const *pieces, const size_t *lens)
{
	TfmTokOwner *own = tfm_tok_owner(CurrentMemoryContext);
	tfm_status err;

	tfm_tokenizer_check_new(name, false);
	tfm_raise(tfm_tok_load(&own->tok, info, pieces, lens, NULL, NULL, &err),
			  &err, "cannot import the tokenizer");
	tfm_tokenizer_store(name, own->tok, 0, GetUserId());
}
