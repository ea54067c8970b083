// lib/selfcheck.mjs: the port's own sanity check of the traces it writes, for
// use before (or without) turnstile-oracle: the format of spec/trace-format.md
// section 1 (header, seq, end marker, the event tables) and a few of the
// section 5 checks (lane order and exclusion, reentrancy, closing, resumption,
// and a model of fiber-local bindings). It is NOT the oracle: the oracle is
// the judge, this only lets a port author see a broken trace early, and lets
// the port's unit tests run when no oracle is built.
const ID = 'id';
const BOOL = 'bool';
const JSONV = 'json';
const EVENTS = {
  'lane.submit': { lane: ID, item: ID, op: ['run', 'post'] },
  'lane.accepted': { lane: ID, item: ID },
  'lane.refused': { lane: ID, item: ID, reason: ['reentrant', 'closed'] },
  'lane.turn_start': { lane: ID, item: ID },
  'lane.turn_end': { lane: ID, item: ID, outcome: ['ok', 'error'] },
  'lane.resumed': { lane: ID, item: ID, outcome: ['ok', 'error'] },
  'lane.close_requested': { lane: ID },
  'lane.drained': { lane: ID },
  'lane.close_returned': { lane: ID },
  'lane.dropped': { lane: ID, item: ID },
  'fiber.spawn': { child: ID, structured: BOOL },
  'fl.bind': { key: ID, value: JSONV },
  'fl.restore': { key: ID },
  'fl.read': { key: ID },
  'fl.capture': { ctx: ID },
  'fl.install': { ctx: ID },
  'fl.uninstall': { ctx: ID },
  'turn.call': { act: ID, call: ID, method: ID, mode: ['serial', 'interleaved'] },
  'turn.refused': { act: ID, call: ID, reason: ['self-call'] },
  'turn.start': { act: ID, call: ID },
  'turn.end': { act: ID, call: ID, outcome: ['ok', 'error'] },
  'turn.await_abandoned': { act: ID, call: ID },
  'turn.task_start': { act: ID, task: ID },
  'turn.reentry': { act: ID, call: ID, task: ID },
};

function typeOk(kind, v) {
  if (kind === ID) return typeof v === 'string' && v.length > 0;
  if (kind === BOOL) return typeof v === 'boolean';
  if (kind === JSONV) return v === null || ['string', 'number', 'boolean'].includes(typeof v);
  return kind.includes(v);
}

// Format errors of `text`: [{ line, message }] (empty when well formed), and
// the parsed events.
export function parseTrace(text) {
  const errors = [];
  const events = [];
  const raw = text.endsWith('\n') ? text.slice(0, -1) : text;
  const lines = raw.split('\n');
  lines.forEach((l, i) => {
    const line = i + 1;
    let e;
    try {
      e = JSON.parse(l.endsWith('\r') ? l.slice(0, -1) : l);
    } catch (err) {
      errors.push({ line, message: `not JSON: ${err.message}` });
      return;
    }
    if (e === null || typeof e !== 'object' || Array.isArray(e)) {
      errors.push({ line, message: 'not a JSON object' });
      return;
    }
    if (e.seq !== line) errors.push({ line, message: `field 'seq': ${e.seq}, expected ${line}` });
    if (typeof e.ev !== 'string') errors.push({ line, message: "field 'ev': missing" });
    else if (line === 1 && e.ev !== 'trace') errors.push({ line, message: "line 1 is not the 'trace' header" });
    else if (e.ev === 'trace') {
      if (line !== 1) errors.push({ line, message: "'trace' header after line 1" });
      if (e.format !== 1) errors.push({ line, message: `field 'format': ${e.format}` });
      if (typeof e.impl !== 'string') errors.push({ line, message: "field 'impl': missing" });
    } else if (e.ev === 'end') {
      if (line !== lines.length) errors.push({ line, message: "'end' is not the last line" });
      if (!['quiescent', 'timeout'].includes(e.status)) errors.push({ line, message: `field 'status': ${e.status}` });
    } else if (!EVENTS[e.ev]) {
      errors.push({ line, message: `unknown event '${e.ev}'` });
    } else {
      if (!typeOk(ID, e.fiber)) errors.push({ line, message: "field 'fiber': missing or not an id" });
      for (const [f, kind] of Object.entries(EVENTS[e.ev])) {
        if (!typeOk(kind, e[f])) errors.push({ line, message: `field '${f}': ${JSON.stringify(e[f])}` });
      }
      if (e.ev === 'fl.read' && !(e.unbound === true || (e.value !== undefined && typeOk(JSONV, e.value)))) {
        errors.push({ line, message: "fl.read needs 'value' or 'unbound: true'" });
      }
    }
    events.push({ ...e, line });
  });
  if (events.length === 0 || events[events.length - 1].ev !== 'end') {
    errors.push({ line: lines.length, message: "no 'end' marker: truncated trace" });
  }
  return { errors, events };
}

