/*
 * test_st_index.c: unit tests of the reader of sharded checkpoints' indexes
 * (include/tfm/safetensors_index.h).
 *
 *   - a valid index as Hugging Face writes it (plus metadata keys of other
 *     tools, nested values): shards sorted and unique, tensors sorted by
 *     name with their shard numbers, total_size, lookups
 *   - the checks of shards' headers against it: a consistent checkpoint, a
 *     tensor in the wrong shard, absent from the index, missing from its
 *     shard, a wrong total_size
 *   - every refusal of the parser, each with a fragment of its message
 *   - fuzzing, seeded: byte flips and truncations of valid indexes, random
 *     JSON from a token alphabet; each parsed from an exactly sized copy
 *     (valgrind sees any over-read); a success must be consistent, a
 *     failure must say why and leave nothing
 *
 * TFM_TEST_QUICK=1 shrinks the fuzzing (for valgrind).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/rng.h"
#include "tfm/safetensors_index.h"

/* parses an exactly sized copy of json[0 .. len) */
static int
parse_n(tfm_st_index **ix, const char *json, size_t len, tfm_status *err)
{
	uint8_t    *buf = malloc(len ? len : 1);
	int			st;

	memcpy(buf, json, len);
	st = tfm_st_parse_index(ix, buf, len, err);
	free(buf);
	return st;
}

static int
parse(tfm_st_index **ix, const char *json, tfm_status *err)
{
	return parse_n(ix, json, strlen(json), err);
}

/* a safetensors file in memory of F32 tensors "name:count,..." */
static tfm_st_file *
make_shard(const char *spec)
{
	char		json[1024],
				names[256];
	size_t		o = 0,
				at = 0,
				len,
				hl;
	uint8_t    *buf;
	tfm_st_file *f = NULL;
	tfm_status	err;
	char	   *save = NULL;

	snprintf(names, sizeof(names), "%s", spec);
	o += (size_t) snprintf(json + o, sizeof(json) - o, "{");
	for (char *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *colon = strchr(tok, ':');
		int			n = atoi(colon + 1);

		*colon = '\0';
		o += (size_t) snprintf(json + o, sizeof(json) - o,
							   "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
							   o > 1 ? "," : "", tok, n, at, at + 4 * (size_t) n);
		at += 4 * (size_t) n;
	}
	o += (size_t) snprintf(json + o, sizeof(json) - o, "}");
	hl = o;
	len = 8 + hl + at;
	buf = calloc(len, 1);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t) (hl >> (8 * i));
	memcpy(buf + 8, json, hl);
	if (tfm_st_parse(&f, buf, len, &err) != TFM_OK)
		fprintf(stderr, "make_shard(%s): %s\n", spec, err.msg);
	free(buf);
	return f;
}

