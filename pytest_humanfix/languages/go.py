"""Go: the candidate and the tests in two test binaries, each built with `go test -c` in GOPATH
mode (no module proxy), so `go vet`'s checks hold the candidate's code as BigCode's `go test`
does. The candidate's binary is its code (BigCode's assembly without the tests: the helper
imports it uses and does not import itself) and a TestMain that answers the tests' calls of the
entry point, typed by the declared signature (`go_driver/wire.go`), built in its process from
its own copy of the worker's build cache, since `go` must write to its cache. The tests' binary
is the prompt's helpers (Poly for FindZero), a stub of the entry point with the declared
signature that calls across the pipe, and the tests, against Debian's testify: built by the
harness, once per worker and source, where only the tests' processes see it
(docs/languages.md#execution)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from functools import cache
from importlib.resources import files
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Limits, Side
from ..sandbox.toolchain import Step
from .base import SANDBOX_PATH, Language, split_top, threads_allowed, tool

# BigCode's IMPORT_HELPER["go"]: packages added to the imports when the code uses them.
IMPORT_HELPER = ("math", "strings", "fmt", "strconv", "time", "bytes", "regexp", "sort",
                 "math/rand", "crypto/md5")
GOPATH = "/usr/share/gocode"  # golang-github-stretchr-testify-dev installs testify here
CACHE = "gocache"
WIRE_NAME = "humanfix_wire_test.go"
# Each process's files: its program, the wire, and the entry point's side of it.
CANDIDATE_NAME, ANSWER_NAME = "main_test.go", "humanfix_answer_test.go"
TESTS_NAME, STUB_NAME = "tests_test.go", "humanfix_stub_test.go"
SOURCES = {"candidate": (CANDIDATE_NAME, WIRE_NAME, ANSWER_NAME),
           "tests": (TESTS_NAME, WIRE_NAME, STUB_NAME)}
# The last tests' binaries a worker keeps: a task's rounds run the same tests again.
TESTS_KEPT = 8
WARM_MAIN = """package main

import "testing"

func TestMain(m *testing.M) {}
"""
WARM_TEST = """package main

import (
    "testing"
    "github.com/stretchr/testify/assert"
)

func TestWarm(t *testing.T) {
    assert.Equal(t, 1, 1)
}
"""
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# An exported name of each package BigCode's assembly may import, to keep an import used.
KEPT_BY = {"math": "Abs", "strings": "Compare", "fmt": "Sprint", "strconv": "Itoa",
           "time": "Now", "bytes": "Compare", "regexp": "MustCompile", "sort": "Ints",
           "math/rand": "Intn", "crypto/md5": "Sum", "testing": "Short",
           "github.com/stretchr/testify/assert": "Equal"}


class SignatureError(ValueError):
    """A declaration whose entry point's signature the driver cannot read."""


@cache
def wire() -> str:
    return files(__package__).joinpath("go_driver/wire.go").read_text(encoding="utf-8")


def signature(task: Task) -> tuple[list[str], str]:
    """The entry point's parameter types and result type, as the declaration writes them
    (`x, y, z interface{}` gives three)."""
    text = task.declaration.strip()
    found = re.search(rf"func\s+{re.escape(task.entry_point)}\s*\(", text)
    params, result = "", ""
    if found is not None and text.endswith("{"):
        depth, index = 1, found.end()
        while index < len(text) and depth:
            depth += (text[index] == "(") - (text[index] == ")")
            index += 1
        params, result = text[found.end():index - 1], text[index:-1].strip()
    if not result or result.startswith("("):
        raise SignatureError(
            f"{task.task_id}: the Go driver reads a declaration 'func {task.entry_point}"
            f"(params) result {{' with one result, and this one is {text!r}: give the task "
            "such a declaration")
    types: list[str] = []
    pending = 0
    for piece in split_top(params, "()[]{}"):
        named = re.fullmatch(r"([A-Za-z_]\w*)\s+(\S.*)", piece)
        if named is None and IDENTIFIER.fullmatch(piece):
            pending += 1  # a name whose type comes with the next one
            continue
        types += [named.group(2).strip() if named else piece] * (pending + 1)
        pending = 0
    if pending:  # no names at all: `func F(int, string)`
        types = split_top(params, "()[]{}")
    return types, result


def imported(code: str) -> dict[str, str]:
    """The packages `code` imports itself, each with the name it has there."""
    blocks = re.findall(r"(?m)^\s*import\s*(\([^)]*\)|(?:[\w.]+[ \t]+)?\"[^\"\n]+\")", code)
    return {path: name or path.split("/")[-1] for block in blocks
            for name, path in re.findall(r'(?m)^\s*(?:import\s*)?\(?\s*([\w.]*)\s*"([^"\n]+)"',
                                         block)}


def uses(code: str, name: str) -> bool:
    """BigCode's test of whether code uses a package it knows by `name` (the last part of its
    path, unless imported under another): that name and a dot on a line that is not a
    comment."""
    return any(name + "." in line and not line.strip().startswith("//")
               for line in code.split("\n"))


