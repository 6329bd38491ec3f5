//! Errors of workflow code and of ops.

use std::fmt;

/// The error text that starts every outcome failed by the run's
/// cancellation (sched.CanceledPrefix on the host).
pub const CANCELED_PREFIX: &str = "skein: canceled: ";

/// An error of an op or of workflow code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An op failed with this error text, or workflow code returned it.
    Failed(String),
    /// An op's name broke a naming rule: the op was not issued and its
    /// body did not run.
    Id(IdError),
    /// The op was failed by the run's cancellation (the reason).
    Canceled(String),
    /// From a step body: an error that a retry policy must not retry.
    NonRetryable(String),
}

impl Error {
    /// An error with this text.
    pub fn msg(text: impl Into<String>) -> Self {
        Error::Failed(text.into())
    }
    /// An error with this text that no retry policy retries.
    pub fn non_retryable(text: impl Into<String>) -> Self {
        Error::NonRetryable(text.into())
    }
    /// The id error, if this is one.
    pub fn id_error(&self) -> Option<&IdError> {
        match self {
            Error::Id(e) => Some(e),
            _ => None,
        }
    }
    /// Reports whether the run's cancellation caused this error.
    pub fn is_canceled(&self) -> bool {
        matches!(self, Error::Canceled(_))
    }
    /// The error of an outcome's error text.
    pub(crate) fn from_text(text: String) -> Self {
        match text.strip_prefix(CANCELED_PREFIX) {
            Some(reason) => Error::Canceled(reason.to_string()),
            None => Error::Failed(text),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed(s) | Error::NonRetryable(s) => f.write_str(s),
            Error::Id(e) => f.write_str(&e.message),
            Error::Canceled(r) => write!(f, "{}{}", CANCELED_PREFIX, r),
        }
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error::Failed(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Self {
        Error::Failed(s.to_string())
    }
}

impl From<IdError> for Error {
    fn from(e: IdError) -> Self {
        Error::Id(e)
    }
}

/// An op name that broke a naming rule (abi/README.md §8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdError {
    /// The scope's key ("" is the root).
    pub scope: String,
    /// The rejected name.
    pub name: String,
    /// The rule: "empty", "dot", "whitespace", "numeric", "task-segment",
    /// "too-long" or "duplicate".
    pub rule: String,
    /// The text for people.
    pub message: String,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IdError {}

/// The id error for an explicit empty name. The host cannot tell an empty
/// name from no name (the ABI sends both as ""), so the SDK raises it
/// itself, with the host's words (internal/lineage/name.go).
pub(crate) fn empty_name(scope: &str) -> IdError {
    let where_ = if scope.is_empty() { "root" } else { scope };
    IdError {
        scope: scope.to_string(),
        name: String::new(),
        rule: "empty".to_string(),
        message: format!("step id \"\" in scope {}: a name must not be empty", where_),
    }
}

/// The result of workflow code and of ops.
pub type Result<T> = std::result::Result<T, Error>;
