// The calls between the tests and the candidate, which run in two Rust processes: one JSON line
// per message (pytest_humanfix/sandbox/inside/wire.py's form), each value typed on both sides by
// the entry point's declared signature. Both programs hold this file as `mod humanfix_wire`;
// the candidate's `main` calls `answer_calls`, the tests' stub of the entry point `call`.
// Harness code, std only (rustc 1.63), so that it compiles beside any candidate.
//
// A value: bool as true/false; char as a string of that one char; each integer type as a JSON
// integer (a value out of the declared type's range is refused, never cut); f32 and f64 as the
// shortest text that reads back the same value, NaN, Infinity and -Infinity as Python's json
// writes them, -0 kept; String and &str as a JSON string (a &str read on either side is a
// leaked String, whose lifetime is any); Vec as an array; a tuple as an array; Option as null
// or a one-item array [v] (so Some(None) is not None); HashMap as an array of [key, value]
// pairs (a key twice is refused); a `dyn Any` (Box<dyn Any>, &dyn Any) as a one-key object
// naming the type it holds ({"i32": 4}, {"&str": "2.3"}, {"Vec<Box<dyn Any>>": [...]}), for
// the types in `any_types!`: any other is refused. A message is at most 16 MiB and nests at
// most 100 deep. Whatever the other side sends, a reader gives a value of the declared type
// or an error, never a value of the other side's.
#![allow(dead_code)]

use std::any::Any;
use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::io::FromRawFd;
use std::sync::Mutex;

pub const MESSAGE_BYTES: usize = 16 << 20;
const DEPTH: usize = 100;
const CALLS_IN: i32 = 3;
const CALLS_OUT: i32 = 4;
const SHOWN_CHARS: usize = 200;

/// A JSON value as read: a number keeps its text, so each reader parses it as its own type.
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

pub fn parse(text: &str) -> Result<Json, String> {
    let mut parser = Parser { bytes: text.as_bytes(), text, at: 0, depth: 0 };
    let value = parser.value()?;
    parser.blank();
    if parser.at != parser.bytes.len() {
        return Err(parser.fail("more after the message's end"));
    }
    Ok(value)
}

struct Parser<'t> {
    bytes: &'t [u8],
    text: &'t str,
    at: usize,
    depth: usize,
}

impl<'t> Parser<'t> {
    fn fail(&self, why: &str) -> String {
        format!("{} at byte {} of the message", why, self.at)
    }
    fn blank(&mut self) {
        while self.at < self.bytes.len() && b" \t\r\n".contains(&self.bytes[self.at]) {
            self.at += 1;
        }
    }
    fn word(&mut self, word: &str) -> bool {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.blank();
        if self.bytes.get(self.at) != Some(&byte) {
            return Err(self.fail(&format!("expected '{}'", byte as char)));
        }
        self.at += 1;
        Ok(())
    }
    fn value(&mut self) -> Result<Json, String> {
        self.depth += 1;
        if self.depth > DEPTH {
            return Err(self.fail("a value nested too deep"));
        }
        self.blank();
        let value = match self.bytes.get(self.at) {
            Some(b'"') => Json::Str(self.string()?),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.blank();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.blank();
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.fail("expected ',' or ']'")),
                        }
                    }
                }
                Json::Array(items)
            }
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.blank();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.blank();
                        let key = self.string()?;
                        self.expect(b':')?;
                        members.push((key, self.value()?));
                        self.blank();
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.fail("expected ',' or '}'")),
                        }
                    }
                }
                Json::Object(members)
            }
            _ if self.word("true") => Json::Bool(true),
            _ if self.word("false") => Json::Bool(false),
            _ if self.word("null") => Json::Null,
            _ => Json::Number(self.number()?),
        };
        self.depth -= 1;
        Ok(value)
    }
    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_digit() {
            self.at += 1;
        }
        self.at - start
    }
    fn number(&mut self) -> Result<String, String> {
        let start = self.at;
        for word in ["NaN", "Infinity", "-Infinity"] {
            if self.word(word) {
                return Ok(word.to_string());
            }
        }
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits = self.digits();
        if digits == 0 || (digits > 1 && self.bytes[self.at - digits] == b'0') {
            return Err(self.fail("expected a value"));
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(self.fail("expected digits after '.'"));
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e') | Some(b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+') | Some(b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(self.fail("expected an exponent"));
            }
        }
        Ok(self.text[start..self.at].to_string())
    }
    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.text.get(self.at..self.at + 4).unwrap_or("");
        let code = u32::from_str_radix(digits, 16).map_err(|_| self.fail("a bad \\u escape"))?;
        if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.fail("a bad \\u escape"));
        }
        self.at += 4;
        Ok(code)
    }
    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self.at < self.bytes.len() && !b"\"\\".contains(&self.bytes[self.at])
                && self.bytes[self.at] >= 0x20
            {
                self.at += 1;
            }
            out.push_str(&self.text[start..self.at]);
            match self.bytes.get(self.at) {
                None => return Err(self.fail("a string without its end")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escaped = self.bytes.get(self.at).copied();
                    self.at += 1;
                    match escaped {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let mut code = self.hex4()?;
                            if (0xd800..0xdc00).contains(&code) && self.word("\\u") {
                                let low = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&low) {
                                    return Err(self.fail("a lone surrogate in a string"));
                                }
                                code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                            }
                            match char::from_u32(code) {
                                Some(c) => out.push(c),
                                None => return Err(self.fail("a lone surrogate in a string")),
                            }
                        }
                        _ => return Err(self.fail("an unknown escape in a string")),
                    }
                }
                Some(_) => return Err(self.fail("a control character in a string")),
            }
        }
    }
}

