/*
 * test_chat_template.c — the chat template interpreter (src/core/chat)
 * against python3-jinja2 as transformers runs it: every case of
 * test/fixtures/chat/cases.tsv (test/reference/chat_templates_reference.py:
 * the published templates of Qwen2, Llama 3, Mistral, Phi-3, Phi-3.5,
 * Gemma, SmolLM2, Llama 2, Qwen1.5 and two written over lines, for
 * conversations with and without a system turn, with and without the
 * generation prompt) renders byte for byte what Jinja rendered, or fails
 * with the template's own raise_exception message where Jinja did; and
 * likewise test/fixtures/chat/hf_jinja_cases.tsv: the templates of the real
 * tokenizer_config.json files of Gemma 3 (the system prompt folded into the
 * first user turn, roles that must alternate) and Llama 3 as
 * @huggingface/jinja renders them
 * (test/reference/hf_tokenizers/chat_templates_hf.mjs).  Then
 * what is refused: unsupported statements, filters, tests and functions by
 * name, broken syntax with its line, and the limits (tracker issue 37,
 * findings 3 and 4): every kind of nesting past TFM_CHAT_MAX_NESTING
 * refused cleanly (the three crashing inputs among them), the
 * memory budget held (counted by this test's own allocator), and a cancel
 * honoured at the poll that asks for it.  test_chat_fuzz throws random
 * templates at the same bounds.
 */
#include <time.h>

#include "check.h"
#include "tfm/chat_template.h"

#define MAX_T 32

/* ---- an allocator that counts what is held (a header before each block) ---- */
typedef struct counted
{
	size_t		held,
				peak,
				budget;			/* what the call was given: held must never pass it */
	int			over;			/* held went past budget */
} counted;

