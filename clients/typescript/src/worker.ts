// Worker serves activities to the runs of a skein server over the worker
// protocol (docs/api.md, "Activity workers"), with the guarantees of the
// Go worker (package worker, docs/activities.md): claims long-poll, each
// attempt's lease is kept by heartbeats at the interval the server asks,
// an attempt the server takes back aborts the activity's signal, a
// NonRetryableError ends the call's retries, and a worker that stops
// reports its attempts as stopped so that their next attempts are queued
// at once.

import { hostname } from "node:os";
import { randomBytes } from "node:crypto";

import { ApiError } from "./errors.js";
import { type ServerOptions, Transport, sleep } from "./http.js";
import { type Activity, runAttempt } from "./attempt.js";
import type { ClaimedTask } from "./types.js";

export type { Activity, ActivityInfo } from "./attempt.js";

/** Where a Worker's logs go; default: stderr, one line each. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** Options of a Worker. */
export interface WorkerOptions extends ServerOptions {
  /**
   * The worker's name in the server's records (which worker holds a
   * task); default "{hostname}-{pid}-{random}". Live workers must have
   * different identities.
   */
  identity?: string;
  /** How many attempts the worker runs at once; default 16. */
  concurrency?: number;
  /**
   * How many claims the worker keeps waiting on the server at once, each
   * for its share of the free slots; default 2.
   */
  pollers?: number;
  /** How long one claim waits for a task on the server (a long poll); default 20 000 ms. */
  waitMs?: number;
  /** Where the worker logs; default stderr. */
  logger?: Logger;
}

/** The most tasks one claim asks for (the server's cap). */
const MAX_CLAIM = 256;

/**
 * Worker claims and runs activity tasks. Create it, register its
 * activities, then call run:
 *
 *     const w = new Worker({ server: "http://127.0.0.1:7070", token });
 *     w.register("charge", async (order, info) => ({ id: "rcpt-" + info.idempotencyKey }));
 *     await w.run(signal); // until signal is aborted
 */
export class Worker {
  readonly #t: Transport;
  readonly #identity: string;
  readonly #concurrency: number;
  readonly #pollers: number;
  readonly #waitMs: number;
  readonly #log: Logger;
  readonly #fns = new Map<string, Activity>();
  #running = false;

  constructor(o: WorkerOptions) {
    this.#t = new Transport(o, "Worker");
    this.#identity = o.identity !== undefined && o.identity !== "" ? o.identity : defaultIdentity();
    this.#concurrency = positive(o.concurrency, 16, "concurrency");
    this.#pollers = Math.min(positive(o.pollers, 2, "pollers"), this.#concurrency);
    this.#waitMs = positive(o.waitMs, 20_000, "waitMs");
    this.#log = o.logger ?? stderrLogger;
  }

  /** The name the worker claims tasks under. */
  get identity(): string {
    return this.#identity;
  }

  /**
   * register makes fn serve the activity name (what workflows pass to
   * skein.Call). fn gets the call's input (JSON, decoded) and its
   * ActivityInfo, and returns the result (any JSON value; undefined is
   * null). It throws on an empty name, a fn that is not a function, or a
   * name registered twice: those are mistakes in the program.
   */
  register<I = any, O = unknown>(name: string, fn: Activity<I, O>): this {
    if (typeof name !== "string" || name === "" || typeof fn !== "function") {
      throw new TypeError("Worker.register needs a name and a function");
    }
    if (this.#fns.has(name)) {
      throw new Error(`Worker.register: activity ${JSON.stringify(name)} registered twice`);
    }
    this.#fns.set(name, fn as Activity);
    return this;
  }