pub fn put_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A value written as the wire writes it.
pub trait Put {
    fn put(&self, out: &mut String) -> Result<(), String>;
}

/// A value of the type read into, from what the wire wrote.
pub trait Get: Sized {
    fn get(value: &Json) -> Result<Self, String>;
}

fn wrong<T>(wanted: &str, value: &Json) -> Result<T, String> {
    Err(format!("{} expected, and {} is none", wanted, value.kind()))
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Put for $t {
            fn put(&self, out: &mut String) -> Result<(), String> {
                out.push_str(&self.to_string());
                Ok(())
            }
        }
        impl Get for $t {
            fn get(value: &Json) -> Result<Self, String> {
                match value {
                    Json::Number(text) if !text.contains(|c| ".eEIN".contains(c)) => text
                        .parse::<$t>()
                        .map_err(|_| format!("{} is out of the range of {}", text,
                                             stringify!($t))),
                    Json::Number(text) => Err(format!("an integer expected, and {} is none",
                                                      text)),
                    _ => wrong("an integer", value),
                }
            }
        }
    )*};
}
integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Put for $t {
            fn put(&self, out: &mut String) -> Result<(), String> {
                if self.is_nan() {
                    out.push_str("NaN");
                } else if self.is_infinite() {
                    out.push_str(if *self < 0.0 { "-Infinity" } else { "Infinity" });
                } else {
                    // Debug: the shortest text that reads back the same value, -0.0 kept.
                    out.push_str(&format!("{:?}", self));
                }
                Ok(())
            }
        }
        impl Get for $t {
            fn get(value: &Json) -> Result<Self, String> {
                match value {
                    Json::Number(text) => match text.as_str() {
                        "NaN" => Ok(<$t>::NAN),
                        "Infinity" => Ok(<$t>::INFINITY),
                        "-Infinity" => Ok(<$t>::NEG_INFINITY),
                        _ => text.parse::<$t>().map_err(|_| format!("{} is no number", text)),
                    },
                    _ => wrong("a number", value),
                }
            }
        }
    )*};
}
floats!(f32, f64);

impl Put for bool {
    fn put(&self, out: &mut String) -> Result<(), String> {
        out.push_str(if *self { "true" } else { "false" });
        Ok(())
    }
}
impl Get for bool {
    fn get(value: &Json) -> Result<Self, String> {
        match value {
            Json::Bool(b) => Ok(*b),
            _ => wrong("a boolean", value),
        }
    }
}

impl Put for () {
    fn put(&self, out: &mut String) -> Result<(), String> {
        out.push_str("null");
        Ok(())
    }
}
impl Get for () {
    fn get(value: &Json) -> Result<Self, String> {
        match value {
            Json::Null => Ok(()),
            _ => wrong("null", value),
        }
    }
}

impl Put for char {
    fn put(&self, out: &mut String) -> Result<(), String> {
        put_str(out, &self.to_string());
        Ok(())
    }
}
impl Get for char {
    fn get(value: &Json) -> Result<Self, String> {
        match value {
            Json::Str(text) if text.chars().count() == 1 => Ok(text.chars().next().unwrap()),
            Json::Str(_) => Err("a char given as a string of other than one char".to_string()),
            _ => wrong("a char", value),
        }
    }
}

