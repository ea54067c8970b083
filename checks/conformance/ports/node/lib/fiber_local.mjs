// lib/fiber_local.mjs: FiberLocal and FiberContext on AsyncLocalStorage,
// after spec/fiber-local.md.
//
// Bindings are an immutable chain of frames { key, value, next } held by the
// async context's store (lib/context.mjs). Nothing is ever mutated:
//   - key.where(value, body) runs `body` under a new store whose chain has one
//     more frame, and the caller's store is back when it returns or throws
//     (AsyncLocalStorage.run scopes it) [FL-3.1] [FL-6.2];
//   - async work started inside a store keeps that store, so a structured child
//     sees the bindings of the moment it was spawned and nothing later [FL-3.2],
//     and its own binds make stores nobody else holds [FL-3.3];
//   - detach() starts its fiber with an empty chain, posted (setImmediate), so
//     even its synchronous prefix runs outside the caller [FL-3.4] [LANE-6.2];
//   - FiberContext.capture() keeps the chain head (constant time [FL-5.3]);
//     ctx.run(body) replaces the chain for the extent of body, then the
//     caller's own chain is back [FL-3.5] [FL-3.6].
// Every step is reported to the tracer (lib/trace.mjs) with the events of
// spec/trace-format.md section 1.2.
//
// Where a body returns a promise, the binding lasts until that promise settles,
// and where()/run() return a promise of the body's result [FL-4.7].
import { als, currentStore, makeStore } from './context.mjs';
import { emit } from './trace.mjs';
import { isPlanted } from './bugs.mjs';

class Frame {
  constructor(key, value, next) {
    this.key = key;
    this.value = value;
    this.next = next;
  }
}

