// tokenizers_hf.mjs — Hugging Face's own ids for the corpus: each
// tokenizer.json of tokenizers.tsv (fetched by scripts/fetch_hf_tokenizers.sh)
// loaded by the npm package `tokenizers` (Hugging Face's Rust tokenizers,
// prebuilt for linux-x64; version 0.23.2 was used) and every text of
// corpus.jsonl.gz encoded as AutoTokenizer's `tokenizer(text,
// add_special_tokens=False)` does: added tokens matched in the text
// (split_special_tokens=False), no post-processor specials.  Writes
// ids/NAME.txt.gz: line i = the ids of text i, space-separated.
//   cd /tmp/x && npm install tokenizers@0.23.2
//   NODE_PATH=/tmp/x/node_modules node tokenizers_hf.mjs /path/to/cache
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require(process.env.NODE_PATH ? path.join(process.env.NODE_PATH, 'tokenizers') : 'tokenizers');
const here = path.dirname(new URL(import.meta.url).pathname);
const cache = process.argv[2];
const texts = zlib.gunzipSync(fs.readFileSync(path.join(here, 'corpus.jsonl.gz'))).toString('utf8')
  .split('\n').filter(l => l.length).map(l => JSON.parse(l));
fs.mkdirSync(path.join(here, 'ids'), { recursive: true });
for (const line of fs.readFileSync(path.join(here, 'tokenizers.tsv'), 'utf8').split('\n')) {
  if (!line || line.startsWith('#')) continue;
  const name = line.split('\t')[0];
  const tok = Tokenizer.fromFile(path.join(cache, name, 'tokenizer.json'));
  const out = [];
  let n = 0;
  for (const t of texts) {
    const enc = await tok.encode(t, null, { addSpecialTokens: false });
    const ids = enc.getIds();
    n += ids.length;
    out.push(ids.join(' '));
  }
  fs.writeFileSync(path.join(here, 'ids', name + '.txt.gz'), zlib.gzipSync(out.join('\n') + '\n', { level: 9 }));
  console.log(`${name}: ${texts.length} texts, ${n} ids`);
}
