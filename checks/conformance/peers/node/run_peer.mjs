#!/usr/bin/env node
// run_peer.mjs: runs turnstile-oracle's generated scenarios on a real npm
// library put behind the Node port's harness (checks/conformance/ports/node,
// lib/execute.mjs with `surfaces`), has the oracle check every trace (serve
// mode), and prints the library's classification: per rule, in how many
// scenarios it is broken as a root and as a consequence, with a witness (the
// scenario, its trace lines, the oracle's message).
//
//   node run_peer.mjs --peer P --oracle PATH [--seed S] [--count N]
//        [--contract C[,C]] [--out DIR] [--expect FILE] [--json FILE]
// Peers (the adapters say how each operation is mapped):
//   turnstile    the reference core: each scenario through `ORACLE run`
//   node-port    the Node port itself (no surface swapped)
//   p-queue      lanes.mjs PQueueLane (concurrency 1), the port's FiberLocal
//   async-mutex  lanes.mjs AsyncMutexLane, the port's FiberLocal
//   als          als.mjs: AsyncLocalStorage alone as FiberLocal/FiberContext,
//                spawn and detach (fiber-local scenarios: no lane)
//   p-queue+als, async-mutex+als   the lane of the first with the
//                fiber-local surface of the second (mixed scenarios)
// --expect FILE: the classification the peer must have (expected/*.json):
//   {"impl": "prefix of the impl string (the library's version)",
//    "roots": {RULE: {"witness": "regex", "why": "..."}},
//    "consequences": {RULE: {"witness": "regex", "why": "..."}}}:
//   exactly these rules broken as roots (in some scenario), exactly these
//   broken only as consequences, each with a violation whose message matches
//   its regex; every other rule is met on every scenario. Exit 0 when it
//   holds, 1 when not (what differs is printed), 2 on a usage or oracle
//   error. Without --expect: print, exit 0.
// --directed NAME: instead of the generated scenarios, one hand-made run of
// directed.mjs (a lane peer; --contract is then only a label).
// --out DIR keeps every trace and scenario (SCENARIO.trace.jsonl, .scenario.json); --json FILE writes the
// classification (for the conformance matrix, make_matrix.mjs).
//
// The ctests (CMakeLists.txt) assert each peer's classification: what it meets
// (one turn at a time, FIFO; bindings scoped, inherited, restored) and what it
// breaks (reentrancy refused at the call, a closed state, a lane turn's
// bindings from its submitter, a handoff that carries nothing).
// spec: [LANE-5.1] [LANE-5.2] [LANE-5.3] [LANE-7.4] [LANE-7.6] [FL-3.4] [FL-3.9] [TRACE-3.1]
// ctest: conformance.peers.node.*
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { executeScenario, unsupportedReason } from '../../ports/node/lib/execute.mjs';
import { IMPL as NODE_PORT_IMPL } from '../../ports/node/lib/trace.mjs';
import { ServeSession, PROTOCOL } from '../../ports/node/lib/oracle.mjs';
import { usageError, parseOptions, safeName } from '../../ports/node/lib/cli.mjs';
import { PQueueLane, AsyncMutexLane } from './lanes.mjs';
import { ALS_SURFACES } from './als.mjs';
import { DIRECTED } from './directed.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const version = (pkg) => JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', pkg, 'package.json'), 'utf8')).version;

const PEERS = {
  // The two implementations written for the contracts, classified the same
  // way for the conformance matrix: turnstile itself (`turnstile-oracle run`,
  // every contract) and the Node port (its own lane and fiber-local).
  turnstile: () => ({ impl: 'turnstile-cpp (turnstile-oracle run)', reference: true }),
  'node-port': () => ({ impl: NODE_PORT_IMPL, surfaces: {} }),
  'p-queue': () => ({ impl: `p-queue ${version('p-queue')} (concurrency 1)`, surfaces: { StateLane: PQueueLane } }),
  'async-mutex': () => ({ impl: `async-mutex ${version('async-mutex')} (Mutex.runExclusive)`, surfaces: { StateLane: AsyncMutexLane } }),
  als: () => ({ impl: `AsyncLocalStorage (node ${process.version})`, surfaces: ALS_SURFACES }),
  // The stacks a Node service runs: a queue or a mutex with AsyncLocalStorage
  // for the request's bindings (langchain-ai/langchainjs#11657 is p-queue's).
  'p-queue+als': () => ({
    impl: `p-queue ${version('p-queue')} (concurrency 1) with AsyncLocalStorage (node ${process.version})`,
    surfaces: { ...ALS_SURFACES, StateLane: PQueueLane },
  }),
  'async-mutex+als': () => ({
    impl: `async-mutex ${version('async-mutex')} (Mutex.runExclusive) with AsyncLocalStorage (node ${process.version})`,
    surfaces: { ...ALS_SURFACES, StateLane: AsyncMutexLane },
  }),
};

