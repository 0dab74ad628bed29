/*
 * generator.c — a language model's inference: prompts decoded together by
 * the core's loop (tfm/generate.h) within tfm.work_mem, with interrupts and
 * the stop text as its hooks; the next token's distribution; a text's
 * log-probability over consecutive windows (tfm_generate, tfm_next_tokens,
 * tfm_score).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/generate.h"
#include "tfm/precision.h"
#include "runtime/infer/infer.h"
#include "runtime/infer/json_constraint.h"
#include "runtime/runtime.h"
#include "runtime/rows.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"

/*
 * A prompt's ids (text, or int[] taken as given): the last max_len tokens,
 * or <bos> for an empty prompt (ids has room for one).
 */
void
tfm_trim_prompt(const TfmModelRow *row, const TfmSpecials *sp, int32 *ids, int *n)
{
	if (*n == 0)
	{
		ids[0] = sp->bos;
		*n = 1;
	}
	if (*n > row->cfg.max_len)
	{
		memmove(ids, ids + *n - row->cfg.max_len, sizeof(int32) * row->cfg.max_len);
		*n = row->cfg.max_len;
	}
}

static void
free_generator(void *g)
{
	tfm_generator_free(g);
}

/* the core's hooks: interrupts before every token, and the stop text */
typedef struct GenHooks
{
	const TfmModelRow *row;
	const GenOpts *o;
	GenRow	   *out;
	JsonRows   *json;			/* the rows' JSON constraint, or NULL */
} GenHooks;

static int
gen_poll(void *arg)
{
	(void) arg;
	CHECK_FOR_INTERRUPTS();
	return 0;
}

/* is row b's last id a stop id, or does its text now contain the stop
 * text? then note where to cut */
static bool
gen_stop(void *arg, int b, const int32_t *ids, int n)
{
	GenHooks   *h = arg;
	text	   *t;
	char	   *hit;
	char	   *s;

	for (int k = 0; k < h->o->n_stop_ids; k++)
		if (ids[n - 1] == h->o->stop_ids[k])
			return true;
	/* a constrained row ends with its value */
	if (h->json && tfm_json_rows_step(h->json, b, ids[n - 1]))
		return true;
	if (!h->o->stop)
		return false;
	t = tfm_tokenizer_decode_flags(h->row->tokenizer, ids, n, true);
	s = text_to_cstring(t);
	hit = strstr(s, h->o->stop);
	if (hit)
		h->out[b].stop_at = (int) (hit - s);
	pfree(s);
	pfree(t);
	return hit != NULL;
}

/* a constrained row's next token: masked to the schema's language */
static bool
gen_mask(void *arg, int b, float *logits, int V)
{
	GenHooks   *h = arg;

	(void) V;
	return tfm_json_rows_mask(h->json, b, logits);
}

