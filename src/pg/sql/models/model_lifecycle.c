/*
 * model_lifecycle.c — tfm_create_model, tfm_drop_model and tfm_copy_model: argument
 * checks over the task's defaults; the new model's row and initial weights
 * are runtime/new_model.c's.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "tfm/truncate.h"
#include "sql/args.h"
#include "runtime/rows.h"
#include "runtime/runtime.h"
#include "runtime/new_model.h"
#include "runtime/cache/shared_weights.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/models.h"
#include "storage/roles/roles.h"

/* argument positions of tfm_create_model */
enum
{
	A_NAME, A_TASK, A_TOKENIZER, A_LABELS, A_VOCAB, A_D_MODEL, A_HEADS, A_LAYERS,
	A_ENC_LAYERS, A_DEC_LAYERS, A_D_FF, A_MAX_LEN, A_DROPOUT, A_ATTN_DROPOUT,
	A_NORM, A_POSITIONS, A_ACTIVATION, A_POOLING, A_TIE, A_SCALE, A_TGT_TOKENIZER,
	A_SEED, A_TRUNCATION
};

static int
int_arg(FunctionCallInfo fcinfo, int n, int dflt, const char *what, int lo, int hi)
{
	int			v;

	if (PG_ARGISNULL(n))
		return dflt;
	v = PG_GETARG_INT32(n);
	if (v < lo || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %d and %d, not %d", what, lo, hi, v)));
	return v;
}

static float
real_arg(FunctionCallInfo fcinfo, int n, float dflt, const char *what)
{
	float		v;

	if (PG_ARGISNULL(n))
		return dflt;
	v = PG_GETARG_FLOAT4(n);
	if (!(v >= 0.0f && v < 1.0f))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 0 and less than 1", what)));
	return v;
}

static int
choice_arg(FunctionCallInfo fcinfo, int n, int dflt, const char *what,
		   const char *a, const char *b)
{
	char	   *s;

	if (PG_ARGISNULL(n))
		return dflt;
	s = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (strcmp(s, a) == 0)
		return 0;
	if (strcmp(s, b) == 0)
		return 1;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must be \"%s\" or \"%s\", not \"%s\"", what, a, b, s)));
	return dflt;
}

static void
check_labels(ArrayType *labels, int *n)
{
	Datum	   *elems;
	bool	   *nulls;

	if (ARR_NDIM(labels) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("labels must be a one-dimensional array")));
	deconstruct_array(labels, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	if (*n < TFM_CLASSES_MIN || *n > TFM_CLASSES_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a classifier needs between %d and %d labels, not %d",
						TFM_CLASSES_MIN, TFM_CLASSES_MAX, *n)));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("labels must not contain NULL")));
		for (int j = 0; j < i; j++)
			if (!nulls[j] && strcmp(TextDatumGetCString(elems[i]), TextDatumGetCString(elems[j])) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("label \"%s\" appears twice", TextDatumGetCString(elems[i]))));
	}
}

/* the vocabulary: from the tokenizer, or given; a seq2seq model's target tokenizer */
static void
vocab_args(FunctionCallInfo fcinfo, tfm_task task, const char *tokenizer,
		   const char *tgt_tokenizer, tfm_config *c)
{
	if (tokenizer)
	{
		tfm_check_tokenizer_use(tokenizer);
		tfm_tokenizer_sizes(tokenizer, &c->vocab, &c->pad_id);
		if (!PG_ARGISNULL(A_VOCAB))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("give a tokenizer or a vocab_size, not both")));
	}
	else if (PG_ARGISNULL(A_VOCAB))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a model needs a tokenizer or a vocab_size")));
	else
		c->vocab = int_arg(fcinfo, A_VOCAB, 0, "vocab_size", TFM_OWN_VOCAB_MIN, TFM_VOCAB_MAX);
	if (tgt_tokenizer)
	{
		int			tpad;

		if (task != TFM_TASK_SEQ2SEQ)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("only a seq2seq model takes a target_tokenizer")));
		tfm_check_tokenizer_use(tgt_tokenizer);
		tfm_tokenizer_sizes(tgt_tokenizer, &c->tgt_vocab, &tpad);
		if (tpad != c->pad_id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the source and target tokenizers have different pad ids")));
	}
}

