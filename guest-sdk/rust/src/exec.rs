//! The executor: one task runs at a time, exactly the task the host names
//! (abi/README.md §6). A task is a boxed future; it yields to the host only
//! where the ABI says (an `await` or `select` that is not ready, a body
//! sleep, a step retry's backoff), and the executor then calls `next` and
//! polls the task the host names. No waker is used: the host decides.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crate::abi::{self, Outcome, Resume};
use crate::sys;

/// A task's body: it ends with the status and data of `task_done`.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = (u32, Vec<u8>)>>>;

struct Exec {
    tasks: BTreeMap<u32, Option<TaskFuture>>, // None while the task is being polled
    current: u32,                             // the running task; 0 for none
    yielded: bool,                            // the running task has yielded to the host
    resume: Option<Resume>,                   // what woke the running task, until a wait takes it
    scratch: Vec<u8>,
}

thread_local! {
    static EX: RefCell<Exec> = RefCell::new(Exec {
        tasks: BTreeMap::new(),
        current: 0,
        yielded: false,
        resume: None,
        scratch: vec![0; 64 << 10],
    });
}

const MISUSE: &str = "skein: a workflow future was polled out of turn: await one skein operation at a time in each \
task (start concurrent work with Ctx::spawn or Ctx::parallel, wait on several with Ctx::select), and use each \
task's own Ctx";

pub(crate) fn misuse() -> ! {
    panic!("{}", MISUSE)
}

/// The running task (0 for none).
pub(crate) fn current() -> u32 {
    EX.with(|e| e.borrow().current)
}

/// Panics unless task is running and has not yielded.
pub(crate) fn check(task: u32) {
    let ok = EX.with(|e| {
        let e = e.borrow();
        e.current == task && task != 0 && !e.yielded && e.resume.is_none()
    });
    if !ok {
        misuse()
    }
}

/// Calls a host function that produces a message into (buf, cap) and
/// returns the message: from the scratch buffer, or fetched with `take`.
pub(crate) fn message(f: impl FnOnce(*mut u8, u32) -> u32) -> Vec<u8> {
    EX.with(|e| {
        let mut e = e.borrow_mut();
        let cap = e.scratch.len() as u32;
        let n = f(e.scratch.as_mut_ptr(), cap);
        if n <= cap {
            return e.scratch[..n as usize].to_vec();
        }
        let mut b = vec![0u8; n as usize];
        let got = unsafe { sys::take(b.as_mut_ptr(), n) };
        if got != n {
            panic!("skein: the host returned {} bytes for a {}-byte message", got, n);
        }
        b
    })
}

/// Adds a task the host has created (spawn, branch, the root).
pub(crate) fn add_task(id: u32, fut: TaskFuture) {
    EX.with(|e| e.borrow_mut().tasks.insert(id, Some(fut)));
}

/// Runs tasks as the host dispatches them. Never returns: the host ends
/// the module inside the root's `task_done`, or inside `next`.
pub(crate) fn run_loop() -> ! {
    loop {
        crate::feed::flush();
        let r = abi::decode_resume(&message(|b, c| unsafe { sys::next(b, c) }));
        let task = r.task;
        let fut = EX.with(|e| {
            let mut e = e.borrow_mut();
            let fut = e.tasks.get_mut(&task).and_then(Option::take);
            e.current = task;
            e.yielded = false;
            e.resume = if r.kind == abi::RESUME_WAKE { Some(r) } else { None };
            fut
        });
        let mut fut = fut.unwrap_or_else(|| panic!("skein: the host dispatched unknown task {}", task));
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready((status, data)) => {
                EX.with(|e| e.borrow_mut().tasks.remove(&task));
                crate::feed::task_done(task);
                unsafe { sys::task_done(task, status, data.as_ptr(), data.len() as u32) };
                if task == 1 {
                    panic!("skein: the host returned from the root task's task_done");
                }
            }
            Poll::Pending => {
                let yielded = EX.with(|e| e.borrow().yielded);
                if !yielded {
                    panic!(
                        "skein: task {} is pending on a future that is not a skein operation; workflow code may \
                         await only skein futures (the host decides when a task runs)",
                        task
                    );
                }
                EX.with(|e| e.borrow_mut().tasks.insert(task, Some(fut)));
            }
        }
        EX.with(|e| {
            let mut e = e.borrow_mut();
            e.current = 0;
            e.yielded = false;
        });
    }
}

