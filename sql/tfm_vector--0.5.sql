-- tfm_vector: tfm's embeddings as pgvector's vector, created by CREATE
-- EXTENSION tfm_vector where pgvector is installed (tfm itself never needs
-- pgvector).  Why a function of its own rather than tfm_embed(...) alone:
-- pgvector casts vector to real[] implicitly, so `embedding <=> tfm_embed(m, q)`
-- over a vector column resolves to tfm's own real[] <=> operator and reads
-- every row; `embedding <=> tfm_embed_vector(m, q)` is pgvector's operator,
-- which an HNSW or IVFFlat index (vector_cosine_ops) answers.
--
-- The bodies are SQL-standard (RETURN, BEGIN ATOMIC): tfm_embed, the type
-- and the cast are bound when the extension is created (the script runs
-- with tfm's and pgvector's schemas on its search_path), so no caller's
-- search_path can redirect them.  NULL in, NULL out (STRICT).  A job writes
-- a vector(n) destination without these functions: pgvector's assignment
-- cast from real[] converts its outputs, and tfm_job_create checks n
-- (doc/reference.md, "Embeddings in pgvector").

\echo Use "CREATE EXTENSION tfm_vector" to load this file. \quit

CREATE FUNCTION tfm_embed_vector(model text, input text) RETURNS vector
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN CAST(tfm_embed(model, input) AS vector);
COMMENT ON FUNCTION tfm_embed_vector(text, text) IS
  'tfm_embed(model, input) as a pgvector vector (d_model dimensions): ORDER BY embedding <=> tfm_embed_vector(model, query) LIMIT k uses a vector index';

CREATE FUNCTION tfm_embed_vector(model text, ids integer[]) RETURNS vector
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN CAST(tfm_embed(model, ids) AS vector);
COMMENT ON FUNCTION tfm_embed_vector(text, integer[]) IS
  'tfm_embed(model, ids) as a pgvector vector (d_model dimensions)';

CREATE FUNCTION tfm_embed_vector(model text, inputs text[], OUT ord integer, OUT embedding vector)
RETURNS SETOF record
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 100
BEGIN ATOMIC
  SELECT e.ord, CAST(e.embedding AS vector) FROM tfm_embed(model, inputs) AS e;
END;
COMMENT ON FUNCTION tfm_embed_vector(text, text[]) IS
  'tfm_embed(model, inputs) with vector embeddings: (ord, embedding) in the array''s order, through batched forward passes (NULL gives NULL)';
