-- SentencePiece Unigram tokenizer.json files (XLM-RoBERTa's and Marian's
-- shape: Precompiled + Strip + Replace " {2,}", Metaspace, Unigram with
-- scores; and T5's: Precompiled, WhitespaceSplit + Metaspace, "$A </s>",
-- extra ids) made by test/reference/make_unigram_tokenizers.py from three
-- spm_train models, and ALBERT's NFKD + StripAccents + Lowercase
-- (make_unigram_albert.py), against the ids and decodes of the real SentencePiece;
-- the stored model data read back; what is refused, by name
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TEMP TABLE uni (name text, tok jsonb, exp jsonb);
\set t `cat test/fixtures/tokenizer/unigram/uni_nfkc.json`
\set e `cat test/fixtures/tokenizer/unigram/uni_nfkc.expected.json`
INSERT INTO uni VALUES ('uni_nfkc', :'t', :'e');
\set t `cat test/fixtures/tokenizer/unigram/uni_bytes.json`
\set e `cat test/fixtures/tokenizer/unigram/uni_bytes.expected.json`
INSERT INTO uni VALUES ('uni_bytes', :'t', :'e');
\set t `cat test/fixtures/tokenizer/unigram/uni_t5.json`
\set e `cat test/fixtures/tokenizer/unigram/uni_t5.expected.json`
INSERT INTO uni VALUES ('uni_t5', :'t', :'e');
-- ALBERT's and XLNet's normalizers (NFKD, StripAccents, Lowercase after
-- two Replace steps) before uni_nfkc's (test/reference/make_unigram_albert.py)
\set e `cat test/fixtures/tokenizer/unigram/uni_albert.expected.json`
INSERT INTO uni
SELECT 'uni_albert', jsonb_set(tok, '{normalizer,normalizers}',
         '[{"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
           {"type": "Replace", "pattern": {"String": "''''"}, "content": "\""},
           {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]'::jsonb
         || (tok->'normalizer'->'normalizers')), :'e'
  FROM uni WHERE name = 'uni_nfkc';

SELECT name, tfm_tokenizer_import(name, tok) FROM uni ORDER BY name;
SELECT name, kind, vocab_size, options->'specials' AS specials, (options->>'flags')::int AS flags
  FROM tfm.tokenizers WHERE name LIKE 'uni\_%' ORDER BY name;

CREATE TABLE uni_cases AS
SELECT name, n, t, ARRAY(SELECT jsonb_array_elements_text(exp->'ids'->(n::int - 1))::int) AS want,
       exp->'decoded'->>(n::int - 1) AS dec, (tok->'model'->>'unk_id')::int AS unk
  FROM uni, jsonb_array_elements_text(exp->'texts') WITH ORDINALITY AS a(t, n);
-- every text gives SentencePiece's ids exactly (T5's with the </s> its
-- post-processor appends); decode gives SentencePiece's decode where no
-- <unk> is among the ids (SentencePiece writes " ⁇ " for it, tfm U+FFFD)
SELECT name, count(*) AS texts,
       count(*) FILTER (WHERE tfm_tokenize(name, t, add_eos => name = 'uni_t5') = want) AS same_ids,
       count(*) FILTER (WHERE unk = ANY (want)) AS with_unk,
       count(*) FILTER (WHERE NOT unk = ANY (want) AND tfm_detokenize(name, want) = dec) AS same_decode
  FROM uni_cases GROUP BY name ORDER BY name;
SELECT name, n, t, tfm_tokenize(name, t) AS ids
  FROM uni_cases WHERE n IN (1, 6, 12, 14) ORDER BY name, n;
-- full-width forms, ligatures and circled digits folded by the charsmap; an
-- emoji as <unk>, or as its four bytes with byte_fallback, and back
SELECT tfm_tokenize('uni_nfkc', 'ＡＢＣ１２３ ﬁ ①') = tfm_tokenize('uni_nfkc', 'ABC123 fi 1') AS folded,
       tfm_tokenize('uni_nfkc', '🎉'), tfm_tokenize('uni_bytes', '🎉'),
       tfm_detokenize('uni_bytes', tfm_tokenize('uni_bytes', 'a 🎉 b')) AS decoded;
-- bos / eos are the file's <s> and </s>; text spelling them is that special
-- (an added token marked special, as Hugging Face finds it)
SELECT tfm_tokenize('uni_nfkc', 'x', add_bos => true, add_eos => true),
       tfm_tokenize('uni_nfkc', '<s>') = ARRAY[1] AS special,
       tfm_tokenize('uni_nfkc', 'a<s>b') = tfm_tokenize('uni_nfkc', 'a') || 1 || tfm_tokenize('uni_nfkc', 'b') AS parts_apart;
-- special tokens with lstrip / rstrip take the spaces beside them; one that
-- is matched in normalized text or only as a word is refused by name
-- (where White_Space is kept: uni_nfkc without its Strip step, "</s>" with
-- and without lstrip / rstrip; plain, the space before </s> is a "▁" token)
SELECT tfm_tokenizer_import(n, jsonb_set(tok #- '{normalizer,normalizers,1}', '{added_tokens}',
         (SELECT jsonb_agg(CASE WHEN a->>'content' = '</s>' THEN a || jsonb_build_object('lstrip', l, 'rstrip', l) ELSE a END)
            FROM jsonb_array_elements(tok->'added_tokens') a)))
  FROM uni, (VALUES ('uni_keep_spaces', false), ('uni_lstrip', true)) v(n, l) WHERE name = 'uni_nfkc' ORDER BY n;
