// A declarative reader over one parsed YAML file. Getters name a key, its
// type and its rules; a bad or missing value becomes a Problem at the key's
// dotted path (`nodes[2].disks[0].path`) instead of an exception, so that all
// problems of a file are reported together. Every key a getter asked for is
// remembered: the rest are reported as unknown-key warnings (bob ignores
// them silently, which hides typos such as `prometheus:` for `prometheus_addr:`).
import type { Problem } from './errors';
import { parseDuration } from './duration';
import { parseSize } from './size';
import { closest } from './suggest';

type Mapping = Record<string, unknown>;

/** Space on a disk: bytes, or a percentage of the disk's size. */
export type Space = { bytes: number } | { percent: number };

export interface Rules<T> {
  /** Extra validation of a well-typed value: the reason it is wrong, or undefined. */
  check?: (value: T) => string | undefined;
}
export interface IntegerRules extends Rules<number> {
  min?: number;
  max?: number;
}
type Mandatory<R, T> = R & ({ required: true } | { default: T });
type Options<R, T> = R & { required?: boolean; default?: T };

/** The problems and warnings of one file, and the mappings read from it. */
export class ConfigReader {
  readonly problems: Problem[] = [];
  readonly warnings: Problem[] = [];
  private readonly mappings: MapReader[] = [];

  constructor(readonly file: string) {}

  problem(key: string, reason: string): void {
    this.problems.push({ file: this.file, key, reason });
  }

  warning(key: string, reason: string): void {
    this.warnings.push({ file: this.file, key, reason });
  }

  /** Whether a problem was recorded at this key or anywhere below it. */
  failed(key: string): boolean {
    return this.problems.some(
      (p) => key === '' || p.key === key || p.key.startsWith(`${key}.`) || p.key.startsWith(`${key}[`),
    );
  }

  /**
   * Whether the list at `key` read entry by entry and every entry has a name
   * (a name that failed to read is ''), so that references to the names can
   * be checked without reporting one mistake twice.
   */
  allNamed(key: string, names: readonly string[]): boolean {
    const entry = new RegExp(`^${key.replace(/[.[\]]/g, '\\$&')}(\\[\\d+\\])?$`);
    return names.every((n) => n !== '') && !this.problems.some((p) => entry.test(p.key));
  }

  /** The top-level mapping of the file; an empty file reads as an empty mapping. */
  root(document: unknown): MapReader {
    if (document === null || document === undefined) return this.mapping('', {});
    if (!isMapping(document)) {
      this.problem('', 'the file must contain a YAML mapping of keys to values');
      return this.mapping('', {});
    }
    return this.mapping('', document);
  }

  /** Records a warning for every key of every mapping that no getter asked for, with the known keys it is closest to. */
  finish(): void {
    for (const m of this.mappings) {
      for (const key of m.unread()) {
        const like = closest(key, m.unset());
        const hint = like.length === 0 ? '' : `; did you mean ${like.join(' or ')}?`;
        this.warnings.push({ file: this.file, key: m.keyPath(key), reason: `unknown key, ignored${hint}`, unknownKey: true });
      }
    }
  }

  mapping(path: string, value: Mapping): MapReader {
    const m = new MapReader(this, path, value);
    this.mappings.push(m);
    return m;
  }
}

/** One mapping of the file; getters mark their keys as known. */
export class MapReader {
  private readonly asked = new Set<string>();

  constructor(
    readonly reader: ConfigReader,
    readonly path: string,
    private readonly value: Mapping,
  ) {}

