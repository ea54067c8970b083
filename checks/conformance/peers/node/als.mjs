// als.mjs: Node's AsyncLocalStorage alone behind the Node harness's
// fiber-local surface (FiberLocal, FiberContext, spawn, detach of
// checks/conformance/ports/node/lib/execute.mjs). It adds no rule; each
// operation is the plain AsyncLocalStorage idiom, reported with the events of
// spec/trace-format.md section 1.2:
//   key.where(v, body)  one AsyncLocalStorage per key, storage.run({ value: v },
//                       body): fl.bind, then fl.restore when body returns or
//                       throws (or its promise settles);
//   key.tryGet()        storage.getStore(): fl.read of what it saw;
//   spawn(fiber, body)  a structured child is an async function called here:
//                       it inherits the caller's context;
//   detach(fiber, body) a handoff is setImmediate(body), the usual way to start
//                       work that does not belong to the caller; AsyncLocalStorage
//                       carries the caller's context into it, as into every timer,
//                       immediate and microtask;
//   capture / install   AsyncLocalStorage.snapshot() and calling the snapshot
//                       with body.
// The harness's own store (the fiber id and the tracer, lib/context.mjs) is one
// more AsyncLocalStorage; a snapshot restores it too, so install re-enters the
// installing fiber's harness store inside the snapshot: only the bindings come
// from the snapshot, as the surface means.
//
import { AsyncLocalStorage } from 'node:async_hooks';
import { als, currentStore, makeStore } from '../../ports/node/lib/context.mjs';
import { emit } from '../../ports/node/lib/trace.mjs';

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') &&
  typeof v.then === 'function';

// Runs body() and calls after() when it ends: at once, or when its promise settles.
function scoped(body, after) {
  let r;
  try {
    r = body();
  } catch (e) {
    after();
    throw e;
  }
  if (!isThenable(r)) {
    after();
    return r;
  }
  return Promise.resolve(r).then((v) => { after(); return v; }, (e) => { after(); throw e; });
}

export class AlsFiberLocal {
  constructor(name) {
    this.keyName = String(name);
    this.storage = new AsyncLocalStorage();
  }

  where(value, body) {
    emit('fl.bind', { key: this.keyName, value });
    return scoped(() => this.storage.run({ value }, body), () => emit('fl.restore', { key: this.keyName }));
  }

  tryGet({ op } = {}) {
    const held = this.storage.getStore();
    const seen = held ? { key: this.keyName, value: held.value } : { key: this.keyName, unbound: true };
    if (op !== undefined) seen.op = op;
    emit('fl.read', seen);
    return held ? held.value : undefined;
  }
}

export class AlsFiberContext {
  constructor(snapshot, id) {
    this.snapshot = snapshot;
    this.id = id;
  }

  static capture({ id }) {
    emit('fl.capture', { ctx: id });
    return new AlsFiberContext(AsyncLocalStorage.snapshot(), id);
  }

  run(body) {
    const harness = currentStore();
    emit('fl.install', { ctx: this.id });
    return scoped(() => this.snapshot(() => als.run(harness, body)),
                  () => emit('fl.uninstall', { ctx: this.id }));
  }
}

function childStore(fiberId) {
  const s = currentStore();
  return makeStore(fiberId, null, s?.tracer ?? null);
}

export function alsSpawn(fiberId, body) {
  emit('fiber.spawn', { child: fiberId, structured: true });
  return als.run(childStore(fiberId), async () => body());
}

export function alsDetach(fiberId, body) {
  emit('fiber.spawn', { child: fiberId, structured: false });
  return new Promise((resolve, reject) => {
    als.run(childStore(fiberId), () => setImmediate(() => {
      Promise.resolve().then(body).then(resolve, reject);
    }));
  });
}

export const ALS_SURFACES = Object.freeze({
  FiberLocal: AlsFiberLocal, FiberContext: AlsFiberContext, spawn: alsSpawn, detach: alsDetach,
});
