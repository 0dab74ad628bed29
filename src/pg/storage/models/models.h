/*
 * models.h — models in schema tfm (storage/models/): a model's catalog row
 * and its tensors (catalog.c), tfm.models rows (models.c), deployment
 * aliases, their history and the namespace they share with models
 * (aliases.c), the training history (history.c), what a GGUF import did
 * with each tensor (gguf_tensors.c).  A fit run's checkpoint rows:
 * checkpoints.h.
 */
#ifndef TFM_PG_STORAGE_MODELS_H
#define TFM_PG_STORAGE_MODELS_H

#include "postgres.h"

#include "storage/storage.h"
#include "tfm/kept_block.h"

/* ---- a model's catalog row (catalog.c) ---- */
typedef struct TfmModelRow
{
	int32		id;
	int64		version;
	int64		steps;
	char		name[TFM_NAME_MAX + 1];	/* the model's own name (not an alias) */
	char		task[16];
	char	   *tokenizer;		/* NULL if none */
	char	   *target_tokenizer;
	int			n_labels;
	char	  **labels;			/* classify */
	TfmAcl		acl;			/* owner and grants, as read */
	int			precision;		/* the model's default tfm_precision, -1 = none */
	int			checkpoint_precision;	/* an imported model's: its checkpoint's own
										 * tfm_precision (config checkpoint_precision),
										 * -1 = none (tfm's own models, imports before 0.5) */
	int32		bos_id,			/* imported models: the checkpoint's bos and eos */
				eos_id;			/* ids (config bos_id, eos_id); -1 = the tokenizer's */
	bool		dropout_auto;	/* created without dropout: training chooses it (config dropout_auto) */
	int			truncation;		/* classify: tfm_truncation of long inputs (config truncation;
								 * absent: head_tail) */
	tfm_config	cfg;
	bool		hf_beam;		/* beam search as Hugging Face's generate (an imported
								 * Marian or T5: config imported_from "marian", "t5"
								 * or "mt5") */
	bool		hf_forced_eos;	/* and </s> forced at the last step (Marian's
								 * forced_eos_token_id) */
	int			gen_beams;		/* the imported generation settings (config
								 * generation): beams, 0 = none stated ... */
	float		gen_length_penalty; /* ... length penalty, -1 = none ... */
	int			gen_max_tokens;	/* ... length limit, 0 = tfm's per source */
} TfmModelRow;

/* ---- tfm.models rows (models.c) ---- */
typedef struct TfmNewModel
{
	const char *name;
	const char *task;
	const char *tokenizer;		/* NULL: none */
	const char *target_tokenizer;	/* NULL: none */
	Datum		labels;			/* text[], or 0 for NULL */
	const char *config_json;
	int64		parameters;
	bool		dropout_auto;	/* created without a dropout: each run chooses it */
	int			truncation;		/* classify: tfm_truncation, stored in the config; -1: none */
} TfmNewModel;
/* a new model's row, owned by the current user; row->id and version filled */
void		tfm_model_insert(const TfmNewModel *nm, TfmModelRow *row);
/* a copy of model source's row as target, owned by the current user */
void		tfm_model_insert_copy(const char *source, const char *target, TfmModelRow *row);
void		tfm_model_rename(const char *name, const char *new_name);
/* drop a model's row (its tensors and history go with it); its id */
int32		tfm_model_delete(const char *name);
/* is there a row of this name in a catalog table (tfm.models, tfm.aliases)? (models.c) */
bool		tfm_catalog_has(const char *table, const char *name);
/* a stored tokenizer's vocabulary size and pad id, for a new model */
void		tfm_tokenizer_sizes(const char *name, int *vocab, int *pad_id);

/* values per tfm.tensors row: 16 MB, far below PostgreSQL's 1 GB per value */
#define TFM_CHUNK_VALUES (1 << 22)

