// Worker against a scripted server on loopback (node:http): what it sends
// on the wire, how it retries failed claims, keeps heartbeats at the
// interval the server asks, and gives up an attempt the server takes back.
// The real server's side of the same protocol is in worker.test.ts.

import assert from "node:assert/strict";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { type ActivityInfo, AttemptLostError, Worker } from "../src/index.js";
import { Deferred, quietLogger, within } from "./helpers.js";

/** A request the scripted server received. */
interface Received {
  path: string;
  auth: string | undefined;
  body: Record<string, unknown>;
}

type Answer = (rq: Received, res: ServerResponse, req: IncomingMessage) => void;

/** script starts a server that answers each request with answer; closed after the test. */
async function script(t: { after: (fn: () => void) => void }, answer: Answer): Promise<{ url: string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const rq = { path: req.url ?? "", auth: req.headers.authorization, body: text === "" ? {} : JSON.parse(text) };
      got.push(rq);
      answer(rq, res, req);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
}

const task = (o: Partial<Record<string, unknown>> = {}): Record<string, unknown> => ({
  run_id: "r1", key: "2", attempt: 1, name: "a", input: { x: 1 }, idempotency_key: "r1.2",
  lease_expiry: new Date(Date.now() + 30_000).toISOString(), heartbeat_ms: 30, ...o,
});

test("claims carry the worker's fields and are retried after network errors and 5xx, until a 401", { timeout: 30_000 }, async (t) => {
  const { url, got } = await script(t, (rq, res, req) => {
    if (got.length <= 2) {
      req.socket.destroy(); // no answer at all
    } else if (got.length === 3) {
      json(res, 503, { error: { code: "unavailable", message: "the database cannot be reached" } });
    } else {
      json(res, 401, { error: { code: "unauthorized", message: "missing or wrong token" } });
    }
  });
  const log = quietLogger();
  const w = new Worker({ server: url, token: "tk", identity: "fake-1", concurrency: 3, pollers: 1, waitMs: 500, logger: log });
  w.register("b", () => null).register("a", () => null);
  await assert.rejects(within(w.run(), 20_000, "run against a server that refuses"),
    /the server refused the claim: missing or wrong token \(HTTP 401 unauthorized\)/);
  assert.equal(got.length, 4, `requests: ${JSON.stringify(got)}`);
  for (const rq of got) {
    assert.equal(rq.path, "/v1/tasks/claim");
    assert.equal(rq.auth, "Bearer tk");
    assert.deepEqual(rq.body, { worker: "fake-1", names: ["a", "b"], max: 3, wait_ms: 500 });
  }
  const retries = log.lines.filter((l) => l.startsWith("WARN worker: claim failed; trying again"));
  assert.equal(retries.length, 3, log.lines.join("\n"));
  assert.match(retries[0] ?? "", /cannot reach the skein server/);
  assert.match(retries[2] ?? "", /the database cannot be reached/);
  assert.deepEqual(retries.map((l) => JSON.parse(l.slice(l.indexOf("{"))).inMs), [100, 200, 400]);
});

test("heartbeats at the interval the server asks; a 409 aborts the attempt, which is not reported", { timeout: 30_000 }, async (t) => {
  let claims = 0;
  const { url, got } = await script(t, (rq, res) => {
    switch (rq.path) {
      case "/v1/tasks/claim":
        claims++;
        if (claims === 1) {
          json(res, 200, { tasks: [task()] });
        } else {
          setTimeout(() => json(res, 200, { tasks: [] }), 200); // a long poll that ends empty
        }
        return;
      case "/v1/tasks/heartbeat": {
        const n = got.filter((r) => r.path === "/v1/tasks/heartbeat").length;
        if (n < 3) {
          json(res, 200, { lease_expiry: new Date(Date.now() + 30_000).toISOString() });
        } else {
          json(res, 409, { error: { code: "conflict", message: 'run "r1" was canceled: changed my mind' } });
        }
        return;
      }
      default:
        json(res, 200, { status: "completed" });
    }
  });
  const w = new Worker({ server: url, identity: "fake-2", concurrency: 1, logger: quietLogger() });
  const ended = new Deferred<{ info: ActivityInfo; input: unknown }>();
  w.register("a", async (input: unknown, info: ActivityInfo) => {
    await new Promise((r) => info.signal.addEventListener("abort", r, { once: true }));
    ended.resolve({ info, input });
    throw info.signal.reason;
  });
  const stop = new AbortController();
  const done = w.run(stop.signal);
  const { info, input } = await within(ended.promise, 10_000, "the abort of the attempt");
  assert.deepEqual(input, { x: 1 });
  assert.ok(info.signal.reason instanceof AttemptLostError);
  assert.match(info.signal.reason.message, /changed my mind/);
  stop.abort();
  await within(done, 10_000, "run's end");
  const hbs = got.filter((r) => r.path === "/v1/tasks/heartbeat");
  assert.equal(hbs.length, 3);
  for (const hb of hbs) {
    assert.deepEqual(hb.body, { run_id: "r1", key: "2", attempt: 1, worker: "fake-2" });
  }
  const reports = got.filter((r) => r.path === "/v1/tasks/complete" || r.path === "/v1/tasks/fail");
  assert.deepEqual(reports, [], "an attempt the server took back is not reported");
});

