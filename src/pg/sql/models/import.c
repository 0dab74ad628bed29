/*
 * import.c — tfm_import and tfm_import_files: a published Hugging Face
 * checkpoint (config.json, model.safetensors, tokenizer.json) becomes a tfm
 * model owned by the caller, with its tokenizer stored under the model's
 * name (a Marian checkpoint's source.spm, target.spm and vocab.json: two
 * tokenizers, name and name_target; tfm_import_marian from their bytes);
 * tfm_import_gguf and tfm_import_gguf_file the same from a llama GGUF
 * file (import/gguf_import.c).  tfm never fetches anything: the files are the caller's.
 *
 * The import itself is import/model_import.c's; the weights come through a
 * TfmWeightSource (import/weights.c), so that a bytea in memory, a server
 * file and the shards of a sharded checkpoint are walked the same way, one
 * tensor at a time, never a whole file in memory.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "import/hf_files.h"
#include "tfm/safetensors.h"
#include "tfm/tokenizer.h"
#include "sql/args.h"
#include "runtime/rows.h"
#include "storage/models/models.h"

#define TFM_MAX_JSON_FILE ((uint64) 512 * 1024 * 1024)	/* config / tokenizer.json */

/* an imported model as tfm_import's row (name, task, parameters) */
static Datum
result_row(FunctionCallInfo fcinfo, const char *name, tfm_task imported_task, int64 n_params)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(tfm_task_name(imported_task));
	values[2] = Int64GetDatum(n_params);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

static Datum
import_model(FunctionCallInfo fcinfo, const char *name, Jsonb *config, TfmWeightSource *src,
			 Jsonb *tokenizer, const char *task)
{
	tfm_task	imported_task;
	int64		n_params = tfm_hf_import_model(name, config, src, tokenizer, task, &imported_task);

	return result_row(fcinfo, name, imported_task, n_params);
}

/* only superusers and pg_read_server_files read server files (a "directory"
 * or a "file"; whose: "files'" or "file's"; alternative: the bytes' function) */
static void
check_server_files(const char *what, const char *whose, const char *alternative)
{
	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read server files"),
				 errdetail("Only superusers and roles with privileges of pg_read_server_files "
						   "may import from a server %s; others can pass the %s contents to %s.",
						   what, whose, alternative)));
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
	{
		Datum		r = import_model(fcinfo, name, PG_GETARG_JSONB_P(1), &src,
									 PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3),
									 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)));

		tfm_hf_store_generation(name, NULL, PG_GETARG_JSONB_P(1));
		PG_RETURN_DATUM(r);
	}
}

PG_FUNCTION_INFO_V1(tfm_import_marian);
Datum
tfm_import_marian(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	bytea	   *w,
			   *s,
			   *t;
	TfmWeightSource src;
	TfmMarianFiles f;
	tfm_task	task;
	int64		n;

	TFM_ARG_NOT_NULL(1, "config");
	TFM_ARG_NOT_NULL(2, "weights");
	TFM_ARG_NOT_NULL(3, "source_spm");
	TFM_ARG_NOT_NULL(4, "target_spm");
	TFM_ARG_NOT_NULL(5, "vocab");
	w = PG_GETARG_BYTEA_PP(2);
	s = PG_GETARG_BYTEA_PP(3);
	t = PG_GETARG_BYTEA_PP(4);
	tfm_weights_from_bytea(&src, (const uint8 *) VARDATA_ANY(w), VARSIZE_ANY_EXHDR(w));
	f.source = (const uint8 *) VARDATA_ANY(s);
	f.source_len = VARSIZE_ANY_EXHDR(s);
	f.target = (const uint8 *) VARDATA_ANY(t);
	f.target_len = VARSIZE_ANY_EXHDR(t);
	f.vocab = PG_GETARG_JSONB_P(5);
	n = tfm_hf_import_marian(name, PG_GETARG_JSONB_P(1), &src, &f,
							 PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6)), &task);
	tfm_hf_store_generation(name, NULL, PG_GETARG_JSONB_P(1));
	PG_RETURN_DATUM(result_row(fcinfo, name, task, n));
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

