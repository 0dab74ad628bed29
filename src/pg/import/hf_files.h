/*
 * hf_files.h — a Hugging Face checkpoint's files, read for tfm_import: the
 * import as a whole (model_import.c), the parsing of config.json (config.c) and
 * tokenizer.json (tokenizer_import.c, spiece.c), and the weights' sources
 * (weights.c), for the SQL entry points in sql/models/import.c.
 */
#ifndef TFM_IMPORT_H
#define TFM_IMPORT_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "base/pg_compat.h"

#include "tfm/hf_map.h"
#include "tfm/safetensors_index.h"
#include "storage/tokenizers/tokenizers.h"

/* what tfm keeps of a config.json besides the tfm_config */
typedef struct TfmHfConfig
{
	tfm_hf_params p;
	tfm_config	cfg;			/* the tfm model it makes (checked) */
	int			bos_id;			/* -1 if the config names none */
	int			eos_id;
	const char *model_type;
	int			n_labels;		/* BERT family: id2label in id order */
	char	  **labels;
} TfmHfConfig;

/* config.json, strictly: unknown model types and options refused by name */
void		tfm_hf_parse_config(Jsonb *config, TfmHfConfig *out);
/* config.json's rope_scaling into p: none, or Llama 3.1's "llama3"; any
 * other refused by name, family in the message (rope_config.c) */
void		tfm_hf_rope_scaling(JsonbContainer *c, tfm_hf_params *p, const char *family,
								bool linear);
/*
 * Phi-3's rope (rope_config.c): rope_scaling null, or "longrope" ("su" and
 * "yarn" as transformers' Phi3Config renames them) with its short and long
 * factors, original_max_position_embeddings and the attention factor
 * (max_len: max_position_embeddings before any cap), and
 * partial_rotary_factor
 */
void		tfm_hf_phi3_rope(JsonbContainer *c, tfm_hf_params *p);

/*
 * tokenizer.json: byte-level BPE, SentencePiece-style BPE or BERT
 * WordPiece; checked against the model's vocabulary size and stored as tfm
 * tokenizer name.  special_ids (TFM_TOK_N_SPECIALS of them, indexed by
 * tfm_tok_special) receives the stored tokenizer's special ids (INT_MAX
 * where not known), so that an encoder can check that its [CLS] and [SEP]
 * are ids of the checkpoint.
 */
void		tfm_hf_import_tokenizer(const char *name, Jsonb *tokenizer, int model_vocab,
									int32 *special_ids);
/* tokenizer.json's checks, shared by tokenizer_import.c and spiece.c: errors 22023
 * "tokenizer.json is malformed: what"; a number as an integer 0..max; the
 * id of a model.vocab piece (-1 if none) */
pg_noreturn void tfm_hf_malformed(const char *what);
int			tfm_hf_uint(const JsonbValue *v, const char *what, int max);
int			tfm_hf_vocab_id(JsonbContainer *vocab, const char *piece, int len, int max);
/* field key of c, an array (else malformed: "<what> must be an array") */
JsonbContainer *tfm_hf_array(JsonbContainer *c, const char *key, const char *what);
/* model.merges ("a b" or [a, b], in rank order) as pairs of model.vocab
 * ids (at most max); their count in *n_merges */
int32_t    *tfm_hf_merges(JsonbContainer *model, JsonbContainer *vocab, int max,
						  int *n_merges);
/* tokenizer.json's added_tokens (n of them; NULL if none): each one's id,
 * content, the model.vocab id of its content (-1 if none; vocab may be
 * NULL) and TFM_TOK_ADDED_* flags (normalized defaulting to !special, as
 * Hugging Face's AddedToken); and as the list a stored tokenizer keeps */
typedef struct TfmHfAdded
{
	int			id;
	char	   *content;
	int			len;
	int			in_vocab;
	unsigned	flags;
} TfmHfAdded;
TfmHfAdded *tfm_hf_added_tokens(JsonbContainer *root, JsonbContainer *vocab, int *n);
void		tfm_hf_added_list(TfmAddedTokens *list, const TfmHfAdded *added, int n);
/* the added tokens placed among the pieces by id (n slots, model.vocab's
 * there already, the largest id max_id): one in model.vocab keeps that piece
 * (literal |= 2), one after it is its own text (literal = 3; literal may be
 * NULL), anything else refused; every id up to the largest must then have a
 * piece and fit model_vocab.  Returns the number of ids. */
