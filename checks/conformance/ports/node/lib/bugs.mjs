// lib/bugs.mjs: deliberately planted bugs, to prove that the pipeline (port ->
// trace -> turnstile-oracle) can fail. Off unless the runner is given
// `--plant-bug NAME` or the environment variable TURNSTILE_NODE_PLANT_BUG=NAME[,NAME].
//
//   fifo        the lane takes its newest queued item first (LIFO)    -> [LANE-5.2]
//   reentrancy  run() skips the reentrancy check: a run from the
//               lane's own turn is queued instead of refused          -> [LANE-5.3]
//   restore     a `where` whose body throws leaves its binding in the
//               caller's context while reporting the restore          -> [FL-3.1]
//   install-marker  FiberContext.run() inside a lane turn drops the lane
//               marker: a reentrant run() under it is queued          -> [LANE-5.3] [FL-3.8]
//   capture-marker  a FiberContext captured in a lane turn carries the
//               marker out of it: a run() of that lane under it, after
//               the turn, is refused as reentrant                     -> [LANE-8.7] [FL-3.8]
//   close-before-drain  close() resolves at once, before the lane has run
//               what it accepted: the closer goes on early            -> [LANE-7.6]
export const BUGS = ['fifo', 'reentrancy', 'restore', 'install-marker', 'capture-marker',
                     'close-before-drain'];

const planted = new Set();

export function plantBug(name) {
  if (!BUGS.includes(name)) throw new Error(`unknown bug '${name}' (known: ${BUGS.join(', ')})`);
  planted.add(name);
}

export function isPlanted(name) {
  return planted.has(name);
}

for (const name of (process.env.TURNSTILE_NODE_PLANT_BUG ?? '').split(',')) {
  if (name.trim()) plantBug(name.trim());
}
