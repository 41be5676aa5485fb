// The peer program itself, over its pipes, for what needs no broker: hello's offer in each
// protocol version, and a policy it cannot take refused before anything connects.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { describe, it } from 'node:test';
import { KNOBS } from '../adapter/policies';

type Line = Record<string, unknown>;

/** Runs the peer, sends `commands` one by one (each after the previous answer), returns the answers. */
async function converse(commands: Line[]): Promise<Line[]> {
  const peer = spawn(process.execPath, [path.join(__dirname, '..', 'peer.js')], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: peer.stdout })[Symbol.asyncIterator]();
  const answers: Line[] = [];
  try {
    for (const [index, command] of commands.entries()) {
      peer.stdin.write(`${JSON.stringify({ id: index + 1, ...command })}\n`);
      const next = await lines.next();
      assert.ok(!next.done, 'the peer closed its stdout');
      answers.push(JSON.parse(next.value) as Line);
    }
  } finally {
    peer.stdin.end();
  }
  return answers;
}

const HELLO = { op: 'hello', amqp_url: 'amqp://guest:guest@127.0.0.1:1/unused' };

describe('the peer over its pipes', () => {
  it('answers protocol 4 with its knobs and no catalogue name', async () => {
    const [hello] = await converse([{ ...HELLO, protocol: 4, protocols: [1, 2, 3, 4] }]);
    assert.equal(hello!.protocol, 4);
    assert.deepEqual(hello!.knobs, KNOBS);
    assert.ok(!('profiles' in hello!) && !('mutants' in hello!) && !('unreachable' in hello!));
  });

  it('answers protocol 5 with the same knobs, the connection-loss ones among them', async () => {
    const [hello] = await converse([{ ...HELLO, protocol: 5, protocols: [1, 2, 3, 4, 5], amqp_urls: [HELLO.amqp_url] }]);
    assert.equal(hello!.protocol, 5);
    assert.deepEqual(hello!.knobs, KNOBS);
    const knobs = hello!.knobs as { requester: string[]; responder: string[] };
    for (const knob of ['on_connection_lost', 'recover_connection']) assert.ok(knobs.requester.includes(knob), knob);
    for (const knob of ['recover_connection', 'ack_timing']) assert.ok(knobs.responder.includes(knob), knob);
  });

  it('refuses an amqp_urls that is not a list of URLs', async () => {
    const [, open] = await converse([
      { ...HELLO, protocol: 5, protocols: [1, 2, 3, 4, 5] },
      { op: 'requester.open', name: 'q', policy: {}, connection_name: 'n', amqp_urls: 'amqp://x/' },
    ]);
    assert.equal(open!.ok, false);
    assert.match(String(open!.error), /amqp_urls/);
  });

  it('offers the binding as it ships to an older harness', async () => {
    const [hello] = await converse([{ ...HELLO, protocol: 3, protocols: [1, 2, 3] }]);
    assert.equal(hello!.protocol, 3);
    assert.deepEqual([hello!.profiles, hello!.mutants, hello!.knobs], [['current'], [], undefined]);
  });

  it('refuses a knob it does not have or a value it cannot take, naming it, before connecting', async () => {
    const [, open, start] = await converse([
      { ...HELLO, protocol: 4, protocols: [1, 2, 3, 4] },
      { op: 'requester.open', name: 'q', profile: 'current', mutant: null, policy: { write_header_adress: false } },
      { op: 'responder.start', name: 'r', queue: 'q', behavior: { reply: 'echo' }, policy: { read_order: 'header' } },
    ]);
    assert.equal(open!.ok, false);
    assert.match(String(open!.error), /write_header_adress/);
    assert.equal(start!.ok, false);
    assert.match(String(start!.error), /read_order/);
  });
});
