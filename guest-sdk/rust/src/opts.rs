//! Options of one op: its name (id), retry policy and timeout, and a
//! child's policy for its parent's end.

use std::time::Duration;

use crate::abi::{self, OpOptions};

/// Options of one op. Build them with `Opts::new()` and its setters, or
/// with the shortcuts `Ctx::id` and `Ctx::with`.
#[derive(Clone, Debug, Default)]
pub struct Opts {
    pub(crate) id: Option<String>,
    pub(crate) retry: Option<Retry>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) parent_close: Option<ParentClose>,
}

/// What the end of a run does to a child run (`Ctx::child`) that has not
/// ended then, as the Go SDK's `skein.ParentClose`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentClose {
    /// The default: the parent's end requests the child's cancellation.
    Cancel,
    /// The parent's end leaves the child running, marked abandoned; it
    /// completes on its own.
    Abandon,
}

impl Opts {
    /// No options: a positional key, no retry, no timeout.
    pub fn new() -> Self {
        Opts::default()
    }
    /// Names the op: the name becomes its key segment instead of its
    /// position (it still uses a position). A name must be non-empty,
    /// without dots or whitespace, not all digits, not "t" and digits, and
    /// short enough that the full key fits in 300 characters; a name that
    /// breaks a rule fails the op with `Error::Id` before anything runs.
    pub fn id(mut self, name: impl Into<String>) -> Self {
        self.id = Some(name.into());
        self
    }
    /// Retries a failed step or call by the policy.
    pub fn retry(mut self, policy: Retry) -> Self {
        self.retry = Some(policy);
        self
    }
    /// Bounds each attempt of a step or call.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
    /// Sets a child's policy for the end of its parent (default
    /// `ParentClose::Cancel`); stored with the child run when it is
    /// created.
    pub fn parent_close(mut self, p: ParentClose) -> Self {
        self.parent_close = Some(p);
        self
    }

    /// The op_options message, None when there are no retry, timeout or
    /// parent close options.
    pub(crate) fn encode(&self) -> Option<Vec<u8>> {
        let timeout = self.timeout.map_or(0, nanos);
        if self.retry.is_none() && timeout == 0 && self.parent_close.is_none() {
            return None;
        }
        let parent_close = match self.parent_close {
            None => 0,
            Some(ParentClose::Cancel) => abi::PARENT_CLOSE_CANCEL,
            Some(ParentClose::Abandon) => abi::PARENT_CLOSE_ABANDON,
        };
        let mut m = OpOptions { timeout, parent_close, ..Default::default() };
        if let Some(r) = &self.retry {
            m.max_attempts = if r.max_attempts == 0 { 3 } else { r.max_attempts };
            m.initial_backoff = or_default(r.initial_backoff, Duration::from_millis(100));
            m.max_backoff = or_default(r.max_backoff, Duration::from_secs(60));
            let mult = if r.multiplier > 0.0 { r.multiplier } else { 2.0 };
            m.multiplier = (mult * 1000.0) as u32;
            let jitter = if r.jitter == 0.0 {
                0.2
            } else if r.jitter < 0.0 {
                0.0
            } else {
                r.jitter.min(1.0)
            };
            m.jitter = (jitter * 1000.0) as u32;
            m.non_retryable = r.non_retryable.clone();
            m.on_exhausted = match r.on_exhausted {
                Exhausted::Fail => abi::ON_EXHAUSTED_FAIL,
                Exhausted::Pause => abi::ON_EXHAUSTED_PAUSE,
            };
        }
        Some(abi::encode_op_options(&m))
    }
}

/// How a failed step or call is retried, with exponential backoff.
/// Attempts are durable: a restart continues the count. Zero fields take
/// the defaults, as in the Go SDK's RetryPolicy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Retry {
    /// Attempts, the first included (default 3).
    pub max_attempts: u32,
    /// The wait before the second attempt (default 100ms).
    pub initial_backoff: Duration,
    /// The cap of the wait (default 1 minute).
    pub max_backoff: Duration,
    /// The growth of the wait per attempt (default 2).
    pub multiplier: f64,
    /// The random spread of each wait, ± this fraction (default 0.2;
    /// negative for none).
    pub jitter: f64,
    /// Error texts (substrings) that end the retries at once.
    pub non_retryable: Vec<String>,
    /// What happens when the attempts run out (default `Exhausted::Fail`),
    /// as the Go SDK's `RetryPolicy.OnExhausted`.
    pub on_exhausted: Exhausted,
}

/// What a step or call does when its retries run out (`Retry::on_exhausted`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exhausted {
    /// The default: the op fails with its last attempt's error.
    #[default]
    Fail,
    /// The op stays pending and the run is paused, for an operator to fix
    /// the cause and unpause it (or resume it on new code); the op then
    /// gets `max_attempts` attempts again.
    Pause,
}

pub(crate) fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(i64::MAX as u128) as u64
}

fn or_default(d: Duration, def: Duration) -> u64 {
    nanos(if d.is_zero() { def } else { d })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The same defaults as guest-sdk/skein's opOptions.encode.
    #[test]
    fn defaults() {
        assert!(Opts::new().id("x").encode().is_none());
        let b = Opts::new().retry(Retry::default()).timeout(Duration::from_secs(2)).encode().unwrap();
        let want = abi::encode_op_options(&OpOptions {
            max_attempts: 3,
            initial_backoff: 100_000_000,
            max_backoff: 60_000_000_000,
            multiplier: 2000,
            jitter: 200,
            timeout: 2_000_000_000,
            non_retryable: vec![],
            parent_close: 0,
            on_exhausted: 0,
        });
        assert_eq!(b, want);
        let b = Opts::new().parent_close(ParentClose::Abandon).encode().unwrap();
        assert_eq!(&b[b.len() - 8..], &[2, 0, 0, 0, 0, 0, 0, 0]);
        assert!(b[..b.len() - 8].iter().all(|&x| x == 0));
        let r = Retry { on_exhausted: Exhausted::Pause, ..Default::default() };
        let b = Opts::new().retry(r).encode().unwrap();
        assert_eq!(&b[b.len() - 4..], &[1, 0, 0, 0]);
        let r = Retry { jitter: -1.0, multiplier: 1.5, non_retryable: vec!["fatal".into()], ..Default::default() };
        let b = Opts::new().retry(r).encode().unwrap();
        assert_eq!(&b[20..28], &[220, 5, 0, 0, 0, 0, 0, 0]); // multiplier 1500, jitter 0
    }
}
