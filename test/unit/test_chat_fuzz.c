/*
 * test_chat_fuzz.c — the chat template interpreter (src/core/chat) under
 * hostile templates, run by `make unittest` (tracker issue 37, findings 3
 * and 4).  Deterministic: a seeded xorshift makes every input, so a
 * failure names its seed and iteration and comes back with them.
 *
 * Inputs, in turn:
 *   bytes      random bytes, half of them Jinja's marks and words
 *   grammar    random templates from the subset's grammar: statements
 *              inside each other, namespaces and their attributes (one
 *              holding itself), slices with steps, every kind of expression, and now and
 *              then one construct repeated 10 to 20,000 times (nesting past
 *              the limit), a literal of up to 300 kB, loops inside loops,
 *              a string doubled by {% set %}
 *   mutants    the published templates of test/fixtures/chat with bytes
 *              flipped, dropped, repeated or marks put in
 * each parsed and rendered for 1 to 40 messages under a budget of 16 kB to
 * 4 MB, with a cancel that stops at a random poll (or never), and one run
 * in ten with an allocator that fails at a random allocation.
 *
 * Asserted for every input: no crash (the sanitizers and valgrind see the
 * rest); the result is TFM_OK or a clean failure (TFM_EINVAL, TFM_ELIMIT,
 * TFM_ECANCELED; TFM_ENOMEM only when the allocator failed) with a message;
 * the bytes held never pass the budget (this test's allocator counts them)
 * and none are held after; a cancel is honoured at the poll that asks (no
 * poll after it) and polls come less than 250 ms apart (however long the
 * input's work; a watchdog cancel at 400 polls ends runaway templates).
 *
 *   TFM_FUZZ_SEED    the seed (default 37)
 *   TFM_FUZZ_ITERS   the inputs (default 20,000; 400 with TFM_TEST_QUICK=1,
 *                    as `make valgrind` runs it)
 *
 * test/fuzz/chat_fuzz.c is the same bounds as a libFuzzer target (make fuzz).
 */
#include <time.h>

#include "check.h"
#include "tfm/chat_template.h"

#define MAX_TEMPLATE (TFM_CHAT_MAX_TEMPLATE_BYTES + 4096)
#define WATCHDOG_POLLS 400

/* ---- the generator's randomness ---- */
static uint64_t rng_state;

static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* 0 .. n-1 */
static size_t
below(size_t n)
{
	return n ? (size_t) (rnd() % n) : 0;
}

