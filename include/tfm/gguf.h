/*
 * tfm/gguf.h: a strict reader of GGUF files (llama.cpp's format, versions 2
 * and 3), their block formats made float32, and the llama and gpt2
 * architectures' tensors and metadata mapped onto tfm's Hugging Face
 * import (plain C, no postgres.h).
 *
 * The format (ggml's docs/gguf.md), little-endian throughout:
 *   "GGUF", uint32 version, uint64 tensor count, uint64 metadata count;
 *   metadata: key (uint64 length + bytes), uint32 value type, value (an
 *     array: uint32 element type, uint64 count, elements; strings as keys);
 *   tensor infos: name, uint32 n_dims, uint64 ne[n_dims] (innermost
 *     first: a PyTorch (out, in) matrix is ne = [in, out]), uint32 ggml
 *     type, uint64 offset within the data section;
 *   the data section, at the header's end rounded up to general.alignment
 *     (32 when absent), every tensor's offset a multiple of it.
 * Reading works on the header alone (tfm_gguf_parse takes the first avail
 * bytes of a file of file_size bytes), so that a caller can stream the
 * tensors of a file too large to hold.  Refused (TFM_EBADFILE, with a
 * message): a wrong magic, a version other than 2 or 3, any count, length
 * or offset that runs past the bytes given or the file, more than
 * TFM_GGUF_MAX_TENSORS tensors or TFM_GGUF_MAX_KV keys, keys or names
 * longer than TFM_GGUF_MAX_NAME, duplicate keys or tensor names, unknown
 * value types, nested arrays, an alignment that is not a power of two,
 * n_dims outside 1..4, a dimension of 0, a shape whose byte size overflows
 * or whose innermost dimension is not whole blocks of its type, tensor data
 * outside the file, misaligned or overlapping.  Types tfm does not convert
 * (Q4_1, Q5_*, Q2_K...) are parsed as known GGML types and refused by
 * tfm_gguf_to_f32 (TFM_EUNSUPPORTED); type numbers tfm does not know (the
 * IQ formats among them) make the file TFM_EUNSUPPORTED.  The block
 * formats themselves are tfm/gguf_quants.h's.
 */
#ifndef TFM_GGUF_H
#define TFM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tfm/hf_map.h"
#include "tfm/precision.h"
#include "tfm/status.h"

#define TFM_GGUF_MAX_HEADER  ((uint64_t) 256 * 1024 * 1024)	/* bytes of metadata + infos */
#define TFM_GGUF_MAX_TENSORS 65536
#define TFM_GGUF_MAX_KV      65536
#define TFM_GGUF_MAX_NAME    65536	/* bytes of a key, a tensor name or a string */
#define TFM_GGUF_MAX_DIMS    4

/* a name of len bytes in a message ("%.*s"): at most 64 bytes of whole characters */
#define TFM_GGUF_SHOWN(s, len) (int) tfm_utf8_cut((s), (len) < 64 ? (len) : 64), (s)

/* metadata value types */
typedef enum tfm_gguf_vtype
{
	TFM_GGUF_U8 = 0, TFM_GGUF_I8, TFM_GGUF_U16, TFM_GGUF_I16, TFM_GGUF_U32, TFM_GGUF_I32,
	TFM_GGUF_F32V, TFM_GGUF_BOOL, TFM_GGUF_STRING, TFM_GGUF_ARRAY, TFM_GGUF_U64,
	TFM_GGUF_I64, TFM_GGUF_F64
} tfm_gguf_vtype;

typedef struct tfm_gguf_kv
{
	const char *key;			/* points into the buffer: not NUL-terminated */
	size_t		key_len;
	uint32_t	type;			/* tfm_gguf_vtype */
	uint32_t	elem;			/* an array's element type */
	uint64_t	n;				/* an array's count (1 otherwise) */
	const uint8_t *val;			/* the value's bytes (an array's first element) */
} tfm_gguf_kv;

