// Drives Delta's /v1/responses with the official OpenAI client: create,
// stream, continue. Exits non-zero with a message on the first mismatch.
// Usage: DELTA_URL=http://127.0.0.1:PORT DELTA_CONTROL_TOKEN=… node responses.mjs
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.DELTA_URL + "/v1",
  apiKey: process.env.DELTA_CONTROL_TOKEN || "unused",
  maxRetries: 0,
});

function check(cond, msg) {
  if (!cond) {
    console.error("FAIL: " + msg);
    process.exit(1);
  }
}

const first = await client.responses.create({ model: "delta", input: "Write a short brief about otters." });
check(first.id.startsWith("resp_"), "id starts with resp_: " + first.id);
check(first.status === "completed", "status completed: " + first.status);
check(typeof first.output_text === "string" && first.output_text.length > 0, "output_text present");
check(first.output[0].type === "message" && first.output[0].content[0].type === "output_text", "output message shape");
check(first.usage.total_tokens === first.usage.input_tokens + first.usage.output_tokens, "usage totals add up");

const stream = await client.responses.create({ model: "delta", input: "Write a brief about herons.", stream: true });
let deltas = "";
let completed = null;
for await (const ev of stream) {
  if (ev.type === "response.output_text.delta") deltas += ev.delta;
  if (ev.type === "response.completed") completed = ev.response;
}
check(deltas.length > 0, "stream delivered text deltas");
check(completed && completed.status === "completed", "stream ended with response.completed");
check(completed.output_text.length > 0, "completed response carries output_text");

const next = await client.responses.create({ model: "delta", input: "And now a second one.", previous_response_id: first.id });
check(next.status === "completed", "continuation completed");
check(next.previous_response_id === first.id, "continuation names its previous response");

let rejected = false;
try {
  await client.responses.create({ model: "delta", input: "x", previous_response_id: "resp_doesnotexist" });
} catch (e) {
  rejected = e.status === 400;
}
check(rejected, "unknown previous_response_id is a 400");

console.log(JSON.stringify({ ok: true, first: first.output_text, continued: next.output_text }));
