/*
 * test_safetensors.c: unit tests of the safetensors reader
 * (include/tfm/safetensors.h).
 *
 *   - a valid file built in memory: tensors sorted by offset with their
 *     dtypes, shapes, sizes and ranges, lookups by name, __metadata__,
 *     string escapes, whitespace, the two-step (streaming) API
 *   - F16 and BF16 to float32 against hand-computed values and, for all
 *     65536 bit patterns, against a formula; float32 to BF16 rounding
 *   - every refusal, each with a fragment of its message
 *   - fuzzing, seeded: byte flips, truncations at every length, random
 *     header lengths, random JSON from a token alphabet, spliced headers,
 *     numbers replaced, and generated valid files (which must parse).  Each case is
 *     parsed from an exactly sized copy, so valgrind sees any over-read; a
 *     success must describe tensors that tile the data buffer, a failure
 *     must say why.
 *
 * TFM_TEST_QUICK=1 shrinks the fuzzing (for valgrind).  Exits non-zero on
 * any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/rng.h"
#include "tfm/safetensors.h"

/* ---- building files ----------------------------------------------------------- */

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/* the length prefix, the header json, data_len bytes of data (zeros if NULL) */
static uint8_t *
make_file(size_t *len, const char *json, size_t json_len, const uint8_t *data, size_t data_len)
{
	uint8_t    *buf;

	*len = 8 + json_len + data_len;
	buf = calloc(*len ? *len : 1, 1);
	put_le64(buf, json_len);
	memcpy(buf + 8, json, json_len);
	if (data)
		memcpy(buf + 8 + json_len, data, data_len);
	return buf;
}

/* parses an exactly sized copy of json + data_len zero bytes */
static int
parse_json(tfm_st_file **f, const char *json, size_t data_len, tfm_status *err)
{
	size_t		len;
	uint8_t    *buf = make_file(&len, json, strlen(json), NULL, data_len);
	int			st = tfm_st_parse(f, buf, len, err);

	free(buf);
	return st;
}

static uint32_t
f32_bits(float x)
{
	uint32_t	u;

	memcpy(&u, &x, 4);
	return u;
}

static float
bits_f32(uint32_t u)
{
	float		x;

	memcpy(&x, &u, 4);
	return x;
}

/* ---- a valid file -------------------------------------------------------------- */