int			tfm_hf_place_added(const TfmHfAdded *added, int n_added, const uint8_t **pieces,
							   size_t *lens, uint8_t *literal, int n, int max_id, int model_vocab);
/* model.vocab: an object of 1 .. TFM_TOK_MAX_VOCAB_SIZE - 8 pieces (else
 * malformed: range_err), no more than model_vocab; its size in *n */
JsonbContainer *tfm_hf_model_vocab(JsonbContainer *model, int model_vocab, const char *range_err,
								   int *n);
/*
 * A model's chat settings from its tokenizer_config.json (the template,
 * bos and eos texts, added tokens), generation_config.json and config.json
 * (eos ids; both may be NULL) and tokenizer.json (its added tokens; may be
 * NULL), stored with tokenizer (chat_config.c).  Without a chat_template:
 * an error when required, else false and nothing stored.
 */
bool		tfm_hf_import_chat(const char *tokenizer, Jsonb *tokenizer_config,
							   Jsonb *generation_config, Jsonb *config, Jsonb *tokenizer_json,
							   bool required);
/* tokenizer.json of SentencePiece-style BPE with byte fallback (spiece.c) */
void		tfm_hf_import_spiece(const char *name, Jsonb *tokenizer, int model_vocab);
/* tokenizer.json of a SentencePiece Unigram model (unigram.c); special_ids
 * as tfm_hf_import_tokenizer's */
void		tfm_hf_import_unigram(const char *name, Jsonb *tokenizer, int model_vocab,
								  int32 *special_ids);

/*
 * A Marian SentencePiece model file (source.spm / target.spm: what, data,
 * size) with vocab.json's ids, stored as unigram tokenizer name; text_eos:
 * a model's texts end with </s> (the source side).  special_ids as
 * tfm_hf_import_tokenizer's (marian_spm.c).
 */
void		tfm_hf_import_marian_spm(const char *name, const char *what, const uint8 *data,
									 size_t size, Jsonb *vocab_json, int model_vocab,
									 bool text_eos, int32 *special_ids);

/* Marian's tokenizer files: both models' bytes and vocab.json */
typedef struct TfmMarianFiles
{
	const uint8 *source,
			   *target;
	size_t		source_len,
				target_len;
	Jsonb	   *vocab;
} TfmMarianFiles;

/* one safetensors file of a weight source: a bytea, or a server file */
typedef struct TfmWeightFile
{
	const char *what;			/* for messages: "weights" or the file's path */
	uint64		size;
	const uint8 *mem;			/* a bytea's data, or NULL */
	int			fd;				/* while open, else -1 */
	bool		seen;			/* opened before: its size must not change */
	tfm_st_file *st;			/* its header while open */
	struct TfmGuard *st_guard;
} TfmWeightFile;

/* the weights of an import: one file, or the shards of an index in its order */
typedef struct TfmWeightSource
{
	const char *what;			/* "weights", model.safetensors' or the index's path */
	int			n_files;
	TfmWeightFile *files;
	tfm_st_index *index;		/* a sharded checkpoint's, else NULL */
	struct TfmGuard *index_guard;
} TfmWeightSource;

/* a bytea holding a whole .safetensors file */
void		tfm_weights_from_bytea(TfmWeightSource *src, const uint8 *data, uint64 size);

/*
 * A server directory: model.safetensors if it exists, else
 * model.safetensors.index.json and its shards, checked against the index
 * (headers only) before anything is loaded.
 */
void		tfm_weights_from_dir(TfmWeightSource *src, const char *dir);

/* every tensor into m, checked against the architecture's table; returns
 * the checkpoint's own precision (tfm_source_tally: bf16 for BF16 matrices) */
tfm_precision tfm_weights_load(tfm_model *m, const TfmHfConfig *hc, TfmWeightSource *src);
void		tfm_weights_close(TfmWeightSource *src);
/* the bytes of its files (as of their last look) */
uint64		tfm_weights_bytes(const TfmWeightSource *src);

