// Client against a real skein serve: deploy, start, status, wait, resolve
// and cancel, and errors that keep the API's status, code and message.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { ApiError, Client, UnreachableError } from "../src/index.js";
import { client, env, need, settled, until } from "./helpers.js";

const wasm = (): Promise<Buffer> => readFile(need("SKEIN_SERVER_WASM"));

/** awaitPromise waits until run id waits on its promise key and returns the promise's full id. */
async function awaitPromise(c: Client, id: string, key: string): Promise<string> {
  return until(async () => (await c.outcomes(id)).waiting?.promises.find((p) => p.key === key)?.id,
    20_000, `run ${id} waiting on promise ${key}`);
}

test("deploy, start, status, resolve and wait", { timeout: 60_000 }, async () => {
  const c = client();
  const first = await c.deploy(await wasm(), { name: "srv-ts" });
  assert.equal(first.name, "srv-ts");
  assert.match(first.hash, /^[0-9a-f]{64}$/);
  assert.ok(first.workflows.includes("waiter"), `workflows ${first.workflows}`);
  assert.equal(first.created, true);
  const again = await c.deploy(await wasm(), { name: "srv-ts" });
  assert.equal(again.created, false, "the same bytes deployed again are not new");
  assert.equal(again.hash, first.hash);
  assert.equal((await c.module("srv-ts")).hash, first.hash);

  const run = await c.start({ module: "srv-ts", workflow: "waiter", id: "ts-w1", input: {} });
  assert.equal(run.id, "ts-w1");
  assert.equal(run.created, true);
  assert.equal(run.module, first.hash);
  const same = await c.start({ module: "srv-ts", workflow: "waiter", id: "ts-w1", input: {} });
  assert.equal(same.created, false, "a start repeated with the same request creates nothing");

  const pid = await awaitPromise(c, "ts-w1", "approve");
  assert.equal(pid, "ts-w1.approve");
  assert.ok(["running", "suspended"].includes((await c.status("ts-w1")).status));
  await assert.rejects(c.resolve(pid, { value: 7 }), (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, "bad_request");
    assert.match(err.message, /does not have the expected shape/);
    return true;
  });
  const ok = await c.resolve(pid, { value: "yes" });
  assert.deepEqual(ok, { promise: "ts-w1.approve", status: "ok" });
  assert.equal((await c.resolve(pid, { value: "yes" })).already_settled, true);
  await assert.rejects(c.resolve(pid, { value: "no" }), { name: "ApiError", status: 409, code: "conflict" });

  const view = await c.wait("ts-w1", settled());
  assert.equal(view.status, "completed");
  assert.equal(view.result, "approved: yes");
  assert.deepEqual(view.outcomes.map((o) => [o.key, o.function, o.status, o.value]),
    [["approve", "promise", "ok", "yes"], ["2", "approved", "ok", "approved: yes"]]);
});

test("cancel, and a promise settled with an error", { timeout: 60_000 }, async () => {
  const c = client();
  await c.deploy(await wasm(), { name: "srv-ts" });
  await c.start({ module: "srv-ts", workflow: "waiter", id: "ts-c1" });
  await awaitPromise(c, "ts-c1", "approve");
  const asked = await c.cancel("ts-c1", { reason: "changed my mind" });
  assert.equal(asked.cancel_reason, "changed my mind");
  const view = await c.wait("ts-c1", settled());
  assert.equal(view.status, "canceled");
  assert.match(view.error ?? "", /changed my mind/);
  await assert.rejects(c.cancel("ts-c1"), { name: "ApiError", status: 409, code: "conflict" });

  await c.start({ module: "srv-ts", workflow: "waiter", id: "ts-e1" });
  const pid = await awaitPromise(c, "ts-e1", "approve");
  assert.deepEqual(await c.resolve(pid, { error: "refused by bo" }), { promise: pid, status: "error" });
  const failed = await c.wait("ts-e1", settled());
  assert.equal(failed.status, "failed");
  assert.match(failed.error ?? "", /refused by bo/);
});

test("errors keep the API's status, code and message", { timeout: 30_000 }, async () => {
  const c = client();
  await assert.rejects(c.status("nope"), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "not_found");
    assert.equal(err.message, 'no run "nope"');
    assert.equal(String(err), 'ApiError: no run "nope" (HTTP 404 not_found)');
    return true;
  });
  await assert.rejects(c.wait("nope"), { name: "ApiError", status: 404, code: "not_found" });
  await assert.rejects(c.deploy(new TextEncoder().encode("not wasm"), { name: "bad" }),
    { name: "ApiError", status: 400, code: "invalid_module" });
  await assert.rejects(c.start({ module: "no-such-module" }), { name: "ApiError", status: 404, code: "not_found" });
  await c.deploy(await wasm(), { name: "srv-ts" });
  await c.start({ module: "srv-ts", workflow: "waiter", id: "ts-x1" });
  await assert.rejects(c.start({ module: "srv-ts", workflow: "sleeper", id: "ts-x1" }),
    (err: unknown) => err instanceof ApiError && err.status === 409 && err.code === "conflict" && /workflow/.test(err.message));
  await c.cancel("ts-x1");

  const noToken = new Client({ server: env.server });
  await assert.rejects(noToken.status("ts-x1"), { name: "ApiError", status: 401, code: "unauthorized" });
  const wrong = new Client({ server: env.server, token: "wrong" });
  await assert.rejects(wrong.status("ts-x1"), { name: "ApiError", status: 401, code: "unauthorized" });
});

test("a server that cannot be reached, and a URL that is not one", async () => {
  const gone = new Client({ server: "http://127.0.0.1:1" });
  await assert.rejects(gone.status("r1"), (err: unknown) => {
    assert.ok(err instanceof UnreachableError, String(err));
    assert.equal(err.server, "http://127.0.0.1:1");
    assert.match(err.message, /^cannot reach the skein server at http:\/\/127\.0\.0\.1:1: /);
    return true;
  });
  for (const server of ["", "127.0.0.1:7070", "ftp://x"]) {
    assert.throws(() => new Client({ server }), { name: "TypeError", message: /is not an http:\/\/ or https:\/\/ URL/ });
  }
  const ac = new AbortController();
  ac.abort(new Error("enough"));
  await assert.rejects(client().status("r1", { signal: ac.signal }), { message: "enough" });
});
