// llama_probs.mjs — llama.cpp's greedy path with its probabilities, for
// comparing greedy ids near ties (q4km_rounding.py --llama): the generation
// prompt of prompts.json, then N greedy tokens, printing per step the
// chosen id and the top K (id, probability) pairs of llama.cpp's
// distribution (node-llama-cpp's evaluateWithMetadata, temperature 0).
//
//   node llama_probs.mjs MODEL.gguf --prompts prompts.json [--tokens 64]
//        [--top 5] [--kv F32] [--flash-attention off] [--threads 1]
//        [--teacher PROBS.jsonl]
//
// --teacher: teacher-forced on the ids of an earlier output instead of
// greedy: step k evaluates the prompt + those ids' first k afresh (the
// history cleared) and prints the distribution after it; "id" is then
// the teacher's id.
//
// Prints one JSON object a line: {"step": k, "id": i, "top": [[id, p], ...]}.
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

function arg(name, dflt) {
    const i = process.argv.indexOf("--" + name);
    return i > 0 ? process.argv[i + 1] : dflt;
}
const modelPath = process.argv[2];
const threads = Number(arg("threads", "1"));
const prompts = JSON.parse(fs.readFileSync(arg("prompts"), "utf8"));
const nTokens = Number(arg("tokens", "64"));
const top = Number(arg("top", "5"));
const kv = arg("kv", "F32");
const fa = arg("flash-attention", "off");

const llama = await getLlama({gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
    contextSize: 512, batchSize: 512, sequences: 1, threads: {ideal: threads, min: threads},
    experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv,
    flashAttention: fa === "auto" ? "auto" : fa === "on",
});
const seq = context.getSequence();
const teacher = arg("teacher", "");
if (teacher) {
    const ids = fs.readFileSync(teacher, "utf8").trim().split("\n").map((l) => JSON.parse(l).id);
    for (let step = 0; step < Math.min(nTokens, ids.length); step++) {
        await seq.clearHistory();
        const input = prompts.generate.concat(ids.slice(0, step));
        for await (const out of seq.evaluateWithMetadata(input, {probabilities: true}, {temperature: 0})) {
            const t = [];
            for (const [id, p] of out.probabilities) {
                t.push([id, p]);
                if (t.length >= top) break;
            }
            console.log(JSON.stringify({step, id: ids[step], top: t}));
            break;
        }
    }
}
if (!teacher) {
    let step = 0;
    for await (const out of seq.evaluateWithMetadata(prompts.generate, {probabilities: true}, {temperature: 0})) {
        const t = [];
        for (const [id, p] of out.probabilities) {
            t.push([id, p]);
            if (t.length >= top) break;
        }
        console.log(JSON.stringify({step, id: out.token, top: t}));
        if (++step >= nTokens) break;
    }
}
await context.dispose();
await model.dispose();
await llama.dispose();