/* len bytes at off of f: into buf from its descriptor, or in place in its memory */
const uint8 *tfm_file_read(TfmWeightFile *f, uint64 off, size_t len, uint8 *buf);
/* a regular server file opened (-1 if absent and optional), its size in *size */
int			tfm_open_server_file(const char *path, bool optional, uint64 *size);
/* a whole server file of at most limit bytes, NUL-terminated (NULL if absent and optional) */
char	   *tfm_read_server_file(const char *path, bool optional, uint64 limit, size_t *len);

/*
 * The checkpoint imported as model name (its tokenizer, if given, stored
 * under the same name; task NULL or the checkpoint's): its parameters, and
 * its task in *imported_task.
 */
int64		tfm_hf_import_model(const char *name, Jsonb *config, TfmWeightSource *src,
								Jsonb *tokenizer, const char *task, tfm_task *imported_task);
/* the same for a Marian checkpoint with its .spm files: tokenizers name
 * (the source's) and name || '_target' */
int64		tfm_hf_import_marian(const char *name, Jsonb *config, TfmWeightSource *src,
								 const TfmMarianFiles *files, const char *task,
								 tfm_task *imported_task);

/* an imported encoder-decoder's generation settings (generation_config.json,
 * else config.json's generate keys; both may be NULL) kept in its config
 * (generation_config.c) */
void		tfm_hf_store_generation(const char *name, Jsonb *generation_config, Jsonb *config);

/*
 * How an import gets its weights and tokenizer (model_import.c runs them in
 * order: checks, the model built, load, tokenizer stored and its specials
 * checked, the model stored): a Hugging Face checkpoint's, a GGUF file's.
 */
typedef struct TfmImportSteps
{
	const char *what;			/* the weights, for messages */
	uint64		bytes;			/* their size ... */
	bool		check_bytes;	/* ... checked against 2 bytes a value */
	uint64		kept_bytes;		/* a GGUF file's blocks kept (an estimate before loading) ... */
	uint64		kept_values;	/* ... and the values they hold, stored as those blocks only */
	/*
	 * load gives every tensor its values (tfm_model_init_some, seed
	 * TFM_SEED_DEFAULT, for those the weights lack): the model is made
	 * without initial values, so that tensors load may leave to their
	 * blocks never take memory
	 */
	bool		load_inits;
	/* returns the checkpoint's own precision, which tfm.precision = auto runs
	 * the imported version at (config checkpoint_precision) */
	tfm_precision (*load) (tfm_model *m, const TfmHfConfig *hc, void *arg);
	/* NULL: no tokenizer; else store it as name, its specials in sp (INT_MAX: unknown) */
	void		(*tokenizer) (const char *name, const TfmHfConfig *hc, void *arg, int32 *sp);
	/*
	 * NULL, or called once the weights are loaded: per tensor of m, is it
	 * stored as the blocks kept only (no float32 rows); the bytes of the
	 * float32 rows and of the kept blocks to store in *float_bytes and
	 * *kept_bytes
	 */
	const bool *(*blocks_only) (tfm_model *m, void *arg, uint64 *float_bytes,
								uint64 *kept_bytes);
	/* NULL, or called once the model is stored (its id and version) */
	void		(*stored) (int32 model_id, int64 version, void *arg);
	void	   *arg;
	const char *target_tokenizer;	/* a seq2seq model's own target tokenizer, or NULL */
} TfmImportSteps;

/* a checkpoint whose config is made (hc) imported as model name */
int64		tfm_hf_import_built(const char *name, TfmHfConfig *hc, const TfmImportSteps *steps,
								tfm_task *imported_task);

/* a llama GGUF file (gguf_import.c): a bytea's bytes, or a server file */
int64		tfm_gguf_import_bytes(const char *name, const uint8 *data, uint64 size, bool tokenizer,
								  tfm_task *imported_task);
int64		tfm_gguf_import_file(const char *name, const char *path, bool tokenizer,
								 tfm_task *imported_task);

#endif							/* TFM_IMPORT_H */