// A few rule checks on a well-formed trace: [{ rule, lines, message }].
export function checkTrace(events) {
  const v = [];
  const bad = (rule, lines, message) => v.push({ rule, lines, message });
  const lanes = new Map();
  const lane = (name) => {
    if (!lanes.has(name)) {
      lanes.set(name, { accepted: [], started: new Set(), ended: new Map(), open: null,
                        closed: false, drained: null, submits: new Map() });
    }
    return lanes.get(name);
  };
  const onLane = (l, fiber) => l.open !== null && l.open.fiber === fiber;
  // Fiber-local model: per fiber a stack of chains; a chain is a persistent list.
  const fibers = new Map();
  const ctxs = new Map();
  const stackOf = (f) => {
    if (!fibers.has(f)) fibers.set(f, [{ chain: null, kind: 'base' }]);
    return fibers.get(f);
  };
  const lookup = (chain, key) => {
    for (let c = chain; c; c = c.next) if (c.key === key) return c;
    return null;
  };
  // fl.restore / fl.uninstall (`what`): it ends its fiber's innermost frame,
  // which must be a `kind` frame of the same `field` (key, ctx); else `rule`.
  const endInnermost = (e, what, kind, field, rule) => {
    const s = stackOf(e.fiber);
    const top = s[s.length - 1];
    if (top.kind !== kind || top[field] !== e[field]) bad(rule, [e.line], `${what} of ${e[field]} does not end the innermost ${kind}`);
    else s.pop();
  };
  for (const e of events) {
    switch (e.ev) {
      case 'lane.submit':
        lane(e.lane).submits.set(e.item, { e, onLane: onLane(lane(e.lane), e.fiber), answered: false });
        break;
      case 'lane.accepted': {
        const l = lane(e.lane);
        const s = l.submits.get(e.item);
        if (s) s.answered = true;
        if (s && s.e.op === 'run' && s.onLane) bad('LANE-5.3', [s.e.line, e.line], `run ${e.item} from the lane's own turn was accepted`);
        if (l.closed) bad('LANE-7.4', [e.line], `${e.item} accepted after close was requested`);
        l.accepted.push(e);
        break;
      }
      case 'lane.refused': {
        const l = lane(e.lane);
        const s = l.submits.get(e.item);
        if (s) s.answered = true;
        if (e.reason === 'reentrant' && !(s && s.onLane)) bad('LANE-8.7', [e.line], `${e.item} refused as reentrant off the lane`);
        if (e.reason === 'closed' && !l.closed) bad('LANE-7.4', [e.line], `${e.item} refused as closed before any close`);
        break;
      }
      case 'lane.turn_start': {
        const l = lane(e.lane);
        if (l.open) bad('LANE-5.1', [l.open.line, e.line], `${e.item} starts while ${l.open.item} is open`);
        if (l.drained) bad('LANE-7.6', [l.drained.line, e.line], `${e.item} starts after the lane drained`);
        const next = l.accepted.find((a) => !l.started.has(a.item));
        if (!l.accepted.some((a) => a.item === e.item)) bad('LANE-8.1', [e.line], `${e.item} runs unaccepted`);
        else if (next && next.item !== e.item) bad('LANE-5.2', [next.line, e.line], `${e.item} starts before ${next.item}, accepted earlier`);
        l.started.add(e.item);
        l.open = e;
        break;
      }
      case 'lane.turn_end': {
        const l = lane(e.lane);
        l.ended.set(e.item, e);
        if (l.open && l.open.item === e.item) l.open = null;
        break;
      }
      case 'lane.resumed': {
        const l = lane(e.lane);
        const end = l.ended.get(e.item);
        if (!end) bad('LANE-5.6', [e.line], `${e.item} resumed before its turn ended`);
        else if (end.outcome !== 'dropped' && end.outcome !== e.outcome) bad('LANE-7.5', [end.line, e.line], `${e.item} turn ${end.outcome}, resumed ${e.outcome}`);
        if (onLane(l, e.fiber)) bad('LANE-5.6', [e.line], `${e.item} resumed on the lane`);
        break;
      }
      case 'lane.close_requested':
        lane(e.lane).closed = true;
        break;
      case 'lane.drained': {
        const l = lane(e.lane);
        if (!l.closed) bad('LANE-7.6', [e.line], 'drained without a close request');
        for (const a of l.accepted) if (!l.ended.has(a.item)) bad('LANE-7.6', [a.line, e.line], `drained before ${a.item} ran`);
        l.drained = e;
        break;
      }
      case 'lane.dropped': {  // optional: accepted work lost (the oracle: one LANE-8.1 root)
        const l = lane(e.lane);
        bad('LANE-8.1', [e.line], `${e.item} was dropped before its turn`);
        l.accepted = l.accepted.filter((a) => a.item !== e.item);
        l.ended.set(e.item, { line: e.line, outcome: 'dropped' });
        break;
      }
      case 'lane.close_returned':
        if (!lane(e.lane).drained) bad('LANE-7.6', [e.line], 'close returned before the lane drained');
        break;
      case 'fiber.spawn': {
        const parent = stackOf(e.fiber);
        fibers.set(e.child, [{ chain: e.structured ? parent[parent.length - 1].chain : null, kind: 'base' }]);
        break;
      }
      case 'fl.bind': {
        const s = stackOf(e.fiber);
        s.push({ kind: 'bind', key: e.key, chain: { key: e.key, value: e.value, next: s[s.length - 1].chain } });
        break;
      }
      case 'fl.restore':
        endInnermost(e, 'restore', 'bind', 'key', 'FL-3.1');
        break;
      case 'fl.capture':
        ctxs.set(e.ctx, stackOf(e.fiber)[stackOf(e.fiber).length - 1].chain);
        break;
      case 'fl.install':
        stackOf(e.fiber).push({ kind: 'install', ctx: e.ctx, chain: ctxs.get(e.ctx) ?? null });
        break;
      case 'fl.uninstall':
        endInnermost(e, 'uninstall', 'install', 'ctx', 'FL-3.6');
        break;
      case 'fl.read': {
        const s = stackOf(e.fiber);
        const f = lookup(s[s.length - 1].chain, e.key);
        const want = f ? JSON.stringify(f.value) : 'unbound';
        const got = e.unbound ? 'unbound' : JSON.stringify(e.value);
        if (want !== got) {
          const rule = s.some((x) => x.kind === 'install') ? 'FL-3.5' : 'FL-3.1';
          bad(rule, [e.line], `read of ${e.key} saw ${got}, the fiber's bindings say ${want}`);
        }
        break;
      }
      default:
        break;
    }
  }
  for (const [name, l] of lanes) {
    for (const a of l.accepted) if (!l.ended.has(a.item)) bad('LANE-8.1', [a.line], `${name}: accepted ${a.item} never ran`);
    for (const [item, s] of l.submits) {
      if (!s.answered && s.e.op === 'run' && s.onLane) bad('LANE-8.4', [s.e.line], `${name}: reentrant run ${item} left waiting`);
    }
  }
  return v;
}

