// @skeinrun/skein: the TypeScript client and activity worker of a skein
// server. Client calls the HTTP API (docs/api.md); Worker serves
// activities over its worker protocol ("Activity workers") with the
// guarantees of the Go worker (docs/activities.md).

export { Client, type CallOptions, type WaitOptions } from "./client.js";
export { Worker, type WorkerOptions, type Logger, type Activity, type ActivityInfo } from "./worker.js";
export {
  ApiError,
  AttemptLostError,
  NonRetryableError,
  STOPPING_MESSAGE,
  UnreachableError,
  WorkerStoppingError,
  isNonRetryable,
} from "./errors.js";
export type { ServerOptions } from "./http.js";
export * from "./types.js";
