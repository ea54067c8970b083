// lanes.mjs: p-queue (concurrency 1) and async-mutex behind the Node harness's
// lane surface (checks/conformance/ports/node/lib/execute.mjs: run, tryPost,
// close, isIdle, setErrorHandler). An adapter adds no rule: it never refuses,
// never reorders and never carries a context itself; it reports, in the events
// of spec/trace-format.md section 1.1, what the library did:
//   run(work)     lane.submit (op run), lane.accepted (neither library refuses
//                 anything), then the library's own submission (p-queue add(),
//                 async-mutex runExclusive()); its promise settling resumes the
//                 caller: lane.resumed on the caller's fiber.
//   tryPost(work) the same without waiting; a turn's error goes to the harness's
//                 error handler (a scenario `throw` is an expected outcome).
//   a turn        lane.turn_start / lane.turn_end on the lane's fiber "lane:NAME",
//                 when and where the library calls the task.
//   close()       neither library has a closed state, so nothing is refused
//                 after it: lane.close_requested at the call, then the library's
//                 own "everything queued has finished" wait (p-queue onIdle(),
//                 async-mutex waitForUnlock()), then lane.drained (once per lane,
//                 as the Node port emits it: the first close to complete).
//   clear()       the library's own discard of what is queued (p-queue clear(),
//                 async-mutex cancel()): lane.dropped (reason: the library's
//                 call) for every accepted item whose task the library has not
//                 called yet, in acceptance order, then the library's call. A
//                 dropped run's promise is the library's: p-queue's never
//                 settles (its awaiter never resumes), async-mutex's rejects
//                 with E_CANCELED (lane.resumed with `error`).
// Which bindings a turn sees: the library calls the task in some async context
// (AsyncLocalStorage propagates along the promise chains the library builds).
// At each submission the adapter records the context current there
// (fl.capture, ctx "LANE/ITEM", on the submitter, after lane.accepted); when
// the library calls a task, the adapter looks up which submission's context it
// was called in and reports it (fl.install of that ctx around the turn), and
// the turn runs with exactly those bindings. A context that is no submission's
// is run as found, with no fl.install (the oracle then judges the reads).
//
import PQueue from 'p-queue';
import { Mutex } from 'async-mutex';
import { als, currentStore, makeStore } from '../../ports/node/lib/context.mjs';
import { emit } from '../../ports/node/lib/trace.mjs';
import { ScenarioThrow } from '../../ports/node/lib/execute.mjs';

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') &&
  typeof v.then === 'function';

class LibraryLane {
  #name;
  #fiber;
  #outstanding = 0;        // accepted, turn not ended: the harness's quiescence
  #captured = new Map();   // store -> ctx id of the latest submission made in it
  #drainedEmitted = false;
  #errorHandler = null;
  #queued = new Set();     // accepted items whose task the library has not called yet, in acceptance order

  constructor(name) {
    this.#name = String(name);
    this.#fiber = `lane:${this.#name}`;
  }

  get name() {
    return this.#name;
  }

  isIdle() {
    return this.#outstanding === 0;
  }

  setErrorHandler(handler) {
    this.#errorHandler = handler;
  }

  run(work, { item }) {
    emit('lane.submit', { lane: this.#name, item, op: 'run' });
    const done = this.submit(this.#accept(item, work));
    const lane = this.#name;
    return (async () => {
      try {
        const v = await done;
        emit('lane.resumed', { lane, item, outcome: 'ok' });
        return v;
      } catch (e) {
        emit('lane.resumed', { lane, item, outcome: 'error' });
        throw e;
      }
    })();
  }

  tryPost(work, { item }) {
    emit('lane.submit', { lane: this.#name, item, op: 'post' });
    this.submit(this.#accept(item, work)).catch((e) => {
      if (!(e instanceof ScenarioThrow) && this.#errorHandler) this.#errorHandler(this, e);
    });
    return true;
  }

  close() {
    emit('lane.close_requested', { lane: this.#name });
    const idle = this.drain();
    return (async () => {
      await idle;
      if (!this.#drainedEmitted) {
        this.#drainedEmitted = true;
        emit('lane.drained', { lane: this.#name });
      }
    })();
  }

  clear() {
    for (const item of this.#queued) {
      emit('lane.dropped', { lane: this.#name, item, reason: this.discardName });
      this.#outstanding -= 1;
    }
    this.#queued.clear();
    this.discard();
  }

  // The task handed to the library: runs one turn where the library calls it.
  #accept(item, work) {
    emit('lane.accepted', { lane: this.#name, item });
    const store = currentStore();
    const ctx = `${this.#name}/${item}`;
    emit('fl.capture', { ctx });
    this.#captured.set(store, ctx);
    this.#outstanding += 1;
    this.#queued.add(item);
    return () => this.#turn({ item, work, store, ctx, tracer: store?.tracer ?? null });
  }

  #turn(entry) {
    this.#queued.delete(entry.item);
    const given = currentStore();  // the async context the library called us in
    const ctx = given === entry.store ? entry.ctx : (this.#captured.get(given) ?? null);
    const store = makeStore(this.#fiber, given?.chain ?? null, given?.tracer ?? entry.tracer);
    return als.run(store, () => {
      if (ctx) emit('fl.install', { ctx });
      emit('lane.turn_start', { lane: this.#name, item: entry.item });
      const end = (ok) => {
        emit('lane.turn_end', { lane: this.#name, item: entry.item, outcome: ok ? 'ok' : 'error' });
        if (ctx) emit('fl.uninstall', { ctx });
        this.#outstanding -= 1;
      };
      let value;
      try {
        value = entry.work();
      } catch (e) {
        end(false);
        throw e;
      }
      if (!isThenable(value)) {
        end(true);
        return value;
      }
      // An async task (the harness's turns are synchronous; directed.mjs
      // submits one): the library holds the task's slot until its promise
      // settles, so that is when the turn ends.
      return Promise.resolve(value).then((v) => { end(true); return v; }, (e) => { end(false); throw e; });
    });
  }
}

// A LibraryLane over one instance of `library`, made by `make()`: `calls` names
// its methods that submit a task, wait until everything queued has finished,
// and discard what is queued.
function libraryLane(library, make, calls) {
  return class extends LibraryLane {
    #instance = make();

    submit(task) {
      return this.#instance[calls.submit](task);
    }

    drain() {
      return this.#instance[calls.drain]();
    }

    get discardName() {
      return `${library} ${calls.discard}()`;
    }

    discard() {
      this.#instance[calls.discard]();
    }
  };
}

// p-queue with concurrency 1: add(task) runs the task at once when the queue is
// free (inside add()), else when the running task's promise settles, from that
// task's own continuation.
export const PQueueLane = libraryLane('p-queue', () => new PQueue({ concurrency: 1 }),
  { submit: 'add', drain: 'onIdle', discard: 'clear' });

// async-mutex: runExclusive(task) queues an acquire at the call (FIFO) and runs
// the task in the continuation of that acquire, in the submitter's own context.
export const AsyncMutexLane = libraryLane('async-mutex', () => new Mutex(),
  { submit: 'runExclusive', drain: 'waitForUnlock', discard: 'cancel' });
