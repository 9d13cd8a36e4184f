// loop.mjs runs 50-turn tool loops with one of the vendors' own clients,
// for gateway/e2e_test.go: node loop.mjs CONFIG.json, where CONFIG is
//   {"client": "chat" | "anthropic" | "agents-responses" | "agents-chat",
//    "runs": [{"label", "base", "control", "model", "stream", "turns"}]}
// base is where the client is pointed (the gateway, or the stand-in for the
// baseline), control the stand-in's script endpoints (/_turn, /_tool,
// /_tools). Each run's user turn n is the stand-in's task n; the model
// calls tools until its task is done. A turn whose request fails is a
// failed turn and the loop goes on as the client's own code would: chat and
// anthropic keep the history with the failed turn in it; the Agents SDK
// keeps the history of the runs that completed. One JSON line per run goes
// to standard output.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  Agent, run, tool, setTracingDisabled, OpenAIChatCompletionsModel, OpenAIResponsesModel,
} from '@openai/agents';

setTracingDisabled(true);

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));

async function get(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.text();
}

function brief(e) {
  return String(e?.status ?? '') + ' ' + String(e?.message ?? e).slice(0, 200);
}

async function chatLoop(r, meta, st) {
  const client = new OpenAI({ baseURL: r.base + '/v1', apiKey: 'sk-e2e-not-a-key', maxRetries: 0 });
  const tools = meta.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const messages = [{ role: 'system', content: meta.system }];
  for (let n = 1; n <= r.turns; n++) {
    messages.push({ role: 'user', content: await get(`${r.control}/_turn?n=${n}`) });
    try {
      for (let step = 0; ; step++) {
        if (step > 10) throw new Error('no final answer after 10 steps');
        let msg;
        if (r.stream) {
          const stream = await client.chat.completions.create({ model: r.model, messages, tools, stream: true, stream_options: { include_usage: true } });
          const calls = [];
          let content = '';
          for await (const chunk of stream) {
            const d = chunk.choices?.[0]?.delta;
            if (!d) continue;
            if (d.content) content += d.content;
            for (const tc of d.tool_calls ?? []) {
              const c = (calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
              if (tc.id) c.id = tc.id;
              if (tc.function?.name) c.function.name += tc.function.name;
              if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
            }
          }
          msg = calls.length ? { role: 'assistant', content: null, tool_calls: calls } : { role: 'assistant', content };
        } else {
          const resp = await client.chat.completions.create({ model: r.model, messages, tools });
          msg = resp.choices[0].message;
        }
        messages.push(msg);
        if (!msg.tool_calls?.length) break;
        for (const c of msg.tool_calls) {
          st.toolRuns++;
          messages.push({ role: 'tool', tool_call_id: c.id, content: await get(`${r.control}/_tool?id=${encodeURIComponent(c.id)}`) });
        }
      }
    } catch (e) {
      st.failed++;
      if (st.errors.length < 3) st.errors.push(`turn ${n}: ${brief(e)}`);
    }
  }
}

async function anthropicLoop(r, meta, st) {
  const client = new Anthropic({ baseURL: r.base, apiKey: 'sk-ant-e2e-not-a-key', maxRetries: 0 });
  const tools = meta.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const system = [{ type: 'text', text: meta.system }];
  const messages = [];
  for (let n = 1; n <= r.turns; n++) {
    messages.push({ role: 'user', content: await get(`${r.control}/_turn?n=${n}`) });
    try {
      for (let step = 0; ; step++) {
        if (step > 10) throw new Error('no final answer after 10 steps');
        const params = { model: r.model, max_tokens: 1024, system, messages, tools };
        const msg = r.stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
        messages.push({ role: 'assistant', content: msg.content });
        const uses = msg.content.filter((b) => b.type === 'tool_use');
        if (!uses.length) break;
        const results = [];
        for (const u of uses) {
          st.toolRuns++;
          results.push({ type: 'tool_result', tool_use_id: u.id, content: await get(`${r.control}/_tool?id=${encodeURIComponent(u.id)}`) });
        }
        messages.push({ role: 'user', content: results });
      }
    } catch (e) {
      st.failed++;
      if (st.errors.length < 3) st.errors.push(`turn ${n}: ${brief(e)}`);
    }
  }
}

async function agentsLoop(r, meta, st, api) {
  const client = new OpenAI({ baseURL: r.base + '/v1', apiKey: 'sk-e2e-not-a-key', maxRetries: 0 });
  const model = api === 'responses' ? new OpenAIResponsesModel(client, r.model) : new OpenAIChatCompletionsModel(client, r.model);
  const tools = meta.tools.map((t) => tool({
    name: t.name,
    description: t.description,
    parameters: { ...t.parameters, additionalProperties: true },
    strict: false,
    execute: async (args, _ctx, details) => {
      st.toolRuns++;
      const id = details?.toolCall?.callId ?? JSON.stringify(args);
      return get(`${r.control}/_tool?id=${encodeURIComponent(id)}`);
    },
  }));
  const agent = new Agent({ name: 'coder', instructions: meta.system, model, tools });
  let hist = [];
  for (let n = 1; n <= r.turns; n++) {
    const input = [...hist, { role: 'user', content: await get(`${r.control}/_turn?n=${n}`) }];
    const before = st.toolRuns;
    try {
      let res;
      if (r.stream) {
        res = await run(agent, input, { stream: true, maxTurns: 12 });
        for await (const _ of res.toStream()) { /* drain */ }
        await res.completed;
        if (res.error) throw res.error;
      } else {
        res = await run(agent, input, { maxTurns: 12 });
      }
      hist = res.history;
    } catch (e) {
      st.failed++;
      st.lostToolRuns += st.toolRuns - before;
      if (st.errors.length < 3) st.errors.push(`turn ${n}: ${brief(e)}`);
    }
  }
}

const metaCache = new Map();
for (const r of cfg.runs) {
  const st = { label: r.label, client: cfg.client, turns: r.turns, failed: 0, toolRuns: 0, lostToolRuns: 0, errors: [] };
  if (!metaCache.has(r.control)) metaCache.set(r.control, JSON.parse(await get(`${r.control}/_tools`)));
  const meta = metaCache.get(r.control);
  const started = Date.now();
  switch (cfg.client) {
    case 'chat': await chatLoop(r, meta, st); break;
    case 'anthropic': await anthropicLoop(r, meta, st); break;
    case 'agents-responses': await agentsLoop(r, meta, st, 'responses'); break;
    case 'agents-chat': await agentsLoop(r, meta, st, 'chat'); break;
    default: throw new Error(`unknown client ${cfg.client}`);
  }
  st.ms = Date.now() - started;
  process.stdout.write(JSON.stringify(st) + '\n');
}
