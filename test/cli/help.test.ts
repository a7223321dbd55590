// Every command answers --help, and the exit codes of the command line itself.
import t from 'tap';
import { oyster } from './lib';

const COMMANDS = [
  ['put'],
  ['get'],
  ['exists'],
  ['delete'],
  ['bench'],
  ['config', 'generate'],
  ['config', 'check'],
  ['blob', 'check'],
  ['blob', 'info'],
  ['blob', 'recover'],
  ['wait-ready'],
];

t.test('oyster --help lists every command, oyster alone is a usage error', async (t) => {
  const help = await oyster(['--help']);
  t.equal(help.code, 0);
  for (const c of ['put', 'get', 'exists', 'delete', 'bench', 'config', 'blob', 'wait-ready']) t.match(help.stdout, new RegExp(`\\n  ${c} `), c);
  t.match(help.stdout, /Exit codes/);
  const bare = await oyster([]);
  t.equal(bare.code, 2);
  t.equal((await oyster(['--version'])).stdout.trim(), `oyster ${require('../../../package.json').version}`);
});

t.test('every command has --help with its usage and exit codes', async (t) => {
  for (const c of COMMANDS) {
    const r = await oyster([...c, '--help']);
    t.equal(r.code, 0, `${c.join(' ')} --help exits 0`);
    t.match(r.stdout, `Usage: oyster ${c.join(' ')}`, `${c.join(' ')} shows its usage`);
    t.match(r.stdout, /Exit codes: 0 /, `${c.join(' ')} documents its exit codes`);
  }
  t.equal((await oyster(['blob', 'check', '-h'])).stdout, (await oyster(['blob', 'check', '--help'])).stdout, '-h is --help');
  for (const g of ['config', 'blob']) {
    const r = await oyster([g, '--help']);
    t.equal(r.code, 0);
    t.match(r.stdout, `Usage: oyster ${g} <command>`);
  }
});

t.test('wrong command lines exit 2 with a pointer to --help', async (t) => {
  for (const args of [['nope'], ['config', 'nope'], ['put', '--nope'], ['get'], ['bench', '-b', 'fly'], ['blob', 'recover', '/tmp'], ['get', 'zz']]) {
    const r = await oyster(args);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, /--help/, `${args.join(' ')} points at --help`);
  }
});
