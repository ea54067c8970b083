#!/usr/bin/env node
// runner.mjs: the Node port's conformance runner. It takes scenarios from
// turnstile-oracle, executes each on the port (lib/), writes one trace per
// scenario (spec/trace-format.md) and has the oracle check every trace against
// the scenario's `expect`s and the spec's rules. The walkthrough is
// spec/porting.md.
//
//   node runner.mjs --oracle PATH --seed S --count N [--out DIR]
//        serve mode (the default): one `PATH serve` session: hello, scenarios,
//        a check per trace, explain for each failing rule, bye
//   node runner.mjs --oracle PATH --cli --seed S --count N --out DIR
//        command-line mode: `PATH scenarios ...` then `PATH check --json
//        --scenario F TRACE` per scenario (files under DIR)
//   node runner.mjs --scenarios FILE [--oracle PATH]
//        scenarios from a JSON Lines file instead of the oracle; without an
//        oracle the port's own self-check (lib/selfcheck.mjs) is the verdict
// Options:
//   --contract C[,C]      contracts to ask for (default lane,fiber-local; this
//                         port does not implement turns and skips them)
//   --known-failures F    rule IDs the port does not meet yet, reported apart
//                         (default: known-failures.txt next to this file)
//   --plant-bug B         plant a bug in the port: fifo | reentrancy | restore |
//                         install-marker | capture-marker | close-before-drain
//                         (lib/bugs.mjs)
//   --expect-rule R[,R]   mutant mode: succeed only if the oracle reports one
//                         of these rules as a new failure (known failures off)
//   --timeout-ms T        give up on a scenario after T ms (end status timeout)
//   --self-check          also run the port's self-check on every trace
//   --verbose             print every violation
// Exit status: 0 no new failure (mutant mode: the bug was caught), 1 new
// failures, unusable traces or harness errors (mutant mode: not caught), 2 usage
// error or the oracle could not be used.
//
// spec: [TRACE-3.1] [TRACE-2.1]
// ctest: conformance.ports.node
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { plantBug } from './lib/bugs.mjs';
import { executeScenario, unsupportedReason, PORTED_CONTRACTS } from './lib/execute.mjs';
import { IMPL } from './lib/trace.mjs';
import { ServeSession, PROTOCOL, cliScenarios, cliCheck } from './lib/oracle.mjs';
import { parseTrace, checkTrace, checkExpectations } from './lib/selfcheck.mjs';
import { usageError, parseOptions, safeName } from './lib/cli.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const usage = (msg) => usageError(import.meta.url, msg);

const opts = parseOptions(import.meta.url, {
  oracle: { type: 'string' },
  cli: { type: 'boolean', default: false },
  serve: { type: 'boolean', default: false },
  seed: { type: 'string', default: '1' },
  count: { type: 'string', default: '100' },
  contract: { type: 'string', default: PORTED_CONTRACTS.join(',') },
  scenarios: { type: 'string' },
  out: { type: 'string' },
  'known-failures': { type: 'string' },
  'plant-bug': { type: 'string', multiple: true, default: [] },
  'expect-rule': { type: 'string' },
  'timeout-ms': { type: 'string', default: '5000' },
  'self-check': { type: 'boolean', default: false },
  verbose: { type: 'boolean', default: false },
});

for (const b of opts['plant-bug']) {
  try {
    plantBug(b);
  } catch (e) {
    usage(e.message);
  }
}
const seed = Number(opts.seed);
const count = Number(opts.count);
const timeoutMs = Number(opts['timeout-ms']);
if (!Number.isInteger(seed) || seed < 0) usage(`--seed: '${opts.seed}' is not a non-negative integer`);
if (!Number.isInteger(count) || count < 0) usage(`--count: '${opts.count}' is not a non-negative integer`);
const contracts = opts.contract.split(',').map((c) => c.trim()).filter(Boolean);
const mutantRules = opts['expect-rule'] ? opts['expect-rule'].split(',').map((r) => r.trim()) : null;
if (!opts.oracle && !opts.scenarios) usage('give --oracle PATH, or --scenarios FILE');
if (opts.cli && !opts.out) usage('--cli needs --out DIR (the oracle reads files)');
if (opts.cli && opts.serve) usage('--cli and --serve exclude each other');

// Known failures: one rule ID per line, `#` comments (the oracle's own format).
function readKnownFailures() {
  if (mutantRules) return { file: null, rules: [] };  // a mutant must be caught as new
  const file = opts['known-failures'] ?? path.join(HERE, 'known-failures.txt');
  if (!fs.existsSync(file)) {
    if (opts['known-failures']) usage(`--known-failures: no such file '${file}'`);
    return { file: null, rules: [] };
  }
  const rules = fs.readFileSync(file, 'utf8').split('\n')
    .map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
  return { file, rules };
}

function readScenarioFile(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l, i) => {
    try {
      return JSON.parse(l);
    } catch (e) {
      usage(`${file}:${i + 1}: not JSON: ${e.message}`);
    }
    return null;
  });
}


