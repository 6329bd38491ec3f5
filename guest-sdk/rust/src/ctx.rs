//! Workflow code's handle on the run: the durable ops.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::abi::{self, OpResult, Outcome as RawOutcome};
use crate::error::{empty_name, Error, IdError, Result};
use crate::exec::{self, Suspend};
use crate::feed;
use crate::opts::{nanos, Opts};
use crate::shape::Shape;
use crate::sys;
use crate::typed::Typed;

/// A task's handle on the workflow. Each task (the root, a task started
/// with `spawn`, a parallel branch) gets its own `Ctx`, which only that
/// task may use.
#[derive(Debug)]
pub struct Ctx {
    pub(crate) task: u32,
    pub(crate) scope: String,
}

impl Ctx {
    /// The key of this task's id scope: "" for the root, e.g. "t2" for a
    /// spawned task or "fanout.0" for a branch.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The next op with options: `ctx.with(Opts::new().id("x").retry(r)).step(...)`.
    pub fn with(&self, opts: Opts) -> Op<'_> {
        Op { ctx: self, opts }
    }

    /// The next op with a name: `ctx.id("create-vm").step(...)`.
    pub fn id(&self, name: impl Into<String>) -> Op<'_> {
        self.with(Opts::new().id(name))
    }

    fn op(&self) -> Op<'_> {
        self.with(Opts::new())
    }

    /// Runs body once and records its result (JSON text) under the step's
    /// key; on replay the recorded result is returned and body does not
    /// run. `func` identifies the code: a replay that finds a different
    /// function at the key diverges.
    pub async fn step<F, Fut>(&self, func: &str, body: F) -> Result<String>
    where
        F: FnMut(StepCtx) -> Fut,
        Fut: Future<Output = Result<String>>,
    {
        self.op().step(func, body).await
    }

    /// Runs the host activity with input (JSON text) and records its outcome.
    pub fn call(&self, activity: &str, input: &str) -> Handle {
        self.op().call(activity, input)
    }

    /// A durable timer of d in virtual time; its value is `null`.
    pub fn sleep(&self, d: Duration) -> Handle {
        self.op().sleep(d)
    }

    /// A durable promise settled from outside by its full id
    /// "{run}.{key}" (`Handle::key`).
    pub fn promise(&self) -> Handle {
        self.op().promise()
    }

    /// A durable promise whose value has type T: its schema is recorded
    /// with the promise, the host refuses a settlement without that shape
    /// (HTTP 400, the promise stays pending), and the value is decoded
    /// into T.
    pub fn promise_of<T: Shape>(&self) -> Typed<T> {
        self.op().promise_of()
    }

    /// Starts the workflow of this module as a child run "{run}.{key}".
    pub fn child(&self, workflow: &str, input: &str) -> Handle {
        self.op().child(workflow, input)
    }

    /// Starts f as a new task (the Go SDK's skein.Go); its ops are keyed
    /// under the task's scope "t{p}" (or its name).
    pub fn spawn<F, Fut>(&self, f: F) -> Handle
    where
        F: FnOnce(Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<String>> + 'static,
    {
        self.op().spawn(f)
    }

    /// Opens a parallel fork; each `Group::go` starts one branch, whose
    /// scope is "{fork}.{i}".
    pub fn parallel(&self) -> Group<'_> {
        self.op().parallel()
    }

    /// Waits until one of the handles settles and returns its index. If
    /// several have settled, it picks the one that settled first in journal
    /// order, so a replay picks the same. Fails with a handle's error if
    /// that op could not be issued (an id error).
    pub async fn select(&self, handles: &[&Handle]) -> Result<usize> {
        exec::check(self.task);
        let mut ids = Vec::with_capacity(handles.len());
        for h in handles {
            if let Some(e) = &h.err {
                return Err(e.clone());
            }
            ids.push(h.promise);
        }
        Ok(Suspend::select(self.task, ids).await.index)
    }

    /// The run's virtual time (the same as `SystemTime::now()` in workflow
    /// code): deterministic, advanced by the host only at recorded points.
    pub fn now(&self) -> SystemTime {
        exec::check(self.task);
        SystemTime::now()
    }

    /// The durable outcomes settled so far in this execution, by key.
    pub fn outcomes(&self) -> BTreeMap<String, Outcome> {
        exec::check(self.task);
        feed::flush();
        let msg = exec::message(|b, c| unsafe { sys::outcomes(b, c) });
        abi::decode_outcomes(&msg)
            .into_iter()
            .map(|e| (e.key, Outcome { function: e.function, result: outcome_text(e.outcome) }))
            .collect()
    }

    /// Ok while the run goes on; `Error::Canceled` once its cancellation
    /// has been delivered. From then on pending and new sleeps and
    /// promises fail at once, while steps and calls still run, so the
    /// workflow can compensate.
    pub fn err(&self) -> Result<()> {
        exec::check(self.task);
        let mut buf = [0u8; 1];
        let n = unsafe { sys::canceled(buf.as_mut_ptr(), 0) };
        if n == 0 {
            return Ok(());
        }
        let mut b = vec![0u8; n as usize];
        unsafe { sys::take(b.as_mut_ptr(), n) };
        Err(Error::Canceled(String::from_utf8_lossy(&b).into_owned()))
    }
}

