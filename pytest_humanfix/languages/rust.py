"""Rust: the candidate and the tests in two programs, each built with rustc (edition 2021)
against Debian's vendored crates (rand, regex, md5: no crates.io), compiled once per worker into
a cache that executions only read. The candidate's program is BigCode's assembly of it (`fn
main(){}`, the declaration's `use` lines the code lacks, the code, a second `fn main()` cut) in
a module of its own, beside a `main` that answers the tests' calls of the entry point, its
arguments read by the declared parameter types; the tests' program is a `rustc --test` crate of
the declaration's text before the entry point (its `use` lines and helpers), a stub of the entry
point with the declared signature that calls across the pipe, and the tests; both link the wire
(`rust_driver/wire.rs`). Rand 0.4's tests are `known_failures` (docs/languages.md#execution)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Limits, Side
from ..sandbox.toolchain import Step
from .base import SANDBOX_PATH, Language, split_top, threads_allowed, tool

CRATES = {"rand": "0.8", "regex": "1", "md5": "0.7"}
REGISTRY = "/usr/share/cargo/registry"  # Debian's librust-*-dev packages put crates here
MAIN = "fn main(){}\n"
CARGO_CONFIG = f"""[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "{REGISTRY}"

[net]
offline = true
"""
FILES = {"candidate": "candidate.rs", "tests": "tests.rs"}
BINARIES = {"candidate": "candidate", "tests": "tests"}
WIRE_RLIB = "libhumanfix_wire.rlib"  # in the worker's cache
# The entry point's header, the declaration's last `fn` (a few declarations hold helpers before
# it: poly, encode_cyclic, encode_shift, is_palindrome_10).
HEADER = re.compile(r"(?m)^[ \t]*(?:pub[ \t]+)?fn[ \t]+(?P<name>\w+)[ \t]*(?:<[^>()]*>)?[ \t]*\(")
PARAMETER = re.compile(r"(?s)\s*(?:mut\s+)?(?P<name>[A-Za-z_]\w*)\s*:(?!:)\s*(?P<type>\S.*?)\s*")
LIFETIME = re.compile(r"'\w+\s*")
# The tests' process: its memory is none of the candidate's to read or trace (exec made it
# dumpable again), set before main by the loader, with no crate.
TESTS_GUARD = """mod humanfix_guard {
    extern "C" {
        fn prctl(option: i32, ...) -> i32;
    }
    extern "C" fn undumpable() {
        unsafe { prctl(4, 0u64, 0u64, 0u64, 0u64); }  // PR_SET_DUMPABLE
    }
    #[used]
    #[link_section = ".init_array"]
    static HUMANFIX_GUARD: extern "C" fn() = undumpable;
}"""
# Types of the tests' that no declaration defines but a canonical solution does (Rust/137's
# RtnType): the tests' program gets the dataset's definition and a reader for it, the
# candidate's module a writer for its own (which must have the same variants, as the tests
# name them).
ENUMS = {
    "RtnType": ("""#[derive(Debug, PartialEq)]
pub enum RtnType<S, F, I> {
    Empty(),
    String(S),
    Float(F),
    Int(I),
}

impl<S: humanfix_wire::Get, F: humanfix_wire::Get, I: humanfix_wire::Get> humanfix_wire::Get
    for RtnType<S, F, I>
{
    fn get(value: &humanfix_wire::Json) -> Result<Self, String> {
        let (name, held) = humanfix_wire::variant(value)?;
        match name {
            "Empty" => <() as humanfix_wire::Get>::get(held).map(|_| RtnType::Empty()),
            "String" => S::get(held).map(RtnType::String),
            "Float" => F::get(held).map(RtnType::Float),
            "Int" => I::get(held).map(RtnType::Int),
            _ => Err(format!("no variant {:?} of RtnType", name)),
        }
    }
}""", """use ::humanfix_wire::Put as HumanfixPut;

impl<S: HumanfixPut, F: HumanfixPut, I: HumanfixPut> HumanfixPut for RtnType<S, F, I> {
    fn put(&self, out: &mut String) -> Result<(), String> {
        #[allow(unreachable_patterns)]
        match self {
            RtnType::Empty() => ::humanfix_wire::put_variant(out, "Empty", &()),
            RtnType::String(held) => ::humanfix_wire::put_variant(out, "String", held),
            RtnType::Float(held) => ::humanfix_wire::put_variant(out, "Float", held),
            RtnType::Int(held) => ::humanfix_wire::put_variant(out, "Int", held),
            _ => Err("a variant of RtnType that the tests do not name".to_string()),
        }
    }
}"""),
}
RAND_04 = ("the tests call rand 0.4's gen_range(low, high); Debian's rand 0.8 takes a range, "
           "so the test does not compile")


class SignatureError(ValueError):
    """A declaration whose entry point's signature the driver cannot read."""


@dataclass(frozen=True)
class Signature:
    """The entry point as the declaration declares it: its header as written (up to its `{`),
    its name (Rust/61's row says `correct_bracketing`, its declaration and tests
    `correct_bracketing_parenthesis`), its parameter and return types as written, and the
    declaration's text before it (its `use` lines and helpers)."""

    header: str
    name: str
    names: tuple[str, ...]
    params: tuple[str, ...]
    result: str
    helpers: str


def signature(task: Task) -> Signature:
    text = task.declaration.rstrip()
    headers = list(HEADER.finditer(text))
    if not headers or not text.endswith("{"):
        raise SignatureError(
            f"{task.task_id}: the Rust driver reads the entry point's header from the "
            f"declaration's last 'fn name(params) -> type {{', and there is none in "
            f"{text[-200:]!r}: give the task such a declaration")
    header = headers[-1]
    depth, index = 1, header.end()
    while index < len(text) and depth:
        depth += (text[index] == "(") - (text[index] == ")")
        index += 1
    rest = text[index:-1].strip()
    result = rest[2:].strip() if rest.startswith("->") else "()"
    names, params = [], []
    for piece in split_top(text[header.end():index - 1], "<>()[]"):
        found = PARAMETER.fullmatch(piece)
        if found is None:
            raise SignatureError(f"{task.task_id}: the Rust driver reads each parameter as "
                                 f"'name: type', and {piece.strip()!r} is not")
        names.append(found.group("name"))
        params.append(" ".join(found.group("type").split()))
    return Signature(text[header.start():].strip(), header.group("name"), tuple(names),
                     tuple(params),
                     " ".join(result.split()), text[:header.start()])


@cache
def dynamic_std() -> tuple[str, ...]:
    """Both programs link the toolchain's libstd dynamically (found through their rpath): two
    links per execution then cost less than the one static link of BigCode's one program
    did."""
    try:
        libdir = subprocess.run([tool("rustc"), "--print", "target-libdir"], capture_output=True,
                                text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ()  # no rustc: the compile step says so
    return ("-C", "prefer-dynamic", "-C", f"link-arg=-Wl,-rpath,{libdir}")


@cache
def wire() -> str:
    return files(__package__).joinpath("rust_driver/wire.rs").read_text(encoding="utf-8")


def argument(kind: str) -> tuple[str, str]:
    """How the answer loop reads an argument of the declared type `kind`: the type it reads
    (a reference's referent, a `dyn Any` boxed, named lifetimes dropped) and how it passes
    what it read (`{}` the variable)."""
    kind = LIFETIME.sub("", kind)
    if kind.startswith("&") and kind[1:].strip() == "dyn Any":
        return "Box<dyn Any>", "&*{}"
    if kind.startswith("&") and kind[1:].strip() != "str":
        return kind[1:].strip(), "&{}"
    return kind, "{}"


def answer_loop(entry: Signature) -> str:
    """The candidate's side, in its module: each call's arguments read by the declared types,
    the entry point called with them, its result sent as the declared return type."""
    args = [f"humanfix_a{index}" for index in range(len(entry.params))]
    reads = "".join(f"        let {arg}: {argument(kind)[0]} = humanfix_call.arg()?;\n"
                    for kind, arg in zip(entry.params, args, strict=True))
    passed = ", ".join(argument(kind)[1].format(arg)
                       for kind, arg in zip(entry.params, args, strict=True))
    return (f"pub fn humanfix_answer_calls() {{\n"
            f"    ::humanfix_wire::answer_calls(|humanfix_call| {{\n{reads}"
            f"        humanfix_call.done()?;\n"
            f"        let humanfix_result: {LIFETIME.sub('', entry.result)} = "
            f"{entry.name}({passed});\n"
            f"        ::humanfix_wire::encoded(&humanfix_result)\n    }});\n}}\n")


def stub(entry: Signature) -> str:
    """The entry point as the tests call it: the declared header, its body a call across the
    pipe."""
    sent = ", ".join(f"humanfix_wire::encoded(&{name})" for name in entry.names)
    return (f"{entry.header}\n    humanfix_wire::call({json.dumps(entry.name)}, &[{sent}])\n}}\n")


def enums(entry: Signature) -> list[tuple[str, str]]:
    """The definitions and writers of `ENUMS` that the entry point's types name."""
    named = set(re.findall(r"\w+", " ".join((entry.result, *entry.params))))
    return [ENUMS[name] for name in sorted(named & ENUMS.keys())]


class Rust(Language):
    name = "rust"
    title = "Rust"
    fence = "rust"
    fence_tags = ("rust", "rs")
    timeout = 300.0
    source_name = FILES["candidate"]
    failure_pattern = r"^error|panicked at"
    tools = (("rustc", "rustc"), ("cargo", "cargo"))
    flag_rules = (
        ("exit", r"\bstd\s*::\s*process\b|\bprocess\s*::\s*(?:exit|abort)\b|"
                 r"\bstd\s*::\s*\{[^}]*\bprocess\b|\blibc\s*::\s*(?:exit|_exit|abort|kill|raise|"
                 r"syscall|exec\w*)\b"),
        ("environment", r"\bstd\s*::\s*env\b|\benv\s*::\s*(?:var|vars|var_os|vars_os)\b|/proc/|"
                        r"\bstd\s*::\s*\{[^}]*\benv\b|\blibc\s*::\s*(?:getenv|environ)\b"),
        # Tests of its own (libtest runs every one), crate attributes, foreign functions.
        ("around the tests", r"#!?\s*\[\s*(?:test|cfg\s*\(\s*test|should_panic|ignore)\b|"
                             r"#!\s*\[|\bextern\s*\"|\bmod\s+tests\b|\bset_hook\b|"
                             r"\bextern\s+crate\b|\bunsafe\b|\basm!"))
    # A macro_rules! assert_eq defined before the tests replaces std's inside them.
    definitions = r"\bmacro_rules!\s*(\w+)"
    known_failures = {"Rust/32": RAND_04, "Rust/50": RAND_04}

    def prompt_base(self, task: Task, variant: str) -> str:
        return task.prompt if variant == "docs" else MAIN + task.declaration

    def assemble(self, code: str, task: Task) -> str:
        """BigCode's: fn main(){} unless present, each declaration line the code lacks, the
        code cut before a second fn main()."""
        head = "" if "fn main()" in code else MAIN
        for line in task.declaration.split("\n"):
            if line.strip() not in code:
                if line.strip().startswith("fn") and line.strip().split("(")[0] in code:
                    continue
                head += line.strip() + "\n"
        return head + "fn main()".join(code.split("fn main()")[0:2])

    def job(self, code: str, tests: str, task: Task) -> Job:
        entry = signature(task)
        kinds = enums(entry)
        # The candidate's code in a module of its own: its `fn main` is not the program's, and
        # the answer loop, in the same module, calls the entry point whatever its visibility.
        candidate = "\n".join((
            f"mod humanfix_candidate {{\n{self.assemble(code, task)}\n",
            *(writer for _, writer in kinds), answer_loop(entry), "}\n",
            "fn main() {\n    humanfix_candidate::humanfix_answer_calls();\n}\n"))
        calling = "\n".join((
            entry.helpers.strip(), TESTS_GUARD,
            *(definition for definition, _ in kinds), stub(entry), tests)) + "\n"
        sides = {role: Side(json.dumps({"files": {FILES[role]: program}}), FILES[role],
                            steps=True)
                 for role, program in (("candidate", candidate), ("tests", calling))}
        return Job(sides["candidate"], sides["tests"], task.entry_point)

    def steps(self, cache: Path, role: str) -> list[Step]:
        deps = cache / "target" / "debug" / "deps"
        externs = []
        for crate in CRATES:
            rlib = min(deps.glob(f"lib{crate}-*.rlib"), default=None)
            if rlib is not None:
                externs += ["--extern", f"{crate}={rlib}"]
        test = ("--test",) if role == "tests" else ()
        return [Step((tool("rustc"), "--edition", "2021", *test, "-A", "warnings",
                      "-C", "debuginfo=0", "-L", f"dependency={deps}", *externs,
                      "--extern", f"humanfix_wire={cache / WIRE_RLIB}", *dynamic_std(),
                      "-o", BINARIES[role], FILES[role]), "compile"),
                Step((f"./{BINARIES[role]}",), "run")]

    def limits(self, limits: Limits) -> Limits:
        # The linker's test binary comes near the file size a Python run may write, so Rust's
        # runs get more room (docs/languages.md#execution).
        return replace(threads_allowed(limits, 256), file_bytes=max(limits.file_bytes, 64 << 20))

    def missing(self) -> list[str]:
        lines = super().missing()
        absent = [c for c in CRATES if not any(Path(REGISTRY).glob(f"{c}-*"))]
        if absent:
            lines.append(f"crates {', '.join(absent)} not in {REGISTRY} (Debian: apt-get "
                         f"install {' '.join('librust-' + c + '-dev' for c in absent)})")
        return lines

    def warm(self, cache: Path) -> None:
        """The crates, built by cargo, and the wire, compiled once into a library both
        programs link (harness code, before any candidate: a compile of each program with the
        wire in its source took twice as long)."""
        (cache / "humanfix_wire.rs").write_text(wire(), encoding="utf-8")
        subprocess.run([tool("rustc"), "--edition", "2021", "--crate-type", "rlib",
                        "--crate-name", "humanfix_wire", "-A", "warnings", "-C", "debuginfo=0",
                        "-o", WIRE_RLIB, "humanfix_wire.rs"], cwd=cache,
                       env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"}, capture_output=True,
                       check=True, timeout=300)
        crate = cache / "crates"
        (crate / "src").mkdir(parents=True)
        (crate / "src" / "lib.rs").write_text("", encoding="utf-8")
        (crate / "Cargo.toml").write_text(
            '[package]\nname = "humanfix-crates"\nversion = "0.1.0"\nedition = "2021"\n\n'
            "[dependencies]\n" + "".join(f'{c} = "{v}"\n' for c, v in CRATES.items()),
            encoding="utf-8")
        home = cache / "cargo-home"
        home.mkdir()
        (home / "config.toml").write_text(CARGO_CONFIG, encoding="utf-8")
        subprocess.run([tool("cargo"), "build", "--offline", "-q"], cwd=crate,
                       env={"PATH": SANDBOX_PATH, "HOME": str(cache), "CARGO_HOME": str(home),
                            "CARGO_TARGET_DIR": str(cache / "target"), "LANG": "C.UTF-8",
                            # Without debug information the test binaries stay small.
                            "CARGO_PROFILE_DEV_DEBUG": "false"},
                       capture_output=True, check=True, timeout=600)
