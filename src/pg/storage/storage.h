/*
 * storage.h — the catalog in schema tfm, through SPI: names, privileges
 * and the owner's SQL sections (access.c), models and their tensors
 * (catalog.c, models.c), aliases and their history (aliases.c), grants
 * (grants.c), what a role owns (owned.c), tokenizers' rows (tokenizers.c),
 * the training history (history.c), the node a row comes from (origin.c).
 */
#ifndef TFM_PG_STORAGE_H
#define TFM_PG_STORAGE_H

#include "postgres.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/spi.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "base/base.h"

/* ---- names (names.c, aliases.c) ---- */
/* the longest name of a model, tokenizer or alias, in bytes */
#define TFM_NAME_MAX 127
/* a name to look up: too long is 42622 (name_too_long) */
void		tfm_check_name(const char *kind, const char *name);
/* a name for something new: not empty, not too long */
void		tfm_check_new_name(const char *kind, const char *name);
/* the same for a model, which must not take an alias's name either */
void		tfm_check_new_model_name(const char *name);
/* a model made from model name (copy, rename): new_name as above, then tfm_check_writable */
void		tfm_check_model_from(const char *action, const char *name, const char *new_name);
/* errors 42704: tokenizer "name" does not exist */
void		tfm_tokenizer_missing(const char *name) pg_attribute_noreturn();
/* is there a row of this name in a catalog table (tfm.models, tfm.aliases)? */
bool		tfm_catalog_has(const char *table, const char *name);
/* errors if an alias has this name (models and aliases share one namespace) */
void		tfm_check_not_alias(const char *name);

/* ---- privileges and the catalog's owner (access.c) ---- */
typedef enum TfmPriv
{
	TFM_PRIV_USE,				/* inference, evaluation, tensors, copy */
	TFM_PRIV_TRAIN,				/* train, overwrite, deploy (implies use) */
	TFM_PRIV_OWNER				/* drop, rename, grant */
} TfmPriv;

/* an object's owner and grantees (InvalidOid = PUBLIC) */
typedef struct TfmAcl
{
	Oid			owner;
	int			n_use;
	int			n_train;
	Oid		   *use;
	Oid		   *train;
} TfmAcl;

/* catalog SQL runs as the owner of schema tfm with a pinned search_path */
typedef struct TfmAsOwner
{
	Oid			save_uid;
	int			save_sec;
	int			gucnest;
} TfmAsOwner;
void		tfm_as_owner_begin(TfmAsOwner *s);
void		tfm_as_owner_end(TfmAsOwner *s);
/* SPI_connect / SPI_finish around a section of catalog SQL */
void		tfm_spi_connect_owner(TfmAsOwner *s);
void		tfm_spi_finish_owner(TfmAsOwner *s);
/* SPI_execute_with_args inside such a section (its plan kept: kept_plans.c):
 * errors with err unless it returns expect; the rows processed
 * (SPI_tuptable stays readable) */
uint64		tfm_spi_exec(const char *sql, int nargs, Oid *types, Datum *args,
						 const char *nulls, bool read_only, long count, int expect,
						 const char *err);
/*
 * One row of catalog SQL: tfm_owner_row_read opens a section and reads the
 * first row of a SELECT (false if none: tup is NULL); its columns are read
 * with tfm_owner_row_col (copy what must outlive the section into cxt, the
 * caller's context); tfm_owner_row_end ends the section.
 */
typedef struct TfmOwnerRow
{
	TfmAsOwner	as;
	MemoryContext cxt;
	HeapTuple	tup;
	TupleDesc	td;
} TfmOwnerRow;
bool		tfm_owner_row_read(TfmOwnerRow *r, const char *sql, int nargs, Oid *types,
							   Datum *args, bool read_only, const char *err);
Datum		tfm_owner_row_col(const TfmOwnerRow *r, int col, bool *isnull);
void		tfm_owner_row_end(TfmOwnerRow *r);
/* the same as a section of its own (connect, execute, check, finish) */
uint64		tfm_spi_exec_owner(const char *sql, int nargs, Oid *types, Datum *args,
							   const char *nulls, bool read_only, long count, int expect,
							   const char *err);

