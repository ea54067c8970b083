// directed.mjs: hand-made runs the generated scenarios cannot express, on a
// lane adapter of lanes.mjs, traced like the harness traces a scenario.
//
//   reentrant-await  a task that awaits a run() of its own lane, as an async
//                    task may (`await queue.add(...)` inside a queued task):
//                    the inner run is queued behind the outer task, which
//                    waits for it. Neither library refuses it; both hang. The
//                    run gives up after a fixed number of event-loop turns
//                    without progress and ends the trace with status timeout.
import { als, makeStore } from '../../ports/node/lib/context.mjs';
import { Tracer } from '../../ports/node/lib/trace.mjs';

const immediate = () => new Promise((r) => setImmediate(r));

export const DIRECTED = {
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