/// What a wait ended with.
pub(crate) struct Woken {
    pub index: usize,
    pub outcome: Outcome,
}

#[derive(Debug)]
enum Kind {
    Await(u32),
    Select(Vec<u32>),
    Yield,
}

/// A wait on the host: `await` on a promise, `select` on several, or a
/// bare yield after `body_sleep` or a step retry. The first poll asks the
/// host; if the answer is not ready the task yields, and the next poll
/// (after the host woke the task) takes the outcome from the Resume.
#[derive(Debug)]
pub(crate) struct Suspend {
    task: u32,
    kind: Kind,
    asked: bool,
}

impl Suspend {
    pub fn await_promise(task: u32, promise: u32) -> Self {
        Suspend { task, kind: Kind::Await(promise), asked: false }
    }
    pub fn select(task: u32, promises: Vec<u32>) -> Self {
        Suspend { task, kind: Kind::Select(promises), asked: false }
    }
    /// A yield after a host call that made the task wait.
    pub fn yield_now(task: u32) -> Self {
        Suspend { task, kind: Kind::Yield, asked: false }
    }
}

impl Future for Suspend {
    type Output = Woken;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Woken> {
        if !self.asked {
            check(self.task);
            self.asked = true;
            let task = self.task;
            let msg = match &self.kind {
                Kind::Await(p) => {
                    let p = *p;
                    crate::feed::flush();
                    Some(message(|b, c| unsafe { sys::await_(task, p, b, c) }))
                }
                Kind::Select(ids) => {
                    let mut raw = Vec::with_capacity(4 * ids.len());
                    for id in ids {
                        raw.extend_from_slice(&id.to_le_bytes());
                    }
                    let n = ids.len() as u32;
                    crate::feed::flush();
                    Some(message(|b, c| unsafe { sys::select(task, raw.as_ptr(), n, b, c) }))
                }
                Kind::Yield => None,
            };
            if let Some(msg) = msg {
                let w = abi::decode_wait(&msg);
                if w.ready {
                    return Poll::Ready(Woken { index: w.index as usize, outcome: w.outcome });
                }
            }
            EX.with(|e| e.borrow_mut().yielded = true);
            return Poll::Pending;
        }
        let r = EX.with(|e| {
            let mut e = e.borrow_mut();
            if e.current != self.task {
                return None;
            }
            e.resume.take()
        });
        let r = r.unwrap_or_else(|| misuse());
        let index = match &self.kind {
            Kind::Select(ids) => ids
                .iter()
                .position(|&p| p == r.promise)
                .unwrap_or_else(|| panic!("skein: select woken by promise {}, which it did not wait for", r.promise)),
            _ => 0,
        };
        Poll::Ready(Woken { index, outcome: r.outcome })
    }
}

fn noop_waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// Reports a panic of the root task to the host as its end (status 3),
/// which fails the run with the panic's text. A panic in another task
/// cannot be caught (wasm32-wasi aborts on panic): the module traps and
/// the run fails with the text on stderr.
pub(crate) fn on_panic(text: &str) {
    let root_running = EX.try_with(|e| e.try_borrow().map(|e| e.current == 1).unwrap_or(false)).unwrap_or(false);
    if root_running {
        let data = format!("panic: {}", text);
        crate::feed::flush_on_panic();
        unsafe { sys::task_done(1, abi::STATUS_PANIC, data.as_ptr(), data.len() as u32) };
    }
}
