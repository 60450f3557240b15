"""Rust: BigCode's assembly (`fn main(){}`, the declaration's `use` lines the code lacks, the
candidate, the tests, whose test function ends with the proof that it finished) in main.rs,
compiled as a test crate against Debian's vendored crates
(rand, regex, md5: no crates.io), compiled once per worker into a cache that executions only
read, then the test binary. Debian's rand 0.8 breaks the tests written for rand 0.4's
`gen_range`: those tasks are `known_failures`
(docs/languages.md#known-failures-and-the-controls)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Limits
from ..sandbox.toolchain import FINISHED_NAME, FINISHED_VARIABLE, Step
from .base import SANDBOX_PATH, Language, before_closing_brace, threads_allowed, tool

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
# The end of the tests' one test function, in their `mod tests` (paths from the crate root, so
# no item of the candidate's stands in for them).
DRIVER = f"""
        ;if let Ok(secret) = ::std::env::var("{FINISHED_VARIABLE}") {{
            ::std::fs::write("{FINISHED_NAME}", secret).unwrap();
        }}
"""
RAND_04 = ("the tests call rand 0.4's gen_range(low, high); Debian's rand 0.8 takes a range, "
           "so the test does not compile")


class Rust(Language):
    name = "rust"
    title = "Rust"
    fence = "rust"
    fence_tags = ("rust", "rs")
    timeout = 300.0
    source_name = "main.rs"
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

    def finish(self, tests: str) -> str:
        return before_closing_brace(tests, 2, DRIVER)

    def steps(self, cache: Path, role: str) -> list[Step]:
        deps = cache / "target" / "debug" / "deps"
        externs = []
        for crate in CRATES:
            rlib = min(deps.glob(f"lib{crate}-*.rlib"), default=None)
            if rlib is not None:
                externs += ["--extern", f"{crate}={rlib}"]
        return [Step((tool("rustc"), "--edition", "2021", "--test", "-A", "warnings",
                      "-C", "debuginfo=0", "-L", f"dependency={deps}", *externs,
                      "-o", "main", self.source_name), "compile"),
                Step(("./main",), "run")]

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
