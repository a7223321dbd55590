// The HTTP server under the REST app. Requests Node's HTTP layer refuses by
// itself (unparsable request lines or headers, oversized headers, CONNECT,
// unknown Expect values) would get bare responses or a closed connection;
// here they get a StatusExt body like every other error.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { holdBody } from './middleware/expect-continue';
import { StatusExt } from './status-ext';

function rawResponse(status: number, msg: string): string {
  const body = JSON.stringify({ ok: false, msg } satisfies StatusExt);
  return (
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

const PARSER_STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/** What node.yaml sets of the server's limits (http_max_connections, http_headers_timeout, http_request_timeout). */
export interface ServerLimits {
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/** HTTPS when `tls` is given (node.yaml tls.rest). */
export function createRestServer(app: Koa, limits: ServerLimits, tls?: { cert: Buffer; key: Buffer }): http.Server {
  // bob (hyper) serves HTTP/1.1 requests without a Host header; Node would answer them with a bare 400.
  const options: http.ServerOptions = {
    requireHostHeader: false,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Node looks for requests past their time every 30 s by default: a limit
    // of seconds is kept to within a quarter of itself.
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4))),
  };
  const handle = app.callback();
  const server: http.Server = tls ? https.createServer({ ...options, cert: tls.cert, key: tls.key }, handle) : http.createServer(options, handle);
  // Connections past it are closed as they arrive: each costs memory before it sends a byte.
  server.maxConnections = limits.maxConnections;
  server.keepAliveTimeout = 65_000;

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = PARSER_STATUS[err.code ?? ''] ?? 400;
    const reason = (err as { reason?: string }).reason ?? err.message;
    const answer = () => {
      socket.write(rawResponse(status, `malformed HTTP request: ${reason}${err.code ? ` (${err.code})` : ''}`));
      socket.destroy();
    };
    // A response still being produced on this connection: the error is in
    // its own body (answer now, unless it has started) or in a pipelined
    // request after it (answer once it is done, so the answers keep order).
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (!inFlight) answer();
    else if (inFlight.headersSent) socket.destroy();
    else if (!inFlight.req.complete) answer();
    else inFlight.once('finish', answer).once('close', () => socket.destroy());
  });

  // Without a listener Node drops CONNECT requests without an answer.
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    socket.write(rawResponse(405, 'Method Not Allowed: CONNECT'));
    socket.destroy();
  });

  // Expect: 100-continue: the app asks for the body where it reads it (middleware/expect-continue.ts).
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    holdBody(req);
    void handle(req, res);
  });

  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = JSON.stringify({ ok: false, msg: `unsupported expectation ${JSON.stringify(req.headers.expect)}` } satisfies StatusExt);
    res.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    res.end(body);
  });

  return server;
}
