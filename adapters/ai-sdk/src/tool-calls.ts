/**
 * Turn the steps of an AI SDK generation into evalconsole tool-call evidence.
 */
import type { ToolCallRecord } from './protocol.js';

/** Any content part of a step; only the tool parts are read. */
export interface ContentPartLike {
  readonly type: string;
}

/** One step of a generation (`StepResult` from `ai`). */
export interface StepLike {
  readonly content: ReadonlyArray<ContentPartLike>;
}

/**
 * The part of `GenerateTextResult` (what `generateText()` and `agent.generate()` resolve to)
 * that the adapter reads.
 */
export interface GenerateTextResultLike {
  readonly text: string;
  readonly steps: ReadonlyArray<StepLike>;
}

interface ToolPart {
  type: string;
  toolCallId?: unknown;
  toolName?: unknown;
  input?: unknown;
  output?: unknown;
  error?: unknown;
  preliminary?: unknown;
}

/** A readable message for a thrown value. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  if (error === undefined || error === null) return 'unknown error';
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** A JSON-safe copy of a value (bigint → string, functions dropped, cycles → text). */
export function toJsonValue(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    return text === undefined ? null : (JSON.parse(text) as unknown);
  } catch {
    return String(value);
  }
}

/**
 * Every tool call of every step, in call order, with its input and what happened:
 * `succeeded` with the output, `failed` with the error message (the tool threw, the input was
 * invalid, or execution was denied), or `requested` when no result is available (a tool without
 * `execute`, or one waiting for approval). `[]` when no tool was called.
 */
export function toolCallsFromSteps(steps: ReadonlyArray<StepLike>): ToolCallRecord[] {
  const records: ToolCallRecord[] = [];
  const byId = new Map<string, ToolCallRecord>();

  const recordFor = (part: ToolPart): ToolCallRecord => {
    const id = typeof part.toolCallId === 'string' ? part.toolCallId : undefined;
    const existing = id === undefined ? undefined : byId.get(id);
    if (existing) return existing;
    // A result without a call in these steps (e.g. a deferred provider-executed tool).
    const record: ToolCallRecord = {
      name: String(part.toolName ?? ''),
      status: 'requested',
      input: toJsonValue(part.input),
    };
    records.push(record);
    if (id !== undefined) byId.set(id, record);
    return record;
  };

  for (const step of steps) {
    for (const raw of step.content) {
      const part = raw as ToolPart;
      switch (part.type) {
        case 'tool-call':
          recordFor(part);
          break;
        case 'tool-result': {
          if (part.preliminary === true) break;
          const record = recordFor(part);
          record.status = 'succeeded';
          record.output = toJsonValue(part.output);
          delete record.error;
          break;
        }
        case 'tool-error': {
          const record = recordFor(part);
          record.status = 'failed';
          record.error = errorMessage(part.error);
          delete record.output;
          break;
        }
        case 'tool-approval-response': {
          // An automatic denial: the tool never ran.
          const approval = raw as { approved?: unknown; reason?: unknown; toolCall?: ToolPart };
          if (approval.approved !== false || approval.toolCall === undefined) break;
          const record = recordFor(approval.toolCall);
          record.status = 'failed';
          record.error = typeof approval.reason === 'string' && approval.reason ? `denied: ${approval.reason}` : 'denied';
          break;
        }
        case 'tool-output-denied': {
          const record = recordFor(part);
          record.status = 'failed';
          record.error = 'denied';
          break;
        }
        default:
          break;
      }
    }
  }
  return records;
}

/** `toolCallsFromSteps` for a whole generation result. */
export function toolCallsFromResult(result: GenerateTextResultLike): ToolCallRecord[] {
  return toolCallsFromSteps(result.steps);
}