// Newest frame of `key` in `chain`, or null [FL-5.5].
export function findFrame(chain, key) {
  for (let f = chain; f !== null && f !== undefined; f = f.next) {
    if (f.key === key) return f;
  }
  return null;
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

// Runs `body` under `store`; calls `after(threw)` when it ends (synchronously,
// or when the returned promise settles).
function runScoped(store, body, after) {
  let result;
  try {
    result = als.run(store, body);
  } catch (e) {
    after(true, e);
    throw e;
  }
  if (!isThenable(result)) {
    after(false);
    return result;
  }
  return Promise.resolve(result).then(
    (v) => { after(false); return v; },
    (e) => { after(true, e); throw e; });
}

export class UnboundFiberLocal extends Error {
  constructor(name) {
    super(`FiberLocal '${name}' is unbound here: use tryGet()/orElse(), or carry the bindings ` +
          `across a handoff with FiberContext.capture() and ctx.run() [FL-4.2] [FL-8.3]`);
    this.name = 'UnboundFiberLocal';
  }
}

export class FiberLocal {
  // `name` is the key's id in the trace (`key` field) and in diagnostics [FL-4.1].
  constructor(name) {
    this.keyName = String(name);
  }

  // Binds `value` for the dynamic extent of `body` [FL-3.1]. `value` must not
  // be undefined (undefined is what tryGet() answers for "unbound").
  where(value, body) {
    if (value === undefined) throw new TypeError(`FiberLocal '${this.keyName}': cannot bind undefined`);
    const outer = currentStore();
    const inner = makeStore(outer?.fiber, new Frame(this, value, outer?.chain ?? null),
                            outer?.tracer ?? null, outer?.turn ?? null);
    emit('fl.bind', { key: this.keyName, value });
    return runScoped(inner, body, (threw) => {
      if (threw && outer && isPlanted('restore')) {
        // mutant: [FL-3.1] the binding survives the throw in the caller's
        // context (a store mutated in place), while the trace says restored.
        outer.chain = inner.chain;
      }
      emit('fl.restore', { key: this.keyName });
    });
  }

  // The innermost binding, or undefined when unbound [FL-4.5]. `op` names the
  // scenario operation in the trace's fl.read event.
  tryGet({ op } = {}) {
    const frame = findFrame(currentStore()?.chain ?? null, this);
    const seen = frame ? { key: this.keyName, value: frame.value } : { key: this.keyName, unbound: true };
    if (op !== undefined) seen.op = op;
    emit('fl.read', seen);
    return frame ? frame.value : undefined;
  }

  // The innermost binding; throws UnboundFiberLocal naming the key [FL-4.2].
  get(opts) {
    const v = this.tryGet(opts);
    if (v === undefined) throw new UnboundFiberLocal(this.keyName);
    return v;
  }

  orElse(fallback, opts) {
    const v = this.tryGet(opts);
    return v === undefined ? fallback : v;
  }

  isBound() {
    return findFrame(currentStore()?.chain ?? null, this) !== null;
  }
}

let contextCounter = 0;

// An immutable snapshot of every live binding [FL-3.5] [FL-6.4].
export class FiberContext {
  constructor(chain, id, marker = null) {
    this.chain = chain;
    this.id = id;
    this.marker = marker;  // null, except with the planted bug capture-marker
  }

  // `id` names the snapshot in the trace (`ctx`); one is made up if absent.
  static capture({ id } = {}) {
    const ctxId = id ?? `ctx#${++contextCounter}`;
    emit('fl.capture', { ctx: ctxId });
    const store = currentStore();
    // mutant (capture-marker): [FL-3.8] the snapshot keeps the lane marker, as a
    // port whose marker is a binding naming the lane would (lib/lane.mjs honours it).
    const turn = store?.turn;
    const marker = isPlanted('capture-marker') && turn ? { lane: turn.lane, carried: true } : null;
    return new FiberContext(store?.chain ?? null, ctxId, marker);
  }

  // Runs `body` with this snapshot as the whole chain (no merge), then the
  // running fiber's own bindings are back [FL-3.6].
  run(body) {
    const outer = currentStore();
    // The bindings are replaced; the fiber, and the lane turn it may be in, are
    // not [FL-3.8]. mutant (install-marker): the turn is dropped with the bindings.
    let turn = isPlanted('install-marker') ? null : (outer?.turn ?? null);
    if (this.marker !== null) turn = this.marker;  // mutant (capture-marker)
    const inner = makeStore(outer?.fiber, this.chain, outer?.tracer ?? null, turn);
    emit('fl.install', { ctx: this.id });
    return runScoped(inner, body, () => emit('fl.uninstall', { ctx: this.id }));
  }
}

function fiberStore(fiberId, chain) {
  return makeStore(fiberId, chain, currentStore()?.tracer ?? null);
}

// Starts a structured child fiber `fiberId` running `body` now; it sees the
// caller's bindings as they are at this call [FL-3.2]. Returns the child's
// promise: the caller joins it.
export function spawn(fiberId, body) {
  emit('fiber.spawn', { child: fiberId, structured: true });
  const store = fiberStore(fiberId, currentStore()?.chain ?? null);
  return als.run(store, async () => body());
}

// Starts an unstructured fiber `fiberId` (a handoff): no bindings [FL-3.4],
// and its start is posted, so not even its synchronous prefix runs inside the
// caller (or inside the caller's lane turn) [LANE-6.2]. Returns its promise.
// (Children of either kind start outside any lane turn: the store's `turn` is
// null, so a child is never "on the lane" of its parent's turn.)
export function detach(fiberId, body) {
  emit('fiber.spawn', { child: fiberId, structured: false });
  const store = fiberStore(fiberId, null);
  return new Promise((resolve, reject) => {
    als.run(store, () => setImmediate(() => {
      Promise.resolve().then(body).then(resolve, reject);
    }));
  });
}

// Runs `body` as a root fiber `fiberId`: no bindings, events to `tracer`.
// Used by harnesses; emits no spawn (a root has no parent in the trace).
export function runRoot(fiberId, tracer, body) {
  return als.run(makeStore(fiberId, null, tracer), async () => body());
}
