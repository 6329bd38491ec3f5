// Worker against a real skein serve: the guarantees of the Go worker.
// Each test serves activities of its own names, so that no worker of
// another test claims its tasks.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  type ActivityInfo,
  ApiError,
  AttemptLostError,
  NonRetryableError,
  STOPPING_MESSAGE,
  Worker,
  WorkerStoppingError,
} from "../src/index.js";
import { Deferred, client, deployRemote, env, settled, within, worker } from "./helpers.js";

/** serve runs w until the test ends; it returns what stops it and run's promise. */
function serve(t: { after: (fn: () => Promise<void>) => void }, w: Worker): { stop: AbortController; done: Promise<void> } {
  const stop = new AbortController();
  const done = w.run(stop.signal);
  t.after(async () => {
    stop.abort();
    await done.catch(() => undefined);
  });
  return { stop, done };
}

test("heartbeats keep an attempt alive past the task lease", { timeout: 60_000 }, async (t) => {
  const c = client(env.shortLease); // --task-lease 1s
  const module = await deployRemote(c);
  const w = worker(env.shortLease, { identity: "ts-hb" });
  const seen: { aborted: boolean; attempt: number }[] = [];
  w.register("hold", async (n: number, info: ActivityInfo) => {
    await new Promise((r) => setTimeout(r, 3500)); // over three leases
    seen.push({ aborted: info.signal.aborted, attempt: info.attempt });
    return n + 7;
  });
  serve(t, w);
  await c.start({ module, id: "ts-hb-1", input: { n: 1, name: "hold" } }); // one attempt: a lost lease fails the run
  const view = await c.wait("ts-hb-1", settled());
  assert.equal(view.status, "completed", `run ts-hb-1: ${view.status} ${view.error}`);
  assert.equal(view.result, 7);
  assert.deepEqual(view.outcomes.map((o) => [o.function, o.attempts]), [["hold", 1]]);
  assert.deepEqual(seen, [{ aborted: false, attempt: 1 }]);
  const [task] = await c.tasks("ts-hb-1");
  assert.equal(task?.worker, "ts-hb");
  assert.ok(task?.heartbeat_at !== undefined, `task ${JSON.stringify(task)}: no heartbeat recorded`);
});

test("canceling the run aborts the activity's signal", { timeout: 60_000 }, async (t) => {
  const c = client(env.shortLease);
  const module = await deployRemote(c);
  const w = worker(env.shortLease, { identity: "ts-cancel" });
  const started = new Deferred<ActivityInfo>();
  const aborted = new Deferred<unknown>();
  w.register("block", async (_: number, info: ActivityInfo) => {
    started.resolve(info);
    await new Promise((r) => info.signal.addEventListener("abort", r, { once: true }));
    aborted.resolve(info.signal.reason);
    throw info.signal.reason;
  });
  serve(t, w);
  await c.start({ module, id: "ts-cancel-1", input: { n: 1, name: "block" } });
  const info = await within(started.promise, 20_000, "the activity's start");
  assert.deepEqual([info.runId, info.key, info.name, info.attempt, info.idempotencyKey],
    ["ts-cancel-1", "1", "block", 1, "ts-cancel-1.1"]);
  await c.cancel("ts-cancel-1", { reason: "changed my mind" });
  const reason = await within(aborted.promise, 20_000, "the abort of the activity's signal");
  assert.ok(reason instanceof AttemptLostError, `the signal's reason: ${String(reason)}`);
  const view = await c.wait("ts-cancel-1", settled());
  assert.equal(view.status, "canceled");
  const [task] = await c.tasks("ts-cancel-1");
  assert.equal(task?.state, "canceled");
});

