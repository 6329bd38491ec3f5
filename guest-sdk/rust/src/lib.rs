//! The Rust guest SDK of skein: workflows are `async fn`s, compiled to a
//! WebAssembly module (`--target wasm32-wasi`) that the skein host runs
//! durably. It speaks skein ABI v1 (abi/README.md in the skein
//! repository) and has no dependencies.
//!
//! ```ignore
//! use std::time::Duration;
//! use skein::{json, Ctx, Result};
//!
//! async fn greet(ctx: Ctx, input: String) -> Result<String> {
//!     let name = json::unquote(&input)?;
//!     ctx.sleep(Duration::from_secs(1)).await?;
//!     ctx.step("greet", |_| async { Ok(json::quote(&format!("hello, {}", name))) }).await
//! }
//!
//! fn main() {
//!     skein::register("greet", greet);
//!     skein::run()
//! }
//! ```
//!
//! Workflow code runs inside the host's deterministic sandbox: time,
//! randomness and the order in which tasks run are decided by the host,
//! and every durable op (step, call, sleep, promise, child) gets a key
//! from task lineage. A run can be dropped at any point and replayed from
//! the top; recorded outcomes come back instead of running the op again.
//!
//! Rules for workflow code: await only skein futures, one at a time per
//! task (start concurrent work with `Ctx::spawn` or `Ctx::parallel`, wait
//! on several with `Ctx::select`); use real time and randomness only in
//! step bodies (`StepCtx`); a step body must not touch workflow state:
//! only its result flows back. Values are JSON text (`String`); the `json`
//! module reads and writes it. Typed values (`Shape`, `shape_struct!`)
//! carry a JSON Schema the host checks: `Ctx::promise_of` and
//! `register_typed`.

mod abi;
mod attrs;
mod ctx;
mod error;
mod exec;
mod feed;
pub mod json;
mod opts;
mod reader;
pub mod shape;
mod shape_struct;
#[cfg(test)]
mod shape_tests;
mod sys;
mod typed;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

pub use attrs::AttrValue;
pub use ctx::{Ctx, Group, Handle, Op, Outcome, StepCtx};
pub use error::{Error, IdError, Result, CANCELED_PREFIX};
pub use opts::{Exhausted, Opts, ParentClose, Retry};
pub use shape::{Mismatch, Reader, Schema, Shape};
pub use typed::Typed;

type Workflow = Box<dyn Fn(Ctx, String) -> Pin<Box<dyn Future<Output = Result<String>>>>>;

thread_local! {
    static REGISTRY: RefCell<BTreeMap<String, Workflow>> = RefCell::new(BTreeMap::new());
    static SCHEMAS: RefCell<BTreeMap<String, String>> = RefCell::new(BTreeMap::new()); // typed workflows' input schemas
}

/// Makes f runnable as the workflow `name`. f gets its task's `Ctx` and the
/// run's input as JSON text, and returns the result as JSON text. Call
/// `register` from `main` before `run`. It panics on an empty name, a name
/// with a newline, or a name registered twice.
pub fn register<F, Fut>(name: &str, f: F)
where
    F: Fn(Ctx, String) -> Fut + 'static,
    Fut: Future<Output = Result<String>> + 'static,
{
    if name.is_empty() || name.contains('\n') {
        panic!("skein: workflow name {:?} must be non-empty and on one line", name);
    }
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        if r.contains_key(name) {
            panic!("skein: workflow {:?} registered twice", name);
        }
        r.insert(name.to_string(), Box::new(move |ctx, input| Box::pin(f(ctx, input))));
    });
}

/// Makes f runnable as the workflow `name`, with a typed input and
/// result: the input's schema (`Shape`) is given to the host at deploy,
/// which then refuses to start a run whose input does not have it (HTTP
/// 400, no run is created); the input is decoded into In and the result
/// encoded from Out. A run started without an input gets `null`, which
/// only an `Option` or `()` input takes. It panics as `register` does.
pub fn register_typed<In, Out, F, Fut>(name: &str, f: F)
where
    In: Shape + 'static,
    Out: Shape + 'static,
    F: Fn(Ctx, In) -> Fut + 'static,
    Fut: Future<Output = Result<Out>> + 'static,
{
    let wf = name.to_string();
    register(name, move |ctx, input: String| {
        let started = shape::decode::<In>(input.as_bytes())
            .map(|v| f(ctx, v))
            .map_err(|e| Error::Failed(format!("workflow {:?}: input does not decode into {}: {}", wf, std::any::type_name::<In>(), e)));
        async move { Ok(shape::encode(&started?.await?)) }
    });
    SCHEMAS.with(|s| s.borrow_mut().insert(name.to_string(), shape::schema_of::<In>()));
}

/// Gives the host the input schemas of the typed workflows, when it keeps
/// them (at deploy): an empty schema asks first, as the Go SDK does.
fn give_schemas() {
    let schemas: Vec<(String, String)> = SCHEMAS.with(|s| s.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let first = match schemas.first() {
        Some((name, _)) => name,
        None => return,
    };
    if unsafe { sys::input_schema(first.as_ptr(), first.len() as u32, std::ptr::null(), 0) } != 1 {
        return;
    }
    for (name, schema) in &schemas {
        unsafe { sys::input_schema(name.as_ptr(), name.len() as u32, schema.as_ptr(), schema.len() as u32) };
    }
}

/// Runs the invocation the host asks for. It is the last thing `main`
/// calls, after `register`, and does not return: the host ends the module
/// when the run ends, suspends or is evicted.
pub fn run() -> ! {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        exec::on_panic(&info.to_string());
    }));
    let v = unsafe { sys::hello(abi::VERSION) };
    if v != abi::VERSION {
        eprintln!("skein: the host speaks ABI v{}, this module ABI v{}", v, abi::VERSION);
        std::process::exit(3);
    }
    let names: Vec<String> = REGISTRY.with(|r| r.borrow().keys().cloned().collect());
    let list = names.join("\n");
    unsafe { sys::workflows(list.as_ptr(), list.len() as u32) };
    give_schemas();
    let inv = abi::decode_invocation(&exec::message(|b, c| unsafe { sys::invocation(b, c) }));
    if inv.mode != abi::MODE_RUN {
        std::process::exit(0); // describe: announce and stop
    }
    let input = String::from_utf8_lossy(&inv.input).into_owned();
    let root = REGISTRY.with(|r| r.borrow().get(&inv.workflow).map(|f| f(Ctx { task: 1, scope: String::new() }, input)));
    let root: Pin<Box<dyn Future<Output = Result<String>>>> = match root {
        Some(f) => f,
        None => {
            let text = format!("unknown workflow {:?}; this module registers: {}", inv.workflow, names.join(", "));
            Box::pin(async move { Err(Error::Failed(text)) })
        }
    };
    exec::add_task(1, Box::pin(async move { ctx::encode(&root.await) }));
    exec::run_loop()
}
