//! Free-form JSON kept as its canonical text, and the scan that decides canonical form
//! without building the value.
//!
//! A record's free-form value is canonical when it is exactly what `serde_json` writes for
//! the [`Value`] it parses to: compact, keys sorted bytewise without duplicates, strings
//! escaped as `serde_json` escapes them, numbers as it prints them. Reading used to decide
//! that by building the `Value` and writing it again; [`is_canonical`] decides it in one
//! pass over the bytes, and falls back to the round trip only for what the pass does not
//! settle (non-integer numbers, keys with escapes). The two agree on every input: the
//! property test below checks it against the round trip.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value held as its text. Built from a [`Value`] (so canonical by construction) or
/// read from a record (and then checked by the record reader with [`Json::is_canonical`]).
///
/// The text is always one valid JSON value: every constructor either writes it with
/// `serde_json` or has parsed or scanned it as such.
#[derive(Clone)]
pub struct Json(Box<str>);

impl Json {
    /// The canonical text of `value`.
    pub fn from_value(value: &Value) -> Json {
        // Writing a `Value` into a string cannot fail, and its output is valid JSON.
        Json(
            serde_json::to_string(value)
                .unwrap_or_else(|_| "null".to_string())
                .into(),
        )
    }

    /// `text`, which the canonical scan ([`canonical_prefix`]) has accepted whole: valid
    /// JSON already, so it is not parsed again.
    pub(crate) fn from_scanned(text: &str) -> Json {
        Json(text.into())
    }

    /// The canonical text of `value` seen as a [`Value`] (object keys sorted).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Json, serde_json::Error> {
        Ok(Json::from_value(&serde_json::to_value(value)?))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// The JSON text, owned.
    pub fn into_string(self) -> String {
        self.0.into_string()
    }

    /// The value, parsed.
    pub fn to_value(&self) -> Value {
        // The text is valid JSON (it was parsed or written as such), so parsing succeeds.
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }

    /// Parses the text as a `T`, borrowing from it where `T` does.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// True when the text is exactly `serde_json`'s serialisation of its value.
    pub fn is_canonical(&self) -> bool {
        is_canonical(self.get())
    }
}

impl Default for Json {
    fn default() -> Json {
        Json("null".into())
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Json {
        Json::from_value(&value)
    }
}

impl From<&Value> for Json {
    fn from(value: &Value) -> Json {
        Json::from_value(value)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Json {}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Written as it is: serde_json takes raw text only through a `RawValue`, which
        // borrows it after a parse (writing, unlike reading, is not the hot path).
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(|raw| Json(raw.into()))
    }
}

/// True when `text` is exactly `serde_json::to_string` of the [`Value`] it parses to;
/// false for anything else, including text that is not JSON.
pub fn is_canonical(text: &str) -> bool {
    match scan(text.as_bytes()) {
        Some(answer) => answer,
        None => round_trip(text),
    }
}

/// The length of the JSON value at the start of `text` when the scan alone settles that
/// it is canonical; `None` when it is not, or only the round trip could tell.
pub(crate) fn canonical_prefix(text: &[u8]) -> Option<usize> {
    scan_value(text, false).ok()
}

/// The definition: parse to a `Value`, write it, compare.
fn round_trip(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| serde_json::to_string(&value).ok())
        .is_some_and(|written| written == text)
}

/// What the open containers expect next.
enum Open<'a> {
    Array,
    /// An object, with its last key (its raw bytes: keys with escapes are not scanned).
    Object(Option<&'a [u8]>),
}

/// Why the scan stopped before the end.
enum Stop {
    /// The bytes are not `serde_json`'s spelling of their value.
    NotCanonical,
    /// Only the round trip can tell: a number other than a plain integer, a key with an
    /// escape, or bytes that are not JSON (the round trip then says `false`).
    Unsure,
}

type Step = Result<usize, Stop>;

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The byte at `i`, or `Unsure` at the end (the text is cut short: not JSON).
fn at(text: &[u8], i: usize) -> Result<u8, Stop> {
    text.get(i).copied().ok_or(Stop::Unsure)
}

/// One pass over `text`: `Some(answer)` when the bytes settle it, `None` when only the
/// round trip can.
fn scan(text: &[u8]) -> Option<bool> {
    match scan_value(text, true) {
        Ok(_) => Some(true),
        Err(Stop::NotCanonical) => Some(false),
        Err(Stop::Unsure) => None,
    }
}

