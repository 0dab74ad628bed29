/*
 * layers_llama.h — the layers Llama-family models add to tfm's own (see
 * layers.h for the conventions: outputs first, backward passes accumulate
 * into their gradient outputs unless they say otherwise).
 *
 *   RMSNorm   y = g ⊙ x / √(mean(x²) + eps)            (rmsnorm.c)
 *   rotary    Hugging Face's rotate_half convention       (rope.c)
 *   SwiGLU    h = silu(gate) ⊙ up                         (swiglu.c)
 *   GeGLU     h = gelu_tanh(gate) ⊙ up                    (geglu.c, Gemma)
 *   soft cap  z = c·tanh(z/c)                             (softcap.c, Gemma 2)
 */
#ifndef TFM_LAYERS_LLAMA_H
#define TFM_LAYERS_LLAMA_H

#include <stddef.h>
#include <stdint.h>

/* ---- RMSNorm (rmsnorm.c): rstd (N) keeps 1/√(mean(x²) + eps) ---- */

void		tfm_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *g,
								int N, int d, float eps);
/* dinp += d/dx; dg += d/dg (either may be NULL) */
void		tfm_rmsnorm_backward(float *dinp, float *dg, const float *dout, const float *inp,
								 const float *g, const float *rstd, int N, int d);

/* ---- rotary position embeddings (rope.c) ---- */

/*
 * Rotate, in place, the first nh heads (s wide each, s even) of N rows of
 * x (row stride rs floats) by their positions: row r sits at pos[r], or at
 * r % T when pos is NULL.  With inv_freq_i = 1/θ^(2i/s) and a = p·inv_freq_i,
 * for i < s/2:  x_i ← x_i cos a − x_{i+s/2} sin a,
 *               x_{i+s/2} ← x_{i+s/2} cos a + x_i sin a
 * (HF's apply_rotary_pos_emb with rotate_half).  inverse rotates by −a: the
 * backward pass of the rotation (it is orthogonal).
 */
void		tfm_rope_apply(float *x, int N, int nh, int s, ptrdiff_t rs,
						   const int32_t *pos, int T, float theta, int inverse);

/* ---- SwiGLU (swiglu.c): hg (N, 2f) holds [gate | up] per row ---- */

void		tfm_swiglu_forward(float *out, const float *hg, int N, int f);
/* dhg (N, 2f) receives (=) the gradient of [gate | up] from dout (N, f) */
void		tfm_swiglu_backward(float *dhg, const float *dout, const float *hg, int N, int f);

/* ---- GeGLU (geglu.c): as SwiGLU with GELU's tanh form for silu ---- */

void		tfm_geglu_forward(float *out, const float *hg, int N, int f);
/* dhg (N, 2f) receives (=) the gradient of [gate | up] from dout (N, f) */
void		tfm_geglu_backward(float *dhg, const float *dout, const float *hg, int N, int f);

/* ---- soft cap (softcap.c): cap 0 leaves the values as they are ---- */

/* x ← cap·tanh(x/cap), in place */
void		tfm_softcap_forward(float *x, size_t n, float cap);
/* g ← g ⊙ (1 − (y/cap)²): y the capped values, g the gradient of y becoming x's */
void		tfm_softcap_backward(float *g, const float *y, size_t n, float cap);

#endif							/* TFM_LAYERS_LLAMA_H */