const usage = (msg) => usageError(import.meta.url, msg);

const opts = parseOptions(import.meta.url, {
  peer: { type: 'string' }, oracle: { type: 'string' },
  seed: { type: 'string', default: '1' }, count: { type: 'string', default: '200' },
  contract: { type: 'string', default: 'lane' }, out: { type: 'string' },
  expect: { type: 'string' }, json: { type: 'string' },
  'timeout-ms': { type: 'string', default: '2000' },
  directed: { type: 'string' },
});
if (!PEERS[opts.peer]) usage(`--peer: one of ${Object.keys(PEERS).join(', ')}`);
if (!opts.oracle) usage('--oracle PATH is needed');
if (opts.directed && !DIRECTED[opts.directed]) usage(`--directed: one of ${Object.keys(DIRECTED).join(', ')}`);
if (opts.directed && !isLanePeer(opts.peer)) usage('--directed runs a lane peer');
function isLanePeer(p) {
  return p === 'p-queue' || p === 'async-mutex';
}
const contracts = opts.contract.split(',').map((c) => c.trim()).filter(Boolean);
const peer = PEERS[opts.peer]();

async function classify() {
  const session = new ServeSession(opts.oracle);
  const hello = await session.call('hello', { protocol: PROTOCOL, port: peer.impl });
  if (hello.trace_format !== 1) throw new Error(`the oracle writes trace format ${hello.trace_format}`);
  const { scenarios } = opts.directed ? { scenarios: [{ directed: opts.directed }] } : await session.call('scenarios', {
    seed: Number(opts.seed), count: Number(opts.count), contract: contracts,
  });
  const outDir = opts.out ? path.resolve(opts.out) : null;
  if (outDir) fs.mkdirSync(outDir, { recursive: true });
  const result = {
    peer: opts.peer, impl: peer.impl, contracts, seed: Number(opts.seed), count: Number(opts.count),
    run: 0, skipped: 0, pass: 0, fail: 0, unusable: 0, timeouts: 0, harness: [], rules: {},
  };
  const checks = [];
  function record(sc, resp, traceFile) {
    if (resp.ok !== true) {
      result.unusable += 1;
      result.harness.push(`${sc.scenario}: unusable: ${resp.error?.message}`);
      return;
    }
    result[resp.verdict === 'pass' ? 'pass' : 'fail'] += 1;
    const seen = new Set();
    for (const v of resp.violations ?? []) {
      const kind = v.consequence_of ? 'consequence' : 'root';
      const e = (result.rules[v.rule] ??= { root: 0, consequence: 0, witness: {} });
      if (!e.witness[kind]) {
        e.witness[kind] = { scenario: sc.scenario, trace: traceFile, lines: v.lines, message: v.message };
      }
      (e.messages ??= new Set()).add(`${kind}: ${v.message}`);
      if (seen.has(`${kind}:${v.rule}`)) continue;  // count scenarios, not violations
      seen.add(`${kind}:${v.rule}`);
      e[kind] += 1;
    }
  }
  for (const sc of scenarios) {
    if (sc.directed) {
      const r = await DIRECTED[sc.directed](peer.surfaces.StateLane, peer.impl);
      sc.scenario = r.id;
      result.run += 1;
      if (r.status === 'timeout') result.timeouts += 1;
      if (outDir) fs.writeFileSync(path.join(outDir, `${r.id}.trace.jsonl`), r.trace);
      checks.push(session.request('check', { trace: r.trace }).then((resp) => record(sc, resp, outDir ? path.join(outDir, `${r.id}.trace.jsonl`) : null)));
      continue;
    }
    if (peer.reference) {
      result.run += 1;
      const dir = outDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'run_peer-'));
      const base = path.join(dir, safeName(sc.scenario));
      fs.writeFileSync(`${base}.scenario.json`, JSON.stringify(sc) + '\n');
      execFileSync(opts.oracle, ['run', `${base}.scenario.json`, '-o', `${base}.trace.jsonl`]);
      const trace = fs.readFileSync(`${base}.trace.jsonl`, 'utf8');
      checks.push(session.request('check', { trace, scenario: sc }).then((resp) => record(sc, resp, outDir ? `${base}.trace.jsonl` : null)));
      continue;
    }
    if (unsupportedReason(sc)) {
      result.skipped += 1;
      continue;
    }
    result.run += 1;
    const r = await executeScenario(sc, { timeoutMs: Number(opts['timeout-ms']), impl: peer.impl, surfaces: peer.surfaces });
    if (r.status === 'timeout') result.timeouts += 1;
    for (const p of r.problems) result.harness.push(`${sc.scenario}: ${p}`);
    const traceFile = outDir ? path.join(outDir, `${safeName(sc.scenario)}.trace.jsonl`) : null;
    if (traceFile) {
      fs.writeFileSync(traceFile, r.trace);
      fs.writeFileSync(path.join(outDir, `${safeName(sc.scenario)}.scenario.json`), JSON.stringify(sc) + '\n');
    }
    checks.push(session.request('check', { trace: r.trace, scenario: sc }).then((resp) => record(sc, resp, traceFile)));
  }
  await Promise.all(checks);
  await session.bye().catch(() => {});
  return result;
}

