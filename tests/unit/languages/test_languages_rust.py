"""Rust's driver: the candidate and the tests in two programs, only plain data between them
(pytest_humanfix/languages/rust.py, rust_driver/wire.rs). Every type the 164 declarations use
crosses unchanged (floats bit for bit, a `dyn Any` as the type it holds); a candidate that
exits (at load, from a Drop, a thread, a panic hook, at its first call), redefines assert_eq!
or the tests' PartialEq, reads the tests or the environment, forks, closes or writes on the
pipes, deletes its folder's files or kills its parent changes nothing but its own answers:
scored not fixed, under the default settings, and never a harness error. An honest fix beside
them passes."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_humanfix.dataset import Task
from pytest_humanfix.languages import language
from pytest_humanfix.languages.rust import SignatureError, argument, signature
from pytest_humanfix.sandbox.environment import Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

LANGUAGE = "rust"
RUST = language(LANGUAGE)


def run(sandbox: ToolchainSandbox, task: Task, code: str, tests: str | None = None) -> Verdict:
    return sandbox.run(RUST.job(code, task.test if tests is None else tests, task))


def by_id(tasks: list[Task], task_id: str) -> Task:
    return next(task for task in tasks if task.task_id == task_id)


# Every parameter and return type of the 164 declarations, as written: each has a codec
# (wire.rs), and each crosses in the tests below.
DECLARED_TYPES = {
    "&'a dyn Any", "&Vec<f64>", "&f32", "&str", "(f32,f32)", "(i32, i32)", "(i32,i32)",
    "HashMap<&str, &str>", "HashMap<char, i32>", "Option<String>", "RtnType<String,f64,i32>",
    "String", "Vec<&str>", "Vec<Box<dyn Any>>", "Vec<String>", "Vec<Vec<i32>>", "Vec<f32>",
    "Vec<f64>", "Vec<i32>", "Vec<i64>", "Vec<u32>", "bool", "f32", "f64", "i32", "i64", "u32"}


def test_every_declared_type_is_one_the_wire_carries(tasks):
    found = set()
    for task in tasks:
        entry = signature(task)
        found |= {entry.result, *entry.params}
    assert found == DECLARED_TYPES


def test_the_entry_point_is_read_from_the_declaration(tasks):
    # The row's entry_point says correct_bracketing; the declaration and tests, ..._parenthesis.
    assert signature(by_id(tasks, "Rust/61")).name == "correct_bracketing_parenthesis"
    zero = signature(by_id(tasks, "Rust/32"))
    assert (zero.name, zero.names, zero.params, zero.result) == ("find_zero", ("xs",),
                                                                 ("&Vec<f64>",), "f64")
    assert "fn poly(xs: &Vec<f64>, x: f64) -> f64 {" in zero.helpers
    compare = signature(by_id(tasks, "Rust/137"))
    assert compare.header == ("fn compare_one<'a>(a:&'a dyn Any, b:&'a dyn Any) -> "
                              "RtnType<String,f64,i32>{")
    assert signature(by_id(tasks, "Rust/150")).names == ("n", "x", "y")
    gcd = next(signature(task) for task in tasks if "mut a" in task.declaration)
    assert gcd.names == ("a", "b") and gcd.params == ("i32", "i32")
    with pytest.raises(SignatureError, match="Rust/0: the Rust driver reads the entry point's"):
        signature(replace(tasks[0], declaration="use std::any::Any;\n"))


def test_each_argument_is_read_as_an_owned_value_and_passed_as_declared():
    assert argument("&'a dyn Any") == ("Box<dyn Any>", "&*{}")
    assert argument("&Vec<f64>") == ("Vec<f64>", "&{}")
    assert argument("&str") == ("&str", "{}")
    assert argument("HashMap<&str, &str>") == ("HashMap<&str, &str>", "{}")


def test_the_two_programs(tasks):
    """The candidate's program is its code in a module and the answer loop; the tests' program
    holds the declaration's helpers, a stub, and the tests, never the candidate's code; no
    file is named main.rs."""
    task = by_id(tasks, "Rust/38")
    job = RUST.job(task.prompt + "CANDIDATE\nfn main() { println!(\"x\"); }\n", "TESTS", task)
    candidate = json.loads(job.candidate.program)["files"]
    tests = json.loads(job.tests.program)["files"]
    assert list(candidate) == ["candidate.rs"] and list(tests) == ["tests.rs"]
    assert "mod humanfix_candidate {\nfn main(){}" in candidate["candidate.rs"]
    assert "decode_cyclic(humanfix_a0)" in candidate["candidate.rs"]
    # The wire is the worker's library, linked, never a source in either folder.
    assert "fn answer_calls" not in candidate["candidate.rs"] + tests["tests.rs"]
    assert "TESTS" not in candidate["candidate.rs"] and "CANDIDATE" not in tests["tests.rs"]
    assert "fn encode_cyclic(s: &str) -> String {" in tests["tests.rs"]
    assert tests["tests.rs"].endswith('fn decode_cyclic(s: &str) -> String {\n    humanfix_wire::'
                                      'call("decode_cyclic", &[humanfix_wire::encoded(&s)])\n'
                                      '}\n\nTESTS\n')
    assert not job.silent and job.entry_point == "decode_cyclic"
    assert RUST.steps(Path("/cache"), "tests")[0].argv.count("--test") == 1
    assert "--test" not in RUST.steps(Path("/cache"), "candidate")[0].argv


# Each value written as the wire (the worker's library of it) writes it, read back into the
# same type and written again the same (floats bit for bit); then texts each type's reader
# must refuse.
ROUND_TRIP = r"""
use std::any::Any;
use std::collections::HashMap;
use humanfix_wire::{encoded, parse, Get, Put};

