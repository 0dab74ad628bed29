/*
 * model_row.h — the codec of a tfm.models row's config (model_row.c): one
 * table of the config's keys, read by tfm_catalog_lookup and written by
 * tfm_config_json, and the SQL that finds the model a name or a job means.
 */
#ifndef TFM_PG_MODEL_ROW_H
#define TFM_PG_MODEL_ROW_H

#include "storage/models/models.h"

/*
 * Appends the config's columns (one per key of the table, in its order) to
 * a SELECT list, each after ", ".
 */
void		tfm_model_row_config_columns(StringInfo sql);
/*
 * Decodes those columns of a row, the first at column first_col, into
 * row->cfg and the row's other config fields; a required key that is
 * absent is a broken invariant.
 */
void		tfm_model_row_config_decode(TfmModelRow *row, HeapTuple tup, TupleDesc td, int first_col);

/*
 * " FROM tfm.models WHERE ..." for the model of name $1, else the model an
 * alias of that name deploys (the model first).
 */
void		tfm_model_row_named_sql(StringInfo sql);
/*
 * The id of the model a job deploys: its model's when alias is NULL or 0,
 * else the model its alias deploys now (model and alias are SQL
 * expressions).
 */
void		tfm_model_of_job_sql(StringInfo sql, const char *model, const char *alias);

#endif							/* TFM_PG_MODEL_ROW_H */
