// ArrivalDeadline counts only the time its stream is read: a message held
// back by pause() (waiting for room, or for the endpoint) is not stalled,
// however long it waits; one read for longer than its limit is, even when
// its bytes keep trickling in. A real stream, its own pause and resume.
import { PassThrough } from 'node:stream';
import t from 'tap';
import { ArrivalDeadline } from '../../src/grpc/arrival-deadline';
import { sleep } from './lib';

const LIMIT = 300;

function watched() {
  const stream = new PassThrough();
  stream.on('data', () => undefined);
  const stalls: number[] = [];
  const started = performance.now();
  const deadline = new ArrivalDeadline(stream, LIMIT, () => stalls.push(performance.now() - started));
  return { stream, deadline, stalls };
}

t.test('a message read for longer than the limit stalls once, even as bytes trickle in', async (t) => {
  const { stream, deadline, stalls } = watched();
  deadline.begin(1 << 20);
  for (let i = 0; i < 6; i++) {
    stream.write(Buffer.alloc(16));
    await sleep(100);
  }
  t.equal(stalls.length, 1, 'stalled once');
  t.ok(stalls[0] >= LIMIT - 5 && stalls[0] < LIMIT + 250, `after ${stalls[0].toFixed(0)} ms of reading`);
});

t.test('the time paused does not count', async (t) => {
  const { stream, deadline, stalls } = watched();
  deadline.begin(1 << 20);
  await sleep(150);
  stream.pause();
  await sleep(600);
  t.same(stalls, [], 'not stalled after 150 ms read and 600 ms paused');
  stream.resume();
  await sleep(60);
  t.same(stalls, [], 'nor 60 ms after it is read again');
  await sleep(400);
  t.equal(stalls.length, 1, 'stalled once the time read passed the limit');
  t.ok(stalls[0] >= 150 + 600 + LIMIT - 150 - 5, `at ${stalls[0].toFixed(0)} ms`);
});

t.test('a message let in while its stream is paused starts its clock when it is read', async (t) => {
  const { stream, deadline, stalls } = watched();
  stream.pause();
  deadline.begin(1 << 20);
  // resume() then pause() in one tick: 'resume' comes a tick later, while the stream is paused.
  stream.resume();
  stream.pause();
  await sleep(LIMIT * 2);
  t.same(stalls, [], 'not stalled while paused');
  stream.resume();
  await sleep(LIMIT + 200);
  t.equal(stalls.length, 1, 'stalled once read for the limit');
});

t.test('a message that arrives in time does not stall; the next one has a clock of its own', async (t) => {
  const { deadline, stalls, stream } = watched();
  deadline.begin(1 << 20);
  await sleep(200);
  deadline.end();
  deadline.begin(1 << 20);
  await sleep(200);
  deadline.end();
  await sleep(LIMIT);
  t.same(stalls, [], 'two messages of 200 ms each');
  deadline.begin(1 << 20);
  stream.destroy();
  await sleep(LIMIT + 100);
  t.same(stalls, [], 'a message whose stream closed does not stall');
});
