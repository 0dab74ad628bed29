/*
 * catalog.c — models and their tensors in schema tfm, through SPI.
 *
 * A model's hyper-parameters are the JSON object in tfm.models.config; its
 * weights are tfm.tensors rows (name, shape, real[] values; a tensor of more
 * than TFM_CHUNK_VALUES values in several rows, chunk 0, 1, ...) in
 * the order and with the names of doc/model.md.  Loading checks that the
 * stored format version is one this build reads, that every tensor the
 * config implies is present with the right shape, and nothing else is.
 * Saving rewrites every tensor and takes a new version from
 * tfm.version_seq in the caller's transaction, so a rolled-back save is
 * never seen and a version number is never reused.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "tfm/truncate.h"
#include "storage/storage.h"
#include "storage/models/models.h"

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
	if (model)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" has an unknown precision \"%s\" in its config", model, name)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown precision \"%s\"", name),
			 errhint("Valid precisions are auto, fp32, bf16, int8 and int4.")));
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

char *
tfm_config_json(const tfm_config *c)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s,
					 "{\"vocab\": %d, \"tgt_vocab\": %d, \"d_model\": %d, \"heads\": %d, "
					 "\"enc_layers\": %d, \"dec_layers\": %d, \"d_ff\": %d, \"max_len\": %d, "
					 "\"n_classes\": %d, \"norm\": \"%s\", \"positions\": \"%s\", "
					 "\"activation\": \"%s\", \"pooling\": \"%s\", \"tie_embeddings\": %s, "
					 "\"scale_embeddings\": %s, \"pad_id\": %d, \"dropout\": %g, "
					 "\"attention_dropout\": %g",
					 c->vocab, c->tgt_vocab, c->d_model, c->heads, c->enc_layers,
					 c->dec_layers, c->d_ff, c->max_len, c->n_classes,
					 c->norm == TFM_NORM_PRE ? "pre" : "post",
					 c->positions == TFM_POS_SINUSOIDAL ? "sinusoidal" :
					 c->positions == TFM_POS_ROPE ? "rope" :
					 c->positions == TFM_POS_RELATIVE ? "relative" : "learned",
					 c->activation == TFM_ACT_GELU_TANH ? "gelu_tanh" :
					 c->activation == TFM_ACT_GELU ? "gelu" :
					 c->activation == TFM_ACT_SILU ? "silu" : "relu",
					 c->pooling == TFM_POOL_CLS ? "cls" : "mean",
					 c->tie ? "true" : "false", c->scale_embeddings ? "true" : "false",
					 c->pad_id, c->dropout, c->attn_dropout);
	/* fields added after 0.1 appear only when not their default */
	if (c->ln_eps > 0.0f && c->ln_eps != TFM_LN_EPS)
		appendStringInfo(&s, ", \"layer_norm_eps\": %.9g", c->ln_eps);
	if (c->arch == TFM_ARCH_LLAMA)
		appendStringInfoString(&s, ", \"arch\": \"llama\"");
	else if (c->arch == TFM_ARCH_T5)
		appendStringInfoString(&s, ", \"arch\": \"t5\"");
	if (c->kv_heads > 0)
		appendStringInfo(&s, ", \"kv_heads\": %d", c->kv_heads);
	if (c->rope_theta > 0.0f)
		appendStringInfo(&s, ", \"rope_theta\": %.9g", c->rope_theta);
	if (c->qkv_bias)
		appendStringInfoString(&s, ", \"qkv_bias\": true");
	if (c->gated_act == TFM_GATED_GELU_TANH)
		appendStringInfoString(&s, ", \"gated_act\": \"gelu_tanh\"");
	if (c->post_norms)
		appendStringInfoString(&s, ", \"post_norms\": true");
	if (c->attn_scale > 0.0f)
		appendStringInfo(&s, ", \"attn_scale\": %.9g", c->attn_scale);
	if (c->attn_softcap > 0.0f)
		appendStringInfo(&s, ", \"attn_softcap\": %.9g", c->attn_softcap);
	if (c->final_softcap > 0.0f)
		appendStringInfo(&s, ", \"final_softcap\": %.9g", c->final_softcap);
	if (c->head_size > 0)
		appendStringInfo(&s, ", \"head_size\": %d", c->head_size);
	if (c->type_vocab)
		appendStringInfo(&s, ", \"type_vocab\": %d", c->type_vocab);
	if (c->emb_norm)
		appendStringInfoString(&s, ", \"emb_norm\": true");
	if (c->pos_offset)
		appendStringInfo(&s, ", \"pos_offset\": %d", c->pos_offset);
	if (c->cls_pre)
		appendStringInfo(&s, ", \"cls_pre\": \"%s\"", c->cls_pre == TFM_CLS_PRE_TANH ? "tanh" : "relu");
	if (c->sinus_halves)
		appendStringInfoString(&s, ", \"sinus_halves\": true");
	if (c->out_bias)
		appendStringInfoString(&s, ", \"out_bias\": true");
	if (c->rel_buckets)			/* T5 */
		appendStringInfo(&s, ", \"rel_buckets\": %d, \"rel_max_distance\": %d",
						 c->rel_buckets, c->rel_max_distance);
	if (c->ff_gated)
		appendStringInfoString(&s, ", \"ff_gated\": true");
	appendStringInfoChar(&s, '}');
	return s.data;
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
	static const char *sql =
		"SELECT id, version, steps, task, tokenizer, target_tokenizer, labels, format_version, "
		"(config->>'vocab')::int, (config->>'tgt_vocab')::int, (config->>'d_model')::int, "
		"(config->>'heads')::int, (config->>'enc_layers')::int, (config->>'dec_layers')::int, "
		"(config->>'d_ff')::int, (config->>'max_len')::int, (config->>'n_classes')::int, "
		"(config->>'norm' = 'pre')::int, "
		"CASE config->>'positions' WHEN 'sinusoidal' THEN 1 WHEN 'rope' THEN 2 "
		"WHEN 'relative' THEN 3 ELSE 0 END, "
		"CASE config->>'activation' WHEN 'gelu' THEN 1 WHEN 'gelu_tanh' THEN 2 WHEN 'silu' THEN 3 "
		"ELSE 0 END, "
		"(config->>'pooling' = 'cls')::int, "
		"(config->>'tie_embeddings')::bool::int, (config->>'scale_embeddings')::bool::int, "
		"(config->>'pad_id')::int, (config->>'dropout')::real, (config->>'attention_dropout')::real, "
		"owner, acl_use, acl_train, coalesce((config->>'layer_norm_eps')::real, 0), "
		"coalesce((config->>'bos_id')::int, -1), coalesce((config->>'eos_id')::int, -1), "
		"coalesce((config->>'type_vocab')::int, 0), coalesce((config->>'emb_norm')::bool::int, 0), "
		"coalesce((config->>'pos_offset')::int, 0), "
		"CASE WHEN config->>'cls_pre' IS NULL THEN 0 WHEN config->>'cls_pre' = 'tanh' THEN 1 "
		"WHEN config->>'cls_pre' = 'relu' THEN 2 ELSE -1 END, "
		"config->>'precision', "
		"(config->>'arch' = 'llama')::int, coalesce((config->>'kv_heads')::int, 0), "
		"coalesce((config->>'rope_theta')::real, 0), name, "
		"coalesce((config->>'dropout_auto')::bool, false), "
		"coalesce((config->>'qkv_bias')::bool::int, 0), "
		"config->>'truncation', "
		"CASE coalesce(config->>'gated_act', 'silu') WHEN 'silu' THEN 0 WHEN 'gelu_tanh' THEN 1 "
		"ELSE -1 END, "
		"coalesce((config->>'post_norms')::bool::int, 0), coalesce((config->>'attn_scale')::real, 0), "
		"coalesce((config->>'attn_softcap')::real, 0), coalesce((config->>'final_softcap')::real, 0), "
		"coalesce((config->>'head_size')::int, 0), "
		"coalesce((config->>'sinus_halves')::bool::int, 0), coalesce((config->>'out_bias')::bool::int, 0), "
		"coalesce(config->>'imported_from' IN ('marian', 't5', 'mt5'), false), "
		/* added for T5 */
		"(config->>'arch' = 't5')::int, coalesce((config->>'rel_buckets')::int, 0), "
		"coalesce((config->>'rel_max_distance')::int, 0), "
		"coalesce((config->>'ff_gated')::bool::int, 0), "
		/* Marian's generate forces </s> at max_length (forced_eos_token_id) */
		"coalesce(config->>'imported_from' = 'marian', false), "
		/* an imported encoder-decoder's generation settings (generation_config.c) */
		"coalesce((config->'generation'->>'num_beams')::int, 0), "
		"coalesce((config->'generation'->>'length_penalty')::real, -1), "
		"coalesce((config->'generation'->>'max_tokens')::int, 0) "
		/* a model of that name, else the model an alias of that name deploys */
		"FROM tfm.models WHERE name = $1 "
		"OR id = (SELECT model_id FROM tfm.aliases WHERE name = $1) "
		"ORDER BY name = $1 DESC LIMIT 1";
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	td;
	bool		isnull;
	int			fmt;
	TfmOwnerRow r;

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
	row->id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	if (tfm_catalog_expect_id != 0 && row->id != tfm_catalog_expect_id)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" is no longer the model of the job that is running", name),
				 errdetail("It was renamed, dropped or redeployed while the batch ran; "
						   "the batch's rows stay queued for the job's next run.")));
	row->version = DatumGetInt64(SPI_getbinval(tup, td, 2, &isnull));
	row->steps = DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
	{
		/* the model's own name, which an alias resolves to; checked at its creation */
		char	   *own = copy_text(tup, td, 41, cxt);

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
		char	   *task = copy_text(tup, td, 4, cxt);

		strlcpy(row->task, task, sizeof(row->task));
	}
	row->tokenizer = copy_text(tup, td, 5, cxt);
	row->target_tokenizer = copy_text(tup, td, 6, cxt);
	{
		Datum		d = SPI_getbinval(tup, td, 7, &isnull);

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
	fmt = get_int(tup, td, 8);
	if (fmt != TFM_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is stored in format version %d, this tfm reads version %d",
						name, fmt, TFM_FORMAT_VERSION)));
	row->cfg.task = tfm_task_from_name(row->task);
	row->cfg.vocab = get_int(tup, td, 9);
	row->cfg.tgt_vocab = get_int(tup, td, 10);
	row->cfg.d_model = get_int(tup, td, 11);
	row->cfg.heads = get_int(tup, td, 12);
	row->cfg.enc_layers = get_int(tup, td, 13);
	row->cfg.dec_layers = get_int(tup, td, 14);
	row->cfg.d_ff = get_int(tup, td, 15);
	row->cfg.max_len = get_int(tup, td, 16);
	row->cfg.n_classes = get_int(tup, td, 17);
	row->cfg.norm = get_int(tup, td, 18);
	row->cfg.positions = get_int(tup, td, 19);
	row->cfg.activation = get_int(tup, td, 20);
	row->cfg.pooling = get_int(tup, td, 21);
	row->cfg.tie = get_int(tup, td, 22);
	row->cfg.scale_embeddings = get_int(tup, td, 23);
	row->cfg.pad_id = get_int(tup, td, 24);
	row->cfg.dropout = DatumGetFloat4(SPI_getbinval(tup, td, 25, &isnull));
	row->cfg.attn_dropout = DatumGetFloat4(SPI_getbinval(tup, td, 26, &isnull));
	tfm_acl_from_tuple(&row->acl, tup, td, 27, cxt);
	row->cfg.ln_eps = DatumGetFloat4(SPI_getbinval(tup, td, 30, &isnull));
	row->bos_id = get_int(tup, td, 31);
	row->eos_id = get_int(tup, td, 32);
	row->cfg.type_vocab = get_int(tup, td, 33);
	row->cfg.emb_norm = get_int(tup, td, 34);
	row->cfg.pos_offset = get_int(tup, td, 35);
	row->cfg.cls_pre = get_int(tup, td, 36);
	{
		char	   *prec = copy_text(tup, td, 37, cxt);

		row->precision = prec ? tfm_precision_from_name(prec, name) : -1;
	}
	/* added for Llama: absent means tfm's own blocks */
	{
		Datum		d = SPI_getbinval(tup, td, 38, &isnull);

		row->cfg.arch = !isnull && DatumGetInt32(d) ? TFM_ARCH_LLAMA : TFM_ARCH_TFM;
	}
	row->cfg.kv_heads = get_int(tup, td, 39);
	row->cfg.rope_theta = DatumGetFloat4(SPI_getbinval(tup, td, 40, &isnull));
	/* created without a dropout: tfm_train chooses it from each run's plan */
	row->dropout_auto = DatumGetBool(SPI_getbinval(tup, td, 42, &isnull));
	row->cfg.qkv_bias = get_int(tup, td, 43);	/* added for Qwen2 */
	{
		/* added in 0.4: absent means head_tail, what every classifier did before */
		char	   *trunc = copy_text(tup, td, 44, cxt);

		row->truncation = trunc ? tfm_truncation_from_name(trunc) : TFM_TRUNC_HEAD_TAIL;
		if (row->truncation < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" has an unknown truncation \"%s\" in tfm.models", name, trunc)));
	}
	row->cfg.gated_act = get_int(tup, td, 45);	/* added for Gemma */
	/* added for Gemma 2 */
	row->cfg.post_norms = get_int(tup, td, 46);
	row->cfg.attn_scale = DatumGetFloat4(SPI_getbinval(tup, td, 47, &isnull));
	row->cfg.attn_softcap = DatumGetFloat4(SPI_getbinval(tup, td, 48, &isnull));
	row->cfg.final_softcap = DatumGetFloat4(SPI_getbinval(tup, td, 49, &isnull));
	row->cfg.head_size = get_int(tup, td, 50);
	/* added for Marian */
	row->cfg.sinus_halves = get_int(tup, td, 51);
	row->cfg.out_bias = get_int(tup, td, 52);
	row->hf_beam = DatumGetBool(SPI_getbinval(tup, td, 53, &isnull));
	/* added for T5 */
	{
		Datum		d = SPI_getbinval(tup, td, 54, &isnull);

		if (!isnull && DatumGetInt32(d))
			row->cfg.arch = TFM_ARCH_T5;
	}
	row->cfg.rel_buckets = get_int(tup, td, 55);
	row->cfg.rel_max_distance = get_int(tup, td, 56);
	row->cfg.ff_gated = get_int(tup, td, 57);
	row->hf_forced_eos = DatumGetBool(SPI_getbinval(tup, td, 58, &isnull));
	row->gen_beams = get_int(tup, td, 59);
	row->gen_length_penalty = DatumGetFloat4(SPI_getbinval(tup, td, 60, &isnull));
	row->gen_max_tokens = get_int(tup, td, 61);
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
	static const char *upsert =
		"INSERT INTO tfm.tensors (model_id, name, shape, data, chunk) VALUES ($1, $2, $3, $4, $5) "
		"ON CONFLICT (model_id, name, chunk) DO UPDATE SET shape = EXCLUDED.shape, data = EXCLUDED.data";
	/* only over the version this session loaded: no silent lost update */
	static const char *bump =
		"UPDATE tfm.models SET version = nextval('tfm.version_seq'), steps = steps + $2, "
		"updated_at = now() WHERE id = $1 AND version = $3 RETURNING version";
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
