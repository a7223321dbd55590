// LinkManager: which peers are reachable. Pings every peer each
// check_interval, and at once when a peer that was down pings us. During
// the first minute, until every peer has answered once, every 100 ms: a
// starting cluster finds itself quickly, and a cluster that has found
// itself is not kept busy with pings (each costs both nodes a gRPC call).
// This node is always reachable to itself.
import { Logger } from '../logging/logger';
import { PeerClient } from '../grpc/peer-client';

export class LinkManager {
  private readonly peers = new Map<string, PeerClient>();
  private readonly up = new Map<string, boolean>();
  /** Peers that have answered a ping once: from then on, losing them is news. */
  private readonly answered = new Set<string>();
  private readonly listeners: Array<(node: string, available: boolean) => void> = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly startedAt = Date.now();
  private checking = false;
  private stopped = false;

  constructor(
    private readonly selfName: string,
    private readonly checkIntervalMs: number,
    private readonly log: Logger,
  ) {}

  /** A peer to ping; unreachable until its first answer. */
  add(peer: PeerClient): void {
    this.peers.set(peer.name, peer);
    this.up.set(peer.name, false);
  }

  /** Calls `listener` whenever a peer becomes reachable or unreachable. */
  onChange(listener: (node: string, available: boolean) => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  isAvailable(node: string): boolean {
    return node === this.selfName || this.up.get(node) === true;
  }

  /** Reachable nodes, this one included. */
  availableCount(): number {
    return 1 + [...this.up.values()].filter(Boolean).length;
  }

  /** A ping arrived from `node`: if we thought it down, check it now. */
  heardFrom(node: string): void {
    const peer = this.peers.get(node);
    if (peer && this.up.get(node) === false) void this.check(peer);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.round(), delayMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    if (!this.checking) {
      this.checking = true;
      await Promise.all([...this.peers.values()].map((p) => this.check(p)));
      this.checking = false;
    }
    const fast = this.answered.size < this.peers.size && Date.now() - this.startedAt < 60_000;
    this.schedule(fast ? Math.min(100, this.checkIntervalMs) : this.checkIntervalMs);
  }

  private async check(peer: PeerClient): Promise<void> {
    let ok = true;
    try {
      await peer.ping();
    } catch {
      ok = false;
    }
    if (this.stopped || this.up.get(peer.name) === ok) return;
    this.up.set(peer.name, ok);
    // A peer lost, or back after it was lost, is an operator's business; the
    // pings before a peer first answers are not (the nodes of a cluster
    // start one after another).
    const line = { peer: peer.name, available: ok };
    const msg = `node ${peer.name} is ${ok ? 'reachable' : 'unreachable'}`;
    if (this.answered.has(peer.name)) this.log.warn(line, msg);
    else this.log.info(line, msg);
    if (ok) this.answered.add(peer.name);
    for (const l of this.listeners) l(peer.name, ok);
  }
}