impl Put for str {
    fn put(&self, out: &mut String) -> Result<(), String> {
        put_str(out, self);
        Ok(())
    }
}
impl Put for String {
    fn put(&self, out: &mut String) -> Result<(), String> {
        put_str(out, self);
        Ok(())
    }
}
impl Get for String {
    fn get(value: &Json) -> Result<Self, String> {
        match value {
            Json::Str(text) => Ok(text.clone()),
            _ => wrong("a string", value),
        }
    }
}
impl<'a> Get for &'a str {
    fn get(value: &Json) -> Result<Self, String> {
        Ok(Box::leak(String::get(value)?.into_boxed_str()))
    }
}

impl<'r, T: Put + ?Sized> Put for &'r T {
    fn put(&self, out: &mut String) -> Result<(), String> {
        (**self).put(out)
    }
}
impl<T: Put + ?Sized> Put for Box<T> {
    fn put(&self, out: &mut String) -> Result<(), String> {
        (**self).put(out)
    }
}

fn put_items<'i, T: Put + 'i, I: Iterator<Item = &'i T>>(out: &mut String, items: I)
    -> Result<(), String>
{
    out.push('[');
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push(',');
        }
        item.put(out)?;
    }
    out.push(']');
    Ok(())
}

fn items(value: &Json) -> Result<&Vec<Json>, String> {
    match value {
        Json::Array(items) => Ok(items),
        _ => wrong("an array", value),
    }
}

impl<T: Put> Put for [T] {
    fn put(&self, out: &mut String) -> Result<(), String> {
        put_items(out, self.iter())
    }
}
impl<T: Put> Put for Vec<T> {
    fn put(&self, out: &mut String) -> Result<(), String> {
        put_items(out, self.iter())
    }
}
impl<T: Get> Get for Vec<T> {
    fn get(value: &Json) -> Result<Self, String> {
        items(value)?.iter().map(T::get).collect()
    }
}

impl<T: Put> Put for Option<T> {
    fn put(&self, out: &mut String) -> Result<(), String> {
        match self {
            None => {
                out.push_str("null");
                Ok(())
            }
            Some(item) => put_items(out, std::iter::once(item)),
        }
    }
}
impl<T: Get> Get for Option<T> {
    fn get(value: &Json) -> Result<Self, String> {
        match value {
            Json::Null => Ok(None),
            Json::Array(items) if items.len() == 1 => Ok(Some(T::get(&items[0])?)),
            _ => wrong("null or a one-item array (an Option)", value),
        }
    }
}

macro_rules! tuples {
    ($(($($name:ident $index:tt),+))*) => {$(
        impl<$($name: Put),+> Put for ($($name,)+) {
            fn put(&self, out: &mut String) -> Result<(), String> {
                out.push('[');
                $(
                    if $index > 0 {
                        out.push(',');
                    }
                    self.$index.put(out)?;
                )+
                out.push(']');
                Ok(())
            }
        }
        impl<$($name: Get),+> Get for ($($name,)+) {
            fn get(value: &Json) -> Result<Self, String> {
                let items = items(value)?;
                let wanted = [$($index),+].len();
                if items.len() != wanted {
                    return Err(format!("a tuple of {} expected, and the array has {} items",
                                       wanted, items.len()));
                }
                Ok(($($name::get(&items[$index])?,)+))
            }
        }
    )*};
}
tuples!((A 0) (A 0, B 1) (A 0, B 1, C 2) (A 0, B 1, C 2, D 3));

impl<K: Put, V: Put, S> Put for HashMap<K, V, S> {
    fn put(&self, out: &mut String) -> Result<(), String> {
        out.push('[');
        for (index, (key, value)) in self.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push('[');
            key.put(out)?;
            out.push(',');
            value.put(out)?;
            out.push(']');
        }
        out.push(']');
        Ok(())
    }
}
impl<K: Get + Eq + Hash, V: Get> Get for HashMap<K, V> {
    fn get(value: &Json) -> Result<Self, String> {
        let mut map = HashMap::new();
        for pair in items(value)? {
            let (key, item) = <(K, V)>::get(pair)?;
            if map.insert(key, item).is_some() {
                return Err("a map with a key twice".to_string());
            }
        }
        Ok(map)
    }
}

