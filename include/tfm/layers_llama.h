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

/* a head is at most 4096 wide (d_model ≤ 4096): its inverse frequencies fit in this */
#define TFM_ROPE_MAX_HALF 2048

/* inv (s/2) = 1/θ^(2i/s) in float32 */
void		tfm_rope_freqs_default(float *inv, int s, float theta);

/*
 * Llama 3.1's rope_scaling ("rope_type": "llama3") applied to inv (half):
 * with wavelen = 2π/inv_i, a frequency whose wavelength exceeds orig/low is
 * divided by factor, one under orig/high is kept, and between them
 * smooth = (orig/wavelen − low)/(high − low) mixes the two:
 * inv_i ← (1 − smooth)·inv_i/factor + smooth·inv_i (transformers'
 * _compute_llama3_parameters; llama.cpp's rope_freqs.weight holds the
 * divisors inv_i(θ)/inv_i)
 */
void		tfm_rope_llama3(float *inv, int half, float factor, float low, float high, int orig);

/*
 * Rotate, in place, the first nh heads (s wide each, s even) of N rows of
 * x (row stride rs floats) by their positions: row r sits at pos[r], or at
 * r % T when pos is NULL.  With the inverse frequencies inv (s/2, see
 * tfm_rope_freqs_default) and a = p·inv_i, for i < s/2:
 *               x_i ← x_i cos a − x_{i+s/2} sin a,
 *               x_{i+s/2} ← x_{i+s/2} cos a + x_i sin a
 * (HF's apply_rotary_pos_emb with rotate_half).  inverse rotates by −a: the
 * backward pass of the rotation (it is orthogonal).
 */
void		tfm_rope_apply(float *x, int N, int nh, int s, ptrdiff_t rs,
						   const int32_t *pos, int T, const float *inv, int inverse);

/*
 * The same over the first r values of each head only (r even, ≤ s; inv
 * r/2 wide; Phi-4-mini's partial_rotary_factor: transformers rotates
 * q[..., :r] with rotate_half over those r and passes the rest), cos and sin
 * times scale (longrope's attention factor; 1 = none).  Its transpose, the
 * backward pass, is inverse with the same scale.
 */
void		tfm_rope_apply_part(float *x, int N, int nh, int s, int r, ptrdiff_t rs,
								const int32_t *pos, int T, const float *inv, float scale,
								int inverse);

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
