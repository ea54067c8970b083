// lib/lane.mjs: StateLane, one turn at a time over a component's state, after
// spec/state-lane.md (the C++ surface is impl/include/turnstile/state_lane.hpp;
// the names follow it in JavaScript spelling [LANE-7.1]).
//
// Guarantees
//   - One turn at a time [LANE-5.1], in the order the submissions took effect
//     (a FIFO array; no front insertion, not even from a turn) [LANE-5.2].
//   - A turn is one synchronous function: a work function that returns a
//     promise ends its turn with a TypeError [LANE-3.2].
//   - run() from the lane's own turn throws LaneReentrancyError naming the lane,
//     at the call, before anything is queued [LANE-5.3] [LANE-5.5]; the check
//     is plain code, always on [LANE-7.2].
//   - run() queues before it returns [LANE-5.8]; its promise settles with the
//     turn's result or error [LANE-7.5], always after the turn has ended and its
//     marker is gone, never inside a turn (a promise reaction is never run
//     inline) [LANE-5.6].
//   - tryPost() from the lane's own turn is not reentrancy: it queues behind
//     [LANE-7.7]. Its work's error goes to the error handler, and the lane goes
//     on [LANE-7.5].
//   - close() stops accepting at the call, runs what was accepted, then settles;
//     calling it again is harmless [LANE-7.6]. run() on a closed lane throws
//     LaneClosedError, tryPost() returns false [LANE-7.4].
//
// Where a turn runs: in a setImmediate step of the lane (never inside run() or
// tryPost()), as the lane's own fiber (`lane:NAME` in the trace), under the
// submitter's bindings captured at submission (a FiberContext, installed for the
// turn), and with the lane's marker, as the C++ lane does.
//
// Reentrancy detection: the marker is the `turn` field of the async context's
// store (AsyncLocalStorage, lib/context.mjs), a token naming the running turn.
// isOnLane() is true only while that very turn runs, on the lane's fiber. It
// is beside the bindings, not one of them: FiberContext.run() inside a turn
// replaces the bindings and keeps the marker (a context installed in a turn
// cannot hide a reentrant run), a context captured in a turn does not carry it,
// and children start without it. That is how the oracle derives "on the lane"
// (spec/trace-format.md: a fiber is on lane L between the turn_start it emitted
// and the matching turn_end). turnstile keeps its marker as a binding instead.
import { als, currentStore, makeStore } from './context.mjs';
import { emit } from './trace.mjs';
import { isPlanted } from './bugs.mjs';

// Turns per setImmediate step before the lane reposts itself behind other work.
const TURNS_PER_STEP = 16;

export class LaneReentrancyError extends Error {
  constructor(laneName) {
    super(`reentrant entry into StateLane '${laneName}' from its own turn: it would wait for ` +
          `itself. If the component calls its own public method, call the private on-lane ` +
          `body directly instead [LANE-6.1]; if a callback or listener invoked inside the turn ` +
          `calls back in, invoke it outside the turn (split the callback) [LANE-6.3] [LANE-5.3]`);
    this.name = 'LaneReentrancyError';
    this.lane = laneName;
  }
}

export class LaneClosedError extends Error {
  constructor(laneName) {
    super(`StateLane '${laneName}' is closed [LANE-7.4]`);
    this.name = 'LaneClosedError';
    this.lane = laneName;
  }
}

