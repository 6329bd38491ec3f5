//! Typed values: a type with a `Shape` has a JSON Schema, which the SDK
//! gives the host for a typed promise (`Ctx::promise_of`) and a typed
//! workflow input (`register_typed`), and a decoder that accepts exactly
//! the values that schema admits, so a value the host accepts is one the
//! workflow can decode. The schemas use the keywords the host checks
//! (package shape in the skein repository): "type", "format" and
//! "minimum"/"maximum" for integers, "format" for floats, "items",
//! "properties", "required", "additionalProperties".
//!
//! The rules, as serde's defaults have them: a struct's fields are
//! required unless they are `Option`s, and unknown members are ignored;
//! `null` is a value only of an `Option` (or of `()`); integers must be
//! written as integers and fit their type; a float must not overflow its
//! type; a member given twice is decoded twice (the last wins).

use std::collections::{BTreeMap, HashMap};

pub use crate::reader::{Kind, Mismatch, Reader};

/// The JSON Schema dialect of the schemas (the host checks null at the top
/// only as a schema with "$schema" says).
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// A type whose values have a known JSON shape. Implemented for the
/// integers, `f32`, `f64`, `bool`, `String`, `()`, `Option<T>`, `Vec<T>`,
/// `BTreeMap<String, T>` and `HashMap<String, T>`; `shape_struct!`
/// implements it for a struct.
pub trait Shape: Sized {
    /// The type's JSON Schema.
    fn schema() -> Schema;
    /// Reads a value of the type: exactly the values `schema` admits.
    fn read(r: &mut Reader) -> Result<Self, Mismatch>;
    /// Appends the value as JSON.
    fn write(&self, out: &mut String);
    /// The value of a struct field whose member is missing: None, the
    /// member is required (for all but `Option`, which is then None).
    fn missing() -> Option<Self> {
        None
    }
}

/// A JSON Schema of the subset the host checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// "type": the JSON types admitted ("integer" is a number without a
    /// fraction or an exponent); empty for any.
    pub types: Vec<&'static str>,
    /// "format": "int8" … "uint64", "float32", "float64".
    pub format: Option<String>,
    /// "minimum" and "maximum", as decimal text.
    pub minimum: Option<String>,
    /// See `minimum`.
    pub maximum: Option<String>,
    /// "items": an array's elements.
    pub items: Option<Box<Schema>>,
    /// "properties", for an object: written when `object` is set.
    pub properties: Vec<(String, Schema)>,
    /// Write "properties" (a struct), even when empty.
    pub object: bool,
    /// "required": the properties that must be present.
    pub required: Vec<String>,
    /// "additionalProperties": the members that are not properties.
    pub additional: Option<Box<Schema>>,
}

impl Schema {
    /// A schema of one JSON type.
    pub fn of(ty: &'static str) -> Self {
        Schema { types: vec![ty], ..Schema::default() }
    }

    /// The schema of a struct: (name, schema, required) per field.
    pub fn object(fields: Vec<(&str, Schema, bool)>) -> Self {
        let mut s = Schema::of("object");
        s.object = true;
        for (name, schema, required) in fields {
            if required {
                s.required.push(name.to_string());
            }
            s.properties.push((name.to_string(), schema));
        }
        s.properties.sort_by(|a, b| a.0.cmp(&b.0));
        s.required.sort();
        s
    }

    /// This schema, also admitting null.
    pub fn nullable(mut self) -> Self {
        if !self.types.is_empty() && !self.types.contains(&"null") {
            self.types.push("null");
        }
        self
    }

