import type { JsonObject } from '@tidemark/core';

/** What a child is asked to do (passed as JSON in argv[2]). */
export type ChildRequest =
  | {
      mode: 'writer';
      module: string;
      factory: string;
      options: JsonObject;
      sessions: number;
      /** Append to every session at once each round (see `RealFaultSupport.appendsTogether`). */
      together?: boolean;
    }
  | {
      mode: 'probe';
      module: string;
      factory: string;
      options: JsonObject;
      model: SerializedSession[];
      destructive: boolean;
    }
  | {
      /** One of two processes appending to one session at once (concurrent-real.ts). */
      mode: 'racer';
      module: string;
      factory: string;
      options: JsonObject;
      /** The writer's name in its events (`raceEvents`) and its index (`raceBatchSize`). */
      writer: string;
      index: number;
      /** Session key both racers write. */
      key: string;
      /** Batches to get acknowledged before closing. */
      batches: number;
    };

/** A model session as it crosses the process boundary. */
export interface SerializedSession {
  key: string;
  cwd?: string;
  acked: string[];
}

/** Event type at a seq of the kill workload: turns of four events. */
export function killEventType(seq: number): string {
  return ['user/message', 'tool/call', 'tool/result', 'turn/end'][seq % 4]!;
}