/* sql's plan prepared once per backend and kept; NULL: run it unprepared */
SPIPlanPtr	tfm_kept_plan(const char *sql, int nargs, const Oid *types);

const char *tfm_priv_name(TfmPriv p);
bool		tfm_acl_allows(const TfmAcl *acl, TfmPriv priv, Oid role);
int			tfm_oid_array(Datum d, Oid **out);
void		tfm_acl_from_tuple(TfmAcl *acl, HeapTuple tup, TupleDesc td, int col,
							   MemoryContext cxt);
struct TfmModelRow;
void		tfm_check_model_privilege(const struct TfmModelRow *row, TfmPriv priv);
void		tfm_check_tokenizer_use(const char *name);
/* errors on a standby or in a read-only transaction */
void		tfm_check_writable(const char *action, const char *name);
/* the owner (and not a replicated object: tfm_check_local) may do action */
void		tfm_check_tokenizer_owner(const char *action, const char *name);
/* only the row's owner columns: works on models this build cannot load */
void		tfm_check_model_owner(const char *action, const char *name);

/* ---- nodes: where a row comes from (origin.c) ---- */
/* ids are node << TFM_NODE_ID_BITS | a count below 2^TFM_NODE_ID_BITS */
#define TFM_NODE_ID_BITS 20
#define TFM_NODE_MAX 2047
/* the node a database takes unless tfm_set_node chose one */
int32		tfm_default_node_number(void);
/* this database's node (0: a catalog from before 0.4) */
int32		tfm_local_node(void);
/* errors 55000 if the object (kind "model", "tokenizer" or "alias", its row
 * id) was created on another node, i.e. came by logical replication */
void		tfm_check_local(const char *kind, int32 id, const char *action, const char *name);

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
/* a stored tokenizer's vocabulary size and pad id, for a new model */
void		tfm_tokenizer_sizes(const char *name, int *vocab, int *pad_id);

/* values per tfm.tensors row: 16 MB, far below PostgreSQL's 1 GB per value */
#define TFM_CHUNK_VALUES (1 << 22)

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
/* write every tensor and take a new version; returns it */
int64		tfm_catalog_save(TfmModelRow *row, const tfm_model *m, int64 add_steps);
/* the config as the JSON stored in tfm.models.config */
char	   *tfm_config_json(const tfm_config *cfg);
tfm_task	tfm_task_from_name(const char *task);
const char *tfm_task_name(int task);
/* "fp32", "bf16", "int8" as a tfm_precision; errors name the model's config when model is not NULL */
int			tfm_precision_from_name(const char *name, const char *model);
/* a model's own default precision ("auto": none) in its config */
void		tfm_catalog_set_precision(int32 model_id, const char *setting);

/* ---- tokenizers' rows (tokenizers.c) ---- */
/*
 * read_only: from the aggregate's transition function, which may run in a
 * parallel worker.  Otherwise the check takes a new snapshot and command id,
 * so it also sees what this statement stored a moment ago.
 */
bool		tfm_tokenizer_exists(const char *name, bool read_only);
/* a name for a new tokenizer: valid and not taken */
void		tfm_tokenizer_check_new(const char *name, bool read_only);
void		tfm_tokenizer_store(const char *name, const tfm_tokenizer *t, int32 min_count, Oid owner);
char	   *tfm_tokenizer_summary(const char *name, const tfm_tokenizer *t);
/* read a tokenizer's rows and rebuild it; its row id in *idp */
tfm_tokenizer *tfm_tokenizer_read(const char *name, int32 *idp);
/* its row id (-1: none) and whether the current user may use it */
int32		tfm_tokenizer_lookup(const char *name, bool *may_use);
/* drop a tokenizer no model uses (the caller checked it owns it) */
void		tfm_tokenizer_delete(const char *name);
/* tokenizers built from imported parts and stored under name (tfm_import) */
int32		tfm_tokenizer_import_gpt2(const char *name, const char *enc, size_t enc_len,
									  const char *bpe, size_t bpe_len);
