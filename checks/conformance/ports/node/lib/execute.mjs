// lib/execute.mjs: executes one scenario (spec/trace-format.md section 2) on
// the port and returns its trace.
//
// The runtime's reading of the operations:
//   - root fibers start in list order, each as an async function with no
//     bindings; an op list runs its ops in order and, when it ends (or throws),
//     joins the structured children it spawned;
//   - `run`/`post` bodies are the turn's work: a synchronous function, so the
//     body's ops run synchronously (a `yield` there makes the scenario
//     unexecutable, the spec forbids it). Inside a turn an operation that would
//     wait (a `run` on another lane, a `close`, a `spawn`) is started and not
//     awaited: the harness keeps track of it until the scenario is quiescent;
//   - `throw` ends only its own body: the op that ran the body records the error
//     (a turn `error`, a restore, an uninstall) and the enclosing list goes on;
//   - `yield` is a setImmediate, so other fibers and lane steps interleave;
//   - the `schedule` hint is ignored: Node has no controllable scheduler.
// The scenario is quiescent when every fiber and every started operation has
// settled and every lane is idle; a harness that waits longer than `timeoutMs`
// (by `clock`, Date.now unless a test injects one) writes `end` with status
// "timeout".
//
// `surfaces` (optional) swaps the implementation behind the harness: another
// StateLane class, or FiberLocal/FiberContext/spawn/detach, with the same
// surface (checks/conformance/peers/node/ puts real npm libraries there). The
// default is this port's own.
import { als, makeStore, MAIN_FIBER } from './context.mjs';
import { Tracer } from './trace.mjs';
import { FiberLocal, FiberContext, spawn, detach, runRoot } from './fiber_local.mjs';
import { StateLane, LaneReentrancyError, LaneClosedError } from './lane.mjs';

export const PORTED_CONTRACTS = ['lane', 'fiber-local'];
const TURN_OPS = new Set(['call', 'task', 'turn']);
const KNOWN_OPS = new Set(['run', 'post', 'close', 'throw', 'yield', 'where', 'read', 'spawn',
                           'detach', 'capture', 'install', ...TURN_OPS]);

// The error a scenario's `throw` op raises.
export class ScenarioThrow extends Error {
  constructor(opId) {
    super(`scenario throw (op ${opId})`);
    this.name = 'ScenarioThrow';
  }
}

// Why this port cannot execute `sc`, or null when it can.
export function unsupportedReason(sc) {
  if (sc === null || typeof sc !== 'object') return 'not a scenario object';
  if (sc.format !== 1) return `scenario format ${sc.format}; this port reads format 1`;
  if (!PORTED_CONTRACTS.includes(sc.contract)) return `contract '${sc.contract}' is not ported`;
  let reason = null;
  const walk = (ops, inTurn) => {
    for (const op of ops ?? []) {
      if (reason) return;
      if (!KNOWN_OPS.has(op.do)) reason = `unknown operation '${op.do}' (op ${op.id})`;
      else if (TURN_OPS.has(op.do)) reason = `operation '${op.do}' needs the turns contract (op ${op.id})`;
      else if (op.do === 'yield' && inTurn) reason = `'yield' inside a lane turn (op ${op.id})`;
      else if (op.do === 'run' || op.do === 'post') walk(op.body, true);
      else if (op.do === 'spawn' || op.do === 'detach') walk(op.body, false);
      else if (op.body) walk(op.body, inTurn);
    }
  };
  for (const f of sc.fibers ?? []) walk(f.ops, false);
  return reason;
}

const immediate = () => new Promise((r) => setImmediate(r));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const PORT_SURFACES = Object.freeze({ StateLane, FiberLocal, FiberContext, spawn, detach });

class Execution {
  constructor(sc, surfaces) {
    this.sc = sc;
    this.impl = surfaces;
    this.lanes = new Map();
    this.keys = new Map();
    this.ctxs = new Map();
    this.pending = new Set();
    this.problems = [];  // harness-level trouble (not rule violations)
  }

  lane(op) {
    const l = this.lanes.get(op.lane);
    if (!l) throw new Error(`op ${op.id}: unknown lane '${op.lane}'`);
    return l;
  }

  key(op) {
    let k = this.keys.get(op.key);
    if (!k) {  // a key the scenario did not list: still usable
      k = new this.impl.FiberLocal(op.key);
      this.keys.set(op.key, k);
    }
    return k;
  }

  // A ScenarioThrow is an expected outcome; anything else is a harness problem.
  absorb(e, op) {
    if (e instanceof ScenarioThrow) return;
    this.problems.push(`op ${op?.id ?? '?'}: ${e?.stack ?? e}`);
  }

  // Keeps `p` until it settles; never lets it reject unhandled.
  track(p, op) {
    const q = p.then(() => {}, (e) => this.absorb(e, op));
    this.pending.add(q);
    q.then(() => this.pending.delete(q));
    return q;
  }

  async ops(ops) {
    const children = [];
    try {
      for (const op of ops ?? []) await this.op(op, children);
    } finally {
      if (children.length > 0) await Promise.all(children);  // the list joins its children
    }
  }

