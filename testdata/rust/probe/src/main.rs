//! Workflows that the Rust SDK's tests (guest-sdk/rust/sdk_test.go) run
//! through the real host: every op kind, the name rules, promises settled
//! from outside, cancellation, retries and panics.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use skein::{json, AttrValue, Ctx, Error, Opts, ParentClose, Result, Retry};

/// "rule|scope|message" of an id error, or what the error was instead.
fn rule_of(r: &Result<String>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(Error::Id(e)) => format!("{}|{}|{}", e.rule, e.scope, e.message),
        Err(e) => format!("not an id error: {}", e),
    }
}

fn object(fields: Vec<(String, String)>) -> String {
    let v = json::Value::Object(fields.into_iter().map(|(k, v)| (k, json::Value::String(v))).collect());
    v.to_string()
}

/// Every op kind with an explicit empty name: each is an id error before
/// anything is issued, so the step "after" still takes key 1.
async fn emptyname(ctx: Ctx, _: String) -> Result<String> {
    let mut out = Vec::new();
    let r = ctx.id("").step("body", |_| async { Ok(json::quote("ran")) }).await;
    out.push(("step".to_string(), rule_of(&r)));
    let r = ctx.id("").spawn(|_| async { Ok("1".to_string()) }).await;
    out.push(("go".to_string(), rule_of(&r)));
    let r = ctx.id("").parallel().wait().await.map(|_| String::new());
    out.push(("parallel".to_string(), rule_of(&r)));
    let r = ctx.id("").sleep(Duration::from_millis(1)).await;
    out.push(("sleep".to_string(), rule_of(&r)));
    let r = ctx.id("").promise().await;
    out.push(("promise".to_string(), rule_of(&r)));
    let r = ctx.id("").call("nothing", "null").await;
    out.push(("call".to_string(), rule_of(&r)));
    let r = ctx.id("").child("emptyname", "null").await;
    out.push(("child".to_string(), rule_of(&r)));
    ctx.step("after", |_| async { Ok("1".to_string()) }).await?;
    let inner = ctx
        .spawn(|c| async move {
            let r = c.id("").step("body", |_| async { Ok(json::quote("ran")) }).await;
            Ok(json::quote(&rule_of(&r)))
        })
        .await?;
    out.push(("in-task".to_string(), json::unquote(&inner)?));
    Ok(object(out))
}

/// Every other naming rule (the Go probe's badnames): per attempt, the
/// rule reported ("ok" when the op was issued).
async fn badnames(ctx: Ctx, _: String) -> Result<String> {
    let mut out = Vec::new();
    let cases = [
        ("dot", "a.b".to_string()),
        ("space", "a b".to_string()),
        ("tab", "a\tb".to_string()),
        ("numeric", "123".to_string()),
        ("task", "t5".to_string()),
        ("long", "x".repeat(301)),
        ("max", "y".repeat(300)),
        ("first", "dup".to_string()),
        ("dup", "dup".to_string()),
        ("fanout-step", "fanout".to_string()),
    ];
    for (label, name) in cases.iter() {
        let r = ctx.id(name.clone()).step("body", |_| async { Ok(json::quote(label)) }).await;
        out.push((label.to_string(), rule_name(&r)));
    }
    let r = ctx.id("fanout").parallel().wait().await.map(|_| String::new());
    out.push(("fanout-fork".to_string(), rule_name(&r)));
    let mut g = ctx.id("fan2").parallel();
    for _ in 0..2 {
        g.go(|c| async move { c.id("same").step("body", |_| async { Ok(json::quote("branch")) }).await });
    }
    let r = g.wait().await.map(|_| String::new());
    out.push(("branches".to_string(), rule_name(&r)));
    let r = ctx.id("x.y").spawn(|_| async { Ok("1".to_string()) }).await;
    out.push(("go".to_string(), rule_name(&r)));
    let r = ctx.id("9").sleep(Duration::from_millis(1)).await;
    out.push(("sleep".to_string(), rule_name(&r)));
    Ok(object(out))
}

fn rule_name(r: &Result<String>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(Error::Id(e)) => e.rule.clone(),
        Err(e) => format!("error: {}", e),
    }
}

