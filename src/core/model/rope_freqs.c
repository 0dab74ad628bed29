/*
 * rope_freqs.c — the rotary inverse frequencies a llama config means for
 * one layer: θ's over the rotated width r (tfm_config_rope_dim: the head,
 * or its first partial_rotary_factor of it), rescaled as its rope_type
 * says (Llama 3.1's llama3 scaling, rope.c; linear: divided by the factor;
 * longrope: 1/(f_i·θ^(2i/r)), f the short factors for a sequence up to
 * rope_orig_max long, the long ones past it), or, in Gemma 3's windowed
 * (local) layers, rope_local_theta's unscaled.  The blocks compute them
 * once a pass.
 */
#include <math.h>

#include "tfm/layers_llama.h"
#include "tfm/model.h"

void
tfm_config_rope_freqs(float *inv, const tfm_config *c, int layer, int seq_len)
{
	int			r = tfm_config_rope_dim(c);

	if (c->rope_local_theta > 0.0f && tfm_config_window(c, layer) > 0)
	{
		tfm_rope_freqs_default(inv, r, c->rope_local_theta);
		return;
	}
	if (c->rope_type == TFM_ROPE_LONGROPE)
	{
		const float *f = tfm_config_rope_long(c, seq_len) ? c->rope_long : c->rope_short;

		/* transformers' 1.0 / (ext_factors * base ** (arange(0, r, 2) / r)), in float32 */
		for (int i = 0; i < r / 2; i++)
			inv[i] = 1.0f / (f[i] * powf(c->rope_theta, (float) (2 * i) / (float) r));
		return;
	}
	tfm_rope_freqs_default(inv, r, c->rope_theta);
	if (c->rope_type == TFM_ROPE_LLAMA3)
		tfm_rope_llama3(inv, r / 2, c->rope_factor, c->rope_low_freq, c->rope_high_freq,
						c->rope_orig_max);
	else if (c->rope_type == TFM_ROPE_LINEAR)
		for (int i = 0; i < r / 2; i++)
			inv[i] /= c->rope_factor;
}
