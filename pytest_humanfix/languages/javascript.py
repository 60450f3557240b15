"""JavaScript: the candidate and the tests in two node processes. The candidate's program is
BigCode's assembly of it (its code, as written) followed by the answer loop of
`javascript_driver/wire.js`; the tests' program is the declaration's helpers (`poly` for
findZero), the same wire, the entry point as a function that calls across the pipe, then the
tests. Judged as BigCode judges JavaScript: the tests use `console.assert`, which prints and
never throws, so any output of either process fails (`Job.silent`)
(docs/languages.md#execution)."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Side
from ..sandbox.toolchain import Step
from .base import Language, declared_name, tool

# Where scripts/setup installs js-md5 (JavaScript/162 needs it): outside the home folder and
# /tmp, which the bwrap layer hides.
NODE_MODULES = "/usr/local/lib/humanfix/node_modules"
# A member reached by a dot or by a quoted name (process["exit"]).
MEMBER = r"""(?:\.|\[\s*['"`])\s*"""
# Each process's program, in its own folder.
FILES = {"candidate": "candidate.js", "tests": "tests.js"}


@cache
def wire() -> str:
    return files(__package__).joinpath("javascript_driver/wire.js").read_text(encoding="utf-8")


def calling_program(tests: str, task: Task) -> str:
    """The declaration's helpers (its lines before the entry point's), the wire, the entry
    point as the tests call it, then the tests."""
    name = declared_name(task.declaration, task.entry_point)
    lines = task.declaration.rstrip().splitlines()
    helpers = "\n".join(lines[:-1]).strip()
    return "\n".join(part for part in (
        helpers, wire(), f"const {name} = __humanfixWire.candidate({json.dumps(name)})",
        tests) if part) + "\n"


def answering_program(code: str, task: Task) -> str:
    """The candidate's code, then the loop that answers the tests' calls (the leading
    semicolon ends a statement the code left open)."""
    name = declared_name(task.declaration, task.entry_point)
    return f"{code}\n;{wire()};__humanfixWire.answer(() => {name}, {json.dumps(name)})\n"


class JavaScript(Language):
    name = "js"
    title = "JavaScript"
    fence = "javascript"
    fence_tags = ("javascript", "js", "node", "nodejs")
    timeout = 10.0
    source_name = "test.js"
    failure_pattern = r"Assertion failed|Error"
    tools = (("node", "nodejs"),)
    flag_rules = (
        ("exit", r"\bprocess\s*" + MEMBER + r"(?:exit|reallyExit|abort|kill|exitCode)\b"),
        ("environment", r"\bprocess\s*" + MEMBER + r"env\b"),
        # console.assert prints and the judging reads the output: silenced, any code passes.
        ("redefined assert", r"\bconsole\b(?:\s*(?:\.\s*[\w$]+|\[[^\]]*\]))?\s*=(?![=>])"),
        ("redefined assert", r"\b(?:defineProperty|defineProperties|assign|setPrototypeOf|set|"
                             r"deleteProperty)\s*\(\s*console\b"),
        ("around the tests", r"\bprocess\s*" + MEMBER
                             + r"(?:on|once|stdout|stderr|binding|dlopen|chdir)\b"),
        ("around the tests", r"\b(?:eval|Function)(?=\s*\()|\bglobalThis\b|\bglobal\s*\."),
        ("around the tests", r"\brequire\s*\(\s*['\"`](?:node:)?(?:child_process|fs|vm|"
                             r"worker_threads|module|inspector|process)\b"),
        # No canonical or buggy solution names these: any other mention (an alias, an argument,
        # a member reached by a computed key) is a way to them that the rules above miss.
        ("around the tests", r"\b(?:process|console|Reflect|constructor|prepareStackTrace|"
                             r"captureStackTrace|callee|caller)\b|\bimport\s*\("),
        ("computed name", r"\brequire\s*\(\s*(?!['\"`][\w./@-]+['\"`]\s*\))"))

    def job(self, code: str, tests: str, task: Task) -> Job:
        sides = {role: Side(json.dumps({"files": {FILES[role]: program}}), FILES[role],
                            steps=True)
                 for role, program in (("candidate", answering_program(code, task)),
                                       ("tests", calling_program(tests, task)))}
        return Job(sides["candidate"], sides["tests"], task.entry_point, silent=True)

    def steps(self, cache: Path, role: str) -> list[Step]:
        return [Step((tool("node"), FILES.get(role, self.source_name)), "run", silent=True)]

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return {"NODE_PATH": NODE_MODULES}

    def missing(self) -> list[str]:
        lines = super().missing()
        if not Path(NODE_MODULES, "js-md5").is_dir():
            lines.append(f"js-md5 not found in {NODE_MODULES} (JavaScript/162 needs it: "
                         f"npm install --prefix {Path(NODE_MODULES).parent} js-md5)")
        return lines