/* errors 42501 unless the current user has priv on the model (its row's acl) */
void		tfm_check_model_privilege(const TfmModelRow *row, TfmPriv priv);
/* read a model's row; errors if it does not exist (unless missing_ok) */
bool		tfm_catalog_lookup(const char *name, TfmModelRow *row, bool missing_ok);
/*
 * Nonzero while a job's batch calls its model by its current name
 * (runtime/jobs/job_run.c): the id that name must still resolve to, so a rename
 * in between never sends the batch to another model (55000 instead).
 */
extern int32 tfm_catalog_expect_id;
/* read its tensors into a new core model, checking every name and shape */
tfm_model  *tfm_catalog_load(const TfmModelRow *row);
/*
 * gguf: loaded to run at gguf — its kept blocks attached, and the float32
 * values of the tensors they run wholly never made (tfm_model_leave_absent;
 * made on demand if the model leaves gguf); else as tfm_catalog_load
 */
tfm_model  *tfm_catalog_load_at(const TfmModelRow *row, bool gguf);
/* write every tensor and take a new version; returns it */
int64		tfm_catalog_save(TfmModelRow *row, const tfm_model *m, int64 add_steps);
/*
 * the same, but the tensors i with blocks_only[i] (NULL: none) get no
 * float32 rows: an import's tensors stored as a GGUF file's blocks
 * (tfm.gguf_tensors of the new version, kept_values.c)
 */
int64		tfm_catalog_save_except(TfmModelRow *row, const tfm_model *m, int64 add_steps,
									const bool *blocks_only);
/* the config as the JSON stored in tfm.models.config */
char	   *tfm_config_json(const tfm_config *cfg);
tfm_task	tfm_task_from_name(const char *task);
const char *tfm_task_name(int task);
/* "fp32", "bf16", "int8" as a tfm_precision; errors name the model's config when model is not NULL */
int			tfm_precision_from_name(const char *name, const char *model);
/* a model's own default precision ("auto": none) in its config */
void		tfm_catalog_set_precision(int32 model_id, const char *setting);

/* ---- deployment aliases and their history (aliases.c) ---- */
/* ---- a model's name (aliases.c: models and aliases share one namespace) ---- */
/* the same for a model, which must not take an alias's name either */
void		tfm_check_new_model_name(const char *name);
/* a model made from model name (copy, rename): new_name as above, then tfm_check_writable */
void		tfm_check_model_from(const char *action, const char *name, const char *new_name);
/* errors if an alias has this name (models and aliases share one namespace) */
void		tfm_check_not_alias(const char *name);

typedef struct TfmAliasRow
{
	int32		id;
	int32		model_id;
	int64		history_id;		/* the current entry; 0 if none */
	TfmAcl		acl;
} TfmAliasRow;
/* the alias row, locked for update; false if there is none */
bool		tfm_alias_lock(const char *alias, TfmAliasRow *a);
/* a row of tfm.alias_history by the current user; returns its id */
int64		tfm_alias_history_add(const char *alias, int32 model_id, int64 previous,
								  const char *action);
/* the entry that history entry history_id replaced: false if none */
bool		tfm_alias_history_previous(int64 history_id, int32 *model_id, int64 *previous,
									   char **model, bool *model_gone);
/* point the alias at a model: an UPDATE of the locked row or a new alias */
void		tfm_alias_point(const char *alias, bool exists, int32 model_id, int64 history_id);
void		tfm_alias_delete(const char *alias);

/* ---- training history (history.c) ---- */
typedef struct TfmHistoryRow
{
	int32		model_id;
	TimestampTz run_started;
	int			epoch;
	int64		steps;
	double		train_loss,		/* NaN: NULL */
				val_loss,		/* NaN: NULL */
				val_acc,		/* NaN: NULL */
				tokens_per_s,
				seconds;
	int			checkpoint;		/* 0: the epoch's end */
	int64		rows_done;		/* < 0: NULL */
	int64		val_rows;		/* < 0: NULL */
	double		dropout,		/* NaN: NULL */
				weight_decay;	/* NaN: NULL */
	const char *note;			/* NULL: NULL */
} TfmHistoryRow;
/* a row of tfm.history (its own SPI connection, as the catalog's owner) */
void		tfm_history_add(const TfmHistoryRow *h);
/* mark the row (epoch, checkpoint) whose weights a run kept, with why */
void		tfm_history_mark_kept(int32 model_id, TimestampTz run_started, int epoch,
								  int checkpoint, const char *note);