test("results, failures and timeouts are reported for the attempt claimed", { timeout: 30_000 }, async (t) => {
  const tasks = [task({ key: "1", name: "ok" }), task({ key: "2", name: "throws" }),
    task({ key: "3", name: "slow", timeout_ms: 50 }), task({ key: "4", name: "nobody" }),
    task({ key: "5", name: "undef" })];
  const reported = new Deferred();
  const { url, got } = await script(t, (rq, res) => {
    if (rq.path === "/v1/tasks/claim") {
      const n = got.filter((r) => r.path === "/v1/tasks/claim").length;
      return n === 1 ? json(res, 200, { tasks }) : void setTimeout(() => json(res, 200, { tasks: [] }), 200);
    }
    json(res, 200, { status: rq.path === "/v1/tasks/fail" ? "failed" : "completed" });
    if (got.filter((r) => r.path !== "/v1/tasks/claim" && r.path !== "/v1/tasks/heartbeat").length === tasks.length) {
      reported.resolve();
    }
  });
  const w = new Worker({ server: url, identity: "fake-3", logger: quietLogger() });
  w.register("ok", (input: { x: number }, info: ActivityInfo) => ({ twice: 2 * input.x, key: info.idempotencyKey }));
  w.register("throws", () => {
    throw new TypeError("bad thing");
  });
  w.register("slow", async (_: unknown, info: ActivityInfo) => {
    assert.ok(info.deadline instanceof Date);
    await new Promise((r) => info.signal.addEventListener("abort", r, { once: true }));
    throw info.signal.reason;
  });
  w.register("undef", () => undefined);
  const stop = new AbortController();
  const done = w.run(stop.signal);
  await within(reported.promise, 10_000, "the reports of five attempts");
  stop.abort();
  await within(done, 10_000, "run's end");
  const byKey = Object.fromEntries(got.filter((r) => r.path === "/v1/tasks/complete" || r.path === "/v1/tasks/fail")
    .map((r) => [String(r.body.key), { path: r.path, ...r.body }]));
  const ref = (key: string) => ({ run_id: "r1", key, attempt: 1, worker: "fake-3" });
  assert.deepEqual(byKey["1"], { path: "/v1/tasks/complete", ...ref("1"), result: { twice: 2, key: "r1.2" } });
  assert.deepEqual(byKey["2"], { path: "/v1/tasks/fail", ...ref("2"), error: "TypeError: bad thing", non_retryable: false });
  assert.deepEqual(byKey["3"], { path: "/v1/tasks/fail", ...ref("3"),
    error: "TimeoutError: the attempt's timeout of 50 ms passed", non_retryable: false });
  assert.deepEqual(byKey["4"], { path: "/v1/tasks/fail", ...ref("4"),
    error: "no activity of this name is registered on the worker", non_retryable: true });
  assert.deepEqual(byKey["5"], { path: "/v1/tasks/complete", ...ref("5"), result: null });
});

test("register and run refuse mistakes", async () => {
  const w = new Worker({ server: "http://127.0.0.1:1", logger: quietLogger() });
  await assert.rejects(w.run(), /no activity is registered/);
  w.register("a", () => 1);
  assert.throws(() => w.register("a", () => 2), /activity "a" registered twice/);
  assert.throws(() => w.register("", () => 2), TypeError);
  assert.throws(() => w.register("b", undefined as never), TypeError);
  assert.throws(() => new Worker({ server: "127.0.0.1:7070" }), /is not an http:\/\/ or https:\/\/ URL/);
  assert.throws(() => new Worker({ server: "http://127.0.0.1:1", concurrency: -1 }), /concurrency must be a positive integer/);
  assert.match(w.identity, /^.+-\d+-[0-9a-f]{8}$/);
  const stop = new AbortController();
  stop.abort();
  await within(w.run(stop.signal), 5_000, "run with its signal aborted already");
});
