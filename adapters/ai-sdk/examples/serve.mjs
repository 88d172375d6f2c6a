#!/usr/bin/env node
// A small AI SDK order-desk agent served as an evalconsole/1 endpoint.
//
// The model is the AI SDK's mock language model with a deterministic script, so the agent
// needs no API key: when the latest user message holds an order id like EC-1042 it calls the
// `lookup_order` tool and answers with the order's status; otherwise it answers without tools.
// Known orders: EC-1042 (shipped), EC-1043 (processing), EC-2001 (delivered); any other id makes
// the tool throw ("order EC-9999 not found"), which is reported as a failed tool call.
//
// Usage (after `npm ci && npm run build` in adapters/ai-sdk):
//   node examples/serve.mjs [--port 8787] [--host 127.0.0.1] [--secret S]
//   PORT=0 node examples/serve.mjs        # any free port; the chosen one is printed
// Prints exactly one line "listening on http://HOST:PORT" on stdout once it accepts requests.
// Stops cleanly (exit code 0) on SIGTERM or SIGINT. The secret may also come from
// EVALCONSOLE_SECRET; when set, requests need "Authorization: Bearer <secret>".

import http from 'node:http';
import { parseArgs } from 'node:util';

import { ToolLoopAgent, stepCountIs, tool } from 'ai';
import * as aiTest from 'ai/test';
import { z } from 'zod';

import { createEvalconsoleHandler, toNodeHandler } from '@evalconsole/ai-sdk';

const ORDERS = {
  'EC-1042': 'shipped',
  'EC-1043': 'processing',
  'EC-2001': 'delivered',
};
const ORDER_ID = /\bEC-\d+\b/i;

const lookupOrder = tool({
  description: 'Look up an order by its id (like EC-1042) and return its status.',
  inputSchema: z.object({ orderId: z.string().describe('The order id, e.g. EC-1042') }),
  execute: async ({ orderId }) => {
    const status = ORDERS[orderId];
    if (status === undefined) throw new Error(`order ${orderId} not found`);
    return { found: true, orderId, status };
  },
});

// ---- the deterministic "model" ------------------------------------------------------------

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const answer = (text) => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });

function textOf(message) {
  if (typeof message.content === 'string') return message.content;
  return message.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
}

let callCounter = 0;

async function scriptedTurn({ prompt }) {
  const last = prompt.at(-1);
  if (last?.role === 'tool') {
    const result = last.content.find((p) => p.type === 'tool-result');
    const out = result?.output;
    if (out?.type === 'json' && out.value && typeof out.value === 'object') {
      return answer(`Order ${out.value.orderId} is ${out.value.status}.`);
    }
    const raw = out && 'value' in out ? out.value : 'unknown error';
    const reason = (typeof raw === 'string' ? raw : JSON.stringify(raw)).replace(/^Error: /, '');
    return answer(`Sorry, I could not look up that order: ${reason}.`);
  }
  const lastUser = [...prompt].reverse().find((m) => m.role === 'user');
  const match = lastUser ? ORDER_ID.exec(textOf(lastUser)) : null;
  if (match) {
    callCounter += 1;
    return {
      content: [
        {
          type: 'tool-call',
          toolCallId: `call-${callCounter}`,
          toolName: 'lookup_order',
          input: JSON.stringify({ orderId: match[0].toUpperCase() }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  }
  return answer('I can look up orders for you. Please send an order id like EC-1042.');
}

const MockModel = aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3;
const model = new MockModel({ provider: 'evalconsole-example', modelId: 'order-desk', doGenerate: scriptedTurn });

const agent = new ToolLoopAgent({
  model,
  instructions: 'You are the order desk. Use lookup_order for order questions.',
  tools: { lookup_order: lookupOrder },
  stopWhen: stepCountIs(5),
});

// ---- serving ----------------------------------------------------------------------------

function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string' },
    },
  });
  const port = Number(values.port ?? process.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`invalid port: ${values.port ?? process.env.PORT}`);
    process.exit(2);
  }
  const secret = values.secret ?? (process.env.EVALCONSOLE_SECRET || undefined);

  const handler = createEvalconsoleHandler({ agent, secret });
  const server = http.createServer(toNodeHandler(handler));

  const stop = (signal) => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
    process.stderr.write(`received ${signal}, stopping\n`);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);

  server.listen(port, values.host, () => {
    const { address, port: actual } = server.address();
    const host = address.includes(':') ? `[${address}]` : address;
    process.stdout.write(`listening on http://${host}:${actual}\n`);
  });
}

main();