/* labels: a classifier's classes, refused for the other tasks */
static void
labels_arg(FunctionCallInfo fcinfo, tfm_task task, tfm_config *c)
{
	if (task == TFM_TASK_CLASSIFY)
	{
		if (PG_ARGISNULL(A_LABELS))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a classify model needs labels"),
					 errhint("Pass labels => ARRAY['neg', 'pos'].")));
		check_labels(PG_GETARG_ARRAYTYPE_P(A_LABELS), &c->n_classes);
	}
	else if (!PG_ARGISNULL(A_LABELS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("only a classify model takes labels")));
}

/* the layers: layers for every stack, or a seq2seq model's two */
static void
layers_args(FunctionCallInfo fcinfo, tfm_task task, tfm_config *c)
{
	int			layers = int_arg(fcinfo, A_LAYERS, -1, "layers", TFM_LAYERS_MIN, TFM_LAYERS_MAX);

	if (layers > 0)
	{
		if (task != TFM_TASK_LM)
			c->enc_layers = layers;
		if (task != TFM_TASK_CLASSIFY)
			c->dec_layers = layers;
	}
	if (!PG_ARGISNULL(A_ENC_LAYERS) || !PG_ARGISNULL(A_DEC_LAYERS))
	{
		if (task != TFM_TASK_SEQ2SEQ)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("encoder_layers and decoder_layers are for seq2seq models; use layers")));
		c->enc_layers = int_arg(fcinfo, A_ENC_LAYERS, c->enc_layers, "encoder_layers", TFM_LAYERS_MIN, TFM_LAYERS_MAX);
		c->dec_layers = int_arg(fcinfo, A_DEC_LAYERS, c->dec_layers, "decoder_layers", TFM_LAYERS_MIN, TFM_LAYERS_MAX);
	}
}

/* the shape and the options, over the task's defaults; the config checked */
static void
shape_args(FunctionCallInfo fcinfo, tfm_task task, tfm_config *c)
{
	const char *bad;

	c->d_model = int_arg(fcinfo, A_D_MODEL, c->d_model, "d_model", TFM_D_MODEL_MIN, TFM_D_MODEL_MAX);
	c->heads = int_arg(fcinfo, A_HEADS, c->heads, "heads", TFM_HEADS_MIN, TFM_HEADS_MAX);
	if (c->d_model % c->heads != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("heads (%d) must divide d_model (%d)", c->heads, c->d_model)));
	layers_args(fcinfo, task, c);
	c->d_ff = int_arg(fcinfo, A_D_FF, 4 * c->d_model, "d_ff", TFM_D_FF_MIN, TFM_D_FF_MAX);
	c->max_len = int_arg(fcinfo, A_MAX_LEN, c->max_len, "max_len", TFM_LEN_MIN, TFM_LEN_MAX);
	c->dropout = real_arg(fcinfo, A_DROPOUT, c->dropout, "dropout");
	c->attn_dropout = real_arg(fcinfo, A_ATTN_DROPOUT, c->attn_dropout, "attention_dropout");
	c->norm = choice_arg(fcinfo, A_NORM, c->norm, "norm", "post", "pre");
	c->positions = choice_arg(fcinfo, A_POSITIONS, c->positions, "positions", "learned", "sinusoidal");
	c->activation = choice_arg(fcinfo, A_ACTIVATION, c->activation, "activation", "relu", "gelu");
	if (!PG_ARGISNULL(A_POOLING) && task != TFM_TASK_CLASSIFY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("only a classify model takes pooling")));
	c->pooling = choice_arg(fcinfo, A_POOLING, c->pooling, "pooling", "mean", "cls");
	if (!PG_ARGISNULL(A_TIE))
		c->tie = PG_GETARG_BOOL(A_TIE);
	if (!PG_ARGISNULL(A_SCALE))
		c->scale_embeddings = PG_GETARG_BOOL(A_SCALE);
	bad = tfm_config_check(c);
	if (bad)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid model: %s", bad)));
}

