// llama_gen.mjs — llama.cpp's side of bench/peers, through node-llama-cpp's
// API (its prebuilt CPU binary; no GPU, nothing built or downloaded):
// load a GGUF file, then per round greedy-generate N tokens after the
// generation prompt on a cleared sequence (prompt included in the time, as
// tfm_generate_tokens is timed), and evaluate the prefill prompt alone.
//
//   node llama_gen.mjs MODEL.gguf --threads N --prompts prompts.json
//        [--tokens 64] [--rounds 3] [--kv F16|F32] [--flash-attention auto|on|off]
//   node llama_gen.mjs --info      llama.cpp's CPU features (its systemInfo)
//
// --kv is the key/value cache type (F16: llama.cpp's default), --flash-attention
// llama.cpp's choice (auto: its default, on for this CPU model).  Its CPU
// flash attention rounds through F16, which moves logits by ~1e-2 on this
// model: the exact F32 computation, to compare greedy ids with, is
// --kv F32 --flash-attention off.
//
// Prints RESULT lines (what=generate / prefill, the median of the rounds
// after one untimed round, tokens_per_s; cpu_tokens_per_s the same over
// the process's CPU time, every thread's, which a loaded machine disturbs
// less than the wall clock) and `IDS a,b,c` (the generated ids of the last
// round).
import fs from "node:fs";
import path from "node:path";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

function arg(name, dflt) {
    const i = process.argv.indexOf("--" + name);
    return i > 0 ? process.argv[i + 1] : dflt;
}
if (process.argv[2] === "--info") {
    const l = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
    console.log(l.systemInfo.replace(/ = 1/g, "").replace(/^CPU : /, "").split("|").map((x) => x.trim()).filter((x) => x).join(","));
    await l.dispose();
    process.exit(0);
}
const modelPath = process.argv[2];
const threads = Number(arg("threads", "1"));
const prompts = JSON.parse(fs.readFileSync(arg("prompts"), "utf8"));
const nTokens = Number(arg("tokens", "64"));
const rounds = Number(arg("rounds", "3"));
const kv = arg("kv", "F16");
const fa = arg("flash-attention", "auto");
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const llama = await getLlama({gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
    contextSize: 512, batchSize: 512, sequences: 1, threads: {ideal: threads, min: threads},
    experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv,
    flashAttention: fa === "auto" ? "auto" : fa === "on",
});
const seq = context.getSequence();

const cpuSeconds = (c) => (c.user + c.system) / 1e6;

async function generate() {
    await seq.clearHistory();
    const ids = [];
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for await (const tok of seq.evaluate(prompts.generate, {temperature: 0})) {
        ids.push(tok);
        if (ids.length >= nTokens) break;
    }
    return {s: Number(process.hrtime.bigint() - t0) / 1e9, cpu: cpuSeconds(process.cpuUsage(c0)), ids};
}

async function prefill() {
    await seq.clearHistory();
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await seq.evaluateWithoutGeneratingNewTokens(prompts.prefill);
    return {s: Number(process.hrtime.bigint() - t0) / 1e9, cpu: cpuSeconds(process.cpuUsage(c0))};
}

const tag = `impl=llama.cpp file=${path.basename(modelPath)} threads=${context.currentThreads} kv=${kv} flash_attention=${context.flashAttention}`;
let last = null;
const gen = [], pre = [], genCpu = [], preCpu = [];
await generate();
await prefill();
for (let r = 0; r < rounds; r++) {
    last = await generate();
    gen.push(nTokens / last.s);
    genCpu.push(nTokens / last.cpu);
    const p = await prefill();
    pre.push(prompts.prefill.length / p.s);
    preCpu.push(prompts.prefill.length / p.cpu);
}
console.log(`RESULT what=generate ${tag} tokens=${last.ids.length} tokens_per_s=${median(gen).toFixed(2)} best=${Math.max(...gen).toFixed(2)} cpu_tokens_per_s=${median(genCpu).toFixed(2)}`);
console.log(`RESULT what=prefill ${tag} tokens=${prompts.prefill.length} tokens_per_s=${median(pre).toFixed(2)} best=${Math.max(...pre).toFixed(2)} cpu_tokens_per_s=${median(preCpu).toFixed(2)}`);
console.log(`IDS ${last.ids.join(",")}`);
await context.dispose();
await model.dispose();
await llama.dispose();