def without_imports(code: str) -> str:
    code = re.sub(r"(?m)^\s*import\s*\([^)]*\)\s*$", "", code)
    code = re.sub(r"(?m)^\s*import\s+(?:\S+\s+)?\"[^\"\n]+\"\s*$", "", code)
    return code.replace("package main", "")


def with_imports(code: str, offered: list[str], tests: str = "") -> str:
    """A file of package main: the packages of `offered` that `code` uses and does not import
    itself, then `code` (BigCode's assembly, for one side). An import of the code's that only
    the `tests` use (the prompt's "time" for DecodeCyclic's tests) is kept used, as the tests
    kept it in BigCode's one program."""
    own = imported(code)
    used = sorted({package for package in offered
                   if package not in own and uses(code, package.split("/")[-1])})
    block = ("import (\n" + "".join(f'    "{package}"\n' for package in used) + ")\n\n"
             if used else "")
    kept = "".join(f"\nvar _ = {name}.{KEPT_BY[path]}" for path, name in sorted(own.items())
                   if path in KEPT_BY and name.isidentifier() and name != "_"
                   and uses(tests, path.split("/")[-1]) and not uses(code, name))
    return "package main\n\n" + block + code.replace("package main", "").strip() + "\n" + \
        (kept + "\n" if kept else "")


def offered(task: Task) -> list[str]:
    """What BigCode's assembly may import for the code: the test set-up's packages and the
    helper ones."""
    return [*imported(task.test_setup), *IMPORT_HELPER]


def helpers(task: Task) -> str:
    """The prompt's code before the entry point's declaration (Poly for FindZero), without its
    imports: the tests use the dataset's own helpers, never the candidate's."""
    found = re.search(rf"(?m)^func\s+{re.escape(task.entry_point)}\s*\(", task.prompt)
    return without_imports(task.prompt[:found.start()] if found else "").strip()