/*
 * What a GGUF import did with a tensor of the file (tfm.gguf_tensors,
 * gguf_tensors.c): converted to float32 only (blocks NULL), or also kept
 * as the file's blocks for the int4 columns first_column .. + columns - 1
 * of tensor (inputs values each; rope_heads: its rows are in llama.cpp's
 * rope order, 0 if not).
 */
typedef struct TfmGgufTensorRow
{
	const char *gguf_name;
	const char *gguf_type;
	const char *tensor;			/* the tfm tensor its values went to (NULL: none) */
	bool		kept;
	bool		rows_only;		/* kept for storage only: no matrix runs them (an untied
								 * embedding), its rows the tensor's (first_column NULL) */
	int32		first_column,
				columns,
				inputs,
				rope_heads;
	const uint8 *blocks;
	uint64		bytes;
} TfmGgufTensorRow;
/*
 * Blocks over part_bytes (tfm.gguf_row_bytes) stored in parts of whole
 * rows.  A kept row without blocks in memory has each part's from
 * read_part(arg, i, off, len, dst): bytes [off, off + len) of row i's
 * blocks into dst, the parts of a row in order (an import reads them
 * again from its file, a part at a time, and checks them).
 */
typedef void (*TfmGgufBlocksFn) (void *arg, int i, uint64 off, uint64 len, uint8 *dst);
void		tfm_gguf_tensors_store(int32 model_id, int64 version, const TfmGgufTensorRow *rows, int n,
								   uint64 part_bytes, TfmGgufBlocksFn read_blocks, void *arg);
/* the kept rows of (model, version), palloc'd in the current context: their count */
int			tfm_gguf_kept_read(int32 model_id, int64 version, TfmGgufTensorRow **rows);
/* the rows of (source, its version) as the target's, of the target's version (tfm_copy_model) */
void		tfm_gguf_tensors_copy(int32 source_id, int64 source_version, int32 target_id,
								  int64 target_version);

/* ---- tensors stored as a GGUF file's blocks only (kept_values.c) ---- */
/*
 * kept row r of model (for messages) as an entry of m (error XX001 if it
 * does not fit): k->blocks are r's, or a palloc'd copy in Hugging Face's
 * row order where r's rows are in llama.cpp's rope order
 */
void		tfm_kept_entry(const tfm_model *m, const TfmGgufTensorRow *r, const char *model,
						   tfm_int4_kept *k);
/*
 * error XX001 where two of the n kept rows (tfm_gguf_kept_read) cover the
 * same columns (or rows) of a tensor: parts a restore or a superuser wrote
 * over each other, which a count of the values covered does not see when
 * they also leave a gap
 */
void		tfm_kept_check_disjoint(const TfmGgufTensorRow *rows, int n, const char *model);
/*
 * the exact dequantization of k's blocks written over the columns they
 * cover in m's float32 values (write), or compared with them bit for bit
 * (!write: false if one differs); false too if k fits no matrix of m (or,
 * rows: no tensor whose rows its blocks' rows are)
 */
bool		tfm_kept_values(tfm_model *m, const tfm_int4_kept *k, bool rows, bool write);
/*
 * the tensors of m that row's version stores as kept blocks only (none
 * read yet: filled[i] == 0) made from them, filled[i] counting the values
 * made (tfm_catalog_load)
 */
void		tfm_kept_fill(tfm_model *m, const TfmModelRow *row, size_t *filled);
/* per tensor of m, is row's version storing it as kept blocks only (palloc'd; NULL: none) */
bool	   *tfm_kept_blocks_only(const TfmModelRow *row, const tfm_model *m);
/* whether the version of row stores a tensor as kept blocks only */
bool		tfm_kept_stored(const TfmModelRow *row);

#endif							/* TFM_PG_STORAGE_MODELS_H */