/* classify: which tokens of a long input are kept (tfm/truncate.h); -1 for other tasks */
static int
truncation_arg(FunctionCallInfo fcinfo, tfm_task task)
{
	char	   *s;
	int			mode;

	if (PG_NARGS() <= A_TRUNCATION || PG_ARGISNULL(A_TRUNCATION))
		return task == TFM_TASK_CLASSIFY ? TFM_TRUNC_HEAD_TAIL : -1;
	if (task != TFM_TASK_CLASSIFY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("only a classify model takes truncation")));
	s = text_to_cstring(PG_GETARG_TEXT_PP(A_TRUNCATION));
	mode = tfm_truncation_from_name(s);
	if (mode < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown truncation \"%s\"", s),
				 errhint("Valid truncations are head_tail (the default), head and tail.")));
	return mode;
}

PG_FUNCTION_INFO_V1(tfm_create_model);
Datum
tfm_create_model(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, A_NAME, "name");
	char	   *task_name = tfm_text_arg(fcinfo, A_TASK, "task");
	char	   *tokenizer = PG_ARGISNULL(A_TOKENIZER) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(A_TOKENIZER));
	char	   *tgt_tokenizer = PG_ARGISNULL(A_TGT_TOKENIZER) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(A_TGT_TOKENIZER));
	int64		seed = PG_ARGISNULL(A_SEED) ? TFM_SEED_DEFAULT : PG_GETARG_INT64(A_SEED);
	tfm_task	task;
	tfm_config	c;
	TfmNewModel nm;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	tfm_check_writable("create", name);
	tfm_check_new_model_name(name);
	task = tfm_task_from_name(task_name);
	tfm_config_defaults(&c, task);
	vocab_args(fcinfo, task, tokenizer, tgt_tokenizer, &c);
	labels_arg(fcinfo, task, &c);
	shape_args(fcinfo, task, &c);

	memset(&nm, 0, sizeof(nm));
	nm.name = name;
	nm.task = tfm_task_name(task);
	nm.tokenizer = tokenizer;
	nm.target_tokenizer = tgt_tokenizer;
	nm.labels = PG_ARGISNULL(A_LABELS) ? (Datum) 0 : PG_GETARG_DATUM(A_LABELS);
	/* no dropout given: each training run chooses it from its plan */
	nm.dropout_auto = PG_ARGISNULL(A_DROPOUT) && PG_ARGISNULL(A_ATTN_DROPOUT);
	nm.truncation = truncation_arg(fcinfo, task);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(tfm_task_name(task));
	values[2] = Int64GetDatum(tfm_model_create_stored(&nm, &c, (uint64) seed));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

PG_FUNCTION_INFO_V1(tfm_copy_model);
Datum
tfm_copy_model(PG_FUNCTION_ARGS)
{
	TfmModelRow row;
	tfm_model  *m;
	char	   *source = tfm_text_arg(fcinfo, 0, "source");
	char	   *target = tfm_text_arg(fcinfo, 1, "target");
	bool	   *blocks_only;
	int32		source_id;
	int64		source_version;

	tfm_check_model_from("copy", source, target);
	tfm_catalog_lookup(source, &row, false);
	tfm_check_model_privilege(&row, TFM_PRIV_USE);
	tfm_check_max_parameters(tfm_config_params(&row.cfg), target);
	m = tfm_catalog_load(&row);
	tfm_guard_model(m);
	/* an imported GGUF model's tensors stored as its file's blocks only: copied as them */
	blocks_only = tfm_kept_blocks_only(&row, m);
	source_id = row.id;
	source_version = row.version;
	/* the source by its own name: source may be an alias */
	tfm_model_insert_copy(row.name, target, &row);
	strlcpy(row.name, target, sizeof(row.name));
	tfm_catalog_save_except(&row, m, 0, blocks_only);
	tfm_gguf_tensors_copy(source_id, source_version, row.id, row.version);
	PG_RETURN_INT64((int64) m->n_params);
}

PG_FUNCTION_INFO_V1(tfm_drop_model);
Datum
tfm_drop_model(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	int32		id;

	tfm_check_writable("drop", name);
	tfm_check_model_owner("drop", name);
	id = tfm_model_delete(name);
	tfm_cache_forget(name);
	tfm_shared_forget(id);
	PG_RETURN_VOID();
}
