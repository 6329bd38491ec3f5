#![allow(dead_code)] // the whole ABI is mirrored, used or not
//! Constants and message layouts of skein ABI v1 (abi/abi.go, abi/msg.go).
//! All integers are little-endian; `str`/`bytes` are a u32 length and the
//! bytes.

/// The ABI version this crate speaks.
pub const VERSION: u32 = 1;

pub const OP_STEP: u32 = 1;
pub const OP_CALL: u32 = 2;
pub const OP_SLEEP: u32 = 3;
pub const OP_PROMISE: u32 = 4;
pub const OP_CHILD: u32 = 5;
pub const OP_SPAWN: u32 = 6;
pub const OP_FORK: u32 = 7;
pub const OP_BRANCH: u32 = 8;
pub const OP_ATTRS: u32 = 9;

pub const STATUS_OK: u32 = 1;
pub const STATUS_ERROR: u32 = 2;
pub const STATUS_PANIC: u32 = 3;
pub const STATUS_FATAL: u32 = 4;

pub const STATE_PENDING: u8 = 0;
pub const STATE_SETTLED: u8 = 1;
pub const STATE_RUN_BODY: u8 = 2;
pub const STATE_ID_ERROR: u8 = 3;

pub const STEP_SETTLED: u32 = 0;
pub const STEP_AWAIT: u32 = 1;
pub const STEP_RETRY: u32 = 2;

pub const MODE_RUN: u8 = 1;

pub const RESUME_START: u8 = 1;
pub const RESUME_WAKE: u8 = 2;

/// A settled value (JSON) or error text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub status: u32,
    pub data: Vec<u8>,
}

/// What `invocation` returns.
pub struct Invocation {
    pub mode: u8,
    pub workflow: String,
    pub input: Vec<u8>,
}

/// What `op` returns.
#[derive(Default, Debug)]
pub struct OpResult {
    pub state: u8,
    pub promise: u32,
    pub task: u32,
    pub key: String,
    pub outcome: Outcome,
    /// STATE_RUN_BODY: the durable attempt number of the body (1, 2, …);
    /// 0 from a host before it, which sends none.
    pub attempt: u32,
    pub scope: String,
    pub name: String,
    pub rule: String,
    pub message: String,
}

/// What `next` returns.
#[derive(Clone, Debug, Default)]
pub struct Resume {
    pub kind: u8,
    pub task: u32,
    pub promise: u32,
    pub outcome: Outcome,
}

/// What `await` and `select` return.
pub struct Wait {
    pub ready: bool,
    pub index: u32,
    pub outcome: Outcome,
}

/// One element of the `outcomes` message.
pub struct OutcomeEntry {
    pub key: String,
    pub function: String,
    pub outcome: Outcome,
}

/// The `op_options` message.
#[derive(Default, Debug, PartialEq)]
pub struct OpOptions {
    pub max_attempts: u32,
    pub initial_backoff: u64,
    pub max_backoff: u64,
    pub multiplier: u32,
    pub jitter: u32,
    pub timeout: u64,
    pub non_retryable: Vec<String>,
    /// A child op's policy for its parent's end: PARENT_CLOSE_CANCEL or
    /// PARENT_CLOSE_ABANDON (0: cancel).
    pub parent_close: u32,
    /// What the host does when a step's or call's retries run out:
    /// ON_EXHAUSTED_FAIL (0) or ON_EXHAUSTED_PAUSE. The message's last
    /// field.
    pub on_exhausted: u32,
}

pub const PARENT_CLOSE_CANCEL: u32 = 1;
pub const PARENT_CLOSE_ABANDON: u32 = 2;
pub const ON_EXHAUSTED_FAIL: u32 = 0;
pub const ON_EXHAUSTED_PAUSE: u32 = 1;

/// Reads fields written by the host; the first error sticks.
pub struct Dec<'a> {
    b: &'a [u8],
    pub short: bool,
}

impl<'a> Dec<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Dec { b, short: false }
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        if self.short || self.b.len() < n {
            self.short = true;
            return &[];
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        h
    }
    pub fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    pub fn u32(&mut self) -> u32 {
        let s = self.take(4);
        if s.len() < 4 {
            return 0;
        }
        u32::from_le_bytes([s[0], s[1], s[2], s[3]])
    }
    pub fn u64(&mut self) -> u64 {
        let s = self.take(8);
        if s.len() < 8 {
            return 0;
        }
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    }
    pub fn bytes(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        self.take(n).to_vec()
    }
    pub fn str(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
    pub fn outcome(&mut self) -> Outcome {
        Outcome { status: self.u32(), data: self.bytes() }
    }
    /// The number of bytes not yet read.
    pub fn rest(&self) -> usize {
        self.b.len()
    }
    fn done<T>(self, v: T, what: &str) -> T {
        if self.short {
            panic!("skein: bad {} message from the host: too short", what);
        }
        v
    }
}

