/*
 * models.c — tfm.models rows: a new model's, a copy's, a rename, a drop
 * (the tensors are catalog.c's), and the sizes a new model takes from a
 * stored tokenizer.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "storage/storage.h"
#include "storage/models/models.h"

/* id and version of the row SPI_tuptable holds */
static void
take_id_version(TfmModelRow *row)
{
	bool		isnull;

	row->id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	row->version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

/* errors if a model of this name exists (SPI connected); Datum arg $n is the name */
static void
check_absent(const char *name, Oid *types, Datum *args, int nargs, const char *ref,
			 bool hint)
{
	if (SPI_execute_with_args(psprintf("SELECT 1 FROM tfm.models WHERE name = %s", ref), nargs,
							  types, args, NULL, true, 1) == SPI_OK_SELECT && SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 hint ? errhint("Drop it first with tfm_drop_model('%s').", name) : 0));
}

void
tfm_model_insert(const TfmNewModel *nm, TfmModelRow *row)
{
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTOID, INT8OID, OIDOID};
	Datum		args[8];
	char		nulls[9] = "        ";
	TfmAsOwner	as;

	args[0] = CStringGetTextDatum(nm->name);
	args[1] = CStringGetTextDatum(nm->task);
	args[2] = nm->tokenizer ? CStringGetTextDatum(nm->tokenizer) : (Datum) 0;
	args[3] = nm->target_tokenizer ? CStringGetTextDatum(nm->target_tokenizer) : (Datum) 0;
	args[4] = nm->labels;
	args[5] = CStringGetTextDatum(nm->config_json);
	args[6] = Int64GetDatum(nm->parameters);
	args[7] = ObjectIdGetDatum(GetUserId());	/* the caller owns it */
	if (!nm->tokenizer)
		nulls[2] = 'n';
	if (!nm->target_tokenizer)
		nulls[3] = 'n';
	if (nm->labels == (Datum) 0)
		nulls[4] = 'n';
	tfm_spi_connect_owner(&as);
	check_absent(nm->name, types, args, 1, "$1", true);
	tfm_spi_exec("INSERT INTO tfm.models (name, task, tokenizer, target_tokenizer, "
				 "labels, config, parameters, format_version, owner) "
				 "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, "
				 CppAsString2(TFM_FORMAT_VERSION) ", $8::regrole) RETURNING id, version",
				 8, types, args, nulls, false, 1,
				 SPI_OK_INSERT_RETURNING, "cannot insert into tfm.models");
	take_id_version(row);
	tfm_spi_finish_owner(&as);
}

void
tfm_model_insert_copy(const char *source, const char *target, TfmModelRow *row)
{
	Oid			types[3] = {TEXTOID, TEXTOID, OIDOID};
	Datum		args[3] = {CStringGetTextDatum(source), CStringGetTextDatum(target),
	ObjectIdGetDatum(GetUserId())};
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	check_absent(target, types, args, 2, "$2", false);
	tfm_spi_exec("INSERT INTO tfm.models (name, task, tokenizer, target_tokenizer, labels, "
				 "config, parameters, format_version, steps, owner) "
				 "SELECT $2, task, tokenizer, target_tokenizer, labels, config, parameters, "
				 "format_version, steps, $3::regrole FROM tfm.models WHERE name = $1 RETURNING id, version",
				 3, types, args, NULL, false, 1,
				 SPI_OK_INSERT_RETURNING, "cannot insert into tfm.models");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" was dropped while it was being copied", source)));
	take_id_version(row);
	tfm_spi_finish_owner(&as);
}

void
tfm_model_rename(const char *name, const char *new_name)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(name), CStringGetTextDatum(new_name)};
	TfmAsOwner	as;

	tfm_spi_connect_owner(&as);
	if (SPI_execute_with_args("SELECT 1 FROM tfm.models WHERE name = $2", 2, types, args,
							  NULL, false, 1) == SPI_OK_SELECT && SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", new_name)));
	tfm_spi_exec("UPDATE tfm.models SET name = $2, updated_at = now() WHERE name = $1",
				 2, types, args, NULL, false, 0,
				 SPI_OK_UPDATE, "cannot update tfm.models");
	tfm_spi_finish_owner(&as);
}

/* is there a row of this name in a catalog table (tfm.models, tfm.aliases)? */
bool
tfm_catalog_has(const char *table, const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	TfmAsOwner	as;
	bool		found;

	tfm_spi_connect_owner(&as);
	/* read-only: tfm_classify(text) may ask from a parallel worker */
	if (SPI_execute_with_args(psprintf("SELECT 1 FROM %s WHERE name = $1", table), 1, types, args,
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot read %s", table);
	found = SPI_processed > 0;
	tfm_spi_finish_owner(&as);
	return found;
}

int32
tfm_model_delete(const char *name)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	int32		id;
	bool		isnull;

	tfm_spi_connect_owner(&as);
	tfm_spi_exec("DELETE FROM tfm.models WHERE name = $1 RETURNING id", 1, types, args,
				 NULL, false, 0,
				 SPI_OK_DELETE_RETURNING, "cannot delete from tfm.models");
	if (SPI_processed == 0)
	{
		bool		alias = tfm_catalog_has("tfm.aliases", name);

		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 alias ? errhint("\"%s\" is a deployment alias: tfm_undeploy('%s') drops it.", name, name) : 0));
	}
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	tfm_spi_finish_owner(&as);
	return id;
}

void
tfm_tokenizer_sizes(const char *name, int *vocab, int *pad_id)
{
	TfmAsOwner	as;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	bool		isnull;

	tfm_spi_connect_owner(&as);
	tfm_spi_exec("SELECT vocab_size, coalesce((options->>'pad_id')::int, 0) "
				 "FROM tfm.tokenizers WHERE name = $1",
				 1, types, args, NULL, true, 1,
				 SPI_OK_SELECT, "cannot read tfm.tokenizers");
	if (SPI_processed == 0)
		tfm_tokenizer_missing(name);
	*vocab = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*pad_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	tfm_spi_finish_owner(&as);
}
