/*
 * model_import.c — a Hugging Face checkpoint made a tfm model (tfm_import,
 * tfm_import_files): config.json checked and turned into a tfm config, the
 * size and the specials checked before anything is allocated, the weights
 * loaded, the tokenizer stored under the model's name, then the model's
 * row and tensors.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "import/hf_files.h"
#include "runtime/rows.h"
#include "runtime/runtime.h"
#include "runtime/new_model.h"
#include "runtime/cache/tokenizer_cache.h"
#include "storage/models/models.h"
#include "tfm/hf_import.h"
#include "tfm/precision.h"

/* the BERT family imports as classifiers; GPT-2 and Llama as language models; T5 as seq2seq */
static bool
is_encoder(tfm_hf_arch arch)
{
	return arch == TFM_HF_BERT || arch == TFM_HF_ROBERTA || arch == TFM_HF_DISTILBERT;
}

/* the task asked for (if any) is the checkpoint's */
static void
check_task(const TfmHfConfig *hc, const char *task)
{
	const char *want = is_encoder(hc->p.arch) ? "classify" :
		hc->p.arch == TFM_HF_MARIAN || hc->p.arch == TFM_HF_T5 ? "seq2seq" : "lm";

	if (task && strcmp(task, want) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a %s checkpoint imports as task \"%s\", not \"%s\"",
						hc->model_type, want, task),
				 !is_encoder(hc->p.arch) ? 0 :
				 errdetail("tfm_embed works on every classifier: it returns the pooled vector.")));
}

/*
 * Validate, then allocate: the size the config implies against the cap and
 * against the bytes supplied, and (without a tokenizer) the specials
 * against the vocabulary, before the model is built.
 */
static void
check_size(const char *name, const TfmHfConfig *hc, const TfmImportSteps *steps)
{
	const tfm_config *c = &hc->cfg;
	int64		n_params = tfm_config_params(c);
	tfm_hf_map *map = tfm_hf_map_create(hc->p.arch, c);
	uint64		need,
				floats,
				have = steps->bytes;
	bool		tokenizer = steps->tokenizer != NULL;

	if (!map)
		tfm_raise_code(TFM_ENOMEM, "out of memory");
	need = 2 * tfm_hf_map_min_values(map);
	tfm_hf_map_free(map);
	/* a GGUF file's matrices of the types kept count as their blocks (checked again once placed) */
	floats = (uint64) Max(n_params, 0);
	floats -= Min(steps->kept_values, floats);
	tfm_check_model_bytes(n_params, floats * sizeof(float), steps->kept_bytes, name);
	/* (a sharded checkpoint's headers were checked against its index already) */
	if (steps->check_bytes && have < need)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of %llu bytes cannot hold model \"%s\"", steps->what,
						(unsigned long long) have, name),
				 errdetail("Its config.json implies " INT64_FORMAT " parameters: the required "
						   "tensors take at least %llu bytes (2 a value).",
						   n_params, (unsigned long long) need)));
	if (!tokenizer)
	{
		TfmModelRow probe;
		TfmSpecials sp;

		memset(&probe, 0, sizeof(probe));
		strlcpy(probe.name, name, sizeof(probe.name));
		probe.bos_id = hc->bos_id;
		probe.eos_id = hc->eos_id;
		probe.cfg = *c;
		tfm_model_specials(&probe, &sp);
	}
}

/* a special id not known yet (INT_MAX) is checked at its first use */
static int32
known_or_zero(int32 id)
{
	return id == INT_MAX ? 0 : id;
}

