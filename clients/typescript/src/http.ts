// The one place requests are sent: the server's URL and token, JSON in and
// out, and error answers made into ApiError, failed requests into
// UnreachableError. Client and Worker share it.

import { ApiError, UnreachableError } from "./errors.js";

/** What a Client or a Worker needs to reach a server. */
export interface ServerOptions {
  /** The base URL of the skein server, "http://127.0.0.1:7070". */
  server: string;
  /** The server's API token (skein serve --token), if it has one. */
  token?: string;
  /** The fetch to send requests with; default the global fetch. */
  fetch?: typeof fetch;
}

/** One request of the API. */
export interface Request {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string>;
  /** A JSON body; sent as application/json. */
  json?: unknown;
  /** A binary body (a module); sent as application/wasm. */
  bytes?: Uint8Array;
  signal?: AbortSignal;
}

/** An answer of the API: its status and its JSON body. */
export interface Answer<T> {
  status: number;
  body: T;
}

/** Transport sends the requests of one server. */
export class Transport {
  readonly server: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(o: ServerOptions, who: string) {
    let u: URL | undefined;
    try {
      u = new URL(o.server);
    } catch {
      u = undefined;
    }
    if (u === undefined || (u.protocol !== "http:" && u.protocol !== "https:") || u.host === "") {
      throw new TypeError(`${who}: server ${JSON.stringify(o.server)} is not an http:// or https:// URL`);
    }
    this.server = o.server.replace(/\/+$/, "");
    this.#token = o.token ?? "";
    this.#fetch = o.fetch ?? globalThis.fetch;
  }

  /**
   * send sends rq and returns the answer's JSON (undefined for an empty
   * body). An error answer rejects with an ApiError; a request that got no
   * answer with an UnreachableError; a request whose signal was aborted
   * with the signal's reason.
   */
  async send<T>(rq: Request): Promise<Answer<T>> {
    let url = this.server + rq.path;
    if (rq.query !== undefined && Object.keys(rq.query).length > 0) {
      url += "?" + new URLSearchParams(rq.query).toString();
    }
    const headers: Record<string, string> = { Accept: "application/json" };
    let body: string | Uint8Array | undefined;
    if (rq.bytes !== undefined) {
      headers["Content-Type"] = "application/wasm";
      body = rq.bytes;
    } else if (rq.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(rq.json);
    }
    if (this.#token !== "") {
      headers["Authorization"] = "Bearer " + this.#token;
    }
    let resp: Response;
    let text: string;
    try {
      resp = await this.#fetch(url, { method: rq.method, headers, body, signal: rq.signal });
      text = await resp.text();
    } catch (err) {
      if (rq.signal?.aborted) {
        throw rq.signal.reason;
      }
      throw new UnreachableError(this.server, err);
    }
    if (resp.status < 200 || resp.status > 299) {
      throw answerError(rq, resp.status, text);
    }
    if (text.trim() === "") {
      return { status: resp.status, body: undefined as T };
    }
    try {
      return { status: resp.status, body: JSON.parse(text) as T };
    } catch (err) {
      throw new Error(`${rq.method} ${rq.path}: the answer is not what skein serve sends: ${String(err)}`);
    }
  }
}

/** answerError is the ApiError of an error answer with body text. */
function answerError(rq: Request, status: number, text: string): ApiError {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
    if (e !== undefined && typeof e.code === "string" && e.code !== "") {
      return new ApiError(status, e.code, typeof e.message === "string" ? e.message : "");
    }
  } catch {
    // not the API's error body: said below as it is
  }
  return new ApiError(status, "", `${rq.method} ${rq.path}: ${text.trim()}`);
}

/** esc escapes a path segment (a run id, a name). */
export function esc(s: string): string {
  return encodeURIComponent(s);
}

/**
 * sleep waits ms milliseconds, or until signal is aborted (then it resolves
 * early: the caller looks at the signal).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
