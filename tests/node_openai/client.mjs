// The official openai npm package against callgate proxy: each request of a JSON list
// (read from stdin) is streamed twice, with create({stream: true}) and with the
// .stream() helper, and what the client rebuilt (or the error it threw) is printed as one
// JSON line per request.
import OpenAI from "openai";

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "sk-node-loopback", maxRetries: 0 });

async function readStdin() {
  let text = "";
  for await (const piece of process.stdin) text += piece;
  return JSON.parse(text);
}

async function streamed(request) {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let content = "";
  let finish = null;
  const calls = new Map();
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      content += choice.delta.content ?? "";
      for (const entry of choice.delta.tool_calls ?? []) {
        const call = calls.get(entry.index) ?? { id: null, name: "", arguments: "" };
        call.id = entry.id ?? call.id;
        call.name += entry.function?.name ?? "";
        call.arguments += entry.function?.arguments ?? "";
        calls.set(entry.index, call);
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  const ordered = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
  return { content, calls: ordered.map((c) => [c.name, c.arguments]), finish_reason: finish };
}

async function helper(request) {
  const runner = client.chat.completions.stream(request);
  for await (const _ of runner) {
    // the helper accumulates the message itself
  }
  const completion = await runner.finalChatCompletion();
  const choice = completion.choices[0];
  const calls = (choice.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]);
  return { content: choice.message.content ?? "", calls, finish_reason: choice.finish_reason };
}

for (const request of await readStdin()) {
  const out = {};
  try {
    out.streamed = await streamed(request);
  } catch (error) {
    out.streamed = { error: String(error) };
  }
  try {
    out.helper = await helper(request);
  } catch (error) {
    out.helper = { error: String(error) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
