/*
 * hf_arch_table.c — the one table of the Hugging Face architectures tfm
 * imports: each tfm_hf_arch with the family that knows its keys, config
 * and tensors (hf_family.h) and the prefix its checkpoints may put
 * before every tensor name.  A new family is a new file and a row here.
 */
#include <stddef.h>

#include "hf_arch_table.h"

static const hf_arch_row hf_archs[] = {
	{TFM_HF_GPT2, "transformer.", &hf_gpt2},	/* GPT2LMHeadModel */
	{TFM_HF_BERT, "bert.", &hf_bert},	/* BertModel, BertForSequenceClassification */
	{TFM_HF_ROBERTA, "roberta.", &hf_bert},	/* RobertaModel, ...ForSequenceClassification */
	{TFM_HF_DISTILBERT, "distilbert.", &hf_bert},	/* DistilBertModel, ...ForSequenceClassification */
	{TFM_HF_LLAMA, "model.", &hf_llama},	/* Llama, Qwen2, Mistral, Gemma, Gemma 2 */
	{TFM_HF_PHI3, "model.", &hf_llama}, /* Phi3ForCausalLM: q/k/v and gate/up fused */
	{TFM_HF_MARIAN, "model.", &hf_marian},	/* MarianMTModel */
	{TFM_HF_T5, NULL, &hf_t5},	/* T5ForConditionalGeneration */
};

const hf_arch_row *
hf_arch_find(tfm_hf_arch arch)
{
	for (size_t i = 0; i < sizeof(hf_archs) / sizeof(hf_archs[0]); i++)
		if (hf_archs[i].arch == arch)
			return &hf_archs[i];
	return NULL;
}