void
tfm_generate_prompts(tfm_model *m, const TfmModelRow *row, int32 **prompts, const int *plens, int B,
		 const GenOpts *o, GenRow *out)
{
	const tfm_config *c = &m->cfg;
	TfmSpecials sp;
	tfm_gen_opts go;
	GenHooks	hooks;
	tfm_generator *gen;
	TfmGuard   *guard;
	const tfm_gen_row *rows;

	{
		/* the decoder, its pass and the loop's own arrays, sized first */
		size_t		need = tfm_generate_bytes(c, plens, B, o->max_tokens,
											  tfm_model_precision(m) != TFM_PREC_FP32,
											  tfm_get_threads());

		if (B > 1 && !tfm_work_mem_fits(m, need))
		{
			/* prompts decoded together: in two halves, each seeded as before */
			int			h = B / 2;
			GenOpts		o2 = *o;

			tfm_generate_prompts(m, row, prompts, plens, h, o, out);
			o2.seed = o->seed + (uint64) h;
			tfm_generate_prompts(m, row, prompts + h, plens + h, B - h, &o2, out + h);
			return;
		}
		tfm_work_mem_check(m, need, "generating with", row->name,
						   "max_tokens or the length of the prompt");
	}
	tfm_model_specials(row, &sp);
	memset(&go, 0, sizeof(go));
	go.max_tokens = o->max_tokens;
	go.temperature = o->temperature;
	go.top_k = o->top_k;
	go.top_p = o->top_p;
	go.seed = o->seed;
	go.bos = sp.bos;
	go.eos = sp.eos;
	/*
	 * An imported model's vocabulary may end before the tokenizer's tfm
	 * specials, and it has no padding token (pad_id -1): it may produce any
	 * of its ids, and its pad positions are fed as id 0 (masked all the
	 * same).
	 */
	go.pad_is_token = !(sp.pad >= c->vocab || c->pad_id < 0);
	go.pad = go.pad_is_token ? sp.pad : 0;
	hooks.row = row;
	hooks.o = o;
	hooks.out = out;
	go.poll = gen_poll;
	hooks.json = o->json ? tfm_json_rows_begin(row, c->vocab, o->json, B, sp.eos, o->stop_ids,
											   o->n_stop_ids) : NULL;
	go.stop = (o->stop || o->n_stop_ids > 0 || hooks.json) ? gen_stop : NULL;
	go.mask = hooks.json ? gen_mask : NULL;
	go.hook_arg = &hooks;
	for (int b = 0; b < B; b++)
		out[b].stop_at = -1;

	gen = tfm_generator_create(m, prompts, plens, B, &go);
	if (!gen)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the decoder of model \"%s\"", row->name);
	guard = tfm_guard(free_generator, gen);
	tfm_check_pass(tfm_generate_run(gen), row->name);
	rows = tfm_generator_rows(gen);
	for (int b = 0; b < B; b++)
	{
		out[b].n = rows[b].n;
		/* a stop id ends the text and is not part of it */
		for (int k = 0; k < o->n_stop_ids && out[b].n > 0; k++)
			if (rows[b].ids[rows[b].n - 1] == o->stop_ids[k])
			{
				out[b].n--;
				break;
			}
		out[b].ids = palloc(sizeof(int32) * Max(1, rows[b].n));
		out[b].logprob = palloc(sizeof(float) * Max(1, rows[b].n));
		memcpy(out[b].ids, rows[b].ids, sizeof(int32) * rows[b].n);
		memcpy(out[b].logprob, rows[b].logprob, sizeof(float) * rows[b].n);
	}
	tfm_generator_free(gen);
	tfm_guard_release(guard);
	if (hooks.json)
	{
		/* every text a whole value of the schema's language */
		for (int b = 0; b < B; b++)
		{
			text	   *t = tfm_generated_text(row, &out[b]);

			tfm_json_rows_check(hooks.json, b, t, o->max_tokens);
			pfree(t);
		}
		tfm_json_rows_end(hooks.json);
	}
}

text *
tfm_generated_text(const TfmModelRow *row, const GenRow *g)
{
	text	   *t = tfm_tokenizer_decode_flags(row->tokenizer, g->ids, g->n, true);

	if (g->stop_at >= 0 && g->stop_at <= (int) VARSIZE_ANY_EXHDR(t))
		SET_VARSIZE(t, VARHDRSZ + g->stop_at);
	return t;
}

static void
free_decoder(void *d)
{
	tfm_decoder_free(d);
}

static int
by_prob_desc(const void *a, const void *b, void *arg)
{
	const float *p = arg;
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	/* higher first; equal ones by id */
	return p[x] != p[y] ? (p[x] > p[y] ? -1 : 1) : x - y;
}

/* x before y by falling probability, equal ones by id (by_prob_desc's order) */
static inline bool
prob_before(const float *p, int x, int y)
{
	return p[x] != p[y] ? p[x] > p[y] : x < y;
}

int *
tfm_next_token_probs(tfm_model *m, const char *name, const int32 *ids, int n, int k, float **probs)
{
	int			V = m->cfg.vocab;
	tfm_decoder *d;
	TfmGuard   *guard;
	float	   *logits;
	int		   *order;

	tfm_work_mem_check(m, tfm_decoder_bytes(&m->cfg, 1, n, n, 0,
											tfm_model_precision(m) != TFM_PREC_FP32,
											tfm_get_threads()) + (size_t) V * 8,
					   "running", name, "the length of the prompt");
	d = tfm_decoder_create(m, 1, n, n);
	if (!d)
		tfm_raise_code(TFM_ENOMEM, "out of memory for the decoder of model \"%s\"", name);
	guard = tfm_guard(free_decoder, d);
	logits = palloc(sizeof(float) * V);
	tfm_check_pass(tfm_decoder_feed(d, ids, NULL, n, logits), name);
	tfm_decoder_free(d);
	tfm_guard_release(guard);
	tfm_softmax_rows(logits, 1, V);
	order = palloc(sizeof(int) * V);
	*probs = logits;
	k = Max(1, Min(k, V));
	if ((int64) k * 64 < V)
	{
		/* a few of many: kept sorted as the ids go by (no sort of the whole vocabulary) */
		int			have = 0;

		for (int i = 0; i < V; i++)
		{
			int			j;

			if (have == k && !prob_before(logits, i, order[k - 1]))
				continue;
			j = have < k ? have++ : k - 1;
			for (; j > 0 && prob_before(logits, i, order[j - 1]); j--)
				order[j] = order[j - 1];
			order[j] = i;
		}
		return order;
	}
	for (int i = 0; i < V; i++)
		order[i] = i;
	qsort_arg(order, V, sizeof(int), by_prob_desc, logits);
	return order;
}
