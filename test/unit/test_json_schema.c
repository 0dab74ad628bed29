/*
 * test_json_schema.c — constrained decoding's core (tfm/json_schema.h):
 * schemas compiled or refused with their messages; accept/reject tables of
 * each schema's language (compact JSON, keys in order, required ones,
 * enums, numbers, strings with escapes and UTF-8, arrays with bounds,
 * anyOf); the trie's token mask equal to a naive one (every token's bytes
 * stepped alone) at every prefix of valid texts; and random walks through
 * the mask that always finish in a value of the language (no dead ends).
 */
#include "check.h"
#include "tfm/json_schema.h"
#include "tfm/rng.h"

static tfm_jschema *
compile_ok(const char *schema)
{
	tfm_jschema *s = NULL;
	tfm_status	st = {0};
	int			rc = tfm_jschema_compile(&s, schema, strlen(schema), &st);

	CHECK(rc == TFM_OK && s, "compile %s: %d %s", schema, rc, st.msg);
	return s;
}

static void
refused(const char *schema, int code, const char *msg)
{
	tfm_jschema *s = NULL;
	tfm_status	st = {0};
	int			rc = tfm_jschema_compile(&s, schema, strlen(schema), &st);

	CHECK(rc == code && s == NULL, "refuse %s: rc %d, want %d", schema, rc, code);
	CHECK(strstr(st.msg, msg) != NULL, "refuse %s: message \"%s\", want \"%s\"", schema, st.msg, msg);
	tfm_jschema_free(s);
}

/* texts[] NULL-terminated: each accepted (want 1) or rejected (want 0) */
static void
table(const char *schema, const char *const *yes, const char *const *no)
{
	tfm_jschema *s = compile_ok(schema);

	if (!s)
		return;
	for (int i = 0; yes[i]; i++)
		CHECK(tfm_jschema_accepts(s, yes[i], strlen(yes[i])) == 1, "%s should accept %s", schema, yes[i]);
	for (int i = 0; no[i]; i++)
		CHECK(tfm_jschema_accepts(s, no[i], strlen(no[i])) == 0, "%s should reject %s", schema, no[i]);
	tfm_jschema_free(s);
}

