// Monotonic ULIDs for run and event ids, as the World's own ids are (`wrun_…`, `evnt_…`): the
// framework reads the time back from them (validateUlidTimestamp) and sorts by them. Written here
// rather than adding the `ulid` package: the package depends on @tidemark/core only.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(time: number): string {
  let out = '';
  let rest = time;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function freshRandom(): number[] {
  const bytes = randomBytes(16);
  return Array.from({ length: 16 }, (_, i) => (bytes[i] as number) % 32);
}

function increment(digits: number[]): number[] {
  const next = [...digits];
  for (let i = next.length - 1; i >= 0; i--) {
    if ((next[i] as number) < 31) {
      next[i] = (next[i] as number) + 1;
      return next;
    }
    next[i] = 0;
  }
  return freshRandom(); // 80 bits exhausted within one millisecond: practically unreachable
}

/** A ULID that sorts after every earlier one from this process. */
export function monotonicUlid(now: number = Date.now()): string {
  if (now <= lastTime) lastRandom = increment(lastRandom);
  else {
    lastTime = now;
    lastRandom = freshRandom();
  }
  return encodeTime(Math.max(now, lastTime)) + lastRandom.map((d) => ALPHABET[d]).join('');
}