/* the stored tokenizer's specials (sp) checked against the model */
static void
check_tokenizer(const char *name, const TfmHfConfig *hc, const int32 *sp)
{
	const tfm_config *c = &hc->cfg;
	TfmSpecials tsp;

	/*
	 * An encoder reads text as the post-processor's [CLS] text [SEP]
	 * (RoBERTa's <s> text </s>) and an empty text as [UNK]: those must be
	 * the checkpoint's own ids, never ids past its vocabulary.
	 */
	if (is_encoder(hc->p.arch) &&
		(sp[TFM_TOK_CLS] >= c->vocab || sp[TFM_TOK_SEP] >= c->vocab || sp[TFM_TOK_UNK] >= c->vocab))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the tokenizer.json of a %s checkpoint must name its [CLS] and [SEP] "
						"(or <s> and </s>) and its unknown token",
						hc->model_type),
				 errdetail("tfm reads text the way the file's post-processor "
						   "(BertProcessing, RobertaProcessing or a \"[CLS] $A [SEP]\" template) "
						   "and model.unk_token (or a piece \"<unk>\") say; "
						   "import without the tokenizer and pass token ids.")));

	/*
	 * The specials the model will use (the tokenizer's, the config's bos and
	 * eos over them) fit the vocabulary.
	 */
	tsp.pad = known_or_zero(c->emb_norm && c->pad_id >= 0 ? c->pad_id : sp[TFM_TOK_PAD]);
	tsp.unk = known_or_zero(sp[TFM_TOK_UNK]);
	tsp.bos = known_or_zero(hc->bos_id >= 0 ? hc->bos_id : sp[TFM_TOK_BOS]);
	tsp.eos = known_or_zero(hc->eos_id >= 0 ? hc->eos_id : sp[TFM_TOK_EOS]);
	tsp.cls = known_or_zero(sp[TFM_TOK_CLS]);
	tsp.sep = sp[TFM_TOK_SEP];
	tfm_check_specials(name, c, &tsp);
}

/* the model's row (the config as tfm stores it, plus the checkpoint's bos/eos and origin) and its tensors */
static void
store_model(const char *name, const TfmHfConfig *hc, const tfm_model *m, tfm_precision own, bool tokenizer,
			const char *target_tokenizer, const bool *blocks_only, TfmModelRow *rowp)
{
	const tfm_config *c = &hc->cfg;
	char	   *json = tfm_config_json(c);
	TfmNewModel nm;
	TfmModelRow row;
	Datum		labels = (Datum) 0;

	json[strlen(json) - 1] = '\0';
	json = psprintf("%s, \"bos_id\": %d, \"eos_id\": %d, \"imported_from\": \"%s\", "
					"\"checkpoint_precision\": \"%s\"}",
					json, hc->bos_id, hc->eos_id, hc->model_type, tfm_precision_name(own));
	if (hc->n_labels > 0)
	{
		Datum	   *el = palloc(sizeof(Datum) * hc->n_labels);

		for (int i = 0; i < hc->n_labels; i++)
			el[i] = CStringGetTextDatum(hc->labels[i]);
		labels = PointerGetDatum(construct_array(el, hc->n_labels, TEXTOID, -1, false, TYPALIGN_INT));
	}
	memset(&nm, 0, sizeof(nm));
	nm.name = name;
	nm.task = tfm_task_name(c->task);
	nm.tokenizer = tokenizer ? name : NULL;
	nm.target_tokenizer = target_tokenizer;
	nm.labels = labels;
	nm.config_json = json;
	nm.parameters = (int64) m->n_params;
	memset(&row, 0, sizeof(row));
	row.bos_id = hc->bos_id;
	row.eos_id = hc->eos_id;
	tfm_model_insert(&nm, &row);
	strlcpy(row.name, name, sizeof(row.name));
	row.cfg = *c;
	row.n_labels = hc->n_labels;
	row.labels = hc->labels;
	tfm_catalog_save_except(&row, m, 0, blocks_only);
	*rowp = row;
}

