// lib/context.mjs: the one AsyncLocalStorage every part of the port reads.
//
// A store is an immutable record { fiber, chain, tracer, turn }:
//   fiber   the logical fiber id (spec/trace-format.md: the `fiber` field);
//   chain   the newest binding frame of the fiber-local chain, or null;
//   tracer  where this fiber's events go (lib/trace.mjs), or null;
//   turn    the lane marker: the token of the lane turn this code runs in, or
//           null (lib/lane.mjs). It sits beside the bindings, not among them,
//           so FiberContext.run() inside a turn (which replaces the bindings)
//           does not hide it, and a context captured in a turn does not carry it.
// A store is never mutated once made: binding makes a new store for the extent
// of the body (AsyncLocalStorage.run), and async work started inside inherits
// the store it was started in. That is what gives structured children the
// parent's bindings at the spawn ([FL-3.2]) and keeps a child's binds private
// ([FL-3.3]) without copying anything.
import { AsyncLocalStorage } from 'node:async_hooks';

export const als = new AsyncLocalStorage();

// Fiber id of code that runs outside any scenario fiber (the harness itself).
export const MAIN_FIBER = 'main';

export function currentStore() {
  return als.getStore();
}

export function currentFiber() {
  return als.getStore()?.fiber ?? MAIN_FIBER;
}

export function makeStore(fiber, chain, tracer, turn = null) {
  return { fiber, chain, tracer, turn };
}