  // Submits a `run` op to its lane: its promise, or null when the lane refuses
  // it (a reentrant run or a closed lane), as both op forms need.
  startRun(op) {
    try {
      return this.lane(op).run(() => this.opsSync(op.body), { item: op.id });
    } catch (e) {
      if (e instanceof LaneReentrancyError || e instanceof LaneClosedError) return null;
      throw e;
    }
  }

  // The ops that run the same way in a fiber (op) and inside a turn (opSync);
  // false for the others.
  commonOp(op) {
    switch (op.do) {
      case 'post':
        this.lane(op).tryPost(() => this.opsSync(op.body), { item: op.id });
        return true;
      case 'read':
        this.key(op).tryGet({ op: op.id });
        return true;
      case 'detach':
        this.track(this.impl.detach(op.fiber, () => this.ops(op.body)), op);
        return true;
      case 'capture':
        this.ctxs.set(op.ctx, this.impl.FiberContext.capture({ id: op.ctx }));
        return true;
      default:
        return false;
    }
  }

  async op(op, children) {
    if (this.commonOp(op)) return;
    switch (op.do) {
      case 'run': {
        const p = this.startRun(op);
        if (p === null) return;
        try {
          await p;
        } catch (e) {
          this.absorb(e, op);
        }
        return;
      }
      case 'close':
        await this.lane(op).close();
        return;
      case 'throw':
        throw new ScenarioThrow(op.id);
      case 'yield':
        await immediate();
        return;
      case 'where':
        try {
          await this.key(op).where(op.value, () => this.ops(op.body));
        } catch (e) {
          this.absorb(e, op);
        }
        return;
      case 'spawn':
        children.push(this.impl.spawn(op.fiber, () => this.ops(op.body)).then(() => {}, (e) => this.absorb(e, op)));
        return;
      case 'install': {
        const ctx = this.ctxs.get(op.ctx);
        if (!ctx) throw new Error(`op ${op.id}: context '${op.ctx}' was not captured before`);
        try {
          await ctx.run(() => this.ops(op.body));
        } catch (e) {
          this.absorb(e, op);
        }
        return;
      }
      default:
        throw new Error(`op ${op.id}: operation '${op.do}' is not supported by this port`);
    }
  }

  // A turn's body: synchronous.
  opsSync(ops) {
    for (const op of ops ?? []) this.opSync(op);
  }

  opSync(op) {
    if (this.commonOp(op)) return;
    switch (op.do) {
      case 'run': {
        const p = this.startRun(op);
        if (p === null) return;
        this.track(p, op);  // started in the turn, awaited outside it
        return;
      }
      case 'close':
        this.track(this.lane(op).close(), op);
        return;
      case 'where':
        try {
          this.key(op).where(op.value, () => this.opsSync(op.body));
        } catch (e) {
          this.absorb(e, op);
        }
        return;
      case 'install': {
        const ctx = this.ctxs.get(op.ctx);
        if (!ctx) throw new Error(`op ${op.id}: context '${op.ctx}' was not captured before`);
        try {
          ctx.run(() => this.opsSync(op.body));
        } catch (e) {
          this.absorb(e, op);
        }
        return;
      }
      case 'spawn':
        this.track(this.impl.spawn(op.fiber, () => this.ops(op.body)), op);
        return;
      case 'yield':
        throw new Error(`op ${op.id}: 'yield' inside a lane turn`);
      case 'throw':
        throw new ScenarioThrow(op.id);
      default:
        throw new Error(`op ${op.id}: operation '${op.do}' is not supported inside a turn`);
    }
  }
}

// Executes `sc` and returns { id, trace, status, problems }. `clock` (ms) decides
// the timeout; a test injects one to make "gives up" deterministic.
export async function executeScenario(sc, { timeoutMs = 5000, impl, clock = Date.now, surfaces = {} } = {}) {
  const tracer = new Tracer({ scenario: sc.scenario, impl });
  const ex = new Execution(sc, { ...PORT_SURFACES, ...surfaces });
  als.run(makeStore(MAIN_FIBER, null, tracer), () => {
    for (const name of sc.lanes ?? []) {
      const lane = new ex.impl.StateLane(name);
      // The trace records a posted turn's error; only a harness error is kept.
      lane.setErrorHandler((l, e) => ex.absorb(e, { id: `a post on ${name}` }));
      ex.lanes.set(name, lane);
    }
    for (const name of sc.keys ?? []) ex.keys.set(name, new ex.impl.FiberLocal(name));
    for (const f of sc.fibers ?? []) {
      ex.track(runRoot(f.fiber, tracer, () => ex.ops(f.ops)), { id: f.fiber });
    }
  });
  const deadline = clock() + timeoutMs;
  let status = 'quiescent';
  for (let spins = 0; ; spins += 1) {
    const quiet = () => ex.pending.size === 0 && [...ex.lanes.values()].every((l) => l.isIdle());
    if (quiet()) {
      await immediate();  // one more step: nothing new may have been posted
      if (quiet()) break;
    }
    if (clock() > deadline) {
      status = 'timeout';
      break;
    }
    await (spins < 1000 ? immediate() : sleep(2));
  }
  tracer.end(status);
  return { id: sc.scenario, trace: tracer.text(), status, problems: ex.problems, tracer };
}
