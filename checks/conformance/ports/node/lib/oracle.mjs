// lib/oracle.mjs: talking to turnstile-oracle, the two ways spec/trace-format.md
// offers a port: the `serve` protocol (section 3, JSON Lines over the oracle's
// stdin/stdout; the default) and plain command lines (`scenarios`, `check`).
import { spawn, spawnSync } from 'node:child_process';
import readline from 'node:readline';

export const PROTOCOL = 1;

// One `turnstile-oracle serve` session. Requests are answered in order, one
// line each, echoing the request's `id`.
export class ServeSession {
  constructor(oraclePath) {
    this.nextId = 0;
    this.waiting = [];
    this.exited = null;
    this.stderr = '';
    this.exit = new Promise((resolve) => { this.resolveExit = resolve; });
    this.child = spawn(oraclePath, ['serve'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    this.child.stdin.on('error', () => {});  // a dead oracle is reported by 'exit'
    this.child.on('error', (e) => this.#fail(new Error(`cannot start '${oraclePath} serve': ${e.message}`)));
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.#fail(new Error(`'${oraclePath} serve' exited (${signal ?? `status ${code}`}) with ` +
                           `${this.waiting.length} request(s) unanswered${this.stderr ? `; stderr: ${this.stderr.trim()}` : ''}`));
      this.resolveExit({ code, signal });
    });
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => this.#answer(line));
  }

  #fail(error) {
    for (const w of this.waiting.splice(0)) w.reject(error);
  }

  #answer(line) {
    const w = this.waiting.shift();
    if (!w) return;  // an answer nobody asked for: ignored
    let r;
    try {
      r = JSON.parse(line);
    } catch {
      w.reject(new Error(`the oracle answered with a line that is not JSON: ${line.slice(0, 200)}`));
      return;
    }
    if (JSON.stringify(r?.id) !== JSON.stringify(w.id)) {
      w.reject(new Error(`the oracle answered id ${JSON.stringify(r?.id)} to request ${w.id} (${w.method})`));
      return;
    }
    w.resolve(r);
  }

  // Sends one request; resolves with the whole response object (ok or not).
  request(method, fields = {}) {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      if (this.exited) {  // a request after the oracle died would never be answered
        const { code, signal } = this.exited;
        reject(new Error(`'serve' exited (${signal ?? `status ${code}`}) before request ${id} (${method})`));
        return;
      }
      this.waiting.push({ id, method, resolve, reject });
      this.child.stdin.write(JSON.stringify({ id, method, ...fields }) + '\n');
    });
  }

  // Like request(), but an `ok: false` response is an Error.
  async call(method, fields) {
    const r = await this.request(method, fields);
    if (r.ok !== true) {
      const err = new Error(`${method}: ${r.error?.code ?? 'error'}: ${r.error?.message ?? JSON.stringify(r)}`);
      err.code = r.error?.code;
      throw err;
    }
    return r;
  }

  async bye() {
    try {
      await this.call('bye');
    } finally {
      this.child.stdin.end();
    }
    return this.exit;
  }
}

// `turnstile-oracle scenarios --seed S --count N --contract C`: the scenarios, one per line.
export function cliScenarios(oraclePath, { seed, count, contract }) {
  const args = ['scenarios', '--seed', String(seed), '--count', String(count)];
  if (contract) args.push('--contract', contract);
  const r = spawnSync(oraclePath, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`cannot run ${oraclePath}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${oraclePath} ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

// Every object with `rule` and `lines` in a --json report.
function violationsIn(doc, out = []) {
  if (Array.isArray(doc)) {
    for (const x of doc) violationsIn(x, out);
  } else if (doc && typeof doc === 'object') {
    if (typeof doc.rule === 'string' && Array.isArray(doc.lines)) out.push(doc);
    else for (const x of Object.values(doc)) violationsIn(x, out);
  }
  return out;
}

// `turnstile-oracle check --json [--scenario F] [--known-failures F] TRACE`.
// Returns { status, verdict, violations, error }.
export function cliCheck(oraclePath, { trace, scenario, knownFailures }) {
  const args = ['check', '--json'];
  if (scenario) args.push('--scenario', scenario);
  if (knownFailures) args.push('--known-failures', knownFailures);
  args.push(trace);
  const r = spawnSync(oraclePath, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`cannot run ${oraclePath}: ${r.error.message}`);
  let doc = null;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    // text output or nothing: the status still decides
  }
  const violations = doc ? violationsIn(doc) : [];
  const fail = violations.some((v) => v.known !== true);
  return {
    status: r.status,
    verdict: r.status === 0 ? 'pass' : r.status === 1 || fail ? 'fail' : 'unusable',
    violations,
    error: r.status === 2 ? (r.stderr.trim() || r.stdout.trim()) : null,
  };
}
