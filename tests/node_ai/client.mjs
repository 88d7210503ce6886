// The Vercel AI SDK against callgate proxy: streamText with one zod tool (get_weather) and
// stopWhen, at the base URL given, with no fetch wrapper: through @ai-sdk/openai-compatible
// (Chat Completions), or with "responses" as the fourth argument through the default
// @ai-sdk/openai provider, whose openai(model) speaks the Responses API ("responses-unstored":
// the same with store: false, so earlier turns go up whole instead of as item references),
// or with "anthropic" through @ai-sdk/anthropic (the Messages API).
// Prints one JSON line: the tool's executions, the steps' finish reasons, the final text,
// and every error part the stream carried.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const [baseURL, model, prompt, api] = process.argv.slice(2);
const apiKey = "sk-ai-loopback";
const provider =
  api === "anthropic"
    ? createAnthropic({ baseURL, apiKey })
    : api?.startsWith("responses")
      ? createOpenAI({ baseURL, apiKey })
      : createOpenAICompatible({ name: "callgate", baseURL, apiKey });
const executed = [];
const errors = [];
// An error part may carry an Error or the server's error object: keep its message.
const said = (error) => error?.message ?? (typeof error === "string" ? error : JSON.stringify(error));

const result = streamText({
  model: provider(model),
  prompt,
  maxRetries: 0,
  tools: {
    get_time: tool({
      description: "The time now.",
      inputSchema: z.object({}),
      execute: async (input) => {
        executed.push({ get_time: input });
        return { time: "12:00" };
      },
    }),
    get_weather: tool({
      description: "The weather in a city.",
      inputSchema: z.object({ city: z.string(), days: z.number().int().min(1).max(14).optional() }),
      execute: async (input) => {
        executed.push(input);
        return { city: input.city, sky: "clear" };
      },
    }),
  },
  stopWhen: stepCountIs(3),
  providerOptions: api === "responses-unstored" ? { openai: { store: false } } : {},
  onError: ({ error }) => errors.push(said(error)),
});

let text = "";
for await (const part of result.fullStream) {
  if (part.type === "text-delta") text += part.text;
  if (part.type === "error") errors.push(said(part.error));
}
const steps = await result.steps;
process.stdout.write(
  JSON.stringify({
    executed,
    text,
    finish_reasons: steps.map((step) => step.finishReason),
    errors,
  }) + "\n",
);