static void
test_valid(void)
{
	/* in the header out of file order; padded with spaces as writers do */
	const char *json =
		"{\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[32,34]},"
		" \"__metadata__\" : {\"format\":\"pt\",\"note\":\"caf\\u00e9\"},\n"
		"\t\"w\":{\"shape\":[2,3],\"dtype\":\"F32\",\"data_offsets\":[0,24]},"
		"\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[34,50]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
		"\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[34,34]}}      ";
	const float wv[6] = {1.0f, 2.0f, 3.0f, -4.0f, 0.5f, 1e30f};
	const uint16_t bv[4] = {0x3F80, 0xC000, 0x7F80, 0x0001};
	uint8_t		data[50];
	size_t		len;
	uint8_t    *buf;
	tfm_st_file *f = NULL,
			   *g = NULL;
	tfm_status	err;
	const tfm_st_tensor *t;
	float		out[8];
	uint64_t	n;
	int			st;

	memset(data, 0, sizeof(data));
	for (int i = 0; i < 6; i++)
	{
		uint32_t	u = f32_bits(wv[i]);

		for (int k = 0; k < 4; k++)
			data[4 * i + k] = (uint8_t) (u >> (8 * k));
	}
	for (int i = 0; i < 4; i++)
	{
		data[24 + 2 * i] = (uint8_t) bv[i];
		data[24 + 2 * i + 1] = (uint8_t) (bv[i] >> 8);
	}
	data[32] = 0x00;
	data[33] = 0x3C;			/* F16 1.0 */
	data[34] = 7;				/* I64 7, then 0 */
	buf = make_file(&len, json, strlen(json), data, sizeof(data));

	st = tfm_st_parse(&f, buf, len, &err);
	CHECK(st == TFM_OK, "valid file: %s", err.msg);
	if (st != TFM_OK)
	{
		free(buf);
		return;
	}
	CHECK(f->header_len == strlen(json), "header_len %llu", (unsigned long long) f->header_len);
	CHECK(f->data_start == 8 + strlen(json), "data_start");
	CHECK(f->data_len == 50, "data_len %llu", (unsigned long long) f->data_len);
	CHECK(f->n_tensors == 5, "n_tensors %zu", f->n_tensors);
	/* file order: w, b, s, e (empty, at 34), ids */
	{
		const char *order[5] = {"w", "b", "s", "e", "ids"};

		for (int i = 0; i < 5 && i < (int) f->n_tensors; i++)
			CHECK(strcmp(f->tensors[i].name, order[i]) == 0, "tensor %d is %s, want %s",
				  i, f->tensors[i].name, order[i]);
	}
	t = tfm_st_find(f, "w", 1);
	CHECK(t && t->dtype == TFM_ST_F32 && t->ndim == 2 && t->dims[0] == 2 && t->dims[1] == 3 &&
		  t->dims[2] == 0 && t->n_values == 6 && t->begin == 0 && t->end == 24 && t->name_len == 1,
		  "tensor w");
	t = tfm_st_find(f, "b", 1);
	CHECK(t && t->dtype == TFM_ST_BF16 && t->ndim == 1 && t->dims[0] == 4 && t->n_values == 4 &&
		  t->begin == 24 && t->end == 32, "tensor b");
	t = tfm_st_find(f, "s", 1);
	CHECK(t && t->dtype == TFM_ST_F16 && t->ndim == 0 && t->n_values == 1 &&
		  t->begin == 32 && t->end == 34, "tensor s (a scalar)");
	t = tfm_st_find(f, "e", 1);
	CHECK(t && t->ndim == 2 && t->dims[0] == 0 && t->dims[1] == 5 && t->n_values == 0 &&
		  t->begin == 34 && t->end == 34, "tensor e (empty)");
	t = tfm_st_find(f, "ids", 3);
	CHECK(t && t->dtype == TFM_ST_I64 && t->n_values == 2 && t->begin == 34 && t->end == 50, "tensor ids");
	CHECK(tfm_st_find(f, "idsx", 4) == NULL && tfm_st_find(f, "id", 2) == NULL &&
		  tfm_st_find(f, "idsx", 3) != NULL && tfm_st_find(f, "", 0) == NULL, "find by length");
	CHECK(f->n_meta == 2, "n_meta %zu", f->n_meta);
	CHECK(tfm_st_meta_get(f, "format") && strcmp(tfm_st_meta_get(f, "format"), "pt") == 0, "meta format");
	CHECK(tfm_st_meta_get(f, "note") && strcmp(tfm_st_meta_get(f, "note"), "caf\xc3\xa9") == 0, "meta note");
	CHECK(tfm_st_meta_get(f, "nope") == NULL, "meta absent");

	/* values */
	t = tfm_st_find(f, "w", 1);
	st = tfm_st_tensor_to_f32(out, t, buf + f->data_start + t->begin, t->end - t->begin, &err);
	CHECK(st == TFM_OK && memcmp(out, wv, sizeof(wv)) == 0, "w values");
	t = tfm_st_find(f, "b", 1);
	st = tfm_st_tensor_to_f32(out, t, buf + f->data_start + t->begin, t->end - t->begin, &err);
	CHECK(st == TFM_OK && out[0] == 1.0f && out[1] == -2.0f && isinf(out[2]) && out[2] > 0 &&
		  f32_bits(out[3]) == 0x00010000, "b values");
	t = tfm_st_find(f, "s", 1);
	st = tfm_st_tensor_to_f32(out, t, buf + f->data_start + t->begin, t->end - t->begin, &err);
	CHECK(st == TFM_OK && out[0] == 1.0f, "s value");
	st = tfm_st_tensor_to_f32(out, t, buf + f->data_start + t->begin, 3, &err);
	CHECK(st == TFM_EINVAL && strstr(err.msg, "tensor \"s\" has 2 bytes, 3 given"), "wrong size: %s", err.msg);
	t = tfm_st_find(f, "ids", 3);
	st = tfm_st_tensor_to_f32(out, t, buf + f->data_start + t->begin, t->end - t->begin, &err);
	CHECK(st == TFM_EUNSUPPORTED && strstr(err.msg, "dtype I64 of tensor \"ids\" is not supported"),
		  "I64 refused: %s", err.msg);
	CHECK(tfm_st_to_f32(out, data, 1, TFM_ST_F64) == TFM_EUNSUPPORTED, "F64 refused");

	/* the two steps a streaming reader takes give the same */
	st = tfm_st_header_length(&n, buf, 8, len, &err);
	CHECK(st == TFM_OK && n == strlen(json), "header_length");
	st = tfm_st_parse_header(&g, buf + 8, (size_t) n, len, &err);
	CHECK(st == TFM_OK && g && g->n_tensors == 5 && g->data_len == 50, "parse_header: %s", err.msg);
	for (size_t i = 0; g && i < g->n_tensors; i++)
		CHECK(strcmp(g->tensors[i].name, f->tensors[i].name) == 0 &&
			  g->tensors[i].begin == f->tensors[i].begin && g->tensors[i].end == f->tensors[i].end,
			  "parse_header tensor %zu", i);
	st = tfm_st_header_length(&n, buf, 7, len, &err);
	CHECK(st == TFM_EINVAL && n == 0, "header_length with 7 bytes given");
	tfm_st_free(g);
	tfm_st_free(f);
	free(buf);

	/* names with escapes; an empty header; whitespace everywhere allowed */
	st = parse_json(&f, "{\"a\\\"b\\\\\\/\\u00e9\\ud83d\\ude00\\n\\t\\b\\f\\r\xe2\x82\xac\":"
					"{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &err);
	CHECK(st == TFM_OK && f->n_tensors == 1 &&
		  strcmp(f->tensors[0].name, "a\"b\\/\xc3\xa9\xf0\x9f\x98\x80\n\t\b\f\r\xe2\x82\xac") == 0 &&
		  f->tensors[0].name_len == 19, "escaped name: %s", err.msg);
	tfm_st_free(f);
	st = parse_json(&f, "{}", 0, &err);
	CHECK(st == TFM_OK && f->n_tensors == 0 && f->n_meta == 0 && f->data_len == 0, "{}: %s", err.msg);
	tfm_st_free(f);
	st = parse_json(&f, "{ \"a\" :\r\n{ \"dtype\" : \"BF16\" , \"shape\" : [ 1 , 2 ] , "
					"\"data_offsets\" : [ 0 , 4 ] } , \"__metadata__\" : { } }\n\t \r", 4, &err);
	CHECK(st == TFM_OK && f->n_tensors == 1 && f->tensors[0].n_values == 2, "whitespace: %s", err.msg);
	tfm_st_free(f);
	st = parse_json(&f, "{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
					"\"b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[3,11]}}", 11, &err);
	CHECK(st == TFM_OK && f->n_tensors == 2 && f->tensors[1].dtype == TFM_ST_F64, "U8, F64: %s", err.msg);
	tfm_st_free(f);
}

/* ---- conversions --------------------------------------------------------------- */

static void
test_convert(void)
{
	const struct
	{
		uint16_t	h;
		float		want;
	}			f16[] =
	{
		{0x3C00, 1.0f}, {0xC000, -2.0f}, {0x0001, 5.9604644775390625e-08f},
		{0x03FF, 6.0975551605224609375e-05f}, {0x0400, 6.103515625e-05f},
		{0x7BFF, 65504.0f}, {0x3555, 0.333251953125f}, {0x8001, -5.9604644775390625e-08f},
		{0x0000, 0.0f}, {0x3800, 0.5f},
	};
	uint8_t		bytes[9];
	float		out[2];
	size_t		idx;
	int			bad = 0;

	for (size_t i = 0; i < sizeof(f16) / sizeof(f16[0]); i++)
		CHECK(tfm_f16_to_f32(f16[i].h) == f16[i].want, "f16 0x%04x -> %.9g, want %.9g",
			  f16[i].h, tfm_f16_to_f32(f16[i].h), f16[i].want);
	CHECK(isinf(tfm_f16_to_f32(0x7C00)) && tfm_f16_to_f32(0x7C00) > 0, "f16 0x7c00 = inf");
	CHECK(isinf(tfm_f16_to_f32(0xFC00)) && tfm_f16_to_f32(0xFC00) < 0, "f16 0xfc00 = -inf");
	CHECK(isnan(tfm_f16_to_f32(0x7E00)) && isnan(tfm_f16_to_f32(0x7C01)) && isnan(tfm_f16_to_f32(0xFFFF)),
		  "f16 NaNs");
	CHECK(f32_bits(tfm_f16_to_f32(0x8000)) == 0x80000000u, "f16 -0");

	/* every F16 pattern against sign · mant · 2^(exp - 25) */
	for (uint32_t h = 0; h < 65536; h++)
	{
		uint32_t	e = (h >> 10) & 0x1F,
					m = h & 0x3FF;
		double		v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, (int) e - 25);
		float		got = tfm_f16_to_f32((uint16_t) h);

		if (h & 0x8000)
			v = -v;
		if (e == 0x1F)
			bad += m ? !isnan(got) : !(isinf(got) && (got < 0) == ((h & 0x8000) != 0));
		else
			bad += (double) got != v || (f32_bits(got) >> 31) != (h >> 15);
	}
	CHECK(bad == 0, "%d of 65536 F16 patterns convert wrong", bad);

	CHECK(tfm_bf16_to_f32(0x3F80) == 1.0f && tfm_bf16_to_f32(0xC000) == -2.0f, "bf16 1, -2");
	CHECK(f32_bits(tfm_bf16_to_f32(0x0001)) == 0x00010000u, "bf16 subnormal");
	CHECK(isinf(tfm_bf16_to_f32(0x7F80)) && tfm_bf16_to_f32(0xFF80) < 0 && isnan(tfm_bf16_to_f32(0x7FC0)),
		  "bf16 inf, -inf, nan");
	bad = 0;
	for (uint32_t b = 0; b < 65536; b++)
	{
		float		x = tfm_bf16_to_f32((uint16_t) b);

		bad += f32_bits(x) != b << 16;
		if (!isnan(x))
			bad += tfm_f32_to_bf16(x) != b;
		else
			bad += !isnan(tfm_bf16_to_f32(tfm_f32_to_bf16(x)));
	}
	CHECK(bad == 0, "%d of 65536 BF16 patterns convert or round trip wrong", bad);
	CHECK(tfm_f32_to_bf16(bits_f32(0x3F808000)) == 0x3F80, "tie to even (down)");
	CHECK(tfm_f32_to_bf16(bits_f32(0x3F818000)) == 0x3F82, "tie to even (up)");
	CHECK(tfm_f32_to_bf16(bits_f32(0x3F808001)) == 0x3F81, "above the tie");
	CHECK(tfm_f32_to_bf16(bits_f32(0x3F807FFF)) == 0x3F80, "below the tie");
	CHECK(tfm_f32_to_bf16(bits_f32(0x7F7FFFFF)) == 0x7F80, "max float rounds to inf");
	CHECK(tfm_f32_to_bf16(bits_f32(0xFF7FFFFF)) == 0xFF80, "-max float rounds to -inf");
	CHECK(tfm_f32_to_bf16(-0.0f) == 0x8000, "bf16 -0");
	CHECK(isnan(tfm_bf16_to_f32(tfm_f32_to_bf16(bits_f32(0x7F800001)))), "NaN with a low payload stays NaN");

	/* little-endian bytes at any alignment */
	bytes[1] = 0x00;
	bytes[2] = 0x00;
	bytes[3] = 0x80;
	bytes[4] = 0x3F;			/* 1.0f */
	bytes[5] = 0x00;
	bytes[6] = 0x00;
	bytes[7] = 0x20;
	bytes[8] = 0xC1;			/* -10.0f */
	CHECK(tfm_st_to_f32(out, bytes + 1, 2, TFM_ST_F32) == TFM_OK && out[0] == 1.0f && out[1] == -10.0f,
		  "unaligned F32");
	bytes[1] = 0x00;
	bytes[2] = 0x3C;
	bytes[3] = 0x00;
	bytes[4] = 0xFC;
	CHECK(tfm_st_to_f32(out, bytes + 1, 2, TFM_ST_F16) == TFM_OK && out[0] == 1.0f && isinf(out[1]) && out[1] < 0,
		  "unaligned F16");
	bytes[1] = 0x80;
	bytes[2] = 0x3F;
	bytes[3] = 0x00;
	bytes[4] = 0xC0;
	CHECK(tfm_st_to_f32(out, bytes + 1, 2, TFM_ST_BF16) == TFM_OK && out[0] == 1.0f && out[1] == -2.0f,
		  "unaligned BF16");

	{
		float		x[4] = {1.0f, 2.0f, NAN, INFINITY};

		CHECK(tfm_st_find_nonfinite(&idx, x, 4) == 1 && idx == 2, "first NaN at 2");
		CHECK(tfm_st_find_nonfinite(&idx, x + 3, 1) == 1 && idx == 0, "inf");
		CHECK(tfm_st_find_nonfinite(&idx, x, 2) == 0, "finite");
	}
	CHECK(tfm_st_dtype_size(TFM_ST_BF16) == 2 && tfm_st_dtype_size(TFM_ST_I64) == 8 &&
		  strcmp(tfm_st_dtype_name(TFM_ST_F8_E4M3), "F8_E4M3") == 0 && tfm_st_dtype_name(0) == NULL,
		  "dtype names and sizes");
}