static void *
counted_alloc(void *arg, size_t n)
{
	counted    *c = arg;
	size_t	   *p = malloc(n + 16);

	if (!p)
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

/* a cancel that says stop at its stop-th poll (0: never), counting every poll */
typedef struct stopper
{
	long		polls,
				stop;
} stopper;

static int
stop_at(void *arg)
{
	stopper    *s = arg;

	return ++s->polls >= s->stop && s->stop > 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * tpl parsed and rendered for nmsg messages under o (the allocator and
 * cancel above); the status, *err filled; the output freed.
 */
static int
run_opts(const char *tpl, size_t len, int nmsg, tfm_chat_opts *o, tfm_status *err)
{
	tfm_chat_template *t = NULL;
	tfm_chat_message *m = malloc(sizeof(tfm_chat_message) * (nmsg > 0 ? nmsg : 1));
	char	   *out = NULL;
	size_t		n;
	int			st;

	for (int k = 0; k < nmsg; k++)
	{
		m[k].role = k % 2 ? "assistant" : "user";
		m[k].content = "hello there";
	}
	memset(err, 0, sizeof(*err));
	st = tfm_chat_template_parse(&t, tpl, len, o, err);
	if (st == TFM_OK)
	{
		st = tfm_chat_template_render(&out, &n, t, m, nmsg, 1, "<s>", "</s>", o, err);
		if (out)
			o && o->dealloc ? o->dealloc(o->alloc_arg, out) : free(out);
		tfm_chat_template_free(t);
	}
	free(m);
	return st;
}

/* tpl refused with code and a message holding want, with no memory left held */
static void
limited(const char *what, const char *tpl, size_t len, int code, const char *want)
{
	counted		c = {0};
	tfm_chat_opts o = {0};
	tfm_status	err;
	int			st;

	o.alloc = counted_alloc;
	o.dealloc = counted_free;
	o.alloc_arg = &c;
	st = run_opts(tpl, len, 1, &o, &err);
	CHECK(st == code && strstr(err.msg, want) != NULL, "%s: %d \"%s\", want %d \"%s\"", what, st,
		  err.msg, code, want);
	CHECK(c.held == 0, "%s: %zu bytes still held", what, c.held);
}

/* n copies of piece between head and tail, malloc'd */
static char *
repeat(const char *head, const char *piece, int n, const char *tail, size_t *len)
{
	size_t		hl = strlen(head),
				pl = strlen(piece),
				tl = strlen(tail);
	char	   *s = malloc(hl + pl * n + tl + 1),
			   *p = s;

	memcpy(p, head, hl);
	p += hl;
	for (int k = 0; k < n; k++, p += pl)
		memcpy(p, piece, pl);
	memcpy(p, tail, tl + 1);
	*len = hl + pl * n + tl;
	return s;
}

/* nesting: every recursive rule, alone and counted together with blocks */
static void
nesting_limits(void)
{
	static const struct
	{
		const char *what,
				   *head,
				   *piece,
				   *tail;
		int			n;
	}			deep[] = {
		/* the three crashing inputs (0.4: SIGSEGV) */
		{"20,000 unary minuses", "{{ ", "-", "1 }}", 20000},
		{"60,000 nots", "{{ ", "not ", "true }}", 60000},
		{"100,000 nested [", "{{ ", "[", "1 }}", 100000},
		/* every other recursive rule, and every chain the renderer walks recursively */
		{"minuses and brackets", "{{ ", "-(", "1 }}", 5000},
		{"parentheses", "{{ ", "(", "1 }}", 100000},
		{"list of lists", "{{ ", "[1, ", "1 }}", 50000},
		{"call arguments", "{{ ", "raise_exception(", "1 }}", 10000},
		{"namespace() keyword arguments", "{{ ", "namespace(a=", "1 }}", 10000},
		{"namespace attributes set", "{% set ns = namespace() %}{% set ns.a = ", "-", "1 %}", 20000},
		{"a + b + ...", "{{ 1", " + 1", " }}", 100000},
		{"a ~ b ~ ...", "{{ 'a'", " ~ 'a'", " }}", 100000},
		{"a and b and ...", "{{ 1", " and 1", " }}", 100000},
		{"a or b or ...", "{{ 1", " or 1", " }}", 100000},
		{"a == b == ...", "{{ 1", " == 1", " }}", 100000},
		{"a * b * ...", "{{ 1", " * 1", " }}", 100000},
		{"filters", "{{ 'a'", " | trim", " }}", 100000},
		{"attributes", "{{ messages", ".a", " }}", 100000},
		{"subscripts", "{{ messages", "[0]", " }}", 100000},
		{"slices", "{{ messages", "[0:1]", " }}", 50000},
		{"tests", "{{ 1", " is defined", " }}", 50000},
		{"method calls", "{{ 'a'", ".strip()", " }}", 50000},
		{"ternaries", "{{ 1", " if 1 else 1", " }}", 50000},
		{"subscripts of subscripts", "{{ ", "messages[", "0 }}", 50000},
		{"if blocks", "", "{% if true %}", "x", 50000},
		{"for blocks", "", "{% for m in messages %}", "x", 40000},
	};
	size_t		len;

	for (size_t k = 0; k < sizeof(deep) / sizeof(deep[0]); k++)
	{
		char	   *t = repeat(deep[k].head, deep[k].piece, deep[k].n, deep[k].tail, &len);

		limited(deep[k].what, t, len, TFM_ELIMIT, "nested deeper than 64 levels");
		free(t);
	}
	{
		/* the SQL texts exactly: line 1 named */
		char	   *t = repeat("{{ ", "-", 20000, "1 }}", &len);

		limited("the line", t, len, TFM_ELIMIT,
				"chat template line 1: nested deeper than 64 levels");
		free(t);
		t = repeat("x\ny\n{{ ", "[", 100, "1 }}", &len);
		limited("the line", t, len, TFM_ELIMIT, "line 3:");
		free(t);
	}
	{
		/* blocks and expressions count together: 40 blocks + 30 levels is too deep, 30 + 30 is not */
		char		buf[4096];
		tfm_status	err;
		int			st;

		for (int blocks = 30; blocks <= 40; blocks += 10)
		{
			char	   *p = buf;

			for (int k = 0; k < blocks; k++)
				p += sprintf(p, "{%% if true %%}");
			p += sprintf(p, "{{ ");
			for (int k = 0; k < 29; k++)
				p += sprintf(p, "(1 + ");
			p += sprintf(p, "1");
			for (int k = 0; k < 29; k++)
				p += sprintf(p, ")");
			p += sprintf(p, " }}");
			for (int k = 0; k < blocks; k++)
				p += sprintf(p, "{%% endif %%}");
			st = run_opts(buf, strlen(buf), 1, NULL, &err);
			if (blocks == 30)
				CHECK(st == TFM_OK, "30 blocks + 30 levels: %d %s", st, err.msg);
			else
				CHECK(st == TFM_ELIMIT && strstr(err.msg, "nested deeper"), "40 blocks + 30 levels: %d %s",
					  st, err.msg);
		}
	}
	{
		/* what published templates do stays well inside: a 60-term concatenation */
		size_t		l;
		char	   *t = repeat("{{ 'a'", " + 'b'", 60, " }}", &l);
		tfm_status	err;

		CHECK(run_opts(t, l, 1, NULL, &err) == TFM_OK, "60 terms: %s", err.msg);
		free(t);
	}
	/* lists built while rendering nest no deeper than the limit either */
	{
		size_t		l;
		char	   *t = repeat("{% set l = 1 %}", "{% set l = [l] %}", 200, "{{ l == l }}", &l);

		limited("lists nested by {% set %}", t, l, TFM_ELIMIT, "lists nested deeper than 64 levels");
		free(t);
	}
}

/* the memory budget: the doubling template, and the published ones under a small budget */
static void
budget_limits(void)
{
	size_t		len;
	char	   *t = repeat("{% for m in messages %}{% set s = m.content %}", "{% set s = s ~ s %}", 30,
						   "{{ s | length }}{% endfor %}", &len);

	for (size_t budget = 64 << 10; budget <= (size_t) (quick_mode() ? 4 << 20 : 64 << 20); budget *= 4)
	{
		counted		c = {0};
		tfm_chat_opts o = {0};
		tfm_status	err;
		int			st;

		c.budget = budget;
		o.budget = budget;
		o.alloc = counted_alloc;
		o.dealloc = counted_free;
		o.alloc_arg = &c;
		st = run_opts(t, len, 16, &o, &err);
		CHECK(st == TFM_ELIMIT && o.over_budget && strstr(err.msg, "needs more memory than the budget"),
			  "doubling under %zu bytes: %d %s", budget, st, err.msg);
		CHECK(!c.over && c.peak <= budget && o.peak <= budget,
			  "doubling under %zu bytes: peak %zu (the core says %zu)", budget, c.peak, o.peak);
		CHECK(c.held == 0, "doubling: %zu bytes held after", c.held);
		{
			/* the same through a namespace's attribute */
			size_t		l2;
			char	   *t2 = repeat("{% set ns = namespace(s='ab') %}{% for m in messages %}",
									"{% set ns.s = ns.s ~ ns.s %}", 30, "{% endfor %}{{ ns.s | length }}", &l2);

			c = (counted) {0};
			c.budget = budget;
			o.over_budget = 0;
			st = run_opts(t2, l2, 16, &o, &err);
			CHECK(st == TFM_ELIMIT && o.over_budget && !c.over && c.peak <= budget && c.held == 0,
				  "namespace doubling under %zu bytes: %d %s (peak %zu)", budget, st, err.msg, c.peak);
			free(t2);
		}
		if (budget == (64 << 20))
			printf("the doubling template under a 64 MB budget: refused at a peak of %.1f MB\n",
				   c.peak / 1048576.0);
	}
	free(t);
	{
		/*
		 * a long conversation through a typical template: output tags' values dropped once
		 * printed; each message a mapping of 4 values (224 bytes), its list item 56 more
		 */
		const char *tpl = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + "
			"'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
		counted		c = {0};
		tfm_chat_opts o = {0};
		tfm_status	err;
		int			st;

		o.budget = c.budget = 4 << 20;
		o.alloc = counted_alloc;
		o.dealloc = counted_free;
		o.alloc_arg = &c;
		st = run_opts(tpl, strlen(tpl), 10000, &o, &err);
		CHECK(st == TFM_OK && !c.over, "10,000 messages in 4 MB: %d %s (peak %zu)", st, err.msg, c.peak);
		printf("10,000 messages (a 410 kB prompt) through a ChatML template: peak %.0f kB\n", c.peak / 1024.0);
	}
}

/* a cancel: honoured at the poll that asks, soon after it is asked */
static void
cancel_limits(void)
{
	size_t		len;
	char	   *t = strdup("{% for a in messages %}{% for b in messages %}{% for c in messages %}"
						   "{{ c.content }}{% endfor %}{% endfor %}{% endfor %}");
	stopper		s = {0, 20};
	tfm_chat_opts o = {0};
	tfm_status	err;
	double		t0 = now(),
				dt;
	int			st;

	o.cancel = stop_at;
	o.cancel_arg = &s;
	st = run_opts(t, strlen(t), 1000, &o, &err);
	dt = now() - t0;
	CHECK(st == TFM_ECANCELED && strstr(err.msg, "canceled") && s.polls == 20,
		  "three loops over 1,000 messages: %d %s after %ld polls", st, err.msg, s.polls);
	printf("three loops over 1,000 messages: canceled at the 20th poll after %.1f ms (%.2f ms a poll)\n",
		   dt * 1e3, dt * 1e3 / 20);
	CHECK(quick_mode() || dt < 1.0, "20 polls took %.2f s", dt);
	free(t);

	/* lists sharing their items: comparing them walks 2^60 paths unless canceled */
	t = repeat("{% set l = [1] %}", "{% set l = [l, l] %}", 60, "{{ l == l }}", &len);
	s.polls = 0;
	s.stop = 5;
	t0 = now();
	st = run_opts(t, len, 1, &o, &err);
	CHECK(st == TFM_ECANCELED && s.polls == 5 && now() - t0 < 1.0,
		  "comparing shared lists: %d %s after %ld polls", st, err.msg, s.polls);
	free(t);

	/* a namespace's attribute set a million times */
	t = strdup("{% set ns = namespace(n=0) %}{% for a in messages %}{% for b in messages %}"
			   "{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}{{ ns.n }}");
	s.polls = 0;
	s.stop = 5;
	t0 = now();
	st = run_opts(t, strlen(t), 1000, &o, &err);
	CHECK(st == TFM_ECANCELED && s.polls == 5 && now() - t0 < 1.0,
		  "a namespace set in two loops: %d %s after %ld polls", st, err.msg, s.polls);
	free(t);

	/* a substring search made quadratic */
	t = strdup("{% set a = 'a' %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}"
			   "{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}"
			   "{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}"
			   "{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}{% set a = a ~ a %}"
			   "{% set h = a ~ a %}{% set n = a ~ 'b' %}{{ n in h }}");
	s.polls = 0;
	s.stop = 5;
	t0 = now();
	st = run_opts(t, strlen(t), 1, &o, &err);
	CHECK(st == TFM_ECANCELED && s.polls == 5 && now() - t0 < 1.0,
		  "a quadratic search: %d %s after %ld polls", st, err.msg, s.polls);
	free(t);
	/* and a quadratic split() */
	t = repeat("{% set a = 'a' %}", "{% set a = a ~ a %}", 20, "{% set h = a ~ a %}{{ h.split(a ~ 'b') | length }}",
			   &len);
	s.polls = 0;
	s.stop = 5;
	t0 = now();
	st = run_opts(t, strlen(t), 1, &o, &err);
	CHECK(st == TFM_ECANCELED && s.polls == 5 && now() - t0 < 1.0,
		  "a quadratic split: %d %s after %ld polls", st, err.msg, s.polls);
	free(t);

	/* a long parse asks too */
	t = repeat("", "{{ 1 }}", 100000, "", &len);
	s.polls = 0;
	s.stop = 2;
	{
		tfm_chat_template *tp = NULL;

		st = tfm_chat_template_parse(&tp, t, len, &o, &err);
		CHECK(st == TFM_ECANCELED && tp == NULL && strstr(err.msg, "parsing the chat template was canceled"),
			  "parse: %d %s", st, err.msg);
	}
	free(t);
}

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* hex (or "-" for none) into a malloc'd NUL-terminated string */
static char *
unhex(const char *h, const char **end)
{
	size_t		n = 0;
	char	   *out;

	if (*h == '-')
	{
		*end = h + 1;
		return NULL;
	}
	out = malloc(strlen(h) / 2 + 1);
	while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0)
	{
		out[n++] = (char) (hexval(h[0]) * 16 + hexval(h[1]));
		h += 2;
	}
	out[n] = '\0';
	*end = h;
	return out;
}

/* tpl rendered for one user message "hi" gives want (outputs checked with @huggingface/jinja 0.5.11) */
static void
rendered(const char *tpl, const char *want)
{
	tfm_chat_template *t = NULL;
	tfm_chat_message m[2] = {{"system", "be brief"}, {"user", "hi"}};
	tfm_status	err = {0};
	char	   *out = NULL;
	size_t		n = 0;
	int			st = tfm_chat_template_parse(&t, tpl, strlen(tpl), NULL, &err);

	if (st == TFM_OK)
	{
		st = tfm_chat_template_render(&out, &n, t, m, 2, 1, "<s>", "</s>", NULL, &err);
		tfm_chat_template_free(t);
	}
	CHECK(st == TFM_OK && n == strlen(want) && memcmp(out, want, n) == 0, "\"%s\": got \"%s\" (%s), want \"%s\"",
		  tpl, out ? out : "", err.msg, want);
	free(out);
}

/* namespace(): keyword arguments, attributes set in place and seen outside the loop that sets them */
static void
namespaces(void)
{
	rendered("{% set ns = namespace(found=false, n=0, last='') %}{% for m in messages %}"
			 "{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + 1 %}"
			 "{% set ns.last = m.content %}{% endfor %}{% if ns.found %}found {% endif %}{{ ns.n }} {{ ns.last }}",
			 "found 2 hi");
	/* a plain set inside a loop stays there; the namespace's does not */
	rendered("{% set c = 0 %}{% set ns = namespace(c=0) %}{% for m in messages %}{% set c = c + 1 %}"
			 "{% set ns.c = ns.c + 1 %}{% endfor %}{{ c }}/{{ ns.c }}", "0/2");
	rendered("{% set ns = namespace() %}[{{ ns.missing }}]{% if ns.missing is defined %}x{% endif %}"
			 "{% set ns.a = 'A' %}{{ ns['a'] }}{{ ns.a | lower }}", "[]Aa");
	/* a namespace holding itself: attributes and comparisons follow no cycle */
	rendered("{% set ns = namespace(a=1) %}{% set ns.a = ns %}{% if ns.a.a.a == ns %}same{% endif %}"
			 "{% set o = namespace(a=1) %}{% if o != ns %} other{% endif %}", "same other");
	rendered("{% set ns = namespace(x = 1 , y=(2 == 2)) %}{{ ns.x }}{% if ns.y %}y{% endif %}", "1y");
	/* slices with a step, as Python's */
	rendered("{% for x in [1, 2, 3, 4, 5][::2] %}{{ x }}{% endfor %},{% for x in [1, 2, 3, 4, 5][3:0:-1] %}{{ x }}"
			 "{% endfor %},{% for x in [1, 2, 3][::-1] %}{{ x }}{% endfor %},{% for x in [1, 2, 3][-1:-10:-2] %}"
			 "{{ x }}{% endfor %},{{ [1, 2, 3][5::-1] | length }}{{ [1, 2, 3][:5:1] | length }}"
			 "{{ [1, 2, 3][0:3:] | length }}{{ [1, 2, 3][1::7] | length }}{{ [][::-1] | length }}",
			 "135,432,321,31,33310");
	/* split() as Python's (Qwen3's reasoning), the tests true and false */
	rendered("{{ 'a,b,,c'.split(',') | length }}{{ 'a</think>b'.split('</think>')[-1] }}{{ 'x'.split('xx')[0] }}"
			 "{{ ',a,'.split(',') | length }}{{ 'aaa'.split('aa')[1] }}|{% if false is false %}f{% endif %}"
			 "{% if 0 is false %}0{% endif %}{% if true is true %}t{% endif %}{% if 1 is true %}1{% endif %}",
			 "4bx3a|ft");
	/* Qwen3's: the index of the last user query, scanning the messages backwards */
	rendered("{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}"
			 "{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}"
			 "{%- if ns.multi_step_tool and message.role == 'user' %}{%- set ns.multi_step_tool = false %}"
			 "{%- set ns.last_query_index = index %}{%- endif %}{%- endfor %}{{ ns.last_query_index }}", "1");
}

static void
refused(const char *tpl, const char *want)
{
	tfm_chat_template *t = NULL;
	tfm_chat_message m = {"user", "hi"};
	tfm_status	err = {0};
	char	   *out = NULL;
	size_t		n;
	int			st = tfm_chat_template_parse(&t, tpl, strlen(tpl), NULL, &err);

	if (st == TFM_OK)
	{
		st = tfm_chat_template_render(&out, &n, t, &m, 1, 1, "<s>", "</s>", NULL, &err);
		tfm_chat_template_free(t);
		free(out);
	}
	CHECK(st != TFM_OK && strstr(err.msg, want) != NULL, "\"%s\": \"%s\", want \"%s\"", tpl, err.msg, want);
}

int
main(void)
{
	char		names[MAX_T][64];
	tfm_chat_template *tpls[MAX_T] = {0};
	int			ntpl = 0,
				cases = 0,
				same = 0;
	char	   *line = malloc(1 << 20);
	const char *files[2] = {"test/fixtures/chat/cases.tsv", "test/fixtures/chat/hf_jinja_cases.tsv"};

	for (int fi = 0; fi < 2; fi++)
	{
	FILE	   *f = fopen(files[fi], "r");

	CHECK(f != NULL, "cannot read %s", files[fi]);
	while (f && fgets(line, 1 << 20, f))
	{
		char	   *tab = strchr(line, '\t');
		const char *end;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'T' && ntpl < MAX_T)
		{
			char	   *name = tab + 1,
					   *t2 = strchr(name, '\t'),
					   *text;
			tfm_status	err;

			*t2 = '\0';
			snprintf(names[ntpl], sizeof(names[ntpl]), "%s", name);
			text = unhex(t2 + 1, &end);
			CHECK(tfm_chat_template_parse(&tpls[ntpl], text, strlen(text), NULL, &err) == TFM_OK,
				  "template %s: %s", name, err.msg);
			free(text);
			ntpl++;
		}
		else if (line[0] == 'C')
		{
			char	   *f2[8];
			int			nf = 0,
						k,
						nm = 0,
						st;
			tfm_chat_message msgs[16];
			char	   *bos,
					   *eos,
					   *want,
					   *out = NULL,
					   *p;
			size_t		n;
			tfm_status	err = {0};

			for (p = line; nf < 8 && p; nf++)
			{
				f2[nf] = p;
				if ((p = strchr(p, '\t')) != NULL)
					*p++ = '\0';
			}
			for (k = 0; k < ntpl && strcmp(names[k], f2[1]) != 0; k++)
				;
			bos = unhex(f2[3], &end);
			eos = unhex(f2[4], &end);
			for (p = f2[5]; *p && nm < 16;)
			{
				msgs[nm].role = unhex(p, &end);
				msgs[nm].content = unhex(end + 1, &end);
				nm++;
				p = (char *) end + (*end == ',');
			}
			want = unhex(f2[7], &end);
			st = k < ntpl && tpls[k] ?
				tfm_chat_template_render(&out, &n, tpls[k], msgs, nm, atoi(f2[2]), bos, eos, NULL, &err) :
				TFM_EINVAL;
			if (f2[6][0] == 'R')
			{
				int			ok = st == TFM_OK && n == strlen(want) && memcmp(out, want, n) == 0;

				CHECK(ok, "%s with %d messages, add_generation_prompt %s: got \"%s\" (%s), want \"%s\"",
					  f2[1], nm, f2[2], out ? out : "", err.msg, want);
				same += ok;
			}
			else
			{
				int			ok = st == TFM_EINVAL && strstr(err.msg, want) != NULL;

				CHECK(ok, "%s: error \"%s\", want \"%s\"", f2[1], err.msg, want);
				same += ok;
			}
			cases++;
			free(out);
			free(bos);
			free(eos);
			free(want);
			for (k = 0; k < nm; k++)
			{
				free((char *) msgs[k].role);
				free((char *) msgs[k].content);
			}
		}
	}
	if (f)
		fclose(f);
	}
	printf("%d templates, %d of %d cases as Jinja renders them (python3-jinja2, and "
		   "@huggingface/jinja for the real files of Gemma 3, Llama 3, Qwen3 and DeepSeek V3)\n", ntpl, same, cases);
	CHECK(ntpl >= 15 && cases >= 170, "%d templates, %d cases", ntpl, cases);
	for (int k = 0; k < ntpl; k++)
		tfm_chat_template_free(tpls[k]);
	free(line);

	/* refused by name, or with the line of the mistake */
	refused("{% macro m() %}x{% endmacro %}", "the statement {% macro %} is not supported");
	refused("{{ messages | pprint }}", "the filter \"pprint\" on a list is not supported");
	refused("{{ x is sameas }}", "the test \"is sameas\" is not supported");
	refused("{{ loop | tojson }}", "tojson of undefined is not supported");
	refused("{{ strftime_now('%Y') }}", "the function strftime_now() is not supported");
	refused("{{ 'a'.split('') }}", "split() needs a non-empty separator");
	refused("{{ 'a'.split() }}", "split() needs a non-empty separator");
	refused("{{ 'a'.title() }}", "the string method title() is not supported");
	refused("{% set ns.a = 1 %}", "line 1: {% set x.attr %} needs x a namespace(), not undefined");
	refused("{% set x = 1 %}{% set x.a = 2 %}", "needs x a namespace(), not an integer");
	refused("{{ namespace(a=1) }}", "a namespace cannot be printed");
	refused("{{ namespace(1) }}", "namespace() takes keyword arguments only");
	refused("{{ 'a'.strip(x=1) }}", "keyword arguments are supported by namespace() only");
	refused("{{ [a=1] }}", "expected \"]\"");
	refused("{{ 'abc'[::-1] }}", "a slice of a string with a step is not supported");
	refused("{{ [1][::0] }}", "a slice's step must be a non-zero integer");
	refused("{{ [1][1:2:3:4] }}", "only slices [a:b:c] are supported");
	refused("{% set ns. = 1 %}", "{% set a. %} needs an attribute name");
	refused("{% for k, v in x %}{% endfor %}", "is not supported");
	refused("a\n{% if true %}x", "line 2: {% if %} without {% endif %}");
	refused("{{ 'a' ", "is not closed");
	refused("{% endfor %}", "{% endfor %} outside a block");
	refused("{{ messages }}", "a list cannot be printed");
	refused("{{ 1 // 0 }}", "division by zero");
	/* found by test_chat_fuzz under UBSan: 0.4 overflowed int64 here */
	refused("{{ -100000000000 * 100000000000 }}", "an integer too large");
	refused("{{ raise_exception('no system role') }}", "refuses the conversation: no system role");
	{
		/* nesting past the limit */
		char		deep[1024] = "{{ ";

		for (int k = 0; k < TFM_CHAT_MAX_NESTING + 2; k++)
			strcat(deep, "(");
		strcat(deep, "1 }}");
		refused(deep, "nested deeper than 64 levels");
	}
	namespaces();
	nesting_limits();
	budget_limits();
	cancel_limits();
	return check_summary("test_chat_template");
}
