//! A Rust workflow whose step pauses its run when its retries run out
//! (`Retry { on_exhausted: Exhausted::Pause, .. }`), for the pause tests
//! of `skein serve` (cmd/skein/pause_test.go).

use std::time::Duration;

use skein::{Ctx, Error, Exhausted, Opts, Result, Retry};

/// Charges in a step that is always declined, retried twice, then held.
async fn flaky(ctx: Ctx, _: String) -> Result<String> {
    let retry = Retry { max_attempts: 2, initial_backoff: Duration::from_millis(10), on_exhausted: Exhausted::Pause, ..Default::default() };
    ctx.with(Opts::new().retry(retry)).step("charge", |_| async { Err(Error::msg("card declined (rust)")) }).await
}

fn main() {
    skein::register("flaky", flaky);
    skein::run()
}
