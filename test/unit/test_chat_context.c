/*
 * test_chat_context.c — chat templates rendered for a context given as
 * JSON (tfm_chat_template_render_json: messages with any keys, tools,
 * enable_thinking): every case of test/fixtures/chat/hf_context_cases.tsv
 * (test/reference/hf_tokenizers/chat_templates_context.py: the real
 * templates of Qwen3, with tools, tool calls, tool responses and
 * reasoning, and of Gemma 3, with its system-prompt rules, rendered by
 * python3-jinja2 as transformers renders them) renders byte for byte what
 * Jinja rendered, or fails with the template's own raise_exception
 * message where Jinja did.  Then the JSON reading and tojson writing on
 * their own: Python's json.loads and json.dumps(ensure_ascii=False) on
 * escapes, repeated keys, numbers and Unicode; the host's defaults for
 * names the context does not give; hostile contexts refused
 * cleanly (malformed text, lone surrogates, bytes that are not UTF-8,
 * nesting past TFM_CHAT_MAX_NESTING, a context that is not an object) and
 * the memory budget held; and the real cases' contexts mutated (bytes
 * changed, dropped, marks put in or repeated up to 200 times) under budgets
 * of 4 kB to 2 MB and an allocator that may fail: every result a render or
 * a clean failure with a message, the budget never passed, nothing held.
 */
#include "check.h"
#include "tfm/chat_template.h"
#include "tfm/rng.h"

#define MAX_T 8

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* hex into a malloc'd NUL-terminated string (*n its bytes) */
static char *
unhex(const char *h, size_t *n)
{
	size_t		len = strlen(h) / 2;
	char	   *out = malloc(len + 1);

	*n = 0;
	while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0)
	{
		out[(*n)++] = (char) (hexval(h[0]) * 16 + hexval(h[1]));
		h += 2;
	}
	out[*n] = '\0';
	return out;
}

/* tpl rendered for the context ctx: the status, the output (malloc'd) or the error in err */
static int
render(const char *tpl, const char *ctx, tfm_chat_opts *o, char **out, tfm_status *err)
{
	tfm_chat_template *t = NULL;
	size_t		n;
	int			st;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	st = tfm_chat_template_parse(&t, tpl, strlen(tpl), o, err);
	if (st != TFM_OK)
		return st;
	st = tfm_chat_template_render_json(out, &n, t, ctx, strlen(ctx), NULL, 0, o, err);
	tfm_chat_template_free(t);
	return st;
}

static void
renders(const char *tpl, const char *ctx, const char *want)
{
	char	   *out;
	tfm_status	err;
	int			st = render(tpl, ctx, NULL, &out, &err);

	CHECK(st == TFM_OK && strcmp(out, want) == 0, "%s with %s: %d \"%s\" (%s), want \"%s\"", tpl, ctx,
		  st, out ? out : "", err.msg, want);
	free(out);
}

static void
refused(const char *tpl, const char *ctx, int code, const char *want)
{
	char	   *out;
	tfm_status	err;
	int			st = render(tpl, ctx, NULL, &out, &err);

	CHECK(st == code && out == NULL && strstr(err.msg, want) != NULL, "%s with %.60s: %d \"%s\", want %d \"%s\"",
		  tpl, ctx, st, err.msg, code, want);
	free(out);
}

