/*
 * bert.c — the BERT family for the Hugging Face import: BERT and RoBERTa
 * (prefix "bert." / "roberta."), and DistilBERT, base encoders and their
 * ...ForSequenceClassification heads, as tfm classifiers: the config.json
 * keys, the tfm_config (tfm's post-LN encoder with the BERT-family options
 * of model.h) and the tensors; nn.Linear weights are (out, in) and are
 * transposed:
 *   embeddings.word_embeddings.weight (V, d)         -> tok_emb
 *   embeddings.position_embeddings.weight (P, d)     -> pos_emb (RoBERTa: P =
 *                                                      pad + 1 + max_len rows)
 *   embeddings.token_type_embeddings.weight (Tv, d)  -> type_emb
 *   embeddings.LayerNorm.weight / bias               -> emb_ln.g / b
 *   encoder.layer.N.attention.self.query / key / value .weight (d, d), .bias
 *                                                    -> enc.N.attn.qkv.w / b, thirds Q | K | V
 *   encoder.layer.N.attention.output.dense.*         -> enc.N.attn.out.*
 *   encoder.layer.N.attention.output.LayerNorm.*     -> enc.N.ln1.*
 *   encoder.layer.N.intermediate.dense.* (f, d)      -> enc.N.ff1.*
 *   encoder.layer.N.output.dense.* (d, f)            -> enc.N.ff2.*
 *   encoder.layer.N.output.LayerNorm.*               -> enc.N.ln2.*
 *   embeddings.position_ids (1, P)                   a buffer: ignored
 * with a head (...ForSequenceClassification): BERT's pooler.dense.* ->
 * cls.pre.* (tanh) and classifier.* -> cls.*; RoBERTa's classifier.dense.*
 * -> cls.pre.* (tanh) and classifier.out_proj.* -> cls.*.  Without one,
 * pooler.dense.* (BertModel, RobertaModel) is accepted and ignored: the
 * model pools by the mean, and its cls.* is a new head.
 * A head on every token (cfg token_head; the checkpoint has no pooler):
 * ...ForTokenClassification's classifier.* and ...ForQuestionAnswering's
 * qa_outputs.* (2 logits: start, end) -> cls.*.
 * DistilBERT (prefix "distilbert."): embeddings.word_embeddings,
 * position_embeddings, LayerNorm as above (no token types);
 * transformer.layer.N.attention.q_lin / k_lin / v_lin / out_lin,
 * sa_layer_norm -> ln1, ffn.lin1 / lin2 -> ff1 / ff2, output_layer_norm ->
 * ln2; head: pre_classifier.* -> cls.pre.* (ReLU), classifier.* -> cls.*.
 */
#include "hf_family.h"

static const hf_keys bert_keys = {"hidden_size", "num_attention_heads", "num_hidden_layers",
"max_position_embeddings", "intermediate_size", "layer_norm_eps"};

static void
bert_config(tfm_config *cfg, const tfm_hf_params *p)
{
	hf_base_config(cfg, p, TFM_TASK_CLASSIFY);
	cfg->max_len = p->max_len - p->pos_offset;
	cfg->n_classes = p->n_classes;
	cfg->norm = TFM_NORM_POST;
	cfg->positions = TFM_POS_LEARNED;
	cfg->activation = TFM_ACT_GELU;
	cfg->pooling = p->head ? TFM_POOL_CLS : TFM_POOL_MEAN;
	cfg->tie = 1;
	cfg->pad_id = p->pad_id;
	cfg->type_vocab = p->arch == TFM_HF_DISTILBERT ? 0 : p->type_vocab;
	cfg->emb_norm = 1;
	cfg->pos_offset = p->arch == TFM_HF_ROBERTA ? p->pos_offset : 0;
	cfg->token_head = p->token_head;
	if (p->token_head)
		cfg->pooling = TFM_POOL_CLS;
	cfg->cls_pre = !p->head ? TFM_CLS_PRE_NONE :
		p->arch == TFM_HF_DISTILBERT ? TFM_CLS_PRE_RELU : TFM_CLS_PRE_TANH;
}

