import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { tool } from 'ai';
import { z } from 'zod';

import { createEvalconsoleHandler, toNodeHandler } from '@evalconsole/ai-sdk';

import { callsTools, evalRequest, says, scriptedModel, SHIPPED_LOOKUP, UNKNOWN_ORDER_LOOKUP } from './helpers.js';

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

async function listen(server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

describe('node:http server on loopback', () => {
  let server: http.Server;
  let base: string;

  before(async () => {
    const model = scriptedModel(
      callsTools({ id: 'call-1', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
      says('Order EC-1042 has shipped.'),
      says('No tools this time.'),
    );
    const lookup_order = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: async ({ orderId }) => ({ found: true, orderId, status: 'shipped' }),
    });
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order }, secret: 'loopback-secret' });
    server = http.createServer(toNodeHandler(handler));
    base = await listen(server);
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const auth = { authorization: 'Bearer loopback-secret', 'content-type': 'application/json' };

  it('answers a real HTTP POST with output and tool calls', async () => {
    const res = await fetch(`${base}/api/agent`, { method: 'POST', headers: auth, body: JSON.stringify(evalRequest()) });

    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), {
      output: 'Order EC-1042 has shipped.',
      toolCalls: [SHIPPED_LOOKUP],
    });
  });

  it('reads a chunked request body', async () => {
    const payload = JSON.stringify(evalRequest({}, { input: 'hi', messages: [] }));
    const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${base}/`, { method: 'POST', headers: auth }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write(payload.slice(0, 10));
      setTimeout(() => req.end(payload.slice(10)), 20);
    });

    assert.equal(body.status, 200);
    assert.deepEqual(JSON.parse(body.text), { output: 'No tools this time.', toolCalls: [] });
  });

  it('answers 401 without the secret, 405 to GET and 400 to a bad body', async () => {
    const noAuth = await fetch(`${base}/`, { method: 'POST', body: JSON.stringify(evalRequest()) });
    assert.equal(noAuth.status, 401);
    assert.deepEqual(await noAuth.json(), { error: 'missing or invalid bearer token' });

    const get = await fetch(`${base}/`, { headers: auth });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');

    const bad = await fetch(`${base}/`, { method: 'POST', headers: auth, body: 'nope' });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'request body is not valid JSON' });
  });
});

describe('examples/serve.mjs', () => {
  let child: ChildProcessWithoutNullStreams;
  let base: string;
  let stderr = '';

  before(async () => {
    child = spawn(process.execPath, ['examples/serve.mjs', '--port', '0'], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, EVALCONSOLE_SECRET: 'example-secret' },
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.stdout.setEncoding('utf8');
    base = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no listening line; stderr: ${stderr}`)), 15000);
      child.stdout.on('data', (c: string) => {
        out += c;
        const match = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/m.exec(out);
        if (match) {
          clearTimeout(timer);
          assert.notEqual(match[2], '0');
          resolve(match[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`exited early with ${code}; stderr: ${stderr}`)));
    });
  });

  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  async function ask(input: string): Promise<{ output: string; toolCalls: Array<Record<string, unknown>> }> {
    const res = await fetch(base, {
      method: 'POST',
      headers: { authorization: 'Bearer example-secret', 'content-type': 'application/json' },
      body: JSON.stringify(evalRequest({}, { input, messages: [{ role: 'user', content: input }] })),
    });
    assert.equal(res.status, 200);
    return res.json() as Promise<{ output: string; toolCalls: Array<Record<string, unknown>> }>;
  }

  it('looks up an order when the input has an order id', async () => {
    assert.deepEqual(await ask('Where is my order EC-1042?'), {
      output: 'Order EC-1042 is shipped.',
      toolCalls: [SHIPPED_LOOKUP],
    });
  });

  it('reports an unknown order as a failed tool call', async () => {
    const body = await ask('What about EC-9999?');
    assert.equal(body.output, 'Sorry, I could not look up that order: order EC-9999 not found.');
    assert.deepEqual(body.toolCalls, [UNKNOWN_ORDER_LOOKUP]);
  });

  it('answers without tools otherwise', async () => {
    assert.deepEqual(await ask('Hello there'), {
      output: 'I can look up orders for you. Please send an order id like EC-1042.',
      toolCalls: [],
    });
  });

  it('requires the secret from EVALCONSOLE_SECRET', async () => {
    const res = await fetch(base, { method: 'POST', body: JSON.stringify(evalRequest()) });
    assert.equal(res.status, 401);
  });

  it('exits with code 0 on SIGTERM', async () => {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code, signal] = await exited;
    assert.equal(signal, null);
    assert.equal(code, 0);
  });
});