static void
real_templates(void)
{
	FILE	   *f = fopen("test/fixtures/chat/hf_context_cases.tsv", "r");
	static char line[1 << 20];
	tfm_chat_template *tpls[MAX_T] = {0};
	char		names[MAX_T][32];
	int			ntpl = 0,
				cases = 0,
				same = 0,
				errors = 0;

	CHECK(f != NULL, "%s", "test/fixtures/chat/hf_context_cases.tsv cannot be read");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
	{
		char	   *fld[5];
		int			nf = 0,
					k;
		size_t		n;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		for (char *p = line; nf < 5 && p; nf++)
		{
			fld[nf] = p;
			if ((p = strchr(p, '\t')) != NULL)
				*p++ = '\0';
		}
		if (fld[0][0] == 'T' && nf == 3 && ntpl < MAX_T)
		{
			char	   *text = unhex(fld[2], &n);
			tfm_status	err;

			snprintf(names[ntpl], sizeof(names[ntpl]), "%s", fld[1]);
			CHECK(tfm_chat_template_parse(&tpls[ntpl], text, n, NULL, &err) == TFM_OK,
				  "template %s: %s", fld[1], err.msg);
			free(text);
			ntpl++;
		}
		else if (fld[0][0] == 'J' && nf == 5)
		{
			char	   *ctx = unhex(fld[2], &n),
					   *want,
					   *out = NULL;
			size_t		ctxn = n,
						wn,
						outn = 0;
			tfm_status	err = {0};
			int			st,
						ok;

			want = unhex(fld[4], &wn);
			for (k = 0; k < ntpl && strcmp(names[k], fld[1]) != 0; k++)
				;
			st = k < ntpl && tpls[k] ?
				tfm_chat_template_render_json(&out, &outn, tpls[k], ctx, ctxn, NULL, 0, NULL, &err) : TFM_EINVAL;
			if (fld[3][0] == 'R')
				ok = st == TFM_OK && outn == wn && memcmp(out, want, wn) == 0;
			else
			{
				ok = st == TFM_EINVAL && strstr(err.msg, want) != NULL;
				errors += ok;
			}
			CHECK(ok, "%s for %s: %d got \"%s\" (%s), want \"%s\"", fld[1], ctx, st, out ? out : "",
				  err.msg, want);
			same += ok;
			cases++;
			free(out);
			free(ctx);
			free(want);
		}
	}
	fclose(f);
	for (int k = 0; k < ntpl; k++)
		tfm_chat_template_free(tpls[k]);
	CHECK(cases >= 40 && ntpl == 2, "%d cases of %d templates", cases, ntpl);
	printf("%d templates (Qwen3, Gemma 3), %d of %d contexts as Jinja renders them (%d refused by the template)\n",
		   ntpl, same, cases, errors);
}