  keyPath(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  unread(): string[] {
    return Object.keys(this.value).filter((k) => !this.asked.has(k));
  }

  /** The known keys (those a getter asked for) that the mapping does not set. */
  unset(): string[] {
    return [...this.asked].filter((k) => !Object.hasOwn(this.value, k));
  }

  /** Whether the key is present with a value (not absent, not an empty `key:`). */
  has(key: string): boolean {
    return Object.hasOwn(this.value, key) && !isPlaceholder(this.value[key]);
  }

  /** has() for a key of nested mappings, ["pearl", "enable_aio"]: looks without reading (no problems, nothing marked read). */
  hasPath(keys: readonly string[]): boolean {
    let value: unknown = this.value;
    for (const key of keys) {
      if (!isMapping(value) || !Object.hasOwn(value, key)) return false;
      value = value[key];
    }
    return !isPlaceholder(value);
  }

  string(key: string, options: Mandatory<Rules<string>, string>): string;
  string(key: string, options?: Options<Rules<string>, string>): string | undefined;
  string(key: string, options: Options<Rules<string>, string> = {}): string | undefined {
    return this.field(key, options, '', (v) => v.string());
  }

  integer(key: string, options: Mandatory<IntegerRules, number>): number;
  integer(key: string, options?: Options<IntegerRules, number>): number | undefined;
  integer(key: string, options: Options<IntegerRules, number> = {}): number | undefined {
    return this.field(key, options, 0, (v) => v.integer(options.min, options.max));
  }

  /** A number, whole or not (a ratio). */
  number(key: string, options: Mandatory<Rules<number>, number>): number;
  number(key: string, options?: Options<Rules<number>, number>): number | undefined;
  number(key: string, options: Options<Rules<number>, number> = {}): number | undefined {
    return this.field(key, options, 0, (v) => v.number());
  }

  boolean(key: string, options: Mandatory<Rules<boolean>, boolean>): boolean;
  boolean(key: string, options?: Options<Rules<boolean>, boolean>): boolean | undefined;
  boolean(key: string, options: Options<Rules<boolean>, boolean> = {}): boolean | undefined {
    return this.field(key, options, false, (v) => v.boolean());
  }

  /** A duration (bob's humantime syntax), in milliseconds. */
  duration(key: string, options: Mandatory<Rules<number>, number>): number;
  duration(key: string, options?: Options<Rules<number>, number>): number | undefined;
  duration(key: string, options: Options<Rules<number>, number> = {}): number | undefined {
    return this.field(key, options, 0, (v) => v.duration());
  }

  /** A size (bob's ubyte syntax), in bytes. */
  size(key: string, options: Mandatory<Rules<number>, number>): number;
  size(key: string, options?: Options<Rules<number>, number>): number | undefined;
  size(key: string, options: Options<Rules<number>, number> = {}): number | undefined {
    return this.field(key, options, 0, (v) => v.size());
  }

  /** A space on a disk: a size (bob's ubyte syntax) in bytes, or a percentage of the disk ("5%"). */
  space(key: string, options: Mandatory<Rules<Space>, Space>): Space;
  space(key: string, options: Options<Rules<Space>, Space> = {}): Space | undefined {
    return this.field(key, options, { bytes: 0 }, (v) => v.space());
  }

  /** A nested mapping; undefined when absent (a problem too if required) or not a mapping. */
  section(key: string, options: { required?: boolean } = {}): MapReader | undefined {
    const v = this.take(key, options.required === true, false);
    return v === undefined ? undefined : v.mapping();
  }

  /** A list; an absent or empty (`key:`) list reads as []. */
  list(key: string, options: { required?: boolean } = {}): Value[] {
    this.asked.add(key);
    if (!Object.hasOwn(this.value, key)) {
      if (options.required) this.reader.problem(this.keyPath(key), 'is required');
      return [];
    }
    if (isPlaceholder(this.value[key])) return [];
    return new Value(this.reader, this.keyPath(key), this.value[key]).list() ?? [];
  }

  private take(key: string, required: boolean, defaulted: boolean): Value | undefined {
    this.asked.add(key);
    const path = this.keyPath(key);
    if (!Object.hasOwn(this.value, key)) {
      if (required) this.reader.problem(path, 'is required');
      return undefined;
    }
    const raw = this.value[key];
    // `key:` with no value: bob (serde_yaml) reads "~" and rejects it unless the key is optional.
    if (isPlaceholder(raw)) {
      if (required || defaulted) this.reader.problem(path, 'is present but empty');
      return undefined;
    }
    return new Value(this.reader, path, raw);
  }

  private field<T>(
    key: string,
    options: Options<Rules<T>, T>,
    fallback: T,
    convert: (v: Value) => T | undefined,
  ): T | undefined {
    const required = options.required === true;
    // Where a value is mandatory, callers get a stand-in after a problem; the load fails anyway.
    const otherwise = required ? fallback : options.default;
    const v = this.take(key, required, options.default !== undefined);
    if (v === undefined) return otherwise;
    const result = convert(v);
    if (result === undefined) return otherwise;
    const reason = options.check?.(result);
    if (reason !== undefined) {
      v.problem(reason);
      return otherwise;
    }
    return result;
  }
}

/** A value at a path, converted on demand; a conversion failure is a problem. */
export class Value {
  constructor(
    readonly reader: ConfigReader,
    readonly path: string,
    readonly raw: unknown,
  ) {}

