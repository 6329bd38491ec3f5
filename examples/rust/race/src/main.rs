//! The reference race of docs/design.md ("Ids") in Rust (examples/race in Go):
//! two chains of steps run concurrently, the one that starts first
//! finishes last, and a pending timer forces the run to be replayed. With
//! ids keyed on task lineage the result is right on every replay: keys 1,
//! t2.1, t2.2, t3.1, t3.2 and result ["s2:slow-result","f2:fast-result"].

use std::time::Duration;

use skein::{json, Ctx, Result};

async fn race(ctx: Ctx, _input: String) -> Result<String> {
    let timer = ctx.sleep(Duration::from_millis(200)); // key 1

    let chain_a = ctx.spawn(|ctx| async move {
        // scope t2
        let a = ctx
            .step("slow", |s| async move {
                s.sleep(Duration::from_millis(100)).await; // loses the live race
                Ok(json::quote("slow-result"))
            })
            .await?;
        let a = json::unquote(&a)?;
        ctx.step("mark", |_| async { Ok(json::quote(&format!("s2:{}", a))) }).await
    });
    let chain_b = ctx.spawn(|ctx| async move {
        // scope t3
        let b = ctx.step("fast", |_| async { Ok(json::quote("fast-result")) }).await?;
        let b = json::unquote(&b)?;
        ctx.step("mark", |_| async { Ok(json::quote(&format!("f2:{}", b))) }).await
    });

    let r1 = json::unquote(&chain_a.await?)?;
    let r2 = json::unquote(&chain_b.await?)?;
    timer.await?;
    Ok(json::string_array(&[r1, r2]))
}

fn main() {
    skein::register("race", race);
    skein::run()
}
