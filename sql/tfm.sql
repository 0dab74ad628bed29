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
-- tfm 0.1 → 0.2: owners and privileges, backups, renames.
-- The install script of 0.2 is sql/tfm.sql (0.1) followed by this file, so a
-- fresh install and an upgraded one are the same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- owners and grants.  Every model and tokenizer has an owner; acl_use and
-- acl_train list the roles granted use or train (0, shown as '-', is PUBLIC).
-- Rows made before 0.2 belong to the role that runs the update.

ALTER TABLE tfm.models
    ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole,
    ADD COLUMN acl_use regrole[] NOT NULL DEFAULT '{}',
    ADD COLUMN acl_train regrole[] NOT NULL DEFAULT '{}';
ALTER TABLE tfm.tokenizers
    ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole,
    ADD COLUMN acl_use regrole[] NOT NULL DEFAULT '{}',
    ADD COLUMN acl_train regrole[] NOT NULL DEFAULT '{}';
-- tfm's functions always name the owner
ALTER TABLE tfm.models ALTER COLUMN owner DROP DEFAULT;
ALTER TABLE tfm.tokenizers ALTER COLUMN owner DROP DEFAULT;
COMMENT ON COLUMN tfm.models.owner IS 'the role that created the model: it alone (with its members and superusers) may drop, rename or grant';
COMMENT ON COLUMN tfm.models.acl_use IS 'roles granted use (inference, evaluation, tensors, copy); 0 = PUBLIC';
COMMENT ON COLUMN tfm.models.acl_train IS 'roles granted train (train, overwrite, deploy; implies use); 0 = PUBLIC';
COMMENT ON COLUMN tfm.tokenizers.owner IS 'the role that created the tokenizer';
COMMENT ON COLUMN tfm.tokenizers.acl_use IS 'roles granted use (tokenize, read the vocabulary, build models on it); 0 = PUBLIC';
COMMENT ON COLUMN tfm.tokenizers.acl_train IS 'roles granted train (implies use); 0 = PUBLIC';

-- Does role who hold the privileges of owner or of one of grantees?
CREATE FUNCTION tfm.role_may(who oid, owner regrole, grantees regrole[]) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_has_role(who, owner, 'USAGE')
          OR EXISTS (SELECT FROM unnest(grantees) g WHERE g = 0 OR pg_has_role(who, g, 'USAGE')) $$;

CREATE FUNCTION tfm.may_use_model(model_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.models m WHERE m.id = model_id
                     AND tfm.role_may(who, m.owner, m.acl_use || m.acl_train)) $$;

-- a tokenizer is usable by its own grants or through a model that uses it
CREATE FUNCTION tfm.may_use_tokenizer(tokenizer_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.tokenizers t WHERE t.id = tokenizer_id
                     AND (tfm.role_may(who, t.owner, t.acl_use || t.acl_train)
                          OR EXISTS (SELECT FROM tfm.models m
                                     WHERE t.name IN (m.tokenizer, m.target_tokenizer)
                                       AND tfm.role_may(who, m.owner, m.acl_use || m.acl_train)
                                       -- only while the model's owner may still use it
                                       AND tfm.role_may(m.owner, t.owner, t.acl_use || t.acl_train)))) $$;

CREATE FUNCTION tfm.current_role_oid() RETURNS oid
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT oid FROM pg_roles WHERE rolname = current_user $$;

-- The catalog is read by everyone with USAGE on schema tfm and written only
-- by tfm's functions (as the extension's owner).  Weights, vocabularies and
-- training history are row-level secured: a role sees the rows of the
-- models and tokenizers it may use.
GRANT USAGE ON SCHEMA tfm TO PUBLIC;
GRANT SELECT ON tfm.models, tfm.tokenizers, tfm.deployed, tfm.tensors, tfm.history,
                tfm.vocab, tfm.merges, tfm.model_list, tfm.tokenizer_list, tfm.progress TO PUBLIC;
ALTER TABLE tfm.tensors ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.history ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.vocab ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.merges ENABLE ROW LEVEL SECURITY;
CREATE POLICY tensors_of_usable_models ON tfm.tensors FOR SELECT
    USING (tfm.may_use_model(model_id, tfm.current_role_oid()));
CREATE POLICY history_of_usable_models ON tfm.history FOR SELECT
    USING (tfm.may_use_model(model_id, tfm.current_role_oid()));
CREATE POLICY vocab_of_usable_tokenizers ON tfm.vocab FOR SELECT
    USING (tfm.may_use_tokenizer(tokenizer_id, tfm.current_role_oid()));
CREATE POLICY merges_of_usable_tokenizers ON tfm.merges FOR SELECT
    USING (tfm.may_use_tokenizer(tokenizer_id, tfm.current_role_oid()));