/* ---- refusals ---------------------------------------------------------------------- */

#define T1(dtype, shape, offs) "{\"a\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offs "}}"

static void
test_errors(void)
{
	static const struct
	{
		const char *json;
		size_t		data_len;
		const char *frag;
	}			cases[] =
	{
		/* JSON */
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "at byte 53: expected ',' or '}'"},
		{"{\"a\" {}}", 0, "expected ':'"},
		{"{}x", 0, "at byte 2: trailing bytes after the JSON object"},
		{"{} {}", 0, "trailing bytes after the JSON object"},
		{"{}\0", 0, "trailing bytes"},
		{" {}", 0, "does not start with '{'"},
		{"[]", 0, "does not start with '{'"},
		{"{,}", 0, "expected a string"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "expected a string"},
		{"{\"a\":{\"dtype\":\"F32\",,\"shape\":[1]}}", 0, "expected a string"},
		{T1("F32", "[1,]", "[0,4]"), 4, "invalid number"},
		{T1("F32", "[01]", "[0,4]"), 4, "expected ',' or ']'"},
		{T1("F32", "[1 2]", "[0,4]"), 4, "expected ',' or ']'"},
		{T1("F32", "[-]", "[0,4]"), 4, "invalid number"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1", 0, "at byte 30: expected ',' or ']'"},
		{"{\"a", 0, "unterminated string"},
		{"{\"a\\", 0, "unterminated string"},
		{"{\"a\nb\":{}}", 0, "control character in a string"},
		{"{\"a\\x\":{}}", 0, "invalid escape"},
		{"{\"a\\u12\"}", 0, "invalid \\u escape"},
		{"{\"a\\u12", 0, "truncated \\u escape"},
		{"{\"a\\ud800\":{}}", 0, "high surrogate not followed by a \\u escape"},
		{"{\"a\\ud800\\u0041\":{}}", 0, "high surrogate not followed by a low surrogate"},
		{"{\"a\\udc00\":{}}", 0, "lone low surrogate"},
		{"{\"a\\u0000\":{}}", 0, "\\u0000 is not allowed"},
		{"{\"a\xff\":{}}", 0, "invalid UTF-8"},
		{"{\"a\xc0\xaf\":{}}", 0, "invalid UTF-8"},	/* overlong '/' */
		{"{\"a\xed\xa0\x80\":{}}", 0, "invalid UTF-8"},	/* a surrogate */
		{"{\"a\xf4\x90\x80\x80\":{}}", 0, "invalid UTF-8"},	/* above U+10FFFF */
		{"{\"a\xe2\x82\":{}}", 0, "invalid UTF-8"},	/* cut short */
		/* schema */
		{T1("Q4", "[1]", "[0,4]"), 4, "unknown dtype \"Q4\" of tensor \"a\""},
		{T1("f32", "[1]", "[0,4]"), 4, "unknown dtype \"f32\""},
		{"{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype of tensor \"a\" is not a string"},
		{"{\"a\":[1]}", 0, "entry of tensor \"a\" is not an object"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4,
		"unknown field \"extra\" in tensor \"a\""},
		{"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor \"a\" has no shape"},
		{"{\"a\":{}}", 0, "tensor \"a\" has no dtype"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor \"a\" has no data_offsets"},
		{"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		"duplicate field \"dtype\" in tensor \"a\""},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate field \"shape\""},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"data_offsets\":[0,4]}}", 4,
		"duplicate field \"data_offsets\""},
		{"{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty tensor name"},
		{T1("F32", "[-1]", "[0,4]"), 4, "shape of tensor \"a\" holds a negative number"},
		{T1("F32", "[-0]", "[0,0]"), 0, "shape of tensor \"a\" holds a negative number"},
		{T1("F32", "[1.5]", "[0,4]"), 4, "holds a number that is not an integer"},
		{T1("F32", "[1e2]", "[0,4]"), 4, "holds a number that is not an integer"},
		{T1("F32", "[\"1\"]", "[0,4]"), 4, "shape of tensor \"a\" must be an array of integers"},
		{T1("F32", "[null]", "[0,4]"), 4, "must be an array of integers"},
		{T1("F32", "1", "[0,4]"), 4, "shape of tensor \"a\" is not an array"},
		{T1("F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), 4, "rank of tensor \"a\" exceeds the limit of 8"},
		{T1("F32", "[18446744073709551616]", "[0,4]"), 4, "holds an integer above 2^64 - 1"},
		{T1("F32", "[4294967296,4294967296,2]", "[0,4]"), 4, "number of values overflows 64 bits"},
		{T1("F32", "[4294967296,4294967296,0]", "[0,0]"), 0, "number of values overflows 64 bits"},
		{T1("F32", "[4611686018427387904]", "[0,4]"), 4, "byte size overflows 64 bits"},
		{T1("F32", "[1]", "[0,4,8]"), 8, "data_offsets of tensor \"a\" must be 2 integers"},
		{T1("F32", "[1]", "[4]"), 4, "data_offsets of tensor \"a\" must be 2 integers"},
		{T1("F32", "[1]", "[-4,0]"), 4, "data_offsets of tensor \"a\" holds a negative number"},
		{T1("F32", "[1]", "[8,4]"), 8, "data_offsets [8, 4] of tensor \"a\" end before they begin"},
		{T1("F32", "[2]", "[0,4]"), 4,
		"shape of tensor \"a\" does not match its data_offsets: 2 values of F32 are 8 bytes, [0, 4] holds 4"},
		{T1("BF16", "[2,3]", "[0,6]"), 6, "12 bytes, [0, 6] holds 6"},
		{T1("F32", "[2]", "[0,8]"), 4, "data_offsets [0, 8] of tensor \"a\" lie outside the data buffer of 4 bytes"},
		{T1("F32", "[0]", "[9,9]"), 4, "outside the data buffer"},
		{T1("F32", "[1]", "[4,8]"), 8, "bytes 0 to 4 of the data buffer, before tensor \"a\", belong to no tensor"},
		{T1("F32", "[1]", "[0,4]"), 5, "bytes 4 to 5 at the end of the data buffer belong to no tensor"},
		{"{}", 1, "bytes 0 to 1 at the end"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
			"\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
		"data of tensors \"a\" [0, 8] and \"b\" [4, 12] overlap"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
			"\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8, "overlap"},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
			"\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		"duplicate tensor name \"a\""},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
			"\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate tensor name \"a\""},
		/* metadata */
		{"{\"__metadata__\":[]}", 0, "__metadata__ of the safetensors header is not an object"},
		{"{\"__metadata__\":{\"k\":1}}", 0, "value of metadata key \"k\" is not a string"},
		{"{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0, "value of metadata key \"k\" is not a string"},
		{"{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", 0, "duplicate metadata key \"k\""},
		{"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate key \"__metadata__\""},
		{"{\"__metadata__\":{\"k\":\"v\"", 0, "expected ',' or '}'"},
	};
	tfm_st_file *f;
	tfm_status	err;
	char		deep[4200];
	size_t		o;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		/* "{}\0" is three bytes */
		size_t		jl = strlen(cases[i].json) + (strcmp(cases[i].frag, "trailing bytes") == 0);
		size_t		len;
		uint8_t    *buf = make_file(&len, cases[i].json, jl, NULL, cases[i].data_len);
		int			st;

		f = (tfm_st_file *) 1;
		strcpy(err.msg, "stale");
		st = tfm_st_parse(&f, buf, len, &err);
		CHECK(st == TFM_EBADFILE && f == NULL && strstr(err.msg, cases[i].frag) != NULL,
			  "case %zu %s: status %d, message \"%s\", want \"%s\"", i, cases[i].json, st, err.msg,
			  cases[i].frag);
		free(buf);
	}

	/* nesting deeper than the schema fails where it starts, with no recursion */
	o = (size_t) sprintf(deep, "{\"a\":{\"dtype\":\"F32\",\"shape\":");
	while (o < 4100)
		deep[o++] = '[';
	deep[o] = '\0';
	CHECK(parse_json(&f, deep, 0, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "shape of tensor \"a\" must be an array of integers"), "deep shape: %s", err.msg);
	o = (size_t) sprintf(deep, "{\"__metadata__\":{\"k\":");
	while (o < 4100)
		o += (size_t) sprintf(deep + o, "{\"k\":");
	CHECK(parse_json(&f, deep, 0, &err) == TFM_EBADFILE && strstr(err.msg, "is not a string"),
		  "deep metadata: %s", err.msg);
	o = (size_t) sprintf(deep, "{\"a\":");
	while (o < 4100)
		deep[o++] = '[';
	deep[o] = '\0';
	CHECK(parse_json(&f, deep, 0, &err) == TFM_EBADFILE && strstr(err.msg, "is not an object"),
		  "deep entry: %s", err.msg);

	/* long names are cut in messages, on a character boundary */
	o = (size_t) sprintf(deep, "{\"a");
	for (int i = 0; i < 40; i++)
		o += (size_t) sprintf(deep + o, "\xc3\xa9");	/* 80 bytes */
	sprintf(deep + o, "\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,4]}}");
	CHECK(parse_json(&f, deep, 4, &err) == TFM_EBADFILE &&
		  strstr(err.msg, "\"a\xc3\xa9") && strstr(err.msg, "\xc3\xa9...\"") != NULL && strlen(err.msg) < 120,
		  "long name cut: %s", err.msg);

	/* the header length */
	{
		uint8_t		b[64];
		uint64_t	n;
		int			st;

		memset(b, ' ', sizeof(b));
		memcpy(b + 8, "{}", 2);
		st = tfm_st_parse(&f, b, 5, &err);
		CHECK(st == TFM_EBADFILE && f == NULL &&
			  strstr(err.msg, "file of 5 bytes is too short for a safetensors header length"),
			  "5-byte file: %s", err.msg);
		st = tfm_st_parse(&f, b, 0, &err);
		CHECK(st == TFM_EBADFILE && strstr(err.msg, "file of 0 bytes"), "empty file: %s", err.msg);
		put_le64(b, 1);
		st = tfm_st_parse(&f, b, 20, &err);
		CHECK(st == TFM_EBADFILE && strstr(err.msg, "header length 1 is too small"), "N = 1: %s", err.msg);
		put_le64(b, 0);
		st = tfm_st_parse(&f, b, 20, &err);
		CHECK(st == TFM_EBADFILE && strstr(err.msg, "header length 0 is too small"), "N = 0: %s", err.msg);
		put_le64(b, 57);
		st = tfm_st_parse(&f, b, 64, &err);
		CHECK(st == TFM_EBADFILE && strstr(err.msg, "header length 57 exceeds the file: 56 bytes follow"),
			  "N > file: %s", err.msg);
		put_le64(b, 56);
		st = tfm_st_parse(&f, b, 64, &err);
		CHECK(st == TFM_OK && f && f->data_len == 0, "N = the rest of the file (spaces): %s", err.msg);
		tfm_st_free(f);
		put_le64(b, TFM_ST_MAX_HEADER + 1);
		st = tfm_st_header_length(&n, b, 8, (uint64_t) 1 << 40, &err);
		CHECK(st == TFM_EBADFILE && n == 0 && strstr(err.msg, "header length 100000001 exceeds the limit of 100000000"),
			  "N > limit: %s", err.msg);
		put_le64(b, UINT64_MAX);
		st = tfm_st_header_length(&n, b, 8, UINT64_MAX, &err);
		CHECK(st == TFM_EBADFILE && strstr(err.msg, "exceeds the limit"), "N = 2^64 - 1: %s", err.msg);
		put_le64(b, TFM_ST_MAX_HEADER);
		st = tfm_st_header_length(&n, b, 8, 8 + TFM_ST_MAX_HEADER, &err);
		CHECK(st == TFM_OK && n == TFM_ST_MAX_HEADER, "N = the limit: %s", err.msg);
		/* parse_header rechecks what header_length checked */
		st = tfm_st_parse_header(&f, b + 8, 2, 9, &err);
		CHECK(st == TFM_EBADFILE && f == NULL && strstr(err.msg, "exceeds the file"),
			  "parse_header, header beyond the file: %s", err.msg);
	}
}

