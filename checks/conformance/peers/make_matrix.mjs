#!/usr/bin/env node
// make_matrix.mjs: the conformance matrix (rule x implementation), generated
// from what the peers' ctests left in the build tree, never written by hand:
//   BUILD/checks/conformance/peers/node/*.json   run_peer.mjs --json of every
//       conformance.peers.node.* ctest (turnstile, the Node port, p-queue,
//       async-mutex, AsyncLocalStorage and the two stacks), with their traces
//       under node/traces/
//   BUILD/checks/conformance/peers/results/      every trace the C++ peers
//       (conformance.AsioStrandPeer.*, conformance.CafActorPeer.*) had the
//       oracle check, with its verdict (peer_trace.hpp)
//
//   node checks/conformance/peers/make_matrix.mjs [--build build/default] [--write]
// Prints the table; --write writes checks/conformance/peers/MATRIX.md and copies
// each witness trace to checks/conformance/peers/witnesses/ (the cells link to
// its lines). Run it after the ctests (ci/test runs them all).
//
// A cell is: broken (a root violation of the rule in some run; its witness
// linked), broken as a consequence only (of another rule's violation),
// met (the implementation's runs exercise the rule and never break it), not
// exercised (the implementation has that contract, but no run produced the
// events the rule is about), or "n/e", not expressible (no run of it has any
// event of the rule's contract: it has no such primitive). Rows: the rules
// spec/trace-format.md section 5 checks on a trace (`trace`, `expect`) and
// every rule some run broke.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const { values: opts } = parseArgs({
  options: { build: { type: 'string', default: path.join(ROOT, 'build/default') }, write: { type: 'boolean', default: false } },
});
const PEERS_BUILD = path.join(path.resolve(opts.build), 'checks/conformance/peers');

// Columns, in order; `of` tells which column a run belongs to.
const COLUMNS = [
  { key: 'turnstile', title: 'turnstile' },
  { key: 'node-port', title: 'Node port' },
  { key: 'asio', title: 'asio::strand' },
  { key: 'caf', title: 'CAF 0.17' },
  { key: 'p-queue', title: 'p-queue' },
  { key: 'async-mutex', title: 'async-mutex' },
  { key: 'als', title: 'AsyncLocalStorage' },
  { key: 'p-queue+als', title: 'p-queue + ALS' },
  { key: 'async-mutex+als', title: 'async-mutex + ALS' },
];

// The events a rule's check is about: a run exercises the rule when its traces
// have all of one alternative (`a&b`, alternatives split by `|`).
const EXERCISED_BY = {
  'LANE-5.1': 'lane.turn_start', 'LANE-5.2': 'lane.turn_start', 'LANE-8.1': 'lane.turn_start',
  'LANE-8.10': 'lane.turn_start', 'LANE-5.3': 'lane.submit:run', 'LANE-8.4': 'lane.submit:run',
  'LANE-8.7': 'lane.submit:run', 'LANE-5.6': 'lane.resumed', 'LANE-7.5': 'lane.resumed',
  'LANE-8.9': 'lane.resumed', 'LANE-7.4': 'lane.close_requested', 'LANE-7.6': 'lane.close_requested',
  'LANE-7.7': 'lane.submit:post', 'LANE-8.5': 'fiber.spawn&lane.turn_start',
  'LANE-8.6': 'fl.capture&lane.turn_start', 'LANE-8.8': 'lane.submit',
  'FL-3.1': 'fl.bind', 'FL-3.2': 'fiber.spawn:structured', 'FL-3.3': 'fiber.spawn&fl.bind',
  'FL-3.4': 'fiber.spawn:handoff', 'FL-3.5': 'fl.install', 'FL-3.6': 'fl.install',
  'FL-3.8': 'fl.install&lane.turn_start|fl.install&turn.start', 'FL-3.9': 'fl.bind&lane.turn_start|fl.bind&turn.start',
  'TURN-1.1': 'turn.await', 'TURN-7.1': 'turn.await', 'TURN-2.1': 'turn.call', 'TURN-2.2': 'turn.call',
  'TURN-3.1': 'turn.call', 'TURN-2.3': 'turn.counters', 'TURN-3.2': 'turn.call:interleaved',
  'TURN-3.3': 'turn.call:interleaved', 'TURN-4.2': 'turn.slow', 'TURN-5.2': 'turn.reentry',
};
const CONTRACT_OF = (rule) => (rule.startsWith('LANE-') ? 'lane' : rule.startsWith('FL-') ? 'fiber-local' : 'turns');
const CONTRACT_EVENT = { lane: /^lane\./, 'fiber-local': /^(fl\.|fiber\.spawn)/, turns: /^turn\./ };

