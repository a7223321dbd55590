// An alien directory out of service holds what it held when it went down:
// a read that could be answered by a newer record there is refused (503),
// never answered "absent" (404); a read whose answer is newer than anything
// it held, or of a vdisk it held nothing of, is answered. One node: vdisk 0
// on d1, vdisk 1 on d2, the alien directory on d1.
import t from 'tap';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rest } from './lib';

t.test('a read never says absent for what an alien directory out of service may hold', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(
    dir,
    { nodes: [{ name: 'n1', disks: ['d1', 'd2'] }], replicas: [['n1/d1'], ['n1/d2']] },
    { pearl: { alien_disk: 'd1' }, checkInterval: '1h' },
  );
  const node = await startNode(files, 'n1');
  const rest = new Rest();
  t.teardown(async () => {
    rest.close();
    await node.stop();
  });
  const call = async (method: string, path: string, body?: string) => {
    const r = await rest.request(node.url, method, path, body === undefined ? undefined : Buffer.from(body));
    return { status: r.status, text: r.body.toString() };
  };

  // Odd keys are vdisk 1, on d2. With d2 stopped, key 1 becomes an alien copy on d1.
  t.equal((await call('POST', '/data/3', 'before')).status, 201, 'key 3 on d2');
  t.equal((await call('POST', '/disks/d2/stop')).status, 200);
  t.equal((await call('POST', '/data/1', 'held by the alien directory')).status, 201, 'key 1 acknowledged as an alien copy');
  // The alien directory goes down with d1; d2 comes back (the hand-off cannot run).
  t.equal((await call('POST', '/disks/d1/stop')).status, 200);
  t.equal((await call('POST', '/disks/d2/start')).status, 200);

  const held = await call('GET', '/data/1');
  t.equal(held.status, 503, `key 1, of which the alien directory holds a newer record than d2: 503, not 404 (${held.text})`);
  t.equal((await call('HEAD', '/data/1')).status, 503, 'HEAD: 503 as well');
  t.equal((await call('POST', '/data/5', 'after')).status, 201, 'a write to d2 now');
  const newer = await call('GET', '/data/5');
  t.equal(newer.text, 'after', `a record newer than anything the alien directory holds is answered (${newer.status})`);
  t.equal((await call('GET', '/data/0')).status, 503, 'a key of d1 itself: 503');

  t.equal((await call('POST', '/disks/d1/start')).status, 200);
  t.equal((await call('GET', '/data/1')).text, 'held by the alien directory', 'with the alien directory back, key 1 is read');
  t.equal((await call('GET', '/data/3')).text, 'before');
});
