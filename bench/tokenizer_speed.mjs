// cl100k_base counting speed: repoctx's tokenizer (`repoctx count-tokens --bench`) against tiktoken's own
// implementation (its Rust core as WebAssembly, the pinned npm package) on the same files, each in memory,
// best of N passes, measured in the same run.
//
//   node bench/tokenizer_speed.mjs --repoctx build/bin/repoctx --tiktoken ~/.cache/repoctx/src/tiktoken-1.0.22 \
//        [--dir /usr/lib/python3.11] [--passes 5]
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const dir = args.dir || "/usr/lib/python3.11";
const passes = Number(args.passes || 5);
const files = fs.readdirSync(dir).filter((f) => f.endsWith(".py")).sort().map((f) => path.join(dir, f))
  .filter((f) => { try { new TextDecoder("utf-8", { fatal: true }).decode(fs.readFileSync(f)); return true; } catch { return false; } });
const texts = files.map((f) => fs.readFileSync(f, "utf8"));
const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);

const { get_encoding } = createRequire(import.meta.url)(path.join(args.tiktoken, "tiktoken.cjs"));
const enc = get_encoding("cl100k_base");
let best = Infinity, tokens = 0;
for (let p = 0; p < passes; ++p) {
  const t0 = process.hrtime.bigint();
  tokens = 0;
  for (const t of texts) tokens += enc.encode_ordinary(t).length;
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
}
enc.free();
const ours = JSON.parse(execFileSync(args.repoctx, ["count-tokens", "--bench", String(passes), ...files]).toString());
const row = (name, s, n) => `| ${name} | ${files.length} | ${(bytes / 1e6).toFixed(2)} | ${n} | ${s.toFixed(3)} | ${(bytes / 1e6 / s).toFixed(1)} |`;
console.log("| tokenizer | files | MB | tokens | best s | MB/s |\n|---|---|---|---|---|---|");
console.log(row("tiktoken 1.0.22 (WebAssembly, encode_ordinary)", best, tokens));
console.log(row("repoctx cl100k", ours.best_seconds, ours.tokens));
console.log(`\nratio repoctx / tiktoken: ${(best / ours.best_seconds).toFixed(2)}x; tokens equal: ${ours.tokens === tokens}`);
