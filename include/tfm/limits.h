/*
 * tfm/limits.h — every documented limit and default of a model's config
 * and of a training run, in one place (MIN / MAX / DEFAULT, as pgvector
 * keeps them).  The core's checks, the SQL layer's argument checks and the
 * import of a Hugging Face config all read these; their messages are
 * formatted from them (TFM_RANGE_TEXT for the core's constant strings).
 */
#ifndef TFM_LIMITS_H
#define TFM_LIMITS_H

#include <stddef.h>

#define TFM_STR_(x) #x
#define TFM_STR(x) TFM_STR_(x)
/* "what must be between MIN and MAX", a string literal, for limit L */
#define TFM_RANGE_TEXT(what, L) what " must be between " TFM_STR(L##_MIN) " and " TFM_STR(L##_MAX)

/* a model's config (tfm_config_check; defaults per task: tfm_config_defaults) */
#define TFM_D_MODEL_MIN     1
#define TFM_D_MODEL_MAX     4096
#define TFM_HEADS_MIN       1
#define TFM_HEADS_MAX       64
#define TFM_LAYERS_MIN      1
#define TFM_LAYERS_MAX      48
#define TFM_D_FF_MIN        1
#define TFM_D_FF_MAX        16384
#define TFM_LEN_MIN         2
#define TFM_LEN_MAX         8192
#define TFM_VOCAB_MIN       1
#define TFM_VOCAB_MAX       1000000
#define TFM_OWN_VOCAB_MIN   7		/* a vocab_size given to tfm_create_model: tfm's special ids 0..5 and one more */
#define TFM_CLASSES_MIN     2
/* an imported BERT-family head may have one logit (a cross-encoder's score) */
#define TFM_CLASSES_MIN_IMPORTED 1
#define TFM_CLASSES_MAX     10000
#define TFM_TYPE_VOCAB_MIN  0
#define TFM_TYPE_VOCAB_MAX  1024
#define TFM_POS_OFFSET_MIN  0
#define TFM_POS_OFFSET_MAX  1024
#define TFM_LN_EPS_MAX      0.1		/* compared as a float; an import's is also greater than 0 */
#define TFM_ROPE_THETA_MIN  1
#define TFM_ROPE_THETA_MAX  1e9		/* compared as a float */
/* rope scaling (Llama 3.1: factor 8, high_freq_factor 4; 3.2: factor 32) */
#define TFM_ROPE_FACTOR_MAX 1024
#define TFM_ROPE_ORIG_MAX   1048576
/* longrope (Phi-3.5, Phi-4-mini): one short and one long factor per rotated pair, each
 * a positive number up to TFM_ROPE_FACTOR_MAX; a rotation at most 2·this wide */
#define TFM_ROPE_FACTORS_MAX 128
#define TFM_ROPE_ATTN_FACTOR_MAX 16
/* dropout probabilities are at least 0 and less than 1 */
/*
 * A model's size: tfm's own bounds, past which no setting goes.  What a
 * model may take is the settings' (tfm.max_parameters for a model made or
 * copied, by default TFM_PARAMS_DEFAULT; tfm.max_model_bytes for an import,
 * in the bytes stored at its precision: a Q4_K_M file's 4B parameters take
 * 2.5 GB).  Rows of tfm.tensors hold TFM_CHUNK_VALUES values each and rows
 * of tfm.gguf_tensors at most tfm.gguf_row_bytes, so a tensor's size is
 * not bound by a row's 1 GB.
 */
#define TFM_PARAMS_MAX      ((size_t) 16000000000)
#define TFM_PARAMS_DEFAULT  2e9
#define TFM_TENSOR_MAX      ((size_t) 1000000000)	/* values in one tensor (Gemma 3 4B's embedding: 671M) */

/* a training run (tfm_train, tfm_fit, tfm_train_agg; per-task defaults: tfm_train_defaults) */
#define TFM_EPOCHS_DEFAULT  1
#define TFM_EPOCHS_MAX      1000000000
#define TFM_BATCH_MAX       65536
#define TFM_ACCUMULATE_MAX  64
#define TFM_LR_MAX          10
#define TFM_WEIGHT_DECAY_DEFAULT 0.01f
#define TFM_WEIGHT_DECAY_MAX 1
#define TFM_CLIP_DEFAULT    1.0f
#define TFM_SEED_DEFAULT    42
/* seq2seq's batches without a batch_size: about this many padded tokens (the reference recipe's 8k) */
#define TFM_BATCH_TOKENS_SEQ2SEQ 8192

/*
 * Held-out validation by default (val_fraction not given): the fraction of
 * the task (tfm_train_defaults), rows or (lm) sequences of max_len tokens
 * chosen by a hash of their tokens, at most TFM_VAL_AUTO_MAX_ROWS of them
 * and TFM_VAL_AUTO_MAX_TOKENS tokens; none when fewer than TFM_VAL_AUTO_MIN
 * would be held out.
 */
#define TFM_VAL_FRACTION_CLASSIFY 0.1f
#define TFM_VAL_FRACTION_LM       0.05f
#define TFM_VAL_FRACTION_SEQ2SEQ  0.05f
#define TFM_VAL_AUTO_MIN          20
#define TFM_VAL_AUTO_MAX_ROWS     10000
#define TFM_VAL_AUTO_MAX_TOKENS   500000
/* early stopping: evaluations without improvement before a run stops (0: never) */
#define TFM_PATIENCE_DEFAULT 3
#define TFM_PATIENCE_MAX    1000000
/*
 * A run of fewer than TFM_EVAL_EPOCHS planned epochs whose steps number at
 * least TFM_EVAL_MIN_STEPS is also evaluated every total / TFM_EVAL_EPOCHS
 * steps, so it has about TFM_EVAL_EPOCHS evaluations to keep the best of
 */
#define TFM_EVAL_EPOCHS     8
#define TFM_EVAL_MIN_STEPS  400

/* a job's batch: keys claimed, computed and committed together (options' batch) */
#define TFM_JOB_BATCH_MIN     1
#define TFM_JOB_BATCH_DEFAULT 256
#define TFM_JOB_BATCH_MAX     4096
/* Gemma 2's soft caps of attention scores and output logits (c·tanh(x/c)) */
#define TFM_SOFTCAP_MAX     1e4		/* compared as a float; 0 = no cap */

/* a SentencePiece Unigram tokenizer.json (tok_unigram.c): normalizers in its
 * Sequence, bytes of a precompiled_charsmap, bytes of a Replace / Prepend
 * text; a text of n bytes that the normalizer makes longer than
 * (n + 16) * MAX_EXPANSION bytes is refused */
#define TFM_TOK_UNI_MAX_NORMALIZERS 16
#define TFM_TOK_CHARSMAP_MAX_BYTES  (16 << 20)
#define TFM_TOK_UNI_MAX_TEXT_BYTES  256
#define TFM_TOK_UNI_MAX_EXPANSION   64

/* T5's relative position bias: buckets (relative_attention_num_buckets) and
 * the distance from which all share the last (relative_attention_max_distance) */
#define TFM_REL_BUCKETS_MIN      2
#define TFM_REL_BUCKETS_MAX      1024
#define TFM_REL_MAX_DISTANCE_MIN 2
#define TFM_REL_MAX_DISTANCE_MAX 1000000

#endif							/* TFM_LIMITS_H */