/* a model of that name may be imported */
static void
check_new(const char *name)
{
	TfmModelRow row;

	tfm_check_writable("import", name);
	tfm_check_new_model_name(name);
	if (tfm_catalog_lookup(name, &row, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Drop it first with tfm_drop_model('%s').", name)));
}

int64
tfm_hf_import_built(const char *name, TfmHfConfig *hc, const TfmImportSteps *steps,
					tfm_task *imported_task)
{
	tfm_model  *m;
	TfmModelRow row;
	tfm_precision own;
	const bool *blocks_only = NULL;

	check_new(name);
	check_size(name, hc, steps);

	/* weights first: a bad file stores nothing */
	/* a head the checkpoint lacks (a base encoder's cls.*) starts from tfm's init */
	m = steps->load_inits ? tfm_model_new_blank(&hc->cfg, name) :
		tfm_model_new(&hc->cfg, name, TFM_SEED_DEFAULT);
	own = steps->load(m, hc, steps->arg);
	if (steps->blocks_only)
	{
		uint64		float_bytes,
					kept_bytes;

		/* the bytes the rows will take, now that the blocks are placed */
		blocks_only = steps->blocks_only(m, steps->arg, &float_bytes, &kept_bytes);
		tfm_check_model_bytes((int64) m->n_params, float_bytes, kept_bytes, name);
	}
	if (steps->tokenizer)
	{
		int32		sp[TFM_TOK_N_SPECIALS];

		steps->tokenizer(name, hc, steps->arg, sp);
		check_tokenizer(name, hc, sp);
	}
	store_model(name, hc, m, own, steps->tokenizer != NULL, steps->target_tokenizer, blocks_only, &row);
	if (steps->stored)
		steps->stored(row.id, row.version, steps->arg);
	*imported_task = hc->cfg.task;
	return (int64) m->n_params;
}

/* a safetensors source's steps */
typedef struct HfArgs
{
	TfmWeightSource *src;
	Jsonb	   *tokenizer;
	const TfmMarianFiles *marian;	/* Marian's .spm files and vocab.json, or NULL */
} HfArgs;

static tfm_precision
hf_load(tfm_model *m, const TfmHfConfig *hc, void *arg)
{
	return tfm_weights_load(m, hc, ((HfArgs *) arg)->src);
}

static void
hf_tokenizer(const char *name, const TfmHfConfig *hc, void *arg, int32 *sp)
{
	tfm_hf_import_tokenizer(name, ((HfArgs *) arg)->tokenizer, hc->cfg.vocab, sp);
}

/* the steps of a safetensors source's import (tokenizer: its step, or NULL) */
static void
safetensors_steps(TfmImportSteps *steps, HfArgs *args,
				  void (*tokenizer) (const char *, const TfmHfConfig *, void *, int32 *))
{
	memset(steps, 0, sizeof(*steps));
	steps->what = args->src->what;
	steps->bytes = tfm_weights_bytes(args->src);
	steps->check_bytes = args->src->index == NULL;
	steps->load = hf_load;
	steps->tokenizer = tokenizer;
	steps->arg = args;
}

int64
tfm_hf_import_model(const char *name, Jsonb *config, TfmWeightSource *src, Jsonb *tokenizer,
					const char *task, tfm_task *imported_task)
{
	TfmHfConfig hc;
	HfArgs		args = {src, tokenizer, NULL};
	TfmImportSteps steps;

	check_new(name);
	tfm_hf_parse_config(config, &hc);
	check_task(&hc, task);
	safetensors_steps(&steps, &args, tokenizer ? hf_tokenizer : NULL);
	return tfm_hf_import_built(name, &hc, &steps, imported_task);
}

/* Marian's tokenizers: the source's (its texts end with </s>) and the target's */
static void
marian_tokenizer(const char *name, const TfmHfConfig *hc, void *arg, int32 *sp)
{
	const TfmMarianFiles *f = ((HfArgs *) arg)->marian;
	int32		tsp[TFM_TOK_N_SPECIALS];

	tfm_hf_import_marian_spm(name, "source.spm", f->source, f->source_len, f->vocab,
							 hc->cfg.vocab, true, sp);
	tfm_hf_import_marian_spm(psprintf("%s_target", name), "target.spm", f->target,
							 f->target_len, f->vocab, hc->cfg.vocab, false, tsp);
}

int64
tfm_hf_import_marian(const char *name, Jsonb *config, TfmWeightSource *src,
					 const TfmMarianFiles *files, const char *task, tfm_task *imported_task)
{
	TfmHfConfig hc;
	HfArgs		args = {src, NULL, files};
	TfmImportSteps steps;
	char	   *target = psprintf("%s_target", name);

	check_new(name);
	tfm_check_new_name("tokenizer", target);
	tfm_hf_parse_config(config, &hc);
	if (hc.p.arch != TFM_HF_MARIAN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("SentencePiece model files come with a Marian checkpoint, not a %s one",
						hc.model_type)));
	check_task(&hc, task);
	safetensors_steps(&steps, &args, marian_tokenizer);
	steps.target_tokenizer = target;
	return tfm_hf_import_built(name, &hc, &steps, imported_task);
}
