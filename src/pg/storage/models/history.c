/*
 * history.c — tfm.history: a row per training epoch saved (and per
 * mid-epoch checkpoint of tfm_fit), and the mark on the epoch whose
 * weights a run kept.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "storage/storage.h"
#include "storage/models/models.h"

void
tfm_history_add(const TfmHistoryRow *h)
{
	Oid			types[15] = {INT4OID, TIMESTAMPTZOID, INT4OID, INT8OID, FLOAT8OID, FLOAT8OID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID, INT8OID, INT8OID, FLOAT8OID, FLOAT8OID, TEXTOID};
	Datum		args[15];
	char		nulls[15] = "               ";

	args[0] = Int32GetDatum(h->model_id);
	args[1] = TimestampTzGetDatum(h->run_started);
	args[2] = Int32GetDatum(h->epoch);
	args[3] = Int64GetDatum(h->steps);
	args[4] = Float8GetDatum(h->train_loss);
	args[5] = Float8GetDatum(h->val_loss);
	args[6] = Float8GetDatum(h->val_acc);
	args[7] = Float8GetDatum(h->tokens_per_s);
	args[8] = Float8GetDatum(h->seconds);
	args[9] = Int32GetDatum(h->checkpoint);
	args[10] = Int64GetDatum(h->rows_done);
	args[11] = Int64GetDatum(h->val_rows);
	args[12] = Float8GetDatum(h->dropout);
	args[13] = Float8GetDatum(h->weight_decay);
	args[14] = h->note ? CStringGetTextDatum(h->note) : (Datum) 0;
	for (int i = 4; i <= 13; i++)
		if (i != 9 && i != 10 && i != 11 && isnan(DatumGetFloat8(args[i])))
			nulls[i] = 'n';
	if (h->rows_done < 0)
		nulls[10] = 'n';
	if (h->val_rows < 0)
		nulls[11] = 'n';
	if (h->note == NULL)
		nulls[14] = 'n';
	tfm_spi_exec_owner("INSERT INTO tfm.history (model_id, run_started, epoch, steps, "
					   "train_loss, val_loss, val_accuracy, tokens_per_s, seconds, "
					   "checkpoint, rows_done, val_rows, dropout, weight_decay, note) "
					   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
					   15, types, args, nulls, false, 0,
					   SPI_OK_INSERT, "cannot write tfm.history");
}

void
tfm_history_mark_kept(int32 model_id, TimestampTz run_started, int epoch, int checkpoint,
					  const char *note)
{
	Oid			types[5] = {INT4OID, TIMESTAMPTZOID, INT4OID, INT4OID, TEXTOID};
	Datum		args[5];

	args[0] = Int32GetDatum(model_id);
	args[1] = TimestampTzGetDatum(run_started);
	args[2] = Int32GetDatum(epoch);
	args[3] = Int32GetDatum(checkpoint);
	args[4] = CStringGetTextDatum(note);
	tfm_spi_exec_owner("UPDATE tfm.history SET kept = true, "
					   "note = CASE WHEN note IS NULL THEN $5 ELSE note || '; ' || $5 END WHERE model_id = $1 "
					   "AND run_started = $2 AND epoch = $3 AND checkpoint = $4",
					   5, types, args, NULL, false, 0,
					   SPI_OK_UPDATE, "cannot update tfm.history");
}
