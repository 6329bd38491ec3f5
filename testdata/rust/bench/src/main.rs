//! The workflows of the performance workloads (testdata/workflows/bench in
//! Go) in Rust, so that `skein bench --module` measures the same
//! workloads on a Rust module. Every step is a no-op that returns a small
//! integer.

use std::time::Duration;

use skein::{json, Ctx, Error, Result};

fn field(input: &str, key: &str) -> i64 {
    json::parse(input).ok().and_then(|v| v.get(key).and_then(json::Value::as_i64)).unwrap_or(0)
}

/// steps runs n no-op steps one after the other (keys 1..n), then waits
/// sleep_ms on a durable timer if it is > 0.
async fn steps(ctx: Ctx, input: String) -> Result<String> {
    let (n, sleep_ms) = (field(&input, "n"), field(&input, "sleep_ms"));
    let mut sum = 0i64;
    for i in 1..=n {
        let v = ctx.step("noop", |_| async move { Ok(i.to_string()) }).await?;
        sum += v.parse::<i64>().map_err(|e| Error::msg(e.to_string()))?;
    }
    if sleep_ms > 0 {
        ctx.sleep(Duration::from_millis(sleep_ms as u64)).await?;
    }
    Ok(sum.to_string())
}

/// fanout spawns n tasks, each running one no-op step, and joins them.
async fn fanout(ctx: Ctx, input: String) -> Result<String> {
    let n = field(&input, "n");
    let handles: Vec<_> = (0..n)
        .map(|i| ctx.spawn(move |c| async move { c.step("noop", |_| async move { Ok(i.to_string()) }).await }))
        .collect();
    let mut sum = 0i64;
    for h in handles {
        sum += h.await?.parse::<i64>().map_err(|e| Error::msg(e.to_string()))?;
    }
    Ok(sum.to_string())
}

/// call makes one host activity call (the activity named by the input) as
/// its first op and returns its result.
async fn call(ctx: Ctx, input: String) -> Result<String> {
    let activity = json::unquote(&input)?;
    ctx.call(&activity, "null").await
}

/// calls makes n calls of the activity named by the input, one after the
/// other, with inputs 0..n-1, and returns the sum of their results.
async fn calls(ctx: Ctx, input: String) -> Result<String> {
    let n = field(&input, "n");
    let v = json::parse(&input).map_err(Error::msg)?;
    let activity = v.get("activity").and_then(json::Value::as_str).unwrap_or("").to_string();
    let mut sum = 0i64;
    for i in 0..n {
        let r = ctx.call(&activity, &i.to_string()).await?;
        sum += r.parse::<i64>().map_err(|e| Error::msg(e.to_string()))?;
    }
    Ok(sum.to_string())
}

fn main() {
    skein::register("calls", calls);
    skein::register("steps", steps);
    skein::register("fanout", fanout);
    skein::register("call", call);
    skein::run()
}