  problem(reason: string): void {
    this.reader.problem(this.path, reason);
  }

  /** Scalars read as text, as serde_yaml does for string fields (`name: 1` is "1"). */
  string(): string | undefined {
    const v = this.raw;
    if (isPlaceholder(v)) return this.fail('is present but empty');
    if (typeof v === 'string') return v === '' ? this.fail('must not be empty') : v;
    if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
    return this.fail('must be a string');
  }

  integer(min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined {
    const v = this.raw;
    if (typeof v !== 'number' && typeof v !== 'bigint') return this.fail('must be a whole number');
    if (typeof v === 'number' && !Number.isInteger(v)) return this.fail('must be a whole number');
    if (v < min) return this.fail(`must be at least ${min}`);
    if (v > max) return this.fail(`must be at most ${max}`);
    return Number(v);
  }

  number(): number | undefined {
    const v = this.raw;
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.fail('must be a number');
    return v;
  }

  boolean(): boolean | undefined {
    return typeof this.raw === 'boolean' ? this.raw : this.fail('must be true or false');
  }

  duration(): number | undefined {
    const v = this.raw;
    // bob reads durations as strings, so `100` is the text "100": a number without a unit.
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'bigint') {
      return this.fail('must be a duration like 100ms or 1h 30min');
    }
    try {
      return parseDuration(String(v));
    } catch (err) {
      return this.fail(`invalid duration "${String(v)}": ${(err as Error).message}`);
    }
  }

  size(): number | undefined {
    try {
      return parseSize(this.raw);
    } catch (err) {
      return this.fail((err as Error).message);
    }
  }

  space(): Space | undefined {
    const m = typeof this.raw === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(this.raw) : null;
    if (m) {
      const percent = Number(m[1]);
      return percent < 100 ? { percent } : this.fail('a percentage of the disk must be below 100%');
    }
    try {
      return { bytes: parseSize(this.raw) };
    } catch (err) {
      return this.fail(`${(err as Error).message}, or a percentage of the disk such as "5%"`);
    }
  }

  mapping(): MapReader | undefined {
    if (!isMapping(this.raw)) return this.fail('must be a mapping of keys to values');
    return this.reader.mapping(this.path, this.raw);
  }

  list(): Value[] | undefined {
    if (!Array.isArray(this.raw)) return this.fail('must be a list');
    return this.raw.map((item, i) => new Value(this.reader, `${this.path}[${i}]`, item));
  }

  private fail(reason: string): undefined {
    this.problem(reason);
    return undefined;
  }
}

/** An empty `key:` (YAML null) or bob's "~" placeholder: present but without a value. */
function isPlaceholder(value: unknown): boolean {
  return value === null || value === undefined || value === '~';
}

function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Turns a parser that throws (parseHostPort, parseIp, …) into a `check` rule. */
export function parsedBy(parse: (text: string) => unknown): (text: string) => string | undefined {
  return (text) => {
    try {
      parse(text);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };
}
