// The AI SDK's own mock language model, streaming a scripted reply word by word.
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';

// The stream part type of the provider spec, which `ai` does not re-export.
type StreamOf<T> = T extends ReadableStream<infer P> ? P : never;
type LanguageModelV3StreamPart = StreamOf<Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream']>;

/** A model whose every call streams `words` as one text block, `delayMs` apart. */
export function scriptedModel(words: readonly string[], delayMs = 0): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream<LanguageModelV3StreamPart>({
        chunkDelayInMs: delayMs,
        chunks: [
          { type: 'text-start', id: 'text-1' },
          ...words.map((delta): LanguageModelV3StreamPart => ({ type: 'text-delta', id: 'text-1', delta })),
          { type: 'text-end', id: 'text-1' },
          {
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: {
              inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: words.length, text: words.length, reasoning: undefined },
            },
          },
        ],
      }),
    }),
  });
}

/** A promise with its resolve function, to wait for a callback. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