function eventKeys(traceText, into) {
  for (const line of traceText.split('\n')) {
    if (!line) continue;
    let e;
    try { e = JSON.parse(line); } catch { continue; }
    into.add(e.ev);
    if (e.ev === 'lane.submit') into.add(`lane.submit:${e.op}`);
    if (e.ev === 'fiber.spawn') into.add(e.structured ? 'fiber.spawn:structured' : 'fiber.spawn:handoff');
    if (e.ev === 'turn.call' && e.mode === 'interleaved') into.add('turn.call:interleaved');
    if (e.ev === 'turn.end' && e.outcome === 'error') into.add('turn.end:error');
  }
}

// scenarioRuns: runs of generated scenarios, whose `expect`s the oracle checks
// (a rule checked only through an `expect` is exercised only there).
// The listings of directed.mjs: hand-made runs, no scenario (no `expect`).
const DIRECTED_LISTINGS = ['reentrant-await', 'clear'];
const column = () => ({ events: new Set(), broken: new Map(), runs: [], impls: new Set(), traces: 0, scenarioRuns: 0 });
const cols = new Map(COLUMNS.map((c) => [c.key, column()]));

// Keeps the first root witness of a rule (else the first consequence).
function noteBroken(col, rule, kind, witness) {
  const had = col.broken.get(rule);
  if (!had || (had.kind === 'consequence' && kind === 'root')) col.broken.set(rule, { kind, ...witness });
}

function readNodeRuns() {
  const dir = path.join(PEERS_BUILD, 'node');
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const r = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    const col = cols.get(r.peer);
    if (!col) continue;
    col.runs.push(`conformance.peers.node.${f.replace(/\.json$/, '')} (${r.run} runs)`);
    if (!DIRECTED_LISTINGS.some((d) => f.endsWith(`.${d}.json`))) col.scenarioRuns += r.run;
    col.impls.add(r.impl);
    const traces = path.join(dir, 'traces', f.replace(/\.json$/, ''));
    for (const t of fs.existsSync(traces) ? fs.readdirSync(traces).filter((n) => n.endsWith('.trace.jsonl')) : []) {
      eventKeys(fs.readFileSync(path.join(traces, t), 'utf8'), col.events);
      col.traces += 1;
    }
    for (const [rule, e] of Object.entries(r.rules)) {
      for (const kind of ['root', 'consequence']) {
        const w = e.witness[kind];
        if (w && e[kind] > 0) noteBroken(col, rule, kind, { trace: w.trace, lines: w.lines, message: w.message, scenario: w.scenario });
      }
    }
  }
}

function readCppRuns() {
  const dir = path.join(PEERS_BUILD, 'results');
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.verdict.json')).sort()) {
    const v = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    const tracePath = path.join(dir, v.trace);
    const text = fs.readFileSync(tracePath, 'utf8');
    const header = JSON.parse(text.split('\n')[0]);
    const key = header.impl.startsWith('asio::strand') ? 'asio' : header.impl.startsWith('CAF') ? 'caf' : null;
    if (!key) continue;
    const col = cols.get(key);
    col.runs.push(`${header.scenario} (${v.violations.length} violations)`);
    col.impls.add(header.impl);
    col.traces += 1;
    eventKeys(text, col.events);
    for (const x of v.violations) {
      noteBroken(col, x.rule, x.consequence_of ? 'consequence' : 'root',
                 { trace: tracePath, lines: x.lines, message: x.message, scenario: header.scenario });
    }
  }
}

// The rules checked on a trace: spec/trace-format.md's table of section 5,
// rule -> how ('trace' or 'expect').
const HOW = new Map();
function traceRules() {
  const text = fs.readFileSync(path.join(ROOT, 'spec/trace-format.md'), 'utf8');
  const rules = [];
  for (const line of text.split('\n')) {
    const m = line.match(/^\| ((?:\[[A-Z]+-[0-9.]+\] ?)+) \| (trace|expect) \|/);
    if (!m) continue;
    for (const id of m[1].match(/[A-Z]+-[0-9.]+/g)) {
      if (id.startsWith('TRACE-')) continue;
      rules.push(id);
      HOW.set(id, m[2]);
    }
  }
  return rules;
}

function exercised(col, rule) {
  if (HOW.get(rule) === 'expect' && col.scenarioRuns === 0) return false;
  const need = EXERCISED_BY[rule];
  if (!need) return [...col.events].some((e) => CONTRACT_EVENT[CONTRACT_OF(rule)].test(e));
  return need.split('|').some((alt) => alt.split('&').every((e) => col.events.has(e)));
}