static void
test_languages(void)
{
	table("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
		  "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
		  (const char *[]) {"{\"name\":\"Ann\",\"age\":31}", "{\"name\":\"\",\"age\":-7}",
			  "{\"name\":\"a\\\"b\\\\c\\n\\u00e9\",\"age\":0}", "{\"name\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\"age\":12}", NULL},
		  (const char *[]) {"{\"age\":31,\"name\":\"Ann\"}", "{\"name\":\"Ann\"}", "{ \"name\":\"Ann\",\"age\":31}",
			  "{\"name\":\"Ann\",\"age\":31.5}", "{\"name\":\"Ann\",\"age\":01}", "{\"name\":\"Ann\",\"age\":31,\"x\":1}",
			  "{\"name\":\"A\nn\",\"age\":1}", "{\"name\":\"\\u0000\",\"age\":1}", "{\"name\":\"\\ud83d\\ude00\",\"age\":1}",
			  "{\"name\":\"\xc3\",\"age\":1}", "{\"name\":\"\xed\xa0\x80\",\"age\":1}", "{\"name\":\"\xc0\xaf\",\"age\":1}",
			  "{\"name\":\"Ann\",\"age\":31} ", "{\"name\":\"Ann\",\"age\":-}", "", "{", "{\"name\":\"Ann\",\"age\":31}}", NULL});
	/* optional properties: present or skipped, in order */
	table("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"},\"ab\":{\"type\":\"null\"},\"b\":{\"type\":\"number\"}},\"required\":[\"b\"]}",
		  (const char *[]) {"{\"b\":1}", "{\"a\":true,\"b\":2.5e-3}", "{\"ab\":null,\"b\":-0.0}", "{\"a\":false,\"ab\":null,\"b\":1E+9}", NULL},
		  (const char *[]) {"{}", "{\"a\":true}", "{\"ab\":null,\"a\":true,\"b\":1}", "{\"b\":1,\"a\":true}", "{\"b\":1.}",
			  "{\"b\":.5}", "{\"b\":1e}", "{\"a\":tru,\"b\":1}", "{\"abc\":null,\"b\":1}", "{\"b\":1,}", NULL});
	table("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}}}",
		  (const char *[]) {"{}", "{\"x\":\"\"}", NULL}, (const char *[]) {"{,}", "{\"x\":\"\",}", "{\"y\":\"\"}", NULL});
	/* arrays: bounds, nesting */
	table("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}",
		  (const char *[]) {"[1]", "[1,-2,30]", NULL},
		  (const char *[]) {"[]", "[1,2,3,4]", "[1,]", "[,1]", "[1 ,2]", "[1.5]", "[\"1\"]", NULL});
	table("{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"k\":{\"enum\":[1,12,\"x\",[1,2],{\"a\":null}]}},\"required\":[\"k\"]},\"maxItems\":0}}",
		  (const char *[]) {"[]", "[[],[]]", NULL}, (const char *[]) {"[[{\"k\":1}]]", "[[],]", NULL});
	table("{\"type\":\"array\",\"items\":{\"enum\":[1,12,\"x\",[1,2],{\"a\":null},true]}}",
		  (const char *[]) {"[1,12,\"x\",[1,2],{\"a\":null},true]", "[12,1]", "[]", NULL},
		  (const char *[]) {"[123]", "[2]", "[\"y\"]", "[[1, 2]]", "[[1,2,3]]", "[{\"a\": null}]", "[tru]", NULL});
	/* strings: lengths in code points, an escape one */
	table("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
		  (const char *[]) {"\"ab\"", "\"abc\"", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"", "\"\\n\\u0041b\"", NULL},
		  (const char *[]) {"\"a\"", "\"abcd\"", "\"\\n\\n\\n\\n\"", "ab", "\"ab", NULL});
	table("{\"const\":\"a\\\"b\"}", (const char *[]) {"\"a\\\"b\"", NULL}, (const char *[]) {"\"a\"", "\"a\\u0022b\"", NULL});
	/* top-level numbers and literals end with the text */
	table("{\"type\":\"number\"}", (const char *[]) {"0", "-0", "12", "1.25", "3e7", "-4.5E-2", "1e999", "2E-007", NULL},
		  (const char *[]) {"1e1000", "1e-0001", "00", "-", "+1", "1e", "1.e5", "1.5.", "01", "1 ", NULL});
	table("{\"type\":\"integer\"}", (const char *[]) {"0", "-12", "123456789012345678901234567890", NULL},
		  (const char *[]) {"1.0", "1e3", "-", "123456789012345678901234567890123", NULL});
	table("{\"enum\":[1,12]}", (const char *[]) {"1", "12", NULL}, (const char *[]) {"121", "2", "", NULL});
	/* anyOf and type lists */
	table("{\"type\":[\"string\",\"null\"],\"maxLength\":2}", (const char *[]) {"null", "\"ab\"", NULL},
		  (const char *[]) {"\"abc\"", "nul", "1", NULL});
	table("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"boolean\"}},\"required\":[\"v\"]},"
		  "{\"enum\":[\"a\",\"b\"]}]}",
		  (const char *[]) {"7", "{\"v\":false}", "\"b\"", NULL}, (const char *[]) {"\"c\"", "{}", "true", NULL});
}

