// An operations link spoken byte by byte as docs/FORMAT.md §14 writes it
// (not through src/link, so a mistake made the same way on both ends of the
// node's own code still shows): a greeting, then frames.
import net from 'node:net';
import { decodeResultBatch, encodeOperationBatch } from '../../src/grpc/operation-codec';
import { OperationBatchMsg, ResultBatchMsg } from '../../src/grpc/proto';

export const LINK_MAGIC = Buffer.from('\x00OYSTER\x01', 'latin1');

export function hello(authorization: string): Buffer {
  const text = Buffer.from(authorization, 'utf8');
  const len = Buffer.alloc(2);
  len.writeUInt16LE(text.length);
  return Buffer.concat([LINK_MAGIC, Buffer.alloc(14), len, text]);
}

export function frame(type: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32LE(payload.length + 1, 0);
  head[4] = type;
  return Buffer.concat([head, payload]);
}

export type LinkFrame = { type: 'batch'; batch: ResultBatchMsg } | { type: 'status'; code: number; details: string };

/** A link as a peer opens it: what the node answered, then its frames, and when it closed. */
export class RawLink {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  readonly closed: Promise<void>;
  welcome: { code: number; details: string } | null = null;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      this.wake();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => {
      resolve();
      this.wake();
    }));
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private async bytes(n: number): Promise<Buffer | null> {
    while (this.buf.length < n) {
      if (this.socket.destroyed || this.socket.readableEnded) return null;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }

  /** Connects to a node's gRPC port from `localAddress` and sends `greeting`; resolves once the node answered it (or closed). */
  static async open(address: string, greeting: Buffer, localAddress = '127.0.0.1'): Promise<RawLink> {
    const colon = address.lastIndexOf(':');
    const socket = net.connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)), localAddress });
    const link = new RawLink(socket);
    socket.write(greeting);
    const head = await link.bytes(14);
    if (head !== null) {
      if (!head.subarray(0, 8).equals(LINK_MAGIC)) throw new Error(`the node answered ${head.toString('hex')}`);
      const details = await link.bytes(head.readUInt16LE(12));
      link.welcome = { code: head.readUInt32LE(8), details: details?.toString('utf8') ?? '' };
    }
    return link;
  }

  send(batch: OperationBatchMsg): void {
    this.socket.write(frame(1, encodeOperationBatch(batch)));
  }

  /** The next frame from the node; null once it closed. */
  async next(): Promise<LinkFrame | null> {
    const head = await this.bytes(5);
    if (head === null) return null;
    const payload = await this.bytes(head.readUInt32LE(0) - 1);
    if (payload === null) return null;
    if (head[4] === 1) return { type: 'batch', batch: decodeResultBatch(payload) };
    if (head[4] === 2) return { type: 'status', code: payload.readUInt32LE(0), details: payload.toString('utf8', 4) };
    throw new Error(`a frame of type ${head[4]}`);
  }

  close(): void {
    this.socket.destroy();
  }
}
