// Drives a running gemmaserve's POST /v1/responses with the official `openai` npm client
// (client.responses.create, whole and streamed, and client.responses.stream's accumulated
// final response), a forced function call and its round trip, and the stateless refusals.
// Usage: node openai_responses.mjs PORT API_KEY
import OpenAI from "openai";
import assert from "node:assert/strict";

const [port, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });
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

const weatherTool = {
  type: "function", name: "get_weather", description: "Weather of a city", strict: true,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const base = { model: "shakes", input: "ROMEO:", instructions: "Speak as Romeo.", max_output_tokens: 24,
               temperature: 0, reasoning: { effort: "none" } };

let whole;
await check("responses.create, whole", async () => {
  whole = await client.responses.create(base);
  assert.equal(whole.object, "response");
  assert.ok(whole.id.startsWith("resp_"));
  assert.ok(["completed", "incomplete"].includes(whole.status));
  assert.ok(whole.output_text.length > 0);
  assert.equal(whole.output[0].type, "message");
  assert.equal(whole.output[0].content[0].type, "output_text");
  assert.ok(whole.usage.input_tokens > 0 && whole.usage.output_tokens > 0);
  assert.equal(whole.usage.total_tokens, whole.usage.input_tokens + whole.usage.output_tokens);
  if (whole.status === "incomplete") assert.equal(whole.incomplete_details.reason, "max_output_tokens");
});

await check("responses.create, streamed: events in order, same text as whole (greedy)", async () => {
  const stream = await client.responses.create({ ...base, stream: true });
  const types = [];
  let text = "";
  let final = null;
  let seq = 0;
  for await (const ev of stream) {
    assert.equal(ev.sequence_number, seq++);
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
  }
  assert.equal(types[0], "response.created");
  assert.equal(types[1], "response.in_progress");
  assert.ok(types.includes("response.output_item.added"));
  assert.ok(types.includes("response.output_text.done"));
  assert.ok(final);
  assert.equal(text, whole.output_text);
  assert.equal(final.output_text, whole.output_text);
});

await check("responses.stream accumulates the final response", async () => {
  const stream = client.responses.stream(base);
  let deltas = "";
  stream.on("response.output_text.delta", (ev) => { deltas += ev.delta; });
  const final = await stream.finalResponse();
  assert.equal(deltas, whole.output_text);
  // This SDK version fills output_text of a streamed response only from response.completed
  // (an incomplete one is its accumulated snapshot): read the message item.
  assert.equal(final.output[0].content[0].text, whole.output_text);
});

await check("forced function call, then its output as input items", async () => {
  const r = await client.responses.create({
    ...base, tools: [weatherTool], tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 40,
  });
  const call = r.output.find((o) => o.type === "function_call");
  assert.ok(call, JSON.stringify(r.output));
  assert.equal(call.name, "get_weather");
  const args = JSON.parse(call.arguments);
  assert.equal(typeof args, "object");
  assert.equal(r.output_text, "");
  const next = await client.responses.create({
    ...base, tools: [weatherTool],
    input: [{ role: "user", content: "Weather?" }, call, { type: "function_call_output", call_id: call.call_id, output: "rain" }],
  });
  assert.ok(next.output_text.length > 0);
});

await check("streamed forced call: argument deltas, no text", async () => {
  const stream = await client.responses.create({
    ...base, tools: [weatherTool], tool_choice: "required", max_output_tokens: 40, stream: true,
  });
  let args = "";
  let text = "";
  let done = null;
  for await (const ev of stream) {
    if (ev.type === "response.function_call_arguments.delta") args += ev.delta;
    if (ev.type === "response.function_call_arguments.done") done = ev.arguments;
    if (ev.type === "response.output_text.delta") text += ev.delta;
  }
  assert.equal(text, "");
  assert.equal(done, args);
  JSON.parse(args);
});

await check("previous_response_id and retrieve: responses are not stored", async () => {
  await assert.rejects(client.responses.create({ ...base, previous_response_id: whole.id }),
    (e) => e.status === 400 && /not stored/.test(e.message));
  await assert.rejects(client.responses.retrieve(whole.id), (e) => e.status === 404);
});

await check("a web_search tool is refused by name", async () => {
  await assert.rejects(client.responses.create({ ...base, tools: [{ type: "web_search_preview" }] }),
    (e) => e.status === 400 && /web_search_preview/.test(e.message));
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
