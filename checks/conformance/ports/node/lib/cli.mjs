// lib/cli.mjs: the command line of runner.mjs (and of the peers' run_peer.mjs,
// checks/conformance/peers/node, which runs the same harness).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

// A usage error of the script at `scriptUrl` (its import.meta.url): says `msg`,
// points at the script's header (where its options are described), exits 2.
export function usageError(scriptUrl, msg) {
  const file = fileURLToPath(scriptUrl);
  process.stderr.write(`${path.basename(file)}: ${msg}\n(see the header of ${file})\n`);
  process.exit(2);
}

// The values of the command line's `options` (node:util parseArgs, strict); an
// unknown option or a missing value is a usage error.
export function parseOptions(scriptUrl, options) {
  try {
    return parseArgs({ options, strict: true }).values;
  } catch (e) {
    return usageError(scriptUrl, e.message);
  }
}

// A scenario id as a file name (the traces and scenarios written with --out).
export const safeName = (id) => String(id).replace(/[^A-Za-z0-9._-]/g, '_');