typedef struct tfm_gguf_tensor
{
	char	   *name;			/* NUL-terminated copy */
	size_t		name_len;
	uint32_t	type;			/* a ggml type number */
	int			ndim;
	uint64_t	ne[TFM_GGUF_MAX_DIMS];	/* innermost first; 1 past ndim */
	uint64_t	n_values;
	uint64_t	offset;			/* from the data section's start */
	uint64_t	bytes;
} tfm_gguf_tensor;

typedef struct tfm_gguf_file
{
	uint32_t	version;
	uint64_t	n_kv;
	tfm_gguf_kv *kv;
	uint64_t	n_tensors;
	tfm_gguf_tensor *tensors;
	uint64_t	alignment;
	uint64_t	data_start;		/* file offset of the data section */
	uint64_t	file_size;
} tfm_gguf_file;

/*
 * The header of a GGUF file of file_size bytes from its first avail bytes
 * (the whole file, or at least the header): *out (malloc'd; the keys point
 * into buf, which must outlive it), or TFM_EBADFILE / TFM_ELIMIT /
 * TFM_ENOMEM with a message (a header running past avail but not past the
 * file is TFM_ELIMIT: the caller gave fewer bytes than the header takes).
 */
int			tfm_gguf_parse(tfm_gguf_file **out, const uint8_t *buf, uint64_t avail,
						   uint64_t file_size, tfm_status *st);
void		tfm_gguf_free(tfm_gguf_file *f);

/* the key (NULL if absent) */
const tfm_gguf_kv *tfm_gguf_find(const tfm_gguf_file *f, const char *key);
/* typed getters: TFM_OK, or TFM_EBADFILE naming the key (absent and required,
 * or of the wrong type); absent and optional leaves *v alone.  An integer of
 * any width is accepted where it fits. */
int			tfm_gguf_get_int(int64_t *v, const tfm_gguf_file *f, const char *key,
							 bool required, tfm_status *st);
int			tfm_gguf_get_float(double *v, const tfm_gguf_file *f, const char *key,
							   bool required, tfm_status *st);
int			tfm_gguf_get_bool(bool *v, const tfm_gguf_file *f, const char *key,
							  bool required, tfm_status *st);
/* a string value: pointer into the buffer and length */
int			tfm_gguf_get_str(const char **s, size_t *len, const tfm_gguf_file *f,
							 const char *key, bool required, tfm_status *st);
/* a string array's elements in turn (checked when parsed): p starts at
 * kv->val; returns where the next one starts */
const uint8_t *tfm_gguf_next_str(const uint8_t *p, const char **s, size_t *len);

/* ---- architectures (gguf_model.c: llama; gguf_gpt2.c: gpt2) -------------- */
/*
 * The hyper-parameters of a llama or gpt2 GGUF file as a Hugging Face
 * Llama's or GPT-2's (arch TFM_HF_LLAMA, TFM_HF_GPT2; vocab from
 * token_embd.weight's rows; tied when the file has no output.weight):
 * TFM_OK, or TFM_EUNSUPPORTED (another architecture, rope scaling,
 * experts) / TFM_EBADFILE (missing or inconsistent metadata) with a
 * message.  A llama's context_length above TFM_LEN_MAX is capped (*capped
 * set to the file's).
 */
int			tfm_gguf_params(tfm_hf_params *p, int64_t *capped, const tfm_gguf_file *f,
							tfm_status *st);
/*
 * A llama file with rope_freqs.weight (tfm_gguf_params set p->rope_type
 * TFM_ROPE_LLAMA3 and factor 0): its n values ff must be Llama 3.1's
 * divisors with factor ff[n−1], low_freq_factor 1, high_freq_factor 4 and
 * original context llama.rope.scaling.original_context_length (8192 when
 * absent) (each within 1e-4 relative), which then become
 * p's rope scaling: TFM_OK, or TFM_EUNSUPPORTED naming the first that is not.
 */
int			tfm_gguf_rope_check(tfm_hf_params *p, const float *ff, int n, tfm_status *st);