    /// Appends the schema as compact JSON, keys sorted.
    pub fn write(&self, out: &mut String, top: bool) {
        let mut w = Members { out, first: true };
        if top {
            w.key("$schema");
            w.out.push_str(&crate::json::quote(DIALECT));
        }
        if let Some(a) = &self.additional {
            w.key("additionalProperties");
            a.write(w.out, false);
        }
        if let Some(f) = &self.format {
            w.key("format");
            w.out.push_str(&crate::json::quote(f));
        }
        if let Some(i) = &self.items {
            w.key("items");
            i.write(w.out, false);
        }
        for (k, v) in [("maximum", &self.maximum), ("minimum", &self.minimum)] {
            if let Some(v) = v {
                w.key(k);
                w.out.push_str(v);
            }
        }
        if self.object {
            w.key("properties");
            w.out.push('{');
            for (i, (name, s)) in self.properties.iter().enumerate() {
                if i > 0 {
                    w.out.push(',');
                }
                w.out.push_str(&crate::json::quote(name));
                w.out.push(':');
                s.write(w.out, false);
            }
            w.out.push('}');
        }
        if !self.required.is_empty() {
            w.key("required");
            w.list(&self.required.iter().map(String::as_str).collect::<Vec<_>>());
        }
        match self.types.len() {
            0 => {}
            1 => {
                w.key("type");
                w.out.push_str(&crate::json::quote(self.types[0]));
            }
            _ => {
                w.key("type");
                w.list(&self.types);
            }
        }
        if w.first {
            out.push('{');
        }
        out.push('}');
    }
}

/// Writes the members of an object: `key` opens it or adds a comma.
struct Members<'a> {
    out: &'a mut String,
    first: bool,
}

impl Members<'_> {
    fn key(&mut self, k: &str) {
        self.out.push(if self.first { '{' } else { ',' });
        self.first = false;
        self.out.push_str(&crate::json::quote(k));
        self.out.push(':');
    }
    fn list(&mut self, items: &[&str]) {
        self.out.push('[');
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push_str(&crate::json::quote(s));
        }
        self.out.push(']');
    }
}

/// The JSON Schema of T, as the host gets it (with "$schema").
pub fn schema_of<T: Shape>() -> String {
    let mut out = String::new();
    T::schema().write(&mut out, true);
    out
}

/// Decodes a value of T from JSON text, exactly as T's schema admits.
pub fn decode<T: Shape>(text: &[u8]) -> Result<T, Mismatch> {
    let mut r = Reader::new(text);
    let v = T::read(&mut r)?;
    r.end()?;
    Ok(v)
}

/// Encodes a value of T as JSON.
pub fn encode<T: Shape>(v: &T) -> String {
    let mut out = String::new();
    v.write(&mut out);
    out
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            fn schema() -> Schema {
                let mut s = Schema::of("integer");
                let signed = <$t>::MIN != 0;
                let bits = 8 * std::mem::size_of::<$t>();
                s.format = Some(format!("{}int{}", if signed { "" } else { "u" }, bits));
                s.minimum = Some(<$t>::MIN.to_string());
                s.maximum = Some(<$t>::MAX.to_string());
                s
            }
            fn read(r: &mut Reader) -> Result<Self, Mismatch> {
                if r.kind()? != Kind::Number {
                    return Err(r.wrong_type("integer"));
                }
                let text = r.number()?;
                let kind = crate::reader::number_kind(text);
                if kind != "integer" {
                    return Err(r.fail(format!("want integer, got number {}", text)));
                }
                text.parse::<$t>().map_err(|_| {
                    let f = Self::schema().format.unwrap_or_default();
                    r.fail(format!("want integer in {} range [{}, {}], got integer {}", f, <$t>::MIN, <$t>::MAX, text))
                })
            }
            fn write(&self, out: &mut String) {
                out.push_str(&self.to_string());
            }
        }
    )*};
}

integer!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! float {
    ($($t:ty, $bits:expr, $max:expr);*) => {$(
        impl Shape for $t {
            fn schema() -> Schema {
                let mut s = Schema::of("number");
                s.format = Some(format!("float{}", $bits));
                s
            }
            fn read(r: &mut Reader) -> Result<Self, Mismatch> {
                if r.kind()? != Kind::Number {
                    return Err(r.wrong_type("number"));
                }
                let text = r.number()?;
                match text.parse::<$t>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    _ => Err(r.fail(format!("want number in float{} range [-{}, {}], got {} {}", $bits, $max, $max,
                        crate::reader::number_kind(text), text))),
                }
            }
            fn write(&self, out: &mut String) {
                out.push_str(&self.to_string()); // NaN and infinities are not JSON: the value is refused where it is sent
            }
        }
    )*};
}

