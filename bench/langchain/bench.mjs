// Times trimMessages of @langchain/core on the inputs exported by
// `go run ./cmd/compare -export DIR` (one history.Message per line in
// DIR/<size>.jsonl, the budget in DIR/<size>.budget) and checks its output.
// Run through run.sh, which installs @langchain/core into a temporary folder.
//
// The token counter mirrors the Go side's runes/4 counter (content runes
// plus "function" + id + name + arguments of each tool call, divided by 4,
// at least 1 for a non-empty message). Per-message counts are computed once,
// up front, and looked up by message id, so what is timed is trimMessages
// itself, not the counting.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  AIMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  trimMessages,
} from "@langchain/core/messages";

const dir = process.argv[2];
const maxSeconds = Number(process.argv[3] ?? "60"); // total time cap
const require = (await import("node:module")).createRequire(join(process.cwd(), "x.js"));
const version = require("@langchain/core/package.json").version;

function runes(s) {
  if (!s) return 0;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++; // skip the low half of surrogate pairs
  }
  return n;
}

function count(m) {
  let n = runes(m.content);
  for (const c of m.tool_calls ?? []) n += 8 + runes(c.id) + runes(c.name) + runes(c.arguments);
  let t = Math.floor(n / 4);
  if (t < 1 && (m.content || (m.tool_calls ?? []).length)) t = 1;
  return t;
}

function parseArgs(s) {
  try {
    const v = JSON.parse(s || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return { raw: s };
  }
}

function load(size) {
  const lines = readFileSync(join(dir, `${size}.jsonl`), "utf8").split("\n").filter(Boolean);
  const counts = [];
  const msgs = lines.map((line, i) => {
    const m = JSON.parse(line);
    counts.push(count(m));
    const id = String(i);
    switch (m.role) {
      case "system":
        return new SystemMessage({ content: m.content ?? "", id });
      case "user":
        return new HumanMessage({ content: m.content ?? "", id });
      case "assistant":
        return new AIMessage({
          content: m.content ?? "",
          id,
          tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: parseArgs(c.arguments), type: "tool_call" })),
        });
      case "tool":
        return new ToolMessage({ content: m.content ?? "", tool_call_id: m.tool_call_id, id });
      default:
        throw new Error(`unknown role ${m.role}`);
    }
  });
  const budget = Number(readFileSync(join(dir, `${size}.budget`), "utf8").trim());
  return { msgs, counts, budget };
}

// Orphans in the output: tool messages whose call is not in the nearest
// preceding AI message, and calls with no result.
function orphans(out) {
  let n = 0;
  for (let i = 0; i < out.length; i++) {
    const m = out[i];
    if (m.getType() === "tool") {
      let j = i - 1;
      while (j >= 0 && out[j].getType() === "tool") j--;
      const calls = j >= 0 && out[j].getType() === "ai" ? out[j].tool_calls ?? [] : [];
      if (!calls.some((c) => c.id === m.tool_call_id)) n++;
    } else if (m.getType() === "ai") {
      const answered = new Set();
      for (let k = i + 1; k < out.length && out[k].getType() === "tool"; k++) answered.add(out[k].tool_call_id);
      for (const c of m.tool_calls ?? []) if (!answered.has(c.id)) n++;
    }
  }
  return n;
}

const sizes = readdirSync(dir)
  .filter((f) => f.endsWith(".jsonl"))
  .map((f) => Number(f.slice(0, -6)))
  .sort((a, b) => a - b);

console.log(`@langchain/core ${version}, node ${process.version}; trimMessages(strategy "last", includeSystem, startOn "human"), budget = half the input's tokens\n`);
console.log("| messages | CPU ms/op | wall ms/op | runs | counter calls/op | output messages | output tokens | fits | orphan tool messages/calls |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---|---:|");
const start = performance.now();
let last = null;
for (const size of sizes) {
  const elapsed = (performance.now() - start) / 1000;
  if (last) {
    const estimate = (last.ms / 1000) * (size / last.size) ** 2; // quadratic
    if (elapsed + estimate > maxSeconds) {
      console.log(`| ${size} | skipped: estimated ${estimate.toFixed(0)} s for one run (quadratic) | | | | | | | |`);
      continue;
    }
  }
  const { msgs, counts, budget } = load(size);
  let calls = 0;
  const tokenCounter = (list) => {
    calls++;
    let t = 0;
    for (const m of list) t += counts[Number(m.id)];
    return t;
  };
  const opts = { maxTokens: budget, strategy: "last", tokenCounter, includeSystem: true, startOn: "human" };
  let out;
  let runs = 0;
  // CPU time (user + system of this process) is reported next to wall
  // time: on a shared, noisy machine it is the steadier of the two.
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  do {
    out = await trimMessages(msgs, opts);
    runs++;
  } while (performance.now() - t0 < 1000 && runs < 50);
  const wall = (performance.now() - t0) / runs;
  const c = process.cpuUsage(c0);
  const ms = (c.user + c.system) / 1000 / runs;
  const tokens = out.reduce((s, m) => s + counts[Number(m.id)], 0);
  console.log(`| ${size} | ${ms.toFixed(1)} | ${wall.toFixed(1)} | ${runs} | ${Math.round(calls / runs)} | ${out.length} | ${tokens} | ${tokens <= budget} | ${orphans(out)} |`);
  last = { size, ms };
}