static void
test_refusals(void)
{
	refused("{\"type\":\"string\",\"pattern\":\"a+\"}", TFM_EUNSUPPORTED, "keyword \"pattern\" is not supported");
	refused("{\"type\":\"number\",\"minimum\":0}", TFM_EUNSUPPORTED, "keyword \"minimum\" is not supported");
	refused("{\"$ref\":\"#\"}", TFM_EUNSUPPORTED, "\"$ref\" is not supported (no references or recursion)");
	refused("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}}}", TFM_EUNSUPPORTED, "$ref");
	refused("{\"type\":\"string\",\"items\":{\"type\":\"string\"}}", TFM_EINVAL, "keyword \"items\" needs \"type\": \"array\"");
	refused("{\"type\":\"object\",\"additionalProperties\":true}", TFM_EUNSUPPORTED, "additionalProperties must be false");
	refused("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"null\"}},\"required\":[\"b\"]}", TFM_EINVAL,
			"required property \"b\" is not among the properties");
	refused("{\"type\":\"array\"}", TFM_EUNSUPPORTED, "an array schema needs items");
	refused("{\"type\":\"array\",\"items\":{\"type\":\"null\"},\"minItems\":3,\"maxItems\":2}", TFM_EINVAL, "minItems is greater");
	refused("{\"type\":\"array\",\"items\":{\"type\":\"null\"},\"minItems\":-1}", TFM_EINVAL, "minItems must be a non-negative integer");
	refused("{\"type\":\"string\",\"maxLength\":1.5}", TFM_EINVAL, "maxLength must be a non-negative integer");
	refused("{\"type\":\"whatever\"}", TFM_EINVAL, "unknown type \"whatever\"");
	refused("{}", TFM_EUNSUPPORTED, "a schema needs type, enum, const or anyOf");
	refused("true", TFM_EUNSUPPORTED, "a schema must be an object");
	refused("{\"enum\":[]}", TFM_EINVAL, "enum must have at least one value");
	refused("{\"type\":\"string\",\"enum\":[\"a\",1]}", TFM_EINVAL, "an enum value is not of the schema's type");
	refused("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", TFM_EUNSUPPORTED, "anyOf alternatives must begin differently");
	refused("{\"type\":\"string\"", TFM_EFORMAT, "invalid JSON schema at byte 16");
	refused("{\"type\":\"string\"} x", TFM_EFORMAT, "text after the value");
	refused("{\"type\":\"str\\ud800ing\"}", TFM_EFORMAT, "a lone high surrogate");
	/* hostile sizes: deep nesting, many schemas, a huge enum */
	{
		char	   *deep = malloc(64 * 60 + 64);
		size_t		n = 0;
		int			levels[] = {TFM_JSON_MAX_DEPTH, TFM_JSON_MAX_DEPTH + 1};

		for (int t = 0; t < 2; t++)
		{
			tfm_jschema *s = NULL;
			tfm_status	st = {0};
			int			rc;

			n = 0;
			for (int i = 0; i < levels[t]; i++)
				n += (size_t) sprintf(deep + n, "{\"type\":\"array\",\"items\":");
			n += (size_t) sprintf(deep + n, "{\"type\":\"null\"}");
			for (int i = 0; i < levels[t]; i++)
				deep[n++] = '}';
			rc = tfm_jschema_compile(&s, deep, n, &st);
			if (t == 0)
			{
				CHECK(rc == TFM_OK, "%d levels compile: %s", levels[t], st.msg);
				/* the deepest value: [[...[null]...]] */
				{
					char	   *v = malloc(2 * (size_t) levels[t] + 8);
					size_t		k = 0;

					for (int i = 0; i < levels[t]; i++)
						v[k++] = '[';
					memcpy(v + k, "null", 4);
					k += 4;
					for (int i = 0; i < levels[t]; i++)
						v[k++] = ']';
					CHECK(tfm_jschema_accepts(s, v, k) == 1, "the deepest value");
					free(v);
				}
			}
			else
				CHECK(rc == TFM_ELIMIT && strstr(st.msg, "nests more than 32 schemas"), "too deep: %s", st.msg);
			tfm_jschema_free(s);
		}
		free(deep);
	}
	{
		size_t		cap = 16 * (TFM_JSON_MAX_ENUM + 2) + 32,
					n;
		char	   *big = malloc(cap);
		tfm_jschema *s = NULL;
		tfm_status	st = {0};

		n = (size_t) sprintf(big, "{\"enum\":[");
		for (int i = 0; i <= TFM_JSON_MAX_ENUM; i++)
			n += (size_t) sprintf(big + n, "%s%d", i ? "," : "", i);
		n += (size_t) sprintf(big + n, "]}");
		CHECK(tfm_jschema_compile(&s, big, n, &st) == TFM_ELIMIT && strstr(st.msg, "at most 1024 values"),
			  "huge enum: %s", st.msg);
		free(big);
	}
	{
		/* 5,000 properties: more schemas than allowed */
		size_t		n;
		char	   *wide = malloc(40 * 5000 + 64);
		tfm_jschema *s = NULL;
		tfm_status	st = {0};

		n = (size_t) sprintf(wide, "{\"type\":\"object\",\"properties\":{");
		for (int i = 0; i < 5000; i++)
			n += (size_t) sprintf(wide + n, "%s\"p%d\":{\"type\":\"null\"}", i ? "," : "", i);
		n += (size_t) sprintf(wide + n, "}}");
		CHECK(tfm_jschema_compile(&s, wide, n, &st) == TFM_ELIMIT && strstr(st.msg, "more than 4096 schemas"),
			  "wide: %s", st.msg);
		free(wide);
	}
}

