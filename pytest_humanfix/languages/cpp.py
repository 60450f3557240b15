"""C++: the candidate and the tests in two programs, each built with `g++ -std=c++11`. The
candidate's is BigCode's assembly of it (the include helper, its code, any `main` of its own
cut) and a `main` that answers the tests' calls of the entry point, its arguments read by the
declared parameter types; the tests' is the include helper, the declaration's helpers (its
includes, typedefs and functions before the entry point), a stub of the entry point with the
declared signature that calls across the pipe, and the tests. Both are compiled against the
worker's precompiled header of the include helper and the wire (`cpp_driver/wire.hpp`, whose
comment defines how each type crosses) (docs/languages.md#execution)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Side
from ..sandbox.toolchain import Step
from .base import Language, split_top, tool

# BigCode's IMPORT_HELPER["cpp"], in its order.
INCLUDE_HELPER = (
    "using namespace std;", "#include<stdlib.h>", "#include<algorithm>", "#include<cmath>",
    "#include<math.h>", "#include<numeric>", "#include<stdio.h>", "#include<vector>",
    "#include<set>", "#include<map>", "#include<queue>", "#include<stack>", "#include<list>",
    "#include<deque>", "#include<boost/any.hpp>", "#include<string>", "#include<climits>",
    "#include<cstring>", "#include<iostream>", "#include<sstream>", "#include<fstream>",
)
# In the worker's cache: the include helper and the wire, and their precompiled header beside
# them (`PRELUDE_NAME.gch`), which g++ reads in their place wherever the flags are these.
PRELUDE_NAME = "humanfix.hpp"
FLAGS = ("-std=c++11",)
FILES = {"candidate": "candidate.cpp", "tests": "tests.cpp"}
BINARIES = {"candidate": "candidate", "tests": "tests"}
# The tests' process: a call to a candidate whose process ended fails with its message, not a
# SIGPIPE, and the tests' binary is not dumpable (exec made it so again), so that no process of
# the candidate's may trace it or read its memory.
TESTS_GUARD = """#include<signal.h>
#include<sys/prctl.h>
static const int humanfix_tests_guard =
    (signal(SIGPIPE, SIG_IGN), prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0);"""
# A function's header on a line of its own, `type name(params){`, as every declaration writes
# the entry point's (the last one: CPP/38's declaration goes on into the body it declares).
HEADER = re.compile(r"(?m)^(?P<result>[A-Za-z_][\w:<>, \t]*?)[ \t]*\b(?P<name>[A-Za-z_]\w*)"
                    r"[ \t]*\((?P<params>[^()]*)\)[ \t]*\{")
PARAMETER = re.compile(r"(?s)\s*(?P<type>.*?[\w>&*])\s*\b(?P<name>[A-Za-z_]\w*)\s*")
TYPEDEF = re.compile(r"\btypedef\s+([^;]+?)\s+([A-Za-z_]\w*)\s*;")


class SignatureError(ValueError):
    """A declaration whose entry point's signature the driver cannot read."""


@dataclass(frozen=True)
class Signature:
    """The entry point as the declaration declares it: its return and parameter types as
    written, its name (CPP/121's row says `solution`, its declaration and tests `solutions`),
    and the declaration's text before it (its includes, typedefs and helpers)."""

    result: str
    name: str
    params: tuple[str, ...]
    helpers: str

    def expanded(self, text: str) -> str:
        """A type with the helpers' typedefs written out (CPP/22's list_any), so that the
        candidate's side does not need the candidate to have kept them."""
        for written, alias in TYPEDEF.findall(self.helpers):
            text = re.sub(rf"\b{alias}\b", written, text)
        return text


def signature(task: Task) -> Signature:
    headers = list(HEADER.finditer(task.declaration))
    if not headers:
        raise SignatureError(
            f"{task.task_id}: the C++ driver reads the entry point's header from the "
            f"declaration's last line of the form 'type name(params){{', and there is none in "
            f"{task.declaration[-200:]!r}: give the task such a declaration")
    header = headers[-1]
    params = []
    for piece in split_top(header.group("params"), "<>"):
        found = PARAMETER.fullmatch(piece)
        if found is None:
            raise SignatureError(f"{task.task_id}: the C++ driver reads each parameter as "
                                 f"'type name', and {piece.strip()!r} is not")
        params.append(" ".join(found.group("type").split()))
    return Signature(" ".join(header.group("result").split()), header.group("name"),
                     tuple(params), task.declaration[:header.start()])


@cache
def wire() -> str:
    return files(__package__).joinpath("cpp_driver/wire.hpp").read_text(encoding="utf-8")


def prelude() -> str:
    """What both programs are compiled after (`-include`), precompiled once per worker."""
    return "\n".join(INCLUDE_HELPER) + "\n" + wire()


