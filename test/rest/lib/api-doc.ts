// Reading docs/API.md: its executable examples (a ```sh curl block followed
// by a ```http response block), its endpoint headings, and matching a real
// response against a documented one. The conventions are stated at the end
// of docs/API.md ("About the examples").

export interface DocBlock {
  lang: string;
  /** The lines between the fences. */
  lines: string[];
  /** 1-based line of the opening fence. */
  line: number;
}

export interface DocRequest {
  method: string;
  /** Path and query as written (sent as is). */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface DocResponse {
  status: number;
  reason: string;
  headers: Array<[string, string]>;
  /** undefined: the example shows no body section. */
  body?: string;
}

export interface DocExample {
  line: number;
  command: string;
  request: DocRequest;
  response: DocResponse;
}

export interface DocEndpoint {
  methods: string[];
  path: string;
  line: number;
}

export interface ParsedDoc {
  examples: DocExample[];
  endpoints: DocEndpoint[];
  /** Problems with the document's own form. */
  problems: string[];
}

export const DOC_BASE = 'http://localhost:8000';

export function parseDoc(text: string): ParsedDoc {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  const endpoints: DocEndpoint[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)/.exec(lines[i]);
    if (fence) {
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i]);
      if (i >= lines.length) problems.push(`line ${start + 1}: unclosed code block`);
      blocks.push({ lang: fence[1], lines: body, line: start + 1 });
      continue;
    }
    const h = /^### (.*)$/.exec(lines[i]);
    if (h) {
      const m = /^([A-Z]+(?:, [A-Z]+)*) (\/\S*)$/.exec(h[1]);
      if (m) endpoints.push({ methods: m[1].split(', '), path: m[2], line: i + 1 });
      else problems.push(`line ${i + 1}: heading is not "### METHOD[, METHOD] /path": ${h[1]}`);
    }
  }
  const examples: DocExample[] = [];
  for (let b = 0; b < blocks.length; b++) {
    const block = blocks[b];
    if (block.lang === 'http') {
      problems.push(`line ${block.line}: an http response block without the sh block of its request`);
      continue;
    }
    if (block.lang !== 'sh') continue;
    const next = blocks[b + 1];
    if (!next || next.lang !== 'http') {
      problems.push(`line ${block.line}: an sh example must be followed by its http response block`);
      continue;
    }
    b++;
    try {
      const command = block.lines.join('\n').replace(/\\\n/g, ' ').trim();
      examples.push({ line: block.line, command, request: parseCommand(command), response: parseResponse(next.lines) });
    } catch (err) {
      problems.push(`line ${block.line}: ${(err as Error).message}`);
    }
  }
  return { examples, endpoints, problems };
}

/** Shell words of one command, with the pipelines split: [['printf', '…'], ['curl', …]]. */
function shellWords(command: string): string[][] {
  const stages: string[][] = [[]];
  let word: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let s = '';
      for (i++; i < command.length && command[i] !== '"'; i++) {
        if (command[i] === '\\' && i + 1 < command.length && '"\\$`'.includes(command[i + 1])) i++;
        s += command[i];
      }
      if (i >= command.length) throw new Error('unterminated double quote');
      word = (word ?? '') + s;
    } else if (c === '\\' && i + 1 < command.length) {
      word = (word ?? '') + command[++i];
    } else if (c === '|') {
      if (word !== null) stages[stages.length - 1].push(word);
      word = null;
      stages.push([]);
    } else if (/\s/.test(c)) {
      if (word !== null) stages[stages.length - 1].push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) stages[stages.length - 1].push(word);
  return stages;
}

/** The bytes printf prints for a format without conversions. */
function printfBytes(format: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c === '%') {
      if (format[i + 1] !== '%') throw new Error('printf: only %% is supported');
      out.push(0x25);
      i++;
    } else if (c === '\\') {
      const n = format[++i];
      const octal = /^[0-7]{1,3}/.exec(format.slice(i));
      if (octal) {
        out.push(parseInt(octal[0], 8) & 0xff);
        i += octal[0].length - 1;
      } else if (n === 'n') out.push(10);
      else if (n === 'r') out.push(13);
      else if (n === 't') out.push(9);
      else if (n === '\\') out.push(0x5c);
      else throw new Error(`printf: unsupported escape \\${n}`);
    } else {
      out.push(...Buffer.from(c, 'utf8'));
    }
  }
  return Buffer.from(out);
}

function parseCommand(command: string): DocRequest {
  const stages = shellWords(command);
  let stdin: Buffer | undefined;
  if (stages.length === 2) {
    const [printf, format, ...rest] = stages[0];
    if (printf !== 'printf' || format === undefined || rest.length > 0) throw new Error('only `printf FORMAT |` may feed curl');
    stdin = printfBytes(format);
  } else if (stages.length !== 1) {
    throw new Error('one curl command, optionally fed by printf');
  }
  const [curl, ...args] = stages[stages.length - 1];
  if (curl !== 'curl') throw new Error(`not a curl command: ${command}`);
  let method: string | undefined;
  let url: string | undefined;
  let body: Buffer | undefined;
  const headers: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    switch (a) {
      case '-i':
      case '-s':
      case '-g':
        break;
      case '-I':
        method = 'HEAD';
        break;
      case '-X':
        method = value();
        break;
      case '-H': {
        const h = value();
        const colon = h.indexOf(':');
        if (colon < 0) throw new Error(`bad header ${h}`);
        headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
        break;
      }
      case '--data-binary': {
        const v = value();
        if (v === '@-') {
          if (!stdin) throw new Error('--data-binary @- without printf');
          body = stdin;
        } else if (v.startsWith('@')) {
          throw new Error('--data-binary @file is not supported');
        } else body = Buffer.from(v, 'utf8');
        break;
      }
      case '-o':
        if (value() !== '/dev/null') throw new Error('only -o /dev/null');
        break;
      case '-D':
        if (value() !== '-') throw new Error('only -D -');
        break;
      default:
        if (a.startsWith('-')) throw new Error(`unsupported curl option ${a}`);
        if (url !== undefined) throw new Error('more than one URL');
        url = a;
    }
  }
  if (!url?.startsWith(`${DOC_BASE}/`)) throw new Error(`the URL must start with ${DOC_BASE}/`);
  return { method: method ?? (body !== undefined ? 'POST' : 'GET'), path: url.slice(DOC_BASE.length), headers, body };
}

