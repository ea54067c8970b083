// directed.mjs: hand-made runs the generated scenarios cannot express, on a
// lane adapter of lanes.mjs, traced like the harness traces a scenario.
//
//   reentrant-await  a task that awaits a run() of its own lane, as an async
//                    task may (`await queue.add(...)` inside a queued task):
//                    the inner run is queued behind the outer task, which
//                    waits for it. Neither library refuses it; both hang. The
//                    run gives up after a fixed number of event-loop turns
//                    without progress and ends the trace with status timeout.
//   clear            the library's own discard of queued work (p-queue
//                    clear(), async-mutex cancel()): a run A holds the lane
//                    (an async task waiting for a latch), a run B and a post C
//                    queue behind it, a third fiber clears the queue, then A
//                    is let go and the lane is closed. B and C are accepted
//                    work that never runs (lane.dropped); B's awaiter gets
//                    E_CANCELED (async-mutex) or never resumes (p-queue: the
//                    trace ends with status timeout).
import { als, makeStore } from '../../ports/node/lib/context.mjs';
import { Tracer } from '../../ports/node/lib/trace.mjs';

const immediate = () => new Promise((r) => setImmediate(r));

export const DIRECTED = {
  async clear(Lane, impl) {
    const tracer = new Tracer({ scenario: 'directed-clear', impl });
    const lane = als.run(makeStore('main', null, tracer), () => new Lane('L0'));
    let release;
    const latch = new Promise((r) => { release = r; });
    const done = { A: false, B: false, close: false };
    const mark = (k) => () => { done[k] = true; };
    als.run(makeStore('f0', null, tracer), () => {
      lane.run(() => latch, { item: 'A' }).then(mark('A'), mark('A'));
    });
    als.run(makeStore('f1', null, tracer), () => {
      lane.run(() => 'B', { item: 'B' }).then(mark('B'), mark('B'));
    });
    als.run(makeStore('f2', null, tracer), () => {
      lane.tryPost(() => 'C', { item: 'C' });
    });
    await immediate();
    als.run(makeStore('f3', null, tracer), () => lane.clear());
    await immediate();
    release('A');
    for (let i = 0; i < 1000 && !done.A; i += 1) await immediate();
    als.run(makeStore('f0', null, tracer), () => {
      lane.close().then(mark('close'), mark('close'));
    });
    for (let i = 0; i < 1000 && !(done.close && done.B); i += 1) await immediate();
    const settled = done.A && done.B && done.close;
    tracer.end(settled ? 'quiescent' : 'timeout');
    return { id: 'directed-clear', trace: tracer.text(), status: settled ? 'quiescent' : 'timeout' };
  },

  async 'reentrant-await'(Lane, impl) {
    const tracer = new Tracer({ scenario: 'directed-reentrant-await', impl });
    const lane = als.run(makeStore('main', null, tracer), () => new Lane('L0'));
    let settled = false;
    als.run(makeStore('f0', null, tracer), () => {
      lane.run(() => lane.run(() => 'inner', { item: 'B' }), { item: 'A' })
        .then(() => { settled = true; }, () => { settled = true; });
    });
    for (let i = 0; i < 1000 && !settled; i += 1) await immediate();
    tracer.end(settled ? 'quiescent' : 'timeout');
    return { id: 'directed-reentrant-await', trace: tracer.text(), status: settled ? 'quiescent' : 'timeout' };
  },
};
