// Drives a running gemmaserve with the official `openai` npm client: chat (whole and
// streamed), a tool call forced by tool_choice, structured output (response_format),
// thinking on and off, n choices, the legacy functions form, a wrong key, a stream
// cancelled midway, 8 concurrent streaming clients, and health afterwards.
// Usage: node openai_client.mjs PORT API_KEY
import OpenAI from "openai";
import assert from "node:assert/strict";

const [port, apiKey] = process.argv.slice(2);
const baseURL = `http://127.0.0.1:${port}/v1`;
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const messages = [{ role: "user", content: "ROMEO:" }];
let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

async function collectStream(stream) {
  const out = { content: "", reasoning: "", finish: null, usage: null, chunks: 0, roleFirst: false, tools: {} };
  let first = true;
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    if (!chunk.choices || chunk.choices.length === 0) continue;
    const c = chunk.choices[0];
    if (first) {
      out.roleFirst = c.delta && c.delta.role === "assistant";
      first = false;
    }
    if (c.delta && c.delta.content) out.content += c.delta.content;
    if (c.delta && c.delta.reasoning_content) out.reasoning += c.delta.reasoning_content;
    for (const tc of (c.delta && c.delta.tool_calls) || []) {
      const t = (out.tools[tc.index] ||= { name: "", args: "" });
      if (tc.function && tc.function.name) t.name += tc.function.name;
      if (tc.function && tc.function.arguments) t.args += tc.function.arguments;
    }
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

await check("models lists the served model", async () => {
  const models = await client.models.list();
  assert.ok(models.data.length >= 1);
  assert.equal(typeof models.data[0].id, "string");
});

await check("chat, whole response", async () => {
  const r = await client.chat.completions.create({ model: "shakes", messages, max_tokens: 24, temperature: 0 });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

await check("chat, streamed, with the usage chunk", async () => {
  const whole = await client.chat.completions.create({ model: "shakes", messages, max_tokens: 24, temperature: 0 });
  const stream = await client.chat.completions.create({
    model: "shakes", messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  const s = await collectStream(stream);
  assert.ok(s.roleFirst, "the first chunk carries the role");
  assert.ok(s.usage, "a usage chunk came");
  assert.equal(s.usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(s.content, whole.choices[0].message.content ?? "", "streamed text equals the whole response");
  assert.equal(s.finish, whole.choices[0].finish_reason);
});

await check("text completion recites Shakespeare", async () => {
  const r = await client.completions.create({ model: "shakes", prompt: "ROMEO:", max_tokens: 32, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.match(r.choices[0].text, /thou|thee|thy/i);
});

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];

await check("tool call forced by tool_choice", async () => {
  for (const stream of [false, true]) {
    const req = {
      model: "shakes", messages: [{ role: "user", content: "Weather in Verona?" }], tools, max_tokens: 24,
      temperature: 0, tool_choice: { type: "function", function: { name: "get_weather" } },
    };
    let calls;
    let finish;
    if (stream) {
      const s = await collectStream(await client.chat.completions.create({ ...req, stream: true }));
      calls = Object.values(s.tools).map((t) => ({ function: { name: t.name, arguments: t.args } }));
      finish = s.finish;
    } else {
      const r = await client.chat.completions.create(req);
      calls = r.choices[0].message.tool_calls || [];
      finish = r.choices[0].finish_reason;
    }
    assert.ok(calls.length >= 1, `a tool call came back (stream=${stream})`);
    assert.equal(calls[0].function.name, "get_weather");
    const args = JSON.parse(calls[0].function.arguments);
    assert.equal(typeof args, "object");
    assert.ok(["tool_calls", "length", "stop"].includes(finish));
  }
});

// Decision 0016: with several tools "required" leaves the name to the model, constrained to
// the declared ones, so even sampled at temperature 1 the call names one of them.
await check("tool_choice required with three tools names a declared one", async () => {
  const names = ["get_weather", "get_time", "lookup_stock"];
  const three = names.map((name) => ({
    type: "function",
    function: { name, parameters: { type: "object", properties: { city: { type: "string" } } } },
  }));
  for (const seed of [1, 2, 3]) {
    for (const stream of [false, true]) {
      const req = {
        model: "shakes", messages: [{ role: "user", content: "Weather, time and a stock in Verona?" }], tools: three,
        max_tokens: 16, temperature: 1, seed, tool_choice: "required",
      };
      let name;
      let content;
      if (stream) {
        const s = await collectStream(await client.chat.completions.create({ ...req, stream: true }));
        name = s.tools[0] && s.tools[0].name;
        content = s.content;
      } else {
        const r = await client.chat.completions.create(req);
        const calls = r.choices[0].message.tool_calls || [];
        name = calls.length > 0 ? calls[0].function.name : undefined;
        content = r.choices[0].message.content || "";
      }
      assert.ok(names.includes(name), `seed ${seed} stream=${stream}: name ${name}, content ${JSON.stringify(content)}`);
      assert.ok(!content.includes("call:"), `seed ${seed} stream=${stream}: forced markup in content`);
    }
  }
});

// Decision 0027: response_format json_schema constrains the content to the schema.
await check("response_format json_schema gives JSON that follows the schema", async () => {
  const schema = {
    type: "object",
    properties: { mood: { enum: ["glad", "sad"] }, name: { type: "string", maxLength: 8 } },
    required: ["mood", "name"],
    additionalProperties: false,
  };
  let whole = 0;
  for (const seed of [1, 2, 3]) {
    for (const stream of [false, true]) {
      const req = {
        model: "shakes", messages: [{ role: "user", content: "A character and their mood, as JSON." }],
        max_tokens: 80, temperature: 1, seed, reasoning_effort: "none",
        response_format: { type: "json_schema", json_schema: { name: "character", schema, strict: true } },
      };
      let content;
      let finish;
      if (stream) {
        const s = await collectStream(await client.chat.completions.create({ ...req, stream: true }));
        content = s.content;
        finish = s.finish;
      } else {
        const r = await client.chat.completions.create(req);
        content = r.choices[0].message.content || "";
        finish = r.choices[0].finish_reason;
      }
      // The value comes first (nothing before it); a cut one may be empty only if cut at once.
      assert.ok(content.startsWith("{") || (finish === "length" && content === ""),
        `seed ${seed} stream=${stream}: ${finish} ${JSON.stringify(content)}`);
      if (finish === "stop") {
        const v = JSON.parse(content);
        assert.ok(["glad", "sad"].includes(v.mood), `seed ${seed}: ${content}`);
        assert.equal(typeof v.name, "string");
        assert.deepEqual(Object.keys(v).sort(), ["mood", "name"]);
        whole++;
      } else {
        assert.equal(finish, "length");
      }
    }
  }
  assert.ok(whole > 0, "no answer finished its JSON");
});

await check("thinking on and off reach the prompt", async () => {
  const on = await client.chat.completions.create({
    model: "shakes", messages, max_tokens: 4, temperature: 0, chat_template_kwargs: { enable_thinking: true },
  });
  const off = await client.chat.completions.create({
    model: "shakes", messages, max_tokens: 4, temperature: 0, reasoning_effort: "none",
  });
  assert.notEqual(on.usage.prompt_tokens, off.usage.prompt_tokens, "the two prompts differ");
  assert.ok(!off.choices[0].message.reasoning_content, "no reasoning with thinking off");
  const c = off.choices[0].message.content || "";
  assert.ok(!c.includes("<|channel>") && !c.includes("<channel|>"), "no channel markup in content");
});

await check("a wrong key is refused with 401", async () => {
  const bad = new OpenAI({ baseURL, apiKey: "sk-wrong", maxRetries: 0 });
  await assert.rejects(
    bad.chat.completions.create({ model: "shakes", messages, max_tokens: 4 }),
    (e) => e.status === 401 && e.error && typeof e.error.message === "string",
  );
});

// Decision 0030: n choices, whole and streamed (each chunk names its choice), and the
// legacy functions form answered with message.function_call.
await check("n = 3 choices, whole and streamed", async () => {
  const req = { model: "shakes", messages, max_tokens: 8, temperature: 1, seed: 11, n: 3 };
  const r = await client.chat.completions.create(req);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.choices) assert.equal(typeof c.message.content, "string");
  const byIndex = {};
  const finishes = {};
  let usage = null;
  for await (const chunk of await client.chat.completions.create({
    ...req, stream: true, stream_options: { include_usage: true },
  })) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      byIndex[c.index] = (byIndex[c.index] || "") + (c.delta.content || "");
      if (c.finish_reason) finishes[c.index] = (finishes[c.index] || 0) + 1;
    }
  }
  assert.deepEqual(Object.keys(byIndex).sort(), ["0", "1", "2"]);
  assert.deepEqual(finishes, { 0: 1, 1: 1, 2: 1 });
  // The same seeds: the streamed choices are the whole ones.
  for (const c of r.choices) assert.equal(byIndex[c.index], c.message.content);
  assert.equal(usage.completion_tokens, r.usage.completion_tokens);
});

await check("legacy functions / function_call", async () => {
  const r = await client.chat.completions.create({
    model: "shakes", messages: [{ role: "user", content: "Weather in Verona?" }], max_tokens: 40, temperature: 0,
    functions: [tools[0].function], function_call: { name: tools[0].function.name },
  });
  const c = r.choices[0];
  assert.equal(c.message.tool_calls, undefined);
  assert.equal(c.message.function_call.name, tools[0].function.name);
  assert.equal(typeof JSON.parse(c.message.function_call.arguments), "object");
  assert.ok(["function_call", "length"].includes(c.finish_reason), c.finish_reason);
});

await check("a stream cancelled midway", async () => {
  const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`, {
    headers: { Authorization: `Bearer ${apiKey}` },
  })).text();
  const counter = (text, name) => Number(new RegExp(`^gemmaserve_${name} (\\d+)`, "m").exec(text)[1]);
  const before = counter(await metrics(), "requests_cancelled_total");
  const stream = await client.chat.completions.create({
    model: "shakes", messages, max_tokens: 2000, temperature: 0.8, stream: true,
  });
  let n = 0;
  for await (const chunk of stream) {
    if (++n === 5) {
      stream.controller.abort();
      break;
    }
  }
  assert.equal(n, 5);
  let cancelled = before;
  let busy = -1;
  for (let i = 0; i < 100 && (cancelled === before || busy !== 0); i++) {
    await new Promise((r) => setTimeout(r, 50));
    const m = await metrics();
    cancelled = counter(m, "requests_cancelled_total");
    busy = counter(m, "busy_slots");
  }
  assert.ok(cancelled > before, "the server cancelled the request");
  assert.equal(busy, 0, "its slot is free");
});

await check("8 concurrent streaming clients", async () => {
  const runs = [];
  for (let i = 0; i < 8; i++) {
    runs.push((async () => collectStream(await client.chat.completions.create({
      model: "shakes", messages: [{ role: "user", content: `KING HENRY ${i}:` }], max_tokens: 32,
      temperature: 0.7, seed: i, stream: true, stream_options: { include_usage: true },
    })))());
  }
  const results = await Promise.all(runs);
  for (const r of results) {
    assert.ok(r.roleFirst);
    assert.ok(r.usage && r.usage.completion_tokens > 0);
    assert.ok(["stop", "length"].includes(r.finish));
  }
});

await check("healthy afterwards, nothing left running", async () => {
  const h = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(h.status, 200);
  let busy = -1;
  for (let i = 0; i < 50 && busy !== 0; i++) {
    const m = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
    busy = Number(/^gemmaserve_busy_slots (\d+)/m.exec(m)[1]);
    if (busy !== 0) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(busy, 0, "every slot is free again");
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
