// The errors of the package: an error answer of the server (ApiError), a
// server that could not be reached (UnreachableError), and the error an
// activity throws to end its call's retries (NonRetryableError).

/**
 * An error answer of the server: its HTTP status and the API's code and
 * message, as docs/api.md ("Errors") lists them. `message` is the API's
 * message as the server wrote it; programs branch on `status` and `code`.
 */
export class ApiError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /**
   * The API's error code (`not_found`, `conflict`, …); empty when the
   * answer did not have the API's error body (a proxy's page, say).
   */
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }

  /** The message followed by the status and the code: `no run "r1" (HTTP 404 not_found)`. */
  override toString(): string {
    return this.code === ""
      ? `${this.name}: ${this.message} (HTTP ${this.status})`
      : `${this.name}: ${this.message} (HTTP ${this.status} ${this.code})`;
  }
}

/**
 * The error of a request that got no answer: the server could not be
 * reached, or the connection failed before the answer came. `cause` is
 * fetch's error. A request whose signal was aborted rejects with the
 * signal's reason instead.
 */
export class UnreachableError extends Error {
  /** The server's URL. */
  readonly server: string;

  constructor(server: string, cause: unknown) {
    super(`cannot reach the skein server at ${server}: ${describe(cause)}`, { cause });
    this.name = "UnreachableError";
    this.server = server;
  }
}

/**
 * The error an activity throws to end its call's retries at once, whatever
 * the call's retry policy says (`activity.NonRetryable` in Go). The worker
 * reports the attempt's failure with `non_retryable: true`. An error whose
 * `cause` chain holds a NonRetryableError is non-retryable too.
 */
export class NonRetryableError extends Error {
  /** Always true: what the worker looks for (see isNonRetryable). */
  readonly nonRetryable = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/**
 * The text of the failure a worker reports for an attempt it stopped before
 * the attempt ended (the server then queues the next attempt at once); the
 * same text as the Go worker's `worker.ErrStopping`.
 */
export const STOPPING_MESSAGE = "the worker stopped before the attempt finished";

/**
 * The reason of an activity's signal when the worker stops: the activity
 * should end, and its attempt is reported as failed with STOPPING_MESSAGE.
 */
export class WorkerStoppingError extends Error {
  constructor() {
    super(STOPPING_MESSAGE);
    this.name = "WorkerStoppingError";
  }
}

/**
 * The reason of an activity's signal when the server says the attempt is no
 * longer this worker's: its lease expired and it was ended, the task was
 * canceled, or its run ended (a heartbeat answered `409 conflict` or `404
 * not_found`). The worker reports nothing more for the attempt.
 */
export class AttemptLostError extends Error {
  constructor(why: string) {
    super(`the attempt is no longer this worker's: ${why}`);
    this.name = "AttemptLostError";
  }
}

/**
 * Reports whether err, or an error of its `cause` chain, is a
 * NonRetryableError (or carries `nonRetryable: true`, as one made by
 * another copy of this package does).
 */
export function isNonRetryable(err: unknown): boolean {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 16; depth++) {
    if (e instanceof NonRetryableError || (e as { nonRetryable?: unknown }).nonRetryable === true) {
      return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The text an attempt's failure reports: an Error's message (its name
 * prefixed when it is not a plain Error's, as `TypeError: x`), any other
 * thrown value as a string. Never empty: the API refuses an empty error.
 */
export function errorText(err: unknown): string {
  let text: string;
  if (err instanceof Error) {
    const plain = err.name === "Error" || err.name === "NonRetryableError";
    text = plain ? err.message : `${err.name}: ${err.message}`;
  } else {
    text = typeof err === "string" ? err : safeString(err);
  }
  return text === "" ? "the activity failed without a message" : text;
}

function safeString(v: unknown): string {
  try {
    return typeof v === "object" ? JSON.stringify(v) ?? String(v) : String(v);
  } catch {
    return String(v);
  }
}

/** describe says what a network error was, with the cause fetch wraps. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) {
    return String(err);
  }
  const inner = err.cause instanceof Error ? err.cause.message : "";
  return inner !== "" && inner !== err.message ? `${err.message} (${inner})` : err.message;
}
