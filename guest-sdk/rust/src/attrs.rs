//! Search attributes: `Ctx::set_attributes`, the attrs op (abi/README.md
//! §7), the same as the Go SDK's skein.SetAttributes.

use crate::abi;
use crate::ctx::{decode, Ctx, Op};
use crate::exec::Suspend;
use crate::error::Result;
use crate::json::quote;

/// A search attribute's value, of the type its attribute was declared
/// with (skein attribute create).
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    /// A finite number.
    Float(f64),
    Bool(bool),
    /// A time, as Unix nanoseconds (UTC).
    Time(i64),
}

impl AttrValue {
    /// The value as JSON: a time as an RFC 3339 string in UTC.
    fn json(&self) -> String {
        match self {
            AttrValue::Str(s) => quote(s),
            AttrValue::Int(i) => i.to_string(),
            AttrValue::Float(f) if f.is_finite() => {
                let s = f.to_string();
                if s.contains(['.', 'e', 'E']) {
                    s
                } else {
                    s + ".0" // a float, even when whole
                }
            }
            AttrValue::Float(_) => "null".to_string(), // the host refuses it, naming the attribute
            AttrValue::Bool(b) => b.to_string(),
            AttrValue::Time(ns) => quote(&rfc3339(*ns)),
        }
    }
}

/// The attrs op's argument: a JSON object of the values by name.
pub(crate) fn attrs_json(attrs: &[(&str, AttrValue)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in attrs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&quote(k));
        s.push(':');
        s.push_str(&v.json());
    }
    s.push('}');
    s
}

/// Unix nanoseconds as an RFC 3339 time in UTC with nanoseconds.
pub(crate) fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        year,
        month,
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        nanos
    )
}

impl Ctx {
    /// Records search attributes on the run: a durable op. On replay the
    /// recorded op answers and nothing is written again; a replay that
    /// sets other values diverges at its key. A later value of a name
    /// replaces an earlier one. An undeclared name or a value of the
    /// wrong type fails the op with an error naming the attribute; the
    /// run goes on.
    pub async fn set_attributes(&self, attrs: &[(&str, AttrValue)]) -> Result<()> {
        self.with(crate::Opts::new()).set_attributes(attrs).await
    }
}

impl<'a> Op<'a> {
    /// `Ctx::set_attributes` with these options (an id names the op).
    pub async fn set_attributes(self, attrs: &[(&str, AttrValue)]) -> Result<()> {
        let task = self.task();
        let r = self.issue(abi::OP_ATTRS, "attrs", attrs_json(attrs).as_bytes(), false)?;
        match r.state {
            abi::STATE_SETTLED => decode(r.outcome).map(|_| ()),
            _ => decode(Suspend::await_promise(task, r.promise).await.outcome).map(|_| ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_values() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(rfc3339(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123456789Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(rfc3339(951_782_400_000_000_000), "2000-02-29T00:00:00.000000000Z");
        let j = attrs_json(&[("a", AttrValue::Int(-3)), ("b", AttrValue::Float(2.0)), ("c", AttrValue::Str("x\"y".into())), ("d", AttrValue::Bool(true))]);
        assert_eq!(j, r#"{"a":-3,"b":2.0,"c":"x\"y","d":true}"#);
    }
}