SELECT tfm_tokenize('uni_keep_spaces', 'Hello </s>  world') AS kept,
       tfm_tokenize('uni_lstrip', 'Hello </s>  world') AS stripped,
       tfm_tokenize('uni_keep_spaces', 'Hello </s>  world')
         = tfm_tokenize('uni_lstrip', 'Hello') || (SELECT v.id FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
                                                   WHERE t.name = 'uni_lstrip' AND piece = convert_to(U&'\2581', 'UTF8'))
           || 2 || tfm_tokenize('uni_lstrip', 'world') AS space_token_kept,
       tfm_tokenize('uni_lstrip', 'Hello </s>  world')
         = tfm_tokenize('uni_lstrip', 'Hello') || 2 || tfm_tokenize('uni_lstrip', 'world') AS spaces_taken;
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(tok, '{added_tokens,0,normalized}', 'true')))
  FROM uni WHERE name = 'uni_t5';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(tok, '{added_tokens,0,single_word}', 'true')))
  FROM uni WHERE name = 'uni_t5';
-- T5: <pad> 0, </s> 1, <unk> 2; the extra ids are found in text as Hugging
-- Face finds its special tokens (the text around them encoded apart) and
-- decode to nothing; tfm's <bos> after them
SELECT tfm_tokenize('uni_t5', 'Hello <extra_id_0> world', add_eos => true) AS ids,
       tfm_detokenize('uni_t5', ARRAY[87, 1009, 1]) AS decoded,
       (SELECT v.id FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
         WHERE t.name = 'uni_t5' AND piece = '<extra_id_0>'::bytea) AS extra_id_0;

-- NFKD, then marks and case gone: accented and plain spellings are one
SELECT tfm_tokenize('uni_albert', 'Crème BRÛLÉE, Ｚürich ﬁne') = tfm_tokenize('uni_albert', 'creme brulee, zurich fine')
       AS accents_and_case_folded,
       tfm_tokenize('uni_nfkc', 'Crème BRÛLÉE') <> tfm_tokenize('uni_nfkc', 'creme brulee') AS not_without;
-- a text of 100,000 combining marks is normalised in linear time (ordered
-- by counting) and stripped to its letters
SELECT tfm_tokenize('uni_albert', 'a' || repeat(U&'\0301\0316', 50000) || 'b') = tfm_tokenize('uni_albert', 'ab')
       AS marks_stripped;

-- each token's piece (the full-width letters folded by the charsmap)
SELECT pos, id, piece FROM tfm_tokens('uni_nfkc', 'ＡＢ  cd');

-- a normalizer that makes a text more than 64 times longer is refused
SELECT tfm_tokenizer_import('uni_expand', jsonb_set(tok, '{normalizer,normalizers,1}',
         jsonb_build_object('type', 'Replace', 'pattern', '{"String": "a"}'::jsonb, 'content', repeat('b', 200))))
  FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err($$SELECT tfm_tokenize('uni_expand', 'xa')$$);
SELECT pg_temp.err($$SELECT tfm_tokenize('uni_expand', repeat('a', 1000))$$);
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{normalizer,normalizers,1}',
         jsonb_build_object('type', 'Prepend', 'prepend', repeat('b', 300))))) FROM uni WHERE name = 'uni_nfkc';

-- the stored model data is read back (a new session) and validated
SELECT tfm_tokenizer_import('uni_damaged', tok) FROM uni WHERE name = 'uni_bytes';
UPDATE tfm.tokenizers SET model_data = substr(model_data, 1, 40) WHERE name = 'uni_damaged';
SELECT pg_temp.err($$SELECT tfm_tokenize('uni_damaged', 'x')$$);
UPDATE tfm.tokenizers SET model_data = NULL WHERE name = 'uni_damaged';
SELECT pg_temp.err($$SELECT tfm_tokenize('uni_damaged', 'x')$$);

-- what is refused, by name
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{normalizer,normalizers,2,pattern,Regex}', '"\\s+"'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{normalizer}', '{"type": "BertNormalizer"}'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{pre_tokenizer}', '{"type": "Whitespace"}'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{decoder}', '{"type": "WordPiece", "prefix": "##"}'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{pre_tokenizer,prepend_scheme}', '"sometimes"'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{model,unk_id}', 'null'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{model,unk_id}', '99999'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{model,vocab,5}', '["x"]'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{model,vocab,6,0}', to_jsonb(tok->'model'->'vocab'->5->>0)))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{normalizer,normalizers,0,precompiled_charsmap}', '"AAAA"'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{normalizer,normalizers,0,precompiled_charsmap}', '"not base64!"'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x',
       jsonb_set(tok, '{added_tokens,0,content}', '"<nope>"'))) FROM uni WHERE name = 'uni_nfkc';
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('x', t, 'unigram') FROM (VALUES ('a b')) AS v(t)$$);
SELECT name FROM tfm.tokenizer_list WHERE name = 'x';

-- a new session reads the tokenizers from their rows and model data
\c
SELECT name, count(*) AS texts, count(*) FILTER (WHERE tfm_tokenize(name, t, add_eos => name = 'uni_t5') = want) AS same_ids
  FROM uni_cases GROUP BY name ORDER BY name;
SELECT tfm_tokenizer_drop(name) FROM (VALUES ('uni_nfkc'), ('uni_bytes'), ('uni_t5'), ('uni_damaged'), ('uni_expand')) AS v(name);
DROP TABLE uni_cases;
