/*
 * catalog.c — models and their tensors in schema tfm, through SPI.
 *
 * A model's hyper-parameters are the JSON object in tfm.models.config; its
 * weights are tfm.tensors rows (name, shape, real[] values; a tensor of more
 * than TFM_CHUNK_VALUES values in several rows, chunk 0, 1, ...) in
 * the order and with the names of doc/model.md.  Loading checks that the
 * stored format version is one this build reads, that every tensor the
 * config implies is present with the right shape, and nothing else is;
 * an imported GGUF model's tensors stored as the file's blocks only (no
 * rows here: tfm.gguf_tensors of the version) get their float32 values
 * from those blocks (kept_values.c).
 * Saving rewrites every tensor (an import: but those) and takes a new version from
 * tfm.version_seq in the caller's transaction, so a rolled-back save is
 * never seen and a version number is never reused.  The config's keys are
 * read and written through model_row.c's table.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "tfm/truncate.h"
#include "storage/models/model_row.h"
#include "storage/storage.h"
#include "storage/models/models.h"
#include "storage/models/gguf_kept.h"
#include "tfm/kept_block.h"

static const char *task_names[] = {"classify", "lm", "seq2seq"};

tfm_task
tfm_task_from_name(const char *task)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(task, task_names[i]) == 0)
			return (tfm_task) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown task \"%s\"", task),
			 errhint("Valid tasks are classify, lm and seq2seq.")));
	return TFM_TASK_CLASSIFY;	/* keep compiler quiet */
}

const char *
tfm_task_name(int task)
{
	return task >= 0 && task < 3 ? task_names[task] : "unknown";
}

int
tfm_precision_from_name(const char *name, const char *model)
{
	if (strcmp(name, "fp32") == 0)
		return TFM_PREC_FP32;
	if (strcmp(name, "bf16") == 0)
		return TFM_PREC_BF16;
	if (strcmp(name, "int8") == 0)
		return TFM_PREC_INT8;
	if (strcmp(name, "int4") == 0)
		return TFM_PREC_INT4;
	if (strcmp(name, "gguf") == 0)
		return TFM_PREC_GGUF;
	if (model)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" has an unknown precision \"%s\" in its config", model, name)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown precision \"%s\"", name),
			 errhint("Valid precisions are auto, fp32, bf16, int8, int4 and gguf.")));
	return TFM_PREC_FP32;
}

void
tfm_catalog_set_precision(int32 model_id, const char *setting)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2];

	args[0] = Int32GetDatum(model_id);
	args[1] = CStringGetTextDatum(setting);
	tfm_spi_exec_owner(strcmp(setting, "auto") == 0 ?
					   "UPDATE tfm.models SET config = config - 'precision', updated_at = now() WHERE id = $1" :
					   "UPDATE tfm.models SET config = config || jsonb_build_object('precision', $2), "
					   "updated_at = now() WHERE id = $1",
					   strcmp(setting, "auto") == 0 ? 1 : 2, types, args, NULL, false, 0,
					   SPI_OK_UPDATE, "cannot update tfm.models");
}

static char *
copy_text(HeapTuple tup, TupleDesc td, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(cxt, TextDatumGetCString(d));
}

static int
get_int(HeapTuple tup, TupleDesc td, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, col, &isnull);

	if (isnull)
		elog(ERROR, "tfm.models.config lacks a field. Please report a bug.");
	return DatumGetInt32(d);
}

int32		tfm_catalog_expect_id = 0;

