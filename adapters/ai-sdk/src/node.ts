/**
 * `toNodeHandler`: run a web-standard handler on Node's `http` server (or Express, Fastify's
 * raw mode, ...). Only type imports from `node:*`, so the package stays runtime-agnostic.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function toHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else headers.set(key, value);
  }
  return headers;
}

function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  const iterator = req[Symbol.asyncIterator]() as AsyncIterator<Uint8Array | string>;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(value));
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/** A body already consumed by a framework's parser (e.g. `express.json()`), if any. */
function preParsedBody(req: IncomingMessage): string | undefined {
  const parsed = (req as IncomingMessage & { body?: unknown }).body;
  if (parsed === undefined || !req.readableEnded) return undefined;
  if (typeof parsed === 'string') return parsed;
  if (parsed instanceof Uint8Array) return new TextDecoder().decode(parsed);
  return JSON.stringify(parsed);
}

/**
 * Adapt a `(Request) => Promise<Response>` handler to `(req, res)` for `node:http`:
 * `http.createServer(toNodeHandler(createEvalconsoleHandler({ agent })))`.
 */
export function toNodeHandler(handler: (request: Request) => Promise<Response>): NodeHandler {
  return async function nodeHandler(req, res) {
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });

    try {
      const host = req.headers.host ?? 'localhost';
      const url = new URL(req.url ?? '/', `http://${host}`);
      const method = (req.method ?? 'GET').toUpperCase();
      const init: RequestInit & { duplex?: 'half' } = { method, headers: toHeaders(req), signal: abort.signal };
      if (method !== 'GET' && method !== 'HEAD') {
        const parsed = preParsedBody(req);
        if (parsed !== undefined) {
          init.body = parsed;
        } else {
          init.body = bodyStream(req);
          init.duplex = 'half';
        }
      }
      const response = await handler(new Request(url, init));

      res.statusCode = response.status;
      response.headers.forEach((value, key) => res.setHeader(key, value));
      const payload = new Uint8Array(await response.arrayBuffer());
      res.setHeader('content-length', String(payload.byteLength));
      res.end(payload);
    } catch (error) {
      if (res.headersSent) {
        res.destroy(error instanceof Error ? error : undefined);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      const payload = JSON.stringify({ error: `adapter failed: ${message}` });
      res.statusCode = 500;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(payload);
    }
  };
}