/*
 * A phi3 file with rope_factors_long/short.weight (tfm_gguf_params set
 * p->rope_type TFM_ROPE_LONGROPE and their count): their n values lf and
 * sf, each greater than 0 and at most TFM_ROPE_FACTOR_MAX, into p
 * (gguf_phi3.c)
 */
int			tfm_gguf_longrope_set(tfm_hf_params *p, const float *lf, const float *sf, int n,
								  tfm_status *st);
/*
 * The Hugging Face name of a GGUF tensor of p's architecture
 * ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight") into
 * name (cap bytes): TFM_OK or TFM_EBADFILE for a name it does not have.
 */
int			tfm_gguf_hf_name(char *name, size_t cap, const tfm_hf_params *p,
							 const tfm_gguf_tensor *t, tfm_status *st);
/*
 * Tensor t's values (its bytes in src) as the Hugging Face tensor, float32:
 * a llama's attn_q / attn_k rows put back from llama.cpp's rope order
 * (heads / kv_heads of p), a gpt2's Conv1D weights transposed back to (in,
 * out), others as they are ((out, in) row-major for a matrix).  out holds
 * t->n_values; fills sh with a float32 safetensors description of it for
 * tfm_hf_load_tensor.
 */
int			tfm_gguf_tensor_f32(float *out, tfm_st_tensor *sh, const tfm_gguf_tensor *t,
								const uint8_t *src, const tfm_hf_params *p, tfm_status *st);
/*
 * Before anything is allocated: every tensor of f is one of the map's (by
 * its Hugging Face name) with its shape, and every required one is there.
 * With the parser's bounds this guarantees the file's bytes back the model.
 */
int			tfm_gguf_check(tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_file *f,
						   tfm_status *st);
/*
 * Tensor t (its bytes in src) converted and stored in m through the Hugging
 * Face map (shape, seen once, NaN refused): TFM_OK, or an error naming the
 * tensor.
 */
int			tfm_gguf_load(tfm_model *m, tfm_hf_map *map, const tfm_hf_params *p,
						  const tfm_gguf_tensor *t, const uint8_t *src, tfm_status *st);
/*
 * tfm_gguf_load a range of rows at a time, for a tensor copied into m as
 * it is (an embedding: no head permutation, transposition or norm offset)
 * whose rows are whole blocks, so that its float32 values need never be
 * made all at once (an import checks each range against the blocks it
 * keeps and gives its memory back).  tfm_gguf_rows_begin: *place that
 * tensor's values in m, t checked as tfm_gguf_load checks it (name, size,
 * shape, seen once) and counted loaded; *place NULL and nothing counted
 * where t is not such a tensor (tfm_gguf_load it).  tfm_gguf_load_rows:
 * rows [r0, r1) of t (src: all its bytes) converted into place, a NaN or
 * an infinity among them refused.  TFM_OK, or an error naming the tensor.
 */
int			tfm_gguf_rows_begin(float **place, tfm_model *m, tfm_hf_map *map,
								const tfm_hf_params *p, const tfm_gguf_tensor *t, tfm_status *st);
int			tfm_gguf_load_rows(float *place, const tfm_gguf_tensor *t, const uint8_t *src,
							   uint64_t r0, uint64_t r1, tfm_status *st);
/*
 * Where tensor t's blocks are kept in m (before or after its values are
 * loaded): 1 and *k (blocks NULL) the columns of the int4 matrix its rows
 * are, *heads the heads whose rows the file holds in rope order (a llama's
 * attn_q / attn_k; 0 for none: tfm_gguf_unpermute_rows puts them back);
 * 0 where they are not kept (a type tfm_gguf_kept refuses, a vector, a
 * tensor whose rows are not a packed matrix's columns: a norm, a GPT-2
 * position table).
 */
int			tfm_gguf_kept_place(tfm_int4_kept *k, int *heads, const tfm_model *m,
								tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_tensor *t);