// Tallies, printed at the end.
const tally = {
  received: 0, run: 0, skipped: new Map(), pass: 0, fail: 0, unusable: 0, timeouts: 0,
  harness: [], newByRule: new Map(), knownByRule: new Map(), selfcheck: new Map(), unusableMsgs: [],
};
const bump = (map, key, example) => {
  const e = map.get(key) ?? { n: 0, example };
  e.n += 1;
  map.set(key, e);
};

function record(sc, verdict) {
  if (verdict.verdict === 'pass') tally.pass += 1;
  else if (verdict.verdict === 'fail') tally.fail += 1;
  else {
    tally.unusable += 1;
    tally.unusableMsgs.push(`${sc.scenario}: ${verdict.error}`);
  }
  const seen = new Set();
  for (const v of verdict.violations ?? []) {
    const where = `${sc.scenario} lines ${(v.lines ?? []).join(',')}: ${v.message}`;
    if (opts.verbose) process.stdout.write(`  ${v.known ? 'known' : 'NEW'} ${v.rule} ${where}\n`);
    const key = `${v.known ? 'k' : 'n'}:${v.rule}`;
    if (seen.has(key)) continue;  // count scenarios, not violations
    seen.add(key);
    bump(v.known ? tally.knownByRule : tally.newByRule, v.rule, where);
  }
}

function selfCheck(sc, text) {
  const { errors, events } = parseTrace(text);
  const found = errors.length
    ? errors.map((e) => ({ rule: 'format', lines: [e.line], message: e.message }))
    : [...checkTrace(events), ...checkExpectations(sc, events)];
  for (const v of found) bump(tally.selfcheck, v.rule, `${sc.scenario} lines ${v.lines.join(',')}: ${v.message}`);
  return found;
}

async function runOne(sc, outDir) {
  tally.received += 1;
  const why = unsupportedReason(sc);
  if (why) {
    bump(tally.skipped, why.startsWith('contract') ? why : `unexecutable: ${why}`, sc.scenario);
    return null;
  }
  tally.run += 1;
  const r = await executeScenario(sc, { timeoutMs });
  if (r.status === 'timeout') tally.timeouts += 1;
  for (const p of r.problems) tally.harness.push(`${sc.scenario}: ${p}`);
  if (outDir) {
    fs.writeFileSync(path.join(outDir, `${safeName(sc.scenario)}.trace.jsonl`), r.trace);
    fs.writeFileSync(path.join(outDir, `${safeName(sc.scenario)}.scenario.json`), JSON.stringify(sc) + '\n');
  }
  if (opts['self-check'] || !opts.oracle) selfCheck(sc, r.trace);
  return r;
}

async function serveMode(known, outDir) {
  const session = new ServeSession(opts.oracle);
  let hello;
  try {
    hello = await session.call('hello', { protocol: PROTOCOL, port: IMPL });
  } catch (e) {
    process.stderr.write(`runner.mjs: the oracle cannot serve: ${e.message}\n`);
    session.child.kill();
    process.exit(2);
  }
  if (hello.protocol !== PROTOCOL || hello.trace_format !== 1 || hello.scenario_format !== 1) {
    process.stderr.write(`runner.mjs: the oracle speaks protocol ${hello.protocol}, trace format ` +
                         `${hello.trace_format}, scenario format ${hello.scenario_format}; this port ` +
                         `speaks 1, 1, 1\n`);
    await session.bye().catch(() => {});
    process.exit(2);
  }
  process.stdout.write(`oracle: ${opts.oracle} serve (${hello.oracle ?? 'unknown version'}, protocol ${hello.protocol})\n`);
  let scenarios;
  if (opts.scenarios) {
    scenarios = readScenarioFile(opts.scenarios);
  } else {
    const r = await session.call('scenarios', { seed, count, contract: contracts });
    scenarios = r.scenarios ?? [];
  }
  const checks = [];
  let sessionError = null;
  for (const sc of scenarios) {
    const r = await runOne(sc, outDir);
    if (!r) continue;
    // Pipelined: the next scenario runs while the oracle checks this trace.
    checks.push(session.request('check', { trace: r.trace, scenario: sc, known_failures: known.rules })
      .then((resp) => {
        if (resp.ok === true) record(sc, resp);
        else record(sc, { verdict: 'unusable', error: `${resp.error?.code}: ${resp.error?.message}` });
      }, (e) => { sessionError ??= e; }));
    if (sessionError) break;
  }
  await Promise.all(checks);
  if (sessionError) {
    process.stderr.write(`runner.mjs: ${sessionError.message}\n`);
    process.exit(2);
  }
  const explained = new Map();
  for (const rule of tally.newByRule.keys()) {
    const r = await session.request('explain', { rule });
    if (r.ok === true) explained.set(rule, r.title ?? '');
  }
  await session.bye().catch((e) => process.stderr.write(`runner.mjs: bye: ${e.message}\n`));
  return explained;
}

