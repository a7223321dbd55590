// A peer's answer let in within the budget (src/grpc/bob-answer.ts), over a
// real grpc-js server and channel on loopback: the room is taken from the
// message's first bytes before the rest is read, the value opened from it
// gives the room back when closed, handed over or dropped and collected,
// and a message larger than the budget is refused unread.
import vm from 'node:vm';
import v8 from 'node:v8';
import * as grpc from '@grpc/grpc-js';
import t, { Test } from 'tap';
import { AnswerRoom, heldValue, takeHeld } from '../../src/grpc/bob-answer';
import { BodyBudget } from '../../src/rest/body-budget';

const MiB = 1024 * 1024;
const version = { timestamp: 1_700_000_000, tick: 0, node: 0 };
const pass = (b: Buffer) => b;
const method = { path: '/test.T/Get', requestStream: false, responseStream: false, requestSerialize: pass, requestDeserialize: pass, responseSerialize: pass, responseDeserialize: pass };

/** A server answering each request (its first byte: MiB) with that many MiB of the byte 7. */
async function serve(t: Test): Promise<(request: number, room: AnswerRoom, deadlineMs?: number) => Promise<Buffer>> {
  const server = new grpc.Server();
  server.addService({ Get: method }, { Get: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => done(null, Buffer.alloc(call.request[0] * MiB, 7)) });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const Client = grpc.makeGenericClientConstructor({ Get: method }, 'T');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1 });
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  return (mib, room, deadlineMs = 10_000) =>
    new Promise((resolve, reject) => {
      const call = (client as unknown as Record<string, (...a: unknown[]) => grpc.ClientUnaryCall>).Get(
        Buffer.from([mib]),
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err: grpc.ServiceError | null, value: Buffer) => (err ? reject(err) : resolve(value)),
      );
      room.watch(call);
    });
}

t.test('the room is the message, taken before it is read, given back once closed', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(16 * MiB);
  const room = new AnswerRoom(budget, 'bob');
  const value = await get(4, room);
  t.ok(room.held, 'the answer holds room');
  t.equal(budget.inUse, 4 * MiB, 'its length, from the frame prefix');
  const v = heldValue(version, value, room);
  t.equal(v.size, 4 * MiB);
  t.ok(v.head.equals(Buffer.alloc(512, 7)), 'its first bytes');
  t.equal(v.reader.inFile, false);
  const part = Buffer.alloc(1000);
  await v.reader.read(MiB, part);
  t.ok(part.equals(Buffer.alloc(1000, 7)), 'read copies its bytes');
  t.equal(v.reader.bytes!(10, 20).length, 20, 'bytes() gives them as they are');
  t.equal(await v.reader.sendTo(0, 0, 10), 0, 'sendTo sends nothing: the bytes are not in a file');
  v.reader.close();
  t.equal(budget.inUse, 0, 'closed: the room is back');
  v.reader.close();
  room.give();
  t.equal(budget.inUse, 0, 'given back once');
  await t.rejects(v.reader.read(0, part), /closed/, 'a closed reader reads no more');
});

t.test('a small answer holds nothing', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(16 * MiB);
  const room = new AnswerRoom(budget, 'bob');
  t.equal((await get(0, room)).length, 0);
  t.notOk(room.held);
  t.equal(budget.inUse, 0);
});

t.test('an answer waits for room, paused', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(8 * MiB);
  t.ok(await budget.take(6 * MiB), 'someone else holds 6 MiB');
  const room = new AnswerRoom(budget, 'bob');
  let arrived = false;
  const answer = get(4, room).then((v) => {
    arrived = true;
    return v;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.notOk(arrived, 'not in while there is no room');
  budget.give(6 * MiB);
  t.equal((await answer).length, 4 * MiB, 'in once there is');
  t.equal(budget.inUse, 4 * MiB);
  room.give();
  t.equal(budget.inUse, 0);
});

t.test('a call that ends while its answer waits for room: refused for want of room, nothing kept', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(8 * MiB);
  t.ok(await budget.take(6 * MiB));
  const room = new AnswerRoom(budget, 'bob');
  const err = await get(4, room, 500).then(
    () => null,
    (e: grpc.ServiceError) => e,
  );
  t.equal(err?.code, grpc.status.DEADLINE_EXCEEDED, 'the deadline ended the call');
  t.match(room.refusal, /http_body_memory_limit/, `told why: ${room.refusal}`);
  room.give();
  budget.give(6 * MiB);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(budget.inUse, 0, 'the room the answer got later went back at once');
});

t.test('a message larger than the budget is refused unread', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(8 * MiB);
  const room = new AnswerRoom(budget, 'bob');
  const err = await get(9, room).then(
    () => null,
    (e: grpc.ServiceError) => e,
  );
  t.equal(err?.code, grpc.status.CANCELLED, 'the call is cancelled');
  t.match(room.refusal, /bob peer bob answers with a value of 9437184 bytes, more than http_body_memory_limit \(8388608\)/);
  t.equal(budget.inUse, 0);
});

t.test('handed over to an answer that holds it whole', async (t) => {
  const get = await serve(t);
  const budget = new BodyBudget(16 * MiB);
  const room = new AnswerRoom(budget, 'bob');
  const v = heldValue(version, await get(2, room), room);
  const held = takeHeld(v)!;
  t.equal(held.record.value.length, 2 * MiB, 'the value itself');
  t.equal(budget.inUse, 2 * MiB, 'still holding its room');
  v.reader.close();
  t.equal(budget.inUse, 2 * MiB, 'closing the reader gives nothing back: the answer holds it');
  held.give();
  t.equal(budget.inUse, 0);
  t.equal(takeHeld({ ...v, reader: { ...v.reader } }), null, 'any other reader: null');
});

t.test('a value dropped unclosed gives its room back once collected', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const get = await serve(t);
  const budget = new BodyBudget(16 * MiB);
  // In a function of its own: a suspended async function keeps what its frame held.
  const drop = async () => {
    const room = new AnswerRoom(budget, 'bob');
    heldValue(version, await get(3, room), room);
  };
  await drop();
  t.equal(budget.inUse, 3 * MiB, 'held while the value may be in use');
  for (let i = 0; i < 50 && budget.inUse > 0; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(budget.inUse, 0, 'given back after its collection');
});