/// Scans the value at the start of `text`; with `whole`, nothing may follow it.
fn scan_value(text: &[u8], whole: bool) -> Step {
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut i = 0;
    'value: loop {
        // A value starts at `i`.
        match at(text, i)? {
            b'{' if text.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => {
                open.push(Open::Object(None));
                i = key(text, i + 1, &mut open)?;
                continue 'value;
            }
            b'[' if text.get(i + 1) == Some(&b']') => i += 2,
            b'[' => {
                open.push(Open::Array);
                i += 1;
                continue 'value;
            }
            b'"' => i = string(text, i)?.0,
            b't' => i = literal(text, i, b"true")?,
            b'f' => i = literal(text, i, b"false")?,
            b'n' => i = literal(text, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(text, i)?,
            byte if is_space(byte) => return Err(Stop::NotCanonical),
            _ => return Err(Stop::Unsure),
        }
        // A value ended just before `i`: close containers, or go on to the next member.
        loop {
            let Some(top) = open.last() else {
                return match text.get(i) {
                    _ if !whole => Ok(i),
                    None => Ok(i),
                    Some(&byte) if is_space(byte) => Err(Stop::NotCanonical),
                    Some(_) => Err(Stop::Unsure),
                };
            };
            match (at(text, i)?, top) {
                (b',', Open::Array) => {
                    i += 1;
                    continue 'value;
                }
                (b',', Open::Object(_)) => {
                    i = key(text, i + 1, &mut open)?;
                    continue 'value;
                }
                (b']', Open::Array) | (b'}', Open::Object(_)) => {
                    open.pop();
                    i += 1;
                }
                (byte, _) if is_space(byte) => return Err(Stop::NotCanonical),
                _ => return Err(Stop::Unsure),
            }
        }
    }
}

/// A key at `i`, then its colon: returns where its value starts. Keys must rise strictly
/// (a `Value` keeps them sorted and writes a repeated key once).
fn key<'a>(text: &'a [u8], i: usize, open: &mut [Open<'a>]) -> Step {
    match at(text, i)? {
        b'"' => {}
        byte if is_space(byte) => return Err(Stop::NotCanonical),
        _ => return Err(Stop::Unsure),
    }
    let (end, escaped) = string(text, i)?;
    if escaped {
        // Their order is that of the decoded text: leave it to the round trip.
        return Err(Stop::Unsure);
    }
    let name = &text[i + 1..end - 1];
    if let Some(Open::Object(last)) = open.last_mut() {
        if last.is_some_and(|last| last >= name) {
            return Err(Stop::NotCanonical);
        }
        *last = Some(name);
    }
    match at(text, end)? {
        b':' => Ok(end + 1),
        byte if is_space(byte) => Err(Stop::NotCanonical),
        _ => Err(Stop::Unsure),
    }
}

/// The string whose quote is at `i`: where it ends (past its closing quote) and whether
/// it holds an escape.
fn string(text: &[u8], i: usize) -> Result<(usize, bool), Stop> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match at(text, j)? {
            b'"' => return Ok((j + 1, escaped)),
            b'\\' => {
                escaped = true;
                match at(text, j + 1)? {
                    b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => j += 2,
                    // Valid JSON, but serde_json writes `/` as it is.
                    b'/' => return Err(Stop::NotCanonical),
                    b'u' => {
                        // serde_json writes `\u00xx`, lowercase, for the control characters
                        // without a short escape, and for nothing else.
                        let hex = text.get(j + 2..j + 6).ok_or(Stop::Unsure)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(Stop::Unsure);
                        }
                        let control = hex.starts_with(b"00")
                            && matches!(hex[2], b'0' | b'1')
                            && matches!(hex[3], b'0'..=b'9' | b'a'..=b'f');
                        let short = [b"0008", b"0009", b"000a", b"000c", b"000d"];
                        if !control || short.iter().any(|s| hex == *s) {
                            return Err(Stop::NotCanonical);
                        }
                        j += 6;
                    }
                    _ => return Err(Stop::Unsure),
                }
            }
            // A raw control character is not JSON.
            0..=0x1f => return Err(Stop::Unsure),
            _ => j += 1,
        }
    }
}

/// `word` at `i`; returns where it ends.
fn literal(text: &[u8], i: usize, word: &[u8]) -> Step {
    match text.get(i..i + word.len()) {
        Some(found) if found == word => Ok(i + word.len()),
        _ => Err(Stop::Unsure),
    }
}

