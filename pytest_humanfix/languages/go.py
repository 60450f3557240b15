"""Go: BigCode's assembly (the task's `test_setup`, the helper imports the code uses and does
not import itself, the candidate, the tests) in main_test.go, beside our TestMain, which proves
the tests finished, built with `go test -c` in GOPATH mode against Debian's testify (no module
proxy), then the test binary. The worker's build cache is warmed once with testify compiled;
each execution builds in its own copy of it, since `go` must write to its cache
(docs/languages.md#execution)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Limits
from ..sandbox.toolchain import FINISHED_NAME, FINISHED_VARIABLE, Step
from .base import SANDBOX_PATH, Language, threads_allowed, tool

# BigCode's IMPORT_HELPER["go"]: packages added to the imports when the code uses them.
IMPORT_HELPER = ("math", "strings", "fmt", "strconv", "time", "bytes", "regexp", "sort",
                 "math/rand", "crypto/md5")
GOPATH = "/usr/share/gocode"  # golang-github-stretchr-testify-dev installs testify here
CACHE = "gocache"
WARM_TEST = """package main

import (
    "testing"
    "github.com/stretchr/testify/assert"
)

func TestWarm(t *testing.T) {
    assert.Equal(t, 1, 1)
}
"""

# A file of its own beside the program, so the program stays BigCode's: m.Run returns only once
# every test ran to its end, never after an os.Exit.
DRIVER_NAME = "humanfix_finished_test.go"
DRIVER = f"""package main

import (
    "os"
    "testing"
)

func TestMain(m *testing.M) {{
    code := m.Run()
    if secret, ok := os.LookupEnv("{FINISHED_VARIABLE}"); ok && code == 0 {{
        os.WriteFile("{FINISHED_NAME}", []byte(secret), 0o600)
    }}
    os.Exit(code)
}}
"""


class Go(Language):
    name = "go"
    title = "Go"
    fence = "go"
    fence_tags = ("go", "golang")
    timeout = 20.0
    stop_words = ("\n//", "\nfunc main(", "struct", "\nfunc", "<|endoftext|>")
    source_name = "main_test.go"
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
        return [Step((tool("go"), "test", "-c", "-o", "main.test", self.source_name,
                      DRIVER_NAME), "compile"),
                Step(("./main.test",), "run")]

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return go_env(f"{box}/{CACHE}")

    def limits(self, limits: Limits) -> Limits:
        return threads_allowed(limits, 256)

    def warm(self, cache: Path) -> None:
        folder = cache / "warm"
        folder.mkdir()
        (folder / self.source_name).write_text(WARM_TEST, encoding="utf-8")
        subprocess.run([tool("go"), "test", "-c", "-o", "warm.test", self.source_name],
                       cwd=folder, env=go_env(str(cache / CACHE), home=str(folder)),
                       capture_output=True, check=True, timeout=300)
        shutil.rmtree(folder)

    def prepare(self, box: Path, cache: Path) -> None:
        shutil.copytree(cache / CACHE, box / CACHE)
        (box / DRIVER_NAME).write_text(DRIVER, encoding="utf-8")


def go_env(gocache: str, home: str | None = None) -> dict[str, str]:
    env = {"GOPATH": GOPATH, "GO111MODULE": "off", "GOCACHE": gocache, "CGO_ENABLED": "0",
           "GOFLAGS": "", "GOPROXY": "off"}
    if home is not None:  # the warm-up runs outside the sandbox, with no environment of ours
        env.update(PATH=SANDBOX_PATH, HOME=home, LANG="C.UTF-8")
    return env
