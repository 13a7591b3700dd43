// Jest's own order, but for a run with no recorded durations (a fresh clone, as in CI): Jest then
// runs the biggest files first, and the suites that start processes, a browser or servers of their
// own (20–60 s each, most others 2–10 s) are small files that it left for last, where two of them
// ran alone for the last minute of the embedded pass. Those go first here; a run with recorded
// durations (the checkout's Jest cache) keeps Jest's order.
import { readFileSync } from 'node:fs';
import Sequencer from '@jest/test-sequencer';

const PACKED = /\/test\/pack\//;
// Not the chaos suites (test/recovery/chaos*): they keep Jest's place for them, mid-pass; first, beside
// the packed apps, the browsers and each other, they ran half as slow again.
const SLOW_PATHS = [/\/test\/recovery\/(?!chaos)/, /-browser\.spec\.ts$/, /\/test\/sample\//];
const SLOW_IMPORTS = /from '\.\.\/support\/worker-process\.js'/;

function startsProcesses(path) {
  return SLOW_PATHS.some((p) => p.test(path)) || SLOW_IMPORTS.test(readFileSync(path, 'utf8'));
}

export default class SlowSuitesFirst extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => test.duration != null)) return sorted;
    // The packed-app suites, the longest (about a minute each), ahead of the other slow ones.
    const packed = sorted.filter((test) => PACKED.test(test.path));
    const slow = sorted.filter((test) => !packed.includes(test) && startsProcesses(test.path));
    return [...packed, ...slow, ...sorted.filter((test) => !packed.includes(test) && !slow.includes(test))];
  }
}