/// Appends little-endian fields.
#[derive(Default)]
pub struct Enc {
    pub b: Vec<u8>,
}

impl Enc {
    pub fn u8(&mut self, v: u8) {
        self.b.push(v)
    }
    pub fn u32(&mut self, v: u32) {
        self.b.extend_from_slice(&v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) {
        self.b.extend_from_slice(&v.to_le_bytes())
    }
    pub fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.b.extend_from_slice(s.as_bytes())
    }
    pub fn bytes(&mut self, s: &[u8]) {
        self.u32(s.len() as u32);
        self.b.extend_from_slice(s)
    }
    pub fn outcome(&mut self, o: &Outcome) {
        self.u32(o.status);
        self.bytes(&o.data)
    }
}

pub fn decode_invocation(b: &[u8]) -> Invocation {
    let mut d = Dec::new(b);
    let m = Invocation { mode: d.u8(), workflow: d.str(), input: d.bytes() };
    d.done(m, "invocation")
}

pub fn decode_op_result(b: &[u8]) -> OpResult {
    let mut d = Dec::new(b);
    let mut m = OpResult { state: d.u8(), promise: d.u32(), task: d.u32(), key: d.str(), ..Default::default() };
    match m.state {
        STATE_SETTLED => m.outcome = d.outcome(),
        STATE_RUN_BODY if d.rest() >= 4 => m.attempt = d.u32(),
        STATE_ID_ERROR => {
            m.scope = d.str();
            m.name = d.str();
            m.rule = d.str();
            m.message = d.str();
        }
        _ => {}
    }
    d.done(m, "op")
}

pub fn decode_resume(b: &[u8]) -> Resume {
    let mut d = Dec::new(b);
    let mut m = Resume { kind: d.u8(), task: d.u32(), promise: d.u32(), outcome: Outcome::default() };
    if m.kind == RESUME_WAKE && m.promise != 0 {
        m.outcome = d.outcome();
    }
    d.done(m, "resume")
}

pub fn decode_wait(b: &[u8]) -> Wait {
    let mut d = Dec::new(b);
    let mut m = Wait { ready: d.u8() == 1, index: 0, outcome: Outcome::default() };
    if m.ready {
        m.index = d.u32();
        m.outcome = d.outcome();
    }
    d.done(m, "wait")
}

pub fn decode_outcomes(b: &[u8]) -> Vec<OutcomeEntry> {
    let mut d = Dec::new(b);
    let n = d.u32() as usize;
    let mut out = Vec::with_capacity(n.min(b.len()));
    for _ in 0..n {
        if d.short {
            break;
        }
        out.push(OutcomeEntry { key: d.str(), function: d.str(), outcome: d.outcome() });
    }
    d.done(out, "outcomes")
}

pub fn encode_op_options(m: &OpOptions) -> Vec<u8> {
    let mut e = Enc::default();
    e.u32(m.max_attempts);
    e.u64(m.initial_backoff);
    e.u64(m.max_backoff);
    e.u32(m.multiplier);
    e.u32(m.jitter);
    e.u64(m.timeout);
    e.u32(m.non_retryable.len() as u32);
    for s in &m.non_retryable {
        e.str(s);
    }
    e.u32(m.parent_close);
    e.u32(m.on_exhausted);
    e.b
}

#[cfg(test)]
mod tests {
    use super::*;

    // The byte examples of abi/README.md §9.
    #[test]
    fn readme_examples() {
        let inv = decode_invocation(&[1, 2, 0, 0, 0, b'o', b'k', 7, 0, 0, 0, b'{', b'"', b'a', b'"', b':', b'1', b'}']);
        assert_eq!((inv.mode, inv.workflow.as_str(), inv.input.as_slice()), (1, "ok", &b"{\"a\":1}"[..]));
        let r = decode_op_result(&[0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'1']);
        assert_eq!((r.state, r.promise, r.task, r.key.as_str()), (0, 2, 0, "1"));
        let r = decode_op_result(&[2, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'1', 3, 0, 0, 0]);
        assert_eq!((r.state, r.promise, r.key.as_str(), r.attempt), (2, 4, "1", 3));
        let r = decode_op_result(&[2, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'1']);
        assert_eq!((r.state, r.attempt), (2, 0));
        let w = decode_resume(&[2, 1, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, b'n', b'u', b'l', b'l']);
        assert_eq!((w.kind, w.task, w.promise, w.outcome.status, w.outcome.data.as_slice()), (2, 1, 3, 1, &b"null"[..]));
        assert!(!decode_wait(&[0]).ready);
    }

    #[test]
    #[should_panic(expected = "too short")]
    fn short_message() {
        decode_resume(&[2, 1, 0, 0, 0, 3, 0, 0, 0, 1]);
    }
}
