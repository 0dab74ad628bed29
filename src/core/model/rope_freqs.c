/*
 * rope_freqs.c — the rotary inverse frequencies a llama config means for
 * one layer: θ's (tfm_rope_freqs_default), rescaled as its rope_type says
 * (Llama 3.1's llama3 scaling, rope.c; linear: divided by the factor), or,
 * in Gemma 3's windowed (local) layers, rope_local_theta's unscaled.  The
 * blocks compute them once a pass.
 */
#include "tfm/layers_llama.h"
#include "tfm/model.h"

void
tfm_config_rope_freqs(float *inv, const tfm_config *c, int layer)
{
	int			s = tfm_config_head_size(c);

	if (c->rope_local_theta > 0.0f && tfm_config_window(c, layer) > 0)
	{
		tfm_rope_freqs_default(inv, s, c->rope_local_theta);
		return;
	}
	tfm_rope_freqs_default(inv, s, c->rope_theta);
	if (c->rope_type == TFM_ROPE_LLAMA3)
		tfm_rope_llama3(inv, s / 2, c->rope_factor, c->rope_low_freq, c->rope_high_freq,
						c->rope_orig_max);
	else if (c->rope_type == TFM_ROPE_LINEAR)
		for (int i = 0; i < s / 2; i++)
			inv[i] /= c->rope_factor;
}