// The types a `dyn Any` may hold to cross, each under its name; the other side's downcast then
// finds the same type the value had.
macro_rules! any_types {
    ($action:ident) => {
        $action!(i8, "i8"); $action!(i16, "i16"); $action!(i32, "i32"); $action!(i64, "i64");
        $action!(isize, "isize"); $action!(u8, "u8"); $action!(u16, "u16");
        $action!(u32, "u32"); $action!(u64, "u64"); $action!(usize, "usize");
        $action!(f32, "f32"); $action!(f64, "f64"); $action!(bool, "bool");
        $action!(char, "char"); $action!(String, "String"); $action!(&'static str, "&str");
        $action!(Vec<i32>, "Vec<i32>"); $action!(Vec<f64>, "Vec<f64>");
        $action!(Vec<String>, "Vec<String>"); $action!(Vec<Box<dyn Any>>, "Vec<Box<dyn Any>>");
    };
}

impl Put for dyn Any {
    fn put(&self, out: &mut String) -> Result<(), String> {
        macro_rules! put_held {
            ($t:ty, $name:expr) => {
                if let Some(held) = self.downcast_ref::<$t>() {
                    out.push('{');
                    put_str(out, $name);
                    out.push(':');
                    held.put(out)?;
                    out.push('}');
                    return Ok(());
                }
            };
        }
        if self.is::<()>() {
            out.push_str("{\"()\":null}");
            return Ok(());
        }
        any_types!(put_held);
        Err("a dyn Any holding a type that cannot cross (it may hold the integer types, f32, \
             f64, bool, char, String, &str, (), Vec<i32>, Vec<f64>, Vec<String> or \
             Vec<Box<dyn Any>>)".to_string())
    }
}
impl Get for Box<dyn Any> {
    fn get(value: &Json) -> Result<Self, String> {
        let (name, held) = match value {
            Json::Object(members) if members.len() == 1 => (&members[0].0, &members[0].1),
            _ => return wrong("a one-key object (a dyn Any)", value),
        };
        macro_rules! get_held {
            ($t:ty, $name:expr) => {
                if name == $name {
                    let read: $t = Get::get(held)?;
                    return Ok(Box::new(read));
                }
            };
        }
        if name == "()" {
            return Ok(Box::new(()));
        }
        any_types!(get_held);
        Err(format!("a dyn Any of an unknown type {:?}", name))
    }
}

/// A variant of an enum the wire carries as a one-key object: {"Variant": value}.
pub fn put_variant<T: Put + ?Sized>(out: &mut String, name: &str, value: &T)
    -> Result<(), String>
{
    out.push('{');
    put_str(out, name);
    out.push(':');
    value.put(out)?;
    out.push('}');
    Ok(())
}

/// The one-key object of an enum's variant: its name and its value.
pub fn variant(value: &Json) -> Result<(&str, &Json), String> {
    match value {
        Json::Object(members) if members.len() == 1 => Ok((&members[0].0, &members[0].1)),
        _ => wrong("a one-key object (an enum's variant)", value),
    }
}

pub fn encoded<T: Put + ?Sized>(value: &T) -> Result<String, String> {
    let mut out = String::new();
    value.put(&mut out)?;
    Ok(out)
}

fn read_line(pipe: &mut BufReader<File>) -> Result<Option<String>, String> {
    let mut line = Vec::new();
    pipe.by_ref()
        .take(MESSAGE_BYTES as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|error| format!("cannot be read ({})", error))?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(if line.len() > MESSAGE_BYTES {
            "a message longer than 16 MiB".to_string()
        } else {
            "a message cut off before its end".to_string()
        });
    }
    line.pop();
    String::from_utf8(line).map(Some).map_err(|_| "a message that is not UTF-8".to_string())
}

fn member<'j>(members: &'j [(String, Json)], key: &str) -> Option<&'j Json> {
    members.iter().find(|(name, _)| name == key).map(|(_, value)| value)
}

/// The arguments of one call, read in order by their declared types.
pub struct Call {
    args: Vec<Json>,
    next: usize,
}

impl Call {
    fn read(line: &str) -> Result<Call, String> {
        let members = match parse(line)? {
            Json::Object(members) => members,
            _ => return Err("a call that is not an object".to_string()),
        };
        match member(&members, "args") {
            Some(Json::Array(_)) => {}
            _ => return Err("a call without its arguments".to_string()),
        }
        let args = members.into_iter().find(|(name, _)| name == "args").unwrap().1;
        match args {
            Json::Array(args) => Ok(Call { args, next: 0 }),
            _ => unreachable!(),
        }
    }
    pub fn arg<T: Get>(&mut self) -> Result<T, String> {
        let value = self.args.get(self.next).ok_or("a call with too few arguments")?;
        self.next += 1;
        T::get(value)
    }
    pub fn done(&self) -> Result<(), String> {
        if self.next != self.args.len() {
            return Err("a call with too many arguments".to_string());
        }
        Ok(())
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        String::new()
    }
}