static void
test_valid(void)
{
	const char *json =
		"{\n  \"metadata\": {\"total_parameters\": 9, \"mergekit_version\": \"0.1\",\n"
		"    \"total_size\": 36, \"x\": [1, -2.5e3, true, false, null, {\"y\": [[]], \"z\": {}}]},\n"
		"  \"weight_map\": {\n"
		"    \"model.b\": \"model-00002-of-00002.safetensors\",\n"
		"    \"model.a\": \"model-00001-of-00002.safetensors\",\n"
		"    \"model.ab\": \"model-00002-of-00002.safetensors\",\n"
		"    \"caf\\u00e9\": \"model-00001-of-00002.safetensors\"\n"
		"  }\n}\n";
	tfm_st_index *ix = NULL;
	tfm_status	err;
	int			st = parse(&ix, json, &err);
	uint8_t		found[4];
	uint64_t	bytes = 0;
	tfm_st_file *s1,
			   *s2;

	CHECK(st == TFM_OK && ix, "valid index: %d %s", st, err.msg);
	if (!ix)
		return;
	CHECK(ix->n_shards == 2 && strcmp(ix->shards[0], "model-00001-of-00002.safetensors") == 0 &&
		  strcmp(ix->shards[1], "model-00002-of-00002.safetensors") == 0, "two shards, sorted");
	CHECK(ix->n_tensors == 4, "4 tensors, got %zu", ix->n_tensors);
	CHECK(strcmp(ix->tensors[0].name, "caf\xc3\xa9") == 0 && ix->tensors[0].shard == 0 &&
		  strcmp(ix->tensors[1].name, "model.a") == 0 && ix->tensors[1].shard == 0 &&
		  strcmp(ix->tensors[2].name, "model.ab") == 0 && ix->tensors[2].shard == 1 &&
		  strcmp(ix->tensors[3].name, "model.b") == 0 && ix->tensors[3].shard == 1,
		  "tensors sorted by name with their shards");
	CHECK(ix->has_total_size && ix->total_size == 36, "total_size 36");
	CHECK(tfm_st_index_find(ix, "model.ab", 8) == 2 && tfm_st_index_find(ix, "model.a", 7) == 1 &&
		  tfm_st_index_find(ix, "model.abc", 9) == -1 && tfm_st_index_find(ix, "model.", 6) == -1 &&
		  tfm_st_index_find(ix, "", 0) == -1, "lookups");

	/* a consistent checkpoint: 1 + 2 floats in shard 1, 3 + 3 in shard 2 = 36 bytes */
	s1 = make_shard("model.a:1,caf\xc3\xa9:2");
	s2 = make_shard("model.b:3,model.ab:3");
	memset(found, 0, sizeof(found));
	st = tfm_st_index_check_shard(ix, 0, s1, found, &bytes, &err);
	CHECK(st == TFM_OK, "shard 1 checks: %s", err.msg);
	st = tfm_st_index_check_done(ix, found, bytes, &err);
	CHECK(st == TFM_EBADFILE && strstr(err.msg, "tensor \"model.ab\" of the index's weight_map is not in shard \"model-00002-of-00002.safetensors\""),
		  "before shard 2, model.ab is missing: %s", err.msg);
	st = tfm_st_index_check_shard(ix, 1, s2, found, &bytes, &err);
	CHECK(st == TFM_OK && bytes == 36, "shard 2 checks: %s, %llu bytes", err.msg, (unsigned long long) bytes);
	st = tfm_st_index_check_done(ix, found, bytes, &err);
	CHECK(st == TFM_OK, "done: %s", err.msg);
	CHECK(tfm_st_index_check_done(ix, found, 40, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "metadata.total_size of the index is 36 bytes but the shards' tensors hold 40"),
		  "total_size differs: %s", err.msg);
	/* the same shard twice */
	CHECK(tfm_st_index_check_shard(ix, 1, s2, found, &bytes, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "was already read"), "read twice: %s", err.msg);
	/* shard 2's file given as shard 1 */
	memset(found, 0, sizeof(found));
	CHECK(tfm_st_index_check_shard(ix, 0, s2, found, &bytes, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "tensor \"model.b\" is in shard \"model-00001-of-00002.safetensors\" but the index puts it in \"model-00002-of-00002.safetensors\""),
		  "wrong shard: %s", err.msg);
	CHECK(tfm_st_index_check_shard(ix, 2, s2, found, &bytes, &err) == TFM_EINVAL, "shard out of range");
	tfm_st_free(s2);
	s2 = make_shard("model.b:3,model.ab:3,model.c:1");
	memset(found, 0, sizeof(found));
	CHECK(tfm_st_index_check_shard(ix, 1, s2, found, &bytes, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "tensor \"model.c\" of shard \"model-00002-of-00002.safetensors\" is not in the weight_map of the index"),
		  "absent from the index: %s", err.msg);
	tfm_st_free(s1);
	tfm_st_free(s2);
	tfm_st_index_free(ix);

	/* no metadata: no total_size; one shard; white space everywhere */
	st = parse(&ix, " \t{ \"weight_map\" : { \"w\" : \"m.safetensors\" } , \"metadata\" : { } }\r\n", &err);
	CHECK(st == TFM_OK && ix && !ix->has_total_size && ix->n_shards == 1 && ix->n_tensors == 1,
		  "minimal index: %s", err.msg);
	tfm_st_index_free(ix);
	/* escaped '/' in a tensor name is a name; total_size 0 of a model of empty tensors */
	st = parse(&ix, "{\"metadata\":{\"total_size\":0},\"weight_map\":{\"a\\/b\":\"x.safetensors\"}}", &err);
	CHECK(st == TFM_OK && ix && ix->has_total_size && ix->total_size == 0 &&
		  strcmp(ix->tensors[0].name, "a/b") == 0, "escaped names: %s", err.msg);
	tfm_st_index_free(ix);
}