/* ---- fuzzing ------------------------------------------------------------------------ */

static long fuzz_cases,
			fuzz_ok;

/*
 * Parses an exactly sized copy of src[0 .. len): a success must describe
 * tensors tiling the data buffer (whose floats then convert), a failure
 * must leave nothing and say why.  Returns the status.
 */
static int
fuzz_one(const uint8_t *src, size_t len)
{
	uint8_t    *buf = malloc(len ? len : 1);
	tfm_st_file *f = NULL;
	tfm_status	err;
	int			st;

	memcpy(buf, src, len);
	err.msg[0] = '\0';
	st = tfm_st_parse(&f, buf, len, &err);
	fuzz_cases++;
	if (st == TFM_OK)
	{
		uint64_t	at = 0;
		int			bad = 0;

		fuzz_ok++;
		bad |= f->data_start != 8 + f->header_len || f->data_start + f->data_len != len;
		for (size_t i = 0; i < f->n_tensors; i++)
		{
			const tfm_st_tensor *t = &f->tensors[i];

			bad |= t->begin != at || t->end < t->begin || t->end > f->data_len;
			bad |= t->name_len == 0 || strlen(t->name) != t->name_len;
			bad |= tfm_st_find(f, t->name, t->name_len) != t;
			bad |= t->n_values * tfm_st_dtype_size(t->dtype) != t->end - t->begin;
			at = t->end;
			if (!bad && tfm_st_dtype_is_float(t->dtype))
			{
				float	   *v = malloc(sizeof(float) * (t->n_values + 1));
				size_t		idx;

				bad |= tfm_st_tensor_to_f32(v, t, buf + f->data_start + t->begin,
											(size_t) (t->end - t->begin), NULL) != TFM_OK;
				(void) tfm_st_find_nonfinite(&idx, v, (size_t) t->n_values);
				free(v);
			}
		}
		bad |= at != f->data_len;
		for (size_t i = 0; i < f->n_meta; i++)
			bad |= strlen(f->meta[i].key) + strlen(f->meta[i].value) > f->header_len;
		CHECK(!bad, "fuzz: a parsed file of %zu bytes is inconsistent", len);
		tfm_st_free(f);
	}
	else
		CHECK(f == NULL && err.msg[0] != '\0' && strlen(err.msg) < sizeof(err.msg) &&
			  (st == TFM_EBADFILE || st == TFM_ENOMEM),
			  "fuzz: failure %d without a message or with a result", st);
	free(buf);
	return st;
}

