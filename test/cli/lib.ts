// Runs the `oyster` and `oysterd` command lines as an operator would: a
// child process of bin/oyster.js or bin/oysterd.js, with its exit code and
// both output streams.
import { spawn } from 'node:child_process';
import path from 'node:path';

export const OYSTER = path.resolve(__dirname, '..', '..', '..', 'bin', 'oyster.js');
export const OYSTERD = path.resolve(__dirname, '..', '..', '..', 'bin', 'oysterd.js');
export const PACKAGING = path.resolve(__dirname, '..', '..', '..', 'packaging');

export interface Run {
  code: number;
  stdout: string;
  /** stdout as bytes, for values. */
  out: Buffer;
  stderr: string;
}

export interface RunOptions {
  input?: string | Buffer;
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}

export function oyster(args: string[], opts: RunOptions = {}): Promise<Run> {
  return run(OYSTER, args, opts);
}

/** oysterd, for what it does before it serves (help, usage and configuration errors). */
export function oysterd(args: string[], opts: RunOptions = {}): Promise<Run> {
  return run(OYSTERD, args, opts);
}

function run(bin: string, args: string[], opts: RunOptions): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(bin)} ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 60_000} ms`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out);
      resolve({ code: code ?? -1, stdout: stdout.toString(), out: stdout, stderr: Buffer.concat(err).toString() });
    });
    child.stdin.end(opts.input ?? '');
  });
}