static void
json_and_tojson(void)
{
	/* tojson as Python's json.dumps(ensure_ascii=False) */
	renders("{{ x | tojson }}", "{\"x\": {\"b\": [1, -2, 2.50, 1e-7, true, false, null], \"a\": \"q\\\"\\\\/\\n\\r\\t\\b\\f\\u0001\\u007f é 🙂\"}}",
			"{\"b\": [1, -2, 2.50, 1e-7, true, false, null], \"a\": \"q\\\"\\\\/\\n\\r\\t\\b\\f\\u0001\x7f é 🙂\"}");
	renders("{{ x | tojson }}", "{\"x\": \"\\ud83d\\ude42 \\u00e9\"}", "\"🙂 é\"");
	renders("{{ x | tojson }}|{{ x }}", "{\"x\": -0}", "0|0");
	renders("{{ x | tojson }}", "{\"x\": 123456789012345678901234567890}", "123456789012345678901234567890");
	renders("{{ x | tojson }}", "{\"x\": {}}", "{}");
	/* a repeated key: its first place, its last value */
	renders("{{ x | tojson }}", "{\"x\": {\"a\": 1, \"b\": 2, \"a\": 3}}", "{\"a\": 3, \"b\": 2}");
	/* mappings: keys as attributes and subscripts, "in", a for loop over the keys, length, tests */
	renders("{% for k in m %}{{ k }}={{ m[k] }};{% endfor %}{{ m | length }}{{ 'a' in m }}{{ 'z' in m }}{{ d.b.c }}{{ d['b']['c'] }}",
			"{\"m\": {\"a\": 1, \"b\": \"two\"}, \"d\": {\"b\": {\"c\": \"deep\"}}}", "a=1;b=two;2TrueFalsedeepdeep");
	refused("{{ d }}", "{\"d\": {}}", TFM_EINVAL, "a mapping cannot be printed");
	renders("{{ m is mapping }}{{ l is mapping }}{{ l is iterable }}{{ n is iterable }}{{ f is number }}{{ f }}",
			"{\"m\": {}, \"l\": [], \"n\": 5, \"f\": 0.25}", "TrueFalseTrueFalseTrue0.25");
	renders("{{ 'y' if m else 'n' }}{{ 'y' if e else 'n' }}{{ 'y' if z else 'n' }}{{ 'y' if f else 'n' }}",
			"{\"m\": {\"a\": 1}, \"e\": {}, \"z\": 0.0, \"f\": 1e-3}", "ynny");
	renders("{{ a == b }}{{ a == c }}", "{\"a\": {\"x\": [1, {\"y\": 2}]}, \"b\": {\"x\": [1, {\"y\": 2}]}, \"c\": {\"x\": [1]}}",
			"TrueFalse");
	renders("{{ messages[0].content }}{{ messages[0].name is defined }}", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
			"hiFalse");
	/* a name not in the context is undefined, as any other */
	renders("[{{ messages }}]{{ add_generation_prompt is defined }}", "{}", "[]False");
	{
		/* defaults: the names the context does not give (a null it gives is its own) */
		const char *tpl = "{{ add_generation_prompt }} [{{ bos_token }}] {{ eos_token }} {{ x }}";
		const char *ctx = "{\"bos_token\": null, \"x\": 1}",
				   *def = "{\"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"x\": 2}";
		tfm_chat_template *t = NULL;
		tfm_status	err;
		char	   *out = NULL;
		size_t		n;
		int			st = tfm_chat_template_parse(&t, tpl, strlen(tpl), NULL, &err);

		if (st == TFM_OK)
			st = tfm_chat_template_render_json(&out, &n, t, ctx, strlen(ctx), def, strlen(def), NULL, &err);
		CHECK(st == TFM_OK && strcmp(out, "True [None] </s> 1") == 0, "defaults: %d \"%s\" (%s)", st,
			  out ? out : "", err.msg);
		free(out);
		out = NULL;
		st = tfm_chat_template_render_json(&out, &n, t, ctx, strlen(ctx), "[]", 2, NULL, &err);
		CHECK(st == TFM_EINVAL && strstr(err.msg, "must be a JSON object"), "defaults a list: %d %s", st, err.msg);
		free(out);
		tfm_chat_template_free(t);
	}
	/* hostile contexts */
	refused("x", "[1]", TFM_EINVAL, "must be a JSON object, not a list");
	refused("x", "{\"a\": 1", TFM_EINVAL, "no ',' or '}' in an object at byte 7");
	refused("x", "{\"a\": 1} 2", TFM_EINVAL, "text after the value");
	refused("x", "{\"a\": \"\\ud800\"}", TFM_EINVAL, "a lone surrogate");
	refused("x", "{\"a\": \"\\udc00\\ud800\"}", TFM_EINVAL, "a lone surrogate");
	refused("x", "{\"a\": \"\xc3\x28\"}", TFM_EINVAL, "not UTF-8");
	refused("x", "{\"a\": \"\xed\xa0\x80\"}", TFM_EINVAL, "not UTF-8");
	refused("x", "{\"a\": \"tab\there\"}", TFM_EINVAL, "a control character");
	refused("x", "{\"a\": 01}", TFM_EINVAL, "no ',' or '}'");
	refused("x", "{\"a\": tru}", TFM_EINVAL, "an unknown word");
	refused("x", "{\"a\": \"\\x\"}", TFM_EINVAL, "a bad escape");
	refused("x", "{1: 2}", TFM_EINVAL, "an object key that is not a string");
	refused("x", "", TFM_EINVAL, "the text ends early");
	{
		/* 64 levels read; 65 refused (the walks over values recurse no deeper) */
		char		deep[400];
		int			k,
					d;

		for (d = 63; d <= 64; d++)
		{
			char	   *p = deep;

			p += sprintf(p, "{\"x\": ");
			for (k = 0; k < d; k++)
				*p++ = '[';
			for (k = 0; k < d; k++)
				*p++ = ']';
			sprintf(p, "}");
			if (d == 63)
			{
				char	   *out;
				tfm_status	err;

				CHECK(render("{{ x | tojson | length }}", deep, NULL, &out, &err) == TFM_OK && atoi(out) == 2 * d,
					  "%d levels: %s", d + 1, err.msg);
				free(out);
			}
			else
				refused("x", deep, TFM_ELIMIT, "nested deeper than 64 levels");
		}
	}
	{
		/* a large context under a small budget: refused for the budget, nothing left held */
		size_t		n = 200000;
		char	   *ctx = malloc(n * 4 + 32),
				   *p = ctx,
				   *out;
		tfm_chat_opts o = {0};
		tfm_status	err;
		int			st;

		p += sprintf(p, "{\"l\": [");
		for (size_t k = 0; k < n; k++)
			p += sprintf(p, k ? ",[]" : "[]");
		sprintf(p, "]}");
		o.budget = 1 << 20;
		st = render("{{ l | length }}", ctx, &o, &out, &err);
		CHECK(st == TFM_ELIMIT && o.over_budget && o.peak <= o.budget, "200,000 lists under 1 MB: %d %s (peak %zu)",
			  st, err.msg, o.peak);
		o.budget = 0;
		st = render("{{ l | length }}", ctx, &o, &out, &err);
		CHECK(st == TFM_OK && strcmp(out, "200000") == 0, "200,000 lists: %d %s", st, err.msg);
		free(out);
		free(ctx);
	}
}