/* a small vocabulary of byte strings: every byte JSON needs, and merges */
static const char *const pieces[] = {
	"{", "}", "[", "]", ",", ":", "\"", "\\", "a", "b", "n", "e", "m", "g", "x", "t", "r", "u", "f", "l", "s",
	"0", "1", "2", "5", "9", "-", ".", "E", "+", " ", "\n", "\xc3", "\xa9", "\xc3\xa9",
	"{\"", "\":", "\",\"", "name", "\"name\":\"", "age", "\":1", "true", "false", "null", "},{", "}]",
	"[{", "\"}", "12", "1.5", "ann", "\"a", "a\"", "\\n", "\\u", "00e9", "d8", "\u00e9t\u00e9", "e\"}", "",
};

#define NPIECES ((int) (sizeof(pieces) / sizeof(pieces[0])))

static tfm_jvocab *
small_vocab(void)
{
	const uint8_t *b[NPIECES];
	size_t		l[NPIECES];
	tfm_jvocab *v = NULL;
	tfm_status	st = {0};

	for (int i = 0; i < NPIECES; i++)
	{
		b[i] = (const uint8_t *) pieces[i];
		l[i] = strlen(pieces[i]);
	}
	CHECK(tfm_jvocab_create(&v, b, l, NPIECES, &st) == TFM_OK, "vocab: %s", st.msg);
	return v;
}

/* the trie's mask against each token's bytes stepped alone */
static void
check_mask(tfm_jvocab *v, const tfm_jschema *s, const tfm_jstate *st, const char *where)
{
	uint8_t		allowed[NPIECES];
	int			n = tfm_jvocab_allowed(v, s, st, allowed, NULL, NULL),
				want = 0;

	for (int i = 0; i < NPIECES; i++)
	{
		tfm_jstate	t;
		bool		ok = pieces[i][0] != '\0';

		tfm_jstate_copy(&t, st);
		for (size_t k = 0; ok && pieces[i][k]; k++)
			ok = tfm_jstate_step(s, &t, (uint8_t) pieces[i][k]);
		want += ok;
		CHECK(allowed[i] == ok, "%s: token \"%s\" allowed %d, want %d", where, pieces[i], allowed[i], ok);
		if (ok)
		{
			tfm_jstate	u;

			tfm_jstate_copy(&u, st);
			CHECK(tfm_jvocab_step_token(v, s, &u, i) && u.depth == t.depth &&
				  memcmp(u.f, t.f, sizeof(tfm_jframe) * (size_t) t.depth) == 0,
				  "%s: step_token \"%s\"", where, pieces[i]);
		}
	}
	CHECK(n == want, "%s: %d allowed, want %d", where, n, want);
}

