import { MockLanguageModelV4 } from 'ai/test';

type MockSettings = NonNullable<ConstructorParameters<typeof MockLanguageModelV4>[0]>;
export type GenerateResult = Extract<NonNullable<MockSettings['doGenerate']>, unknown[]>[number];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model turn that calls tools. */
export function callsTools(...calls: Array<{ id: string; name: string; input: unknown }>): GenerateResult {
  return {
    content: calls.map((c) => ({
      type: 'tool-call' as const,
      toolCallId: c.id,
      toolName: c.name,
      input: JSON.stringify(c.input),
    })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

/** A model turn that answers with text. */
export function says(text: string): GenerateResult {
  return {
    content: [{ type: 'text' as const, text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}

/** A mock model that plays the given turns in order. */
export function scriptedModel(...turns: GenerateResult[]): MockLanguageModelV4 {
  return new MockLanguageModelV4({ doGenerate: turns });
}

export function evalRequest(overrides: Record<string, unknown> = {}, scenario: Record<string, unknown> = {}) {
  return {
    protocol: 'evalconsole/1',
    run: 'run-1',
    sample: 'sample-1',
    attempt: 1,
    scenario: {
      name: 'order status',
      input: 'Where is order EC-1042?',
      messages: [{ role: 'user', content: 'Where is order EC-1042?' }],
      metadata: {},
      ...scenario,
    },
    ...overrides,
  };
}

export function post(body: unknown, headers: Record<string, string> = {}): Request {
  return new Request('http://agent.test/evalconsole', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function readJson(response: Response): Promise<any> {
  assertJson(response);
  return response.json();
}

function assertJson(response: Response): void {
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('application/json')) throw new Error(`expected JSON, got ${type}`);
}

/** The reported call of lookup_order that found EC-1042 shipped (the tests' order tool and the example's). */
export const SHIPPED_LOOKUP = {
  name: 'lookup_order',
  status: 'succeeded',
  input: { orderId: 'EC-1042' },
  output: { found: true, orderId: 'EC-1042', status: 'shipped' },
};

/** The reported call of lookup_order for the unknown order EC-9999, which threw. */
export const UNKNOWN_ORDER_LOOKUP = {
  name: 'lookup_order',
  status: 'failed',
  input: { orderId: 'EC-9999' },
  error: 'order EC-9999 not found',
};

/** Silence the default error log in tests that make the agent fail. */
export const quiet = { onError: () => undefined };
