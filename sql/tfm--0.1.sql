-- tfm: transformers in PostgreSQL.  Every SQL object of the extension.
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION tfm" to load this file. \quit

-- The catalog lives in schema tfm; functions go to the extension's schema.
CREATE SCHEMA tfm;
COMMENT ON SCHEMA tfm IS 'tfm catalog: models, their tensors, tokenizers and training history';

-- Every save takes a new value, never reused even after a rollback, so a
-- (model, version) pair names one set of weights forever.
CREATE SEQUENCE tfm.version_seq;

CREATE TABLE tfm.tokenizers (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    kind        text NOT NULL CHECK (kind IN ('byte', 'char', 'word', 'bpe', 'wordpiece')),
    vocab_size  integer NOT NULL,
    options     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE tfm.tokenizers IS 'tokenizers: one row each; vocabularies in tfm.vocab, merges in tfm.merges';

CREATE TABLE tfm.models (
    id             serial PRIMARY KEY,
    name           text NOT NULL UNIQUE CHECK (name <> ''),
    task           text NOT NULL CHECK (task IN ('classify', 'lm', 'seq2seq')),
    tokenizer      text REFERENCES tfm.tokenizers (name) ON UPDATE CASCADE,
    target_tokenizer text REFERENCES tfm.tokenizers (name) ON UPDATE CASCADE,
    labels         text[],
    config         jsonb NOT NULL,
    parameters     bigint NOT NULL,
    format_version integer NOT NULL,
    version        bigint NOT NULL DEFAULT nextval('tfm.version_seq'),
    steps          bigint NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE tfm.models IS 'models: task, tokenizer, hyper-parameters (config), format and a version that changes on every save';

CREATE TABLE tfm.tensors (
    model_id  integer NOT NULL REFERENCES tfm.models (id) ON DELETE CASCADE,
    name      text NOT NULL,
    shape     integer[] NOT NULL,
    data      real[] NOT NULL,
    PRIMARY KEY (model_id, name)
);
COMMENT ON TABLE tfm.tensors IS 'one row per tensor of a model: name (doc/model.md), shape and values';

CREATE TABLE tfm.history (
    model_id      integer NOT NULL REFERENCES tfm.models (id) ON DELETE CASCADE,
    run_started   timestamptz NOT NULL,
    epoch         integer NOT NULL,
    steps         bigint NOT NULL,
    train_loss    double precision,
    val_loss      double precision,
    val_accuracy  double precision,
    tokens_per_s  double precision,
    seconds       double precision,
    saved_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (model_id, run_started, epoch)
);
COMMENT ON TABLE tfm.history IS 'one row per training epoch saved';

CREATE TABLE tfm.deployed (
    task   text PRIMARY KEY CHECK (task IN ('classify', 'lm', 'seq2seq')),
    model  text NOT NULL REFERENCES tfm.models (name) ON UPDATE CASCADE ON DELETE CASCADE
);
COMMENT ON TABLE tfm.deployed IS 'the model each task uses when a function is called without a model name';

-- ---------------------------------------------------------------------------
-- information

CREATE FUNCTION tfm_info(OUT version text, OUT blis_kernels text, OUT kernel_choice text,
                         OUT threads integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_info' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_info() IS 'tfm''s version, the BLIS kernel set in use and why, and the thread count';

-- ---------------------------------------------------------------------------
-- models

CREATE FUNCTION tfm_create_model(
    name text,
    task text,
    tokenizer text DEFAULT NULL,
    labels text[] DEFAULT NULL,
    vocab_size integer DEFAULT NULL,
    d_model integer DEFAULT NULL,
    heads integer DEFAULT NULL,
    layers integer DEFAULT NULL,
    encoder_layers integer DEFAULT NULL,
    decoder_layers integer DEFAULT NULL,
    d_ff integer DEFAULT NULL,
    max_len integer DEFAULT NULL,
    dropout real DEFAULT NULL,
    attention_dropout real DEFAULT NULL,
    norm text DEFAULT NULL,
    positions text DEFAULT NULL,
    activation text DEFAULT NULL,
    pooling text DEFAULT NULL,
    tie_embeddings boolean DEFAULT NULL,
    scale_embeddings boolean DEFAULT NULL,
    target_tokenizer text DEFAULT NULL,
    seed bigint DEFAULT 42,
    OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_create_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_create_model IS 'create a model (classify, lm or seq2seq) with initialised weights';

CREATE FUNCTION tfm_drop_model(name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_drop_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_drop_model(text) IS 'drop a model with its tensors and history';

CREATE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
AS 'SELECT t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
    WHERE m.name = $1 AND t.name = $2'
LANGUAGE sql STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_tensor(text, text) IS 'the values of one tensor of a model';

CREATE VIEW tfm.model_list AS
SELECT m.name, m.task, m.tokenizer, m.parameters,
       (m.config->>'d_model')::int AS d_model,
       (m.config->>'enc_layers')::int + (m.config->>'dec_layers')::int AS layers,
       m.steps, m.version, m.created_at, m.updated_at
FROM tfm.models m ORDER BY m.name;
COMMENT ON VIEW tfm.model_list IS 'models with their parameter counts';

-- ---------------------------------------------------------------------------
-- training

CREATE FUNCTION tfm_train(
    model text,
    query text,
    epochs integer DEFAULT 1,
    batch_size integer DEFAULT NULL,
    lr real DEFAULT NULL,
    warmup integer DEFAULT NULL,
    schedule text DEFAULT NULL,
    weight_decay real DEFAULT NULL,
    clip real DEFAULT 1.0,
    label_smoothing real DEFAULT NULL,
    val_fraction real DEFAULT NULL,
    seed bigint DEFAULT 42,
    time_limit interval DEFAULT NULL,
    max_steps bigint DEFAULT NULL,
    accumulate integer DEFAULT 1,
    batch_tokens integer DEFAULT NULL,
    OUT epoch integer, OUT steps bigint, OUT train_loss double precision,
    OUT val_loss double precision, OUT val_accuracy double precision,
    OUT tokens_per_s double precision, OUT seconds double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_train IS 'train a model on the rows of a query; one row per epoch';

-- ---------------------------------------------------------------------------
-- tokenizers

CREATE TABLE tfm.vocab (
    tokenizer_id  integer NOT NULL REFERENCES tfm.tokenizers (id) ON DELETE CASCADE,
    id            integer NOT NULL,
    piece         bytea NOT NULL,
    PRIMARY KEY (tokenizer_id, id)
);
COMMENT ON TABLE tfm.vocab IS 'a tokenizer''s vocabulary: the bytes of each id''s piece';

CREATE TABLE tfm.merges (
    tokenizer_id  integer NOT NULL REFERENCES tfm.tokenizers (id) ON DELETE CASCADE,
    rank          integer NOT NULL,
    left_id       integer NOT NULL,
    right_id      integer NOT NULL,
    PRIMARY KEY (tokenizer_id, rank)
);
COMMENT ON TABLE tfm.merges IS 'a BPE tokenizer''s merges in the order they apply';

CREATE VIEW tfm.tokenizer_list AS
SELECT t.name, t.kind, t.vocab_size, (t.options->>'n_merges')::int AS merges,
       (SELECT array_agg(m.name ORDER BY m.name) FROM tfm.models m
         WHERE m.tokenizer = t.name OR m.target_tokenizer = t.name) AS used_by,
       t.created_at
FROM tfm.tokenizers t ORDER BY t.name;
COMMENT ON VIEW tfm.tokenizer_list IS 'tokenizers with their kind, vocabulary size and the models using them';

-- the aggregate's transition, combine, serialize and final functions
CREATE FUNCTION tfm_tokenizer_count(internal, text, text, text, integer) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_tokenizer_count' LANGUAGE C IMMUTABLE PARALLEL SAFE;  -- not STRICT: skips NULL rows itself
CREATE FUNCTION tfm_tokenizer_count(internal, text, text, text) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_tokenizer_count' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION tfm_tokenizer_count(internal, text, text) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_tokenizer_count' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION tfm_tokenizer_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_tokenizer_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION tfm_tokenizer_serialize(internal) RETURNS bytea
AS 'MODULE_PATHNAME', 'tfm_tokenizer_serialize' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tfm_tokenizer_deserialize(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_tokenizer_deserialize' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tfm_tokenizer_finish(internal) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_tokenizer_finish' LANGUAGE C VOLATILE PARALLEL SAFE;  -- stores the result after the plan ends

CREATE AGGREGATE tfm_tokenizer_train(name text, input text, kind text, vocab_size integer) (
    SFUNC = tfm_tokenizer_count, STYPE = internal, FINALFUNC = tfm_tokenizer_finish,
    COMBINEFUNC = tfm_tokenizer_combine, SERIALFUNC = tfm_tokenizer_serialize,
    DESERIALFUNC = tfm_tokenizer_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE tfm_tokenizer_train(name text, input text, kind text) (
    SFUNC = tfm_tokenizer_count, STYPE = internal, FINALFUNC = tfm_tokenizer_finish,
    COMBINEFUNC = tfm_tokenizer_combine, SERIALFUNC = tfm_tokenizer_serialize,
    DESERIALFUNC = tfm_tokenizer_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE tfm_tokenizer_train(name text, input text) (
    SFUNC = tfm_tokenizer_count, STYPE = internal, FINALFUNC = tfm_tokenizer_finish,
    COMBINEFUNC = tfm_tokenizer_combine, SERIALFUNC = tfm_tokenizer_serialize,
    DESERIALFUNC = tfm_tokenizer_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE tfm_tokenizer_train(text, text, text, integer) IS
  'learn a tokenizer (byte, char, word, bpe, wordpiece) from the rows aggregated and store it';
COMMENT ON AGGREGATE tfm_tokenizer_train(text, text, text) IS
  'learn a tokenizer of a kind with its default vocabulary size';
COMMENT ON AGGREGATE tfm_tokenizer_train(text, text) IS
  'learn a bpe tokenizer of 8000 ids';

CREATE FUNCTION tfm_tokenizer_import(name text, kind text, vocab text, merges text) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_tokenizer_import' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_tokenizer_import(text, text, text, text) IS
  'load a published vocabulary: kind bpe = GPT-2''s encoder.json and vocab.bpe contents';

CREATE FUNCTION tfm_tokenizer_drop(name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_tokenizer_drop' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_tokenizer_drop(text) IS 'drop a tokenizer no model uses';

CREATE FUNCTION tfm_tokenize(tokenizer text, input text, add_bos boolean DEFAULT false,
                             add_eos boolean DEFAULT false, max_length integer DEFAULT NULL)
RETURNS integer[]
AS 'MODULE_PATHNAME', 'tfm_tokenize' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_tokenize(text, text, boolean, boolean, integer) IS 'token ids of a text';

CREATE FUNCTION tfm_detokenize(tokenizer text, ids integer[]) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_detokenize' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_detokenize(text, integer[]) IS
  'the text of token ids (special tokens dropped, invalid UTF-8 replaced by U+FFFD)';

CREATE FUNCTION tfm_tokens(tokenizer text, input text,
                           OUT pos integer, OUT id integer, OUT piece text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 100;
COMMENT ON FUNCTION tfm_tokens(text, text) IS 'the tokens of a text, one row each, for inspection';

-- ---------------------------------------------------------------------------
-- live progress of training, from any session

CREATE VIEW tfm.progress AS
SELECT pid, usename, query_start AS started, state_change AS updated, query AS status
FROM pg_stat_activity
WHERE query LIKE 'tfm\_train %' AND state = 'active';
COMMENT ON VIEW tfm.progress IS 'the status line of every training in progress (epoch, step, loss, lr, tokens/s, eta)';

-- ---------------------------------------------------------------------------
-- classification

CREATE FUNCTION tfm_classify(model text, input text) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_classify' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL gets an error
CREATE FUNCTION tfm_classify(model text, ids integer[]) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_classify' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_classify(text, text) IS 'the most likely label of a text';
COMMENT ON FUNCTION tfm_classify(text, integer[]) IS 'the most likely label of token ids';

CREATE FUNCTION tfm_classify(input text) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_classify_deployed' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_classify(text) IS 'the most likely label of a text, by the deployed classifier';

CREATE FUNCTION tfm_classify(model text, inputs text[]) RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_classify_batch' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_classify(text, text[]) IS
  'the most likely label of each text, through batched forward passes (NULL gives NULL)';

CREATE FUNCTION tfm_embed(model text, input text) RETURNS real[]
AS 'MODULE_PATHNAME', 'tfm_embed' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION tfm_embed(model text, ids integer[]) RETURNS real[]
AS 'MODULE_PATHNAME', 'tfm_embed' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_embed(text, text) IS 'the pooled representation of a text (d_model values)';
COMMENT ON FUNCTION tfm_embed(text, integer[]) IS 'the pooled representation of token ids (d_model values)';

CREATE FUNCTION tfm_deploy(model text) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_deploy' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_deploy(text) IS
  'make a model the one its task uses when no model is named (recorded in tfm.deployed)';

CREATE FUNCTION tfm_predict_proba(model text, input text, OUT label text, OUT probability double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_predict_proba' LANGUAGE C STABLE PARALLEL SAFE ROWS 2;
CREATE FUNCTION tfm_predict_proba(model text, ids integer[], OUT label text, OUT probability double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_predict_proba' LANGUAGE C STABLE PARALLEL SAFE ROWS 2;
COMMENT ON FUNCTION tfm_predict_proba(text, text) IS 'the probability of every label of a text';
COMMENT ON FUNCTION tfm_predict_proba(text, integer[]) IS 'the probability of every label of token ids';

-- ---------------------------------------------------------------------------
-- copying models

CREATE FUNCTION tfm_copy_model(source text, target text) RETURNS bigint
AS 'MODULE_PATHNAME', 'tfm_copy_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_copy_model(text, text) IS 'copy a model (config and weights) under a new name; returns its parameter count';

-- ---------------------------------------------------------------------------
-- evaluation

CREATE FUNCTION tfm_evaluate(model text, query text,
    OUT accuracy double precision, OUT loss double precision, OUT macro_f1 double precision,
    OUT per_class jsonb, OUT confusion jsonb, OUT rows bigint, OUT skipped bigint,
    OUT perplexity double precision, OUT nats_per_char double precision,
    OUT bits_per_byte double precision, OUT tokens bigint,
    OUT bleu double precision, OUT exact_match double precision)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_evaluate' LANGUAGE C VOLATILE PARALLEL RESTRICTED;  -- runs a query
COMMENT ON FUNCTION tfm_evaluate(text, text) IS
  'a model''s quality on a query''s rows: classify → accuracy, loss, macro_f1, per_class, confusion; lm → loss, perplexity, nats_per_char, bits_per_byte, tokens; seq2seq → bleu, exact_match, loss, rows';

-- ---------------------------------------------------------------------------
-- training as an aggregate: one epoch over the rows it sees, in their order

CREATE TYPE tfm.epoch AS (epoch integer, steps bigint, train_loss double precision,
                          val_loss double precision, val_accuracy double precision,
                          tokens_per_s double precision, seconds double precision);

CREATE FUNCTION tfm_train_agg_step(internal, text, text, text) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_train_agg_step' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: skips NULL rows
CREATE FUNCTION tfm_train_agg_step(internal, text, text, text, jsonb) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_train_agg_step' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION tfm_train_agg_step(internal, text, integer[], text) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_train_agg_step' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION tfm_train_agg_step(internal, text, integer[], text, jsonb) RETURNS internal
AS 'MODULE_PATHNAME', 'tfm_train_agg_step' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION tfm_train_agg_final(internal) RETURNS tfm.epoch
AS 'MODULE_PATHNAME', 'tfm_train_agg_final' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE AGGREGATE tfm_train_agg(model text, input text, label text) (
    SFUNC = tfm_train_agg_step, STYPE = internal, FINALFUNC = tfm_train_agg_final,
    FINALFUNC_MODIFY = READ_WRITE, PARALLEL = UNSAFE);
CREATE AGGREGATE tfm_train_agg(model text, input text, label text, options jsonb) (
    SFUNC = tfm_train_agg_step, STYPE = internal, FINALFUNC = tfm_train_agg_final,
    FINALFUNC_MODIFY = READ_WRITE, PARALLEL = UNSAFE);
CREATE AGGREGATE tfm_train_agg(model text, ids integer[], label text) (
    SFUNC = tfm_train_agg_step, STYPE = internal, FINALFUNC = tfm_train_agg_final,
    FINALFUNC_MODIFY = READ_WRITE, PARALLEL = UNSAFE);
CREATE AGGREGATE tfm_train_agg(model text, ids integer[], label text, options jsonb) (
    SFUNC = tfm_train_agg_step, STYPE = internal, FINALFUNC = tfm_train_agg_final,
    FINALFUNC_MODIFY = READ_WRITE, PARALLEL = UNSAFE);
COMMENT ON AGGREGATE tfm_train_agg(text, text, text) IS
  'one epoch of mini-batch training of a classifier over the rows aggregated, in their order; returns the epoch''s metrics';
COMMENT ON AGGREGATE tfm_train_agg(text, text, text, jsonb) IS
  'the same with options: batch_size, lr, warmup, weight_decay, clip, label_smoothing, seed';
COMMENT ON AGGREGATE tfm_train_agg(text, integer[], text) IS 'one epoch of training over token-id rows';
COMMENT ON AGGREGATE tfm_train_agg(text, integer[], text, jsonb) IS 'one epoch of training over token-id rows, with options';

-- ---------------------------------------------------------------------------
-- generation

CREATE FUNCTION tfm_generate(model text, prompt text, max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_generate' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_generate(text, text, integer, real, integer, real, bigint, text) IS
  'the continuation of a prompt by a language model (temperature 0 = greedy; a seed repeats)';

CREATE FUNCTION tfm_generate(model text, prompts text[], max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_generate_batch' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_generate(text, text[], integer, real, integer, real, bigint, text) IS
  'the continuations of many prompts, decoded together (prompt i samples with seed + i)';

CREATE FUNCTION tfm_generate_tokens(model text, prompt text, max_tokens integer DEFAULT 200,
                                    temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                                    top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                                    OUT pos integer, OUT id integer, OUT piece text, OUT logprob double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_generate_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 200;
COMMENT ON FUNCTION tfm_generate_tokens(text, text, integer, real, integer, real, bigint, text) IS
  'the generated tokens one row each, with their log-probability under the model';

CREATE FUNCTION tfm_next_tokens(model text, prompt text, k integer DEFAULT 10,
                                OUT rank integer, OUT id integer, OUT piece text, OUT probability double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_next_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 10;
COMMENT ON FUNCTION tfm_next_tokens(text, text, integer) IS 'the k most likely next tokens after a prompt';

CREATE FUNCTION tfm_score(model text, input text, OUT logprob double precision, OUT tokens integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_score' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_score(text, text) IS
  'the log-probability of a text under a language model (every token after the first) and the tokens scored';

-- BLEU
-- ---------------------------------------------------------------------------
-- BLEU: corpus BLEU as sacreBLEU 2.x computes it with its defaults (13a
-- tokenizer, case-sensitive, n-grams 1..4, 'exp' smoothing, closest
-- reference length).  The state is the ten sufficient statistics as a
-- bigint[] (sys_len, ref_len, matches 1..4, totals 1..4): partial states
-- add up, so no serialize functions are needed for parallel plans.

CREATE FUNCTION tfm_bleu_step(bigint[], text, text) RETURNS bigint[]
AS 'MODULE_PATHNAME', 'tfm_bleu_step' LANGUAGE C IMMUTABLE PARALLEL SAFE;  -- not STRICT: skips NULL hypotheses, rejects NULL references
CREATE FUNCTION tfm_bleu_step(bigint[], text, text[]) RETURNS bigint[]
AS 'MODULE_PATHNAME', 'tfm_bleu_step_refs' LANGUAGE C IMMUTABLE PARALLEL SAFE;  -- not STRICT: likewise
CREATE FUNCTION tfm_bleu_combine(bigint[], bigint[]) RETURNS bigint[]
AS 'MODULE_PATHNAME', 'tfm_bleu_combine' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tfm_bleu_final(bigint[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'tfm_bleu_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tfm_bleu_details_final(bigint[]) RETURNS jsonb
AS 'MODULE_PATHNAME', 'tfm_bleu_details_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_bleu_step(bigint[], text, text) IS
  'tfm_bleu''s transition: adds a hypothesis'' BLEU statistics against one reference';
COMMENT ON FUNCTION tfm_bleu_step(bigint[], text, text[]) IS
  'tfm_bleu''s transition: adds a hypothesis'' BLEU statistics against several references';
COMMENT ON FUNCTION tfm_bleu_combine(bigint[], bigint[]) IS 'tfm_bleu''s combine: the sum of two states';
COMMENT ON FUNCTION tfm_bleu_final(bigint[]) IS 'tfm_bleu''s final: BLEU from the statistics';
COMMENT ON FUNCTION tfm_bleu_details_final(bigint[]) IS 'tfm_bleu_details''s final: BLEU and its parts from the statistics';

CREATE AGGREGATE tfm_bleu(hypothesis text, reference text) (
    SFUNC = tfm_bleu_step, STYPE = bigint[], FINALFUNC = tfm_bleu_final,
    COMBINEFUNC = tfm_bleu_combine, PARALLEL = SAFE);
CREATE AGGREGATE tfm_bleu(hypothesis text, "references" text[]) (
    SFUNC = tfm_bleu_step, STYPE = bigint[], FINALFUNC = tfm_bleu_final,
    COMBINEFUNC = tfm_bleu_combine, PARALLEL = SAFE);
CREATE AGGREGATE tfm_bleu_details(hypothesis text, reference text) (
    SFUNC = tfm_bleu_step, STYPE = bigint[], FINALFUNC = tfm_bleu_details_final,
    COMBINEFUNC = tfm_bleu_combine, PARALLEL = SAFE);
CREATE AGGREGATE tfm_bleu_details(hypothesis text, "references" text[]) (
    SFUNC = tfm_bleu_step, STYPE = bigint[], FINALFUNC = tfm_bleu_details_final,
    COMBINEFUNC = tfm_bleu_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE tfm_bleu(text, text) IS
  'corpus BLEU (0-100) of the hypotheses against their references, as sacreBLEU 2.x by default; NULL hypotheses are skipped';
COMMENT ON AGGREGATE tfm_bleu(text, text[]) IS
  'corpus BLEU (0-100) with several references per hypothesis (NULL and empty ones ignored), as sacreBLEU 2.x by default';
COMMENT ON AGGREGATE tfm_bleu_details(text, text) IS
  'corpus BLEU with its parts as jsonb: score, precisions, bp, ratio, sys_len, ref_len, counts, totals';
COMMENT ON AGGREGATE tfm_bleu_details(text, text[]) IS
  'corpus BLEU with its parts as jsonb, several references per hypothesis';

CREATE FUNCTION tfm_bleu_tokenize(input text) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_bleu_tokenize' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_bleu_tokenize(text) IS
  'the text as tfm_bleu tokenizes it (sacreBLEU''s 13a tokenizer): tokens separated by single spaces';

-- ---------------------------------------------------------------------------
-- translation (encoder-decoder models)

CREATE FUNCTION tfm_translate(model text, source text, beam integer DEFAULT 4,
                              length_penalty real DEFAULT 0.6, max_tokens integer DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_translate' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_translate(text, text, integer, real, integer) IS
  'the translation of a source by beam search (beam 1 = greedy)';

CREATE FUNCTION tfm_translate(model text, sources text[], beam integer DEFAULT 4,
                              length_penalty real DEFAULT 0.6, max_tokens integer DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_translate_batch' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_translate(text, text[], integer, real, integer) IS
  'the translations of many sources, decoded together';

CREATE FUNCTION tfm_translate_nbest(model text, source text, beam integer DEFAULT 4, n integer DEFAULT NULL,
                                    OUT rank integer, OUT translation text, OUT score double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_translate_nbest' LANGUAGE C STABLE PARALLEL SAFE ROWS 4;
COMMENT ON FUNCTION tfm_translate_nbest(text, text, integer, integer) IS
  'the n best translations with their scores (log-probability over the length penalty)';

CREATE FUNCTION tfm_attention(model text, source text, target text DEFAULT NULL,
                              OUT layer integer, OUT head integer, OUT query_pos integer, OUT key_pos integer,
                              OUT query_piece text, OUT key_piece text, OUT weight double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_attention' LANGUAGE C STABLE PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION tfm_attention(text, text, text) IS
  'attention weights as rows: self-attention of every layer (classify, lm), or the cross-attention between a source and a given or produced target (seq2seq)';