/* a Marian directory's tokenizer files are there (source.spm: the others are then required) */
static bool
marian_files(const char *dir)
{
	uint64		size;
	int			fd = tfm_open_server_file(psprintf("%s/source.spm", dir), true, &size);

	if (fd < 0)
		return false;
	CloseTransientFile(fd);
	return true;
}

PG_FUNCTION_INFO_V1(tfm_import_files);
Datum
tfm_import_files(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	TfmWeightSource src;
	Datum		result;
	Jsonb	   *config,
			   *tokenizer;
	char	   *dir = tfm_text_arg(fcinfo, 1, "directory");

	check_server_files("directory", "files'", "tfm_import");
	if (!is_absolute_path(dir))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("directory must be an absolute path, not \"%s\"", dir)));
	config = read_json_file(dir, "config.json", false);
	tokenizer = read_json_file(dir, "tokenizer.json", true);
	tfm_weights_from_dir(&src, dir);
	if (!tokenizer && marian_files(dir))
	{
		/* opus-mt's tokenizer: source.spm, target.spm and vocab.json */
		TfmMarianFiles f;
		tfm_task	imported_task;
		int64		n;

		f.source = (const uint8 *) tfm_read_server_file(psprintf("%s/source.spm", dir), false,
														TFM_MAX_JSON_FILE, &f.source_len);
		f.target = (const uint8 *) tfm_read_server_file(psprintf("%s/target.spm", dir), false,
														TFM_MAX_JSON_FILE, &f.target_len);
		f.vocab = read_json_file(dir, "vocab.json", false);
		n = tfm_hf_import_marian(name, config, &src, &f,
								 PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)),
								 &imported_task);
		tfm_weights_close(&src);
		tfm_hf_store_generation(name, read_json_file(dir, "generation_config.json", true), config);
		return result_row(fcinfo, name, imported_task, n);
	}
	result = import_model(fcinfo, name, config, &src, tokenizer,
						  PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	tfm_weights_close(&src);
	tfm_hf_store_generation(name, read_json_file(dir, "generation_config.json", true), config);
	/* a chat model's template and stop ids, kept with its tokenizer */
	if (tokenizer)
	{
		Jsonb	   *tcfg = read_json_file(dir, "tokenizer_config.json", true);

		if (tcfg)
			(void) tfm_hf_import_chat(name, tcfg, read_json_file(dir, "generation_config.json", true),
									  config, tokenizer, false);
	}
	return result;
}

PG_FUNCTION_INFO_V1(tfm_import_gguf);
Datum
tfm_import_gguf(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	bytea	   *g;
	tfm_task	task;
	int64		n;

	TFM_ARG_NOT_NULL(1, "gguf");
	TFM_ARG_NOT_NULL(2, "tokenizer");
	g = PG_GETARG_BYTEA_PP(1);
	n = tfm_gguf_import_bytes(name, (const uint8 *) VARDATA_ANY(g), VARSIZE_ANY_EXHDR(g),
							  PG_GETARG_BOOL(2), &task);
	PG_RETURN_DATUM(result_row(fcinfo, name, task, n));
}

PG_FUNCTION_INFO_V1(tfm_import_gguf_file);
Datum
tfm_import_gguf_file(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *path = tfm_text_arg(fcinfo, 1, "path");
	tfm_task	task;
	int64		n;

	TFM_ARG_NOT_NULL(2, "tokenizer");
	check_server_files("file", "file's", "tfm_import_gguf");
	if (!is_absolute_path(path))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("path must be an absolute path, not \"%s\"", path)));
	n = tfm_gguf_import_file(name, path, PG_GETARG_BOOL(2), &task);
	PG_RETURN_DATUM(result_row(fcinfo, name, task, n));
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
