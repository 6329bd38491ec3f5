// Client calls the HTTP API of a skein server (docs/api.md): deploy a
// module, start a run, read its status and outcomes, wait for its end,
// settle a promise, cancel a run.

import { ApiError } from "./errors.js";
import { type ServerOptions, Transport, esc, sleep } from "./http.js";
import {
  type ActivityTask,
  type Deployed,
  ENDED,
  type Module,
  type OutcomeView,
  type Resolved,
  type Run,
  type Settlement,
  type StartRequest,
  type Started,
} from "./types.js";

/** Options of every call: a signal that ends it. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of Client.wait. */
export interface WaitOptions extends CallOptions {
  /** How often the run is read; default 250 ms (the API has no long poll for a run's end). */
  pollMs?: number;
}

/**
 * Client calls one skein server. Every method returns the API's document;
 * an error answer rejects with an ApiError (its status, code and message),
 * a server that cannot be reached with an UnreachableError.
 *
 *     const c = new Client({ server: "http://127.0.0.1:7070", token });
 *     await c.deploy(await readFile("order.wasm"), { name: "order" });
 *     await c.start({ module: "order", id: "o-1", input: { id: "o-1", item: "book", qty: 2, card: "visa" } });
 *     const view = await c.wait("o-1");
 */
export class Client {
  readonly #t: Transport;

  constructor(o: ServerOptions) {
    this.#t = new Transport(o, "Client");
  }

  /** The server's URL, without a trailing slash. */
  get server(): string {
    return this.#t.server;
  }

  /**
   * deploy uploads a module's .wasm bytes (POST /v1/modules), under name
   * when given. `created` is false when the same bytes were deployed before.
   */
  async deploy(wasm: Uint8Array | ArrayBuffer, o: CallOptions & { name?: string } = {}): Promise<Deployed> {
    const bytes = wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm);
    const a = await this.#t.send<Module>({
      method: "POST",
      path: "/v1/modules",
      query: o.name !== undefined && o.name !== "" ? { name: o.name } : undefined,
      bytes,
      signal: o.signal,
    });
    return { ...a.body, created: a.status === 201 };
  }

  /** module returns a stored module by hash or name (GET /v1/modules/{ref}). */
  async module(ref: string, o: CallOptions = {}): Promise<Module> {
    return (await this.#t.send<Module>({ method: "GET", path: "/v1/modules/" + esc(ref), signal: o.signal })).body;
  }

  /**
   * start starts a run (POST /v1/runs). Starting an id again with the same
   * module, workflow and input creates nothing and answers the run with
   * `created: false`, so a start can be retried safely.
   */
  async start(req: StartRequest, o: CallOptions = {}): Promise<Started> {
    const a = await this.#t.send<Run>({ method: "POST", path: "/v1/runs", json: req, signal: o.signal });
    return { ...a.body, created: a.status === 201 };
  }

  /** status returns a run's record (GET /v1/runs/{id}). */
  async status(id: string, o: CallOptions = {}): Promise<Run> {
    return (await this.#t.send<Run>({ method: "GET", path: "/v1/runs/" + esc(id), signal: o.signal })).body;
  }

  /** outcomes returns a run with its outcome table (GET /v1/runs/{id}/outcomes). */
  async outcomes(id: string, o: CallOptions = {}): Promise<OutcomeView> {
    const path = "/v1/runs/" + esc(id) + "/outcomes";
    return (await this.#t.send<OutcomeView>({ method: "GET", path, signal: o.signal })).body;
  }

  /** tasks returns a run's remote activity calls, in the order it issued them (GET /v1/runs/{id}/tasks). */
  async tasks(id: string, o: CallOptions = {}): Promise<ActivityTask[]> {
    const path = "/v1/runs/" + esc(id) + "/tasks";
    return (await this.#t.send<{ tasks: ActivityTask[] }>({ method: "GET", path, signal: o.signal })).body.tasks;
  }

  /**
   * wait reads the run's outcomes until it has ended (completed, failed,
   * diverged, canceled or continued) and returns them; check `status`. An
   * error answer (an unknown run: `not_found`) ends the wait; once the
   * server has answered, a failure to reach it (a restart) is tried again
   * until the signal is aborted.
   */
  async wait(id: string, o: WaitOptions = {}): Promise<OutcomeView> {
    const poll = o.pollMs !== undefined && o.pollMs > 0 ? o.pollMs : 250;
    let reached = false;
    for (;;) {
      try {
        const v = await this.outcomes(id, o);
        reached = true;
        if (ENDED.includes(v.status)) {
          return v;
        }
      } catch (err) {
        if (o.signal?.aborted || !reached || err instanceof ApiError) {
          throw err;
        }
      }
      await sleep(poll, o.signal);
      o.signal?.throwIfAborted();
    }
  }

  /**
   * resolve settles the external promise whose full id is `{run}.{key}`
   * (POST /v1/promises/{id}) with a value or an error text. Settling again
   * with the same outcome answers `already_settled: true`; with another,
   * rejects with a `409 conflict` ApiError.
   */
  async resolve(promiseId: string, s: Settlement, o: CallOptions = {}): Promise<Resolved> {
    const json = "error" in s ? { error: s.error } : { value: s.value === undefined ? null : s.value };
    const path = "/v1/promises/" + esc(promiseId);
    return (await this.#t.send<Resolved>({ method: "POST", path, json, signal: o.signal })).body;
  }

  /**
   * cancel requests a run's cancellation (POST /v1/runs/{id}/cancel) and
   * returns the run as stored; its status changes once the server delivers
   * the cancellation. An ended run rejects with a `409 conflict` ApiError.
   */
  async cancel(id: string, o: CallOptions & { reason?: string } = {}): Promise<Run> {
    const json = o.reason !== undefined ? { reason: o.reason } : {};
    const path = "/v1/runs/" + esc(id) + "/cancel";
    return (await this.#t.send<Run>({ method: "POST", path, json, signal: o.signal })).body;
  }
}