/// Uses every op kind once and returns what each gave.
async fn ops(ctx: Ctx, input: String) -> Result<String> {
    let mut out = Vec::new();
    let start = ctx.now();
    // A step whose body uses real time and randomness, and waits.
    let v = ctx
        .id("body")
        .step("body", |s| async move {
            let t0 = s.now();
            let mut b = [0u8; 16];
            s.rand(&mut b);
            s.sleep(Duration::from_millis(5)).await;
            let real = t0.duration_since(UNIX_EPOCH).map(|d| d.as_secs() > 1_600_000_000).unwrap_or(false);
            Ok(format!("{}", real && b.iter().any(|&x| x != 0)))
        })
        .await?;
    out.push(("step".to_string(), v));
    out.push(("call".to_string(), ctx.call("echo", &input).await?));
    let timer = ctx.sleep(Duration::from_millis(20));
    let promise = ctx.id("approval").promise();
    let i = ctx.select(&[&promise, &timer]).await?;
    out.push(("select".to_string(), format!("{} {}", i, promise.key())));
    out.push(("sleep".to_string(), timer.await?));
    out.push(("child".to_string(), ctx.child("double", "21").await?));
    let t = ctx.spawn(|c| async move {
        let a = c.step("one", |_| async { Ok("1".to_string()) }).await?;
        Ok(format!("{}", a.parse::<i64>().unwrap_or(0) + 1))
    });
    out.push(("spawn".to_string(), t.await?));
    let mut g = ctx.id("fan").parallel();
    for i in 0..3 {
        g.go(move |c| async move { c.step("branch", |_| async move { Ok(format!("{}", i * 10)) }).await });
    }
    let fork = g.key().to_string();
    out.push(("parallel".to_string(), format!("{} {:?}", fork, g.wait().await?)));
    let retried = ctx
        .with(Opts::new().retry(Retry { max_attempts: 2, initial_backoff: Duration::from_millis(1), ..Default::default() }))
        .step("flaky", |_| async { Err(Error::msg("flaky")) })
        .await;
    out.push(("retry".to_string(), format!("{:?}", retried)));
    let fatal = ctx
        .with(Opts::new().retry(Retry::default()))
        .step("fatal", |_| async { Err(Error::non_retryable("fatal")) })
        .await;
    out.push(("non-retryable".to_string(), format!("{:?}", fatal)));
    let keys: Vec<String> = ctx.outcomes().keys().cloned().collect();
    out.push(("outcomes".to_string(), keys.join(",")));
    out.push(("err".to_string(), format!("{:?}", ctx.err())));
    out.push(("virtual-time".to_string(), format!("{}", ctx.now() >= start)));
    Ok(object(out))
}

/// The child workflow of ops: twice its input.
/// steps: input n unnamed steps in a row, each returning its index; the
/// result is their sum. Its replay takes the steps from feeds.
async fn steps(ctx: Ctx, input: String) -> Result<String> {
    let n: i64 = input.trim().parse().map_err(|_| Error::msg(format!("not a number: {}", input)))?;
    let mut sum = 0;
    for i in 1..=n {
        let v = ctx.step("inc", |_| async move { Ok(format!("{}", i)) }).await?;
        sum += v.parse::<i64>().map_err(|_| Error::msg(format!("step {} returned {}", i, v)))?;
    }
    Ok(format!("{}", sum))
}

async fn double(_: Ctx, input: String) -> Result<String> {
    let n: i64 = input.trim().parse().map_err(|_| Error::msg(format!("not a number: {}", input)))?;
    Ok(format!("{}", 2 * n))
}

/// Waits for the promise "approval", settled from outside; on a
/// cancellation it runs a compensating step instead.
async fn approval(ctx: Ctx, _: String) -> Result<String> {
    match ctx.id("approval").promise().await {
        Ok(v) => Ok(v),
        Err(Error::Canceled(reason)) => {
            let canceled = ctx.err().is_err();
            ctx.step("compensate", |_| async { Ok(json::quote(&format!("compensated ({}, err {})", reason, canceled))) })
                .await
        }
        Err(e) => Err(e),
    }
}

/// Panics in the root task.
async fn panics(ctx: Ctx, _: String) -> Result<String> {
    ctx.step("before", |_| async { Ok("1".to_string()) }).await?;
    panic!("boom in the root task");
}

/// A step whose body runs past its timeout fails with the host's timeout
/// error (the body's own value is dropped).
async fn timeout(ctx: Ctx, _: String) -> Result<String> {
    let r = ctx
        .with(Opts::new().timeout(Duration::from_millis(1)))
        .step("slow", |s| async move {
            s.sleep(Duration::from_millis(30)).await;
            Ok(json::quote("too late"))
        })
        .await;
    match r {
        Err(Error::Failed(text)) => Ok(json::quote(&text)),
        other => Err(Error::msg(format!("want a timeout, got {:?}", other))),
    }
}

