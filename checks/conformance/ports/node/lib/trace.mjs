// lib/trace.mjs: writes the port's trace as spec/trace-format.md section 1
// defines it: JSON Lines, a `trace` header on line 1, `seq` 1, 2, 3... in the
// order the port observed the events, the emitting fiber on every event but
// the header and the end marker, and an `end` marker as the last line.
//
// Node runs JavaScript on one thread, so the order of emit() calls is the
// observed order: an event that happened-before another is emitted first.
// A Tracer is per scenario and is carried in the async context (lib/context.mjs),
// so late events of a scenario that timed out never land in the next one's
// trace: once end() is written the tracer is sealed and counts them instead.
import { als, MAIN_FIBER } from './context.mjs';

export const TRACE_FORMAT = 1;
export const IMPL = `turnstile-node-port 0.1 (node ${process.version})`;

export class Tracer {
  constructor({ scenario = undefined, scheduleSeed = undefined, impl = IMPL } = {}) {
    this.lines = [];
    this.seq = 0;
    this.sealed = false;
    this.lateEvents = 0;  // emitted after end(): a harness bug or a timed-out scenario
    const header = { format: TRACE_FORMAT, impl };
    if (scenario !== undefined) header.scenario = scenario;
    if (scheduleSeed !== undefined) header.schedule_seed = scheduleSeed;
    this.#write('trace', undefined, header);
  }

  // One event on behalf of `fiber`. `fields` are the event's own fields.
  emit(ev, fields, fiber) {
    if (this.sealed) {
      this.lateEvents += 1;
      return;
    }
    this.#write(ev, fiber, fields);
  }

  // The end marker: "quiescent" when nothing was left to run, "timeout" when
  // the harness gave up waiting (the oracle then names the rule the hang breaks).
  end(status) {
    if (this.sealed) return;
    this.#write('end', undefined, { status });
    this.sealed = true;
  }

  text() {
    return this.lines.join('\n') + '\n';
  }

  #write(ev, fiber, fields) {
    this.seq += 1;
    const line = { seq: this.seq, ev };
    if (fiber !== undefined) line.fiber = fiber;
    Object.assign(line, fields);
    this.lines.push(JSON.stringify(line));
  }
}

// Emits on the current fiber into the current store's tracer; a no-op when
// nothing traces (the port's primitives work the same with tracing off).
export function emit(ev, fields) {
  const store = als.getStore();
  const tracer = store?.tracer;
  if (!tracer) return;
  tracer.emit(ev, fields, store.fiber ?? MAIN_FIBER);
}
