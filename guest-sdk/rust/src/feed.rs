//! The feed (abi/README.md §5, `feed`): on replay the host hands the
//! running task the recorded outcomes of its next unnamed ops in one
//! message, and `Op::issue` takes each from it without an `op` call. The
//! task reports how many it took before its next other host call
//! (`flush`). A task asks for a feed after `STREAK` recorded outcomes in
//! a row from `op`, as the Go SDK does (guest-sdk/skein/feed.go).

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::abi::{self, Dec, OpResult};
use crate::sys;

/// Recorded outcomes in a row from `op` before a task asks for a feed: a
/// feed costs a call to ask and one to report.
const STREAK: u32 = 2;

struct Feed {
    buf: Vec<u8>,
    len: usize,  // the message's length
    pos: usize,  // the next entry's offset
    task: u32,   // the task the feed was given to
    left: u32,   // entries not yet taken
    used: u32,   // entries taken and not yet reported
    held: bool,  // entries were given and are not yet reported
    asked: bool, // an op of this execution asked
    off: bool,   // the host said nothing is replaying
    streak: BTreeMap<u32, u32>,
}

thread_local! {
    static FEED: RefCell<Feed> = RefCell::new(Feed {
        buf: Vec::new(), len: 0, pos: 0, task: 0, left: 0, used: 0,
        held: false, asked: false, off: false, streak: BTreeMap::new(),
    });
}

fn feedable(kind: u32) -> bool {
    matches!(kind, abi::OP_STEP | abi::OP_CALL | abi::OP_SLEEP | abi::OP_PROMISE | abi::OP_CHILD)
}

/// The recorded outcome of the running task's next op, an unnamed op
/// without options of kind and function func, from the feed; None sends
/// the op to the host.
pub(crate) fn take(task: u32, kind: u32, func: &str) -> Option<OpResult> {
    FEED.with(|f| f.borrow_mut().take(task, kind, func))
}

/// Reports the entries taken, as the protocol requires before any other
/// host call, and drops the rest.
pub(crate) fn flush() {
    FEED.with(|f| f.borrow_mut().flush())
}

/// flush before a task's `task_done`, and forgets the task's streak.
pub(crate) fn task_done(task: u32) {
    FEED.with(|f| {
        let mut f = f.borrow_mut();
        f.flush();
        f.streak.remove(&task);
    })
}

/// flush for the panic hook, which may run while the feed is borrowed
/// (then nothing was taken since the last report that matters: the
/// panic came from inside the feed's own code).
pub(crate) fn flush_on_panic() {
    let _ = FEED.try_with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            f.flush()
        }
    });
}

/// Counts the task's streak of ops the host answered with a recorded
/// outcome.
pub(crate) fn answered(task: u32, kind: u32, state: u8) {
    if !feedable(kind) {
        return;
    }
    FEED.with(|f| {
        let mut f = f.borrow_mut();
        let s = f.streak.entry(task).or_insert(0);
        *s = if state == abi::STATE_SETTLED { *s + 1 } else { 0 };
    })
}

impl Feed {
    fn take(&mut self, task: u32, kind: u32, func: &str) -> Option<OpResult> {
        if self.off || !feedable(kind) {
            return None;
        }
        if self.left == 0 || self.task != task {
            if self.asked && self.streak.get(&task).copied().unwrap_or(0) < STREAK {
                return None;
            }
            self.asked = true;
            self.refill(task);
            if self.left == 0 {
                self.streak.insert(task, 0);
                return None;
            }
        }
        let mut d = Dec::new(&self.buf[self.pos..self.len]);
        let (ekind, promise, key, efunc, outcome) = (d.u8() as u32, d.u32(), d.bytes(), d.bytes(), d.outcome());
        if d.short {
            panic!("skein: bad feed message from the host: too short");
        }
        if ekind != kind || (kind != abi::OP_SLEEP && kind != abi::OP_PROMISE && efunc != func.as_bytes()) {
            return None; // not the recorded op: the host's op says how
        }
        self.pos = self.len - d.rest();
        self.left -= 1;
        self.used += 1;
        self.streak.insert(task, STREAK); // a used-up feed asks for the next
        let key = String::from_utf8_lossy(&key).into_owned();
        Some(OpResult { state: abi::STATE_SETTLED, promise, key, outcome, ..Default::default() })
    }

    fn refill(&mut self, task: u32) {
        let mut used = self.used;
        if self.task != task {
            self.flush();
            used = 0;
        }
        if self.buf.is_empty() {
            self.buf = vec![0; 32 << 10];
        }
        let n = unsafe { sys::feed(task, used, self.buf.as_mut_ptr(), self.buf.len() as u32) } as usize;
        let mut d = Dec::new(&self.buf[..n]);
        let (replaying, count) = (d.u8() == 1, d.u32());
        if d.short {
            panic!("skein: bad feed message from the host: too short");
        }
        self.task = task;
        self.len = n;
        self.pos = n - d.rest();
        self.left = count;
        self.used = 0;
        self.held = count > 0;
        self.off = !replaying;
    }

    fn flush(&mut self) {
        if !self.held {
            return;
        }
        unsafe { sys::feed(self.task, self.used, std::ptr::null_mut(), 0) };
        self.held = false;
        self.left = 0;
        self.used = 0;
    }
}