/// attempts: a step that fails twice, then succeeds, by its durable
/// attempt number (StepCtx::attempt); its value does not depend on the
/// number, so a crash that uses up an attempt changes nothing. A step
/// without a retry policy runs as attempt 1.
async fn attempts(ctx: Ctx, _: String) -> Result<String> {
    let flaky = ctx
        .with(Opts::new().retry(Retry { max_attempts: 5, initial_backoff: Duration::from_millis(1), ..Default::default() }))
        .step("flaky", |s| async move {
            if s.attempt() < 3 {
                return Err(Error::msg(format!("attempt {} fails", s.attempt())));
            }
            Ok("true".to_string())
        })
        .await?;
    let plain = ctx.step("plain", |s| async move { Ok(format!("{}", s.attempt())) }).await?;
    Ok(object(vec![("flaky".to_string(), flaky), ("plain".to_string(), plain)]))
}

/// leaves: a 10 ms timer wins over the child "approval" (a promise nobody
/// settles), and the run ends while its child waits; input "abandon"
/// leaves the child running, anything else cancels it.
async fn leaves(ctx: Ctx, input: String) -> Result<String> {
    let policy = if json::unquote(&input).as_deref() == Ok("abandon") { ParentClose::Abandon } else { ParentClose::Cancel };
    let child = ctx.with(Opts::new().parent_close(policy)).child("approval", "null");
    let timer = ctx.sleep(Duration::from_millis(10));
    let i = ctx.select(&[&timer, &child]).await?;
    Ok(json::quote(if i == 0 { "the timer won" } else { "the child won" }))
}

/// Returns a value that is not JSON.
async fn notjson(_: Ctx, _: String) -> Result<String> {
    Ok("not json".to_string())
}

/// lost: a 10ms timer wins a select over a task whose step body takes
/// 500ms; the run ends with that step in flight. Returns the winner, 0.
async fn lost(ctx: Ctx, _: String) -> Result<String> {
    let timer = ctx.sleep(Duration::from_millis(10));
    let worker = ctx.id("worker").spawn(|c| async move {
        c.step("compute", |s| async move {
            s.sleep(Duration::from_millis(500)).await;
            Ok(json::quote("computed"))
        })
        .await
    });
    let i = ctx.select(&[&timer, &worker]).await?;
    Ok(format!("{}", i))
}

/// broken: a step body sets workflow state, so a replay (which does not
/// run the body) issues a step the live run never issued.
async fn broken(ctx: Ctx, _: String) -> Result<String> {
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    ctx.step("a", move |_| {
        let r = r.clone();
        async move {
            r.set(true);
            Ok("1".to_string())
        }
    })
    .await?;
    if !ran.get() {
        return ctx.step("only-on-replay", |_| async { Ok(json::quote("replayed")) }).await;
    }
    Ok(json::quote("live"))
}

/// attrs: sets search attributes of every type, waits on a timer (a
/// replay point), then sets an undeclared one and one of the wrong type;
/// returns those two errors.
async fn attrs(ctx: Ctx, _: String) -> Result<String> {
    ctx.set_attributes(&[
        ("customer", AttrValue::Int(42)),
        ("region", AttrValue::Str("eu".to_string())),
        ("score", AttrValue::Float(2.0)),
        ("vip", AttrValue::Bool(true)),
        ("seen", AttrValue::Time(1_700_000_000_123_456_789)),
    ])
    .await?;
    ctx.sleep(Duration::from_millis(1)).await?;
    let undeclared = ctx.set_attributes(&[("nope", AttrValue::Int(1))]).await;
    let wrong = ctx.set_attributes(&[("customer", AttrValue::Str("x".to_string()))]).await;
    ctx.set_attributes(&[("region", AttrValue::Str("us".to_string()))]).await?;
    let text = |r: Result<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    Ok(object(vec![("undeclared".to_string(), text(undeclared)), ("wrong".to_string(), text(wrong))]))
}

fn main() {
    skein::register("attrs", attrs);
    skein::register("lost", lost);
    skein::register("broken", broken);
    skein::register("emptyname", emptyname);
    skein::register("badnames", badnames);
    skein::register("ops", ops);
    skein::register("double", double);
    skein::register("steps", steps);
    skein::register("approval", approval);
    skein::register("panics", panics);
    skein::register("notjson", notjson);
    skein::register("timeout", timeout);
    skein::register("attempts", attempts);
    skein::register("leaves", leaves);
    skein::run()
}
