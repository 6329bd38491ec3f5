//! Typed promises and workflow inputs: values of a type with a `Shape`.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::ctx::Handle;
use crate::error::{Error, Result};
use crate::shape::{self, Shape};

/// The pending value of a typed op (`Ctx::promise_of`): await it for the
/// value decoded into T, or the error.
#[derive(Debug)]
pub struct Typed<T> {
    handle: Handle,
    _t: PhantomData<fn() -> T>,
}

impl<T: Shape> Typed<T> {
    pub(crate) fn new(handle: Handle) -> Self {
        Typed { handle, _t: PhantomData }
    }
    /// The op's key (for a promise, the part after the run id in the id
    /// that settles it); "" if the op could not be issued.
    pub fn key(&self) -> &str {
        self.handle.key()
    }
    /// The error that kept the op from being issued (an id error).
    pub fn error(&self) -> Option<&Error> {
        self.handle.error()
    }
    /// The untyped handle, for `Ctx::select`.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl<T: Shape> Future for Typed<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        Pin::new(&mut this.handle).poll(cx).map(|r| r.and_then(|text| decode_value::<T>(&text)))
    }
}

/// Decodes an op's value into T. The host checked it against T's schema,
/// so this fails only for a value settled without a check (an older host).
pub(crate) fn decode_value<T: Shape>(text: &str) -> Result<T> {
    shape::decode::<T>(text.as_bytes()).map_err(|e| Error::Failed(format!("skein: decode {}: {}", std::any::type_name::<T>(), e)))
}
