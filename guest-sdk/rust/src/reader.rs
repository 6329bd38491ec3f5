//! A pull reader of JSON text for typed values (`Shape::read`): it reads
//! one value at a time, so a decode sees every member of an object in
//! order (a key given twice is decoded twice, as the host checks it), and
//! it validates what it skips. Strings are unescaped as Go's
//! encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD),
//! so both sides see the same keys.

use std::fmt;

/// A value that does not have the shape its type reads, or text that is
/// not JSON: where (`$.items[2].qty`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Where in the value, "$" for the value itself.
    pub path: String,
    /// Why, e.g. `want integer, got string "3"`.
    pub reason: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.path, self.reason)
    }
}

impl std::error::Error for Mismatch {}

/// The JSON type of the next value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

enum Step {
    Key(String),
    Index(usize),
}

/// Reads JSON text for `Shape::read`. The methods a type's `read` needs
/// are public so that `shape_struct!` can expand to them.
pub struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    path: Vec<Step>,
}

impl<'a> Reader<'a> {
    /// A reader of text.
    pub fn new(text: &'a [u8]) -> Self {
        Reader { b: text, i: 0, path: Vec::new() }
    }

    /// A mismatch at the current path.
    pub fn fail(&self, reason: impl Into<String>) -> Mismatch {
        let mut path = String::from("$");
        for s in &self.path {
            match s {
                Step::Index(i) => path.push_str(&format!("[{}]", i)),
                Step::Key(k) => path.push_str(&member(k)),
            }
        }
        Mismatch { path, reason: reason.into() }
    }