bool
tfm_catalog_lookup(const char *name, TfmModelRow *row, bool missing_ok)
{
	/* the row's own columns, then the config's keys (model_row.c) from CONFIG_COL */
	enum
	{
		COL_ID = 1, COL_VERSION, COL_STEPS, COL_TASK, COL_TOKENIZER, COL_TARGET_TOKENIZER,
		COL_LABELS, COL_FORMAT_VERSION, COL_OWNER, COL_ACL_USE, COL_ACL_TRAIN, COL_NAME,
		COL_PRECISION, COL_DROPOUT_AUTO, COL_TRUNCATION, COL_HF_BEAM, COL_HF_FORCED_EOS,
		COL_CHECKPOINT_PRECISION, CONFIG_COL
	};
	static char *sql = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	td;
	bool		isnull;
	int			fmt;
	TfmOwnerRow r;

	if (sql == NULL)
	{
		StringInfoData q;
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&q);
		appendStringInfoString(&q,
							   "SELECT id, version, steps, task, tokenizer, target_tokenizer, labels, "
							   "format_version, owner, acl_use, acl_train, name, config->>'precision', "
							   /* created without a dropout: tfm_train chooses it from each run's plan */
							   "coalesce((config->>'dropout_auto')::bool, false), config->>'truncation', "
							   "coalesce(config->>'imported_from' IN ('marian', 't5', 'mt5'), false), "
							   /* Marian's generate forces </s> at max_length (forced_eos_token_id) */
							   "coalesce(config->>'imported_from' = 'marian', false), "
							   /* what the import's weights were: auto runs that (0.5) */
							   "config->>'checkpoint_precision'");
		tfm_model_row_config_columns(&q);
		tfm_model_row_named_sql(&q);
		MemoryContextSwitchTo(old);
		sql = q.data;
	}
	memset(row, 0, sizeof(*row));
	tfm_check_name("model", name);
	args[0] = CStringGetTextDatum(name);
	if (!tfm_owner_row_read(&r, sql, 1, argtypes, args, true, "cannot read tfm.models"))
	{
		tfm_owner_row_end(&r);
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	}
	tup = r.tup;
	td = r.td;
	row->id = DatumGetInt32(SPI_getbinval(tup, td, COL_ID, &isnull));
	if (tfm_catalog_expect_id != 0 && row->id != tfm_catalog_expect_id)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" is no longer the model of the job that is running", name),
				 errdetail("It was renamed, dropped or redeployed while the batch ran; "
						   "the batch's rows stay queued for the job's next run.")));
	row->version = DatumGetInt64(SPI_getbinval(tup, td, COL_VERSION, &isnull));
	row->steps = DatumGetInt64(SPI_getbinval(tup, td, COL_STEPS, &isnull));
	{
		/* the model's own name, which an alias resolves to; checked at its creation */
		char	   *own = copy_text(tup, td, COL_NAME, cxt);

		if (strlen(own) > TFM_NAME_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("model name \"%s\" in tfm.models is longer than %d bytes",
							own, TFM_NAME_MAX),
					 errhint("Rename it with tfm_rename_model.")));
		strlcpy(row->name, own, sizeof(row->name));
		name = row->name;
	}
	{
		char	   *task = copy_text(tup, td, COL_TASK, cxt);

		strlcpy(row->task, task, sizeof(row->task));
	}
	row->tokenizer = copy_text(tup, td, COL_TOKENIZER, cxt);
	row->target_tokenizer = copy_text(tup, td, COL_TARGET_TOKENIZER, cxt);
	{
		Datum		d = SPI_getbinval(tup, td, COL_LABELS, &isnull);

		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			ArrayType  *arr = DatumGetArrayTypePCopy(d);
			Datum	   *elems;
			bool	   *enulls;

			deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls,
							  &row->n_labels);
			row->labels = palloc(sizeof(char *) * (row->n_labels + 1));
			for (int i = 0; i < row->n_labels; i++)
			{
				if (enulls[i])
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("model \"%s\" has a NULL label", name)));
				row->labels[i] = TextDatumGetCString(elems[i]);
			}
			MemoryContextSwitchTo(old);
		}
	}
	fmt = get_int(tup, td, COL_FORMAT_VERSION);
	if (fmt != TFM_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is stored in format version %d, this tfm reads version %d",
						name, fmt, TFM_FORMAT_VERSION)));
	row->cfg.task = tfm_task_from_name(row->task);
	tfm_model_row_config_decode(row, tup, td, CONFIG_COL);
	tfm_acl_from_tuple(&row->acl, tup, td, COL_OWNER, cxt);
	{
		char	   *prec = copy_text(tup, td, COL_PRECISION, cxt);

		row->precision = prec ? tfm_precision_from_name(prec, name) : -1;
		prec = copy_text(tup, td, COL_CHECKPOINT_PRECISION, cxt);
		row->checkpoint_precision = prec ? tfm_precision_from_name(prec, name) : -1;
	}
	row->dropout_auto = DatumGetBool(SPI_getbinval(tup, td, COL_DROPOUT_AUTO, &isnull));
	{
		/* added in 0.4: absent means head_tail, what every classifier did before */
		char	   *trunc = copy_text(tup, td, COL_TRUNCATION, cxt);

		row->truncation = trunc ? tfm_truncation_from_name(trunc) : TFM_TRUNC_HEAD_TAIL;
		if (row->truncation < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" has an unknown truncation \"%s\" in tfm.models", name, trunc)));
	}
	row->hf_beam = DatumGetBool(SPI_getbinval(tup, td, COL_HF_BEAM, &isnull));
	row->hf_forced_eos = DatumGetBool(SPI_getbinval(tup, td, COL_HF_FORCED_EOS, &isnull));
	tfm_owner_row_end(&r);
	if (row->cfg.task == TFM_TASK_CLASSIFY && row->n_labels != row->cfg.n_classes)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" has %d labels for %d classes", name, row->n_labels,
						row->cfg.n_classes)));
	{
		const char *bad = tfm_config_check(&row->cfg);

		if (!bad && (row->bos_id < -1 || row->bos_id >= row->cfg.vocab ||
					 row->eos_id < -1 || row->eos_id >= row->cfg.vocab))
			bad = "bos_id and eos_id must be tokens of the vocabulary";
		if (bad)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" has an invalid config: %s", name, bad)));
	}
	return true;
}