int32		tfm_tokenizer_import_spiece(const char *name, const uint8_t *const *pieces,
										const size_t *lens, int32 n, const int32_t *merge_lr,
										int32 n_merges, int32 unk, int32 bos, int32 eos,
										bool text_bos);
/* one Split rule of a tokenizer.json's pre-tokenizer (TFM_TOK_INFO_SPLIT) */
typedef struct TfmSplitRule
{
	const char *pattern;		/* a PCRE2 regular expression */
	int			behavior;		/* tfm_tok_split_behavior */
	bool		invert;
} TfmSplitRule;

/* a tokenizer.json's byte-level BPE (tfm_tok_import_hf_bpe) with its Split
 * rules (n_rules of them, with the SPLIT flag); the ids of the stored
 * tokenizer's specials into special_ids */
int32		tfm_tokenizer_import_hf_bpe(const char *name, const uint8_t *const *pieces,
										const size_t *lens, const uint8_t *literal, int32 n,
										const int32_t *merge_lr, int32 n_merges,
										const int32_t *specials, uint32 flags,
										const TfmSplitRule *rules, int n_rules,
										int32_t *special_ids);
/* a tokenizer's Split rules: as options' "splits" JSON (appended to buf),
 * and added back to a loaded tokenizer from that JSON */
void		tfm_tokenizer_splits_json(StringInfo buf, const tfm_tokenizer *t);
void		tfm_tokenizer_add_splits(tfm_tokenizer *t, const char *name, Jsonb *splits);
/* a tokenizer.json's SentencePiece Unigram (tfm_tok_import_unigram); the
 * ids of the stored tokenizer's specials into special_ids */
void		tfm_tokenizer_import_unigram(const char *name, const uint8_t *const *pieces,
										 const size_t *lens, int32 n,
										 const tfm_tok_unigram_spec *spec, int32_t *special_ids);
void		tfm_tokenizer_store_pieces(const char *name, const tfm_tok_info *info,
									   const uint8 *const *pieces, const size_t *lens);
/* a tokenizer's chat settings, options->'chat' (tokenizer_chat.c): stored as
 * the given JSON text; read back (NULL when it has none) */
void		tfm_tokenizer_chat_store(const char *tokenizer, const char *chat_json);
Jsonb	   *tfm_tokenizer_chat_read(const char *tokenizer);

/* ---- deployment aliases and their history (aliases.c) ---- */
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

/* ---- grants on models, tokenizers and aliases (grants.c) ---- */
typedef struct TfmObject
{
	const char *table;			/* tfm.models, tfm.tokenizers or tfm.aliases */
	const char *kind;			/* model, tokenizer or alias */
	int32		id;
	TfmAcl		acl;
} TfmObject;
/* an object by name, of kind type (NULL: model, else tokenizer, else alias) */
bool		tfm_object_find(const char *name, const char *type, TfmObject *o);
/* grant or revoke priv to grantee (InvalidOid: PUBLIC); the rows changed */
uint64		tfm_object_acl_change(const TfmObject *o, Oid grantee, TfmPriv priv, bool grant);

/* ---- what roles own (owned.c) ---- */
/* models, tokenizers and aliases of old_role to new_role; how many */
uint64		tfm_owned_reassign(Oid old_role, Oid new_role);
/* drop role's objects and its grants; how many; the dropped models' ids
 * and names (allocated in the caller's context) */
uint64		tfm_owned_drop(Oid role, int *n_models, int32 **models, char ***names);

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
	int32		first_column,
				columns,
				inputs,
				rope_heads;
	const uint8 *blocks;
	uint64		bytes;
} TfmGgufTensorRow;
void		tfm_gguf_tensors_store(int32 model_id, int64 version, const TfmGgufTensorRow *rows, int n);
/* the kept rows of (model, version), palloc'd in the current context: their count */
int			tfm_gguf_kept_read(int32 model_id, int64 version, TfmGgufTensorRow **rows);

#endif							/* TFM_PG_STORAGE_H */
