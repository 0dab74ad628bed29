/*
 * import.c — tfm_import and tfm_import_files: a published Hugging Face
 * checkpoint (config.json, model.safetensors, tokenizer.json) becomes a tfm
 * model owned by the caller, with its tokenizer stored under the model's
 * name.  tfm never fetches anything: the files are the caller's.
 *
 * The weights come through a TfmWeightSource (import/weights.c), so that a
 * bytea in memory, a server file and the shards of a sharded checkpoint are
 * walked the same way, one tensor at a time, never a whole file in memory.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "import/hf_files.h"
#include "tfm/safetensors.h"
#include "tfm/tokenizer.h"
#include "sql/args.h"
#include "runtime/rows.h"

#define TFM_MAX_JSON_FILE ((uint64) 512 * 1024 * 1024)	/* config / tokenizer.json */

/* the BERT family imports as classifiers; GPT-2 and Llama as language models */
static bool
is_encoder(tfm_hf_arch arch)
{
	return arch == TFM_HF_BERT || arch == TFM_HF_ROBERTA || arch == TFM_HF_DISTILBERT;
}

/* the weights, the tfm.models row and the returned row */
static Datum
import_model(FunctionCallInfo fcinfo, const char *name, Jsonb *config, TfmWeightSource *src,
			 Jsonb *tokenizer, const char *task)
{
	TfmHfConfig hc;
	tfm_config	c;
	tfm_model  *m;
	TfmModelRow row;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	char	   *json;

	tfm_check_writable("import", name);
	tfm_check_new_model_name(name);
	if (tfm_catalog_lookup(name, &row, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Drop it first with tfm_drop_model('%s').", name)));
	tfm_hf_parse_config(config, &hc);
	{
		const char *want = is_encoder(hc.p.arch) ? "classify" : "lm";

		if (task && strcmp(task, want) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a %s checkpoint imports as task \"%s\", not \"%s\"",
							hc.model_type, want, task),
					 !is_encoder(hc.p.arch) ? 0 :
					 errdetail("tfm_embed works on every classifier: it returns the pooled vector.")));
	}
	c = hc.cfg;

	/*
	 * Validate, then allocate: the size the config implies against the cap
	 * and against the bytes supplied, and the specials against the
	 * vocabulary, before the model is built.
	 */
	{
		int64		n_params = tfm_config_params(&c);
		tfm_hf_map *map = tfm_hf_map_create(hc.p.arch, &c);
		uint64		need,
					have = tfm_weights_bytes(src);

		if (!map)
			tfm_raise_code(TFM_ENOMEM, "out of memory");
		need = 2 * tfm_hf_map_min_values(map);
		tfm_hf_map_free(map);
		tfm_check_max_parameters(n_params, name);
		/* (a sharded checkpoint's headers were checked against its index already) */
		if (!src->index && have < need)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s of %llu bytes cannot hold model \"%s\"", src->what,
							(unsigned long long) have, name),
					 errdetail("Its config.json implies " INT64_FORMAT " parameters: the required "
							   "tensors take at least %llu bytes (2 a value).",
							   n_params, (unsigned long long) need)));
		if (!tokenizer)
		{
			TfmModelRow probe;
			TfmSpecials sp;

			memset(&probe, 0, sizeof(probe));
			strlcpy(probe.name, name, sizeof(probe.name));
			probe.bos_id = hc.bos_id;
			probe.eos_id = hc.eos_id;
			probe.cfg = c;
			tfm_model_specials(&probe, &sp);
		}
	}

	/* weights first: a bad file stores nothing */
	/* a head the checkpoint lacks (a base encoder's cls.*) starts from tfm's init */
	m = tfm_model_new(&c, name, TFM_SEED_DEFAULT);
	tfm_weights_load(m, &hc, src);

	if (tokenizer)
	{
		int32		sp[TFM_TOK_N_SPECIALS];

		tfm_hf_import_tokenizer(name, tokenizer, c.vocab, sp);

		/*
		 * An encoder reads text as the post-processor's [CLS] text [SEP]
		 * (RoBERTa's <s> text </s>) and an empty text as [UNK]: those must be
		 * the checkpoint's own ids, never ids past its vocabulary.
		 */
		if (is_encoder(hc.p.arch) &&
			(sp[TFM_TOK_CLS] >= c.vocab || sp[TFM_TOK_SEP] >= c.vocab || sp[TFM_TOK_UNK] >= c.vocab))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the tokenizer.json of a %s checkpoint must name its [CLS] and [SEP] "
							"(or <s> and </s>) and its unknown token",
							hc.model_type),
					 errdetail("tfm reads text the way the file's post-processor "
							   "(BertProcessing, RobertaProcessing or a \"[CLS] $A [SEP]\" template) "
							   "and model.unk_token (or a piece \"<unk>\") say; "
							   "import without the tokenizer and pass token ids.")));
		/*
		 * The specials the model will use (the tokenizer's, the config's bos
		 * and eos over them) fit the vocabulary; those not known yet
		 * (INT_MAX) are checked at their first use.
		 */
		{
			TfmSpecials tsp;

			tsp.pad = c.emb_norm && c.pad_id >= 0 ? c.pad_id : sp[TFM_TOK_PAD];
			tsp.unk = sp[TFM_TOK_UNK];
			tsp.bos = hc.bos_id >= 0 ? hc.bos_id : sp[TFM_TOK_BOS];
			tsp.eos = hc.eos_id >= 0 ? hc.eos_id : sp[TFM_TOK_EOS];
			tsp.cls = sp[TFM_TOK_CLS];
			tsp.sep = sp[TFM_TOK_SEP];
			if (tsp.pad == INT_MAX)
				tsp.pad = 0;
			if (tsp.unk == INT_MAX)
				tsp.unk = 0;
			if (tsp.cls == INT_MAX)
				tsp.cls = 0;
			if (tsp.bos == INT_MAX)
				tsp.bos = 0;
			if (tsp.eos == INT_MAX)
				tsp.eos = 0;
			tfm_check_specials(name, &c, &tsp);
		}
	}

	/* the config as tfm stores it, plus the checkpoint's bos/eos and origin */
	json = tfm_config_json(&c);
	json[strlen(json) - 1] = '\0';
	json = psprintf("%s, \"bos_id\": %d, \"eos_id\": %d, \"imported_from\": \"%s\"}",
					json, hc.bos_id, hc.eos_id, hc.model_type);
	{
		TfmNewModel nm;
		Datum		labels = (Datum) 0;

		if (hc.n_labels > 0)
		{
			Datum	   *el = palloc(sizeof(Datum) * hc.n_labels);

			for (int i = 0; i < hc.n_labels; i++)
				el[i] = CStringGetTextDatum(hc.labels[i]);
			labels = PointerGetDatum(construct_array(el, hc.n_labels, TEXTOID, -1, false, TYPALIGN_INT));
		}
		memset(&nm, 0, sizeof(nm));
		nm.name = name;
		nm.task = tfm_task_name(c.task);
		nm.tokenizer = tokenizer ? name : NULL;
		nm.labels = labels;
		nm.config_json = json;
		nm.parameters = (int64) m->n_params;
		memset(&row, 0, sizeof(row));
		row.bos_id = hc.bos_id;
		row.eos_id = hc.eos_id;
		tfm_model_insert(&nm, &row);
		strlcpy(row.name, name, sizeof(row.name));
		row.cfg = c;
		row.n_labels = hc.n_labels;
		row.labels = hc.labels;
	}
	tfm_catalog_save(&row, m, 0);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(tfm_task_name(c.task));
	values[2] = Int64GetDatum((int64) m->n_params);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