async function cliMode(known, outDir) {
  process.stdout.write(`oracle: ${opts.oracle} (command lines)\n`);
  let scenarios;
  if (opts.scenarios) {
    scenarios = readScenarioFile(opts.scenarios);
  } else {
    // One listing of all the contracts, as in serve mode: `count` in total, and
    // scenarios that cross the contracts asked for (spec/porting.md section 4).
    scenarios = cliScenarios(opts.oracle, { seed, count, contract: contracts.join(',') });
  }
  for (const sc of scenarios) {
    const r = await runOne(sc, outDir);
    if (!r) continue;
    const base = path.join(outDir, safeName(sc.scenario));
    const v = cliCheck(opts.oracle, {
      trace: `${base}.trace.jsonl`, scenario: `${base}.scenario.json`, knownFailures: known.file,
    });
    record(sc, v);
  }
  return new Map();
}

async function localMode(outDir) {
  process.stdout.write('oracle: none; verdicts from the port\'s self-check (lib/selfcheck.mjs)\n');
  for (const sc of readScenarioFile(opts.scenarios)) {
    const r = await runOne(sc, outDir);
    if (!r) continue;
    const found = selfCheck(sc, r.trace);
    // selfCheck() tallied them already; record only the verdict
    if (found.length === 0) tally.pass += 1;
    else tally.fail += 1;
  }
  return new Map();
}

function printSummary(known, explained) {
  const w = (s) => process.stdout.write(s + '\n');
  w(`port: ${IMPL}${opts['plant-bug'].length ? `, planted bug: ${opts['plant-bug'].join(',')}` : ''}`);
  const notAsked = ['lane', 'fiber-local', 'turns'].filter((c) => !contracts.includes(c));
  w(`contracts: ${contracts.join(', ')}${notAsked.length && !opts.scenarios ? ` (not asked for: ${notAsked.join(', ')}; ` +
    `this port implements ${PORTED_CONTRACTS.join(' and ')})` : ''}`);
  w(`scenarios: ${tally.received} received, ${tally.run} run, ${tally.received - tally.run} skipped`);
  for (const [why, e] of tally.skipped) w(`  skipped ${e.n}: ${why} (e.g. ${e.example})`);
  w(`verdicts: ${tally.pass} pass, ${tally.fail} fail, ${tally.unusable} unusable; ${tally.timeouts} timed out`);
  w('new failures by rule (scenarios):');
  if (tally.newByRule.size === 0) w('  none');
  for (const [rule, e] of [...tally.newByRule].sort()) {
    const title = explained.get(rule);
    w(`  ${rule.padEnd(10)} ${String(e.n).padStart(4)}${title ? `  ${title}` : ''}\n             e.g. ${e.example}`);
  }
  w(`known failures by rule${known.file ? ` (${known.file})` : ''}:`);
  if (tally.knownByRule.size === 0) w(`  none${known.rules.length ? ` seen (listed: ${known.rules.join(' ')})` : ''}`);
  for (const [rule, e] of [...tally.knownByRule].sort()) w(`  ${rule.padEnd(10)} ${String(e.n).padStart(4)}  e.g. ${e.example}`);
  if (tally.selfcheck.size > 0) {
    w('self-check findings (lib/selfcheck.mjs, not the oracle):');
    for (const [rule, e] of [...tally.selfcheck].sort()) w(`  ${rule.padEnd(10)} ${String(e.n).padStart(4)}  e.g. ${e.example}`);
  }
  for (const m of tally.unusableMsgs.slice(0, 5)) w(`unusable: ${m}`);
  for (const m of tally.harness.slice(0, 5)) w(`harness error: ${m}`);
  if (opts.out) w(`traces: ${opts.out}`);
}

async function main() {
  const known = readKnownFailures();
  const outDir = opts.out ? path.resolve(opts.out) : null;
  if (outDir) fs.mkdirSync(outDir, { recursive: true });
  let explained;
  if (!opts.oracle) explained = await localMode(outDir);
  else if (opts.cli) explained = await cliMode(known, outDir);
  else explained = await serveMode(known, outDir);
  printSummary(known, explained);

  const newRules = new Set([...tally.newByRule.keys(), ...(opts.oracle ? [] : tally.selfcheck.keys())]);
  if (mutantRules) {
    const hit = mutantRules.filter((r) => newRules.has(r));
    if (hit.length > 0) {
      process.stdout.write(`mutant caught: ${opts.oracle ? 'the oracle' : 'the self-check'} reports ${hit.join(', ')}\n`);
      return 0;
    }
    process.stdout.write(`mutant NOT caught: no new failure of ${mutantRules.join(' or ')} ` +
                         `(new failures: ${[...newRules].join(' ') || 'none'})\n`);
    return 1;
  }
  if (tally.run === 0) {
    process.stdout.write('FAIL: no scenario was run\n');
    return 1;
  }
  const bad = newRules.size > 0 || tally.fail > 0 || tally.unusable > 0 || tally.harness.length > 0;
  process.stdout.write(bad ? 'FAIL\n' : 'PASS\n');
  return bad ? 1 : 0;
}

// A promise nobody settles (an oracle that vanished mid-request) must not look
// like success: the event loop would empty and the process exit 0.
process.on('beforeExit', () => {
  process.stderr.write('runner.mjs: stopped with work still waiting (an unanswered oracle request?)\n');
  process.exit(2);
});

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`runner.mjs: ${e?.stack ?? e}\n`);
  process.exit(2);
});