// Outcomes of a scenario's operations as the trace shows them, checked against
// their `expect` lists: [{ rule, lines, message }].
export function checkExpectations(sc, events) {
  const v = [];
  const outcome = new Map();
  const lineOf = new Map();
  for (const e of events) {
    if (e.ev === 'lane.refused') { outcome.set(e.item, `refused:${e.reason}`); lineOf.set(e.item, e.line); }
    if (e.ev === 'lane.accepted' && !outcome.has(e.item)) { outcome.set(e.item, 'accepted'); lineOf.set(e.item, e.line); }
    if (e.ev === 'lane.resumed') { outcome.set(e.item, e.outcome); lineOf.set(e.item, e.line); }
    if (e.ev === 'fl.read' && e.op) { outcome.set(e.op, e.unbound ? null : e.value); lineOf.set(e.op, e.line); }
  }
  const walk = (ops) => {
    for (const op of ops ?? []) {
      if (Array.isArray(op.expect) && outcome.has(op.id)) {
        let got = outcome.get(op.id);
        if (op.do === 'run' && got === 'accepted') got = '(no resume)';
        const ok = op.expect.some((x) => JSON.stringify(x) === JSON.stringify(got));
        if (!ok) v.push({ rule: op.rule ?? 'expect', lines: [lineOf.get(op.id)], message: `op ${op.id}: outcome ${JSON.stringify(got)} not in ${JSON.stringify(op.expect)}` });
      }
      walk(op.body);
    }
  };
  for (const f of sc.fibers ?? []) walk(f.ops);
  return v;
}
