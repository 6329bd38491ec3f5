//! Typed workflows of the Rust SDK, which the typed-value tests of `skein
//! serve` run (cmd/skein/typed_exact_test.go): a promise and an input whose
//! types refuse values of another shape, through the host's check.

use skein::{shape_struct, Ctx, Result};

shape_struct! {
    /// A decision: the value of decide's promise.
    #[derive(Debug)]
    pub struct Decision {
        pub approved: bool,
        pub by: String,
        pub note: Option<String>,
    }
}

shape_struct! {
    /// The input of count.
    #[derive(Debug)]
    pub struct Count {
        pub n: i64 => "n",
        pub step: Option<u8>,
    }
}

/// Awaits the typed promise "{run}.p" and describes its value.
async fn decide(ctx: Ctx, _: Option<String>) -> Result<String> {
    let d = ctx.id("p").promise_of::<Decision>().await?;
    Ok(format!("approved={} by={} note={:?}", d.approved, d.by, d.note))
}

/// Returns n plus step (default 1).
async fn count(_: Ctx, c: Count) -> Result<i64> {
    Ok(c.n.saturating_add(i64::from(c.step.unwrap_or(1))))
}

fn main() {
    skein::register_typed("decide", decide);
    skein::register_typed("count", count);
    skein::run()
}
