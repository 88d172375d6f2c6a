/**
 * `createEvalconsoleHandler`: a web-standard `(Request) => Promise<Response>` endpoint
 * (Next.js route handlers, Hono, Bun, Deno, Workers) speaking `evalconsole/1`.
 */
import { generateText, stepCountIs } from 'ai';
import type { ModelMessage } from 'ai';

import {
  parseEvalconsoleRequest,
  ProtocolError,
  scenarioToMessages,
  type EvalconsoleReply,
  type EvalconsoleRequest,
  type Scenario,
  type ToolCallRecord,
} from './protocol.js';
import { errorMessage, toJsonValue, toolCallsFromResult, type GenerateTextResultLike } from './tool-calls.js';

type GenerateTextParameters = Parameters<typeof generateText>[0];

/** Default step limit when neither `maxSteps` nor `stopWhen` is given. */
export const DEFAULT_MAX_STEPS = 10;

/** Default request-body limit (1 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Settings for the adapter to call `generateText` itself: the scenario's messages are sent
 * with these, tools run in a loop until `stopWhen` (default: {@link DEFAULT_MAX_STEPS} steps).
 */
export interface GenerateConfig {
  model: GenerateTextParameters['model'];
  tools?: GenerateTextParameters['tools'];
  /** System prompt. System messages in the scenario are sent too, after it. */
  system?: string;
  /** Shorthand for `stopWhen: stepCountIs(maxSteps)`. */
  maxSteps?: number;
  stopWhen?: GenerateTextParameters['stopWhen'];
  /** Any other `generateText` option (temperature, toolChoice, providerOptions, ...). */
  generateOptions?: Record<string, unknown>;
}

/** What the handler knows about the current call. */
export interface EvalconsoleContext {
  /** The run, sample and attempt ids sent by the console ('' when absent). */
  run: string;
  sample: string;
  attempt: number;
  scenario: Scenario;
  /** The validated request body. */
  body: EvalconsoleRequest;
  /** The incoming HTTP request. */
  request: Request;
  /** Aborted when the console disconnects; pass it to `generateText`. */
  abortSignal: AbortSignal;
}

/**
 * What a `run` function may return: the result of `generateText()` / `agent.generate()`,
 * a finished reply, or a {@link GenerateConfig} for the adapter to run.
 */
export type RunResult = GenerateTextResultLike | EvalconsoleReply | GenerateConfig;

export type RunFunction = (messages: ModelMessage[], ctx: EvalconsoleContext) => RunResult | PromiseLike<RunResult>;

/** An AI SDK `Agent` (e.g. `ToolLoopAgent`): anything with `generate({ messages })`. */
export interface AgentLike {
  generate(options: { messages: ModelMessage[]; abortSignal?: AbortSignal }): PromiseLike<GenerateTextResultLike>;
}

export interface CommonOptions {
  /** Require `Authorization: Bearer <secret>`; requests without it get 401. */
  secret?: string;
  /** Largest accepted request body in bytes (default 1 MiB); larger ones get 413. */
  maxBodyBytes?: number;
  /** Called when the agent throws (the reply is a 500 with the message). Default: console.error. */
  onError?: (error: unknown, ctx: EvalconsoleContext) => void;
}

export type EvalconsoleHandlerOptions = CommonOptions &
  ({ run: RunFunction } | { agent: AgentLike } | GenerateConfig);

export type EvalconsoleHandler = (request: Request) => Promise<Response>;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  });
}

const encoder = new TextEncoder();

/** Compare in time independent of where the strings differ. */
function safeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ (y[i % Math.max(y.length, 1)] ?? 0);
  return diff === 0;
}

function authorized(request: Request, secret: string): boolean {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer[ \t]+(.+)$/i.exec(header.trim());
  return match !== null && safeEqual(match[1]!, secret);
}

class BodyTooLarge extends Error {}