function compare(result, expected) {
  const problems = [];
  if (!result.impl.startsWith(expected.impl)) problems.push(`the library is '${result.impl}', expected '${expected.impl}...'`);
  const broken = (kind) => Object.keys(result.rules).filter((r) => result.rules[r][kind] > 0)
    .filter((r) => kind === 'root' || result.rules[r].root === 0).sort();
  for (const [kind, key] of [['root', 'roots'], ['consequence', 'consequences']]) {
    const want = Object.keys(expected[key] ?? {}).sort();
    const got = broken(kind);
    for (const r of got) if (!want.includes(r)) problems.push(`${r} is broken as a ${kind}, not expected (${result.rules[r].witness[kind].message})`);
    for (const r of want) {
      if (!got.includes(r)) {
        problems.push(`${r} was expected broken as a ${kind}, and is not`);
        continue;
      }
      const re = new RegExp(expected[key][r].witness);
      const msgs = [...result.rules[r].messages].filter((m) => m.startsWith(`${kind}: `));
      if (!msgs.some((m) => re.test(m.slice(kind.length + 2)))) {
        problems.push(`${r}: no ${kind} message matches /${expected[key][r].witness}/ (e.g. ${msgs[0]})`);
      }
    }
  }
  if (result.unusable > 0 || result.harness.length > 0) problems.push(`harness or unusable traces: ${result.harness.slice(0, 3).join('; ')}`);
  if (result.run === 0) problems.push('no scenario was run');
  return problems;
}

function print(result) {
  const w = (s) => process.stdout.write(`${s}\n`);
  w(`peer: ${result.impl}; contracts ${result.contracts.join(',')}, seed ${result.seed}, count ${result.count}`);
  w(`scenarios: ${result.run} run, ${result.skipped} skipped; ${result.pass} pass, ${result.fail} fail, ` +
    `${result.unusable} unusable, ${result.timeouts} timed out`);
  w('rules broken (scenarios as root / as consequence only of another):');
  for (const [rule, e] of Object.entries(result.rules).sort()) {
    const wit = e.witness.root ?? e.witness.consequence;
    w(`  ${rule.padEnd(10)} ${String(e.root).padStart(4)} / ${String(e.consequence).padStart(4)}  ` +
      `e.g. ${wit.scenario} lines ${wit.lines.join(',')}: ${wit.message}`);
  }
  if (Object.keys(result.rules).length === 0) w('  none');
  for (const h of result.harness.slice(0, 5)) w(`harness: ${h}`);
}

classify().then((result) => {
  print(result);
  if (opts.json) {
    const out = { ...result, rules: Object.fromEntries(Object.entries(result.rules).map(([r, e]) => [r, { ...e, messages: [...e.messages] }])) };
    fs.writeFileSync(opts.json, JSON.stringify(out, null, 1) + '\n');
  }
  if (!opts.expect) return 0;
  const problems = compare(result, JSON.parse(fs.readFileSync(opts.expect, 'utf8')));
  for (const p of problems) process.stdout.write(`MISMATCH: ${p}\n`);
  process.stdout.write(problems.length ? `FAIL: the classification differs from ${opts.expect}\n` : `PASS: the classification is ${opts.expect}\n`);
  return problems.length ? 1 : 0;
}, (e) => {
  process.stderr.write(`run_peer.mjs: ${e?.stack ?? e}\n`);
  return 2;
}).then((code) => process.exit(code));