static const char *const mask_schemas[] = {
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},\"age\":{\"type\":\"integer\"},"
	"\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"ab\",true,null,1.5]},\"maxItems\":3}},\"required\":[\"name\"]}",
	"{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":[\"number\",\"null\"]}},\"required\":[\"n\"]}}",
	"{\"type\":\"string\"}",
};

static const char *const mask_texts[] = {
	"{\"name\":\"ann\\n\\u00e9\xc3\xa9\",\"age\":-12,\"tags\":[\"ab\",true,1.5]}",
	"[{\"n\":1.5E+2},{\"n\":null},{\"n\":-0}]",
	"\"t\xc3\xa9t\xc3\xa9\\\"x\"",
};

static void
test_mask(void)
{
	tfm_jvocab *v = small_vocab();

	for (int k = 0; v && k < 3; k++)
	{
		tfm_jschema *s = compile_ok(mask_schemas[k]);
		tfm_jstate	st;
		size_t		len = strlen(mask_texts[k]);

		if (!s)
			continue;
		CHECK(tfm_jschema_accepts(s, mask_texts[k], len) == 1, "mask text %d accepted", k);
		tfm_jstate_init(s, &st);
		for (size_t i = 0; i <= len; i++)
		{
			char		where[64];

			snprintf(where, sizeof(where), "schema %d at byte %zu", k, i);
			check_mask(v, s, &st, where);
			if (i < len)
				CHECK(tfm_jstate_step(s, &st, (uint8_t) mask_texts[k][i]), "%s steps", where);
		}
		CHECK(tfm_jstate_complete(s, &st), "schema %d complete", k);
		tfm_jschema_free(s);
	}
	tfm_jvocab_free(v);
}

/* random walks: tokens drawn from the mask always reach a whole value */
static void
test_walks(void)
{
	tfm_jvocab *v = small_vocab();
	tfm_rng		rng;
	int			finished = 0;

	tfm_rng_seed(&rng, 42);
	for (int k = 0; v && k < 3; k++)
	{
		tfm_jschema *s = compile_ok(mask_schemas[k]);

		for (int w = 0; s && w < 200; w++)
		{
			tfm_jstate	st;
			char		text[4096];
			size_t		len = 0;

			tfm_jstate_init(s, &st);
			for (int step = 0; step < 400 && !tfm_jstate_closed(&st); step++)
			{
				uint8_t		allowed[NPIECES];
				int			n = tfm_jvocab_allowed(v, s, &st, allowed, NULL, NULL),
							pick;

				CHECK(n > 0 || tfm_jstate_complete(s, &st), "walk %d/%d: a dead end after %.*s", k, w, (int) len, text);
				if (n == 0 || (tfm_jstate_complete(s, &st) && tfm_rng_uniform(&rng) < 0.3f))
					break;
				pick = (int) (tfm_rng_uniform(&rng) * (float) n);
				for (int i = 0; i < NPIECES; i++)
					if (allowed[i] && pick-- == 0)
					{
						size_t		pl = strlen(pieces[i]);

						CHECK(tfm_jvocab_step_token(v, s, &st, i), "step an allowed token");
						if (len + pl < sizeof(text))
						{
							memcpy(text + len, pieces[i], pl);
							len += pl;
						}
						break;
					}
			}
			if (tfm_jstate_complete(s, &st))
			{
				finished++;
				CHECK(tfm_jschema_accepts(s, text, len) == 1, "walk %d/%d: %.*s accepted", k, w, (int) len, text);
			}
		}
		tfm_jschema_free(s);
	}
	CHECK(finished > 100, "%d walks finished", finished);
	tfm_jvocab_free(v);
}

int
main(void)
{
	test_languages();
	test_refusals();
	test_mask();
	test_walks();
	return check_summary("test_json_schema");
}