const slug = (s) => s.replace(/[^A-Za-z0-9.+-]/g, '_');
const ruleOrder = (a, b) => {
  const [pa, na] = [a.split('-')[0], a.split('-')[1].split('.').map(Number)];
  const [pb, nb] = [b.split('-')[0], b.split('-')[1].split('.').map(Number)];
  const po = ['LANE', 'FL', 'TURN'];
  return po.indexOf(pa) - po.indexOf(pb) || na[0] - nb[0] || (na[1] ?? 0) - (nb[1] ?? 0);
};

function build() {
  readNodeRuns();
  readCppRuns();
  const rules = new Set(traceRules());
  for (const c of cols.values()) for (const r of c.broken.keys()) if (!r.startsWith('TRACE-')) rules.add(r);
  const witnesses = [];
  const cell = (key, rule) => {
    const col = cols.get(key);
    if (col.traces === 0) return 'no run';
    if (![...col.events].some((e) => CONTRACT_EVENT[CONTRACT_OF(rule)].test(e))) return 'n/e';
    const b = col.broken.get(rule);
    if (b) {
      const file = `witnesses/${slug(key)}/${slug(path.basename(b.trace))}`;
      witnesses.push({ from: b.trace, to: path.join(HERE, file) });
      const first = Math.min(...b.lines.filter((l) => l > 0));
      const label = b.kind === 'root' ? '**broken**' : 'broken (consequence)';
      return `${label} [L${b.lines.join(',')}](${file}#L${first} "${b.message.replace(/"/g, "'").replace(/\|/g, '/')}")`;
    }
    return exercised(col, rule) ? 'met' : 'not exercised';
  };
  const out = [];
  out.push('# Conformance matrix: rule x implementation');
  out.push('');
  out.push('Generated by `node checks/conformance/peers/make_matrix.mjs --write` from the runs of the');
  out.push('peers\' ctests (`conformance.peers.node.*`, `conformance.AsioStrandPeer.*`,');
  out.push('`conformance.CafActorPeer.*`); do not edit by hand. A **broken** cell links to its');
  out.push('witness: the trace lines the oracle names (hover for its message). `n/e`: not');
  out.push('expressible, the implementation has no primitive of that contract; `not exercised`:');
  out.push('it has one, but no run produced the events the rule is about.');
  out.push('');
  const keys = COLUMNS.map((c) => c.key);
  out.push(`| rule | ${COLUMNS.map((c) => c.title).join(' | ')} |`);
  out.push(`|---|${keys.map(() => '---').join('|')}|`);
  const onlyOurs = [];
  for (const rule of [...rules].sort(ruleOrder)) {
    const cells = keys.map((k) => cell(k, rule));
    out.push(`| [${rule}] | ${cells.join(' | ')} |`);
    const ours = cells.slice(0, 2);
    const peers = cells.slice(2).filter((c) => c !== 'n/e' && c !== 'no run' && c !== 'not exercised');
    if (ours.every((c) => c === 'met') && peers.length > 0 && peers.every((c) => c.startsWith('**broken**'))) onlyOurs.push(rule);
  }
  out.push('');
  out.push(`Met by turnstile and the Node port, and broken by every peer that expresses and exercises it: ` +
           `${onlyOurs.map((r) => `[${r}]`).join(', ') || 'none'}.`);
  out.push('');
  out.push('Runs behind each column:');
  out.push('');
  for (const c of COLUMNS) {
    const col = cols.get(c.key);
    out.push(`- **${c.title}** (${[...col.impls].join('; ') || 'no run found'}): ${col.traces} traces; ${col.runs.join(', ') || '-'}`);
  }
  out.push('');
  return { text: out.join('\n'), witnesses };
}

const { text, witnesses } = build();
if (!opts.write) {
  process.stdout.write(text + '\n');
} else {
  fs.rmSync(path.join(HERE, 'witnesses'), { recursive: true, force: true });
  for (const w of witnesses) {
    fs.mkdirSync(path.dirname(w.to), { recursive: true });
    fs.copyFileSync(w.from, w.to);
  }
  fs.writeFileSync(path.join(HERE, 'MATRIX.md'), text + '\n');
  process.stdout.write(`make_matrix.mjs: wrote ${path.join(HERE, 'MATRIX.md')} and ${new Set(witnesses.map((w) => w.to)).size} witness traces\n`);
}