float!(f32, 32, "3.4028235e+38"; f64, 64, "1.7976931348623157e+308");

impl Shape for bool {
    fn schema() -> Schema {
        Schema::of("boolean")
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        if r.kind()? != Kind::Bool {
            return Err(r.wrong_type("boolean"));
        }
        r.boolean()
    }
    fn write(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl Shape for String {
    fn schema() -> Schema {
        Schema::of("string")
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        if r.kind()? != Kind::String {
            return Err(r.wrong_type("string"));
        }
        r.string()
    }
    fn write(&self, out: &mut String) {
        out.push_str(&crate::json::quote(self));
    }
}

impl Shape for () {
    fn schema() -> Schema {
        Schema::of("null")
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        if r.kind()? != Kind::Null {
            return Err(r.wrong_type("null"));
        }
        r.null()
    }
    fn write(&self, out: &mut String) {
        out.push_str("null");
    }
}

impl<T: Shape> Shape for Option<T> {
    fn schema() -> Schema {
        T::schema().nullable()
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        if r.kind()? == Kind::Null {
            r.null()?;
            return Ok(None);
        }
        T::read(r).map(Some).map_err(|e| null_too(e, &T::schema()))
    }
    fn write(&self, out: &mut String) {
        match self {
            Some(v) => v.write(out),
            None => out.push_str("null"),
        }
    }
    fn missing() -> Option<Self> {
        Some(None)
    }
}

/// Adds "or null" to the want of a type mismatch of an Option's value, as
/// the host words it for a type list with null.
fn null_too(mut e: Mismatch, inner: &Schema) -> Mismatch {
    if inner.types.len() == 1 {
        let want = format!("want {}, got ", inner.types[0]);
        if let Some(rest) = e.reason.strip_prefix(&want) {
            e.reason = format!("want {} or null, got {}", inner.types[0], rest);
        }
    }
    e
}

impl<T: Shape> Shape for Vec<T> {
    fn schema() -> Schema {
        let mut s = Schema::of("array");
        s.items = Some(Box::new(T::schema()));
        s
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        if r.kind()? != Kind::Array {
            return Err(r.wrong_type("array"));
        }
        let mut v = Vec::new();
        r.array(|r| {
            v.push(T::read(r)?);
            Ok(())
        })?;
        Ok(v)
    }
    fn write(&self, out: &mut String) {
        out.push('[');
        for (i, e) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            e.write(out);
        }
        out.push(']');
    }
}

fn map_schema<T: Shape>() -> Schema {
    let mut s = Schema::of("object");
    s.additional = Some(Box::new(T::schema()));
    s
}

fn read_map<T: Shape, M: Default + Extend<(String, T)>>(r: &mut Reader) -> Result<M, Mismatch> {
    if r.kind()? != Kind::Object {
        return Err(r.wrong_type("object"));
    }
    let mut m = M::default();
    r.object(|r, k| {
        m.extend(Some((k.to_string(), T::read(r)?))); // a key given twice: the last wins
        Ok(())
    })?;
    Ok(m)
}

fn write_map<'a, T: Shape + 'a>(out: &mut String, members: impl Iterator<Item = (&'a String, &'a T)>) {
    out.push('{');
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&crate::json::quote(k));
        out.push(':');
        v.write(out);
    }
    out.push('}');
}

impl<T: Shape> Shape for BTreeMap<String, T> {
    fn schema() -> Schema {
        map_schema::<T>()
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        read_map(r)
    }
    fn write(&self, out: &mut String) {
        write_map(out, self.iter());
    }
}

impl<T: Shape> Shape for HashMap<String, T> {
    fn schema() -> Schema {
        map_schema::<T>()
    }
    fn read(r: &mut Reader) -> Result<Self, Mismatch> {
        read_map(r)
    }
    fn write(&self, out: &mut String) {
        let mut members: Vec<_> = self.iter().collect();
        members.sort_by(|a, b| a.0.cmp(b.0)); // the same bytes every time: results are compared on replay
        write_map(out, members.into_iter());
    }
}
