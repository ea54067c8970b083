#!/usr/bin/env node
// test/fake_oracle.mjs: a stand-in for turnstile-oracle, for the port's own
// tests only: it speaks the serve protocol and the `scenarios`/`check` command
// lines of spec/trace-format.md, hands out the hand-written scenarios of
// test/fixtures/scenarios.jsonl, and judges traces with the port's self-check.
// It proves the runner's plumbing, not the port's conformance: that is the
// real oracle's job (ctest conformance.ports.node).
// Failure modes for the runner's tests: FAKE_ORACLE_DIE_AFTER=N exits after N
// `check` requests; FAKE_ORACLE_UNUSABLE=1 answers every `check` with an
// `unusable-trace` error.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseTrace, checkTrace, checkExpectations } from '../lib/selfcheck.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FIXTURES = process.env.FAKE_ORACLE_SCENARIOS ?? path.join(HERE, 'fixtures', 'scenarios.jsonl');
const scenarios = () => fs.readFileSync(FIXTURES, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

function judge(text, sc, known) {
  const { errors, events } = parseTrace(text);
  if (errors.length) return { unusable: `line ${errors[0].line}: ${errors[0].message}` };
  const vs = [...checkTrace(events), ...(sc ? checkExpectations(sc, events) : [])]
    .map((v) => ({ ...v, known: known.includes(v.rule) }));
  const nNew = vs.filter((v) => !v.known).length;
  return { verdict: nNew ? 'fail' : 'pass', violations: vs, new_failures: nNew, known_failures: vs.length - nNew };
}

const [cmd, ...args] = process.argv.slice(2);
const arg = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };

if (cmd === 'scenarios') {
  const c = arg('--contract')?.split(',');  // one contract or a list, as the real oracle takes
  for (const sc of scenarios()) if (!c || c.includes(sc.contract)) process.stdout.write(JSON.stringify(sc) + '\n');
} else if (cmd === 'check') {
  const scFile = arg('--scenario');
  const kf = arg('--known-failures');
  const known = kf ? fs.readFileSync(kf, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean) : [];
  const trace = args[args.length - 1];
  const r = judge(fs.readFileSync(trace, 'utf8'), scFile ? JSON.parse(fs.readFileSync(scFile, 'utf8')) : null, known);
  if (r.unusable) {
    process.stderr.write(`${trace}:${r.unusable}\n`);
    process.exit(2);
  }
  process.stdout.write(JSON.stringify({ traces: [{ file: trace, verdict: r.verdict, violations: r.violations }] }) + '\n');
  process.exit(r.verdict === 'pass' ? 0 : 1);
} else if (cmd === 'serve') {
  const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  let checks = 0;
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    let q;
    try {
      q = JSON.parse(line);
    } catch {
      out({ id: null, ok: false, error: { code: 'bad-request', message: 'not JSON' } });
      return;
    }
    switch (q.method) {
      case 'hello':
        out({ id: q.id, ok: true, protocol: 1, trace_format: 1, scenario_format: 1, oracle: 'fake-oracle (port tests)' });
        break;
      case 'scenarios': {
        const cs = [].concat(q.contract ?? ['lane', 'fiber-local', 'turns']);
        out({ id: q.id, ok: true, scenarios: scenarios().filter((s) => cs.includes(s.contract)) });
        break;
      }
      case 'check': {
        checks += 1;
        if (Number(process.env.FAKE_ORACLE_DIE_AFTER ?? -1) === checks - 1) process.exit(3);
        if (process.env.FAKE_ORACLE_UNUSABLE) {
          out({ id: q.id, ok: false, error: { code: 'unusable-trace', message: 'line 1: field \'format\': fake' } });
          break;
        }
        const r = judge(q.trace, q.scenario, q.known_failures ?? []);
        if (r.unusable) out({ id: q.id, ok: false, error: { code: 'unusable-trace', message: r.unusable } });
        else out({ id: q.id, ok: true, ...r });
        break;
      }
      case 'explain':
        out({ id: q.id, ok: true, rule: q.rule, title: '(fake oracle: no rule text)', text: '' });
        break;
      case 'bye':
        out({ id: q.id, ok: true });
        process.exit(0);
        break;
      default:
        out({ id: q.id, ok: false, error: { code: 'unknown-method', message: String(q.method) } });
    }
  });
} else {
  process.stderr.write('fake_oracle: scenarios | check | serve\n');
  process.exit(2);
}
