// What the tests share: the servers the Go test started (cmd/skein,
// TestTypeScriptClient), the modules it built, and small waits.

import { readFile } from "node:fs/promises";

import { Client, type WaitOptions, Worker, type WorkerOptions } from "../src/index.js";

/** need returns the environment variable name, which the Go test sets. */
export function need(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") {
    throw new Error(`$${name} is not set: these tests run against a real skein serve, ` +
      "started by `go test ./cmd/skein/ -run TypeScript` (with SKEIN_TEST_ALL=1)");
  }
  return v;
}

/**
 * The servers: SKEIN_SERVER with a task lease of one minute (an attempt
 * whose worker stops reporting would wait that long), SKEIN_SERVER_SHORT_LEASE
 * with one of a second (heartbeats every third of it), both with the
 * token SKEIN_TOKEN.
 */
export const env = {
  get server(): string {
    return need("SKEIN_SERVER");
  },
  get shortLease(): string {
    return need("SKEIN_SERVER_SHORT_LEASE");
  },
  get token(): string {
    return need("SKEIN_TOKEN");
  },
};

/**
 * settled is the options of a Client.wait in a test: it polls every 50 ms
 * and gives up after 30 s (rejecting with an Error that says so), so that a run
 * that never ends fails its test instead of holding the process.
 */
export function settled(): WaitOptions {
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("the run did not end within 30 s")), 30_000).unref();
  return { pollMs: 50, signal: ac.signal };
}

/** client returns a Client of server with the token. */
export function client(server = env.server): Client {
  return new Client({ server, token: env.token });
}

/** quietLogger keeps a worker's logs, for a test to read. */
export function quietLogger(): { lines: string[]; info: (m: string) => void; warn: (m: string, f?: object) => void } {
  const lines: string[] = [];
  return {
    lines,
    info: (m: string) => lines.push("INFO " + m),
    warn: (m: string, f?: object) => lines.push("WARN " + m + " " + JSON.stringify(f ?? {})),
  };
}

/** worker returns a Worker of server with the token and a quiet logger. */
export function worker(server: string, o: Partial<WorkerOptions> = {}): Worker {
  return new Worker({ server, token: env.token, logger: quietLogger(), ...o });
}

/**
 * deployRemote deploys testdata/workflows/remote (workflow "calls": n
 * calls of the activity name, retried up to attempts) as "remote" and
 * returns the module's name.
 */
export async function deployRemote(c: Client): Promise<string> {
  await c.deploy(await readFile(need("SKEIN_REMOTE_WASM")), { name: "remote" });
  return "remote";
}

/** Deferred is a promise with its resolve at hand. */
export class Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve!: (v: T) => void;

  constructor() {
    this.promise = new Promise<T>((r) => (this.resolve = r));
  }
}

/** within rejects when p has not settled within ms (what: what was awaited). */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** until calls f every 20 ms until it returns a value other than undefined, for up to ms. */
export async function until<T>(f: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) {
      return v;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${ms} ms`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
