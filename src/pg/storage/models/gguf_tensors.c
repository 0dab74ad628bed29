/*
 * gguf_tensors.c — what a GGUF import did with each tensor of the file
 * (tfm.gguf_tensors): converted to float32 only, or also kept as the
 * file's blocks (Q4_0: tfm's int4 layout, for int4 inference; Q8_0, Q4_K,
 * Q5_K, Q6_K for gguf inference; first_column NULL: an untied embedding's
 * rows, kept for storage only) of the version it imported.  Written by import/gguf_import.c, the kept blocks read by
 * storage/models/gguf_kept.c when a model is loaded, copied with it by
 * tfm_copy_model; dumped with the model.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "storage/storage.h"
#include "storage/models/models.h"

void
tfm_gguf_tensors_store(int32 model_id, int64 version, const TfmGgufTensorRow *rows, int n)
{
	static const char *insert =
		"INSERT INTO tfm.gguf_tensors (model_id, version, gguf_name, gguf_type, tensor, "
		"first_column, columns, inputs, rope_heads, blocks) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
	Oid			types[10] = {INT4OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID, INT4OID, BYTEAOID};
	SPIPlanPtr	plan;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	plan = SPI_prepare(insert, 10, types);
	if (!plan)
		elog(ERROR, "cannot prepare the insert into tfm.gguf_tensors: %s",
			 SPI_result_code_string(SPI_result));
	for (int i = 0; i < n; i++)
	{
		const TfmGgufTensorRow *r = &rows[i];
		Datum		args[10];
		char		nulls[10];
		bytea	   *b = NULL;

		CHECK_FOR_INTERRUPTS();
		memset(nulls, ' ', sizeof(nulls));
		args[0] = Int32GetDatum(model_id);
		args[1] = Int64GetDatum(version);
		args[2] = CStringGetTextDatum(r->gguf_name);
		args[3] = CStringGetTextDatum(r->gguf_type);
		args[4] = r->tensor ? CStringGetTextDatum(r->tensor) : (Datum) 0;
		nulls[4] = r->tensor ? ' ' : 'n';
		args[5] = Int32GetDatum(r->first_column);
		args[6] = Int32GetDatum(r->columns);
		args[7] = Int32GetDatum(r->inputs);
		args[8] = Int32GetDatum(r->rope_heads);
		if (r->blocks)
		{
			b = palloc_extended(VARHDRSZ + r->bytes, MCXT_ALLOC_HUGE);
			SET_VARSIZE(b, VARHDRSZ + r->bytes);
			memcpy(VARDATA(b), r->blocks, r->bytes);
			args[9] = PointerGetDatum(b);
			if (r->rows_only)
				nulls[5] = 'n';	/* no matrix's columns: the tensor's rows */
		}
		else
		{
			args[9] = (Datum) 0;
			nulls[5] = nulls[6] = nulls[7] = nulls[9] = 'n';
		}
		if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "cannot write tfm.gguf_tensors");
		if (b)
			pfree(b);
	}
	tfm_spi_finish_owner(&as);
}

int
tfm_gguf_kept_read(int32 model_id, int64 version, TfmGgufTensorRow **out)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		args[2] = {Int32GetDatum(model_id), Int64GetDatum(version)};
	MemoryContext cxt = CurrentMemoryContext;
	TfmAsOwner	as;
	uint64		n;
	TfmGgufTensorRow *rows = NULL;

	tfm_spi_connect_owner(&as);
	n = tfm_spi_exec("SELECT gguf_name, tensor, first_column, columns, inputs, rope_heads, blocks, gguf_type "
					 "FROM tfm.gguf_tensors WHERE model_id = $1 AND version = $2 AND blocks IS NOT NULL "
					 "ORDER BY gguf_name", 2, types, args, NULL, true, 0, SPI_OK_SELECT,
					 "cannot read tfm.gguf_tensors");
	if (n > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		rows = palloc0(sizeof(TfmGgufTensorRow) * n);
		for (uint64 i = 0; i < n; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	td = SPI_tuptable->tupdesc;
			bool		isnull;
			bytea	   *b;

			rows[i].gguf_name = TextDatumGetCString(SPI_getbinval(tup, td, 1, &isnull));
			rows[i].tensor = TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
			rows[i].first_column = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
			rows[i].rows_only = isnull;
			if (isnull)
				rows[i].first_column = 0;
			rows[i].columns = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
			rows[i].inputs = DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
			rows[i].rope_heads = DatumGetInt32(SPI_getbinval(tup, td, 6, &isnull));
			b = DatumGetByteaPCopy(SPI_getbinval(tup, td, 7, &isnull));
			rows[i].blocks = (const uint8 *) VARDATA(b);
			rows[i].bytes = VARSIZE(b) - VARHDRSZ;
			rows[i].gguf_type = TextDatumGetCString(SPI_getbinval(tup, td, 8, &isnull));
			rows[i].kept = true;
		}
		MemoryContextSwitchTo(old);
	}
	tfm_spi_finish_owner(&as);
	*out = rows;
	return (int) n;
}

void
tfm_gguf_tensors_copy(int32 source_id, int64 source_version, int32 target_id, int64 target_version)
{
	Oid			types[4] = {INT4OID, INT8OID, INT4OID, INT8OID};
	Datum		args[4] = {Int32GetDatum(source_id), Int64GetDatum(source_version),
	Int32GetDatum(target_id), Int64GetDatum(target_version)};
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	tfm_spi_exec("INSERT INTO tfm.gguf_tensors (model_id, version, gguf_name, gguf_type, tensor, "
				 "first_column, columns, inputs, rope_heads, blocks) "
				 "SELECT $3, $4, gguf_name, gguf_type, tensor, first_column, columns, inputs, rope_heads, "
				 "blocks FROM tfm.gguf_tensors WHERE model_id = $1 AND version = $2",
				 4, types, args, NULL, false, 0, SPI_OK_INSERT, "cannot copy tfm.gguf_tensors");
	tfm_spi_finish_owner(&as);
}
