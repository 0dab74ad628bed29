/*
 * test_chat_template.c — the chat template interpreter (src/core/chat)
 * against python3-jinja2 as transformers runs it: every case of
 * test/fixtures/chat/cases.tsv (test/reference/chat_templates_reference.py:
 * the published templates of Qwen2, Llama 3, Mistral, Phi-3, Phi-3.5,
 * Gemma, SmolLM2, Llama 2, Qwen1.5 and two written over lines, for
 * conversations with and without a system turn, with and without the
 * generation prompt) renders byte for byte what Jinja rendered, or fails
 * with the template's own raise_exception message where Jinja did.  Then
 * what is refused: unsupported statements, filters, tests and functions by
 * name, broken syntax with its line, and the limits.
 */
#include "check.h"
#include "tfm/chat_template.h"

#define MAX_T 32

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

static void
refused(const char *tpl, const char *want)
{
	tfm_chat_template *t = NULL;
	tfm_chat_message m = {"user", "hi"};
	tfm_status	err = {0};
	char	   *out = NULL;
	size_t		n;
	int			st = tfm_chat_template_parse(&t, tpl, strlen(tpl), &err);

	if (st == TFM_OK)
	{
		st = tfm_chat_template_render(&out, &n, t, &m, 1, 1, "<s>", "</s>", &err);
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
	FILE	   *f = fopen("test/fixtures/chat/cases.tsv", "r");

	CHECK(f != NULL, "cannot read test/fixtures/chat/cases.tsv");
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
			CHECK(tfm_chat_template_parse(&tpls[ntpl], text, strlen(text), &err) == TFM_OK,
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
				tfm_chat_template_render(&out, &n, tpls[k], msgs, nm, atoi(f2[2]), bos, eos, &err) :
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
	printf("%d templates, %d of %d cases as Jinja renders them\n", ntpl, same, cases);
	CHECK(ntpl >= 11 && cases >= 100, "%d templates, %d cases", ntpl, cases);
	for (int k = 0; k < ntpl; k++)
		tfm_chat_template_free(tpls[k]);
	free(line);

	/* refused by name, or with the line of the mistake */
	refused("{% macro m() %}x{% endmacro %}", "the statement {% macro %} is not supported");
	refused("{{ messages | tojson }}", "the filter \"tojson\" on a list is not supported");
	refused("{{ x is mapping }}", "the test \"is mapping\" is not supported");
	refused("{{ strftime_now('%Y') }}", "the function strftime_now() is not supported");
	refused("{{ 'a'.split(',') }}", "the string method split() is not supported");
	refused("{% set ns.a = 1 %}", "namespaces");
	refused("{% for k, v in x %}{% endfor %}", "is not supported");
	refused("a\n{% if true %}x", "line 2: {% if %} without {% endif %}");
	refused("{{ 'a' ", "is not closed");
	refused("{% endfor %}", "{% endfor %} outside a block");
	refused("{{ messages }}", "a list cannot be printed");
	refused("{{ 1 // 0 }}", "division by zero");
	refused("{{ raise_exception('no system role') }}", "refuses the conversation: no system role");
	{
		/* nesting past the limit */
		char		deep[1024] = "{{ ";

		for (int k = 0; k < TFM_CHAT_MAX_NESTING + 2; k++)
			strcat(deep, "(");
		strcat(deep, "1 }}");
		refused(deep, "nested too deep");
	}
	return check_summary("test_chat_template");
}
