// @workflow/world-testing's hooks case calls Promise.withResolvers, which Node has from 22 on;
// this repository runs on Node 20, so the test process gets the standard behaviour here.
if (typeof (Promise as unknown as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: <T>() => {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}