function defaultErrorHandler(lane, error) {
  process.stderr.write(`turnstile-node: StateLane '${lane.name}': posted work threw: ${error}\n`);
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

export class StateLane {
  #name;
  #fiber;
  #queue = [];
  #running = null;     // the running turn's token { lane, fiber }, or null
  #scheduled = false;  // a drain step is posted
  #closed = false;
  #drained = null;     // promise settled once closed and drained
  #resolveDrained = null;
  #itemCounter = 0;
  #errorHandler = defaultErrorHandler;
  #home;               // the store drain steps start from: the lane's fiber, no bindings

  constructor(name) {
    this.#name = String(name);
    this.#fiber = `lane:${this.#name}`;
    this.#home = makeStore(this.#fiber, null, currentStore()?.tracer ?? null);
  }

  get name() {
    return this.#name;
  }

  // The fiber id the lane's turns run as in the trace.
  get fiber() {
    return this.#fiber;
  }

  // The lane whose turn runs in this context, or null.
  static current() {
    const store = currentStore();
    const token = store?.turn;
    if (!token) return null;
    // mutant (capture-marker, lib/bugs.mjs): a marker carried out by a snapshot
    // names its lane only, like a marker kept as a binding; planted only.
    if (token.carried && isPlanted('capture-marker')) return token.lane;
    return token.lane.#running === token && store.fiber === token.fiber ? token.lane : null;
  }

  isOnLane() {
    return StateLane.current() === this;
  }

  throwIfReentrant() {
    if (this.isOnLane()) throw new LaneReentrancyError(this.#name);  // [LANE-5.3] [LANE-7.2]
  }

  isClosed() {
    return this.#closed;
  }

  // True when nothing is queued, running or posted.
  isIdle() {
    return this.#queue.length === 0 && this.#running === null && !this.#scheduled;
  }

  // Handler for errors thrown by tryPost work: (lane, error) => void.
  setErrorHandler(handler) {
    this.#errorHandler = handler ?? defaultErrorHandler;
  }

  // Runs `work` (a synchronous function) in one turn; returns a promise of its
  // result. Throws LaneReentrancyError / LaneClosedError at the call. `item`
  // names the submission in the trace.
  run(work, { item } = {}) {
    const id = item ?? this.#nextItem();
    emit('lane.submit', { lane: this.#name, item: id, op: 'run' });
    if (!isPlanted('reentrancy') && this.isOnLane()) {
      // [LANE-5.3] at the call site, before anything is queued
      emit('lane.refused', { lane: this.#name, item: id, reason: 'reentrant' });
      throw new LaneReentrancyError(this.#name);
    }
    // mutant (reentrancy): [LANE-5.3] the check above is skipped; the nested
    // run is queued behind its own caller's turn.
    if (this.#closed) {
      emit('lane.refused', { lane: this.#name, item: id, reason: 'closed' });
      throw new LaneClosedError(this.#name);  // [LANE-7.4]
    }
    let settle;
    const done = new Promise((resolve, reject) => { settle = { resolve, reject }; });
    this.#accept({ id, work, kind: 'run', settle });  // [LANE-5.8] queued before we return
    const lane = this.#name;
    // The awaiter: runs in the caller's context, after the turn ended [LANE-5.6].
    return (async () => {
      try {
        const v = await done;
        emit('lane.resumed', { lane, item: id, outcome: 'ok' });
        return v;
      } catch (e) {
        emit('lane.resumed', { lane, item: id, outcome: 'error' });  // [LANE-7.5]
        throw e;
      }
    })();
  }

  // Queues `work` without waiting; false when the lane is closed [LANE-7.4].
  // From the lane's own turn it queues behind, like any other [LANE-7.7].
  tryPost(work, { item } = {}) {
    const id = item ?? this.#nextItem();
    emit('lane.submit', { lane: this.#name, item: id, op: 'post' });
    if (this.#closed) {
      emit('lane.refused', { lane: this.#name, item: id, reason: 'closed' });
      return false;
    }
    this.#accept({ id, work, kind: 'post', settle: null });
    return true;
  }

  // Stops accepting now; settles once everything accepted has run [LANE-7.6].
  // The awaiter reports its return (`lane.close_returned`) where it resumes.
  close() {
    emit('lane.close_requested', { lane: this.#name });
    if (!this.#closed) {
      this.#closed = true;
      this.#drained = new Promise((resolve) => { this.#resolveDrained = resolve; });
      if (this.isIdle()) this.#markDrained();  // idle: drained at once
    }
    // mutant (close-before-drain): [LANE-7.6] the promise settles at once, not
    // after the drain (a shutdown that does not await termination); planted only.
    const drained = isPlanted('close-before-drain') ? Promise.resolve() : this.#drained;
    const lane = this.#name;
    return (async () => {
      await drained;
      emit('lane.close_returned', { lane });
    })();
  }

  #nextItem() {
    this.#itemCounter += 1;
    return `${this.#name}#${this.#itemCounter}`;
  }

  #accept(entry) {
    emit('lane.accepted', { lane: this.#name, item: entry.id });
    // The turn sees the submitter's bindings: a snapshot, installed for the turn.
    const store = currentStore();
    entry.ctx = `${this.#name}/${entry.id}`;
    entry.chain = store?.chain ?? null;
    entry.tracer = store?.tracer ?? this.#home.tracer;
    emit('fl.capture', { ctx: entry.ctx });
    this.#queue.push(entry);  // [LANE-5.2] at the back, always
    this.#schedule();
  }

  #schedule() {
    if (this.#scheduled || this.#running !== null) return;
    this.#scheduled = true;
    // Never inline: the drain is a step of its own, started from the lane's home
    // context (not the submitter's).
    als.run(this.#home, () => setImmediate(() => this.#drain()));
  }

  #drain() {
    this.#scheduled = false;
    for (let budget = TURNS_PER_STEP; budget > 0 && this.#queue.length > 0; budget -= 1) {
      // mutant (fifo): [LANE-5.2] the newest item jumps the queue.
      const entry = isPlanted('fifo') ? this.#queue.pop() : this.#queue.shift();
      this.#turn(entry);
    }
    if (this.#queue.length > 0) {
      this.#schedule();
    } else if (this.#closed) {
      this.#markDrained();  // [LANE-7.6] the last accepted item has run
    }
  }

  #turn(entry) {
    const token = { lane: this, fiber: this.#fiber };
    const store = makeStore(this.#fiber, entry.chain, entry.tracer, token);
    let ok = true;
    let value;
    let error;
    als.run(store, () => {
      emit('fl.install', { ctx: entry.ctx });
      emit('lane.turn_start', { lane: this.#name, item: entry.id });
      this.#running = token;
      try {
        value = entry.work();
        if (isThenable(value)) {
          Promise.resolve(value).catch(() => {});
          throw new TypeError(`StateLane '${this.#name}': a turn runs one synchronous function; ` +
                              `do long waits outside the turn [LANE-3.2]`);
        }
      } catch (e) {
        ok = false;
        error = e;
      } finally {
        this.#running = null;  // the marker is released before anyone is resumed
        emit('lane.turn_end', { lane: this.#name, item: entry.id, outcome: ok ? 'ok' : 'error' });
        emit('fl.uninstall', { ctx: entry.ctx });
      }
    });
    if (entry.settle) {
      if (ok) entry.settle.resolve(value);
      else entry.settle.reject(error);  // [LANE-7.5] reaches the awaiter
    } else if (!ok) {
      try {
        this.#errorHandler(this, error);  // [LANE-7.5] the lane goes on
      } catch {
        defaultErrorHandler(this, error);
      }
    }
  }

  #markDrained() {
    if (this.#resolveDrained === null) return;  // once
    // On the closer's fiber when the lane was idle, else on the lane's fiber.
    emit('lane.drained', { lane: this.#name });
    this.#resolveDrained();
    this.#resolveDrained = null;
  }
}