static int
chance(int percent)
{
	return (int) below(100) < percent;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- a template being written ---- */
typedef struct buf
{
	char	   *s;
	size_t		len;
} buf;

static void
put(buf *b, const char *s, size_t n)
{
	if (b->len + n >= MAX_TEMPLATE)
		n = MAX_TEMPLATE - 1 - b->len;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void
put1(buf *b, char c)
{
	if (b->len + 1 < MAX_TEMPLATE)
	{
		b->s[b->len++] = c;
		b->s[b->len] = '\0';
	}
}

static void
puts_(buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void
repeat(buf *b, const char *s, size_t times)
{
	for (size_t k = 0; k < times && b->len + 1 < MAX_TEMPLATE; k++)
		puts_(b, s);
}

static const char *
pick(const char *const *list, size_t n)
{
	return list[below(n)];
}

#define PICK(list) pick(list, sizeof(list) / sizeof(list[0]))

static const char *const words[] = {
	"{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "{%+", "if", "elif", "else",
	"endif", "for", "in", "endfor", "set", "=", "(", ")", "[", "]", "'", "\"", "\\", "messages",
	"m", "loop", "loop.index", ".", "|", "trim", "length", "not", "and", "or", "~", "+", "-", "*",
	"//", "%", "==", "!=", "<", ">=", "is", "defined", "none", "true", "False", "content", "role",
	"raise_exception", "strip(", "startswith(", " ", " ", "\n", ",", ":", "0", "1", "-1",
	"999999999999999", "bos_token", "add_generation_prompt", "{%- endfor %}", "{% endif %}",
	"namespace(", "a=", "ns", "ns.a", "::-1", "::",
};

/* random bytes, half of them marks and words */
static void
gen_bytes(buf *b)
{
	size_t		n = below(chance(10) ? 20000 : 600);

	while (n-- > 0 && b->len + 64 < MAX_TEMPLATE)
	{
		if (chance(50))
			puts_(b, PICK(words));
		else
		{
			char		c = (char) below(256);

			/* NUL is refused up front: now and then only */
			if (c == 0 && !chance(5))
				c = ' ';
			put1(b, c);
		}
	}
}

/* ---- templates from the grammar ---- */
static const char *const names[] = {
	"messages", "m", "loop", "s", "x", "add_generation_prompt", "bos_token", "eos_token", "nothing",
	"raise_exception",
};
static const char *const atoms[] = {
	"0", "1", "2", "-3", "100000000000", "'a'", "\"b\"", "''", "'\\n'", "'x' 'y'", "true", "false",
	"none", "None", "messages[0]", "messages[-1]", "m.content", "m['role']", "loop.index0",
	"loop.last", "messages | length", "[]", "[1, 'a']", "messages[1:]", "s",
	"ns", "ns.a", "ns.n", "ns.missing", "namespace(a=1, b=[ns])", "messages[::-1]", "messages[1::2]",
	"[1, 2, 3][-1:0:-2]",
};
static const char *const binops[] = {
	" + ", " - ", " * ", " // ", " % ", " ~ ", " == ", " != ", " < ", " > ", " <= ", " >= ", " in ",
	" not in ", " and ", " or ",
};
static const char *const filters[] = {"trim", "length", "upper", "lower", "string", "tojson"};
static const char *const tests[] = {"defined", "undefined", "none", "string", "number", "boolean",
"mapping"};
static const char *const methods[] = {"strip", "lstrip", "rstrip", "startswith", "endswith", "upper",
"lower", "split"};
/* one construct repeated: nesting past the limit (or just inside it) */
static const char *const deep_prefix[] = {"-", "not ", "[", "(", "-(", "[1, ", "raise_exception(",
"messages[", "x if true else ", "namespace(a=", "namespace(a=1, b="};
static const char *const deep_suffix[] = {" + 1", " ~ 'a'", " and 1", " or 0", " | trim", ".a", "[0]",
"[0:1]", " is defined", ".strip()", " == 1", " * 1"};

static void gen_expr(buf *b, int depth);

static void
gen_deep(buf *b)
{
	static const size_t times[] = {10, 62, 63, 64, 65, 100, 1000, 20000};
	size_t		t = times[below(sizeof(times) / sizeof(times[0]))];

	if (chance(50))
	{
		repeat(b, PICK(deep_prefix), t);
		puts_(b, "1");
		if (chance(50))
			repeat(b, ")", t);
	}
	else
	{
		puts_(b, PICK(atoms));
		repeat(b, PICK(deep_suffix), t);
	}
}

static void
gen_expr(buf *b, int depth)
{
	char		tmp[64];

	if (depth <= 0 || chance(30))
	{
		if (below(1000) < 3)
		{
			/* a literal of up to 300 kB */
			size_t		n = below(300000);

			puts_(b, "'");
			for (size_t k = 0; k < n && b->len + 8 < MAX_TEMPLATE; k++)
				put1(b, "abcdefgh"[below(8)]);
			puts_(b, "'");
		}
		else if (chance(20))
			puts_(b, PICK(names));
		else
			puts_(b, PICK(atoms));
		return;
	}
	switch (below(12) + (below(40) == 0))
	{
		case 0:
		case 1:
			gen_expr(b, depth - 1);
			puts_(b, PICK(binops));
			gen_expr(b, depth - 1);
			break;
		case 2:
			puts_(b, chance(50) ? "-" : "not ");
			gen_expr(b, depth - 1);
			break;
		case 3:
			puts_(b, "(");
			gen_expr(b, depth - 1);
			puts_(b, ")");
			break;
		case 4:
			puts_(b, "[");
			for (int k = (int) below(4); k > 0; k--)
			{
				gen_expr(b, depth - 1);
				if (k > 1)
					puts_(b, ", ");
			}
			puts_(b, "]");
			break;
		case 5:
			puts_(b, chance(50) ? "messages[0]" : "m");
			puts_(b, chance(50) ? ".content" : ".role");
			break;
		case 6:
			gen_expr(b, depth - 1);
			puts_(b, "[");
			gen_expr(b, depth - 1);
			if (chance(30))
			{
				puts_(b, ":");
				gen_expr(b, depth - 1);
				if (chance(30))
				{
					puts_(b, ":");
					gen_expr(b, depth - 1);
				}
			}
			puts_(b, "]");
			break;
		case 7:
			gen_expr(b, depth - 1);
			snprintf(tmp, sizeof(tmp), " | %s", PICK(filters));
			puts_(b, tmp);
			break;
		case 8:
			gen_expr(b, depth - 1);
			snprintf(tmp, sizeof(tmp), " is %s%s", chance(30) ? "not " : "", PICK(tests));
			puts_(b, tmp);
			break;
		case 9:
			gen_expr(b, depth - 1);
			snprintf(tmp, sizeof(tmp), ".%s(", PICK(methods));
			puts_(b, tmp);
			if (chance(50))
				gen_expr(b, depth - 1);
			puts_(b, ")");
			break;
		case 10:
			gen_expr(b, depth - 1);
			puts_(b, " if ");
			gen_expr(b, depth - 1);
			if (chance(70))
			{
				puts_(b, " else ");
				gen_expr(b, depth - 1);
			}
			break;
		case 11:
			if (chance(5))
			{
				puts_(b, "raise_exception(");
				gen_expr(b, depth - 1);
				puts_(b, ")");
			}
			else
				gen_expr(b, depth - 1);
			break;
		default:
			gen_deep(b);
			break;
	}
}

/* loops inside loops over the messages (40^4 passes at most): long work */
static void
gen_loops(buf *b)
{
	static const char *const vars[] = {"a", "b", "c", "d"};
	int			n = 2 + (int) below(3);

	for (int k = 0; k < n; k++)
	{
		char		t[64];

		snprintf(t, sizeof(t), "{%% for %s in messages %%}", vars[k]);
		puts_(b, t);
	}
	if (chance(50))
		puts_(b, "{{ a.content ~ b.content }}");
	else
		puts_(b, "{% if a.content == b.content %}{{ loop.index }}{% endif %}");
	repeat(b, "{% endfor %}", n);
}

/* well-typed: strings and booleans that render (mostly), so the renderer's paths run */
static void gen_bool(buf *b, int depth);

static void
gen_str(buf *b, int depth)
{
	static const char *const strs[] = {"'a'", "\"<|im_start|>\"", "m.content", "m.role", "s",
	"messages[0]['content']", "(bos_token or '')", "'x' 'y'", "m.content[1:]"};

	if (depth <= 0 || chance(30))
	{
		puts_(b, PICK(strs));
		return;
	}
	switch (below(6))
	{
		case 0:
		case 1:
			gen_str(b, depth - 1);
			puts_(b, chance(50) ? " ~ " : " + ");
			gen_str(b, depth - 1);
			break;
		case 2:
			gen_str(b, depth - 1);
			puts_(b, chance(50) ? " | trim" : " | upper");
			break;
		case 3:
			puts_(b, "(");
			gen_str(b, depth - 1);
			puts_(b, chance(50) ? ").strip()" : ").lower()");
			break;
		case 4:
			puts_(b, "(");
			gen_str(b, depth - 1);
			puts_(b, " if ");
			gen_bool(b, depth - 1);
			puts_(b, " else ");
			gen_str(b, depth - 1);
			puts_(b, ")");
			break;
		default:
			puts_(b, "(loop.index ~ '')");
			break;
	}
}

static void
gen_bool(buf *b, int depth)
{
	static const char *const bools[] = {"loop.first", "loop.last", "m.role == 'user'",
	"add_generation_prompt", "m.content is string", "true", "messages | length > 2"};

	if (depth <= 0 || chance(30))
	{
		puts_(b, PICK(bools));
		return;
	}
	switch (below(4))
	{
		case 0:
			gen_str(b, depth - 1);
			puts_(b, chance(50) ? " == " : " != ");
			gen_str(b, depth - 1);
			break;
		case 1:
			gen_str(b, depth - 1);
			puts_(b, " in ");
			gen_str(b, depth - 1);
			break;
		case 2:
			puts_(b, "not ");
			gen_bool(b, depth - 1);
			break;
		default:
			gen_bool(b, depth - 1);
			puts_(b, chance(50) ? " and " : " or ");
			gen_bool(b, depth - 1);
			break;
	}
}

static void gen_body(buf *b, int depth, int n);

static void
tag(buf *b, const char *open, const char *inside, const char *close)
{
	puts_(b, open);
	if (chance(10))
		puts_(b, "-");
	puts_(b, " ");
	puts_(b, inside);
	puts_(b, chance(10) ? " -" : " ");
	puts_(b, close);
}

static void
gen_stmt(buf *b, int depth)
{
	static const char *const texts[] = {"hi", "\n", "  ", "<|im_start|>", "\t\n  ", "text", "}", "%"};

	switch (below(depth > 0 ? 9 : 4) + (depth > 0 && below(20) == 0))
	{
		case 0:
			puts_(b, PICK(texts));
			break;
		case 1:
		case 2:
			puts_(b, chance(10) ? "{{- " : "{{ ");
			if (chance(60))
				gen_str(b, 4);
			else
				gen_expr(b, 3);
			puts_(b, chance(10) ? " -}}" : " }}");
			break;
		case 3:
			if (chance(40))
				tag(b, "{%", "set s = s ~ s", "%}");	/* doubling */
			else if (chance(30))
			{
				/* a namespace's attributes: doubled, counted, holding the namespace itself */
				static const char *const ns_sets[] = {"set ns.a = ns.a ~ ns.a", "set ns.n = ns.n + 1",
					"set ns.a = ns", "set ns.b = [ns, ns]", "set ns = namespace(a=ns, n=0)",
				"set x.a = 1", "set ns.a = ns.missing"};

				tag(b, "{%", PICK(ns_sets), "%}");
			}
			else
			{
				puts_(b, "{% set ");
				puts_(b, chance(50) ? "s" : "x");
				puts_(b, " = ");
				if (chance(60))
					gen_str(b, 3);
				else
					gen_expr(b, 2);
				puts_(b, " %}");
			}
			break;
		case 4:
		case 5:
			puts_(b, "{% if ");
			if (chance(60))
				gen_bool(b, 3);
			else
				gen_expr(b, 2);
			puts_(b, " %}");
			gen_body(b, depth - 1, (int) below(4));
			if (chance(30))
			{
				puts_(b, "{% elif ");
				gen_bool(b, 2);
				puts_(b, " %}");
				gen_body(b, depth - 1, (int) below(3));
			}
			if (chance(30))
			{
				puts_(b, "{% else %}");
				gen_body(b, depth - 1, (int) below(3));
			}
			if (!chance(3))
				puts_(b, "{% endif %}");
			break;
		case 6:
		case 7:
			/* loops inside loops over the messages */
			puts_(b, chance(80) ? "{% for m in messages %}" : "{% for m in [1, 2, 3] %}");
			gen_body(b, depth - 1, 1 + (int) below(4));
			if (!chance(3))
				puts_(b, "{% endfor %}");
			break;
		case 8:
			if (chance(30))
				gen_loops(b);
			else
				puts_(b, "{# a comment #}");
			break;
		default:
			if (chance(70))
			{
				/* blocks past the limit */
				size_t		n = chance(50) ? 64 + below(8) : 200;

				repeat(b, chance(50) ? "{% if true %}" : "{% for m in messages %}", n);
				puts_(b, "x");
			}
			else
				gen_loops(b);
			break;
	}
}

static void
gen_body(buf *b, int depth, int n)
{
	for (int k = 0; k < n && b->len + 4096 < MAX_TEMPLATE; k++)
		gen_stmt(b, depth);
}

static void
gen_grammar(buf *b)
{
	int			loop = chance(70);

	puts_(b, "{% set s = 'ab' %}{% set ns = namespace(a='ab', n=0) %}");
	if (loop)
		puts_(b, "{% for m in messages %}");
	gen_body(b, 1 + (int) below(5), 1 + (int) below(8));
	if (loop)
		puts_(b, "{% endfor %}");
}

/* ---- the published templates, mutated ---- */
#define MAX_SEEDS 32
static char *seeds[MAX_SEEDS];
static int	nseeds;

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void
read_seeds(void)
{
	const char *dir = getenv("TFM_TEST_DATA");
	char		path[1024];
	char	   *line = malloc(1 << 20);
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/chat/cases.tsv", dir ? dir : "test/fixtures");
	f = fopen(path, "r");
	CHECK(f != NULL, "cannot read %s", path);
	while (f && nseeds < MAX_SEEDS && fgets(line, 1 << 20, f))
	{
		char	   *h;
		size_t		n = 0;

		if (line[0] != 'T' || !(h = strchr(line + 2, '\t')))
			continue;
		h++;
		seeds[nseeds] = malloc(strlen(h) / 2 + 1);
		while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0)
		{
			seeds[nseeds][n++] = (char) (hexval(h[0]) * 16 + hexval(h[1]));
			h += 2;
		}
		seeds[nseeds++][n] = '\0';
	}
	if (f)
		fclose(f);
	free(line);
}

static void
gen_mutant(buf *b)
{
	const char *s;
	size_t		n;

	if (nseeds == 0)
	{
		gen_grammar(b);
		return;
	}
	s = seeds[below(nseeds)];
	n = strlen(s);
	put(b, s, n);
	for (int k = 1 + (int) below(8); k > 0 && b->len > 0; k--)
	{
		size_t		at = below(b->len);

		switch (below(4))
		{
			case 0:				/* a byte changed */
				b->s[at] = (char) (1 + below(255));
				break;
			case 1:				/* bytes dropped */
				{
					size_t		d = 1 + below(16);

					if (at + d > b->len)
						d = b->len - at;
					memmove(b->s + at, b->s + at + d, b->len - at - d + 1);
					b->len -= d;
				}
				break;
			case 2:				/* a word put in */
				{
					const char *w = PICK(words);
					size_t		wl = strlen(w);

					if (b->len + wl + 1 < MAX_TEMPLATE)
					{
						memmove(b->s + at + wl, b->s + at, b->len - at + 1);
						memcpy(b->s + at, w, wl);
						b->len += wl;
					}
				}
				break;
			default:			/* a stretch repeated */
				{
					size_t		d = 1 + below(64),
								times = 1 + below(chance(10) ? 2000 : 4);

					if (at + d > b->len)
						d = b->len - at;
					for (size_t t = 0; t < times && b->len + d + 1 < MAX_TEMPLATE; t++)
					{
						memmove(b->s + at + d, b->s + at, b->len - at + 1);
						b->len += d;
					}
				}
				break;
		}
	}
	b->s[b->len] = '\0';
}

/* ---- the host: a counting allocator that can fail, a cancel that can stop ---- */
typedef struct host
{
	size_t		held,
				peak,
				budget;
	long		allocs,
				fail_at;		/* the allocation that fails (0: none) */
	int			over,			/* held went past the budget */
				failed_one;		/* an allocation was failed */
	long		polls,
				stop_at,		/* the poll that says stop (0: only the watchdog) */
				polls_after_stop;
	int			stopped;
	double		last_poll,
				max_gap;
} host;

static void *
host_alloc(void *arg, size_t n)
{
	host	   *h = arg;
	size_t	   *p;

	if (++h->allocs == h->fail_at)
	{
		h->failed_one = 1;
		return NULL;
	}
	if (!(p = malloc(n + 16)))
		return NULL;
	p[0] = n;
	h->held += n;
	if (h->held > h->peak)
		h->peak = h->held;
	if (h->budget && h->held > h->budget)
		h->over = 1;
	return (char *) p + 16;
}

static void
host_free(void *arg, void *q)
{
	host	   *h = arg;
	size_t	   *p = (size_t *) ((char *) q - 16);

	h->held -= p[0];
	free(p);
}

static int
host_cancel(void *arg)
{
	host	   *h = arg;
	double		t = now();

	if (t - h->last_poll > h->max_gap)
		h->max_gap = t - h->last_poll;
	h->last_poll = t;
	if (h->stopped)
	{
		h->polls_after_stop++;
		return 1;
	}
	h->polls++;
	if ((h->stop_at > 0 && h->polls >= h->stop_at) || h->polls >= WATCHDOG_POLLS)
		h->stopped = 1;
	return h->stopped;
}

/* ---- one input ---- */
typedef struct tally
{
	long		runs,
				ok,
				einval,
				elimit,
				budget,
				canceled,
				enomem;
	double		max_gap;
	size_t		max_len;
} tally;

static const char *const kinds[] = {"bytes", "grammar", "mutant"};

static void
run_one(const buf *b, int kind, long iter, uint64_t seed, tally *t)
{
	static const size_t budgets[] = {16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};
	static const char *const roles[] = {"system", "user", "assistant"};
	tfm_chat_message msgs[40];
	char	   *contents[40];
	int			nmsg = 1 + (int) below(40);
	host		h;
	tfm_chat_opts o;
	tfm_status	err;
	tfm_chat_template *tpl = NULL;
	char	   *out = NULL;
	size_t		out_len = 0;
	int			st,
				ok_code;

	memset(&h, 0, sizeof(h));
	h.budget = budgets[below(sizeof(budgets) / sizeof(budgets[0]))];
	h.stop_at = chance(50) ? 0 : 1 + (long) below(50);
	h.fail_at = chance(10) ? 1 + (long) below(200) : 0;
	memset(&o, 0, sizeof(o));
	o.budget = h.budget;
	o.cancel = host_cancel;
	o.cancel_arg = &h;
	o.alloc = host_alloc;
	o.dealloc = host_free;
	o.alloc_arg = &h;
	for (int k = 0; k < nmsg; k++)
	{
		size_t		n = chance(5) ? below(10000) : below(40);

		contents[k] = malloc(n + 1);
		for (size_t j = 0; j < n; j++)
			contents[k][j] = "hello world {}%#\n"[below(17)];
		contents[k][n] = '\0';
		msgs[k].role = roles[below(3)];
		msgs[k].content = contents[k];
	}
	memset(&err, 0, sizeof(err));
	h.last_poll = now();
	st = tfm_chat_template_parse(&tpl, b->s, b->len, &o, &err);
	if (st == TFM_OK)
	{
		CHECK(tpl != NULL, "seed %llu iteration %ld: no template", (unsigned long long) seed, iter);
		memset(&err, 0, sizeof(err));
		st = tfm_chat_template_render(&out, &out_len, tpl, msgs, nmsg, (int) below(2),
									  chance(50) ? "<s>" : NULL, "</s>", &o, &err);
		tfm_chat_template_free(tpl);
	}
	else
		CHECK(tpl == NULL, "seed %llu iteration %ld: a template after a failure",
			  (unsigned long long) seed, iter);

	ok_code = st == TFM_OK || st == TFM_EINVAL || st == TFM_ELIMIT || st == TFM_ECANCELED ||
		(st == TFM_ENOMEM && h.failed_one);
	CHECK(ok_code, "seed %llu iteration %ld (%s, %zu bytes): status %d \"%s\"",
		  (unsigned long long) seed, iter, kinds[kind], b->len, st, err.msg);
	if (st == TFM_OK)
	{
		CHECK(out != NULL && out[out_len] == '\0' && out_len <= TFM_CHAT_MAX_OUTPUT_BYTES,
			  "seed %llu iteration %ld: output", (unsigned long long) seed, iter);
		if (out_len > t->max_len)
			t->max_len = out_len;
		host_free(&h, out);
	}
	else
	{
		CHECK(out == NULL && err.code == st && err.msg[0] != '\0',
			  "seed %llu iteration %ld: status %d with message \"%s\" (code %d)",
			  (unsigned long long) seed, iter, st, err.msg, err.code);
		CHECK(st != TFM_ECANCELED || h.stopped, "seed %llu iteration %ld: canceled unasked",
			  (unsigned long long) seed, iter);
	}
	CHECK(!h.over && h.peak <= h.budget, "seed %llu iteration %ld (%s): %zu bytes held, budget %zu",
		  (unsigned long long) seed, iter, kinds[kind], h.peak, h.budget);
	CHECK(h.held == 0, "seed %llu iteration %ld (%s): %zu bytes still held",
		  (unsigned long long) seed, iter, kinds[kind], h.held);
	CHECK(h.polls_after_stop == 0, "seed %llu iteration %ld: %ld polls after the stop",
		  (unsigned long long) seed, iter, h.polls_after_stop);
	if (now() - h.last_poll > h.max_gap)
		h.max_gap = now() - h.last_poll;
	CHECK(quick_mode() || h.max_gap < 0.25, "seed %llu iteration %ld (%s): %.3f s between polls",
		  (unsigned long long) seed, iter, kinds[kind], h.max_gap);
	if (h.max_gap > t->max_gap)
		t->max_gap = h.max_gap;

	if (getenv("TFM_FUZZ_DEBUG"))
		fprintf(stderr, "%s %d %.60s | %.200s\n", kinds[kind], st, err.msg, b->s);
	t->runs++;
	t->ok += st == TFM_OK;
	t->einval += st == TFM_EINVAL;
	t->elimit += st == TFM_ELIMIT;
	t->budget += st == TFM_ELIMIT && o.over_budget;
	t->canceled += st == TFM_ECANCELED;
	t->enomem += st == TFM_ENOMEM;
	for (int k = 0; k < nmsg; k++)
		free(contents[k]);
}

int
main(void)
{
	const char *s = getenv("TFM_FUZZ_SEED"),
			   *it = getenv("TFM_FUZZ_ITERS");
	uint64_t	seed = s ? strtoull(s, NULL, 10) : 37;
	long		iters = it ? atol(it) : quick_mode() ? 400 : 20000;
	buf			b = {malloc(MAX_TEMPLATE), 0};
	tally		t = {0};
	double		t0 = now();

	rng_state = seed * 2654435761u + 1;
	read_seeds();
	for (long i = 0; i < iters; i++)
	{
		int			kind = (int) (i % 3);

		b.len = 0;
		b.s[0] = '\0';
		if (kind == 0)
			gen_bytes(&b);
		else if (kind == 1)
			gen_grammar(&b);
		else
			gen_mutant(&b);
		run_one(&b, kind, i, seed, &t);
	}
	printf("seed %llu, %ld inputs in %.1f s: %ld rendered (longest %zu bytes), %ld invalid, "
		   "%ld past a limit (%ld the budget), %ld canceled, %ld out of memory; "
		   "polls at most %.1f ms apart\n",
		   (unsigned long long) seed, t.runs, now() - t0, t.ok, t.max_len, t.einval, t.elimit,
		   t.budget, t.canceled, t.enomem, t.max_gap * 1e3);
	/* the generators reach every outcome (given enough inputs: not so in quick mode) */
	CHECK(iters < 5000 || (t.ok > 0 && t.einval > 0 && t.elimit > 0 && t.budget > 0 && t.canceled > 0),
		  "outcomes: %ld ok, %ld invalid, %ld limit, %ld budget, %ld canceled", t.ok, t.einval,
		  t.elimit, t.budget, t.canceled);
	for (int k = 0; k < nseeds; k++)
		free(seeds[k]);
	free(b.s);
	return check_summary("test_chat_fuzz");
}
