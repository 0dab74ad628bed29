// chat_templates_hf.mjs — the chat templates of real tokenizer_config.json
// files (tokenizers.tsv's packages, fetched by scripts/fetch_hf_tokenizers.sh)
// rendered by @huggingface/jinja (npm, 0.5.11: the renderer transformers.js
// and the Hub use) for a set of conversations, written as
// test/fixtures/chat/hf_jinja_cases.tsv in test_chat_template.c's format:
// "T name hex(template)" then "C name add_generation_prompt hex(bos)
// hex(eos) hex(role):hex(content),... R|E hex(rendering or error)".
// The templates of Gemma 3, Llama 3, Qwen3 and DeepSeek V3, for
// conversations of roles and text contents (multi-turn, and assistant
// turns holding <think> reasoning); tools, tool calls and tool results
// (messages beyond role and content) are not in tfm's renderer yet.
// @huggingface/jinja 0.5.11's strip/lstrip/rstrip ignore their argument
// (they strip all whitespace), where Python's Jinja (transformers) and tfm
// strip only the characters given: Qwen3's "</think> here" keeps its space
// in transformers, loses it here, so no conversation below tells them apart.
//   cd /tmp/x && npm install @huggingface/jinja@0.5.11
//   NODE_PATH=/tmp/x/node_modules node chat_templates_hf.mjs CACHE
import fs from 'node:fs';
import path from 'node:path';

const jinja = await import(path.join(process.env.NODE_PATH || 'node_modules', '@huggingface/jinja/dist/index.js'));
const here = path.dirname(new URL(import.meta.url).pathname);
const cache = process.argv[2];
const out = path.join(here, '../../fixtures/chat/hf_jinja_cases.tsv');
const hex = s => Buffer.from(s, 'utf8').toString('hex');
const tok = x => (x == null ? '' : typeof x === 'string' ? x : x.content);
const convs = [
  [['user', 'Hi there!']],
  [['system', 'You are kind.'], ['user', 'Hi there!']],
  [['user', 'Hi there!'], ['assistant', 'Hello! How can I help?'], ['user', 'Tell me a joke.']],
  [['system', 'Answer in French.'], ['user', 'Hi'], ['assistant', 'Bonjour !'], ['user', 'How are you?'],
   ['assistant', 'Très bien, merci.'], ['user', 'Bye 👋\n  with   spaces\tand a tab ']],
  [['system', ''], ['user', '']],
  [['user', '<start_of_turn>{{ not a tag }}{% raw %}<|eot_id|>']],
  [['user', 'first'], ['user', 'second']],
  [['assistant', 'I speak first'], ['user', 'ok']],
  [['user', 'What is 2+2?'], ['assistant', '<think>\nSimple sum.\n</think>\n\n4'], ['user', 'And 3+3?']],
  [['system', 'Think first.'], ['user', 'Hi'], ['assistant', '<think>\n\n</think>\n\nHello.'],
   ['user', 'Why?'], ['assistant', 'no think tags </think>\nhere'], ['user', 'ok']],
];
const lines = ['# chat templates of real tokenizer_config.json files and @huggingface/jinja\'s renderings; made by test/reference/hf_tokenizers/chat_templates_hf.mjs'];
let n = 0;
for (const name of ['gemma3', 'llama3', 'qwen3', 'deepseek_v3']) {
  const cfg = JSON.parse(fs.readFileSync(path.join(cache, name, 'tokenizer_config.json'), 'utf8'));
  const text = cfg.chat_template;
  lines.push(`T\thf_${name}\t${hex(text)}`);
  const t = new jinja.Template(text);
  for (const c of convs)
    for (const agp of [0, 1]) {
      const messages = c.map(([role, content]) => ({ role, content }));
      let res;
      try {
        res = 'R\t' + hex(t.render({ messages, add_generation_prompt: !!agp, bos_token: tok(cfg.bos_token), eos_token: tok(cfg.eos_token) }));
      } catch (e) {
        res = 'E\t' + hex(String(e.message).replace(/^Error: /, ''));
      }
      lines.push(`C\thf_${name}\t${agp}\t${hex(tok(cfg.bos_token))}\t${hex(tok(cfg.eos_token))}\t` +
        c.map(([r, m]) => hex(r) + ':' + hex(m)).join(',') + '\t' + res);
      n++;
    }
}
fs.writeFileSync(out, lines.join('\n') + '\n');
console.log(`${n} cases -> ${out}`);