tfm_model *
tfm_catalog_load(const TfmModelRow *row)
{
	return tfm_catalog_load_at(row, false);
}

tfm_model *
tfm_catalog_load_at(const TfmModelRow *row, bool gguf)
{
	static const char *sql =
		"SELECT name, shape, data, chunk FROM tfm.tensors WHERE model_id = $1 ORDER BY name, chunk";
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	tfm_model  *m;
	TfmGuard   *guard;
	size_t	   *filled;			/* values read so far, per tensor */
	int		   *chunks;			/* chunks read so far, per tensor */
	TfmAsOwner	as;
	Portal		portal;

	m = tfm_model_create(&row->cfg);
	if (!m)
		tfm_raise_code(TFM_ENOMEM, "out of memory loading model \"%s\"", row->name);
	guard = tfm_guard_model(m);
	m->poll = tfm_poll_interrupts;
	filled = palloc0(sizeof(size_t) * m->n_tensors);
	chunks = palloc0(sizeof(int) * m->n_tensors);
	args[0] = Int32GetDatum(row->id);
	tfm_spi_connect_owner(&as);
	/* row by row: at most one chunk of one tensor is held besides the model */
	portal = SPI_cursor_open_with_args(NULL, sql, 1, argtypes, args, NULL, true, 0);
	for (;;)
	{
		HeapTuple	tup;
		TupleDesc	td;
		bool		isnull;
		char	   *name;
		ArrayType  *shape,
				   *data;
		const tfm_param_info *p;
		int			i,
					chunk;
		size_t		n;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 1);
		if (SPI_processed == 0)
			break;
		tup = SPI_tuptable->vals[0];
		td = SPI_tuptable->tupdesc;
		name = TextDatumGetCString(SPI_getbinval(tup, td, 1, &isnull));
		p = tfm_model_find(m, name);
		if (!p)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" has an unexpected tensor \"%s\"", row->name, name),
					 errdetail("Its config does not call for a tensor of that name.")));
		i = p - m->info;
		chunk = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
		shape = DatumGetArrayTypeP(SPI_getbinval(tup, td, 2, &isnull));
		data = DatumGetArrayTypeP(SPI_getbinval(tup, td, 3, &isnull));
		{
			int			nshape = ArrayGetNItems(ARR_NDIM(shape), ARR_DIMS(shape));
			int32	   *dims = (int32 *) ARR_DATA_PTR(shape);
			bool		shape_ok = !ARR_HASNULL(shape) && nshape == p->ndim && dims[0] == p->dims[0] &&
				(p->ndim == 1 || dims[1] == p->dims[1]);

			n = ARR_HASNULL(data) || ARR_ELEMTYPE(data) != FLOAT4OID ? SIZE_MAX :
				(size_t) ArrayGetNItems(ARR_NDIM(data), ARR_DIMS(data));
			if (!shape_ok || chunk != chunks[i] || n == SIZE_MAX || n > p->size - filled[i] ||
				(n == 0 && p->size > 0))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("tensor \"%s\" of model \"%s\" does not match its config", name, row->name),
						 p->ndim == 2 ?
						 errdetail("Expected shape {%d,%d} with %zu values.", p->dims[0], p->dims[1], p->size) :
						 errdetail("Expected shape {%d} with %zu values.", p->dims[0], p->size)));
		}
		memcpy(m->params + p->offset + filled[i], ARR_DATA_PTR(data), n * sizeof(float));
		filled[i] += n;
		chunks[i]++;
		if ((Pointer) data != DatumGetPointer(SPI_getbinval(tup, td, 3, &isnull)))
			pfree(data);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	tfm_spi_finish_owner(&as);
	/*
	 * an imported GGUF file's tensors stored as its blocks only: to run at
	 * gguf, those its blocks run wholly are left to them (no float32 values
	 * made: tfm_model_leave_absent); the others' values made from the blocks
	 */
	if (gguf)
	{
		bool	   *want = palloc(sizeof(bool) * Max(m->n_tensors, 1));
		int			n;

		tfm_attach_kept(m, row, true);
		for (int i = 0; i < m->n_tensors; i++)
			want[i] = filled[i] == 0;
		n = tfm_model_leave_absent(m, want);
		if (n < 0)
			tfm_raise_code(TFM_ENOMEM, "out of memory loading model \"%s\"", row->name);
		for (int i = 0; n > 0 && i < m->n_tensors; i++)
			if (m->absent[i])
				filled[i] = m->info[i].size;
		pfree(want);
	}
	/* (not when every tensor has its values, or is left to its blocks: no second read of them) */
	for (int i = 0; i < m->n_tensors; i++)
		if (filled[i] == 0 && m->info[i].size > 0)
		{
			tfm_kept_fill(m, row, filled);
			break;
		}
	for (int i = 0; i < m->n_tensors; i++)
		if (filled[i] != m->info[i].size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 filled[i] == 0 ?
					 errmsg("model \"%s\" lacks tensor \"%s\"", row->name, m->info[i].name) :
					 errmsg("tensor \"%s\" of model \"%s\" lacks values: %zu of %zu", m->info[i].name,
							row->name, filled[i], m->info[i].size)));
	pfree(filled);
	pfree(chunks);
	tfm_guard_release(guard);
	return m;
}