/*
 * Where tensor t's blocks are stored in place of its values, for a tensor
 * tfm_gguf_kept_place does not keep (no matrix runs them: an untied
 * embedding, only looked up): 1 and *k (blocks NULL; col0 0, cols the
 * tensor's rows, K its columns) when t is of a kept type, copied as it is
 * into a tensor of m whose rows are the file's rows (none in rope order);
 * else 0
 */
int			tfm_gguf_rows_place(tfm_int4_kept *k, const tfm_model *m, tfm_hf_map *map,
								const tfm_hf_params *p, const tfm_gguf_tensor *t);
/* the tfm tensor t's values go to (NULL: none, a buffer) */
const char *tfm_gguf_target(tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_tensor *t);
/* rows (row_bytes each) of a (rows, ·) matrix from ggml's rope order back to Hugging Face's */
void		tfm_gguf_unpermute_rows(void *dst, const void *src, uint64_t rows, size_t row_bytes,
									int n_head);

/* ---- the tokenizer (gguf_tokenizer.c) --------------------------------------- */
/*
 * SentencePiece BPE merges from a "llama" vocabulary's scores, as
 * llama.cpp's SPM tokenizer ranks them: every split of a piece into two
 * pieces of the vocabulary, pieces in order of score (highest first, then
 * id); pairs of ids (left, right) into *merge_lr (malloc'd), their count in
 * *n_merges (at most TFM_TOK_MAX_VOCAB_SIZE, else TFM_ELIMIT).  Pieces of types other than normal (1) and user-defined (4)
 * make no merges.
 */
int			tfm_gguf_spm_merges(int32_t **merge_lr, int32_t *n_merges,
								const uint8_t *const *pieces, const size_t *lens,
								const float *scores, const int32_t *types, int32_t n,
								tfm_status *st);


/*
 * The tokenizer of the metadata: "llama" (SentencePiece BPE: pieces,
 * scores, the merges derived from them) or "gpt2" (byte-level BPE: pieces
 * in GPT-2's printable byte mapping, control and user-defined tokens as
 * their text (literal), merges "a b" as pairs of ids).  Pieces point into
 * the file's buffer.
 */
typedef enum tfm_gguf_tok_kind
{
	TFM_GGUF_TOK_SPM = 1,		/* tfm_tok_import_spiece */
	TFM_GGUF_TOK_BPE = 2		/* tfm_tok_import_hf_bpe */
} tfm_gguf_tok_kind;

typedef struct tfm_gguf_vocab
{
	tfm_gguf_tok_kind kind;
	int32_t		n;
	const uint8_t **pieces;
	size_t	   *lens;
	float	   *scores;			/* SPM */
	int32_t    *types;
	uint8_t    *literal;		/* BPE: control / user-defined tokens */
	int32_t		unk,
				bos,
				eos,
				pad;			/* -1 where the metadata names none (BPE) */
	bool		add_bos;
	uint32_t	flags;			/* BPE: TFM_TOK_INFO_* of tokenizer.ggml.pre */
	const char *split;			/* with TFM_TOK_INFO_SPLIT: the pre-tokenizer's pattern
								 * (PCRE2, one Split rule, Isolated; static) */
	int32_t    *merge_lr;
	int32_t		n_merges;
} tfm_gguf_vocab;

/*
 * tokenizer.ggml.*: model "llama" or "gpt2" (else TFM_EUNSUPPORTED),
 * tokens and token_type (and "llama"'s scores) of the same count (1 ..
 * max_tokens), "gpt2"'s merges and pre ("default", "gpt-2", "llama-bpe",
 * "smollm"; others TFM_EUNSUPPORTED), the unknown / bos / eos / padding ids
 * among them ("llama" defaults 0, 1, 2), add_bos_token (default true for
 * "llama", false for "gpt2").
 */
int			tfm_gguf_vocab_read(tfm_gguf_vocab **out, const tfm_gguf_file *f, int64_t max_tokens,
								tfm_status *st);
void		tfm_gguf_vocab_free(tfm_gguf_vocab *v);

#endif							/* TFM_GGUF_H */