fn again<T: Put + Get>(value: &T, text: &str) -> T {
    let written = encoded(value).unwrap();
    assert_eq!(written, text);
    let read = T::get(&parse(&written).unwrap()).unwrap();
    assert_eq!(encoded(&read).unwrap(), text);
    read
}

fn refused<T: Get>(text: &str) {
    let read = parse(text).and_then(|json| T::get(&json));
    assert!(read.is_err(), "not refused: {}", text);
}

fn main() {
    assert_eq!(again(&true, "true"), true);
    assert_eq!(again(&'é', "\"é\""), 'é');
    assert_eq!(again(&i32::MIN, "-2147483648"), i32::MIN);
    assert_eq!(again(&i64::MAX, "9223372036854775807"), i64::MAX);
    assert_eq!(again(&u32::MAX, "4294967295"), u32::MAX);
    assert_eq!(again(&0.1f32, "0.1").to_bits(), 0.1f32.to_bits());
    assert_eq!(again(&(0.1f64 + 0.2), "0.30000000000000004"), 0.1 + 0.2);
    assert_eq!(again(&5e-324f64, "5e-324").to_bits(), 5e-324f64.to_bits());
    assert_eq!(again(&-0.0f64, "-0.0").to_bits(), (-0.0f64).to_bits());
    assert_eq!(again(&-0.0f32, "-0.0").to_bits(), (-0.0f32).to_bits());
    assert!(again(&f64::NAN, "NaN").is_nan());
    assert!(again(&f32::NAN, "NaN").is_nan());
    assert_eq!(again(&f64::NEG_INFINITY, "-Infinity"), f64::NEG_INFINITY);
    assert_eq!(again(&f32::INFINITY, "Infinity"), f32::INFINITY);
    assert_eq!(again(&1e300f64, "1e300"), 1e300);
    let text = String::from("a\"\\\n\u{1}\u{7f}é\u{10348}");
    assert_eq!(again(&text, "\"a\\\"\\\\\\u000a\\u0001\\u007fé\u{10348}\""), text);
    let borrowed: &str = again(&"x", "\"x\"");
    assert_eq!(borrowed, "x");
    assert_eq!(again(&vec![vec![1, -2], vec![]], "[[1,-2],[]]"), vec![vec![1, -2], vec![]]);
    assert_eq!(again(&vec!["a", ""], "[\"a\",\"\"]"), vec!["a", ""]);
    assert_eq!(again(&vec![String::from("s")], "[\"s\"]"), vec![String::from("s")]);
    assert_eq!(again(&vec![1i64 << 40], "[1099511627776]"), vec![1i64 << 40]);
    assert_eq!(again(&vec![7u32], "[7]"), vec![7u32]);
    let floats = again(&vec![1.5f32, f32::NAN, -0.0], "[1.5,NaN,-0.0]");
    assert!(floats[0] == 1.5 && floats[1].is_nan() && floats[2].to_bits() == (-0.0f32).to_bits());
    assert_eq!(again(&vec![0.25f64], "[0.25]"), vec![0.25]);
    assert_eq!(again(&(1, -1), "[1,-1]"), (1, -1));
    assert_eq!(again(&(0.5f32, 2.0f32), "[0.5,2.0]"), (0.5, 2.0));
    assert_eq!(again(&Some(String::from("x")), "[\"x\"]"), Some(String::from("x")));
    assert_eq!(again(&None::<String>, "null"), None);
    assert_eq!(again(&Some(None::<i32>), "[null]"), Some(None));
    let counts: HashMap<char, i32> = [('a', 1)].into_iter().collect();
    assert_eq!(again(&counts, "[[\"a\",1]]"), counts);
    let pairs: HashMap<&str, &str> = [("k", "v")].into_iter().collect();
    assert_eq!(again(&pairs, "[[\"k\",\"v\"]]"), pairs);
    let nested: Vec<Box<dyn Any>> = vec![];
    let anys: Vec<Box<dyn Any>> = vec![Box::new(4), Box::new(nested), Box::new(23.2),
        Box::new(String::from("adasd")), Box::new('c'), Box::new("2.3"), Box::new(-1i64),
        Box::new(true), Box::new(())];
    let read = again(&anys, "[{\"i32\":4},{\"Vec<Box<dyn Any>>\":[]},{\"f64\":23.2},\
        {\"String\":\"adasd\"},{\"char\":\"c\"},{\"&str\":\"2.3\"},{\"i64\":-1},\
        {\"bool\":true},{\"()\":null}]");
    assert_eq!(read[0].downcast_ref::<i32>(), Some(&4));
    assert_eq!(read[1].downcast_ref::<Vec<Box<dyn Any>>>().map(|v| v.len()), Some(0));
    assert_eq!(read[2].downcast_ref::<f64>(), Some(&23.2));
    assert_eq!(read[5].downcast_ref::<&str>(), Some(&"2.3"));
    assert!(encoded(&(Box::new(vec![1u8]) as Box<dyn Any>)).is_err());
    let one: &dyn Any = &2.5f64;
    assert_eq!(encoded(&one).unwrap(), "{\"f64\":2.5}");
    refused::<i32>("1.5");
    refused::<i32>("2147483648");
    refused::<i32>("01");
    refused::<i32>("NaN");
    refused::<u32>("-1");
    refused::<bool>("tru");
    refused::<bool>("1");
    refused::<char>("\"ab\"");
    refused::<String>("\"open");
    refused::<String>("\"a\u{1}\"");
    refused::<String>("\"\\ud800\"");
    refused::<String>("\"\\ud800\\u0041\"");
    refused::<Vec<i32>>("[1,2");
    refused::<Vec<i32>>("[1 2]");
    refused::<Vec<i32>>("[1,2] 3");
    refused::<f64>("0x10");
    refused::<f64>("inf");
    refused::<(i32, i32)>("[1]");
    refused::<Option<i32>>("[1,2]");
    refused::<HashMap<char, i32>>("[[\"a\",1],[\"a\",2]]");
    refused::<Box<dyn Any>>("{\"Vec<u8>\":[1]}");
    refused::<Vec<i32>>(&("[".repeat(200) + &"]".repeat(200)));
    println!("all crossed");
}
"""


def test_each_declared_type_crosses_unchanged_and_bad_text_is_refused(sandbox, tmp_path):
    sandbox.start()
    (tmp_path / "round_trip.rs").write_text(ROUND_TRIP, encoding="utf-8")
    compile_step = RUST.steps(sandbox.cache, "candidate")[0]
    argv = [*compile_step.argv[:-3], "-o", "round_trip", "round_trip.rs"]
    built = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    done = subprocess.run(["./round_trip"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (0, "all crossed\n"), done.stderr


# A task whose entry point takes the declared types that a reference or a `dyn Any` makes
# special on the candidate's side, and gives each back.
ECHO = ("fn echo<'a>(a: &str, b: Vec<&str>, c: HashMap<&str, &str>, d: &Vec<f64>, e: &f32, "
        "f: &'a dyn Any, g: Vec<Box<dyn Any>>, mut h: i64) -> (Vec<String>, Vec<f64>, "
        "Option<String>, Vec<i32>) {")
ECHO_CODE = ECHO + """
    let mut keys: Vec<String> = c.iter().map(|(k, v)| format!("{}={}", k, v)).collect();
    keys.sort();
    let mut words: Vec<String> = b.iter().map(|w| w.to_string()).collect();
    words.push(a.to_string());
    words.extend(keys);
    let mut numbers = d.clone();
    numbers.push(*e as f64);
    h += 1;
    let held = f.downcast_ref::<&str>().map(|s| s.to_string());
    let ints = g.iter().filter_map(|x| x.downcast_ref::<i32>().copied())
        .chain([h as i32]).collect();
    (words, numbers, held, ints)
}
"""
ECHO_TESTS = """
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_echo() {
        let c: HashMap<&str, &str> = [("k", "v"), ("é", "\\n")].into_iter().collect();
        let g: Vec<Box<dyn Any>> = vec![Box::new(4), Box::new('c'), Box::new(-9)];
        let (words, numbers, held, ints) =
            echo("a\\u{0}b", vec!["x", ""], c, &vec![-0.0, f64::NAN, f64::INFINITY], &0.1, &"s",
                 g, 41);
        assert_eq!(words, vec!["x", "", "a\\u{0}b", "k=v", "é=\\n"]);
        assert_eq!(numbers[0].to_bits(), (-0.0f64).to_bits());
        assert!(numbers[1].is_nan() && numbers[2] == f64::INFINITY);
        assert_eq!(numbers[3], 0.1f32 as f64);
        assert_eq!(held, Some(String::from("s")));
        assert_eq!(ints, vec![4, -9, 42]);
        assert_eq!(echo("", vec![], HashMap::new(), &vec![], &1.0, &1, vec![], 0).2, None);
    }
}
"""
USES = ("use std::{slice::Iter, cmp::{max, self}, mem::replace, collections::{HashSet, HashMap}, "
        "ops::Index, ascii::AsciiExt};\nuse rand::Rng;\nuse regex::Regex;\nuse md5;\n"
        "use std::any::{Any, TypeId};\n\n")


def echo_task(declaration: str, entry_point: str) -> Task:
    return Task(task_id="Rust/0", entry_point=entry_point, bug_type="", prompt="",
                declaration=USES + declaration + "\n", buggy_solution="",
                canonical_solution="", test="", language="rust")


def test_references_and_any_cross_through_the_pipe(sandbox):
    verdict = run(sandbox, echo_task(ECHO, "echo"), USES + ECHO_CODE, ECHO_TESTS)
    assert verdict.status == "passed", verdict.stderr[-3000:]


def test_an_honest_fix_passes_and_the_bug_fails_at_its_assert(sandbox, tasks):
    task = tasks[0]
    assert run(sandbox, task, task.prompt + task.canonical_solution).status == "passed"
    buggy = run(sandbox, task, task.prompt + task.buggy_solution)
    assert buggy.status == "failed"
    assert "panicked at 'assertion failed: `(left == right)`" in buggy.first_failure()


@pytest.mark.parametrize(("failure", "said"), [
    ('    panic!("too far");\n', "panicked in the candidate's process: too far"),
    ("    let none: Vec<i32> = Vec::new();\n    let _ = none[numbers.len()];\n",
     "panicked in the candidate's process: index out of bounds"),
    ("    std::process::abort();\n", "got no answer: the candidate's process ended")])
def test_a_panic_or_a_crash_of_the_candidate_fails_the_call_naming_it(sandbox, tasks, failure,
                                                                       said):
    task = tasks[0]
    verdict = run(sandbox, task, task.prompt + failure + task.canonical_solution)
    assert verdict.status == "failed"
    said = "the call has_close_elements([11.0,2.0,3.9,4.0,5.0,2.2],0.3) " + said
    assert said in verdict.stdout + verdict.stderr, verdict.stdout + verdict.stderr[-3000:]


# Attacks a model may write into task 0's buggy function: items beside it (`items`) and
# statements at its first call (`body`), each of which passed, or would have, in the one
# program that held the tests.
LIBC = ('extern "C" {\n    fn getppid() -> i32;\n    fn kill(pid: i32, signal: i32) -> i32;\n'
        '    fn close(fd: i32) -> i32;\n    fn fork() -> i32;\n    fn _exit(status: i32) -> !;\n'
        '    fn syscall(number: i64, ...) -> i64;\n}\n')
RIGHT = ("        for i in 0..numbers.len() {\n            for j in i + 1..numbers.len() {\n"
         "                if (numbers[i] - numbers[j]).abs() < threshold { return true; }\n"
         "            }\n        }\n        return false;\n")
READ_TESTS = ('    for name in ["main.rs", "tests.rs", "../tests/box/tests.rs", '
              '"/tmp/humanfix/box/tests.rs"] {\n'
              "        if std::path::Path::new(name).exists() {\n" + RIGHT + "        }\n    }\n")
ATTACKS = {
    "exit 0 at the first call": ("", "    std::process::exit(0);\n"),
    "exit 0 before main (.init_array)": (
        '#[used]\n#[link_section = ".init_array"]\nstatic EARLY: extern "C" fn() = {\n'
        '    extern "C" fn early() { std::process::exit(0); }\n    early\n};\n', ""),
    "exit 0 from a Drop": (
        "struct Bye;\nimpl Drop for Bye {\n    fn drop(&mut self) { std::process::exit(0); }\n}\n",
        "    let _bye = Bye;\n"),
    "exit 0 from a thread": (
        "", "    std::thread::spawn(|| std::process::exit(0));\n"
            "    std::thread::sleep(std::time::Duration::from_secs(1));\n"),
    "exit 0 from a panic hook": (
        "", "    std::panic::set_hook(Box::new(|_| std::process::exit(0)));\n    panic!(\"x\");\n"),
    "exit_group at the first call": ("", "    unsafe { syscall(231, 0i64); }\n"),
    "assert_eq! redefined": ("macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\n", ""),
    "the environment read for a secret": (
        "", "    for (_, secret) in std::env::vars() {\n"
            '        let _ = std::fs::write(".humanfix-finished", &secret);\n    }\n'
            "    std::process::exit(0);\n"),
    "the tests read by file name": ("", READ_TESTS),
    "the harness's files deleted": (
        "", '    for entry in std::fs::read_dir(".").unwrap().flatten() {\n'
            "        let _ = std::fs::remove_file(entry.path());\n"
            "        let _ = std::fs::remove_dir_all(entry.path());\n"
            "        let _ = std::fs::write(entry.path(), \"\");\n    }\n"),
    "the pipes closed": ("", "    unsafe { close(3); close(4); }\n"),
    "garbage and a forged pass on the pipes": (
        "", "    use std::io::Write;\n    use std::os::unix::io::FromRawFd;\n"
            "    let mut answers = unsafe { std::fs::File::from_raw_fd(4) };\n"
            '    let _ = answers.write_all(b"{\\"value\\":true}\\ngarbage\\npassed\\n");\n'
            "    let mut status = unsafe { std::fs::File::from_raw_fd(5) };\n"
            '    let _ = status.write_all(b"passed\\n");\n'),
    "a forked child that answers in its parent's place": (
        "", "    unsafe { if fork() > 0 { _exit(0); } }\n"),
    "its parent killed": ("", "    unsafe { kill(getppid(), 9); }\n"),
}
# Out of reach because the layer hides the tests' folder: the process layer hides no file
# (docs/sandbox.md#the-process-layer), and CI runs bwrap (scripts/setup installs it).
HIDDEN_BY_THE_LAYER = ("the tests read by file name",)


def attack(task: Task, name: str) -> str:
    items, body = ATTACKS[name]
    return "fn main(){}\n" + LIBC + items + task.declaration + body + task.buggy_solution


@pytest.mark.parametrize("name", ATTACKS)
def test_an_attack_is_scored_not_fixed(sandbox, tasks, name):
    if name in HIDDEN_BY_THE_LAYER:
        assert sandbox.layer.name == "bwrap"
    # A SandboxError (a harness error) would raise here.
    verdict = run(sandbox, tasks[0], attack(tasks[0], name))
    assert verdict.status == "failed", (name, verdict.stdout, verdict.stderr[-3000:])
    # Built and run: the tests failed on its answers, or on its process's end.
    assert "CompileError" not in verdict.stderr, verdict.stderr[-3000:]
    assert "test tests::test_has_close_elements ... FAILED" in verdict.stdout, verdict.stdout


def test_the_reading_attack_would_pass_were_the_tests_in_its_folder(sandbox, tasks):
    """No straw man: with BigCode's main.rs (which held the tests) beside the candidate's
    program, the reading attack passes."""
    task = tasks[0]
    job = RUST.job(attack(task, "the tests read by file name"), task.test, task)
    files = {**json.loads(job.candidate.program)["files"], "main.rs": task.test}
    exposed = replace(job, candidate=replace(job.candidate, program=json.dumps({"files": files})))
    assert sandbox.run(exposed).status == "passed"


# Rust/137's RtnType with a PartialEq of the candidate's that holds for any two values: in the
# one program the tests' assert_eq! called it.
ALWAYS_EQUAL = """
#[derive(Debug)]
pub enum RtnType<S, F, I> {
    Empty(),
    String(S),
    Float(F),
    Int(I),
}

impl<S, F, I> PartialEq for RtnType<S, F, I> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
"""


def test_a_partialeq_of_the_candidates_is_not_the_tests(sandbox, tasks):
    task = by_id(tasks, "Rust/137")
    body = "    return RtnType::Empty();\n}\n"
    assert run(sandbox, task, task.prompt + body + ALWAYS_EQUAL).status == "failed"
    fixed = task.prompt + task.canonical_solution
    assert run(sandbox, task, fixed).status == "passed"


def test_the_tests_helper_is_the_declarations_not_the_candidates(sandbox, tasks):
    """decode_cyclic's tests encode with encode_cyclic: the candidate's own (the identity, with
    a decode_cyclic that is the identity too) stays in its process."""
    task = by_id(tasks, "Rust/38")
    code = task.prompt.replace("let l = s.len();", "return s.to_string();\n    let l = s.len();",
                               1) + "    return s.to_string();\n}\n"
    assert code.count("return s.to_string();") == 2
    assert run(sandbox, task, code).status == "failed"