fn pipe(fd: i32) -> File {
    // The descriptors child.py gives every process of an execution (inside/descriptors.py).
    unsafe { File::from_raw_fd(fd) }
}

/// The candidate's main: each call read from CALLS_IN is answered on CALLS_OUT with what
/// `answer` (the entry point called with the call's arguments) returns, encoded, or the panic
/// it raised.
pub fn answer_calls<F: FnMut(&mut Call) -> Result<String, String>>(mut answer: F) {
    let mut calls = BufReader::new(pipe(CALLS_IN));
    let mut answers = pipe(CALLS_OUT);
    loop {
        let reply = match read_line(&mut calls) {
            Ok(None) => return,
            Err(why) => refused(&why),
            Ok(Some(line)) => match Call::read(&line) {
                Err(why) => refused(&why),
                Ok(mut call) => {
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                        || answer(&mut call)));
                    match result {
                        Ok(Ok(value)) if value.len() < MESSAGE_BYTES => {
                            format!("{{\"value\":{}}}", value)
                        }
                        Ok(Ok(_)) => refused("an answer longer than 16 MiB"),
                        Ok(Err(why)) => refused(&why),
                        Err(payload) => {
                            let mut out = String::from("{\"raise\":{\"type\":\"panic\",\"args\":[");
                            let text: String = panic_text(&*payload).chars().take(2000).collect();
                            put_str(&mut out, &text);
                            out.push_str("]}}");
                            out
                        }
                    }
                }
            },
        };
        if answers.write_all(format!("{}\n", reply).as_bytes()).is_err() {
            std::process::exit(1);
        }
    }
}

fn refused(why: &str) -> String {
    let mut out = String::from("{\"refused\":");
    put_str(&mut out, why);
    out.push('}');
    out
}

// The tests' two pipes, opened at the first call; a call holds them to its answer.
static PIPES: Mutex<Option<(File, BufReader<File>)>> = Mutex::new(None);

fn shown(text: &str) -> String {
    if text.chars().count() > SHOWN_CHARS {
        text.chars().take(SHOWN_CHARS).collect::<String>() + "..."
    } else {
        text.to_string()
    }
}

fn failed(name: &str, listed: &str, why: String) -> ! {
    panic!("the call {}({}) {}", name, shown(listed), why)
}

/// The tests' stub: sends the call on CALLS_OUT and returns the answer read from CALLS_IN as a
/// value of the declared return type R; a call that fails panics, which fails the test.
pub fn call<R: Get>(name: &str, args: &[Result<String, String>]) -> R {
    let mut listed = Vec::new();
    for arg in args {
        match arg {
            Ok(text) => listed.push(text.clone()),
            Err(why) => panic!("the call {}(...) cannot send its arguments: {}", name, why),
        }
    }
    let listed = listed.join(",");
    let mut pipes = PIPES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if pipes.is_none() {
        *pipes = Some((pipe(CALLS_OUT), BufReader::new(pipe(CALLS_IN))));
    }
    let (calls, answers) = pipes.as_mut().unwrap();
    let sent = calls
        .write_all(format!("{{\"args\":[{}],\"kwargs\":[],\"limit\":null}}\n", listed).as_bytes())
        .is_ok();
    let line = match read_line(answers) {
        Ok(Some(line)) if sent => line,
        Ok(_) => failed(name, &listed, "got no answer: the candidate's process ended".to_string()),
        Err(why) => failed(name, &listed, format!("has an answer that cannot be read: {}", why)),
    };
    drop(pipes);
    let answer = match parse(&line) {
        Ok(Json::Object(members)) if members.len() == 1 => members.into_iter().next().unwrap(),
        Ok(_) => failed(name, &listed, "has an answer that is neither a value, a panic nor a refusal".to_string()),
        Err(why) => failed(name, &listed, format!("has an answer that cannot be read: {}", why)),
    };
    match answer {
        (key, value) if key == "value" => match R::get(&value) {
            Ok(read) => read,
            Err(why) => failed(name, &listed, format!("has an answer that cannot be read: {}", why)),
        },
        (key, Json::Object(raised)) if key == "raise" => {
            let said = match member(&raised, "args") {
                Some(Json::Array(args)) => match args.first() {
                    Some(Json::Str(text)) => shown(text),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            failed(name, &listed, format!("panicked in the candidate's process: {}", said))
        }
        (key, Json::Str(why)) if key == "refused" => {
            failed(name, &listed, format!("has an answer that cannot cross: {}", shown(&why)))
        }
        _ => failed(name, &listed, "has an answer that is neither a value, a panic nor a refusal".to_string()),
    }
}