/* a random valid file: 1..6 tensors of random dtypes and shapes, tiling the data */
static uint8_t *
gen_valid(tfm_rng *rng, size_t *len, char *json, size_t cap)
{
	static const char *names[] = {"F32", "F16", "BF16", "I64", "U8", "BOOL"};
	static const size_t sizes[] = {4, 2, 2, 8, 1, 1};
	int			n = 1 + (int) tfm_rng_below(rng, 6);
	size_t		o = 0,
				at = 0;
	uint8_t    *buf;

	o += (size_t) snprintf(json + o, cap - o, "{");
	if (tfm_rng_below(rng, 2))
		o += (size_t) snprintf(json + o, cap - o, "\"__metadata__\":{\"format\":\"pt\"},");
	for (int i = 0; i < n; i++)
	{
		int			d = (int) tfm_rng_below(rng, 6),
					rank = (int) tfm_rng_below(rng, 4);
		size_t		count = 1;

		o += (size_t) snprintf(json + o, cap - o, "%s\"t%d.w\\u00e9\":{\"dtype\":\"%s\",\"shape\":[",
							   i ? "," : "", i, names[d]);
		for (int k = 0; k < rank; k++)
		{
			size_t		dim = tfm_rng_below(rng, 4);

			count *= dim;
			o += (size_t) snprintf(json + o, cap - o, "%s%zu", k ? "," : "", dim);
		}
		o += (size_t) snprintf(json + o, cap - o, "],\"data_offsets\":[%zu,%zu]}", at, at + count * sizes[d]);
		at += count * sizes[d];
	}
	o += (size_t) snprintf(json + o, cap - o, "}");
	while (o % 8 && o + 1 < cap)
		json[o++] = ' ';
	json[o] = '\0';
	buf = make_file(len, json, o, NULL, at);
	for (size_t i = 0; i < at; i++)
		buf[8 + o + i] = (uint8_t) tfm_rng_next(rng);
	return buf;
}

