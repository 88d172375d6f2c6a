import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { generateText, jsonSchema, stepCountIs, tool, ToolLoopAgent } from 'ai';
import { z } from 'zod';

import { createEvalconsoleHandler } from '@evalconsole/ai-sdk';

import {
  callsTools,
  evalRequest,
  post,
  quiet,
  readJson,
  says,
  scriptedModel,
  SHIPPED_LOOKUP,
  UNKNOWN_ORDER_LOOKUP,
} from './helpers.js';

const ORDERS: Record<string, string> = { 'EC-1042': 'shipped' };

function lookupOrder() {
  return tool({
    description: 'Look up an order by id',
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => {
      const status = ORDERS[orderId];
      if (status === undefined) throw new Error(`order ${orderId} not found`);
      return { found: true, orderId, status };
    },
  });
}

describe('tool evidence', () => {
  it('reports a tool that succeeds with its input and output', async () => {
    const model = scriptedModel(
      callsTools({ id: 'call-1', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
      says('Order EC-1042 has shipped.'),
    );
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder() } });

    const res = await handler(post(evalRequest()));

    assert.equal(res.status, 200);
    assert.deepEqual(await readJson(res), {
      output: 'Order EC-1042 has shipped.',
      toolCalls: [SHIPPED_LOOKUP],
    });
    assert.equal(model.doGenerateCalls.length, 2, 'the tool result went back to the model');
  });

  it('reports a tool that throws as failed with the error message', async () => {
    const model = scriptedModel(
      callsTools({ id: 'call-1', name: 'lookup_order', input: { orderId: 'EC-9999' } }),
      says('I could not find that order.'),
    );
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder() } });

    const body = await readJson(await handler(post(evalRequest())));

    assert.deepEqual(body, {
      output: 'I could not find that order.',
      toolCalls: [UNKNOWN_ORDER_LOOKUP],
    });
  });

  it('reports [] when the model answers without calling a tool', async () => {
    const model = scriptedModel(says('Hello! How can I help?'));
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder() } });

    const res = await handler(post(evalRequest({}, { input: 'hi', messages: [] })));

    assert.equal(res.status, 200);
    assert.deepEqual(await readJson(res), { output: 'Hello! How can I help?', toolCalls: [] });
  });

  it('reports every call from every step in order, including parallel calls', async () => {
    const model = scriptedModel(
      callsTools(
        { id: 'a', name: 'lookup_order', input: { orderId: 'EC-1042' } },
        { id: 'b', name: 'lookup_order', input: { orderId: 'EC-7' } },
      ),
      callsTools({ id: 'c', name: 'notify', input: { to: 'ops' } }),
      says('Done.'),
    );
    const notify = tool({
      inputSchema: jsonSchema<{ to: string }>({ type: 'object', properties: { to: { type: 'string' } }, required: ['to'] }),
      execute: async ({ to }) => `notified ${to}`,
    });
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder(), notify } });

    const body = await readJson(await handler(post(evalRequest())));

    assert.equal(body.output, 'Done.');
    assert.deepEqual(
      body.toolCalls.map((c: { name: string; status: string }) => [c.name, c.status]),
      [
        ['lookup_order', 'succeeded'],
        ['lookup_order', 'failed'],
        ['notify', 'succeeded'],
      ],
    );
    assert.equal(body.toolCalls[2].output, 'notified ops');
  });

  it('reports input that fails the tool schema as a failed call', async () => {
    const model = scriptedModel(
      callsTools({ id: 'x', name: 'lookup_order', input: { order: 42 } }),
      says('Sorry.'),
    );
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder() } });

    const body = await readJson(await handler(post(evalRequest())));

    assert.equal(body.toolCalls.length, 1);
    assert.equal(body.toolCalls[0].name, 'lookup_order');
    assert.equal(body.toolCalls[0].status, 'failed');
    assert.match(body.toolCalls[0].error, /Invalid input for tool lookup_order/);
  });

  it('reports a tool without execute as requested', async () => {
    const model = scriptedModel(callsTools({ id: 'h', name: 'handoff', input: { team: 'billing' } }));
    const handoff = tool({ inputSchema: z.object({ team: z.string() }) });
    const handler = createEvalconsoleHandler({ model, tools: { handoff } });

    const body = await readJson(await handler(post(evalRequest())));

    assert.deepEqual(body, { output: '', toolCalls: [{ name: 'handoff', status: 'requested', input: { team: 'billing' } }] });
  });

  it('stops after maxSteps', async () => {
    const model = scriptedModel(
      callsTools({ id: '1', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
      callsTools({ id: '2', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
      says('never reached'),
    );
    const handler = createEvalconsoleHandler({ model, tools: { lookup_order: lookupOrder() }, maxSteps: 2 });

    const body = await readJson(await handler(post(evalRequest())));

    assert.equal(model.doGenerateCalls.length, 2);
    assert.equal(body.toolCalls.length, 2);
    assert.equal(body.output, '');
  });
});

describe('ways to plug an agent in', () => {
  it('serves a ToolLoopAgent', async () => {
    const agent = new ToolLoopAgent({
      model: scriptedModel(
        callsTools({ id: 'call-1', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
        says('Shipped.'),
      ),
      tools: { lookup_order: lookupOrder() },
    });
    const handler = createEvalconsoleHandler({ agent });

    const body = await readJson(await handler(post(evalRequest())));

    assert.equal(body.output, 'Shipped.');
    assert.deepEqual(body.toolCalls.map((c: { status: string }) => c.status), ['succeeded']);
  });

  it('passes messages and context to run() and reads its generateText result', async () => {
    const model = scriptedModel(says('Answer.'));
    let seen: { messages: unknown; run: string; sample: string; attempt: number; name: string; metadata: unknown } | undefined;
    const handler = createEvalconsoleHandler({
      run: async (messages, ctx) => {
        seen = {
          messages,
          run: ctx.run,
          sample: ctx.sample,
          attempt: ctx.attempt,
          name: ctx.scenario.name,
          metadata: ctx.scenario.metadata,
        };
        return generateText({
          model,
          system: 'You are the order desk.',
          messages,
          allowSystemInMessages: true,
          tools: { lookup_order: lookupOrder() },
          stopWhen: stepCountIs(5),
          abortSignal: ctx.abortSignal,
        });
      },
    });
    const conversation = [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello, how can I help?' },
      { role: 'user', content: 'Where is my order?' },
    ];

    const res = await handler(
      post(evalRequest({ attempt: 2 }, { name: 'multi-turn', messages: conversation, metadata: { tier: 'gold' } })),
    );

    assert.equal(res.status, 200);
    assert.deepEqual(await readJson(res), { output: 'Answer.', toolCalls: [] });
    assert.deepEqual(seen, {
      messages: conversation,
      run: 'run-1',
      sample: 'sample-1',
      attempt: 2,
      name: 'multi-turn',
      metadata: { tier: 'gold' },
    });
    const prompt = model.doGenerateCalls[0]!.prompt;
    assert.deepEqual(
      prompt.map((m) => m.role),
      ['system', 'system', 'user', 'assistant', 'user'],
    );
  });

  it('sends a scenario tool message as a user message', async () => {
    const model = scriptedModel(says('ok'));
    const handler = createEvalconsoleHandler({ model });
    const messages = [
      { role: 'user', content: 'Where is EC-1042?' },
      { role: 'tool', content: '{"status": "shipped"}' },
    ];

    const res = await handler(post(evalRequest({}, { messages })));

    assert.equal(res.status, 200);
    assert.deepEqual(
      model.doGenerateCalls[0]!.prompt.map((m) => ({ role: m.role, content: m.content })),
      [
        { role: 'user', content: [{ type: 'text', text: 'Where is EC-1042?' }] },
        { role: 'user', content: [{ type: 'text', text: 'Tool result:\n{"status": "shipped"}' }] },
      ],
    );
  });

  it('sends the scenario input as one user message when there are no messages', async () => {
    const model = scriptedModel(says('ok'));
    const handler = createEvalconsoleHandler({ model });

    await handler(post(evalRequest({}, { input: 'Just the input', messages: [] })));

    const prompt = model.doGenerateCalls[0]!.prompt;
    assert.deepEqual(
      prompt.map((m) => ({ role: m.role, content: m.content })),
      [{ role: 'user', content: [{ type: 'text', text: 'Just the input' }] }],
    );
  });

  it('accepts a { model, tools } config returned from run()', async () => {
    const model = scriptedModel(
      callsTools({ id: 'c', name: 'lookup_order', input: { orderId: 'EC-1042' } }),
      says('Shipped.'),
    );
    const handler = createEvalconsoleHandler({
      run: (_messages, ctx) => ({
        model,
        system: `scenario ${ctx.scenario.name}`,
        tools: { lookup_order: lookupOrder() },
      }),
    });

    const body = await readJson(await handler(post(evalRequest())));

    assert.equal(body.output, 'Shipped.');
    assert.equal(body.toolCalls[0].status, 'succeeded');
    assert.deepEqual(model.doGenerateCalls[0]!.prompt[0], { role: 'system', content: 'scenario order status' });
  });

  it('passes a finished { output, toolCalls } reply through', async () => {
    const handler = createEvalconsoleHandler({
      run: () => ({ output: 'custom', toolCalls: [{ name: 'x', status: 'requested', input: { n: 1n } }] }),
    });

    const body = await readJson(await handler(post(evalRequest())));

    assert.deepEqual(body, { output: 'custom', toolCalls: [{ name: 'x', status: 'requested', input: { n: '1' } }] });
  });

  it('answers 500 with the message when the agent throws', async () => {
    const errors: unknown[] = [];
    const handler = createEvalconsoleHandler({
      run: () => {
        throw new Error('model quota exceeded');
      },
      onError: (e) => errors.push(e),
    });

    const res = await handler(post(evalRequest()));

    assert.equal(res.status, 500);
    assert.deepEqual(await readJson(res), { error: 'agent failed: model quota exceeded' });
    assert.equal(errors.length, 1);
  });

  it('answers 500 when run() returns something unusable', async () => {
    const handler = createEvalconsoleHandler({ run: () => ({}) as never, ...quiet });

    const res = await handler(post(evalRequest()));

    assert.equal(res.status, 500);
    assert.match((await readJson(res)).error, /must return/);
  });

  it('rejects options without run, agent or model', () => {
    assert.throws(() => createEvalconsoleHandler({} as never), TypeError);
    assert.throws(() => createEvalconsoleHandler({ model: scriptedModel(), secret: '' }), /secret/);
  });
});

describe('HTTP contract', () => {
  const handler = createEvalconsoleHandler({ model: scriptedModel(says('ok'), says('ok'), says('ok')), secret: 's3cret' });
  const auth = { authorization: 'Bearer s3cret' };

  it('accepts the right bearer secret', async () => {
    const res = await handler(post(evalRequest(), auth));
    assert.equal(res.status, 200);
    assert.deepEqual(await readJson(res), { output: 'ok', toolCalls: [] });
  });

  it('answers 401 without or with a wrong secret', async () => {
    const cases: Array<Record<string, string>> = [{}, { authorization: 'Bearer nope' }, { authorization: 's3cret' }, { authorization: 'Bearer s3cret2' }];
    for (const headers of cases) {
      const res = await handler(post(evalRequest(), headers));
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      assert.deepEqual(await readJson(res), { error: 'missing or invalid bearer token' });
    }
  });

  it('answers 405 to anything but POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await handler(new Request('http://agent.test/', { method, headers: auth }));
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.ok((await readJson(res)).error);
    }
  });

  const badBodies: Array<[string, unknown, RegExp]> = [
    ['not JSON', '{"protocol": ', /not valid JSON/],
    ['a JSON list', '[]', /must be a JSON object/],
    ['no scenario', { protocol: 'evalconsole/1' }, /scenario must be an object/],
    ['another protocol', evalRequest({ protocol: 'evalconsole/2' }), /unsupported protocol/],
    ['neither input nor messages', evalRequest({}, { input: undefined, messages: [] }), /needs input or messages/],
    ['a bad role', evalRequest({}, { messages: [{ role: 'robot', content: 'x' }] }), /role must be one of/],
    ['non-string content', evalRequest({}, { messages: [{ role: 'user', content: 5 }] }), /content must be a string/],
    ['a bad attempt', evalRequest({ attempt: 0 }), /attempt must be a positive integer/],
  ];
  for (const [what, body, message] of badBodies) {
    it(`answers 400 to a body with ${what}`, async () => {
      const res = await handler(post(body, auth));
      assert.equal(res.status, 400);
      assert.match((await readJson(res)).error, message);
    });
  }

  it('names the field in a 400', async () => {
    const res = await handler(post(evalRequest({}, { messages: [{ role: 'user', content: 'a' }, { role: 'x', content: 'b' }] }), auth));
    assert.deepEqual(await readJson(res), {
      error: 'scenario.messages[1].role must be one of system, user, assistant, tool',
      field: 'scenario.messages[1].role',
    });
  });

  it('answers 413 to an oversized body', async () => {
    const small = createEvalconsoleHandler({ model: scriptedModel(), maxBodyBytes: 100 });
    const res = await small(post(evalRequest({}, { input: 'x'.repeat(200) })));
    assert.equal(res.status, 413);
    assert.match((await readJson(res)).error, /exceeds 100 bytes/);
  });
});
