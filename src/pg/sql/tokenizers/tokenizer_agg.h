/*
 * tokenizer_agg.h — the hook that stores trained tokenizers (tokenizer_agg.c).
 */
#ifndef TFM_PG_TOKENIZER_AGG_H
#define TFM_PG_TOKENIZER_AGG_H

/* install the ExecutorFinish hook (_PG_init) */
void		tfm_tokenizer_init_hooks(void);

#endif							/* TFM_PG_TOKENIZER_AGG_H */