/* ---- hostile contexts: the real cases' contexts mutated --------------------------------- */

/* an allocator that counts what is held (a header before each block) and may fail at one call */
typedef struct counted
{
	size_t		held,
				peak,
				budget;
	int			over;			/* held went past budget */
	long		allocs,
				fail_at;		/* 0: never */
} counted;

static void *
counted_alloc(void *arg, size_t n)
{
	counted    *c = arg;
	size_t	   *p;

	if (c->fail_at && ++c->allocs == c->fail_at)
		return NULL;
	if (!(p = malloc(n + 16)))
		return NULL;
	p[0] = n;
	c->held += n;
	if (c->held > c->peak)
		c->peak = c->held;
	if (c->budget && c->held > c->budget)
		c->over = 1;
	return (char *) p + 16;
}

static void
counted_free(void *arg, void *q)
{
	counted    *c = arg;
	size_t	   *p = (size_t *) ((char *) q - 16);

	c->held -= p[0];
	free(p);
}

#define MAX_CTX 64

static void
fuzz_contexts(void)
{
	static const char *const marks[] = {"[", "]", "{", "}", "\"", "\\", "\\u", "\\ud83d", "\\udc00", ",", ":",
		"null", "1e999", "-", "0", "00", " ", "\n", "\\u0000", "\xff", "\xc3", "\xed\xa0\x80", "true",
	"{\"a\": [", "\"role\": ", "-0.0e-0"};
	FILE	   *f = fopen("test/fixtures/chat/hf_context_cases.tsv", "r");
	static char line[1 << 20];
	char	   *ctx[MAX_CTX];
	tfm_chat_template *tpl[2] = {NULL, NULL};
	int			nctx = 0,
				ntpl = 0,
				iters = quick_mode() ? 300 : 6000,
				n_ok = 0,
				n_inval = 0,
				n_limit = 0,
				n_oom = 0;
	tfm_rng		rng;
	size_t		cap = 1 << 17;
	char	   *b = malloc(cap);

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
	{
		char	   *fld[5];
		int			nf = 0;
		size_t		n;

		line[strcspn(line, "\n")] = '\0';
		for (char *p = line; nf < 5 && p; nf++)
		{
			fld[nf] = p;
			if ((p = strchr(p, '\t')) != NULL)
				*p++ = '\0';
		}
		if (fld[0][0] == 'T' && nf == 3 && ntpl < 2)
		{
			char	   *text = unhex(fld[2], &n);
			tfm_status	err;

			(void) tfm_chat_template_parse(&tpl[ntpl++], text, n, NULL, &err);
			free(text);
		}
		else if (fld[0][0] == 'J' && nf == 5 && nctx < MAX_CTX)
			ctx[nctx++] = unhex(fld[2], &n);
	}
	fclose(f);
	tfm_rng_seed(&rng, 40);
	for (int it = 0; it < iters && nctx > 0 && ntpl == 2 && tpl[0] && tpl[1]; it++)
	{
		const char *src = ctx[tfm_rng_next(&rng) % nctx];
		size_t		len = strlen(src);
		int			muts = 1 + (int) (tfm_rng_next(&rng) % 6),
					st;
		counted		c = {0};
		tfm_chat_opts o = {0};
		tfm_status	err = {0};
		char	   *out = NULL;
		size_t		outn;

		memcpy(b, src, len);
		for (int m = 0; m < muts; m++)
		{
			size_t		at = len ? tfm_rng_next(&rng) % len : 0;
			int			kind = (int) (tfm_rng_next(&rng) % 4);

			if (kind == 0 && len)
				b[at] = (char) tfm_rng_next(&rng);	/* a byte changed */
			else if (kind == 1 && len)
			{
				size_t		k = 1 + tfm_rng_next(&rng) % 16;	/* bytes dropped */

				k = k > len - at ? len - at : k;
				memmove(b + at, b + at + k, len - at - k);
				len -= k;
			}
			else
			{
				/* a mark put in, or repeated up to 200 times (deep nesting, long runs) */
				const char *mk = marks[tfm_rng_next(&rng) % (sizeof(marks) / sizeof(marks[0]))];
				size_t		ml = strlen(mk),
							times = kind == 3 ? 1 + tfm_rng_next(&rng) % 200 : 1;

				if (len + ml * times >= cap)
					continue;
				memmove(b + at + ml * times, b + at, len - at);
				for (size_t k = 0; k < times; k++)
					memcpy(b + at + ml * k, mk, ml);
				len += ml * times;
			}
		}
		c.budget = o.budget = (size_t) 4096 << (tfm_rng_next(&rng) % 10);
		c.fail_at = tfm_rng_next(&rng) % 10 == 0 ? 1 + (long) (tfm_rng_next(&rng) % 40) : 0;
		o.alloc = counted_alloc;
		o.dealloc = counted_free;
		o.alloc_arg = &c;
		st = tfm_chat_template_render_json(&out, &outn, tpl[it % 2], b, len, NULL, 0, &o, &err);
		CHECK(st == TFM_OK || ((st == TFM_EINVAL || st == TFM_ELIMIT || (st == TFM_ENOMEM && c.fail_at)) &&
							   err.msg[0] != '\0' && out == NULL),
			  "context fuzz %d: %d \"%s\"", it, st, err.msg);
		if (out)
			counted_free(&c, out);
		CHECK(!c.over && c.held == 0, "context fuzz %d: peak %zu over the budget %zu, or %zu bytes held", it,
			  c.peak, c.budget, c.held);
		n_ok += st == TFM_OK;
		n_inval += st == TFM_EINVAL;
		n_limit += st == TFM_ELIMIT;
		n_oom += st == TFM_ENOMEM;
	}
	printf("%d mutated contexts of the real cases: %d rendered, %d invalid, %d past a limit, %d out of memory; "
		   "the budget held, nothing left held\n", iters, n_ok, n_inval, n_limit, n_oom);
	CHECK(n_ok > 0 && n_inval > 0 && n_limit > 0, "the fuzz reached every outcome (%d %d %d)", n_ok, n_inval, n_limit);
	for (int k = 0; k < nctx; k++)
		free(ctx[k]);
	for (int k = 0; k < ntpl; k++)
		tfm_chat_template_free(tpl[k]);
	free(b);
}

int
main(void)
{
	real_templates();
	json_and_tojson();
	fuzz_contexts();
	return check_summary("test_chat_context");
}