static void
test_errors(void)
{
	char		long_name[300],
				j[1024];
	static const struct
	{
		const char *json;
		const char *frag;
	}			cases[] =
	{
		{"", "invalid JSON in the index at byte 0: the index does not start with '{'"},
		{"[]", "does not start with '{'"},
		{" \n", "at byte 2: the index does not start with '{'"},
		{"{}", "the index has no weight_map"},
		{"{\"weight_map\":{}}", "the weight_map of the index names no tensor"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\"}", "at byte 35: expected ',' or '}'"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\"}}x", "trailing bytes after the JSON object"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\",}}", "expected a string"},
		{"{\"weight_map\":{\"a\" \"m.safetensors\"}}", "expected ':'"},
		{"{\"weight_map\":{\"a\":\"m.safe", "unterminated string"},
		{"{\"weight_map\":{\"a\\u0000\":\"m.safetensors\"}}", "\\u0000 is not allowed"},
		{"{\"weight_map\":{\"a\xff\":\"m.safetensors\"}}", "invalid UTF-8"},
		{"{\"weight_map\":[]}", "weight_map of the index is not an object"},
		{"{\"weight_map\":{\"a\":1}}", "shard of tensor \"a\" in the weight_map of the index is not a string"},
		{"{\"weight_map\":{\"a\":null}}", "is not a string"},
		{"{\"weight_map\":{\"\":\"m.safetensors\"}}", "empty tensor name in the weight_map"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\",\"a\":\"n.safetensors\"}}", "tensor \"a\" appears twice in the weight_map of the index"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\"},\"weight_map\":{}}", "duplicate key \"weight_map\" in the index"},
		{"{\"metadata\":{},\"metadata\":{},\"weight_map\":{}}", "duplicate key \"metadata\" in the index"},
		{"{\"weight_map\":{\"a\":\"m.safetensors\"},\"format\":\"pt\"}", "unknown key \"format\" in the index (only \"metadata\" and \"weight_map\")"},
		{"{\"metadata\":[],\"weight_map\":{}}", "metadata of the index is not an object"},
		{"{\"metadata\":{\"total_size\":\"12\"},\"weight_map\":{}}", "metadata.total_size of the index is not a non-negative integer"},
		{"{\"metadata\":{\"total_size\":-1},\"weight_map\":{}}", "not a non-negative integer"},
		{"{\"metadata\":{\"total_size\":1.5e9},\"weight_map\":{}}", "not a non-negative integer"},
		{"{\"metadata\":{\"total_size\":18446744073709551616},\"weight_map\":{}}", "metadata.total_size of the index is above 2^64 - 1"},
		{"{\"metadata\":{\"total_size\":1,\"total_size\":1},\"weight_map\":{\"a\":\"m.safetensors\"}}", "duplicate metadata key \"total_size\" in the index"},
		{"{\"metadata\":{\"k\":1,\"j\":2,\"k\":[]},\"weight_map\":{\"a\":\"m.safetensors\"}}", "duplicate metadata key \"k\""},
		{"{\"metadata\":{\"k\":tru},\"weight_map\":{}}", "invalid value"},
		{"{\"metadata\":{\"k\":-},\"weight_map\":{}}", "invalid value"},
		{"{\"metadata\":{\"k\":[1,]},\"weight_map\":{}}", "invalid value"},
		{"{\"metadata\":{\"k\":[1 2]},\"weight_map\":{}}", "expected ',' or ']'"},
		{"{\"metadata\":{\"k\":{\"a\" 1}},\"weight_map\":{}}", "expected ':'"},
		{"{\"metadata\":{\"k\":", "expected a value"},
		{"{\"metadata\":{\"k\":[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]},\"weight_map\":{}}", "value of metadata key \"k\" is nested deeper than 16 levels"},
		/* shard file names */
		{"{\"weight_map\":{\"a\":\"../x.safetensors\"}}", "shard file name \"../x.safetensors\" of tensor \"a\" is not allowed: it holds a '/' or '\\': shards must be in the index's directory"},
		{"{\"weight_map\":{\"a\":\"/etc/x.safetensors\"}}", "holds a '/'"},
		{"{\"weight_map\":{\"a\":\"d\\/x.safetensors\"}}", "holds a '/'"},
		{"{\"weight_map\":{\"a\":\"..\\\\x.safetensors\"}}", "holds a '/' or '\\'"},
		{"{\"weight_map\":{\"a\":\"..\"}}", "it starts with '.'"},
		{"{\"weight_map\":{\"a\":\".safetensors\"}}", "it starts with '.'"},
		{"{\"weight_map\":{\"a\":\".hidden.safetensors\"}}", "it starts with '.'"},
		{"{\"weight_map\":{\"a\":\"\"}}", "shard file name \"\" of tensor \"a\" is not allowed: it is empty"},
		{"{\"weight_map\":{\"a\":\"model.bin\"}}", "it does not end in \".safetensors\""},
		{"{\"weight_map\":{\"a\":\"model.safetensors.x\"}}", "does not end in \".safetensors\""},
		{"{\"weight_map\":{\"a\":\"x\\u0001.safetensors\"}}", "it holds a control character"},
		{"{\"weight_map\":{\"a\":\"x\\n.safetensors\"}}", "control character"},
		{"{\"weight_map\":{\"a\":\"x\\u0000.safetensors\"}}", "\\u0000 is not allowed"},
	};
	tfm_st_index *ix;
	tfm_status	err;
	int			st;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		ix = (tfm_st_index *) 1;
		st = parse(&ix, cases[i].json, &err);
		CHECK(st == TFM_EBADFILE && ix == NULL && strstr(err.msg, cases[i].frag) != NULL,
			  "case %zu (%s): status %d, \"%s\", wanted \"%s\"", i, cases[i].json, st, err.msg, cases[i].frag);
	}
	/* a NUL byte inside the index (raw, not escaped) */
	st = parse_n(&ix, "{\"weight_map\":{\"a\":\"m.safetensors\"}}\0", 37, &err);
	CHECK(st == TFM_EBADFILE && strstr(err.msg, "trailing bytes"), "raw NUL: %s", err.msg);
	st = parse_n(&ix, "{\"weight_map\":{\"a\0\":\"m.safetensors\"}}", 37, &err);
	CHECK(st == TFM_EBADFILE && strstr(err.msg, "control character"), "raw NUL in a string: %s", err.msg);
	/* names of 255 bytes pass, 256 fail */
	memset(long_name, 'n', sizeof(long_name));
	memcpy(long_name + 255 - 12, ".safetensors", 13);
	snprintf(j, sizeof(j), "{\"weight_map\":{\"a\":\"%s\"}}", long_name);
	st = parse(&ix, j, &err);
	CHECK(st == TFM_OK && strlen(ix->shards[0]) == 255, "a 255-byte shard name: %s", err.msg);
	tfm_st_index_free(ix);
	memset(long_name, 'n', sizeof(long_name));
	memcpy(long_name + 256 - 12, ".safetensors", 13);
	snprintf(j, sizeof(j), "{\"weight_map\":{\"a\":\"%s\"}}", long_name);
	st = parse(&ix, j, &err);
	CHECK(st == TFM_EBADFILE && strstr(err.msg, "it is longer than 255 bytes") &&
		  strstr(err.msg, "...\""), "a 256-byte shard name, quoted short: %s", err.msg);
	/* TFM_ST_MAX_SHARDS distinct shards pass, one more fails */
	for (int extra = 0; extra < 2; extra++)
	{
		size_t		n = TFM_ST_MAX_SHARDS + extra,
					cap = 64 + n * 48,
					o = 0;
		char	   *big = malloc(cap);

		o += (size_t) snprintf(big + o, cap - o, "{\"weight_map\":{");
		for (size_t i = 0; i < n; i++)
			o += (size_t) snprintf(big + o, cap - o, "%s\"t%zu\":\"s%zu.safetensors\"", i ? "," : "", i, i);
		o += (size_t) snprintf(big + o, cap - o, "}}");
		st = parse(&ix, big, &err);
		if (extra == 0)
		{
			CHECK(st == TFM_OK && ix->n_shards == TFM_ST_MAX_SHARDS, "%d shards: %s", TFM_ST_MAX_SHARDS, err.msg);
			tfm_st_index_free(ix);
		}
		else
			CHECK(st == TFM_EBADFILE && strstr(err.msg, "the index names 4097 shard files, more than the limit of 4096"),
				  "one shard too many: %s", err.msg);
		free(big);
	}
	/* the size limit comes first */
	st = tfm_st_parse_index(&ix, (const uint8_t *) "{}", (size_t) TFM_ST_MAX_INDEX + 1, &err);
	CHECK(st == TFM_EBADFILE && strstr(err.msg, "exceeds the limit"), "too large: %s", err.msg);
}