static void
bert_entries(hf_builder *b, const tfm_config *c)
{
	tfm_hf_arch arch = b->map->arch;
	int64_t		d = c->d_model,
				f = c->d_ff,
				V = c->vocab,
				P = c->max_len + c->pos_offset,
				C = c->n_classes;
	bool		distil = arch == TFM_HF_DISTILBERT;
	bool		head = c->cls_pre != TFM_CLS_PRE_NONE;

	hf_add(b, "embeddings.word_embeddings.weight", true, TFM_HF_COPY, "tok_emb", 2, V, d, 0, 0);
	hf_add(b, "embeddings.position_embeddings.weight", true, TFM_HF_COPY, "pos_emb", 2, P, d, 0, 0);
	if (!distil)
		hf_add(b, "embeddings.token_type_embeddings.weight", true, TFM_HF_COPY, "type_emb", 2,
			   c->type_vocab, d, 0, 0);
	hf_add(b, "embeddings.LayerNorm.weight", true, TFM_HF_COPY, "emb_ln.g", 1, d, 0, 0, 0);
	hf_add(b, "embeddings.LayerNorm.bias", true, TFM_HF_COPY, "emb_ln.b", 1, d, 0, 0, 0);
	hf_add(b, "embeddings.position_ids", true, TFM_HF_BUFFER, "", 2, 1, P, 0, 0);
	for (int i = 0; i < c->enc_layers; i++)
	{
		const char *L = distil ? "transformer.layer" : "encoder.layer";

#define E(hf, tf, use, nd, a, bb) hf_add_layer(b, L, i, hf, "enc", tf, use, nd, a, bb, 0)
		/* q/k/v (or q_lin/k_lin/v_lin) into thirds of the fused qkv */
#define S(hf, tf, nd, a, bb, col) hf_add_layer(b, L, i, hf, "enc", tf, TFM_HF_SLICE, nd, a, bb, col)
		S(distil ? "attention.q_lin.weight" : "attention.self.query.weight", "attn.qkv.w", 2, d, d, 0);
		S(distil ? "attention.q_lin.bias" : "attention.self.query.bias", "attn.qkv.b", 1, d, 0, 0);
		S(distil ? "attention.k_lin.weight" : "attention.self.key.weight", "attn.qkv.w", 2, d, d, d);
		S(distil ? "attention.k_lin.bias" : "attention.self.key.bias", "attn.qkv.b", 1, d, 0, d);
		S(distil ? "attention.v_lin.weight" : "attention.self.value.weight", "attn.qkv.w", 2, d, d, 2 * d);
		S(distil ? "attention.v_lin.bias" : "attention.self.value.bias", "attn.qkv.b", 1, d, 0, 2 * d);
		E(distil ? "attention.out_lin.weight" : "attention.output.dense.weight", "attn.out.w",
		  TFM_HF_TRANSPOSE, 2, d, d);
		E(distil ? "attention.out_lin.bias" : "attention.output.dense.bias", "attn.out.b",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "sa_layer_norm.weight" : "attention.output.LayerNorm.weight", "ln1.g",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "sa_layer_norm.bias" : "attention.output.LayerNorm.bias", "ln1.b",
		  TFM_HF_COPY, 1, d, 0);
		E(distil ? "ffn.lin1.weight" : "intermediate.dense.weight", "ff1.w", TFM_HF_TRANSPOSE, 2, f, d);
		E(distil ? "ffn.lin1.bias" : "intermediate.dense.bias", "ff1.b", TFM_HF_COPY, 1, f, 0);
		E(distil ? "ffn.lin2.weight" : "output.dense.weight", "ff2.w", TFM_HF_TRANSPOSE, 2, d, f);
		E(distil ? "ffn.lin2.bias" : "output.dense.bias", "ff2.b", TFM_HF_COPY, 1, d, 0);
		E(distil ? "output_layer_norm.weight" : "output.LayerNorm.weight", "ln2.g", TFM_HF_COPY, 1, d, 0);
		E(distil ? "output_layer_norm.bias" : "output.LayerNorm.bias", "ln2.b", TFM_HF_COPY, 1, d, 0);
#undef E
#undef S
	}
	if (c->token_head != TFM_TOKEN_HEAD_NONE)
	{
		hf_add_linear(b, c->token_head == TFM_TOKEN_HEAD_SPANS ? "qa_outputs" : "classifier", false,
					  "cls", C, d);
		return;
	}
	if (!head)
	{
		/* a base model's pooler (BertModel, RobertaModel): not used by mean pooling */
		if (!distil)
		{
			hf_add(b, "pooler.dense.weight", true, TFM_HF_BUFFER, "", 2, d, d, 0, 0);
			hf_add(b, "pooler.dense.bias", true, TFM_HF_BUFFER, "", 1, d, 0, 0, 0);
		}
		return;
	}
	/* the head: BERT's pooler, RoBERTa's classifier.dense or DistilBERT's pre_classifier, then the classifier */
	hf_add_linear(b, arch == TFM_HF_BERT ? "pooler.dense" : arch == TFM_HF_ROBERTA ? "classifier.dense" :
				  "pre_classifier", arch == TFM_HF_BERT, "cls.pre", d, d);
	hf_add_linear(b, arch == TFM_HF_ROBERTA ? "classifier.out_proj" : "classifier", false, "cls", C, d);
}

const hf_family hf_bert = {&bert_keys, bert_config, bert_entries};