/// A recorded durable outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The op's function (`sleep` and `promise` for those kinds).
    pub function: String,
    /// The value (JSON text) or the error text.
    pub result: std::result::Result<String, String>,
}

fn outcome_text(o: RawOutcome) -> std::result::Result<String, String> {
    let text = String::from_utf8_lossy(&o.data).into_owned();
    if o.status == abi::STATUS_OK {
        Ok(text)
    } else {
        Err(text)
    }
}

/// The value of an outcome, or its error.
pub(crate) fn decode(o: RawOutcome) -> Result<String> {
    outcome_text(o).map_err(Error::from_text)
}

/// The status and data a task or step body reports for its result. A
/// value that is not valid JSON becomes an error, as the host stores
/// values as they are.
pub(crate) fn encode(r: &Result<String>) -> (u32, Vec<u8>) {
    match r {
        Ok(v) if crate::json::valid(v) => (abi::STATUS_OK, v.clone().into_bytes()),
        Ok(v) => {
            let text = format!("skein: value is not valid JSON: {:.100}", v);
            (abi::STATUS_ERROR, text.into_bytes())
        }
        Err(e) => (abi::STATUS_ERROR, e.to_string().into_bytes()),
    }
}

/// One op with its options (from `Ctx::with` or `Ctx::id`).
pub struct Op<'a> {
    ctx: &'a Ctx,
    opts: Opts,
}

impl<'a> Op<'a> {
    /// The task that issues the op.
    pub(crate) fn task(&self) -> u32 {
        self.ctx.task
    }

    /// Issues the op to the host, options first. An explicit empty name is
    /// an id error raised here: the ABI sends "no name" as "".
    pub(crate) fn issue(&self, kind: u32, func: &str, arg: &[u8], with_options: bool) -> std::result::Result<OpResult, Error> {
        let task = self.ctx.task;
        exec::check(task);
        let name = match &self.opts.id {
            Some(n) if n.is_empty() => return Err(Error::Id(empty_name(&self.ctx.scope))),
            Some(n) => n.as_str(),
            None => "",
        };
        let options = if with_options { self.opts.encode() } else { None };
        if options.is_none() && name.is_empty() {
            if let Some(r) = feed::take(task, kind, func) {
                return Ok(r);
            }
        }
        feed::flush();
        if let Some(o) = options {
            unsafe { sys::op_options(task, o.as_ptr(), o.len() as u32) };
        }
        let msg = exec::message(|b, c| unsafe {
            sys::op(
                task,
                kind,
                name.as_ptr(),
                name.len() as u32,
                func.as_ptr(),
                func.len() as u32,
                arg.as_ptr(),
                arg.len() as u32,
                b,
                c,
            )
        });
        let r = abi::decode_op_result(&msg);
        feed::answered(task, kind, r.state);
        if r.state == abi::STATE_ID_ERROR {
            return Err(Error::Id(IdError { scope: r.scope, name: r.name, rule: r.rule, message: r.message }));
        }
        Ok(r)
    }