static void
test_fuzz(void)
{
	static const char *tokens[] = {
		"{", "}", "[", "]", ":", ",", " ", "\"a\"", "\"b\"", "\"dtype\"", "\"shape\"",
		"\"data_offsets\"", "\"__metadata__\"", "\"F32\"", "\"BF16\"", "\"I64\"", "0", "4", "8",
		"-1", "1.5", "1e3", "18446744073709551615", "18446744073709551616", "\"\\u00e9\"",
		"\"\\ud83d\\ude00\"", "\"\\ud800\"", "\"\\u0000\"", "\xff", "\xc3", "\"", "\\", "true",
		"null", "\n", "\"x\":{", "\"dtype\":\"F32\",", "\"shape\":[1],", "\"data_offsets\":[0,4]",
	};
	const int	ntok = (int) (sizeof(tokens) / sizeof(tokens[0]));
	int			scale = quick_mode() ? 20 : 1;
	tfm_rng		rng;
	char		json[4096];
	size_t		len,
				blen;
	uint8_t    *base,
			   *m;
	long		gen_ok = 0,
				gen_n;

	tfm_rng_seed(&rng, 20240917);

	/* generated valid files must parse; then mutate them */
	gen_n = 20000 / scale;
	for (long c = 0; c < gen_n; c++)
	{
		base = gen_valid(&rng, &blen, json, sizeof(json));
		gen_ok += fuzz_one(base, blen) == TFM_OK;
		m = malloc(blen);
		/* byte flips: 1..4 random bytes, mostly in the length and the header */
		for (int r = 0; r < 4; r++)
		{
			int			flips = 1 + (int) tfm_rng_below(&rng, 4);
			size_t		hl8 = 8 + strlen(json);

			memcpy(m, base, blen);
			for (int k = 0; k < flips; k++)
			{
				size_t		pos = tfm_rng_below(&rng, 4) ? tfm_rng_below(&rng, hl8) : tfm_rng_below(&rng, blen);

				m[pos] ^= (uint8_t) (1 + tfm_rng_below(&rng, 255));
			}
			fuzz_one(m, blen);
		}
		/* random header lengths */
		for (int r = 0; r < 2; r++)
		{
			uint64_t	n;

			memcpy(m, base, blen);
			switch (tfm_rng_below(&rng, 3))
			{
				case 0:
					n = tfm_rng_below(&rng, blen + 16);
					break;
				case 1:
					n = tfm_rng_next(&rng) >> tfm_rng_below(&rng, 64);
					break;
				default:
					n = strlen(json) + tfm_rng_below(&rng, 17) - 8;
			}
			put_le64(m, n);
			fuzz_one(m, blen);
		}
		/* a span of the header deleted or doubled, the length fixed up */
		{
			size_t		hl = strlen(json),
						a = tfm_rng_below(&rng, hl),
						b = a + tfm_rng_below(&rng, hl - a + 1),
						nl = 0;
			char	   *nj = malloc(2 * hl + 1);

			memcpy(nj, json, b);
			nl = b;
			if (tfm_rng_below(&rng, 2))
			{
				memcpy(nj + nl, json + a, b - a);
				nl += b - a;
				memcpy(nj + nl, json + b, hl - b);
				nl += hl - b;
			}
			else
			{
				nl = a;
				memcpy(nj + nl, json + b, hl - b);
				nl += hl - b;
			}
			free(m);
			m = make_file(&len, nj, nl, base + 8 + hl, blen - 8 - hl);
			fuzz_one(m, len);
			free(nj);
		}
		/* one number of the header replaced by an interesting one */
		{
			static const char *nums[] = {
				"0", "1", "-1", "3", "7", "1.0", "2e1", "65536", "4294967296",
				"9223372036854775808", "18446744073709551615", "18446744073709551616",
			};
			size_t		hl = strlen(json),
						a = tfm_rng_below(&rng, hl),
						b;
			char	   *nj = malloc(hl + 32);
			const char *num = nums[tfm_rng_below(&rng, sizeof(nums) / sizeof(nums[0]))];

			while (a < hl && (json[a] < '0' || json[a] > '9'))
				a++;
			for (b = a; b < hl && json[b] >= '0' && json[b] <= '9'; b++)
				;
			memcpy(nj, json, a);
			memcpy(nj + a, num, strlen(num));
			memcpy(nj + a + strlen(num), json + b, hl - b);
			free(m);
			m = make_file(&len, nj, a + strlen(num) + hl - b, base + 8 + hl, blen - 8 - hl);
			fuzz_one(m, len);
			free(nj);
		}
		free(m);
		free(base);
	}
	CHECK(gen_ok == gen_n, "fuzz: %ld of %ld generated valid files parse", gen_ok, gen_n);

	/* truncation at every length, of a small file and of its header alone */
	base = gen_valid(&rng, &blen, json, sizeof(json));
	for (size_t k = 0; k <= blen; k++)
		CHECK(fuzz_one(base, k) != TFM_OK || k == blen, "truncated to %zu bytes, still parses", k);
	for (size_t k = 0; k < strlen(json); k++)
	{
		m = make_file(&len, json, k, base + 8 + strlen(json), blen - 8 - strlen(json));
		fuzz_one(m, len);
		free(m);
		m = make_file(&len, json, k, NULL, 0);
		fuzz_one(m, len);
		free(m);
	}
	free(base);

	/* random JSON from a token alphabet, with 0..16 bytes of data */
	for (long c = 0; c < 40000 / scale; c++)
	{
		size_t		o = 0;
		int			nt = 1 + (int) tfm_rng_below(&rng, 48);

		if (tfm_rng_below(&rng, 4))
			json[o++] = '{';
		for (int k = 0; k < nt; k++)
		{
			const char *tk = tokens[tfm_rng_below(&rng, ntok)];
			size_t		tl = strlen(tk);

			memcpy(json + o, tk, tl);
			o += tl;
		}
		if (tfm_rng_below(&rng, 2))
			json[o++] = '}';
		m = make_file(&len, json, o, NULL, tfm_rng_below(&rng, 17));
		fuzz_one(m, len);
		free(m);
	}

	/* random bytes */
	for (long c = 0; c < 10000 / scale; c++)
	{
		size_t		n = tfm_rng_below(&rng, 64);

		m = malloc(n + 1);
		for (size_t i = 0; i < n; i++)
			m[i] = (uint8_t) tfm_rng_next(&rng);
		if (n >= 8 && tfm_rng_below(&rng, 2))
			put_le64(m, tfm_rng_below(&rng, n - 7));
		fuzz_one(m, n);
		free(m);
	}
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  fuzz: %ld cases, %ld parsed\n", fuzz_cases, fuzz_ok);
	CHECK(fuzz_cases > 1000 / scale && fuzz_ok > 0 && fuzz_ok < fuzz_cases, "fuzz: %ld cases, %ld parsed",
		  fuzz_cases, fuzz_ok);
}

int
main(void)
{
	test_valid();
	test_convert();
	test_errors();
	test_fuzz();
	return check_summary("test_safetensors");
}