  /**
   * run claims and runs tasks until signal is aborted. Then it aborts the
   * signals of the activities still running, reports each attempt's end
   * (an activity that ends by its signal is reported as stopped, with
   * STOPPING_MESSAGE, and the server queues its next attempt at once) and
   * resolves once all have been reported. A claim that fails to reach the
   * server, or gets a 5xx answer, is tried again with a backoff from 100 ms
   * to 5 s. It rejects at once when no activity is registered, and when the
   * server refuses the worker (a wrong token: `401`; a bad claim: `400`),
   * after the attempts it holds have ended.
   */
  async run(signal?: AbortSignal): Promise<void> {
    const names = [...this.#fns.keys()].sort();
    if (names.length === 0) {
      throw new Error("Worker.run: no activity is registered");
    }
    if (this.#running) {
      throw new Error("Worker.run: the worker is running already");
    }
    this.#running = true;
    this.#log.info("worker: started", { server: this.#t.server, identity: this.#identity, activities: names,
      concurrency: this.#concurrency, pollers: this.#pollers });
    // stop ends the claims and the attempts: when signal is aborted, or
    // when the server refuses the worker.
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) {
      onAbort();
    }
    const slots = new Slots(this.#concurrency);
    const attempts = new Set<Promise<void>>();
    let refused: unknown;
    const share = Math.min(Math.ceil(this.#concurrency / this.#pollers), MAX_CLAIM);
    try {
      await Promise.all(Array.from({ length: this.#pollers }, async () => {
        try {
          await this.#poll(names, slots, share, stop.signal, attempts);
        } catch (err) {
          refused ??= err;
          stop.abort(err);
        }
      }));
      await Promise.all(attempts);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#running = false;
    }
    if (refused !== undefined) {
      throw refused;
    }
  }

  /**
   * poll claims tasks for the free slots and starts their attempts, until
   * stop is aborted. It rejects when the server refuses the worker.
   */
  async #poll(names: string[], slots: Slots, share: number, stop: AbortSignal, attempts: Set<Promise<void>>): Promise<void> {
    let backoff = 0;
    for (;;) {
      const n = await slots.take(share, stop);
      if (n === 0) {
        return; // stopped
      }
      let claimed: ClaimedTask[];
      try {
        const a = await this.#t.send<{ tasks: ClaimedTask[] }>({ method: "POST", path: "/v1/tasks/claim",
          json: { worker: this.#identity, names, max: n, wait_ms: this.#waitMs }, signal: stop });
        claimed = a.body.tasks ?? [];
      } catch (err) {
        slots.give(n);
        if (stop.aborted) {
          return;
        }
        if (err instanceof ApiError && (err.status === 401 || err.status === 400)) {
          throw new Error(`Worker.run: the server refused the claim: ${err.message} (HTTP ${err.status} ${err.code})`,
            { cause: err });
        }
        backoff = Math.min(Math.max(2 * backoff, 100), 5000);
        this.#log.warn("worker: claim failed; trying again", { err: String(err), inMs: backoff });
        await sleep(backoff, stop);
        continue;
      }
      backoff = 0;
      slots.give(n - claimed.length);
      for (const task of claimed) {
        const p = runAttempt({ t: this.#t, identity: this.#identity, log: this.#log, task,
          fn: this.#fns.get(task.name), stop })
          .catch((err: unknown) => this.#log.warn("worker: an attempt failed unexpectedly", { err: String(err) }))
          .finally(() => {
            attempts.delete(p);
            slots.give(1);
          });
        attempts.add(p);
      }
    }
  }
}

/** Slots counts the attempts the worker may still start. */
class Slots {
  #free: number;
  #waiters: (() => void)[] = [];

  constructor(n: number) {
    this.#free = n;
  }

  /** take waits until a slot is free and takes up to max of them; 0 when stop is aborted first. */
  async take(max: number, stop: AbortSignal): Promise<number> {
    while (!stop.aborted) {
      if (this.#free > 0) {
        const n = Math.min(this.#free, max);
        this.#free -= n;
        return n;
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          stop.removeEventListener("abort", done);
          resolve();
        };
        this.#waiters.push(done);
        stop.addEventListener("abort", done, { once: true });
      });
    }
    return 0;
  }

  /** give returns n slots and wakes the takers. */
  give(n: number): void {
    if (n <= 0) {
      return;
    }
    this.#free += n;
    const w = this.#waiters;
    this.#waiters = [];
    for (const wake of w) {
      wake();
    }
  }
}

function positive(v: number | undefined, def: number, what: string): number {
  if (v === undefined || v === 0) {
    return def;
  }
  if (!Number.isInteger(v) || v < 0) {
    throw new TypeError(`Worker: ${what} must be a positive integer, not ${String(v)}`);
  }
  return v;
}

function defaultIdentity(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/** stderrLogger writes `worker: msg key=value …` lines to stderr. */
const stderrLogger: Logger = {
  info: (msg, fields) => process.stderr.write(line("INFO", msg, fields)),
  warn: (msg, fields) => process.stderr.write(line("WARN", msg, fields)),
};

function line(level: string, msg: string, fields?: Record<string, unknown>): string {
  const kv = Object.entries(fields ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v) ?? String(v)}`);
  return [level, msg, ...kv].join(" ") + "\n";
}