    fn handle(&self, kind: u32, func: &str, arg: &[u8], with_options: bool) -> Handle {
        match self.issue(kind, func, arg, with_options) {
            Ok(r) => Handle::new(r.promise, r.key),
            Err(e) => Handle::failed(e),
        }
    }

    /// `Ctx::step` with these options.
    pub async fn step<F, Fut>(self, func: &str, mut body: F) -> Result<String>
    where
        F: FnMut(StepCtx) -> Fut,
        Fut: Future<Output = Result<String>>,
    {
        let task = self.ctx.task;
        let r = self.issue(abi::OP_STEP, func, &[], true)?;
        match r.state {
            abi::STATE_SETTLED => return decode(r.outcome),
            abi::STATE_PENDING => return decode(Suspend::await_promise(task, r.promise).await.outcome),
            _ => {}
        }
        let mut attempt = r.attempt;
        loop {
            let res = body(StepCtx { task, attempt }).await;
            exec::check(task);
            let (mut status, data) = encode(&res);
            if let Err(Error::NonRetryable(_)) = res {
                status = abi::STATUS_FATAL;
            }
            match unsafe { sys::step_done(task, r.promise, status, data.as_ptr(), data.len() as u32) } {
                abi::STEP_SETTLED => {
                    let status = if status == abi::STATUS_FATAL { abi::STATUS_ERROR } else { status };
                    return decode(RawOutcome { status, data });
                }
                abi::STEP_RETRY => {
                    // The host recorded the next attempt (one more); the
                    // backoff, then that attempt.
                    Suspend::yield_now(task).await;
                    if attempt > 0 {
                        attempt += 1; // 0: a host that does not tell
                    }
                }
                _ => return decode(Suspend::await_promise(task, r.promise).await.outcome),
            }
        }
    }

    /// `Ctx::call` with these options.
    pub fn call(self, activity: &str, input: &str) -> Handle {
        self.handle(abi::OP_CALL, activity, input.as_bytes(), true)
    }

    /// `Ctx::sleep` with these options.
    pub fn sleep(self, d: Duration) -> Handle {
        let arg = (nanos(d) as i64).to_le_bytes();
        self.handle(abi::OP_SLEEP, "sleep", &arg, true)
    }

    /// `Ctx::promise` with these options.
    pub fn promise(self) -> Handle {
        self.handle(abi::OP_PROMISE, "promise", &[], true)
    }

    /// `Ctx::promise_of` with these options.
    pub fn promise_of<T: Shape>(self) -> Typed<T> {
        let schema = crate::shape::schema_of::<T>();
        Typed::new(self.handle(abi::OP_PROMISE, "promise", schema.as_bytes(), true))
    }

    /// `Ctx::child` with these options.
    pub fn child(self, workflow: &str, input: &str) -> Handle {
        self.handle(abi::OP_CHILD, workflow, input.as_bytes(), true)
    }

    /// `Ctx::spawn` with these options (an id names the task's scope).
    pub fn spawn<F, Fut>(self, f: F) -> Handle
    where
        F: FnOnce(Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<String>> + 'static,
    {
        match self.issue(abi::OP_SPAWN, "", &[], false) {
            Ok(r) => {
                start_task(r.task, r.key.clone(), f);
                Handle::new(r.promise, r.key)
            }
            Err(e) => Handle::failed(e),
        }
    }

    /// `Ctx::parallel` with these options (an id names the fork).
    pub fn parallel(self) -> Group<'a> {
        let ctx = self.ctx;
        match self.issue(abi::OP_FORK, "", &[], false) {
            Ok(r) => Group { ctx, fork: r.promise, key: r.key, err: None, branches: Vec::new() },
            Err(e) => Group { ctx, fork: 0, key: String::new(), err: Some(e), branches: Vec::new() },
        }
    }
}

fn start_task<F, Fut>(id: u32, scope: String, f: F)
where
    F: FnOnce(Ctx) -> Fut + 'static,
    Fut: Future<Output = Result<String>> + 'static,
{
    exec::add_task(id, Box::pin(async move { encode(&f(Ctx { task: id, scope }).await) }));
}

