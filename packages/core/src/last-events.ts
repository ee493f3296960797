import type { SessionEvent } from './event.js';

/**
 * The last `count` events of a stream, in order, holding at most `count` at a time: how
 * `read({ last })` is answered by a backend that cannot find the newest events directly.
 */
export async function* lastEvents(
  events: AsyncIterable<SessionEvent>,
  count: number,
): AsyncGenerator<SessionEvent> {
  const ring: SessionEvent[] = [];
  let start = 0;
  for await (const event of events) {
    if (ring.length < count) ring.push(event);
    else {
      ring[start] = event;
      start = (start + 1) % count;
    }
  }
  for (let i = 0; i < ring.length; i++) yield ring[(start + i) % ring.length]!;
}