int64
tfm_catalog_save(TfmModelRow *row, const tfm_model *m, int64 add_steps)
{
	return tfm_catalog_save_except(row, m, add_steps, NULL);
}

int64
tfm_catalog_save_except(TfmModelRow *row, const tfm_model *m, int64 add_steps, const bool *blocks_only)
{
	static const char *upsert =
		"INSERT INTO tfm.tensors (model_id, name, shape, data, chunk) VALUES ($1, $2, $3, $4, $5) "
		"ON CONFLICT (model_id, name, chunk) DO UPDATE SET shape = EXCLUDED.shape, data = EXCLUDED.data";
	/* only over the version this session loaded: no silent lost update */
	static const char *bump =
		"UPDATE tfm.models SET version = nextval('tfm.version_seq'), steps = steps + $2, "
		"updated_at = now() WHERE id = $1 AND version = $3 RETURNING version";
	static const char *drop = "DELETE FROM tfm.tensors WHERE model_id = $1 AND name = $2";
	Oid			types[5] = {INT4OID, TEXTOID, INT4ARRAYOID, FLOAT4ARRAYOID, INT4OID};
	SPIPlanPtr	plan;
	int64		version;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	plan = SPI_prepare(upsert, 5, types);
	if (!plan)
		elog(ERROR, "cannot prepare the tensor upsert: %s", SPI_result_code_string(SPI_result));
	for (int i = 0; i < m->n_tensors; i++)
	{
		const tfm_param_info *p = &m->info[i];
		Datum		dims[2];
		ArrayType  *shape;

		if (blocks_only && blocks_only[i])
		{
			/* its values are its kept blocks' (tfm_kept_fill makes them at load) */
			Datum		dargs[2] = {Int32GetDatum(row->id), CStringGetTextDatum(p->name)};

			tfm_spi_exec(drop, 2, types, dargs, NULL, false, 0, SPI_OK_DELETE,
						 "cannot delete from tfm.tensors");
			continue;
		}
		dims[0] = Int32GetDatum(p->dims[0]);
		dims[1] = Int32GetDatum(p->dims[1]);
		shape = construct_array(dims, p->ndim, INT4OID, 4, true, TYPALIGN_INT);
		/* values in chunks of TFM_CHUNK_VALUES: no row nears the 1 GB limit */
		for (size_t start = 0, chunk = 0; start < p->size || (p->size == 0 && chunk == 0);
			 start += TFM_CHUNK_VALUES, chunk++)
		{
			size_t		n = Min(p->size - start, (size_t) TFM_CHUNK_VALUES);
			Size		nbytes = ARR_OVERHEAD_NONULLS(1) + n * sizeof(float4);
			ArrayType  *data;
			Datum		args[5];

			CHECK_FOR_INTERRUPTS();
			/* build the real[] directly from the float block */
			data = (ArrayType *) palloc_extended(nbytes, MCXT_ALLOC_HUGE);
			SET_VARSIZE(data, nbytes);
			data->ndim = 1;
			data->dataoffset = 0;
			data->elemtype = FLOAT4OID;
			ARR_DIMS(data)[0] = (int) n;
			ARR_LBOUND(data)[0] = 1;
			memcpy(ARR_DATA_PTR(data), m->params + p->offset + start, n * sizeof(float4));
			args[0] = Int32GetDatum(row->id);
			args[1] = CStringGetTextDatum(p->name);
			args[2] = PointerGetDatum(shape);
			args[3] = PointerGetDatum(data);
			args[4] = Int32GetDatum((int32) chunk);
			if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "cannot write tensor \"%s\"", p->name);
			pfree(data);
			if (p->size == 0)
				break;
		}
		pfree(shape);
	}
	{
		Oid			btypes[3] = {INT4OID, INT8OID, INT8OID};
		Datum		bargs[3] = {Int32GetDatum(row->id), Int64GetDatum(add_steps),
		Int64GetDatum(row->version)};
		bool		isnull;

		tfm_spi_exec(bump, 3, btypes, bargs, NULL, false, 1,
					 SPI_OK_UPDATE_RETURNING, "cannot update tfm.models");
		if (SPI_processed != 1)
		{
			Oid			t1[1] = {INT4OID};

			SPI_execute_with_args("SELECT 1 FROM tfm.models WHERE id = $1", 1, t1, bargs, NULL, false, 1);
			if (SPI_processed == 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("model \"%s\" was dropped while it was being saved", row->name)));
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("model \"%s\" was saved by another session since this one read it", row->name),
					 errhint("Run the statement again: it will start from the newer weights.")));
		}
		version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	tfm_spi_finish_owner(&as);
	row->version = version;
	row->steps += add_steps;
	return version;
}

void
tfm_check_model_privilege(const TfmModelRow *row, TfmPriv priv)
{
	if (tfm_acl_allows(&row->acl, priv, GetUserId()))
		return;
	if (priv == TFM_PRIV_OWNER)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", row->name)));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for model \"%s\": %s privilege required", row->name,
					tfm_priv_name(priv)),
			 errhint("The owner of the model can grant it with tfm_grant('%s', role, '%s').",
					 row->name, tfm_priv_name(priv))));
}
