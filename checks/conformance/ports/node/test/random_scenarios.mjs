// test/random_scenarios.mjs: random scenarios in the format of
// spec/trace-format.md section 2, for the port's own tests: they exercise the
// executor on shapes the hand-written fixtures do not have (nesting, turns that
// start work on other lanes, handoffs from turns, contexts installed on other
// fibers). No `expect`s: the oracle's scenarios carry those; here the
// self-check's rule checks judge the traces.
function rng(seed) {
  let s = (seed >>> 0) || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 0x100000000;
  };
}

export function randomScenario(seed) {
  const r = rng(seed * 2654435761);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const lanes = ['L0', 'L1'].slice(0, 1 + Math.floor(r() * 2));
  const keys = ['k', 'j'];
  let n = 0;
  let fibers = 0;
  const ctxs = [];
  const id = () => `o${++n}`;
  const ops = (depth, inTurn, len) => {
    const out = [];
    for (let i = 0; i < len; i += 1) {
      const choices = ['run', 'run', 'post', 'read', 'where', 'throw', 'capture', 'detach'];
      if (!inTurn) choices.push('yield', 'yield', 'close', 'spawn');
      if (ctxs.length) choices.push('install');
      const d = depth > 2 ? pick(['read', 'throw', 'post', 'yield'].filter((x) => !inTurn || x !== 'yield')) : pick(choices);
      const op = { id: id(), do: d };
      const body = (turn) => ops(depth + 1, turn, Math.floor(r() * 3));
      switch (d) {
        case 'run': case 'post': op.lane = pick(lanes); op.body = body(true); break;
        case 'close': op.lane = pick(lanes); break;
        case 'read': op.key = pick(keys); break;
        case 'where': op.key = pick(keys); op.value = Math.floor(r() * 4); op.body = body(inTurn); break;
        case 'capture': op.ctx = `c${ctxs.length}`; ctxs.push(op.ctx); break;
        case 'install': op.ctx = pick(ctxs); op.body = body(inTurn); break;
        case 'spawn': case 'detach': op.fiber = `x${++fibers}`; op.body = body(false); break;
        default: break;
      }
      out.push(op);
    }
    return out;
  };
  const roots = [];
  const nRoots = 1 + Math.floor(r() * 3);
  for (let f = 0; f < nRoots; f += 1) roots.push({ fiber: `f${f}`, ops: ops(0, false, 2 + Math.floor(r() * 4)) });
  // An install may name a context no fiber has captured yet when it runs;
  // keep only installs whose capture comes first in the same fiber's list.
  // (Only captures at a root list's top level count: one in a body may not run.)
  const prune = (list, seen, top) => list.filter((op) => {
    if (op.do === 'capture' && top) seen.add(op.ctx);
    if (op.do === 'install' && !seen.has(op.ctx)) return false;
    if (op.body) op.body = prune(op.body, new Set(seen), false);
    return true;
  });
  for (const f of roots) f.ops = prune(f.ops, new Set(), true);
  return { scenario: `random-${seed}`, format: 1, contract: 'lane', lanes, keys, activations: [], fibers: roots };
}
