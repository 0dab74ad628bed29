/*
 * chat_fuzz.c — a libFuzzer target for the chat template interpreter
 * (src/core/chat): the input is a template, parsed and rendered for three
 * messages under a 1 MB budget with a cancel that stops after 200 polls.
 * It aborts when the bounds fail: a status other than OK or a clean
 * failure, a failure without a message, bytes held past the budget or
 * after the call, a poll after the one that stopped.  AddressSanitizer and
 * UBSan catch the rest.  Not run in CI (test/test_chat_fuzz.c is, with the
 * same checks on seeded inputs); run it by hand:
 *
 *   make fuzz                      (clang with -fsanitize=fuzzer,address,undefined)
 *   mkdir -p /tmp/chat-corpus && test/fuzz/chat_fuzz -max_len=65536 -max_total_time=600 /tmp/chat-corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/chat_template.h"

#define BUDGET (1 << 20)

typedef struct host
{
	size_t		held;
	long		polls,
				after_stop;
} host;

static void *
host_alloc(void *arg, size_t n)
{
	host	   *h = arg;
	size_t	   *p = malloc(n + 16);

	if (!p)
		return NULL;
	p[0] = n;
	h->held += n;
	if (h->held > BUDGET)
	{
		fprintf(stderr, "%zu bytes held, past the budget\n", h->held);
		abort();
	}
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

	if (h->polls >= 200)
		h->after_stop++;
	return ++h->polls >= 200;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const tfm_chat_message msgs[] = {
		{"system", "be brief"}, {"user", "hi"}, {"assistant", "hello"},
	};
	host		h = {0};
	tfm_chat_opts o = {0};
	tfm_status	err = {0};
	tfm_chat_template *t = NULL;
	char	   *out = NULL;
	size_t		len;
	int			st;

	o.budget = BUDGET;
	o.cancel = host_cancel;
	o.cancel_arg = &h;
	o.alloc = host_alloc;
	o.dealloc = host_free;
	o.alloc_arg = &h;
	st = tfm_chat_template_parse(&t, (const char *) data, size, &o, &err);
	if (st == TFM_OK)
	{
		st = tfm_chat_template_render(&out, &len, t, msgs, 3, 1, "<s>", "</s>", &o, &err);
		tfm_chat_template_free(t);
		if (out)
			host_free(&h, out);
	}
	if ((st != TFM_OK && st != TFM_EINVAL && st != TFM_ELIMIT && st != TFM_ECANCELED) ||
		(st != TFM_OK && err.msg[0] == '\0') || h.held != 0 || h.after_stop != 0)
	{
		fprintf(stderr, "status %d \"%s\", %zu bytes held, %ld polls after the stop\n", st, err.msg,
				h.held, h.after_stop);
		abort();
	}
	return 0;
}