/// A parallel fork: each `go` starts one branch task.
pub struct Group<'a> {
    ctx: &'a Ctx,
    fork: u32,
    key: String,
    err: Option<Error>,
    branches: Vec<Handle>,
}

impl<'a> Group<'a> {
    /// The fork's key ("" if it could not be opened).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Starts the next branch, i = 0, 1, …, with scope "{fork}.{i}".
    pub fn go<F, Fut>(&mut self, f: F)
    where
        F: FnOnce(Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<String>> + 'static,
    {
        if self.err.is_some() {
            return;
        }
        let op = Op { ctx: self.ctx, opts: Opts::new() };
        let h = match op.issue(abi::OP_BRANCH, "", &self.fork.to_le_bytes(), false) {
            Ok(r) => {
                start_task(r.task, r.key.clone(), f);
                Handle::new(r.promise, r.key)
            }
            Err(e) => Handle::failed(e),
        };
        self.branches.push(h);
    }

    /// Waits for every branch and returns their values in branch order,
    /// or the first error in branch order.
    pub async fn wait(self) -> Result<Vec<String>> {
        exec::check(self.ctx.task);
        if let Some(e) = self.err {
            return Err(e);
        }
        let mut vals = Vec::with_capacity(self.branches.len());
        let mut first = None;
        for h in self.branches {
            match h.await {
                Ok(v) => vals.push(v),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(vals),
        }
    }
}

/// The pending result of an op: await it for the value (JSON text) or
/// the error. Awaiting a handle whose op could not be issued returns that
/// error at once.
#[derive(Debug)]
pub struct Handle {
    promise: u32,
    key: String,
    err: Option<Error>,
    wait: Option<Suspend>,
}

impl Clone for Handle {
    fn clone(&self) -> Self {
        Handle { promise: self.promise, key: self.key.clone(), err: self.err.clone(), wait: None }
    }
}

impl Handle {
    fn new(promise: u32, key: String) -> Self {
        Handle { promise, key, err: None, wait: None }
    }
    fn failed(e: Error) -> Self {
        Handle { promise: 0, key: String::new(), err: Some(e), wait: None }
    }
    /// The op's key (for a promise, the part after the run id in the id
    /// that settles it); "" if the op could not be issued.
    pub fn key(&self) -> &str {
        &self.key
    }
    /// The error that kept the op from being issued (an id error).
    pub fn error(&self) -> Option<&Error> {
        self.err.as_ref()
    }
}

impl Future for Handle {
    type Output = Result<String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<String>> {
        if let Some(e) = &self.err {
            return Poll::Ready(Err(e.clone()));
        }
        if self.wait.is_none() {
            let w = Suspend::await_promise(exec::current(), self.promise);
            self.wait = Some(w);
        }
        let w = self.wait.as_mut().expect("set above");
        Pin::new(w).poll(cx).map(|woken| decode(woken.outcome))
    }
}

/// What a step body gets: real time and randomness, and a real-time wait
/// during which other tasks run. Values obtained here are recorded only
/// through the body's result.
#[derive(Debug)]
pub struct StepCtx {
    task: u32,
    attempt: u32,
}

impl StepCtx {
    /// The durable number of the attempt that is running: 1 for the
    /// first, 2 for the first retry under a retry policy, and so on. The
    /// host records each attempt before it runs, so the number is the
    /// same live and after a crash (an attempt cut short counts as used);
    /// read it here, never from a counter in workflow state, which a
    /// replay starts again. 0 only under a host too old to tell it.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The real wall-clock time.
    pub fn now(&self) -> SystemTime {
        exec::check(self.task);
        let ns = unsafe { sys::real_now() };
        UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
    }

    /// Fills buf with real random bytes.
    pub fn rand(&self, buf: &mut [u8]) {
        exec::check(self.task);
        unsafe { sys::real_rand(buf.as_mut_ptr(), buf.len() as u32) }
    }

    /// Waits d of real time. Other tasks run meanwhile.
    pub async fn sleep(&self, d: Duration) {
        exec::check(self.task);
        unsafe { sys::body_sleep(self.task, nanos(d) as i64) };
        Suspend::yield_now(self.task).await;
    }
}