test("a NonRetryableError fails the call at once; other errors are retried", { timeout: 60_000 }, async (t) => {
  const c = client();
  const module = await deployRemote(c);
  const w = worker(env.server, { identity: "ts-errors" });
  const calls: string[] = [];
  w.register("refuse", (_: number, info: ActivityInfo) => {
    calls.push(`refuse ${info.attempt}`);
    throw new NonRetryableError("refuse: not retried");
  });
  w.register("refuse-wrapped", (_: number, info: ActivityInfo) => {
    calls.push(`refuse-wrapped ${info.attempt}`);
    throw new Error("the card processor said no", { cause: new NonRetryableError("declined") });
  });
  w.register("fail", (_: number, info: ActivityInfo) => {
    calls.push(`fail ${info.attempt} after ${JSON.stringify(info.lastError)}`);
    throw new Error("fail: it always fails");
  });
  serve(t, w);
  for (const name of ["refuse", "refuse-wrapped", "fail"]) {
    await c.start({ module, id: `ts-${name}`, input: { n: 1, name, attempts: 3 } });
  }
  const refused = await c.wait("ts-refuse", settled());
  assert.equal(refused.status, "failed");
  assert.match(refused.error ?? "", /refuse: not retried/);
  assert.deepEqual(refused.outcomes.map((o) => [o.status, o.attempts]), [["error", 1]]);
  const wrapped = await c.wait("ts-refuse-wrapped", settled());
  assert.equal(wrapped.status, "failed");
  assert.match(wrapped.error ?? "", /the card processor said no/);
  assert.deepEqual(wrapped.outcomes.map((o) => [o.status, o.attempts]), [["error", 1]]);
  const failed = await c.wait("ts-fail", settled());
  assert.equal(failed.status, "failed");
  assert.match(failed.error ?? "", /fail: it always fails/);
  assert.deepEqual(failed.outcomes.map((o) => [o.status, o.attempts]), [["error", 3]]);
  assert.deepEqual(calls.sort(), ['fail 1 after ""', 'fail 2 after "fail: it always fails"',
    'fail 3 after "fail: it always fails"', "refuse 1", "refuse-wrapped 1"]);
});

test("stop releases a claimed attempt: another worker gets it at once", { timeout: 60_000 }, async (t) => {
  const c = client(); // --task-lease 1m
  const module = await deployRemote(c);
  const a = worker(env.server, { identity: "ts-stop-a" });
  const started = new Deferred();
  let reason: unknown;
  a.register("slow", async (_: number, info: ActivityInfo) => {
    started.resolve();
    await new Promise((r) => info.signal.addEventListener("abort", r, { once: true }));
    reason = info.signal.reason;
    throw info.signal.reason;
  });
  const { stop, done } = serve(t, a);
  await c.start({ module, id: "ts-stop-1", input: { n: 1, name: "slow", attempts: 3 } });
  await within(started.promise, 20_000, "worker a's attempt");
  const stopped = Date.now();
  stop.abort();
  await within(done, 15_000, "worker a's run to end after the stop");
  assert.ok(reason instanceof WorkerStoppingError, `the signal's reason: ${String(reason)}`);

  const b = worker(env.server, { identity: "ts-stop-b" });
  const onB: [number, string][] = [];
  b.register("slow", (n: number, info: ActivityInfo) => {
    onB.push([info.attempt, info.lastError]);
    return n + 5;
  });
  serve(t, b);
  const view = await c.wait("ts-stop-1", settled());
  const took = Date.now() - stopped;
  assert.equal(view.status, "completed", `run ts-stop-1: ${view.status} ${view.error}`);
  assert.equal(view.result, 5);
  assert.deepEqual(onB, [[2, STOPPING_MESSAGE]]);
  assert.ok(took < 30_000, `the next attempt ran ${took} ms after the stop; the lease is a minute`);
  const [task] = await c.tasks("ts-stop-1");
  assert.equal(task?.attempt, 2);
  assert.equal(task?.worker, "ts-stop-b");
  assert.equal(task?.last_error, STOPPING_MESSAGE);
});

test("a worker the server refuses stops with the server's error", { timeout: 30_000 }, async () => {
  const w = new Worker({ server: env.server, token: "wrong", logger: { info() {}, warn() {} } });
  w.register("echo", (n: number) => n);
  await assert.rejects(within(w.run(), 10_000, "run with a wrong token"), (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.match(err.message, /the server refused the claim: .*HTTP 401 unauthorized/);
    assert.ok(err.cause instanceof ApiError && err.cause.code === "unauthorized");
    return true;
  });
});
