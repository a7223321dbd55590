// Runs the C++ engine tests (native/test, built by cmake-js next to the addon
// as build/Release/oyster_engine_tests) and reports each of them here.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

const binary = path.resolve(__dirname, '..', '..', '..', 'build', 'Release', 'oyster_engine_tests');

t.test('C++ engine tests', async (t) => {
  t.ok(fs.existsSync(binary), `${binary} is built (npm run build:native:tests)`);
  if (!fs.existsSync(binary)) return;
  const out: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(binary, [], { stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    const collect = (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      out.push(...lines);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (c) => {
      if (buf) out.push(buf);
      resolve(c);
    });
  });
  let reported = 0;
  for (const line of out) {
    const m = /^(not ok|ok)\s+(\S+)(.*)$/.exec(line);
    if (!m) continue;
    reported++;
    t.ok(m[1] === 'ok', m[2], m[1] === 'ok' ? {} : { diagnostic: true, output: m[3].trim() });
  }
  t.ok(reported > 0, 'the binary reported its tests');
  t.equal(code, 0, 'oyster_engine_tests exits with 0', code === 0 ? {} : { output: out.slice(-40).join('\n') });
});
