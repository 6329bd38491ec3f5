// One attempt of an activity call on a Worker: its signal, its heartbeats
// and the report of its end.

import {
  ApiError,
  AttemptLostError,
  NonRetryableError,
  STOPPING_MESSAGE,
  UnreachableError,
  WorkerStoppingError,
  errorText,
  isNonRetryable,
} from "./errors.js";
import { type Transport, sleep } from "./http.js";
import type { ClaimedTask, JSONValue } from "./types.js";
import type { Logger } from "./worker.js";

/** The call an activity runs for (`activity.Info` in Go), and its signal. */
export interface ActivityInfo {
  /** The run that made the call. */
  runId: string;
  /** The call's key in the run. */
  key: string;
  /** The activity's name. */
  name: string;
  /** The attempt, from 1. */
  attempt: number;
  /**
   * The same for every attempt of the call and unique across runs,
   * "{run}.{key}": pass it to the systems the activity changes, so that a
   * repeated attempt does not repeat the change.
   */
  idempotencyKey: string;
  /** The previous attempt's error; empty for the first. */
  lastError: string;
  /** The attempt's deadline (the call's skein.Timeout), if it has one. */
  deadline?: Date;
  /**
   * Aborted when the activity should stop: the server said the attempt is
   * no longer this worker's (its run was canceled or ended, or its lease
   * expired: reason AttemptLostError), the attempt's timeout passed
   * (reason a DOMException named TimeoutError), or the worker is stopping
   * (reason WorkerStoppingError). Pass it to fetch and timers.
   */
  signal: AbortSignal;
}

/**
 * An activity: it gets the call's input (JSON, decoded) and its info, and
 * returns the result (any JSON value; undefined is null) or throws. A
 * NonRetryableError ends the call's retries at once.
 */
export type Activity<I = any, O = unknown> = (input: I, info: ActivityInfo) => O | Promise<O>;

/** How long the report of an attempt's end is tried, also after the worker was stopped. */
const REPORT_TIMEOUT_MS = 10_000;

/** What runAttempt needs of its worker. */
export interface AttemptEnv {
  t: Transport;
  identity: string;
  log: Logger;
  task: ClaimedTask;
  /** The activity of the task's name; undefined if none is registered. */
  fn: Activity | undefined;
  /** Aborted when the worker stops. */
  stop: AbortSignal;
}

/**
 * runAttempt runs one attempt under heartbeats and reports its end,
 * unless the server took the attempt back.
 */
export async function runAttempt(e: AttemptEnv): Promise<void> {
  const { task } = e;
  const ref = { run_id: task.run_id, key: task.key, attempt: task.attempt, worker: e.identity };
  const ac = new AbortController();
  const onStop = (): void => ac.abort(new WorkerStoppingError());
  e.stop.addEventListener("abort", onStop, { once: true });
  if (e.stop.aborted) {
    onStop();
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let deadline: Date | undefined;
  if (task.timeout_ms !== undefined && task.timeout_ms > 0) {
    deadline = new Date(Date.now() + task.timeout_ms);
    timer = setTimeout(() => ac.abort(new DOMException(`the attempt's timeout of ${task.timeout_ms} ms passed`,
      "TimeoutError")), task.timeout_ms);
  }
  const info: ActivityInfo = { runId: task.run_id, key: task.key, name: task.name, attempt: task.attempt,
    idempotencyKey: task.idempotency_key, lastError: task.last_error ?? "", deadline, signal: ac.signal };
  const hbStop = new AbortController();
  const hb = heartbeat(e, ref, task.heartbeat_ms, ac, hbStop.signal);
  let out: { ok: true; value: unknown } | { ok: false; err: unknown };
  try {
    out = { ok: true, value: await call(e.fn, task.input, info) };
  } catch (err) {
    out = { ok: false, err };
  } finally {
    clearTimeout(timer);
    hbStop.abort();
    e.stop.removeEventListener("abort", onStop);
  }
  await hb;
  if (ac.signal.reason instanceof AttemptLostError) {
    e.log.warn("worker: attempt abandoned", { run: task.run_id, key: task.key, attempt: task.attempt,
      why: ac.signal.reason.message });
    return;
  }
  let send: () => Promise<unknown>;
  if (out.ok) {
    const result = out.value === undefined ? null : out.value;
    send = () => e.t.send({ method: "POST", path: "/v1/tasks/complete", json: { ...ref, result } });
  } else {
    const stopped = e.stop.aborted && endedBySignal(out.err, ac.signal);
    const error = stopped ? STOPPING_MESSAGE : errorText(out.err);
    const non_retryable = !stopped && isNonRetryable(out.err);
    send = () => e.t.send({ method: "POST", path: "/v1/tasks/fail", json: { ...ref, error, non_retryable } });
  }
  try {
    await report(send);
  } catch (err) {
    e.log.warn("worker: report the attempt's end", { run: task.run_id, key: task.key, attempt: task.attempt,
      err: String(err) });
  }
}

/** call runs fn on input; a missing activity is a non-retryable failure. */
async function call(fn: Activity | undefined, input: JSONValue, info: ActivityInfo): Promise<unknown> {
  if (fn === undefined) {
    throw new NonRetryableError("no activity of this name is registered on the worker");
  }
  return await fn(input, info);
}

/**
 * endedBySignal reports whether err is what an activity throws when its
 * signal was aborted: the signal's reason itself (fetch, throwIfAborted),
 * or an AbortError (node:timers/promises, streams).
 */
function endedBySignal(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted && (err === signal.reason || err instanceof WorkerStoppingError ||
    (err instanceof Error && err.name === "AbortError"));
}

/**
 * heartbeat keeps the attempt's lease every everyMs until done is aborted;
 * an answer that the attempt is no longer ours aborts the activity's
 * signal with an AttemptLostError.
 */
async function heartbeat(e: AttemptEnv, ref: object, everyMs: number, ac: AbortController, done: AbortSignal): Promise<void> {
  const every = Math.max(everyMs, 10);
  for (;;) {
    await sleep(every, done);
    if (done.aborted) {
      return;
    }
    try {
      await e.t.send({ method: "POST", path: "/v1/tasks/heartbeat", json: ref, signal: done });
    } catch (err) {
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) {
        ac.abort(new AttemptLostError(err.message));
        return;
      }
      if (!done.aborted) {
        e.log.warn("worker: heartbeat failed", { run: e.task.run_id, key: e.task.key, attempt: e.task.attempt,
          err: String(err) });
      }
    }
  }
}

/**
 * report sends an attempt's end with send, again after a failure to reach
 * the server or a 5xx answer (the server restarting), for up to
 * REPORT_TIMEOUT_MS. Any other answer is final: a 409 says the attempt is
 * no longer ours.
 */
async function report(send: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + REPORT_TIMEOUT_MS;
  let wait = 50;
  for (;;) {
    try {
      await send();
      return;
    } catch (err) {
      const again = err instanceof UnreachableError || (err instanceof ApiError && err.status >= 500);
      if (!again || Date.now() + wait > deadline) {
        throw err;
      }
    }
    await sleep(wait);
    wait = Math.min(2 * wait, 1000);
  }
}
