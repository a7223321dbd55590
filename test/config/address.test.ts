// Address forms: cluster node addresses (host:port) and socket addresses (ip:port).
import t from 'tap';
import { parseHostPort, parseIp, parseSocketAddress } from '../../src/config/address';

t.test('host:port', async (t) => {
  t.same(parseHostPort('10.0.0.1:20000'), { host: '10.0.0.1', port: 20000 });
  t.same(parseHostPort('node-1.example.com:20000'), { host: 'node-1.example.com', port: 20000 });
  t.same(parseHostPort('[::1]:8000'), { host: '::1', port: 8000 });
  t.same(parseHostPort('localhost:0'), { host: 'localhost', port: 0 });
  t.same(parseHostPort('h:00080'), { host: 'h', port: 80 });
  const invalid = ['', 'host', 'host:', ':1', 'h:65536', 'h:1a', 'http://h:1', 'h:1/', 'u@h:1', 'h h:1', '::1:80'];
  for (const bad of [...invalid, '[::1]', '[::g]:1', 'h:+1']) {
    t.throws(() => parseHostPort(bad), JSON.stringify(bad));
  }
});

t.test('ip:port', async (t) => {
  t.same(parseSocketAddress('0.0.0.0:9000'), { host: '0.0.0.0', port: 9000 });
  t.same(parseSocketAddress('[::]:9000'), { host: '::', port: 9000 });
  t.same(parseSocketAddress('[fe80::1]:1'), { host: 'fe80::1', port: 1 });
  const invalid = ['0.0.0.0', 'localhost:9000', '::1:9000', '1.2.3:9', '256.0.0.1:9', '0.0.0.0:70000', '[0.0.0.0]:1'];
  for (const bad of [...invalid, '0.0.0.0:']) {
    t.throws(() => parseSocketAddress(bad), JSON.stringify(bad));
  }
});

t.test('ip', async (t) => {
  for (const ok of ['0.0.0.0', '127.0.0.1', '::', '::1', 'fe80::1']) t.equal(parseIp(ok), ok);
  for (const bad of ['', 'localhost', '0.0.0.0:80', '[::1]', '1.2.3']) t.throws(() => parseIp(bad), JSON.stringify(bad));
});