PG_FUNCTION_INFO_V1(tfm_import);
Datum
tfm_import(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	bytea	   *w;
	TfmWeightSource src;

	TFM_ARG_NOT_NULL(1, "config");
	TFM_ARG_NOT_NULL(2, "weights");
	w = PG_GETARG_BYTEA_PP(2);
	tfm_weights_from_bytea(&src, (const uint8 *) VARDATA_ANY(w), VARSIZE_ANY_EXHDR(w));
	PG_RETURN_DATUM(import_model(fcinfo, name, PG_GETARG_JSONB_P(1), &src,
								 PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3),
								 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4))));
}

/* a whole JSON file of the directory as jsonb, or NULL if absent and optional */
static Jsonb *
read_json_file(const char *dir, const char *file, bool optional)
{
	size_t		len;
	char	   *buf = tfm_read_server_file(psprintf("%s/%s", dir, file), optional,
										   TFM_MAX_JSON_FILE, &len);

	if (!buf)
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf)));
}

PG_FUNCTION_INFO_V1(tfm_import_files);
Datum
tfm_import_files(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *dir = tfm_text_arg(fcinfo, 1, "directory");
	Jsonb	   *config,
			   *tokenizer;
	TfmWeightSource src;
	Datum		result;

	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read server files"),
				 errdetail("Only superusers and roles with privileges of pg_read_server_files "
						   "may import from a server directory; others can pass the files' "
						   "contents to tfm_import.")));
	if (!is_absolute_path(dir))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("directory must be an absolute path, not \"%s\"", dir)));
	config = read_json_file(dir, "config.json", false);
	tokenizer = read_json_file(dir, "tokenizer.json", true);
	tfm_weights_from_dir(&src, dir);
	result = import_model(fcinfo, name, config, &src, tokenizer,
						  PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	tfm_weights_close(&src);
	return result;
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_import_json);
Datum
tfm_tokenizer_import_json(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	int32		sp[TFM_TOK_N_SPECIALS];

	tfm_check_new_name("tokenizer", name);
	TFM_ARG_NOT_NULL(1, "tokenizer");
	tfm_check_writable("import", name);
	tfm_hf_import_tokenizer(name, PG_GETARG_JSONB_P(1), TFM_VOCAB_MAX, sp);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("tokenizer \"%s\" imported", name)));
}
