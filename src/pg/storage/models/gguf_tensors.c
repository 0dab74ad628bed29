/*
 * gguf_tensors.c — what a GGUF import did with each tensor of the file
 * (tfm.gguf_tensors): converted to float32 only, or also kept as the
 * file's blocks (Q4_0: tfm's int4 layout, for int4 inference; Q8_0, Q4_K,
 * Q5_K, Q6_K for gguf inference; first_column NULL: an untied embedding's
 * rows, kept for storage only) of the version it imported.  Written by import/gguf_import.c, the kept blocks read by
 * storage/models/gguf_kept.c when a model is loaded, copied with it by
 * tfm_copy_model; dumped with the model.  A tensor whose blocks are more
 * than tfm.gguf_row_bytes is stored in parts of whole rows (first_row: the
 * part's first), so that every row stays within what pg_dump can write.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "storage/storage.h"
#include "storage/models/models.h"

/* the rows of r's blocks one row of tfm.gguf_tensors holds (at most most bytes) */
static int32
rows_a_part(const TfmGgufTensorRow *r, uint64 most)
{
	uint64		row_bytes = r->columns > 0 ? r->bytes / (uint64) r->columns : r->bytes;

	/* llama.cpp's rope order is over the whole tensor: never in parts (a q or k is small) */
	if (r->rope_heads > 0 || r->columns <= 0 || row_bytes == 0 || r->bytes <= most)
		return Max(r->columns, 1);
	return (int32) Max(most / row_bytes, 1);
}

/*
 * rows row0 .. row0 + cols - 1 of r's blocks (all of it when r has none)
 * as one row: from blocks, else read by read_part (row i)
 */
static void
store_part(SPIPlanPtr plan, int32 model_id, int64 version, const TfmGgufTensorRow *r,
		   const uint8 *blocks, TfmGgufBlocksFn read_part, void *arg, int i, int32 row0, int32 cols)
{
	uint64		row_bytes = r->bytes / (uint64) Max(r->columns, 1);
	Datum		args[11];
	char		nulls[11];
	bytea	   *b = NULL;

	memset(nulls, ' ', sizeof(nulls));
	args[0] = Int32GetDatum(model_id);
	args[1] = Int64GetDatum(version);
	args[2] = CStringGetTextDatum(r->gguf_name);
	args[3] = CStringGetTextDatum(r->gguf_type);
	args[4] = r->tensor ? CStringGetTextDatum(r->tensor) : (Datum) 0;
	nulls[4] = r->tensor ? ' ' : 'n';
	args[5] = Int32GetDatum(r->first_column);
	args[6] = Int32GetDatum(cols);
	args[7] = Int32GetDatum(r->inputs);
	args[8] = Int32GetDatum(r->rope_heads);
	args[10] = Int32GetDatum(row0);
	if (blocks || (r->kept && read_part))
	{
		uint64		bytes = cols == r->columns ? r->bytes : row_bytes * (uint64) cols;

		b = palloc_extended(VARHDRSZ + bytes, MCXT_ALLOC_HUGE);
		SET_VARSIZE(b, VARHDRSZ + bytes);
		if (blocks)
			memcpy(VARDATA(b), blocks + row_bytes * (uint64) row0, bytes);
		else
			read_part(arg, i, row_bytes * (uint64) row0, bytes, (uint8 *) VARDATA(b));
		args[9] = PointerGetDatum(b);
		if (r->rows_only)
			nulls[5] = 'n';		/* no matrix's columns: the tensor's rows */
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

void
tfm_gguf_tensors_store(int32 model_id, int64 version, const TfmGgufTensorRow *rows, int n,
					   uint64 part_bytes, TfmGgufBlocksFn read_part, void *arg)
{
	static const char *insert =
		"INSERT INTO tfm.gguf_tensors (model_id, version, gguf_name, gguf_type, tensor, "
		"first_column, columns, inputs, rope_heads, blocks, first_row) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
	Oid			types[11] = {INT4OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID, INT4OID, BYTEAOID, INT4OID};
	SPIPlanPtr	plan;
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	plan = SPI_prepare(insert, 11, types);
	if (!plan)
		elog(ERROR, "cannot prepare the insert into tfm.gguf_tensors: %s",
			 SPI_result_code_string(SPI_result));
	for (int i = 0; i < n; i++)
	{
		const TfmGgufTensorRow *r = &rows[i];
		int32		part = rows_a_part(r, part_bytes);
		CHECK_FOR_INTERRUPTS();
		if (!(r->blocks || (r->kept && read_part)) || r->columns <= 0)
			store_part(plan, model_id, version, r, NULL, NULL, NULL, i, 0, r->columns);
		else
			for (int32 row0 = 0; row0 < r->columns; row0 += part)
				store_part(plan, model_id, version, r, r->blocks, read_part, arg, i, row0,
						   Min(part, r->columns - row0));
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
	n = tfm_spi_exec("SELECT gguf_name, tensor, first_column, columns, inputs, rope_heads, blocks, gguf_type, "
					 "first_row FROM tfm.gguf_tensors WHERE model_id = $1 AND version = $2 AND blocks IS NOT NULL "
					 "ORDER BY gguf_name, first_row", 2, types, args, NULL, true, 0, SPI_OK_SELECT,
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
			bool		nulls = false;
			int32		first_row;

			rows[i].gguf_name = TextDatumGetCString(SPI_getbinval(tup, td, 1, &isnull));
			(void) SPI_getbinval(tup, td, 2, &nulls);
			rows[i].tensor = nulls ? NULL : TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
			rows[i].first_column = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
			rows[i].rows_only = isnull;
			if (isnull)
				rows[i].first_column = 0;
			rows[i].columns = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
			nulls |= isnull;
			rows[i].inputs = DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
			nulls |= isnull;
			rows[i].rope_heads = DatumGetInt32(SPI_getbinval(tup, td, 6, &isnull));
			first_row = DatumGetInt32(SPI_getbinval(tup, td, 9, &isnull));
			/*
			 * a part: its rows are the tensor's from first_row on; a row a
			 * restore or a superuser wrote is checked (tfm_kept_entry then
			 * checks the place): rows in llama.cpp's rope order are never in
			 * parts (their order is over the whole tensor)
			 */
			if (nulls || first_row < 0 || rows[i].first_column < 0 || rows[i].rope_heads < 0 ||
				(rows[i].rope_heads > 0 && first_row != 0) ||
				pg_add_s32_overflow(rows[i].first_column, first_row, &rows[i].first_column))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the kept blocks of GGUF tensor \"%s\" of model id %d are not a part of a tensor "
								"(tensor, columns or inputs NULL, first_column, first_row or rope_heads out of range)",
								rows[i].gguf_name, model_id)));
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
				 "first_column, columns, inputs, rope_heads, blocks, first_row) "
				 "SELECT $3, $4, gguf_name, gguf_type, tensor, first_column, columns, inputs, rope_heads, "
				 "blocks, first_row FROM tfm.gguf_tensors WHERE model_id = $1 AND version = $2",
				 4, types, args, NULL, false, 0, SPI_OK_INSERT, "cannot copy tfm.gguf_tensors");
	tfm_spi_finish_owner(&as);
}
