/*
 * import_gguf.c — tfm_import_gguf and tfm_import_gguf_file: a llama GGUF
 * file (llama.cpp's format) becomes a tfm model owned by the caller, with
 * the tokenizer of its metadata stored under the model's name unless
 * tokenizer => false.  The import itself is import/gguf.c's.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "import/hf_files.h"
#include "sql/args.h"
#include "runtime/rows.h"

/* (name, task, parameters) as tfm_import's row */
static Datum
result_row(FunctionCallInfo fcinfo, const char *name, tfm_task task, int64 n_params)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(tfm_task_name(task));
	values[2] = Int64GetDatum(n_params);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
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
	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read server files"),
				 errdetail("Only superusers and roles with privileges of pg_read_server_files "
						   "may import a server file; others can pass the file's contents "
						   "to tfm_import_gguf.")));
	if (!is_absolute_path(path))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("path must be an absolute path, not \"%s\"", path)));
	n = tfm_gguf_import_file(name, path, PG_GETARG_BOOL(2), &task);
	PG_RETURN_DATUM(result_row(fcinfo, name, task, n));
}
