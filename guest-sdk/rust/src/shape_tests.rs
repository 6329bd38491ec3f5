//! Tests of typed values: schemas, decoding, and the corpus the Go test
//! (guest-sdk/rust/shape_test.go) drives, which compares this decoder's
//! verdicts with the host's check.

use std::collections::{BTreeMap, HashMap};

use crate::shape::{decode, encode, schema_of, Shape};
use crate::shape_struct;

shape_struct! {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Decision {
        pub approved: bool,
        pub by: String,
    }
}

shape_struct! {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Mixed {
        pub n: i64,
        pub small: Option<i8>,
        pub tags: Vec<String>,
        pub inner: Decision => "in",
        pub m: BTreeMap<String, f32>,
        pub maybe: Option<Vec<Option<u64>>>,
    }
}

const TOP: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","#;

#[test]
fn schemas() {
    assert_eq!(
        schema_of::<Decision>(),
        format!(r#"{}"properties":{{"approved":{{"type":"boolean"}},"by":{{"type":"string"}}}},"required":["approved","by"],"type":"object"}}"#, TOP)
    );
    assert_eq!(schema_of::<i8>(), format!(r#"{}"format":"int8","maximum":127,"minimum":-128,"type":"integer"}}"#, TOP));
    assert_eq!(
        schema_of::<Option<u64>>(),
        format!(r#"{}"format":"uint64","maximum":18446744073709551615,"minimum":0,"type":["integer","null"]}}"#, TOP)
    );
    assert_eq!(schema_of::<Vec<f32>>(), format!(r#"{}"items":{{"format":"float32","type":"number"}},"type":"array"}}"#, TOP));
    assert_eq!(schema_of::<HashMap<String, ()>>(), format!(r#"{}"additionalProperties":{{"type":"null"}},"type":"object"}}"#, TOP));
    let mixed = schema_of::<Mixed>();
    assert!(mixed.contains(r#""required":["in","m","n","tags"]"#), "{}", mixed);
}

fn refused<T: Shape + std::fmt::Debug>(text: &str, want: &str) {
    match decode::<T>(text.as_bytes()) {
        Ok(v) => panic!("{} decoded into {:?}; want {}", text, v, want),
        Err(e) => assert_eq!(e.to_string(), want, "decoding {}", text),
    }
}

#[test]
fn decodes_exactly() {
    assert_eq!(decode::<Decision>(br#"{"by":"x","approved":true,"by":"ana","other":[1,{"a":1e999}]}"#).unwrap(), Decision { approved: true, by: "ana".into() });
    refused::<Decision>(r#"{"by":1,"by":"x","approved":true}"#, "at $.by: want string, got integer 1");
    refused::<Decision>(r#"{"BY":"x","approved":true}"#, r#"at $: missing required property "by""#);
    refused::<Decision>(r#"{"approved":null,"by":"x"}"#, "at $.approved: want boolean, got null");
    refused::<Decision>("null", "at $: want object, got null");
    refused::<i64>("9223372036854775808", "at $: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 9223372036854775808");
    refused::<u8>("-0", "at $: want integer in uint8 range [0, 255], got integer -0");
    refused::<u8>("1.0", "at $: want integer, got number 1.0");
    refused::<Option<u8>>(r#""1""#, r#"at $: want integer or null, got string "1""#);
    refused::<f32>("3.4028235677973367e38", "at $: want number in float32 range [-3.4028235e+38, 3.4028235e+38], got number 3.4028235677973367e38");
    refused::<f64>("1e400", "at $: want number in float64 range [-1.7976931348623157e+308, 1.7976931348623157e+308], got number 1e400");
    refused::<Vec<i8>>("[1,[2]]", "at $[1]: want integer, got array");
    refused::<Decision>(r#"{"approved":true,"by":"x"} x"#, "at $: invalid JSON at byte 27: extra text after the value");
    assert_eq!(decode::<f32>(b"3.4028235677973366e38").unwrap(), f32::MAX);
    assert_eq!(decode::<Option<String>>(br#""\ud800\u0041\ud83d\ude00""#).unwrap(), Some("\u{FFFD}A😀".to_string()));
    assert_eq!(decode::<u8>(b"-0").is_err(), true);
    assert_eq!(decode::<i8>(b"-0").unwrap(), 0);
    let deep = "[".repeat(20000) + &"]".repeat(20000);
    assert!(decode::<Decision>(format!(r#"{{"x":{},"approved":false,"by":""}}"#, deep).as_bytes()).is_ok(), "a deep unknown member is skipped without recursion");
}

#[test]
fn round_trip() {
    let m = Mixed {
        n: -5,
        small: None,
        tags: vec!["a\"b".into()],
        inner: Decision { approved: true, by: "é".into() },
        m: [("k".to_string(), 1.5f32)].into_iter().collect(),
        maybe: Some(vec![None, Some(u64::MAX)]),
    };
    let text = encode(&m);
    assert_eq!(text, r#"{"n":-5,"small":null,"tags":["a\"b"],"in":{"approved":true,"by":"é"},"m":{"k":1.5},"maybe":[null,18446744073709551615]}"#);
    assert_eq!(decode::<Mixed>(text.as_bytes()).unwrap(), m);
}

type Decoder = fn(&[u8]) -> Result<(), String>;

fn verdict<T: Shape>(text: &[u8]) -> Result<(), String> {
    decode::<T>(text).map(|_| ()).map_err(|e| e.to_string())
}

macro_rules! corpus {
    ($($name:literal => $t:ty),* $(,)?) => { vec![$(($name, schema_of::<$t>(), verdict::<$t> as Decoder)),*] };
}

/// The types of the corpus: every type with a Shape, alone and composed.
fn corpus_types() -> Vec<(&'static str, String, Decoder)> {
    corpus![
        "i8" => i8, "i16" => i16, "i32" => i32, "i64" => i64, "isize" => isize,
        "u8" => u8, "u16" => u16, "u32" => u32, "u64" => u64, "usize" => usize,
        "f32" => f32, "f64" => f64, "bool" => bool, "String" => String, "unit" => (),
        "Option<i8>" => Option<i8>, "Option<String>" => Option<String>, "Vec<u8>" => Vec<u8>,
        "Vec<Option<i64>>" => Vec<Option<i64>>, "Vec<Vec<f32>>" => Vec<Vec<f32>>,
        "BTreeMap<String,u16>" => BTreeMap<String, u16>, "HashMap<String,Option<bool>>" => HashMap<String, Option<bool>>,
        "Decision" => Decision, "Mixed" => Mixed, "Option<Decision>" => Option<Decision>, "Vec<Decision>" => Vec<Decision>,
    ]
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

/// Driven by the Go test: with SKEIN_SHAPE_SCHEMAS it writes each type's
/// name and schema; with SKEIN_SHAPE_VALUES (lines "name\thex value") it
/// writes a verdict per line to SKEIN_SHAPE_VERDICTS ("ok" or "err\t…").
/// Without them it checks that every type has a schema and a decoder.
#[test]
fn shape_corpus() {
    let types = corpus_types();
    if let Ok(path) = std::env::var("SKEIN_SHAPE_SCHEMAS") {
        let lines: Vec<String> = types.iter().map(|(n, s, _)| format!("{}\t{}\n", n, s)).collect();
        std::fs::write(path, lines.concat()).expect("write the schemas");
    }
    if let Ok(path) = std::env::var("SKEIN_SHAPE_VALUES") {
        let input = std::fs::read_to_string(path).expect("read the values");
        let mut out = String::new();
        for line in input.lines() {
            let (name, hex) = line.split_once('\t').expect("name\\thex");
            let (_, _, dec) = types.iter().find(|(n, _, _)| *n == name).unwrap_or_else(|| panic!("no type {}", name));
            match dec(&unhex(hex)) {
                Ok(()) => out.push_str("ok\n"),
                Err(e) => out.push_str(&format!("err\t{}\n", e.replace('\n', " "))),
            }
        }
        std::fs::write(std::env::var("SKEIN_SHAPE_VERDICTS").expect("SKEIN_SHAPE_VERDICTS"), out).expect("write the verdicts");
    }
    for (name, schema, dec) in &types {
        assert!(schema.starts_with(TOP), "{}: {}", name, schema);
        let _ = dec(b"null");
    }
}