/* ---- fuzzing ------------------------------------------------------------------------ */

static long fuzz_cases,
			fuzz_ok;

static void
fuzz_one(const char *src, size_t len)
{
	tfm_st_index *ix = NULL;
	tfm_status	err;
	int			st;

	err.msg[0] = '\0';
	st = parse_n(&ix, src, len, &err);
	fuzz_cases++;
	if (st == TFM_OK)
	{
		int			bad = ix->n_tensors == 0 || ix->n_shards == 0 || ix->n_shards > ix->n_tensors;

		fuzz_ok++;
		for (size_t i = 0; i < ix->n_shards; i++)
		{
			size_t		n = strlen(ix->shards[i]);

			bad |= n <= 12 || n > TFM_ST_MAX_SHARD_NAME || strchr(ix->shards[i], '/') != NULL ||
				ix->shards[i][0] == '.' || strcmp(ix->shards[i] + n - 12, ".safetensors") != 0;
			bad |= i > 0 && strcmp(ix->shards[i - 1], ix->shards[i]) >= 0;
		}
		for (size_t i = 0; i < ix->n_tensors; i++)
		{
			const tfm_st_index_tensor *t = &ix->tensors[i];

			bad |= t->name_len == 0 || strlen(t->name) != t->name_len || t->shard >= ix->n_shards;
			bad |= i > 0 && strcmp(ix->tensors[i - 1].name, t->name) >= 0;
			bad |= tfm_st_index_find(ix, t->name, t->name_len) != (long) i;
		}
		CHECK(!bad, "fuzz: a parsed index of %zu bytes is inconsistent", len);
		tfm_st_index_free(ix);
	}
	else
		CHECK(ix == NULL && err.msg[0] != '\0' && strlen(err.msg) < sizeof(err.msg) &&
			  (st == TFM_EBADFILE || st == TFM_ENOMEM),
			  "fuzz: failure %d without a message or with a result", st);
}