class Go(Language):
    name = "go"
    title = "Go"
    fence = "go"
    fence_tags = ("go", "golang")
    timeout = 20.0
    stop_words = ("\n//", "\nfunc main(", "struct", "\nfunc", "<|endoftext|>")
    source_name = CANDIDATE_NAME  # BigCode's name for the file that holds the code
    failure_pattern = r"\.go:\d+:\d+:|Error:|panic:|--- FAIL"
    tools = (("go", "golang-go"),)
    flag_rules = (
        ("exit", r"\b(?:os\s*\.\s*(?:Exit|FindProcess)|syscall\s*\.\s*(?:Exit|Kill|Tgkill|"
                 r"Syscall\w*|RawSyscall\w*)|runtime\s*\.\s*Goexit|log\s*\.\s*Fatal\w*)\b"),
        ("environment", r"\b(?:os|syscall)\s*\.\s*(?:Getenv|Environ|LookupEnv)\b|/proc/"),
        # Tests, TestMain or an init of its own, the testing package, unsafe, linkname.
        ("around the tests", r"(?m)^\s*func\s+(?:(?:Test|Benchmark|Fuzz|Example)\w*|init)(?=\s*\()"
                             r"|\btesting\s*\.|\bunsafe\s*\.|go:linkname"),
        # The test binary's arguments (-test.run=^$ runs no test), a package variable set by a
        # function literal (it runs before the tests), a dot or blank import, and a package
        # of those above imported under another name (o.Exit).
        ("around the tests", r"(?m)\bos\s*\.\s*Args\b|\bflag\s*\.\s*(?:Set|CommandLine|Parse)\b|"
                             r"^var\s+[^=\n]*=\s*func\b|^\s*(?:import\s+)?[._]\s+\"[^\"]*\"|"
                             r"^\s*(?:import\s+)?\w+\s+\"(?:os|syscall|runtime|testing|unsafe|flag|"
                             r"log)\""))
    known_failures = {
        "Go/27": "the prompt imports \"strings\", which the reference solution does not use, and "
                 "Go refuses to compile an unused import",
        "Go/95": "the reference solution's verdict depends on Go's random map iteration order: "
                 "it passes or fails from run to run"}

    def job(self, code: str, tests: str, task: Task) -> Job:
        params, result = signature(task)
        entry = task.entry_point
        answer = ("package main\n\nimport humanfixTesting \"testing\"\n\n"
                  "func TestMain(m *humanfixTesting.M) {\n"
                  f"    var entry func({', '.join(params)}) {result} = {entry}\n"
                  "    humanfixAnswer(entry)\n}\n")
        args = [f"humanfixArg{index}" for index in range(len(params))]
        declared = ", ".join(f"humanfixArg{index} {kind}" for index, kind in enumerate(params))
        stub = ("package main\n\n"
                f"func {entry}({declared}) "
                f"{result} {{\n    var humanfixResult {result}\n"
                f"    humanfixCall({json.dumps(entry)}, []interface{{}}"
                f"{{{', '.join('&' + a for a in args)}}}, &humanfixResult)\n"
                "    return humanfixResult\n}\n")
        candidate = with_imports(code, offered(task), tests)
        calling = with_imports(helpers(task) + "\n\n" + tests, offered(task))
        sides = {role: Side(json.dumps({"files": dict(zip(SOURCES[role], programs,
                                                                  strict=True))}),
                            SOURCES[role][0], steps=True)
                 for role, programs in (("candidate", (candidate, wire(), answer)),
                                        ("tests", (calling, wire(), stub)))}
        return Job(sides["candidate"], sides["tests"], entry)

    def program(self, code: str, tests: str, task: Task) -> str:
        return self.assemble(code, task) + "\n" + "\n" + tests + "\n"

    def assemble(self, code: str, task: Task) -> str:
        """BigCode's: test_setup without the imports the code has, then an import block for
        the helper packages the code uses outside comments and does not import."""
        setup = task.test_setup + "\n"
        for line in setup.split("\n"):
            line = line.replace("import", "").replace("(", "").replace(")", "").strip()
            if line.startswith('"') and line in code:
                setup = setup.replace(line, "")
        whole = setup + code + "\n" + task.test
        used = []
        for package in IMPORT_HELPER:
            if f'"{package}"' in whole:
                continue
            short = package.split("/")[-1]
            if any(short + "." in line and not line.strip().startswith("//")
                   for line in whole.split("\n")):
                used.append(f'"{short}"')
        imports = ("import (\n" + "\n".join("    " + p for p in sorted(set(used))) + "\n)\n"
                   if used else "")
        if "package main" in code and "package main" in setup:
            code = code.replace("package main", "")
        return setup + imports + code

    def steps(self, cache: Path, role: str) -> list[Step]:
        binary = f"{role}.test"
        return [Step((tool("go"), "test", "-c", "-o", binary, *SOURCES[role]), "compile"),
                Step((f"./{binary}",), "run")]

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return go_env(f"{box}/{CACHE}")

    def limits(self, limits: Limits) -> Limits:
        return threads_allowed(limits, 256)

    def warm(self, cache: Path) -> None:
        """What a candidate's build reads, compiled into the worker's build cache: the testing
        package, the wire's packages and the helper ones (never testify, which only the tests'
        build needs: the smaller the cache, the cheaper each execution's copy of it)."""
        build(cache / CACHE, {
            "warm.go": "package main\n\nimport (\n" + "".join(
                f'    "{package}"\n' for package in IMPORT_HELPER) + ")\n\nvar _ = []interface{}{"
            + ", ".join(f"{package.split('/')[-1]}.{KEPT_BY[package]}"
                        for package in IMPORT_HELPER) + "}\n",
            WIRE_NAME: wire(), "warm_test.go": WARM_MAIN}, cache / "warm.test")
        (cache / "warm.test").unlink()

    def prepare(self, box: Path, cache: Path) -> None:
        shutil.copytree(cache / CACHE, box / CACHE)

    def built(self, files: dict[str, str], cache: Path) -> list[Step] | None:
        """The tests' binary, built here once per source (its build cache, warmed with testify
        on the first, is the worker's own); the last `TESTS_KEPT` are kept."""
        key = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:32]
        binary = cache / key / "tests.test"
        if binary.exists():
            binary.touch()
        else:
            if not (cache / CACHE).exists():
                build(cache / CACHE, {"main_test.go": WARM_TEST, WIRE_NAME: wire()},
                      cache / "warm.test")
                (cache / "warm.test").unlink()
            build(cache / CACHE, files, binary)
            kept = sorted((found.stat().st_mtime, found.parent)
                          for found in cache.glob("*/tests.test"))
            for _, folder in kept[:-TESTS_KEPT]:
                shutil.rmtree(folder, ignore_errors=True)
        return [Step((str(binary),), "run")]


def build(gocache: Path, files: dict[str, str], binary: Path) -> None:
    """`go test -c` of harness code (warm-ups, the tests), outside the sandbox."""
    with tempfile.TemporaryDirectory(prefix="humanfix-go-build-") as folder:
        for name, text in files.items():
            Path(folder, name).write_text(text, encoding="utf-8")
        binary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([tool("go"), "test", "-c", "-o", str(binary), *files], cwd=folder,
                       env=go_env(str(gocache), home=folder), capture_output=True, check=True,
                       timeout=300)


def go_env(gocache: str, home: str | None = None) -> dict[str, str]:
    env = {"GOPATH": GOPATH, "GO111MODULE": "off", "GOCACHE": gocache, "CGO_ENABLED": "0",
           "GOFLAGS": "", "GOPROXY": "off"}
    if home is not None:  # the warm-up runs outside the sandbox, with no environment of ours
        env.update(PATH=SANDBOX_PATH, HOME=home, LANG="C.UTF-8")
    return env