    fn syntax(&self, what: &str) -> Mismatch {
        self.fail(format!("invalid JSON at byte {}: {}", self.i, what))
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// The type of the next value.
    pub fn kind(&mut self) -> Result<Kind, Mismatch> {
        self.ws();
        match self.b.get(self.i) {
            Some(b'n') => Ok(Kind::Null),
            Some(b't') | Some(b'f') => Ok(Kind::Bool),
            Some(b'"') => Ok(Kind::String),
            Some(b'[') => Ok(Kind::Array),
            Some(b'{') => Ok(Kind::Object),
            Some(c) if *c == b'-' || c.is_ascii_digit() => Ok(Kind::Number),
            Some(_) => Err(self.syntax("unexpected character")),
            None => Err(self.syntax("unexpected end")),
        }
    }

    /// Ends the text: only white space may follow the value.
    pub fn end(&mut self) -> Result<(), Mismatch> {
        self.ws();
        if self.i != self.b.len() {
            return Err(self.syntax("extra text after the value"));
        }
        Ok(())
    }

    fn lit(&mut self, word: &str) -> Result<(), Mismatch> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            return Ok(());
        }
        Err(self.syntax("unknown literal"))
    }

    /// Reads null.
    pub fn null(&mut self) -> Result<(), Mismatch> {
        self.lit("null")
    }

    /// Reads true or false.
    pub fn boolean(&mut self) -> Result<bool, Mismatch> {
        if self.b[self.i] == b't' {
            self.lit("true").map(|_| true)
        } else {
            self.lit("false").map(|_| false)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.i - start
    }

    /// Reads a number and returns its text.
    pub fn number(&mut self) -> Result<&'a str, Mismatch> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(c) if c.is_ascii_digit() => {
                self.digits();
            }
            _ => return Err(self.syntax("bad number")),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.syntax("bad fraction"));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("bad exponent"));
            }
        }
        Ok(std::str::from_utf8(&self.b[start..self.i]).expect("ASCII"))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let s = self.b.get(at..at + 4)?;
        let s = std::str::from_utf8(s).ok()?;
        if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }

    /// Reads a string and returns its text, unescaped as Go does.
    pub fn string(&mut self) -> Result<String, Mismatch> {
        self.i += 1; // "
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\') && self.b[self.i] >= 0x20 {
                self.i += 1;
            }
            push_utf8(&mut out, &self.b[start..self.i]);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => return Err(self.syntax("control character in a string")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Mismatch> {
        let c = *self.b.get(self.i + 1).ok_or_else(|| self.syntax("unterminated string"))?;
        self.i += 2;
        let simple = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let cp = self.hex4(self.i).ok_or_else(|| self.syntax("bad \\u escape"))?;
                self.i += 4;
                if (0xD800..0xE000).contains(&cp) {
                    // A pair decodes to one rune; anything else, as in Go, is U+FFFD.
                    if let (Some(b'\\'), Some(b'u')) = (self.b.get(self.i), self.b.get(self.i + 1)) {
                        if let Some(lo) = self.hex4(self.i + 2) {
                            if (0xD800..0xDC00).contains(&cp) && (0xDC00..0xE000).contains(&lo) {
                                self.i += 6;
                                let r = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                out.push(char::from_u32(r).expect("a valid pair"));
                                return Ok(());
                            }
                        }
                    }
                    '\u{FFFD}'
                } else {
                    char::from_u32(cp).expect("not a surrogate")
                }
            }
            _ => return Err(self.syntax("bad escape")),
        };
        out.push(simple);
        Ok(())
    }

    /// Reads an array: f reads each element, under its index in the path.
    pub fn array(&mut self, mut f: impl FnMut(&mut Self) -> Result<(), Mismatch>) -> Result<(), Mismatch> {
        self.i += 1; // [
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        for n in 0.. {
            self.path.push(Step::Index(n));
            f(self)?;
            self.path.pop();
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax("want , or ]")),
            }
        }
        unreachable!()
    }

    /// Reads an object: f reads each member's value, given its key, under
    /// the key in the path. A key given twice is read twice.
    pub fn object(&mut self, mut f: impl FnMut(&mut Self, &str) -> Result<(), Mismatch>) -> Result<(), Mismatch> {
        self.i += 1; // {
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.syntax("want a member name"));
            }
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.syntax("want :"));
            }
            self.i += 1;
            self.ws();
            self.path.push(Step::Key(key.clone()));
            f(self, &key)?;
            self.path.pop();
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax("want , or }")),
            }
        }
    }

    /// Reads and drops any value, checking that it is JSON. It keeps its
    /// own stack, so depth costs no call stack.
    pub fn skip(&mut self) -> Result<(), Mismatch> {
        let mut open: Vec<u8> = Vec::new(); // the containers: b'[' or b'{'
        loop {
            match self.kind()? {
                Kind::Null => self.null()?,
                Kind::Bool => {
                    self.boolean()?;
                }
                Kind::Number => {
                    self.number()?;
                }
                Kind::String => {
                    self.string()?;
                }
                Kind::Array | Kind::Object => {
                    let c = self.b[self.i];
                    self.i += 1;
                    self.ws();
                    let close = if c == b'[' { b']' } else { b'}' };
                    if self.b.get(self.i) == Some(&close) {
                        self.i += 1;
                    } else {
                        open.push(c);
                        if c == b'{' {
                            self.key()?;
                        }
                        continue;
                    }
                }
            }
            // After a value: close what ends here, or go on to the next.
            loop {
                let top = match open.last() {
                    None => return Ok(()),
                    Some(t) => *t,
                };
                self.ws();
                match (self.b.get(self.i), top) {
                    (Some(b','), _) => {
                        self.i += 1;
                        if top == b'{' {
                            self.key()?;
                        }
                        break;
                    }
                    (Some(b']'), b'[') | (Some(b'}'), b'{') => {
                        self.i += 1;
                        open.pop();
                    }
                    _ => return Err(self.syntax("want , or the end of the container")),
                }
            }
        }
    }

    /// Reads a member name and its colon (for skip).
    fn key(&mut self) -> Result<(), Mismatch> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return Err(self.syntax("want a member name"));
        }
        self.string()?;
        self.ws();
        if self.b.get(self.i) != Some(&b':') {
            return Err(self.syntax("want :"));
        }
        self.i += 1;
        Ok(())
    }

    /// The mismatch for a value of the wrong type: it reads the value, to
    /// name it as the host does (`got integer 5`, `got string "x"`).
    pub fn wrong_type(&mut self, want: &str) -> Mismatch {
        let got = match self.kind() {
            Err(e) => return e,
            Ok(Kind::Null) => "null".to_string(),
            Ok(Kind::Bool) => match self.boolean() {
                Ok(b) => format!("boolean {}", b),
                Err(e) => return e,
            },
            Ok(Kind::Number) => match self.number() {
                Ok(t) => format!("{} {}", number_kind(t), t),
                Err(e) => return e,
            },
            Ok(Kind::String) => match self.string() {
                Ok(s) => describe_string(&s),
                Err(e) => return e,
            },
            Ok(Kind::Array) => "array".to_string(),
            Ok(Kind::Object) => "object".to_string(),
        };
        self.fail(format!("want {}, got {}", want, got))
    }
}

/// "integer" for a number written without a fraction or an exponent.
pub(crate) fn number_kind(text: &str) -> &'static str {
    if text.contains(|c| c == '.' || c == 'e' || c == 'E') {
        "number"
    } else {
        "integer"
    }
}

fn describe_string(s: &str) -> String {
    let mut short: String = s.chars().take(40).collect();
    if short.len() < s.len() {
        short.push('…');
    }
    format!("string {:?}", short)
}

/// Appends bytes as UTF-8, each byte of an invalid sequence as U+FFFD (as
/// Go's decoder replaces them).
fn push_utf8(out: &mut String, mut b: &[u8]) {
    while !b.is_empty() {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.push_str(std::str::from_utf8(&b[..good]).expect("valid"));
                out.push('\u{FFFD}');
                b = &b[good + 1..];
            }
        }
    }
}

/// The path step of key k, as the host writes it.
fn member(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
        return format!(".{}", k);
    }
    format!("[{}]", crate::json::quote(k))
}
