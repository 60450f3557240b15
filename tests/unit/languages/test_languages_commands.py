"""What each toolchain language hands the sandbox, without running a toolchain: the commands of
an execution (compile, then run), its environment, and the lines `missing` adds for what beside
the binaries a language needs (boost and OpenSSL's headers, js-md5, Debian's Rust crates).
The programs they run: test_languages_programs.py; run for real: test_languages.py."""

from __future__ import annotations

import pytest

from pytest_humanfix.languages import LANGUAGES, cpp, javascript, rust
from pytest_humanfix.languages.java import JVM_FLAGS
from pytest_humanfix.sandbox.toolchain import Step


@pytest.fixture(autouse=True)
def no_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Binaries named bare, as where none is installed: the commands read the same anywhere."""
    monkeypatch.setattr("pytest_humanfix.languages.base.SANDBOX_PATH", "/nonexistent")


def test_cpp_compiles_each_side_on_the_workers_prelude_then_runs_the_binary(tmp_path):
    """BigCode's `g++ -std=c++11`, after the precompiled include helper and wire; OpenSSL for
    the candidate's code alone (CPP/162's MD5)."""
    prelude = ("-include", str(tmp_path / "humanfix.hpp"))
    assert LANGUAGES["cpp"].steps(tmp_path, "candidate") == [
        Step(("g++", "-std=c++11", *prelude, "candidate.cpp", "-o", "candidate", "-lcrypto",
              "-lssl"), "compile"),
        Step(("./candidate",), "run")]
    assert LANGUAGES["cpp"].steps(tmp_path, "tests") == [
        Step(("g++", "-std=c++11", *prelude, "tests.cpp", "-o", "tests"), "compile"),
        Step(("./tests",), "run")]


def test_java_compiles_the_candidate_with_the_answer_loop_against_the_workers_wire(tmp_path):
    compile_step, run_step = LANGUAGES["java"].steps(tmp_path, "candidate")
    wire = str(tmp_path / "wire")
    # javac is a JVM too: its flags go through -J; only javac's JVM stops at C1.
    assert compile_step == Step(("javac", *(f"-J{flag}" for flag in JVM_FLAGS),
                                 "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-cp", wire,
                                 "-d", ".", "Main.java", "HumanfixAnswer.java"), "compile")
    # The answer loop reads descriptors 3 and 4 through java.io's FileDescriptor.
    assert run_step == Step(("java", *JVM_FLAGS, "--add-opens", "java.base/java.io=ALL-UNNAMED",
                             "-cp", f".:{wire}", "HumanfixAnswer"), "run")
    assert "-Xmx512m" in JVM_FLAGS and "-XX:+UseSerialGC" in JVM_FLAGS


def test_javascript_runs_silent_with_its_modules_on_node_path(tmp_path):
    js = LANGUAGES["js"]
    # console.assert prints and never throws: any output is the failure.
    assert js.steps(tmp_path, "candidate") == [Step(("node", "candidate.js"), "run", silent=True)]
    assert js.steps(tmp_path, "tests") == [Step(("node", "tests.js"), "run", silent=True)]
    assert js.env("/box", tmp_path) == {"NODE_PATH": javascript.NODE_MODULES}


def test_rust_links_the_crates_compiled_into_the_workers_cache(tmp_path):
    deps = tmp_path / "target" / "debug" / "deps"
    deps.mkdir(parents=True)
    for name in ("librand-b2.rlib", "librand-a1.rlib", "libregex-c3.rlib", "libother-d4.rlib"):
        (deps / name).touch()
    compile_step, run_step = LANGUAGES["rust"].steps(tmp_path, "tests")
    assert compile_step == Step((
        "rustc", "--edition", "2021", "--test", "-A", "warnings", "-C", "debuginfo=0",
        "-L", f"dependency={deps}",
        # One build of each crate (the first by name); md5, not built, is not linked.
        "--extern", f"rand={deps / 'librand-a1.rlib'}",
        "--extern", f"regex={deps / 'libregex-c3.rlib'}",
        "--extern", f"humanfix_wire={tmp_path / rust.WIRE_RLIB}", *rust.dynamic_std(),
        "-o", "tests", "tests.rs"), "compile")
    assert run_step == Step(("./tests",), "run")


def test_rust_with_no_crates_built_links_only_the_wire(tmp_path):
    compile_step, _ = LANGUAGES["rust"].steps(tmp_path, "candidate")
    argv = compile_step.argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--extern"] == \
        [f"humanfix_wire={tmp_path / rust.WIRE_RLIB}"]


class Absent:
    """Stands in for cpp's `Path`: every header it asks for is not there."""

    def __init__(self, path: str) -> None:
        self.path = path

    def is_file(self) -> bool:
        return False


def test_cpp_names_the_packages_of_the_headers_the_include_helper_needs(monkeypatch):
    monkeypatch.setattr(cpp, "Path", Absent)
    lines = LANGUAGES["cpp"].missing()
    assert "boost/any.hpp not found (Debian: apt-get install libboost-dev)" in lines
    assert "openssl/md5.h not found (Debian: apt-get install libssl-dev)" in lines


def test_javascript_names_the_npm_command_that_installs_js_md5(monkeypatch, tmp_path):
    modules = tmp_path / "lib" / "node_modules"
    monkeypatch.setattr(javascript, "NODE_MODULES", str(modules))
    assert f"js-md5 not found in {modules} (JavaScript/162 needs it: npm install --prefix " \
        f"{modules.parent} js-md5)" in LANGUAGES["js"].missing()
    (modules / "js-md5").mkdir(parents=True)
    assert not any("js-md5" in line for line in LANGUAGES["js"].missing())


def test_rust_names_the_debian_packages_of_the_crates_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(rust, "REGISTRY", str(tmp_path))
    (tmp_path / "regex-1.10.2").mkdir()
    assert f"crates rand, md5 not in {tmp_path} (Debian: apt-get install librust-rand-dev " \
        "librust-md5-dev)" in LANGUAGES["rust"].missing()
    (tmp_path / "rand-0.8.5").mkdir()
    (tmp_path / "md5-0.7.0").mkdir()
    assert not any("crates" in line for line in LANGUAGES["rust"].missing())

