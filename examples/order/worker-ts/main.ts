// The worker of examples/order in TypeScript: it serves the same
// activities as the Go worker (examples/order/worker/main.go),
// reserve-stock, release-stock and charge, with the same flags. It keeps
// its stock in memory and prints one line per attempt it runs ("charge o-1
// attempt 1"); with --webhook ADDR it also receives the order
// notifications the workflow posts with skein.HTTP (POST /orders on ADDR)
// and prints one line per notification ("notified o-1 placed").

import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { setTimeout as delay } from "node:timers/promises";

import { type ActivityInfo, NonRetryableError, Worker } from "@skeinrun/skein";

/** The run's input (examples/order/main.go). */
interface Order {
  id: string;
  item: string;
  qty: number;
  /** "declined" is refused on every attempt; "flaky" fails the first attempt. */
  card: string;
}

/** A hold on stock. */
interface Reservation {
  id: string;
  item: string;
  qty: number;
}

/** A charge made. */
interface Receipt {
  id: string;
  amount: number;
}

const { values: flags } = parseArgs({
  options: {
    server: { type: "string", default: "http://127.0.0.1:7070" },
    token: { type: "string", default: process.env.SKEIN_TOKEN ?? "" },
    id: { type: "string", default: "" },
    concurrency: { type: "string", default: "16" },
    delay: { type: "string", default: "0s" },
    webhook: { type: "string", default: "" },
  },
});

/** duration parses a Go-style duration of one unit: 150ms, 2s, 1m, 1h. */
function duration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(s);
  if (m === null) {
    throw new Error(`--delay ${JSON.stringify(s)}: want a duration such as 150ms, 2s, 1m or 1h`);
  }
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
}

const wait = duration(flags.delay);
const stock = new Map<string, number>([["book", 100], ["lamp", 5]]);

function log(what: string, subject: string, info: ActivityInfo): void {
  process.stdout.write(`${what} ${subject} attempt ${info.attempt}\n`);
}

/** pause stands for the time a real call takes (--delay); it ends with the attempt's signal. */
async function pause(info: ActivityInfo): Promise<void> {
  if (wait > 0) {
    await delay(wait, undefined, { signal: info.signal });
  }
}

async function reserve(o: Order, info: ActivityInfo): Promise<Reservation> {
  log("reserve-stock", o.id, info);
  await pause(info);
  const have = stock.get(o.item) ?? 0;
  if (have < o.qty) {
    throw new NonRetryableError(`only ${have} of ${JSON.stringify(o.item)} in stock`);
  }
  stock.set(o.item, have - o.qty);
  return { id: "res-" + info.idempotencyKey, item: o.item, qty: o.qty };
}

function release(r: Reservation, info: ActivityInfo): Reservation {
  log("release-stock", r.id, info);
  stock.set(r.item, (stock.get(r.item) ?? 0) + r.qty);
  return r;
}

async function charge(o: Order, info: ActivityInfo): Promise<Receipt> {
  log("charge", o.id, info);
  await pause(info);
  if (o.card === "declined") {
    throw new Error("card declined");
  }
  if (o.card === "flaky" && info.attempt === 1) {
    throw new Error("payment gateway unavailable");
  }
  return { id: "rcpt-" + info.idempotencyKey, amount: 10 * o.qty };
}

/** serveWebhook answers POST /orders on addr (host:port), printing each notification. */
function serveWebhook(addr: string): Promise<ReturnType<typeof createServer>> {
  const i = addr.lastIndexOf(":");
  const host = addr.slice(0, i).replace(/^\[|\]$/g, "");
  const port = Number(addr.slice(i + 1));
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/orders") {
      res.writeHead(404).end("not found\n");
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let n: { order?: unknown; status?: unknown };
      try {
        n = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch (err) {
        res.writeHead(400).end(`bad notification: ${String(err)}\n`);
        return;
      }
      process.stdout.write(`notified ${String(n.order)} ${String(n.status)}\n`);
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ received: n.order }) + "\n");
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`webhook: ${err.message}`)));
    server.listen(port, host, () => resolve(server));
  });
}

async function main(): Promise<void> {
  const hook = flags.webhook !== "" ? await serveWebhook(flags.webhook) : undefined;
  const w = new Worker({ server: flags.server, token: flags.token, identity: flags.id,
    concurrency: Number(flags.concurrency) });
  w.register("reserve-stock", reserve);
  w.register("release-stock", release);
  w.register("charge", charge);
  const stop = new AbortController();
  process.once("SIGINT", () => stop.abort());
  process.once("SIGTERM", () => stop.abort());
  try {
    await w.run(stop.signal);
  } finally {
    hook?.close();
    hook?.closeAllConnections();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