/// A number at `i`: settled here only when it is an integer `serde_json` keeps as one
/// (a `u64`, or a negative `i64`) spelled as it prints integers.
fn number(text: &[u8], i: usize) -> Step {
    let negative = text[i] == b'-';
    let start = i + usize::from(negative);
    let mut end = start;
    while text.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    let digits = &text[start..end];
    if digits.is_empty() || matches!(text.get(end), Some(b'.' | b'e' | b'E')) {
        return Err(Stop::Unsure);
    }
    match (negative, digits) {
        (false, b"0") => Ok(end),
        // Leading zeros are not JSON; `-0` becomes a float.
        (_, [b'0', ..]) => Err(Stop::Unsure),
        // 19 digits always fit a u64, 18 after a minus an i64; longer ones may not.
        (false, _) if digits.len() <= 19 => Ok(end),
        (true, _) if digits.len() <= 18 => Ok(end),
        _ => Err(Stop::Unsure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn settles_the_plain_cases_and_agrees_with_the_round_trip() {
        let cases = [
            (r#"{"a":1,"b":[true,false,null],"c":{"d":"x"}}"#, true),
            (r#"{"b":1,"a":2}"#, false),
            (r#"{"a":1,"a":2}"#, false),
            (r#"{"a": 1}"#, false),
            (r#" {"a":1}"#, false),
            (r#"{"a":1} "#, false),
            (r#"[1, 2]"#, false),
            (r#""\/""#, false),
            (r#""\u0041""#, false),
            (r#""\u000a""#, false),
            (r#""\u001F""#, false),
            (r#""\u001f""#, true),
            (r#""\n\t\"\\""#, true),
            (r#""é""#, true),
            (r#""\u00e9""#, false),
            (r#""\ud83d\ude00""#, false),
            ("1.0", true),
            ("1.50", false),
            ("1e3", false),
            ("1000.0", true),
            ("-0", false),
            ("-0.0", true),
            ("18446744073709551615", true),
            ("18446744073709551616", false),
            ("-9223372036854775808", true),
            ("-9223372036854775809", false),
            ("{}", true),
            ("[]", true),
            ("[{}]", true),
            (r#"{"\u0001":1,"a":2}"#, true),
            (r#"{"a":1,"\u0001":2}"#, false),
            ("", false),
            ("[1,]", false),
            ("nul", false),
        ];
        // The ones the scan must settle alone (the rest it leaves to the round trip).
        let unsettled = [
            "1.0",
            "1.50",
            "1e3",
            "1000.0",
            "-0",
            "-0.0",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            r#"{"\u0001":1,"a":2}"#,
            r#"{"a":1,"\u0001":2}"#,
            "",
            "[1,]",
            "nul",
        ];
        for (text, canonical) in cases {
            assert_eq!(round_trip(text), canonical, "the definition, on {text:?}");
            assert_eq!(is_canonical(text), canonical, "the scan, on {text:?}");
            let settled = (!unsettled.contains(&text)).then_some(canonical);
            assert_eq!(
                scan(text.as_bytes()),
                settled,
                "settled by the scan alone: {text:?}"
            );
        }
    }

    /// JSON texts near canonical form: values written compactly, then perturbed by the
    /// spellings a non-canonical writer might use.
    fn text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| f.to_string()),
            prop::collection::vec(any::<char>(), 0..6).prop_map(|chars| {
                serde_json::to_string(&chars.into_iter().collect::<String>()).unwrap()
            }),
            "\"([a-c]|\\\\u00[0-2][0-9a-fA-F]|\\\\[nt/\"\\\\])*\"",
            "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec(("[a-c\u{1}é]{0,2}", inner), 0..4).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
        .prop_flat_map(|text| {
            let len = text.len();
            (
                Just(text),
                0..=len,
                prop_oneof![Just(""), Just(" "), Just("\n")],
            )
        })
        .prop_map(|(text, at, space)| {
            let at = (0..=at)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            format!("{}{space}{}", &text[..at], &text[at..])
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn the_scan_agrees_with_the_round_trip(text in text()) {
            prop_assert_eq!(is_canonical(&text), round_trip(&text), "on {:?}", text);
        }

        #[test]
        fn written_values_are_canonical(text in text()) {
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                prop_assert!(Json::from_value(&value).is_canonical());
            }
        }
    }
}