/* a random valid index of 1..8 tensors in 1..3 shards */
static size_t
gen_valid(tfm_rng *rng, char *json, size_t cap)
{
	int			n = 1 + (int) tfm_rng_below(rng, 8),
				shards = 1 + (int) tfm_rng_below(rng, 3);
	size_t		o = 0;

	o += (size_t) snprintf(json + o, cap - o, "{");
	if (tfm_rng_below(rng, 2))
		o += (size_t) snprintf(json + o, cap - o, "\"metadata\": {\"total_size\": %d, \"v\": [1, {\"w\": null}]}, ",
							   (int) tfm_rng_below(rng, 100000));
	o += (size_t) snprintf(json + o, cap - o, "\"weight_map\": {");
	for (int i = 0; i < n; i++)
		o += (size_t) snprintf(json + o, cap - o, "%s\"layers.%d.w\\u00e9\": \"model-%05d-of-%05d.safetensors\"",
							   i ? ", " : "", i, 1 + (int) tfm_rng_below(rng, shards), shards);
	o += (size_t) snprintf(json + o, cap - o, "}}\n");
	return o;
}

static void
test_fuzz(void)
{
	static const char *tokens[] = {
		"{", "}", "[", "]", ":", ",", " ", "\"a\"", "\"b\"", "\"metadata\"", "\"weight_map\"",
		"\"total_size\"", "\"m.safetensors\"", "\"../m.safetensors\"", "\"x\"", "0", "12", "-1", "1.5",
		"18446744073709551616", "\"\\u00e9\"", "\"\\ud800\"", "\"\\u0000\"", "\xff", "\"", "\\",
		"true", "null", "\n", "\"weight_map\":{", "\"a\":\"m.safetensors\"",
	};
	const int	ntok = (int) (sizeof(tokens) / sizeof(tokens[0]));
	int			scale = quick_mode() ? 20 : 1;
	tfm_rng		rng;
	char		json[4096],
				m[4096];
	long		gen_ok = 0,
				gen_n = 20000 / scale;

	tfm_rng_seed(&rng, 20241125);
	for (long c = 0; c < gen_n; c++)
	{
		size_t		len = gen_valid(&rng, json, sizeof(json));
		long		before = fuzz_ok;

		fuzz_one(json, len);
		gen_ok += fuzz_ok > before;
		/* byte flips */
		for (int r = 0; r < 4; r++)
		{
			int			flips = 1 + (int) tfm_rng_below(&rng, 3);

			memcpy(m, json, len);
			for (int k = 0; k < flips; k++)
				m[tfm_rng_below(&rng, len)] ^= (char) (1 + tfm_rng_below(&rng, 255));
			fuzz_one(m, len);
		}
		/* a truncation and a span doubled */
		fuzz_one(json, tfm_rng_below(&rng, len));
		{
			size_t		a = tfm_rng_below(&rng, len),
						b = a + tfm_rng_below(&rng, len - a + 1);

			memcpy(m, json, b);
			memcpy(m + b, json + a, len - a);
			fuzz_one(m, b + len - a);
		}
	}
	CHECK(gen_ok == gen_n, "fuzz: %ld of %ld generated valid indexes parse", gen_ok, gen_n);
	/* random JSON from the token alphabet */
	for (long c = 0; c < 100000 / scale; c++)
	{
		size_t		o = 0;
		int			k = 1 + (int) tfm_rng_below(&rng, 24);

		for (int i = 0; i < k; i++)
		{
			const char *t = tokens[tfm_rng_below(&rng, ntok)];
			size_t		tl = strlen(t);

			memcpy(m + o, t, tl);
			o += tl;
		}
		fuzz_one(m, o);
	}
	printf("fuzz: %ld cases, %ld parsed\n", fuzz_cases, fuzz_ok);
}

int
main(void)
{
	test_valid();
	test_errors();
	test_fuzz();
	return check_summary("test_st_index");
}