def answer_loop(entry: Signature) -> str:
    """The candidate's `main`: each call's arguments read by the declared types, the entry
    point called with them, its result sent as the declared return type."""
    args = [f"humanfix_a{index}" for index in range(len(entry.params))]
    reads = "".join(f"        {entry.expanded(kind)} {arg};\n        humanfix_call.arg({arg});\n"
                    for kind, arg in zip(entry.params, args, strict=True))
    return (f"int main(){{\n    return humanfix_wire::answer_calls("
            f"[](humanfix_wire::Call& humanfix_call) -> std::string {{\n{reads}"
            f"        humanfix_call.done();\n"
            f"        return humanfix_wire::encoded<{entry.expanded(entry.result)}>("
            f"::{entry.name}({', '.join(args)}));\n    }});\n}}\n")


def stub(entry: Signature) -> str:
    """The entry point as the tests call it: the declared signature, its body a call across
    the pipe."""
    args = [f"humanfix_a{index}" for index in range(len(entry.params))]
    params = ", ".join(f"{kind} {arg}" for kind, arg in zip(entry.params, args, strict=True))
    return (f"{entry.result} {entry.name}({params}){{\n"
            f"    return humanfix_wire::call<{entry.result}>("
            f"{', '.join([json.dumps(entry.name), *args])});\n}}\n")


class Cpp(Language):
    name = "cpp"
    title = "C++"
    fence = "cpp"
    fence_tags = ("cpp", "c++", "cc", "cxx", "c")
    timeout = 60.0
    source_name = FILES["candidate"]
    failure_pattern = r"error:|Assertion .* failed|terminate called"
    tools = (("g++", "g++"),)
    flag_rules = (
        # Called, or taken as a value (auto q = _exit;).
        ("exit", r"\b(?:exit|_exit|_Exit|quick_exit|abort|terminate|kill|raise|longjmp|system|"
                 r"execv\w*|execl\w*|syscall)(?=\s*[(;,)])|\b(?:SYS|__NR)_\w+"),
        ("environment", r"\b(?:getenv|secure_getenv|environ|_environ|__environ)\b|/proc/"),
        ("around the tests", r"\b(?:atexit|at_quick_exit|set_terminate|signal|sigaction)(?=\s*\()"
                             r"|__attribute__\s*\(\(\s*(?:constructor|destructor)|"
                             r"\b(?:dlsym|dlopen|asm|__asm__)\b"),
        # A name pasted together by the preprocessor: what it names is read nowhere.
        ("computed name", r"(?m)^\s*#\s*define\b.*##"))
    # A macro over a name the tests use (assert, main, the entry point); `#undef NDEBUG`
    # only turns asserts on (CPP/94's reference solution has it).
    definitions = r"#\s*(?:define|undef(?!\s+NDEBUG\b))\s+(\w+)"
    known_failures = {
        "CPP/23": "the tests call strlen with a string literal, which picks the C library's "
                  "strlen(const char*) (declared by the include helper's <cstring>) over the "
                  "task's strlen(string): any solution passes, the buggy one included"}

    def job(self, code: str, tests: str, task: Task) -> Job:
        entry = signature(task)
        programs = {
            "candidate": self.assemble(code, task) + "\n\n" + answer_loop(entry),
            "tests": "\n".join(part for part in (
                "\n".join(INCLUDE_HELPER), entry.helpers.strip(), TESTS_GUARD, stub(entry),
                tests) if part) + "\n"}
        sides = {role: Side(json.dumps({"files": {FILES[role]: program}}), FILES[role],
                            steps=True) for role, program in programs.items()}
        return Job(sides["candidate"], sides["tests"], task.entry_point)

    def assemble(self, code: str, task: Task) -> str:
        # A main the model wrote would clash with the answer loop's.
        return ("\n".join(INCLUDE_HELPER) + "\n" + code.split("int main")[0]).strip()

    def steps(self, cache: Path, role: str) -> list[Step]:
        # OpenSSL for the candidate's code (CPP/162 computes an MD5); the tests use none.
        libraries = ("-lcrypto", "-lssl") if role == "candidate" else ()
        return [Step((tool("g++"), *FLAGS, "-include", str(cache / PRELUDE_NAME), FILES[role],
                      "-o", BINARIES[role], *libraries), "compile"),
                Step((f"./{BINARIES[role]}",), "run")]

    def warm(self, cache: Path) -> None:
        """The include helper and the wire, precompiled (harness code, before any candidate)."""
        (cache / PRELUDE_NAME).write_text(prelude(), encoding="utf-8")
        subprocess.run([tool("g++"), *FLAGS, "-x", "c++-header", PRELUDE_NAME, "-o",
                        PRELUDE_NAME + ".gch"], cwd=cache, capture_output=True, check=True,
                       timeout=300)

    def missing(self) -> list[str]:
        lines = super().missing()
        if not Path("/usr/include/boost/any.hpp").is_file():
            lines.append("boost/any.hpp not found (Debian: apt-get install libboost-dev)")
        if not Path("/usr/include/openssl/md5.h").is_file():
            lines.append("openssl/md5.h not found (Debian: apt-get install libssl-dev)")
        return lines
