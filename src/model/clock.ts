// VersionClock stamps the writes this node coordinates. It is a hybrid
// logical clock: its tick follows the wall clock in microseconds, never goes
// back, moves by at least one per stamp, and jumps forward past every
// version the node sees (writes it stores, answers of its peers, and at start
// the newest version on its disks). So a write stamped here is ordered after
// every write this node has acknowledged or seen, even when the wall clock
// stands still, steps back, or lags another node's.
//
// A version from far in the future (a bob client's timestamp in
// milliseconds, a peer whose clock is wrong) would drag every later write
// there, and with it the time partitions writes go to: the clock follows
// what it sees only up to MAX_AHEAD_US past its wall clock and ignores
// versions beyond (`onFuture` reports them). Such a version still wins
// against this node's later writes of its key, as bob's timestamps always
// have. Clocks of a cluster must agree to well within MAX_AHEAD_US.
import { MAX_NODE_ID, MAX_TICK, Version } from './version';

/** How far past the wall clock an observed version may carry the clock. */
export const MAX_AHEAD_US = 60 * 1_000_000;

export class VersionClock {
  private last = 0;

  constructor(
    /** This node's id: the last tie-breaker of the versions it stamps. */
    readonly node: number,
    /** Wall clock in microseconds. */
    private readonly wallUs: () => number = () => Date.now() * 1000,
    /** Called when an observed version lies beyond MAX_AHEAD_US. */
    private readonly onFuture?: (observed: Version, aheadUs: number) => void,
  ) {
    if (!Number.isInteger(node) || node < 1 || node > MAX_NODE_ID) throw new RangeError(`node id ${node} is not in 1..${MAX_NODE_ID}`);
  }

  /** The next tick: after every tick handed out or observed. */
  tick(): number {
    const wall = this.wallUs();
    this.last = wall > this.last ? wall : this.last + 1;
    if (this.last > MAX_TICK) throw new RangeError('the version clock ran past 2^52 µs (the year 2112)');
    return this.last;
  }

  /** A version for a write stamped by this node now (REST writes). */
  now(): Version {
    const tick = this.tick();
    return { timestamp: Math.floor(tick / 1_000_000), tick, node: this.node };
  }

  /** A version for a write whose bob timestamp the client chose (gRPC writes). */
  at(timestamp: number): Version {
    return { timestamp, tick: this.tick(), node: this.node };
  }

  /** Moves the clock past a version seen (bounded, see MAX_AHEAD_US). */
  observe(v: Version): void {
    // A tick past both keeps the next stamp in v's second or later, and
    // past v's tick within that second.
    const seen = Math.max(v.tick, v.timestamp * 1_000_000);
    if (seen <= this.last) return;
    const wall = this.wallUs();
    if (seen > wall + MAX_AHEAD_US || seen > MAX_TICK) {
      this.onFuture?.(v, seen - wall);
      return;
    }
    this.last = seen;
  }
}