function parseResponse(lines: string[]): DocResponse {
  const status = /^HTTP\/1\.1 (\d{3}) (.+)$/.exec(lines[0] ?? '');
  if (!status) throw new Error(`the response must start with a status line, got ${JSON.stringify(lines[0])}`);
  const headers: Array<[string, string]> = [];
  let i = 1;
  for (; i < lines.length && lines[i] !== ''; i++) {
    const colon = lines[i].indexOf(':');
    if (colon < 0) throw new Error(`bad header line ${JSON.stringify(lines[i])}`);
    headers.push([lines[i].slice(0, colon).trim(), lines[i].slice(colon + 1).trim()]);
  }
  return { status: Number(status[1]), reason: status[2], headers, body: i < lines.length ? lines.slice(i + 1).join('\n') : undefined };
}

// ------------------------------------------------------------------ matching

export interface Substitutions {
  /** Replaces `<data>`. */
  data: string;
  /** Replaces 127.0.0.1:20000. */
  address: string;
}

const PLACEHOLDER = /<data>|127\.0\.0\.1:20000|<[a-z][a-z0-9_-]*>/g;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A documented string as a regular expression over the real one. */
export function textPattern(expected: string, subs: Substitutions): RegExp {
  let re = '';
  let last = 0;
  for (const m of expected.matchAll(PLACEHOLDER)) {
    re += escapeRegExp(expected.slice(last, m.index));
    re += m[0] === '<data>' ? escapeRegExp(subs.data) : m[0] === '127.0.0.1:20000' ? escapeRegExp(subs.address) : '.+?';
    last = m.index! + m[0].length;
  }
  re += escapeRegExp(expected.slice(last));
  return new RegExp(`^${re}$`, 's');
}

/** Differences between a documented JSON value and a real one (empty: they match). */
export function matchJson(expected: unknown, actual: unknown, subs: Substitutions, at = '$'): string[] {
  if (typeof expected === 'string') {
    if (expected === '<int>') return Number.isInteger(actual) ? [] : [`${at}: expected an integer, got ${JSON.stringify(actual)}`];
    if (typeof actual !== 'string') return [`${at}: expected a string, got ${JSON.stringify(actual)}`];
    return textPattern(expected, subs).test(actual) ? [] : [`${at}: ${JSON.stringify(actual)} does not match ${JSON.stringify(expected)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at}: expected an array, got ${JSON.stringify(actual)}`];
    if (actual.length !== expected.length) return [`${at}: expected ${expected.length} elements, got ${actual.length}: ${JSON.stringify(actual)}`];
    return expected.flatMap((e, i) => matchJson(e, actual[i], subs, `${at}[${i}]`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${at}: expected an object, got ${JSON.stringify(actual)}`];
    const ek = Object.keys(expected).sort();
    const ak = Object.keys(actual).sort();
    if (ek.join() !== ak.join()) return [`${at}: keys ${JSON.stringify(ak)}, documented ${JSON.stringify(ek)}`];
    return ek.flatMap((k) => matchJson((expected as Record<string, unknown>)[k], (actual as Record<string, unknown>)[k], subs, `${at}.${k}`));
  }
  return expected === actual ? [] : [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** Differences between a documented text body and a real one; a line "..." stands for any lines. */
export function matchText(expected: string, actual: string, subs: Substitutions): string[] {
  const want = expected.split('\n');
  const have = actual.split('\n');
  if (want[want.length - 1] === '' && have[have.length - 1] === '') {
    want.pop();
    have.pop();
  }
  const loose = want.includes('...');
  let h = 0;
  let gap = false;
  for (const w of want) {
    if (w === '...') {
      gap = true;
      continue;
    }
    const re = textPattern(w, subs);
    if (gap || loose) {
      while (h < have.length && !re.test(have[h])) h++;
      if (h >= have.length) return [`documented line not found in order: ${JSON.stringify(w)}`];
    } else if (h >= have.length || !re.test(have[h])) {
      return [`line ${h + 1}: ${JSON.stringify(have[h])} does not match ${JSON.stringify(w)}`];
    }
    h++;
    gap = false;
  }
  if (!want.includes('...') && h !== have.length) return [`${have.length - h} more lines than documented`];
  if (want[want.length - 1] !== '...' && loose && h !== have.length) return [`${have.length - h} more lines after the last documented one`];
  return [];
}

/** A path pattern of a heading (`{x}`) or a route (`:x`) as a regular expression. */
export function routePattern(path: string): RegExp {
  return new RegExp(`^${path.split('/').map((s) => (/^[{:]/.test(s) ? '[^/]+' : escapeRegExp(s))).join('/')}$`);
}

/** A path with its parameters made anonymous, to compare headings with routes. */
export function routeShape(path: string): string {
  return path.replace(/\{[^}]*\}|:[A-Za-z_]\w*/g, '{}');
}