-- A tensor of more than 4,194,304 values is stored in several rows, chunk
-- 0, 1, ... (each row a real[] far below PostgreSQL's 1 GB value limit).
ALTER TABLE tfm.tensors ADD COLUMN chunk integer NOT NULL DEFAULT 0 CHECK (chunk >= 0);
ALTER TABLE tfm.tensors DROP CONSTRAINT tensors_pkey, ADD PRIMARY KEY (model_id, name, chunk);
COMMENT ON COLUMN tfm.tensors.chunk IS 'a large tensor''s values are the concatenation of its rows'' data in chunk order';

-- tfm_tensor checks use instead of returning NULL for a model one may not use
CREATE OR REPLACE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mid integer;
BEGIN
    SELECT m.id INTO mid FROM tfm.models m WHERE m.name = model;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT tfm.may_use_model(mid, tfm.current_role_oid()) THEN
        RAISE EXCEPTION 'permission denied for model "%": use privilege required', model
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (SELECT count(*) FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor) > 1 THEN
        RETURN (SELECT array_agg(u.v ORDER BY t.chunk, u.o)
                FROM tfm.tensors t, unnest(t.data) WITH ORDINALITY AS u(v, o)
                WHERE t.model_id = mid AND t.name = tensor);
    END IF;
    RETURN (SELECT t.data FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor);
END
$$;

CREATE FUNCTION tfm.grantee_names(grantees regrole[]) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT array_agg(CASE WHEN g = 0 THEN 'PUBLIC' ELSE g::text END ORDER BY g::text)
      FROM unnest(grantees) g $$;

CREATE OR REPLACE VIEW tfm.model_list AS
SELECT m.name, m.task, m.tokenizer, m.parameters,
       (m.config->>'d_model')::int AS d_model,
       (m.config->>'enc_layers')::int + (m.config->>'dec_layers')::int AS layers,
       m.steps, m.version, m.created_at, m.updated_at,
       m.owner, tfm.grantee_names(m.acl_use) AS use_granted,
       tfm.grantee_names(m.acl_train) AS train_granted
FROM tfm.models m ORDER BY m.name;

CREATE OR REPLACE VIEW tfm.tokenizer_list AS
SELECT t.name, t.kind, t.vocab_size, (t.options->>'n_merges')::int AS merges,
       (SELECT array_agg(m.name ORDER BY m.name) FROM tfm.models m
         WHERE m.tokenizer = t.name OR m.target_tokenizer = t.name) AS used_by,
       t.created_at,
       t.owner, tfm.grantee_names(t.acl_use) AS use_granted,
       tfm.grantee_names(t.acl_train) AS train_granted
FROM tfm.tokenizers t ORDER BY t.name;

CREATE FUNCTION tfm_grant(object text, grantee text, privilege text DEFAULT 'use',
                          object_type text DEFAULT NULL) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_grant' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_grant(text, text, text, text) IS
  'grant use or train on a model or tokenizer to a role or PUBLIC (owner only)';
CREATE FUNCTION tfm_revoke(object text, grantee text, privilege text DEFAULT 'use',
                           object_type text DEFAULT NULL) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_revoke' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_revoke(text, text, text, text) IS
  'revoke use (and with it train) or train on a model or tokenizer (owner only)';
CREATE FUNCTION tfm_rename_model(name text, new_name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_rename_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_rename_model(text, text) IS 'rename a model (owner only)';

-- ---------------------------------------------------------------------------
-- backups: pg_dump keeps every row of the catalog and the sequences' places

SELECT pg_catalog.pg_extension_config_dump('tfm.tokenizers', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.tokenizers_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.vocab', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.merges', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.models', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.version_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.tensors', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.history', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.deployed', '');

-- ---------------------------------------------------------------------------
-- published checkpoints: Hugging Face config.json + model.safetensors (+
-- tokenizer.json) become a tfm model owned by the caller (GPT-2 for now)

CREATE FUNCTION tfm_import(name text, config jsonb, weights bytea,
                           tokenizer jsonb DEFAULT NULL, task text DEFAULT NULL,
                           OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import(text, jsonb, bytea, jsonb, text) IS
  'import a Hugging Face checkpoint (config.json, model.safetensors, tokenizer.json contents) as a model';
CREATE FUNCTION tfm_import_files(name text, directory text, task text DEFAULT NULL,
                                 OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import_files' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import_files(text, text, text) IS
  'import config.json, model.safetensors and tokenizer.json from a server directory (superuser or pg_read_server_files)';

-- language models on token ids (int[] prompts taken as given, nothing added):
-- a model imported without a tokenizer's text, or a reference's exact ids
CREATE FUNCTION tfm_generate_tokens(model text, prompt integer[], max_tokens integer DEFAULT 200,
                                    temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                                    top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                                    OUT pos integer, OUT id integer, OUT piece text, OUT logprob double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_generate_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 200;
COMMENT ON FUNCTION tfm_generate_tokens(text, integer[], integer, real, integer, real, bigint, text) IS
  'the tokens generated after a prompt of token ids, one row each, with their log-probability';
CREATE FUNCTION tfm_next_tokens(model text, prompt integer[], k integer DEFAULT 10,
                                OUT rank integer, OUT id integer, OUT piece text, OUT probability double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_next_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 10;
COMMENT ON FUNCTION tfm_next_tokens(text, integer[], integer) IS
  'the k most likely next tokens after a prompt of token ids';
CREATE FUNCTION tfm_score(model text, input integer[], OUT logprob double precision, OUT tokens integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_score' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_score(text, integer[]) IS
  'the log-probability of a sequence of token ids under a language model (every id after the first)';
CREATE FUNCTION tfm_tokenizer_import(name text, tokenizer jsonb) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_tokenizer_import_json' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_tokenizer_import(text, jsonb) IS
  'import a Hugging Face tokenizer.json (byte-level BPE) as a tokenizer';

-- ---------------------------------------------------------------------------
-- embeddings for search

CREATE FUNCTION tfm_cosine(a real[], b real[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'tfm_cosine' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_cosine(real[], real[]) IS
  'cosine similarity of two vectors of the same length (NULL if either is all zeros)';
CREATE FUNCTION tfm_cosine_distance(a real[], b real[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'tfm_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_cosine_distance(real[], real[]) IS '1 - tfm_cosine(a, b): the <=> operator';
-- a <=> b: cosine distance, as pgvector spells it, so ORDER BY e <=> q LIMIT k finds the nearest
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = real[], FUNCTION = tfm_cosine_distance,
                     COMMUTATOR = <=>);

-- ---------------------------------------------------------------------------
-- inference precision: tfm.precision (auto, fp32, bf16, int8) and a model's
-- own default; tfm_info says what runs and why

DROP FUNCTION tfm_info();
CREATE FUNCTION tfm_info(OUT version text, OUT blis_kernels text, OUT kernel_choice text,
                         OUT threads integer, OUT inference_precision text, OUT precision_reason text,
                         OUT bf16_kernel text, OUT int8_kernel text, OUT lowp_kernel_choice text)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_info' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_info() IS
  'tfm''s version, the BLIS kernel set and why, the thread count, the inference precision tfm.precision gives here and why, and the bf16/int8 kernels this CPU runs';

CREATE FUNCTION tfm_set_precision(model text, setting text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_set_precision' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_set_precision(text, text) IS
  'a model''s own inference precision (fp32, bf16, int8; auto removes it), used when tfm.precision is auto';

-- training that survives a cancel: CALL tfm_fit commits a checkpoint at
-- every epoch's end and every checkpoint_every; keep => 'last' | 'best'.

-- a row per checkpoint as well as per epoch: checkpoint 0 is the epoch's end,
-- 1, 2, ... the mid-epoch checkpoints; kept marks the epoch whose weights the
-- run left in the model
ALTER TABLE tfm.history
    ADD COLUMN checkpoint integer NOT NULL DEFAULT 0,
    ADD COLUMN rows_done bigint,
    ADD COLUMN kept boolean NOT NULL DEFAULT false;
ALTER TABLE tfm.history DROP CONSTRAINT history_pkey;
ALTER TABLE tfm.history ADD PRIMARY KEY (model_id, run_started, epoch, checkpoint);
-- runs before 0.2 kept their last epoch
UPDATE tfm.history h SET kept = true
 WHERE epoch = (SELECT max(epoch) FROM tfm.history l
                 WHERE l.model_id = h.model_id AND l.run_started = h.run_started);
COMMENT ON TABLE tfm.history IS 'one row per training epoch saved, and per tfm_fit checkpoint';
COMMENT ON COLUMN tfm.history.checkpoint IS '0: the end of the epoch; n > 0: the n-th checkpoint tfm_fit committed inside it';
COMMENT ON COLUMN tfm.history.rows_done IS 'rows of the query read in the epoch when the row was written';
COMMENT ON COLUMN tfm.history.kept IS 'the model was left with this epoch''s weights (keep => ''last'' or ''best'')';

-- The interrupted (or running) tfm_fit run of a model: what it needs to go
-- on bit for bit from its last checkpoint (the weights are the model's own,
-- at model_version).  state is a versioned binary record (src/pg/checkpoint.c).
CREATE TABLE tfm.checkpoints (
    model_id       integer PRIMARY KEY REFERENCES tfm.models (id) ON DELETE CASCADE,
    run_started    timestamptz NOT NULL,
    model_version  bigint NOT NULL,
    epoch          integer NOT NULL,
    rows_done      bigint NOT NULL,
    steps          bigint NOT NULL,
    query          text NOT NULL,
    options        jsonb NOT NULL,
    state          bytea NOT NULL,
    pid            integer NOT NULL,
    started_by     regrole NOT NULL,
    saved_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE tfm.checkpoints IS 'the last checkpoint of a tfm_fit run that has not finished: CALL tfm_fit(model, resume => true) continues it';
COMMENT ON COLUMN tfm.checkpoints.epoch IS 'the epoch to go on with';
COMMENT ON COLUMN tfm.checkpoints.rows_done IS 'rows of the query that epoch has consumed (0: it starts afresh)';
COMMENT ON COLUMN tfm.checkpoints.pid IS 'the backend that wrote it';
COMMENT ON COLUMN tfm.checkpoints.started_by IS 'the role whose query the run reads: only it resumes without naming the query';

-- Adam's moments per tensor, and (keep => 'best') the best epoch's values,
-- as raw float4 arrays
CREATE TABLE tfm.checkpoint_tensors (
    model_id  integer NOT NULL REFERENCES tfm.checkpoints (model_id) ON DELETE CASCADE,
    name      text NOT NULL,
    adam_m    bytea NOT NULL,
    adam_v    bytea NOT NULL,
    best      bytea,
    PRIMARY KEY (model_id, name)
);
COMMENT ON TABLE tfm.checkpoint_tensors IS 'the optimizer state of a checkpoint, per tensor';

GRANT SELECT ON tfm.checkpoints, tfm.checkpoint_tensors TO PUBLIC;
ALTER TABLE tfm.checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.checkpoint_tensors ENABLE ROW LEVEL SECURITY;
-- a run's query and optimizer state: for roles that may train the model
CREATE FUNCTION tfm.may_train_model(model_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.models m WHERE m.id = model_id
                     AND tfm.role_may(who, m.owner, m.acl_train)) $$;
CREATE POLICY checkpoints_of_trainable_models ON tfm.checkpoints FOR SELECT
    USING (tfm.may_train_model(model_id, tfm.current_role_oid()));
CREATE POLICY checkpoint_tensors_of_trainable_models ON tfm.checkpoint_tensors FOR SELECT
    USING (tfm.may_train_model(model_id, tfm.current_role_oid()));
SELECT pg_catalog.pg_extension_config_dump('tfm.checkpoints', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.checkpoint_tensors', '');

-- tfm_train gains keep and reports the kept epoch
DROP FUNCTION tfm_train(text, text, integer, integer, real, integer, text, real, real, real,
                        real, bigint, interval, bigint, integer, integer);
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
    keep text DEFAULT NULL,
    OUT epoch integer, OUT steps bigint, OUT train_loss double precision,
    OUT val_loss double precision, OUT val_accuracy double precision,
    OUT tokens_per_s double precision, OUT seconds double precision, OUT kept boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_train IS
  'train a model on the rows of a query in one transaction; one row per epoch, kept marks the epoch the model keeps (keep => ''last'' or ''best'')';

CREATE PROCEDURE tfm_fit(
    model text,
    query text DEFAULT NULL,
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
    checkpoint_every interval DEFAULT '10 minutes',
    resume boolean DEFAULT false,
    keep text DEFAULT NULL)
AS 'MODULE_PATHNAME', 'tfm_fit' LANGUAGE C;  -- not STRICT: NULL means "the default"; query may be NULL to resume
COMMENT ON PROCEDURE tfm_fit IS
  'train like tfm_train, committing a checkpoint every epoch and every checkpoint_every; resume => true continues an interrupted run';

CREATE OR REPLACE VIEW tfm.progress AS
SELECT pid, usename, query_start AS started, state_change AS updated, query AS status
FROM pg_stat_activity
WHERE (query LIKE 'tfm\_train %' OR query LIKE 'tfm\_fit %') AND state = 'active';
-- tfm 0.2 → 0.3: batched embeddings, sharded checkpoints, mixed-precision training.
-- The install script of 0.3 is sql/tfm.sql (0.1) followed by the upgrade
-- scripts up to this one, so a fresh install and an upgraded one are the
-- same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.3'" to load this file. \quit

CREATE FUNCTION tfm_embed(model text, inputs text[], OUT ord integer, OUT embedding real[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_embed_batch' LANGUAGE C STABLE PARALLEL SAFE ROWS 100;
COMMENT ON FUNCTION tfm_embed(text, text[]) IS
  'the pooled representation of each text, (ord, embedding) in the array''s order, through batched forward passes (NULL gives NULL)';

-- sharded checkpoints (model.safetensors.index.json) import from a directory
COMMENT ON FUNCTION tfm_import_files(text, text, text) IS
  'import config.json, model.safetensors (or a sharded model.safetensors.index.json and its shards) and tokenizer.json from a server directory (superuser or pg_read_server_files)';

-- opt-in mixed-precision training: tfm_train and tfm_fit gain train_precision
-- ('fp32', the default, or 'bf16'; "precision" is an SQL keyword that a
-- named argument cannot be called by)
DROP FUNCTION tfm_train(text, text, integer, integer, real, integer, text, real, real, real,
                        real, bigint, interval, bigint, integer, integer, text);
DROP PROCEDURE tfm_fit(text, text, integer, integer, real, integer, text, real, real, real,
                       real, bigint, interval, bigint, integer, integer, interval, boolean, text);
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
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL,
    OUT epoch integer, OUT steps bigint, OUT train_loss double precision,
    OUT val_loss double precision, OUT val_accuracy double precision,
    OUT tokens_per_s double precision, OUT seconds double precision, OUT kept boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_train IS
  'train a model on the rows of a query in one transaction; one row per epoch, kept marks the epoch the model keeps (keep => ''last'' or ''best''); precision => ''bf16'' trains in mixed precision';

CREATE PROCEDURE tfm_fit(
    model text,
    query text DEFAULT NULL,
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
    checkpoint_every interval DEFAULT '10 minutes',
    resume boolean DEFAULT false,
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL)
AS 'MODULE_PATHNAME', 'tfm_fit' LANGUAGE C;  -- not STRICT: NULL means "the default"; query may be NULL to resume
COMMENT ON PROCEDURE tfm_fit IS
  'train like tfm_train, committing a checkpoint every epoch and every checkpoint_every; resume => true continues an interrupted run';
-- tfm 0.3 → 0.4: hardening against hostile tenants and runaway work — one
-- limit on names, deployments as owned aliases with history and rollback,
-- bounded workspaces, and the equivalents of REASSIGN OWNED / DROP OWNED.
-- The install script of 0.4 is sql/tfm.sql (0.1) followed by the upgrade
-- scripts up to this one, so a fresh install and an upgraded one are the
-- same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.4'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- names: one limit for models, tokenizers and aliases (TFM_NAME_MAX in
-- src/pg/tfm_pg.h).  tfm's functions check it first (SQLSTATE 42622); the
-- catalog holds it too.  A name made longer by 0.3 (which could not be used:
-- 0.3 compared a cut copy) stays until renamed: the constraint is then left
-- NOT VALID, with a warning naming it.

ALTER TABLE tfm.models ADD CONSTRAINT models_name_length CHECK (octet_length(name) <= 127) NOT VALID;
ALTER TABLE tfm.tokenizers ADD CONSTRAINT tokenizers_name_length CHECK (octet_length(name) <= 127) NOT VALID;
DO $$
BEGIN
    IF EXISTS (SELECT FROM tfm.models WHERE octet_length(name) > 127) THEN
        RAISE WARNING 'tfm: models with names over 127 bytes: %; rename them with tfm_rename_model',
            (SELECT string_agg(quote_literal(left(name, 40) || '...'), ', ') FROM tfm.models WHERE octet_length(name) > 127);
    ELSE
        ALTER TABLE tfm.models VALIDATE CONSTRAINT models_name_length;
    END IF;
    IF EXISTS (SELECT FROM tfm.tokenizers WHERE octet_length(name) > 127) THEN
        RAISE WARNING 'tfm: tokenizers with names over 127 bytes: %',
            (SELECT string_agg(quote_literal(left(name, 40) || '...'), ', ') FROM tfm.tokenizers WHERE octet_length(name) > 127);
    ELSE
        ALTER TABLE tfm.tokenizers VALIDATE CONSTRAINT tokenizers_name_length;
    END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- deployments: named aliases with owners, their history, and rollback.
-- tfm.deployed (one model per task, writable by any role with train on the
-- new model) is replaced: its classify row becomes the alias 'default',
-- which tfm_classify(text) resolves; rows of other tasks, which no function
-- read, become 'default_lm' / 'default_seq2seq' where no model has the name.

CREATE TABLE tfm.aliases (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> '' AND octet_length(name) <= 127),
    model_id    integer NOT NULL REFERENCES tfm.models (id) ON DELETE CASCADE,
    owner       regrole NOT NULL,
    acl_train   regrole[] NOT NULL DEFAULT '{}',
    history_id  bigint,
    deployed_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE tfm.aliases IS
  'deployment aliases: a name usable wherever a model name is, owned by its creator; acl_train lists the roles that may redeploy or roll it back';

CREATE TABLE tfm.alias_history (
    id          bigserial PRIMARY KEY,
    alias       text NOT NULL,
    model_id    integer REFERENCES tfm.models (id) ON DELETE SET NULL,
    model       text NOT NULL,
    previous    bigint,
    action      text NOT NULL CHECK (action IN ('deploy', 'rollback')),
    by_role     regrole NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE tfm.alias_history IS
  'every deployment and rollback of an alias; previous is the entry it replaced (tfm_rollback goes back to it); model is the name at the time';
ALTER TABLE tfm.aliases ADD FOREIGN KEY (history_id) REFERENCES tfm.alias_history (id);

DO $$
DECLARE
    d record;
    alias text;
    h bigint;
BEGIN
    FOR d IN SELECT dp.task, m.id, m.name, m.owner FROM tfm.deployed dp JOIN tfm.models m ON m.name = dp.model LOOP
        alias := CASE d.task WHEN 'classify' THEN 'default' ELSE 'default_' || d.task END;
        IF EXISTS (SELECT FROM tfm.models WHERE name = alias) THEN
            RAISE WARNING 'tfm: the deployed % model "%" is not kept as alias "%": a model has that name', d.task, d.name, alias;
            CONTINUE;
        END IF;
        INSERT INTO tfm.alias_history (alias, model_id, model, action, by_role)
            VALUES (alias, d.id, d.name, 'deploy', d.owner) RETURNING id INTO h;
        INSERT INTO tfm.aliases (name, model_id, owner, history_id) VALUES (alias, d.id, d.owner, h);
    END LOOP;
END
$$;
ALTER EXTENSION tfm DROP TABLE tfm.deployed;
DROP TABLE tfm.deployed;

CREATE VIEW tfm.deployments AS
SELECT a.name AS alias, m.name AS model, m.task, a.owner,
       tfm.grantee_names(a.acl_train) AS train_granted,
       a.deployed_at, h.by_role AS deployed_by, h.action
FROM tfm.aliases a JOIN tfm.models m ON m.id = a.model_id
LEFT JOIN tfm.alias_history h ON h.id = a.history_id
ORDER BY a.name;
COMMENT ON VIEW tfm.deployments IS 'every alias, the model it deploys, its owner and who deployed it';

-- 0.3's table, as a view of the alias 'default'
CREATE VIEW tfm.deployed AS
SELECT m.task, m.name AS model FROM tfm.aliases a JOIN tfm.models m ON m.id = a.model_id
WHERE a.name = 'default';
COMMENT ON VIEW tfm.deployed IS 'the model deployed as ''default'' (what tfm_classify(text) uses); kept from 0.3, see tfm.deployments';

GRANT SELECT ON tfm.aliases, tfm.alias_history, tfm.deployments, tfm.deployed TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('tfm.aliases', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.aliases_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.alias_history', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.alias_history_id_seq', '');

DROP FUNCTION tfm_deploy(text);
CREATE FUNCTION tfm_deploy(model text, alias text DEFAULT 'default') RETURNS text
AS 'MODULE_PATHNAME', 'tfm_deploy' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_deploy(text, text) IS
  'point an alias (default ''default'', the one tfm_classify(text) uses) at a model; the alias''s owner, its train grantees or the database owner may replace it';
CREATE FUNCTION tfm_rollback(alias text DEFAULT 'default') RETURNS text
AS 'MODULE_PATHNAME', 'tfm_rollback' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_rollback(text) IS 'point an alias back at the model it deployed before the current one';
CREATE FUNCTION tfm_undeploy(alias text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_undeploy' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_undeploy(text) IS 'drop an alias (its history stays in tfm.alias_history)';
COMMENT ON FUNCTION tfm_classify(text) IS 'the most likely label of a text, by the model deployed as ''default''';

-- ---------------------------------------------------------------------------
-- roles: DROP ROLE cannot see tfm's owners and grantees (role OIDs in rows).
-- tfm_reassign_owned and tfm_drop_owned do for tfm's objects what REASSIGN
-- OWNED and DROP OWNED do for PostgreSQL's (run them before DROP ROLE);
-- tfm.orphaned lists what a dropped role left behind.

CREATE FUNCTION tfm_reassign_owned(old_role text, new_role text) RETURNS bigint
AS 'MODULE_PATHNAME', 'tfm_reassign_owned' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_reassign_owned(text, text) IS
  'the models, tokenizers and aliases of old_role (a role name, or the OID of a dropped role: superuser) now belong to new_role';
CREATE FUNCTION tfm_drop_owned(role text) RETURNS bigint
AS 'MODULE_PATHNAME', 'tfm_drop_owned' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_drop_owned(text) IS
  'drop the models, tokenizers (unless other roles'' models use them) and aliases of a role, and remove every grant to it';

CREATE VIEW tfm.orphaned AS
SELECT kind, name, role::oid AS role, what FROM (
    SELECT 'model' AS kind, name, owner AS role, 'owner' AS what FROM tfm.models
    UNION ALL SELECT 'model', name, unnest(acl_use), 'use' FROM tfm.models
    UNION ALL SELECT 'model', name, unnest(acl_train), 'train' FROM tfm.models
    UNION ALL SELECT 'tokenizer', name, owner, 'owner' FROM tfm.tokenizers
    UNION ALL SELECT 'tokenizer', name, unnest(acl_use), 'use' FROM tfm.tokenizers
    UNION ALL SELECT 'tokenizer', name, unnest(acl_train), 'train' FROM tfm.tokenizers
    UNION ALL SELECT 'alias', name, owner, 'owner' FROM tfm.aliases
    UNION ALL SELECT 'alias', name, unnest(acl_train), 'train' FROM tfm.aliases
) o
WHERE role::oid <> 0 AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid = o.role::oid)
ORDER BY kind, name, what;
COMMENT ON VIEW tfm.orphaned IS
  'owners and grantees of tfm objects that are no longer roles (dropped without tfm_reassign_owned or tfm_drop_owned)';
GRANT SELECT ON tfm.orphaned TO PUBLIC;

-- ---------------------------------------------------------------------------
-- tfm.work_mem bounds the memory of a call's batches; this is what a pass
-- of a shape needs of it (the size its error names)
CREATE FUNCTION tfm_workspace_bytes(model text, batch integer, length integer,
                                    target_length integer DEFAULT 0, training boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'tfm_workspace_bytes' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_workspace_bytes(text, integer, integer, integer, boolean) IS
  'bytes of tfm.work_mem a pass of batch rows of length tokens (seq2seq: and target_length) needs';

-- a model by name or alias as the SQL-language functions read it (tfm_tensor,
-- tfm_gguf_kept): its id and version, or the errors every function gives
-- (NULL, a name over the limit, no such model, no use privilege)
CREATE FUNCTION tfm.usable_model(model text, OUT model_id integer, OUT model_version bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF model IS NULL THEN
        RAISE EXCEPTION 'model must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF octet_length(model) > 127 THEN
        RAISE EXCEPTION 'model name "%..." is too long', left(model, 32)
            USING ERRCODE = 'name_too_long';
    END IF;
    SELECT m.id, m.version INTO model_id, model_version FROM tfm.models m
     WHERE m.name = model OR m.id = (SELECT a.model_id FROM tfm.aliases a WHERE a.name = model)
     ORDER BY m.name = model DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT tfm.may_use_model(model_id, tfm.current_role_oid()) THEN
        RAISE EXCEPTION 'permission denied for model "%": use privilege required', model
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

-- tfm_tensor takes an alias as every other function does, and the name limit
CREATE OR REPLACE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mid integer := (tfm.usable_model(model)).model_id;
BEGIN
    IF (SELECT count(*) FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor) > 1 THEN
        RETURN (SELECT array_agg(u.v ORDER BY t.chunk, u.o)
                FROM tfm.tensors t, unnest(t.data) WITH ORDINALITY AS u(v, o)
                WHERE t.model_id = mid AND t.name = tensor);
    END IF;
    RETURN (SELECT t.data FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor);
END
$$;

-- ---------------------------------------------------------------------------
-- jobs: a source table's rows turned into a destination table of model
-- outputs, keyed by the source's primary key, and kept current by triggers
-- that enqueue keys (src/pg/sql/jobs/job.c, src/pg/storage/jobs/jobs.c).  Keys are
-- kept as text[] (each key column's text form, in key order); a queue row
-- with a NULL key records a TRUNCATE of the source.

CREATE TABLE tfm.job_defs (
    id           serial PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name <> '' AND octet_length(name) <= 127),
    owner        regrole NOT NULL,
    source       regclass NOT NULL,
    key_columns  text[] NOT NULL,
    key_types    text[] NOT NULL,
    input        text NOT NULL,
    model        text NOT NULL,
    task         text NOT NULL CHECK (task IN ('embed', 'classify', 'predict_proba', 'generate', 'translate')),
    destination  regclass NOT NULL,
    options      jsonb NOT NULL DEFAULT '{}',
    search_path  text NOT NULL,
    state        text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
    rows_done    bigint NOT NULL DEFAULT 0,
    rows_deleted bigint NOT NULL DEFAULT 0,
    rows_failed  bigint NOT NULL DEFAULT 0,
    last_error   text,
    last_error_at timestamptz,
    last_run_at  timestamptz,
    run_started_at timestamptz,
    run_rows     bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE tfm.job_defs IS
  'one row per job (tfm_job_create): source, key columns, input expression, model, task, destination, options, state and counters (rows_done: outputs written, rows_deleted: outputs removed, rows_failed: rows that went to tfm.job_errors, all cumulative)';

CREATE TABLE tfm.job_queue (
    id          bigserial NOT NULL,
    job_id      integer NOT NULL,
    key         text[],
    enqueued_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_queue_job_id ON tfm.job_queue (job_id, id);
CREATE INDEX job_queue_job_key ON tfm.job_queue (job_id, key);
COMMENT ON TABLE tfm.job_queue IS
  'keys of source rows a job must (re)process, written by the triggers on the source; a NULL key: the source was truncated';

CREATE TABLE tfm.job_errors (
    job_id   integer NOT NULL REFERENCES tfm.job_defs (id) ON DELETE CASCADE,
    key      text[] NOT NULL,
    message  text NOT NULL,
    sqlstate text NOT NULL,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, key)
);
COMMENT ON TABLE tfm.job_errors IS
  'source rows a job could not process (NULL input, an error in the input expression or the model call), one row per key; cleared when the key is processed again';

-- the keys in the queue and errors are the source's values: their job's
-- owner (and members, and superusers) see them
ALTER TABLE tfm.job_errors ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_errors_of_own_jobs ON tfm.job_errors FOR SELECT
    USING (pg_catalog.pg_has_role((SELECT j.owner FROM tfm.job_defs j WHERE j.id = job_id), 'USAGE'));
GRANT SELECT ON tfm.job_defs, tfm.job_errors TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('tfm.job_defs', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.job_defs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.job_queue', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.job_queue_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.job_errors', '');

-- outputs by model version, read from the destination with the caller's
-- rights (NULL when the caller may not read it)
CREATE FUNCTION tfm.job_versions(job_id integer) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dest regclass;
    r jsonb;
BEGIN
    SELECT j.destination INTO dest FROM tfm.job_defs j WHERE j.id = job_id;
    IF dest IS NULL OR NOT EXISTS (SELECT FROM pg_class WHERE oid = dest)
       OR NOT has_table_privilege(dest, 'SELECT') THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT coalesce(jsonb_object_agg(coalesce(v::text, ''none''), n), ''{}'') '
                   'FROM (SELECT model_version AS v, count(*) AS n FROM %s GROUP BY 1) s', dest) INTO r;
    RETURN r;
END
$$;

CREATE VIEW tfm.jobs AS
SELECT j.name, j.owner, j.source, j.destination, j.task, j.model, j.state,
       j.rows_done,
       (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id) AS rows_pending,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.job_id = j.id) AS rows_failed,
       j.rows_deleted,
       (SELECT m.version FROM tfm.models m
         WHERE m.name = j.model OR m.id = (SELECT a.model_id FROM tfm.aliases a WHERE a.name = j.model)
         ORDER BY m.name = j.model DESC LIMIT 1) AS model_version,
       tfm.job_versions(j.id) AS outputs_by_version,
       round((j.run_rows / nullif(extract(epoch FROM j.last_run_at - j.run_started_at), 0))::numeric, 1)
         AS rows_per_second,
       CASE WHEN j.run_rows > 0 AND j.last_run_at > j.run_started_at THEN
         (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
           * ((j.last_run_at - j.run_started_at) / j.run_rows) END AS eta,
       j.last_error, j.last_error_at, j.run_started_at, j.last_run_at, j.options, j.input, j.created_at
FROM tfm.job_defs j
ORDER BY j.name;
COMMENT ON VIEW tfm.jobs IS
  'every job: source, destination, task, model, state; rows done (outputs written), pending (keys queued), failed (keys in tfm.job_errors), deleted; the model''s current version and the destination''s outputs by model version (NULL if you cannot read it); the last run''s rows per second and the time the pending rows would take at that speed';
GRANT SELECT ON tfm.jobs TO PUBLIC;

CREATE FUNCTION tfm.job_enqueue() RETURNS trigger
AS 'MODULE_PATHNAME', 'tfm_job_enqueue' LANGUAGE C;
COMMENT ON FUNCTION tfm.job_enqueue() IS
  'the trigger of a job on its source: enqueues the changed row''s key (a NULL key for TRUNCATE); arguments: the job''s id, then the key columns';

CREATE FUNCTION tfm_job_create(name text, source regclass, input text, model text, task text,
                               destination regclass DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS regclass
AS 'MODULE_PATHNAME', 'tfm_job_create' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_job_create(text, regclass, text, text, text, regclass, jsonb) IS
  'a job that keeps a destination table of model outputs (task embed, classify, predict_proba, generate or translate) for the rows of a source table; creates the destination and the triggers, queues every existing row; returns the destination';

CREATE PROCEDURE tfm_job_run(name text, batches integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'tfm_job_run' LANGUAGE C;
COMMENT ON PROCEDURE tfm_job_run(text, integer) IS
  'process everything a job has pending, in batches, committing after each (stops after batches batches when given)';

CREATE FUNCTION tfm_job_pause(name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_job_pause' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_job_pause(text) IS 'pause a job: tfm_job_run does nothing (its triggers go on queueing keys)';
CREATE FUNCTION tfm_job_resume(name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_job_resume' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_job_resume(text) IS 'resume a paused job';
CREATE FUNCTION tfm_job_drop(name text, drop_destination boolean DEFAULT false) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_job_drop' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_job_drop(text, boolean) IS
  'drop a job: its triggers, queue and errors; the destination table is kept unless drop_destination';

-- tfm's background job workers (shared_preload_libraries = 'tfm',
-- tfm.job_workers): which worker runs which job (src/pg/runtime/job_worker.c)
CREATE FUNCTION tfm.job_workers_list(OUT pid integer, OUT database oid, OUT job text, OUT state text,
                                     OUT batches bigint, OUT rows_done bigint, OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_job_workers_list' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm.job_workers_list() IS
  'tfm''s background job workers: process id, database, the job it runs or the last that had work, state (starting, running, idle), batches and rows since it started, the current run''s start or (idle) its last batch';
CREATE VIEW tfm.job_workers AS
SELECT w.pid, d.datname AS database, w.job, w.state, w.batches, w.rows_done, w.since
FROM tfm.job_workers_list() w LEFT JOIN pg_catalog.pg_database d ON d.oid = w.database
ORDER BY w.pid;
COMMENT ON VIEW tfm.job_workers IS
  'tfm''s background job workers (when tfm is in shared_preload_libraries and tfm.job_workers > 0): which worker runs which job, in which database; rows_done counts outputs written, rows failed and outputs deleted';
GRANT SELECT ON tfm.job_workers TO PUBLIC;

-- training defaults that regularise with the budget: held-out rows by
-- default, an evaluation every epoch (or every few steps of a run of few
-- long epochs), keep => 'best' for every task, early stopping after
-- patience evaluations without improvement, and dropout and weight decay
-- from the planned passes; each result row and tfm.history row says what
-- was held out, chosen and kept, and why
ALTER TABLE tfm.history
    ADD COLUMN val_rows bigint,
    ADD COLUMN dropout real,
    ADD COLUMN weight_decay real,
    ADD COLUMN note text;
COMMENT ON COLUMN tfm.history.val_rows IS 'rows (lm: sequences of max_len tokens) held out for validation';
COMMENT ON COLUMN tfm.history.dropout IS 'the dropout the run trained with (chosen from the planned passes for a model created without one)';
COMMENT ON COLUMN tfm.history.weight_decay IS 'the weight decay the run trained with (chosen from the planned passes unless given)';
COMMENT ON COLUMN tfm.history.note IS 'what was held out, what the plan chose, the evaluation''s outcome and (on the kept row) why it was kept';
COMMENT ON COLUMN tfm.history.checkpoint IS '0: the end of the epoch; n > 0: the n-th checkpoint tfm_fit committed, or the n-th evaluation, inside it';

DROP FUNCTION tfm_train(text, text, integer, integer, real, integer, text, real, real, real,
                        real, bigint, interval, bigint, integer, integer, text, text);
DROP PROCEDURE tfm_fit(text, text, integer, integer, real, integer, text, real, real, real,
                       real, bigint, interval, bigint, integer, integer, interval, boolean, text, text);
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
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL,
    patience integer DEFAULT NULL,
    checkpoint_activations boolean DEFAULT false,
    OUT epoch integer, OUT steps bigint, OUT train_loss double precision,
    OUT val_loss double precision, OUT val_accuracy double precision,
    OUT tokens_per_s double precision, OUT seconds double precision, OUT kept boolean,
    OUT val_rows bigint, OUT dropout real, OUT decay real, OUT note text)  -- decay: weight_decay is an argument
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_train IS
  'train a model on the rows of a query in one transaction; one row per evaluation (each epoch''s end, and mid-epoch in a run of few long epochs); kept marks the weights the model keeps (keep => ''best'', the default, or ''last''); patience evaluations without improvement stop the run';

CREATE PROCEDURE tfm_fit(
    model text,
    query text DEFAULT NULL,
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
    checkpoint_every interval DEFAULT '10 minutes',
    resume boolean DEFAULT false,
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL,
    patience integer DEFAULT NULL,
    checkpoint_activations boolean DEFAULT NULL)  -- NULL: false, or a resumed run's own
AS 'MODULE_PATHNAME', 'tfm_fit' LANGUAGE C;  -- not STRICT: NULL means "the default"; query may be NULL to resume
COMMENT ON PROCEDURE tfm_fit IS
  'train like tfm_train, committing a checkpoint every epoch and every checkpoint_every; resume => true continues an interrupted run';

-- texts longer than a model's window, embedded in token windows (what an
-- embedding job with chunk_tokens stores: src/pg/sql/infer/embed_chunks.c)
CREATE FUNCTION tfm_embed_chunks(model text, inputs text[], chunk_tokens integer,
                                 chunk_overlap integer DEFAULT 0,
                                 OUT ord integer, OUT chunk integer, OUT chunk_start integer,
                                 OUT chunk_end integer, OUT embedding real[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_embed_chunks' LANGUAGE C STABLE PARALLEL SAFE ROWS 100;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_embed_chunks(text, text[], integer, integer) IS
  'each text cut into windows of chunk_tokens tokens overlapping by chunk_overlap: (ord, chunk from 0, chunk_start and chunk_end as 0-based character offsets, end exclusive, embedding) per window, through batched forward passes (a NULL text gives no rows)';

-- ---------------------------------------------------------------------------
-- tfm_info: which path attention's products and softmax take (avx512, avx2
-- or portable), beside the BLIS and bf16/int8 kernels

DROP FUNCTION tfm_info();
CREATE FUNCTION tfm_info(OUT version text, OUT blis_kernels text, OUT kernel_choice text,
                         OUT threads integer, OUT inference_precision text, OUT precision_reason text,
                         OUT bf16_kernel text, OUT int8_kernel text, OUT lowp_kernel_choice text,
                         OUT attention_kernels text, OUT int4_kernel text)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_info' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_info() IS
  'tfm''s version, the BLIS kernel set and why, the thread count, the inference precision tfm.precision gives here and why, the bf16/int8 kernels this CPU runs, attention''s kernels, and int4''s matrix-vector kernel';

-- ---------------------------------------------------------------------------
-- tfm_create_model: truncation (classify), which tokens of an input longer
-- than max_len the model trains on and reads: head_tail (the default, and
-- what every classifier did before), head or tail; stored in the config

DROP FUNCTION tfm_create_model(text, text, text, text[], integer, integer, integer, integer,
                               integer, integer, integer, integer, real, real, text, text, text,
                               text, boolean, boolean, text, bigint);
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
    truncation text DEFAULT NULL,
    OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_create_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_create_model IS
  'create a model (classify, lm or seq2seq) with initialised weights; a classifier''s truncation (head_tail, head or tail) says which tokens of a long input it trains on and reads';

-- ---------------------------------------------------------------------------
-- GGUF (llama.cpp's files): a llama or gpt2 GGUF file becomes a tfm model,
-- its tokenizer stored under the model's name; F32, F16, BF16, Q8_0,
-- Q4_0, Q4_K and Q6_K tensors, all converted to float32 at import
-- (src/pg/import/gguf_import.c)

CREATE FUNCTION tfm_import_gguf(name text, gguf bytea, tokenizer boolean DEFAULT true,
                                OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import_gguf' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import_gguf(text, bytea, boolean) IS
  'import a llama or gpt2 GGUF file''s contents (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K tensors, converted to float32) as a model, with the tokenizer of its metadata';
CREATE FUNCTION tfm_import_gguf_file(name text, path text, tokenizer boolean DEFAULT true,
                                     OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import_gguf_file' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import_gguf_file(text, text, boolean) IS
  'import a llama or gpt2 GGUF file of the server (superuser or pg_read_server_files) as a model, with the tokenizer of its metadata';

-- ---------------------------------------------------------------------------
-- chat: a conversation through the model's chat template (tokenizer_config.json's
-- Jinja, kept with the tokenizer in tfm.tokenizers.options->'chat'), then
-- generation until a stop id of the model (src/pg/sql/infer/chat.c)

CREATE FUNCTION tfm_chat(model text, messages jsonb, max_tokens integer DEFAULT 200,
                         temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                         top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_chat(text, jsonb, integer, real, integer, real, bigint, text) IS
  'the assistant''s reply to a conversation [{"role": ..., "content": ...}]: the model''s chat template applied, then generation (as tfm_generate) until one of its stop ids';

CREATE FUNCTION tfm_chat_prompt(model text, messages jsonb, add_generation_prompt boolean DEFAULT true)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_prompt' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_chat_prompt(text, jsonb, boolean) IS
  'the prompt tfm_chat builds for a conversation: the model''s chat template rendered';

CREATE FUNCTION tfm_chat_tokens(model text, messages jsonb, add_generation_prompt boolean DEFAULT true)
RETURNS integer[]
AS 'MODULE_PATHNAME', 'tfm_chat_tokens' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_chat_tokens(text, jsonb, boolean) IS
  'the token ids of tfm_chat_prompt: its added tokens as their ids, the text between them through the tokenizer';

CREATE FUNCTION tfm_chat_render(template text, messages jsonb, add_generation_prompt boolean DEFAULT true,
                                bos_token text DEFAULT NULL, eos_token text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_render_sql' LANGUAGE C IMMUTABLE PARALLEL SAFE;  -- not STRICT: NULL tokens are undefined
COMMENT ON FUNCTION tfm_chat_render(text, jsonb, boolean, text, text) IS
  'a Jinja chat template rendered for a conversation as transformers'' apply_chat_template renders it (tfm''s subset of Jinja)';

CREATE FUNCTION tfm_chat_template_import(model text, tokenizer_config jsonb, generation_config jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_template_import' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_chat_template_import(text, jsonb, jsonb) IS
  'keep a language model''s chat template, bos/eos texts, added tokens and stop ids from its tokenizer_config.json (and generation_config.json) for tfm_chat';

-- ---------------------------------------------------------------------------
-- SentencePiece Unigram tokenizers (kind 'unigram', imported from a
-- tokenizer.json by tfm_tokenizer_import / tfm_import): besides the rows,
-- the scores, piece types and normalizer / pre-tokenizer / decoder in
-- model_data, a versioned byte image the core validates when it loads it
-- (src/core/tokenizer/tok_unigram.c).  NULL for the other kinds.

ALTER TABLE tfm.tokenizers DROP CONSTRAINT tokenizers_kind_check;
ALTER TABLE tfm.tokenizers ADD CONSTRAINT tokenizers_kind_check
    CHECK (kind IN ('byte', 'char', 'word', 'bpe', 'wordpiece', 'unigram'));
ALTER TABLE tfm.tokenizers ADD COLUMN model_data bytea;
COMMENT ON COLUMN tfm.tokenizers.model_data IS
  'unigram tokenizers: scores, piece types, normalizer, pre-tokenizer and decoder (a byte image read by the core); NULL otherwise';

-- ---------------------------------------------------------------------------
-- What a GGUF import did with each tensor of the file (src/pg/import/gguf_import.c):
-- every tensor is converted to float32 into tfm.tensors (the weights of
-- fp32, bf16, int8 and training); a Q4_0 tensor whose rows are columns of a
-- matrix int4 packs also keeps the file's blocks as they are, and int4
-- inference of the version imported runs them (no dequantize-requantize).

CREATE TABLE tfm.gguf_tensors (
    model_id      integer NOT NULL REFERENCES tfm.models (id) ON DELETE CASCADE,
    version       bigint NOT NULL,
    gguf_name     text NOT NULL,
    gguf_type     text NOT NULL,
    tensor        text,
    first_column  integer,
    columns       integer,
    inputs        integer,
    rope_heads    integer NOT NULL DEFAULT 0,
    blocks        bytea,
    PRIMARY KEY (model_id, gguf_name)
);
COMMENT ON TABLE tfm.gguf_tensors IS
  'per tensor of an imported GGUF file: converted to float32 only (blocks NULL), or also kept as the file''s Q4_0 blocks for int4';
COMMENT ON COLUMN tfm.gguf_tensors.version IS 'the model version the tensor was imported into (kept blocks serve that version only)';
COMMENT ON COLUMN tfm.gguf_tensors.tensor IS 'the tfm tensor its values went to (NULL: a buffer)';
COMMENT ON COLUMN tfm.gguf_tensors.first_column IS 'kept: its rows are the int4 matrix''s output columns first_column .. first_column + columns - 1';
COMMENT ON COLUMN tfm.gguf_tensors.rope_heads IS 'kept: its rows are in llama.cpp''s rope order for that many heads (0: none)';
COMMENT ON COLUMN tfm.gguf_tensors.blocks IS 'kept: the file''s bytes of the tensor, as they are; NULL: converted to float32 only';
GRANT SELECT ON tfm.gguf_tensors TO PUBLIC;
ALTER TABLE tfm.gguf_tensors ENABLE ROW LEVEL SECURITY;
CREATE POLICY gguf_tensors_of_usable_models ON tfm.gguf_tensors FOR SELECT
    USING (tfm.may_use_model(model_id, tfm.current_role_oid()));
SELECT pg_catalog.pg_extension_config_dump('tfm.gguf_tensors', '');

-- ---------------------------------------------------------------------------
-- logical replication: a training database publishes its models and
-- tokenizers, serving databases subscribe (doc/operations.md, "Logical
-- replication").  Ids never collide: every database is a node, 1 to 2047,
-- and draws the ids of its models, tokenizers, aliases and alias history
-- from its own range, node * 2^20 + 1 .. node * 2^20 + 2^20 - 1 (the
-- sequences count within it); a row's origin, id >> 20, is the node that
-- created it, and only that node trains or changes it.  The node is the one
-- row of tfm.node (pg_dump keeps it; a fresh install has none): until it
-- exists the node is a hash of the cluster's system identifier and the
-- database's OID, stored by the first id drawn; tfm_set_node changes it
-- (TFM_NODE_ID_BITS in src/pg/storage/storage.h).  Id defaults hold a share
-- lock on the row, and tfm_set_node updates it before it moves any row, so
-- no id is drawn from the old range meanwhile; both roll back together.

CREATE TABLE tfm.node (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    node  integer NOT NULL CHECK (node BETWEEN 1 AND 2047)
);
COMMENT ON TABLE tfm.node IS
  'this database''s node (one row; none until chosen): the high bits of the ids it gives models, tokenizers and aliases';
GRANT SELECT ON tfm.node TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('tfm.node', '');
-- a publisher's row (a publication FOR ALL TABLES has it) is not this
-- database's node: replicated changes of tfm.node are skipped
CREATE FUNCTION tfm.skip_replicated() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER skip_replicated BEFORE INSERT OR UPDATE OR DELETE ON tfm.node
    FOR EACH ROW EXECUTE FUNCTION tfm.skip_replicated();
ALTER TABLE tfm.node ENABLE REPLICA TRIGGER skip_replicated;

CREATE FUNCTION tfm.default_node() RETURNS integer
AS 'MODULE_PATHNAME', 'tfm_default_node' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm.default_node() IS
  'the node a database takes unless told: 1 + a hash of the cluster''s system identifier and the database''s OID, modulo 2047';

CREATE FUNCTION tfm.local_node() RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT coalesce((SELECT node FROM tfm.node), tfm.default_node()) $$;
CREATE FUNCTION tfm_node() RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT tfm.local_node() $$;
COMMENT ON FUNCTION tfm_node() IS
  'this database''s node number (1-2047): its models, tokenizers and aliases have ids node * 2^20 + 1 ..; tfm_set_node changes it';

-- the default of every id that travels: the node's base plus the sequence's count
CREATE FUNCTION tfm.new_id(seq regclass) RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    node integer;
    n bigint;
BEGIN
    SELECT t.node INTO node FROM tfm.node t FOR SHARE;
    IF NOT FOUND THEN
        INSERT INTO tfm.node (node) VALUES (tfm.default_node()) ON CONFLICT DO NOTHING;
        SELECT t.node INTO node FROM tfm.node t FOR SHARE;
    END IF;
    n := nextval(seq);
    IF n >= 1048576 THEN
        RAISE EXCEPTION 'tfm: node % has given all its 1048575 ids of %', node, seq
            USING ERRCODE = 'sequence_generator_limit_exceeded',
                  DETAIL = 'A database creates at most 1048575 models, and as many tokenizers and aliases, over its life (dropped ones count).';
    END IF;
    RETURN (node::bigint << 20 | n)::integer;
END
$$;
ALTER TABLE tfm.models ALTER COLUMN id SET DEFAULT tfm.new_id('tfm.models_id_seq');
ALTER TABLE tfm.tokenizers ALTER COLUMN id SET DEFAULT tfm.new_id('tfm.tokenizers_id_seq');
ALTER TABLE tfm.aliases ALTER COLUMN id SET DEFAULT tfm.new_id('tfm.aliases_id_seq');
ALTER TABLE tfm.alias_history ALTER COLUMN id SET DEFAULT tfm.new_id('tfm.alias_history_id_seq');

-- Move this node's rows (origin old_node) to new_node's range: every id and
-- every column that refers to one (tfm.node is the caller's to change).
-- Foreign keys are not checked meanwhile (session_replication_role =
-- replica: superuser only), as the rows move together.
CREATE FUNCTION tfm.move_node(old_node integer, new_node integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET session_replication_role = replica
AS $$
DECLARE
    delta bigint := (new_node::bigint - old_node) << 20;
    moved bigint := 0;
    n bigint;
BEGIN
    UPDATE tfm.models SET id = id + delta WHERE id >> 20 = old_node;
    GET DIAGNOSTICS n = ROW_COUNT; moved := moved + n;
    UPDATE tfm.tensors SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.history SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.checkpoints SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.checkpoint_tensors SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.aliases SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.alias_history SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.gguf_tensors SET model_id = model_id + delta WHERE model_id >> 20 = old_node;
    UPDATE tfm.tokenizers SET id = id + delta WHERE id >> 20 = old_node;
    GET DIAGNOSTICS n = ROW_COUNT; moved := moved + n;
    UPDATE tfm.vocab SET tokenizer_id = tokenizer_id + delta WHERE tokenizer_id >> 20 = old_node;
    UPDATE tfm.merges SET tokenizer_id = tokenizer_id + delta WHERE tokenizer_id >> 20 = old_node;
    UPDATE tfm.aliases SET id = id + delta WHERE id >> 20 = old_node;
    GET DIAGNOSTICS n = ROW_COUNT; moved := moved + n;
    UPDATE tfm.aliases SET history_id = history_id + delta WHERE history_id >> 20 = old_node;
    UPDATE tfm.alias_history SET id = id + delta WHERE id >> 20 = old_node;
    UPDATE tfm.alias_history SET previous = previous + delta WHERE previous >> 20 = old_node;
    RETURN moved;
END
$$;

CREATE FUNCTION tfm_set_node(node integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old integer;
BEGIN
    IF node IS NULL OR node < 1 OR node > 2047 THEN
        RAISE EXCEPTION 'node must be between 1 and 2047, not %', coalesce(node::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to set tfm''s node: superuser required'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- the row locked first: ids drawn meanwhile wait, and then take the new node
    SELECT t.node INTO old FROM tfm.node t FOR UPDATE;
    IF NOT FOUND THEN
        old := tfm.default_node();
    END IF;
    INSERT INTO tfm.node (node) VALUES (tfm_set_node.node)
        ON CONFLICT (one) DO UPDATE SET node = EXCLUDED.node;
    IF node = old THEN
        RETURN 0;
    END IF;
    IF EXISTS (SELECT FROM tfm.models WHERE id >> 20 = node)
       OR EXISTS (SELECT FROM tfm.tokenizers WHERE id >> 20 = node)
       OR EXISTS (SELECT FROM tfm.aliases WHERE id >> 20 = node) THEN
        RAISE EXCEPTION 'node % is the origin of models, tokenizers or aliases replicated here', node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Choose a node that no publisher of this database has (tfm_node() on each).';
    END IF;
    RETURN tfm.move_node(old, node);
END
$$;
COMMENT ON FUNCTION tfm_set_node(integer) IS
  'make this database node 1-2047 (superuser): its own models, tokenizers and aliases move to the new range of ids; returns how many';

-- the node of each row, for reading (id >> 20)
ALTER TABLE tfm.models ADD COLUMN origin integer GENERATED ALWAYS AS (id >> 20) STORED;
ALTER TABLE tfm.tokenizers ADD COLUMN origin integer GENERATED ALWAYS AS (id >> 20) STORED;
ALTER TABLE tfm.aliases ADD COLUMN origin integer GENERATED ALWAYS AS (id >> 20) STORED;
COMMENT ON COLUMN tfm.models.origin IS 'the node that created the model (id >> 20): only there is it trained, renamed, granted or dropped';
COMMENT ON COLUMN tfm.tokenizers.origin IS 'the node that created the tokenizer (id >> 20)';
COMMENT ON COLUMN tfm.aliases.origin IS 'the node that created the alias (id >> 20)';

-- rows made before 0.4 (ids from 1, node 0) become this database's own
DO $$
BEGIN
    IF EXISTS (SELECT FROM tfm.models WHERE id >= 1048576) OR EXISTS (SELECT FROM tfm.tokenizers WHERE id >= 1048576)
       OR EXISTS (SELECT FROM tfm.aliases WHERE id >= 1048576) OR EXISTS (SELECT FROM tfm.alias_history WHERE id >= 1048576) THEN
        RAISE EXCEPTION 'tfm: this database has given ids over 1048575, which 0.4''s nodes cannot hold'
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF EXISTS (SELECT FROM tfm.models WHERE id >> 20 = 0) OR EXISTS (SELECT FROM tfm.tokenizers WHERE id >> 20 = 0)
       OR EXISTS (SELECT FROM tfm.aliases WHERE id >> 20 = 0) OR EXISTS (SELECT FROM tfm.alias_history WHERE id >> 20 = 0) THEN
        INSERT INTO tfm.node (node) VALUES (tfm.default_node());
        PERFORM tfm.move_node(0, tfm.local_node());
    END IF;
END
$$;

-- A row that arrives by logical replication (the apply and initial-copy
-- workers run with session_replication_role = replica, which alone fires
-- these triggers) with this database's own node means the publisher has the
-- same node: refuse it, so nothing of it mixes with the database's own rows
-- (which tfm_set_node then moves out of the way).
CREATE FUNCTION tfm.refuse_own_node() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id bigint;
BEGIN
    IF TG_TABLE_NAME IN ('models', 'tokenizers', 'aliases', 'alias_history') THEN
        id := NEW.id;
    ELSIF TG_TABLE_NAME IN ('vocab', 'merges') THEN
        id := NEW.tokenizer_id;
    ELSE
        id := NEW.model_id;
    END IF;
    IF id >> 20 = tfm.local_node() THEN
        RAISE EXCEPTION 'tfm: a row of tfm.% replicated from node %, which is this database''s own node', TG_TABLE_NAME, id >> 20
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'A publisher and its subscribers need different nodes: give this database another with tfm_set_node.';
    END IF;
    RETURN NEW;
END
$$;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tokenizers', 'vocab', 'merges', 'models', 'tensors', 'history', 'alias_history', 'aliases', 'gguf_tensors'] LOOP
        EXECUTE format('CREATE TRIGGER refuse_own_node BEFORE INSERT ON tfm.%I FOR EACH ROW EXECUTE FUNCTION tfm.refuse_own_node()', t);
        EXECUTE format('ALTER TABLE tfm.%I ENABLE REPLICA TRIGGER refuse_own_node', t);
    END LOOP;
END
$$;

-- tfm.job_queue gets a primary key: a publication FOR ALL TABLES would
-- otherwise refuse the deletes of a job's runs (no replica identity)
ALTER TABLE tfm.job_queue ADD PRIMARY KEY (id);

-- What a subscriber needs, parents before children: models, their weights
-- and training history, tokenizers, aliases.  Not published: checkpoints
-- (a run's optimizer state, resumed only where it runs), jobs (they read
-- the database's own tables).
CREATE FUNCTION tfm.publication_tables() RETURNS regclass[]
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT '{tfm.tokenizers, tfm.vocab, tfm.merges, tfm.models, tfm.tensors,
               tfm.history, tfm.alias_history, tfm.aliases, tfm.gguf_tensors}'::regclass[] $$;
CREATE FUNCTION tfm_publication_tables() RETURNS SETOF regclass
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT t FROM unnest(tfm.publication_tables()) WITH ORDINALITY AS u(t, n) ORDER BY n $$;
COMMENT ON FUNCTION tfm_publication_tables() IS
  'the catalog tables a publication of tfm''s models and tokenizers holds, parents before children';

CREATE FUNCTION tfm_create_publication(name text) RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sql text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'a publication name must not be empty or NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    sql := format('CREATE PUBLICATION %I FOR TABLE %s', name,
                  array_to_string(tfm.publication_tables(), ', '));
    EXECUTE sql;
    RETURN sql;
END
$$;
COMMENT ON FUNCTION tfm_create_publication(text) IS
  'CREATE PUBLICATION name FOR TABLE (tfm_publication_tables()): publish every model and tokenizer; returns the command run';

-- ---------------------------------------------------------------------------
-- Marian (opus-mt) checkpoints with their SentencePiece files: the model,
-- its source tokenizer under the model's name and its target tokenizer as
-- name || '_target' (tfm_import_files does the same from a directory that
-- holds source.spm, target.spm and vocab.json).

CREATE FUNCTION tfm_import_marian(name text, config jsonb, weights bytea, source_spm bytea,
                                  target_spm bytea, vocab jsonb, task text DEFAULT NULL,
                                  OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import_marian' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import_marian(text, jsonb, bytea, bytea, bytea, jsonb, text) IS
  'import a Marian checkpoint (config.json, model.safetensors, source.spm, target.spm, vocab.json contents) as a seq2seq model with its two tokenizers';

-- ---------------------------------------------------------------------------
-- tfm_gguf_kept: what a GGUF import did with each tensor (tfm.gguf_tensors, above)

CREATE FUNCTION tfm_gguf_kept(model text)
RETURNS TABLE (gguf_tensor text, gguf_type text, tensor text, kept boolean, how text)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
BEGIN
    RETURN QUERY
    SELECT g.gguf_name, g.gguf_type, g.tensor, g.blocks IS NOT NULL AND g.version = m.model_version,
           CASE WHEN g.blocks IS NULL THEN 'converted to float32 at import'
                WHEN g.version = m.model_version THEN 'Q4_0 blocks kept as in the file for int4 (float32 too)'
                ELSE 'converted to float32 at import (its kept blocks were of an earlier version)' END
      FROM tfm.gguf_tensors g WHERE g.model_id = m.model_id
     ORDER BY g.gguf_name;
END
$$;
COMMENT ON FUNCTION tfm_gguf_kept(text) IS
  'what the GGUF import did with each tensor of a model: Q4_0 blocks kept as they are for int4, or converted to float32';


-- ---------------------------------------------------------------------------
-- translation options left NULL: an imported model's generation settings
-- (generation_config.json, kept in its config as "generation"), else beam
-- 4 and length penalty 0.6 as before; tfm_translate_nbest gains the length
-- penalty and the length limit of tfm_translate (0.3's form had beam and n
-- only; the C function reads the two new arguments when they are there)
CREATE OR REPLACE FUNCTION tfm_translate(model text, source text, beam integer DEFAULT NULL,
                                         length_penalty real DEFAULT NULL, max_tokens integer DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_translate' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
CREATE OR REPLACE FUNCTION tfm_translate(model text, sources text[], beam integer DEFAULT NULL,
                                         length_penalty real DEFAULT NULL, max_tokens integer DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_translate_batch' LANGUAGE C STABLE PARALLEL SAFE;
DROP FUNCTION tfm_translate_nbest(text, text, integer, integer);
CREATE FUNCTION tfm_translate_nbest(model text, source text, beam integer DEFAULT NULL, n integer DEFAULT NULL,
                                    length_penalty real DEFAULT NULL, max_tokens integer DEFAULT NULL,
                                    OUT rank integer, OUT translation text, OUT score double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_translate_nbest' LANGUAGE C STABLE PARALLEL SAFE ROWS 4;
COMMENT ON FUNCTION tfm_translate_nbest(text, text, integer, integer, real, integer) IS
  'the n best translations with their scores (log-probability over the length penalty; beam search as tfm_translate)';
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.5'" to load this file. \quit
-- tfm 0.4 -> 0.5: no role can turn a job, a worker or a template against
-- another (doc/operations.md, Security).

-- a job runs the model it was created with: by id, or through the alias it
-- was named by (which its owner may move); renames, drops and other roles'
-- models of the same name never change what it runs
ALTER TABLE tfm.job_defs
    ADD COLUMN model_id integer,
    ADD COLUMN alias_id integer;
COMMENT ON COLUMN tfm.job_defs.model IS 'the model or alias the job was created with, as named then';
COMMENT ON COLUMN tfm.job_defs.model_id IS 'the model (tfm.models.id) the job runs, whatever its name now';
COMMENT ON COLUMN tfm.job_defs.alias_id IS 'the alias (tfm.aliases.id) the job was created through, if any: it runs the model the alias deploys now';
UPDATE tfm.job_defs j
   SET model_id = (SELECT m.id FROM tfm.models m WHERE m.name = j.model),
       alias_id = (SELECT a.id FROM tfm.aliases a WHERE a.name = j.model
                    AND NOT EXISTS (SELECT FROM tfm.models m WHERE m.name = j.model));
UPDATE tfm.job_defs j SET model_id = (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id)
 WHERE j.alias_id IS NOT NULL;

-- a row's value never reaches another role: the last error of a job (a
-- run's error may quote the row it stopped at) is its owner's to read;
-- every other column of tfm.job_defs stays readable by all
REVOKE SELECT ON tfm.job_defs FROM PUBLIC;
GRANT SELECT (id, name, owner, source, key_columns, key_types, input, model, task, destination,
              options, search_path, state, rows_done, rows_deleted, rows_failed, last_error_at,
              last_run_at, run_started_at, run_rows, created_at, model_id, alias_id)
    ON tfm.job_defs TO PUBLIC;

-- outputs by model version, counted by reading the destination's rows in
-- C (src/pg/sql/jobs/job_versions.c): reading tfm.jobs runs no code of another
-- role, and waits for no other session's lock
CREATE OR REPLACE FUNCTION tfm.job_versions(job_id integer) RETURNS jsonb
AS 'MODULE_PATHNAME', 'tfm_job_versions' LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm.job_versions(integer) IS
  'a job''s outputs by model version; NULL when you may not read all of its destination, it is not a table, or it is locked';

CREATE OR REPLACE VIEW tfm.jobs AS
SELECT j.name, j.owner, j.source, j.destination, j.task,
       CASE WHEN j.alias_id IS NULL
            THEN coalesce((SELECT m.name FROM tfm.models m WHERE m.id = j.model_id), j.model)
            ELSE coalesce((SELECT a.name FROM tfm.aliases a WHERE a.id = j.alias_id), j.model) END AS model,
       j.state,
       j.rows_done,
       (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id) AS rows_pending,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.job_id = j.id) AS rows_failed,
       j.rows_deleted,
       (SELECT m.version FROM tfm.models m
         WHERE m.id = CASE WHEN j.alias_id IS NULL THEN j.model_id
                           ELSE (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id) END)
         AS model_version,
       tfm.job_versions(j.id) AS outputs_by_version,
       round((j.run_rows / nullif(extract(epoch FROM j.last_run_at - j.run_started_at), 0))::numeric, 1)
         AS rows_per_second,
       CASE WHEN j.run_rows > 0 AND j.last_run_at > j.run_started_at THEN
         (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
           * ((j.last_run_at - j.run_started_at) / j.run_rows) END AS eta,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.last_error END AS last_error,
       j.last_error_at, j.run_started_at, j.last_run_at, j.options, j.input, j.created_at
FROM tfm.job_defs j
ORDER BY j.name;
COMMENT ON VIEW tfm.jobs IS
  'every job: source, destination, task, model (by its name now), state; rows done (outputs written), pending (keys queued), failed (keys in tfm.job_errors), deleted; the model''s current version and the destination''s outputs by model version (NULL if you cannot read it); the last run''s rows per second and the time the pending rows would take at that speed; last_error for the job''s owner (and members, and superusers) only';

-- a publication's name is an identifier: longer than one can be is refused
-- before it is quoted into a command (a 100 MB name took 2.5 s to refuse)
CREATE OR REPLACE FUNCTION tfm_create_publication(name text) RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sql text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'a publication name must not be empty or NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(name) > 63 THEN
        RAISE EXCEPTION 'publication name "%..." is longer than 63 bytes', left(name, 32)
            USING ERRCODE = 'name_too_long';
    END IF;
    sql := format('CREATE PUBLICATION %I FOR TABLE %s', name,
                  array_to_string(tfm.publication_tables(), ', '));
    EXECUTE sql;
    RETURN sql;
END
$$;

-- a backfill's keys go into the queue in chunks, one row per batch of keys
-- (column keys: a two-dimensional text[], a key a row; key NULL), so that a
-- batch claims and deletes one queue row, not one per key (issue 41); a
-- truncate marker is now key and keys NULL.  rows_pending counts a key
-- queued both in a chunk and on its own twice until a batch takes it.
ALTER TABLE tfm.job_queue ADD COLUMN keys text[];
CREATE INDEX job_queue_job_chunks ON tfm.job_queue (job_id, id) WHERE keys IS NOT NULL;
COMMENT ON TABLE tfm.job_queue IS
  'keys of source rows a job must (re)process: key, one key (written by the triggers), or keys, a backfill''s chunk of keys (one a row of the two-dimensional array); both NULL: the source was truncated';

CREATE OR REPLACE VIEW tfm.jobs AS
SELECT j.name, j.owner, j.source, j.destination, j.task,
       CASE WHEN j.alias_id IS NULL
            THEN coalesce((SELECT m.name FROM tfm.models m WHERE m.id = j.model_id), j.model)
            ELSE coalesce((SELECT a.name FROM tfm.aliases a WHERE a.id = j.alias_id), j.model) END AS model,
       j.state,
       j.rows_done,
       ((SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
        + (SELECT coalesce(sum(array_length(q.keys, 1)), 0) FROM tfm.job_queue q
            WHERE q.job_id = j.id AND q.keys IS NOT NULL)) AS rows_pending,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.job_id = j.id) AS rows_failed,
       j.rows_deleted,
       (SELECT m.version FROM tfm.models m
         WHERE m.id = CASE WHEN j.alias_id IS NULL THEN j.model_id
                           ELSE (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id) END)
         AS model_version,
       tfm.job_versions(j.id) AS outputs_by_version,
       round((j.run_rows / nullif(extract(epoch FROM j.last_run_at - j.run_started_at), 0))::numeric, 1)
         AS rows_per_second,
       CASE WHEN j.run_rows > 0 AND j.last_run_at > j.run_started_at THEN
         ((SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
        + (SELECT coalesce(sum(array_length(q.keys, 1)), 0) FROM tfm.job_queue q
            WHERE q.job_id = j.id AND q.keys IS NOT NULL))
           * ((j.last_run_at - j.run_started_at) / j.run_rows) END AS eta,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.last_error END AS last_error,
       j.last_error_at, j.run_started_at, j.last_run_at, j.options, j.input, j.created_at
FROM tfm.job_defs j
ORDER BY j.name;
COMMENT ON VIEW tfm.jobs IS
  'every job: source, destination, task, model (by its name now), state; rows done (outputs written), pending (keys queued), failed (keys in tfm.job_errors), deleted; the model''s current version and the destination''s outputs by model version (NULL if you cannot read it); the last run''s rows per second and the time the pending rows would take at that speed; last_error for the job''s owner (and members, and superusers) only';

-- NULLs as PostgreSQL treats them (doc/reference.md, NULLs): a function of
-- a text or int[] input answers NULL for a NULL input (a set-returning one,
-- no rows), so one NULL row no longer stops a query.  These are STRICT:
-- none of their arguments takes NULL for "the default".  tfm_tokenize,
-- tfm_generate, tfm_generate_tokens, tfm_next_tokens, tfm_translate,
-- tfm_translate_nbest, tfm_attention and the chat functions have such
-- options, so they stay non-strict and answer a NULL model or input in C
-- the same way; commands (create, train, import, drop, grant, deploy,
-- jobs) still refuse a NULL name with 22004.
ALTER FUNCTION tfm_classify(text, text) STRICT;
ALTER FUNCTION tfm_classify(text, integer[]) STRICT;
ALTER FUNCTION tfm_classify(text) STRICT;
ALTER FUNCTION tfm_classify(text, text[]) STRICT;
ALTER FUNCTION tfm_embed(text, text) STRICT;
ALTER FUNCTION tfm_embed(text, integer[]) STRICT;
ALTER FUNCTION tfm_embed(text, text[]) STRICT;
ALTER FUNCTION tfm_predict_proba(text, text) STRICT;
ALTER FUNCTION tfm_predict_proba(text, integer[]) STRICT;
ALTER FUNCTION tfm_score(text, text) STRICT;
ALTER FUNCTION tfm_score(text, integer[]) STRICT;
ALTER FUNCTION tfm_detokenize(text, integer[]) STRICT;
ALTER FUNCTION tfm_tokens(text, text) STRICT;
ALTER FUNCTION tfm_embed_chunks(text, text[], integer, integer) STRICT;
ALTER FUNCTION tfm_workspace_bytes(text, integer, integer, integer, boolean) STRICT;
ALTER FUNCTION tfm_gguf_kept(text) STRICT;

-- ---------------------------------------------------------------------------
-- tasks of imported classifiers that read two texts together (doc/tasks.md)

CREATE FUNCTION tfm_rerank(model text, query text, passage text) RETURNS real
AS 'MODULE_PATHNAME', 'tfm_rerank_one' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_rerank(text, text, text) IS
  'a cross-encoder''s relevance of a passage to a query, read together as one pair (sigmoid of its one logit, or the probability of its last label)';
CREATE FUNCTION tfm_rerank(model text, query text, passages text[], OUT ord integer, OUT score real)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_rerank' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 20;
COMMENT ON FUNCTION tfm_rerank(text, text, text[]) IS
  'a cross-encoder''s relevance of each passage to a query, (ord, score) in the array''s order, through batched forward passes (a NULL passage scores NULL)';
CREATE FUNCTION tfm_zero_shot(model text, input text, labels text[],
                              hypothesis_template text DEFAULT 'This example is {}.',
                              multi_label boolean DEFAULT false,
                              OUT label text, OUT score real)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_zero_shot' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION tfm_zero_shot(text, text, text[], text, boolean) IS
  'zero-shot classification with an NLI model: how far the text entails the template filled with each label, best first (single-label: softmax over the labels; multi_label: each label on its own)';

-- tfm.precision = auto is the checkpoint's own precision: an import records
-- what its weights were (config checkpoint_precision: fp32 for float32 and
-- float16 weights, bf16 for BF16, int8 for GGUF Q8_0/Q6_K, int4 for
-- Q4_0/Q4_K) and auto runs the imported version at it; tfm's own models,
-- models trained since their import and models imported before 0.5 (which
-- have no checkpoint_precision) run fp32.  tfm_info() says "auto" for it;
-- tfm_model_precision says what one model runs at now, and why.

CREATE FUNCTION tfm_model_precision(model text, OUT inference_precision text, OUT precision_reason text)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_model_precision_info' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_model_precision(text) IS
  'the precision the model''s inference runs at now (fp32, bf16, int8, int4) and why: tfm.precision, the model''s own default (tfm_set_precision), or auto''s choice (the checkpoint''s own precision; fp32 for tfm''s own models)';

-- Structured extraction (issue 42): decoding constrained by a JSON schema.
-- tfm_generate and tfm_chat take json_schema (the same functions with one
-- more optional argument, so every existing call keeps working); with it
-- each token that would leave the schema's language is masked, the text
-- ends when the value does, and it always parses and follows the schema.
-- tfm_extract builds a prompt from a text and a schema and returns jsonb.

DROP FUNCTION tfm_generate(text, text, integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_generate(model text, prompt text, max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                             json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_generate' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_generate(text, text, integer, real, integer, real, bigint, text, jsonb) IS
  'the continuation of a prompt by a language model (temperature 0 = greedy; a seed repeats; json_schema: constrained to a JSON value of the schema)';

DROP FUNCTION tfm_generate(text, text[], integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_generate(model text, prompts text[], max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                             json_schema jsonb DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_generate_batch' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_generate(text, text[], integer, real, integer, real, bigint, text, jsonb) IS
  'the continuations of many prompts, decoded together (prompt i samples with seed + i; json_schema: each constrained to a JSON value of the schema)';

DROP FUNCTION tfm_chat(text, jsonb, integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_chat(model text, messages jsonb, max_tokens integer DEFAULT 200,
                         temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                         top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                         json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_chat(text, jsonb, integer, real, integer, real, bigint, text, jsonb) IS
  'the assistant''s reply to a conversation [{"role": ..., "content": ...}]: the model''s chat template applied, then generation (as tfm_generate) until one of its stop ids (json_schema: the reply a JSON value of the schema)';

CREATE FUNCTION tfm_extract(model text, input text, schema jsonb, max_tokens integer DEFAULT 256,
                            temperature real DEFAULT 0, seed bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'tfm_extract' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_extract(text, text, jsonb, integer, real, bigint) IS
  'the fields of a text as jsonb following a JSON schema: a language model''s decoding constrained to the schema''s language (greedy by default), from a prompt of the schema and the text';
CREATE FUNCTION tfm_json_matches(schema jsonb, value text) RETURNS boolean
AS 'MODULE_PATHNAME', 'tfm_json_matches' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_json_matches(jsonb, text) IS
  'whether a text is a whole value of a JSON schema''s language as constrained generation writes it (compact, properties in the schema''s order)';
-- ---------------------------------------------------------------------------
-- tasks of imported encoders with a head on every token (doc/tasks.md):
-- entities from a token classifier, answers from an extractive
-- question-answering model

CREATE FUNCTION tfm_entities(model text, input text, aggregation text DEFAULT 'simple',
                             OUT entity text, OUT label text, OUT score real,
                             OUT start_char integer, OUT end_char integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_entities' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION tfm_entities(text, text, text) IS
  'the entities a token classifier tags in the text, as transformers'' TokenClassificationPipeline groups them (aggregation none, simple, first or max; O left out): the text''s characters, label, mean score, start and end characters (0-based, end exclusive)';
CREATE FUNCTION tfm_entities(model text, inputs text[], aggregation text DEFAULT 'simple',
                             OUT ord integer, OUT entity text, OUT label text, OUT score real,
                             OUT start_char integer, OUT end_char integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_entities_array' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 20;
COMMENT ON FUNCTION tfm_entities(text, text[], text) IS
  'the entities of each text (ord: its place in the array, from 1) through batched forward passes; a NULL text has no rows';
CREATE FUNCTION tfm_answer(model text, question text, context text,
                           max_answer_len integer DEFAULT 15, doc_stride integer DEFAULT 128,
                           handle_impossible_answer boolean DEFAULT false,
                           OUT answer text, OUT score real, OUT start_char integer, OUT end_char integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_answer' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_answer(text, text, text, integer, integer, boolean) IS
  'the answer to a question found in the context by an extractive question-answering model, as transformers'' QuestionAnsweringPipeline: the span of the best start and end probabilities (at most max_answer_len tokens, widened to words), long contexts in windows overlapping by doc_stride tokens; its score and characters (0-based, end exclusive)';
-- ---------------------------------------------------------------------------
-- GGUF blocks run as they are (issue 40): a GGUF import keeps the file's
-- Q8_0, Q4_K, Q5_K and Q6_K tensors as their blocks too (as it kept Q4_0
-- for int4), and the inference precision gguf runs them with llama.cpp's
-- dot products (the activations quantized to Q8_K / Q8_0 per row); auto
-- runs a GGUF model of those types at gguf.  (What the import keeps of each
-- tensor, tfm_gguf_kept, is defined below with the blocks stored alone.)

COMMENT ON TABLE tfm.gguf_tensors IS
  'per tensor of an imported GGUF file: converted to float32 only (blocks NULL), or also kept as the file''s blocks (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf)';
COMMENT ON COLUMN tfm.gguf_tensors.first_column IS 'kept: its rows are the matrix''s output columns first_column .. first_column + columns - 1';
COMMENT ON FUNCTION tfm_model_precision(text) IS
  'the precision the model''s inference runs at now (fp32, bf16, int8, int4, gguf) and why: tfm.precision, the model''s own default (tfm_set_precision), or auto''s choice (the checkpoint''s own precision; fp32 for tfm''s own models)';
-- ---------------------------------------------------------------------------
-- jobs of the tasks issue 42 added (doc/reference.md, Jobs): entities keeps
-- a token classifier's entities of each row (jsonb, as tfm_entities gives
-- them; option aggregation), extract a language model's fields of each row
-- (jsonb following the option schema, as tfm_extract)
ALTER TABLE tfm.job_defs DROP CONSTRAINT job_defs_task_check;
ALTER TABLE tfm.job_defs ADD CONSTRAINT job_defs_task_check
  CHECK (task IN ('embed', 'classify', 'predict_proba', 'generate', 'translate', 'entities', 'extract'));
COMMENT ON FUNCTION tfm_job_create(text, regclass, text, text, text, regclass, jsonb) IS
  'a job that keeps a destination table of model outputs (task embed, classify, predict_proba, generate, translate, entities or extract) for the rows of a source table; creates the destination and the triggers, queues every existing row; returns the destination';


-- chat templates for a whole context (issue 40): messages with tool calls,
-- tool responses and reasoning, tools, enable_thinking and any other name,
-- as apply_chat_template's arguments; json (not jsonb) so that the keys
-- keep their order, as Python's dicts do (tojson writes them in it)
CREATE FUNCTION tfm_chat_render_context(template text, context json)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_render_context_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_chat_render_context(text, json) IS
  'a Jinja chat template rendered for a context {"messages": [...], "tools": [...], "enable_thinking": ..., ...} as transformers'' apply_chat_template renders it (add_generation_prompt true unless given)';
CREATE FUNCTION tfm_chat_prompt_context(model text, context json)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_prompt_context' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_chat_prompt_context(text, json) IS
  'the model''s chat template rendered for a context {"messages": [...], "tools": [...], ...}, with the model''s bos and eos texts (add_generation_prompt true unless given)';
CREATE FUNCTION tfm_chat_context(model text, context json, max_tokens integer DEFAULT 200,
                                 temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                                 top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                                 json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_context' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_chat_context(text, json, integer, real, integer, real, bigint, text, jsonb) IS
  'the assistant''s reply to a whole context {"messages": [...], "tools": [...], "enable_thinking": ..., ...} (tool calls, tool responses, reasoning): tfm_chat_prompt_context''s prompt, then generation as tfm_chat';
-- GGUF blocks stored at their own size (issue 40): a tensor of an imported
-- GGUF file that the kept blocks cover wholly (each value their exact
-- dequantization) is stored as those blocks only, with no float32 rows in
-- tfm.tensors; its float32 values are made from the blocks when the model
-- is loaded (for fp32, bf16, int8, int4 and training), and by tfm_tensor.
-- Training then saves every tensor as float32 (a float32 model).

-- A tensor's blocks over tfm.gguf_row_bytes (256 MB) are stored in parts of
-- whole rows, so that pg_dump can write each row (a bytea's text is twice
-- its bytes, and a value is at most 1 GB): Gemma 3 4B's embedding is 551 MB.
ALTER TABLE tfm.gguf_tensors ADD COLUMN first_row integer NOT NULL DEFAULT 0;
ALTER TABLE tfm.gguf_tensors DROP CONSTRAINT gguf_tensors_pkey;
ALTER TABLE tfm.gguf_tensors ADD PRIMARY KEY (model_id, gguf_name, first_row);
COMMENT ON COLUMN tfm.gguf_tensors.first_row IS 'kept: the first of the file''s rows of the tensor these blocks hold (a tensor over tfm.gguf_row_bytes is stored in parts of whole rows; columns: this part''s rows)';
COMMENT ON TABLE tfm.gguf_tensors IS
  'per tensor of an imported GGUF file: converted to float32 only (blocks NULL), or kept as the file''s blocks (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf), a tensor they cover wholly stored as them only (no tfm.tensors rows)';
COMMENT ON COLUMN tfm.gguf_tensors.blocks IS 'kept: the file''s bytes of the tensor, as they are; NULL: converted to float32 only';
COMMENT ON COLUMN tfm.gguf_tensors.first_column IS 'kept: its rows are the matrix''s output columns first_column .. first_column + columns - 1; NULL: its rows are the tensor''s rows, kept for storage only (an untied embedding)';
CREATE FUNCTION tfm.tensor_values(model text, tensor text) RETURNS real[]
AS 'MODULE_PATHNAME', 'tfm_tensor_values' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm.tensor_values(text, text) IS
  'internal: the float32 values of a tensor stored as a GGUF file''s blocks only, made from them (tfm_tensor)';
CREATE OR REPLACE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
    mid integer := m.model_id;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor) THEN
        -- stored as a GGUF file's blocks only: the values loading makes from them
        IF EXISTS (SELECT 1 FROM tfm.gguf_tensors g
                    WHERE g.model_id = mid AND g.version = m.model_version
                      AND g.tensor = tfm_tensor.tensor AND g.blocks IS NOT NULL) THEN
            RETURN tfm.tensor_values(model, tfm_tensor.tensor);
        END IF;
        RETURN NULL;
    END IF;
    IF (SELECT count(*) FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor) > 1 THEN
        RETURN (SELECT array_agg(u.v ORDER BY t.chunk, u.o)
                FROM tfm.tensors t, unnest(t.data) WITH ORDINALITY AS u(v, o)
                WHERE t.model_id = mid AND t.name = tfm_tensor.tensor);
    END IF;
    RETURN (SELECT t.data FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor);
END
$$;
COMMENT ON FUNCTION tfm_tensor(text, text) IS
  'the values of one tensor of a model (an imported GGUF model''s tensor stored as the file''s blocks only: their float32 values, made from them)';
CREATE OR REPLACE FUNCTION tfm_gguf_kept(model text)
RETURNS TABLE (gguf_tensor text, gguf_type text, tensor text, kept boolean, how text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
BEGIN
    RETURN QUERY
    SELECT g.gguf_name, g.gguf_type, g.tensor, g.blocks IS NOT NULL AND g.version = m.model_version,
           CASE WHEN g.blocks IS NULL THEN 'converted to float32 at import'
                WHEN g.version <> m.model_version
                THEN 'converted to float32 at import (its kept blocks were of an earlier version)'
                WHEN g.first_column IS NULL
                THEN g.gguf_type || ' blocks kept as in the file, stored as them only (no matrix runs them: looked up as float32 made at load)'
                ELSE g.gguf_type || ' blocks kept as in the file for '
                     || CASE WHEN g.gguf_type = 'Q4_0' THEN 'int4' ELSE 'gguf' END
                     || CASE WHEN EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = m.model_id AND t.name = g.tensor)
                             THEN ' (float32 stored too)' ELSE ' (stored as them only)' END END
      FROM tfm.gguf_tensors g WHERE g.model_id = m.model_id AND g.first_row = 0
     ORDER BY g.gguf_name;
END
$$;
COMMENT ON FUNCTION tfm_gguf_kept(text) IS
  'what the GGUF import did with each tensor of a model: blocks kept as they are (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf), stored as them only or with float32 values too, or converted to float32';
CREATE FUNCTION tfm.loaded_footprint(model text, OUT loaded_precision text, OUT loaded_block_bytes bigint,
                                      OUT loaded_float32_bytes bigint, OUT left_to_blocks_bytes bigint,
                                      OUT made_from_blocks_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_loaded_footprint' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm.loaded_footprint(text) IS
  'internal: this session''s loaded copy of a model (NULL: not loaded; nothing is loaded): its precision, the bytes of its GGUF blocks, of the float32 values it holds, of those it left to the blocks (loaded for gguf) and of those it made from the blocks (at its load or on demand since)';
CREATE FUNCTION tfm_model_footprint(model text, OUT block_bytes bigint, OUT float32_bytes bigint,
                                    OUT made_at_load_bytes bigint, OUT loaded_precision text,
                                    OUT loaded_block_bytes bigint, OUT loaded_float32_bytes bigint,
                                    OUT left_to_blocks_bytes bigint, OUT made_from_blocks_bytes bigint)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
BEGIN
    -- the kept blocks of the current version, as stored (their bytes)
    SELECT coalesce(sum(octet_length(g.blocks)), 0) INTO block_bytes
      FROM tfm.gguf_tensors g
     WHERE g.model_id = m.model_id AND g.version = m.model_version AND g.blocks IS NOT NULL;
    -- the float32 values stored as rows (4 bytes a value)
    SELECT coalesce(sum(4 * cardinality(t.data)::bigint), 0) INTO float32_bytes
      FROM tfm.tensors t WHERE t.model_id = m.model_id;
    -- the float32 values a load for another precision than gguf (fp32, bf16,
    -- int8, int4, training) makes from the blocks of the tensors stored as
    -- them only; a load for gguf leaves those its blocks run to them
    SELECT coalesce(sum(4 * g.inputs::bigint * g.columns), 0) INTO made_at_load_bytes
      FROM tfm.gguf_tensors g
     WHERE g.model_id = m.model_id AND g.version = m.model_version AND g.blocks IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = m.model_id AND t.name = g.tensor);
    -- this session's loaded copy, if any (NULLs: not loaded)
    SELECT l.loaded_precision, l.loaded_block_bytes, l.loaded_float32_bytes, l.left_to_blocks_bytes,
           l.made_from_blocks_bytes
      INTO loaded_precision, loaded_block_bytes, loaded_float32_bytes, left_to_blocks_bytes,
           made_from_blocks_bytes
      FROM tfm.models x, tfm.loaded_footprint(x.name) l WHERE x.id = m.model_id;
END
$$;
COMMENT ON FUNCTION tfm_model_footprint(text) IS
  'a model''s weights as stored (the bytes of its kept GGUF blocks and of its float32 rows, 4 a value), the float32 bytes a load for another precision than gguf makes from the blocks, and what this session''s loaded copy holds: its precision, blocks, float32 values, values left to the blocks (loaded for gguf) and values it made from them (at its load or on demand since)';
-- ---------------------------------------------------------------------------
-- the GGUF imports' descriptions as they are now (issue 40)
COMMENT ON FUNCTION tfm_import_gguf(text, bytea, boolean) IS
  'import a GGUF file''s contents (architectures llama, qwen2, qwen3, gemma3, phi3, gpt2; F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K tensors, the kept types stored as their blocks) as a model, with the tokenizer and chat template of its metadata';
COMMENT ON FUNCTION tfm_import_gguf_file(text, text, boolean) IS
  'import a GGUF file of the server (superuser or pg_read_server_files) as tfm_import_gguf imports its contents';
-- ---------------------------------------------------------------------------
-- a GGUF file's kept blocks are stored out of line without compression: a
-- quantized tensor does not compress, and trying (pglz over each value,
-- its output buffer as large as the value) cost an import the memory and
-- the time of another copy of its largest tensor
ALTER TABLE tfm.gguf_tensors ALTER COLUMN blocks SET STORAGE EXTERNAL;
