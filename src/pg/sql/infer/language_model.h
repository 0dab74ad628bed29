/*
 * language_model.h — what tfm_chat shares with tfm_generate
 * (language_model.c): generation's options read from the arguments.
 */
#ifndef TFM_PG_LANGUAGE_MODEL_H
#define TFM_PG_LANGUAGE_MODEL_H

#include "postgres.h"
#include "fmgr.h"

#include "runtime/infer/infer.h"

/* generation's options from arguments 2..7: max_tokens, temperature, top_k,
 * top_p, seed, stop (tfm_generate's and tfm_chat's) */
void		tfm_generate_options(FunctionCallInfo fcinfo, GenOpts *o);

#endif							/* TFM_PG_LANGUAGE_MODEL_H */
