/**
 * The evalconsole agent protocol (`evalconsole/1`): request and reply shapes,
 * request validation and scenario → message mapping. Runtime-agnostic.
 */
import type { ModelMessage } from 'ai';

export const PROTOCOL = 'evalconsole/1';

export type ScenarioRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ScenarioMessage {
  role: ScenarioRole;
  content: string;
}

export interface Scenario {
  name: string;
  input: string | undefined;
  messages: ScenarioMessage[];
  metadata: Record<string, unknown>;
}

/** A validated `evalconsole/1` request. */
export interface EvalconsoleRequest {
  protocol: typeof PROTOCOL;
  run: string;
  sample: string;
  attempt: number;
  scenario: Scenario;
}

export type ToolCallStatus = 'requested' | 'succeeded' | 'failed';

/** One entry of the reply's `toolCalls` list. */
export interface ToolCallRecord {
  name: string;
  status: ToolCallStatus;
  input?: unknown;
  output?: unknown;
  error?: string;
  node?: string;
}

/** The reply body. `toolCalls: []` means "captured, none ran"; omit it only when unknown. */
export interface EvalconsoleReply {
  output: string;
  toolCalls?: ToolCallRecord[];
  messages?: unknown[];
  trace?: unknown[];
}

/** A request body that is not a valid `evalconsole/1` request. */
export class ProtocolError extends Error {
  readonly field: string | undefined;

  constructor(message: string, field?: string) {
    super(message);
    this.name = 'ProtocolError';
    this.field = field;
  }
}

const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalId(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new ProtocolError(`${key} must be a string`, key);
}

/**
 * Validate a parsed JSON body as an `evalconsole/1` request.
 * Throws {@link ProtocolError} naming the offending field.
 */
export function parseEvalconsoleRequest(body: unknown): EvalconsoleRequest {
  if (!isPlainObject(body)) {
    throw new ProtocolError('request body must be a JSON object');
  }
  if (body.protocol !== undefined && body.protocol !== PROTOCOL) {
    throw new ProtocolError(`unsupported protocol ${JSON.stringify(body.protocol)}; expected "${PROTOCOL}"`, 'protocol');
  }
  const attemptRaw = body.attempt ?? 1;
  if (typeof attemptRaw !== 'number' || !Number.isInteger(attemptRaw) || attemptRaw < 1) {
    throw new ProtocolError('attempt must be a positive integer', 'attempt');
  }

  const raw = body.scenario;
  if (!isPlainObject(raw)) {
    throw new ProtocolError('scenario must be an object', 'scenario');
  }
  const name = raw.name ?? '';
  if (typeof name !== 'string') {
    throw new ProtocolError('scenario.name must be a string', 'scenario.name');
  }
  const input = raw.input ?? undefined;
  if (input !== undefined && typeof input !== 'string') {
    throw new ProtocolError('scenario.input must be a string', 'scenario.input');
  }
  const metadata = raw.metadata ?? {};
  if (!isPlainObject(metadata)) {
    throw new ProtocolError('scenario.metadata must be an object', 'scenario.metadata');
  }
  const rawMessages = raw.messages ?? [];
  if (!Array.isArray(rawMessages)) {
    throw new ProtocolError('scenario.messages must be a list', 'scenario.messages');
  }
  const messages: ScenarioMessage[] = rawMessages.map((m: unknown, i: number) => {
    const field = `scenario.messages[${i}]`;
    if (!isPlainObject(m)) throw new ProtocolError(`${field} must be an object`, field);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw new ProtocolError(`${field}.role must be one of system, user, assistant, tool`, `${field}.role`);
    }
    if (typeof m.content !== 'string') {
      throw new ProtocolError(`${field}.content must be a string`, `${field}.content`);
    }
    return { role: m.role as ScenarioRole, content: m.content };
  });
  if (messages.length === 0 && input === undefined) {
    throw new ProtocolError('scenario needs input or messages', 'scenario');
  }

  return {
    protocol: PROTOCOL,
    run: optionalId(body, 'run'),
    sample: optionalId(body, 'sample'),
    attempt: attemptRaw,
    scenario: { name, input, messages, metadata },
  };
}

/** Prefix of a scenario `tool` message sent to the model as a user message. */
export const TOOL_MESSAGE_PREFIX = 'Tool result:\n';

/**
 * The conversation to send to the model: the scenario's messages when it has any,
 * otherwise its input as a single user message. A scenario `tool` message carries plain text
 * without a tool call id, which AI SDK tool messages need, so it is sent as a user message
 * starting with {@link TOOL_MESSAGE_PREFIX} (the raw messages are in `ctx.scenario.messages`).
 */
export function scenarioToMessages(scenario: Pick<Scenario, 'input' | 'messages'>): ModelMessage[] {
  if (scenario.messages.length > 0) {
    return scenario.messages.map((m): ModelMessage =>
      m.role === 'tool'
        ? { role: 'user', content: TOOL_MESSAGE_PREFIX + m.content }
        : ({ role: m.role, content: m.content } as ModelMessage),
    );
  }
  return [{ role: 'user', content: scenario.input ?? '' }];
}
