// A Replicas.Operations call spoken as raw HTTP/2 and gRPC framing, as a
// peer (or anyone, with authentication_type None) can open one: batches of
// operations out, results in, the call's status when it ends.
import http2 from 'node:http2';
import { decodeResultBatch, encodeOperationBatch } from '../../src/grpc/operation-codec';
import { OperationMsg, ResultMsg } from '../../src/grpc/proto';

/** A Replicas.Operations stream spoken as raw HTTP/2 and gRPC framing: batches out, results in. */
export class RawStream {
  readonly results = new Map<number, ResultMsg>();
  private bytes = Buffer.alloc(0);
  private readonly session: http2.ClientHttp2Session;
  private readonly stream: http2.ClientHttp2Stream;
  readonly closed: Promise<void>;

  constructor(address: string) {
    this.session = http2.connect(`http://${address}`);
    this.session.on('error', () => undefined);
    this.stream = this.session.request({ ':method': 'POST', ':path': '/oyster.Replicas/Operations', 'content-type': 'application/grpc', te: 'trailers' });
    this.stream.on('error', () => undefined);
    this.stream.on('data', (c: Buffer) => {
      this.bytes = Buffer.concat([this.bytes, c]);
      while (this.bytes.length >= 5 && this.bytes.length >= 5 + this.bytes.readUInt32BE(1)) {
        const n = this.bytes.readUInt32BE(1);
        for (const r of decodeResultBatch(this.bytes.subarray(5, 5 + n)).results) this.results.set(r.id, r);
        this.bytes = this.bytes.subarray(5 + n);
      }
    });
    // The call's status: in the answer's headers when nothing was answered before it, else in its trailers.
    const status = (h: http2.IncomingHttpHeaders) => h['grpc-status'] !== undefined && (this.status = Number(h['grpc-status']));
    this.stream.on('response', status);
    this.stream.on('trailers', status);
    this.closed = new Promise((resolve) => this.stream.on('close', () => resolve()));
    this.stream.on('end', () => (this.ended = true));
    this.stream.on('close', () => (this.ended = true));
  }

  /** The node ended the call. */
  ended = false;
  status: number | null = null;

  frame(ops: OperationMsg[]): Buffer {
    const m = encodeOperationBatch({ ops });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(m.length, 1);
    return Buffer.concat([prefix, m]);
  }

  write(bytes: Buffer): void {
    this.stream.write(bytes);
  }

  close(): void {
    this.session.destroy();
  }
}