async function readBody(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge();
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

function isGenerateResult(value: unknown): value is GenerateTextResultLike {
  return typeof value === 'object' && value !== null && Array.isArray((value as { steps?: unknown }).steps);
}

function isGenerateConfig(value: unknown): value is GenerateConfig {
  return typeof value === 'object' && value !== null && 'model' in value && value.model !== undefined;
}

function isReply(value: unknown): value is EvalconsoleReply {
  return typeof value === 'object' && value !== null && typeof (value as { output?: unknown }).output === 'string';
}

/** Run `generateText` with a {@link GenerateConfig} over the given messages. */
export async function runGenerateConfig(
  config: GenerateConfig,
  messages: ModelMessage[],
  abortSignal?: AbortSignal,
): Promise<GenerateTextResultLike> {
  const { model, tools, system, maxSteps, stopWhen, generateOptions } = config;
  if (maxSteps !== undefined && (!Number.isInteger(maxSteps) || maxSteps < 1)) {
    throw new TypeError('maxSteps must be a positive integer');
  }
  const options = {
    ...generateOptions,
    model,
    ...(tools !== undefined ? { tools } : {}),
    ...(system !== undefined ? { system } : {}),
    messages,
    // Scenario system messages are part of the conversation under test.
    allowSystemInMessages: true,
    stopWhen: stopWhen ?? stepCountIs(maxSteps ?? DEFAULT_MAX_STEPS),
    ...(abortSignal !== undefined ? { abortSignal } : {}),
  } as GenerateTextParameters;
  return generateText(options);
}

/** The reply for a generation result: final text plus every tool call of every step. */
export function replyFromResult(result: GenerateTextResultLike): EvalconsoleReply {
  return { output: typeof result.text === 'string' ? result.text : '', toolCalls: toolCallsFromResult(result) };
}

function normalizeReply(reply: EvalconsoleReply): EvalconsoleReply {
  const out: EvalconsoleReply = { output: reply.output };
  if (reply.toolCalls !== undefined) {
    out.toolCalls = reply.toolCalls.map((c): ToolCallRecord => {
      const call: ToolCallRecord = { name: c.name, status: c.status };
      if (c.input !== undefined) call.input = toJsonValue(c.input);
      if (c.output !== undefined) call.output = toJsonValue(c.output);
      if (c.error !== undefined) call.error = c.error;
      if (c.node !== undefined) call.node = c.node;
      return call;
    });
  }
  if (reply.messages !== undefined) out.messages = toJsonValue(reply.messages) as unknown[];
  if (reply.trace !== undefined) out.trace = toJsonValue(reply.trace) as unknown[];
  return out;
}

/**
 * Create an `evalconsole/1` endpoint for an AI SDK agent.
 *
 * - `{ agent }` — an AI SDK `Agent` such as `ToolLoopAgent`; called with the scenario's messages.
 * - `{ model, tools, system, maxSteps | stopWhen }` — the adapter calls `generateText` for you.
 * - `{ run: (messages, ctx) => ... }` — your own code; return the `generateText()` result (or a
 *   config as above, or a finished `{ output, toolCalls }` reply).
 *
 * The reply is `{ output, toolCalls }` with every tool call of every step (`[]` when none ran).
 * Errors: 405 (not POST), 401 (secret set and bearer missing/wrong), 413 (body too large),
 * 400 (not an `evalconsole/1` request), 500 (the agent threw) — all JSON `{ "error": "..." }`.
 */
export function createEvalconsoleHandler(options: EvalconsoleHandlerOptions): EvalconsoleHandler {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('createEvalconsoleHandler needs { run }, { agent } or { model, tools }');
  }
  const { secret, maxBodyBytes = DEFAULT_MAX_BODY_BYTES, onError } = options;
  if (secret !== undefined && (typeof secret !== 'string' || secret.length === 0)) {
    throw new TypeError('secret must be a non-empty string (omit it to disable the check)');
  }

  let execute: (messages: ModelMessage[], ctx: EvalconsoleContext) => Promise<RunResult>;
  if ('run' in options && typeof options.run === 'function') {
    const run = options.run;
    execute = async (messages, ctx) => run(messages, ctx);
  } else if ('agent' in options && options.agent !== undefined) {
    const agent = options.agent;
    if (typeof agent.generate !== 'function') throw new TypeError('agent must have a generate() method');
    execute = async (messages, ctx) => agent.generate({ messages, abortSignal: ctx.abortSignal });
  } else if (isGenerateConfig(options)) {
    const config = options;
    execute = async (messages, ctx) => runGenerateConfig(config, messages, ctx.abortSignal);
  } else {
    throw new TypeError('createEvalconsoleHandler needs { run }, { agent } or { model, tools }');
  }

  const report = onError ?? ((error: unknown) => console.error('[evalconsole] agent failed:', error));

  return async function evalconsoleHandler(request: Request): Promise<Response> {
    if (request.method !== 'POST') {
      return json(405, { error: 'method not allowed; POST an evalconsole/1 request' }, { allow: 'POST' });
    }
    if (secret !== undefined && !authorized(request, secret)) {
      return json(401, { error: 'missing or invalid bearer token' }, { 'www-authenticate': 'Bearer' });
    }

    let body: EvalconsoleRequest;
    try {
      const text = await readBody(request, maxBodyBytes);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return json(400, { error: 'request body is not valid JSON' });
      }
      body = parseEvalconsoleRequest(parsed);
    } catch (error) {
      if (error instanceof BodyTooLarge) return json(413, { error: `request body exceeds ${maxBodyBytes} bytes` });
      if (error instanceof ProtocolError) {
        return json(400, { error: error.message, ...(error.field ? { field: error.field } : {}) });
      }
      return json(400, { error: `could not read request body: ${errorMessage(error)}` });
    }

    const ctx: EvalconsoleContext = {
      run: body.run,
      sample: body.sample,
      attempt: body.attempt,
      scenario: body.scenario,
      body,
      request,
      abortSignal: request.signal,
    };
    const messages = scenarioToMessages(body.scenario);

    let reply: EvalconsoleReply;
    try {
      let result = await execute(messages, ctx);
      if (!isGenerateResult(result) && !isReply(result) && isGenerateConfig(result)) {
        result = await runGenerateConfig(result, messages, ctx.abortSignal);
      }
      if (isGenerateResult(result)) {
        reply = replyFromResult(result);
      } else if (isReply(result)) {
        reply = normalizeReply(result);
      } else {
        throw new TypeError(
          'run() must return a generateText()/agent.generate() result, a { model, tools } config or { output, toolCalls }',
        );
      }
    } catch (error) {
      try {
        report(error, ctx);
      } catch {
        // a failing logger must not change the reply
      }
      return json(500, { error: `agent failed: ${errorMessage(error)}` });
    }
    return json(200, reply);
  };
}
