"""JavaScript: `node test.js`, judged as BigCode judges it: the tests use `console.assert`,
which prints and never throws, so any output on stdout or stderr is a failure. The proof that
the tests finished is a file, so it writes nothing there (docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..sandbox.toolchain import FINISHED_NAME, FINISHED_VARIABLE, Step
from .base import Language, tool

# Where scripts/setup installs js-md5 (JavaScript/162 needs it): outside the home folder and
# /tmp, which the bwrap layer hides.
NODE_MODULES = "/usr/local/lib/humanfix/node_modules"
# A member reached by a dot or by a quoted name (process["exit"]).
MEMBER = r"""(?:\.|\[\s*['"`])\s*"""
# After the tests' last call, at the top level (the leading semicolon ends a call the tests
# left without one).
DRIVER = (f";if (process.env.{FINISHED_VARIABLE} !== undefined) "
          f"require('fs').writeFileSync('{FINISHED_NAME}', process.env.{FINISHED_VARIABLE})\n")


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

    def finish(self, tests: str) -> str:
        return tests + "\n" + DRIVER

    def steps(self, cache: Path, role: str) -> list[Step]:
        return [Step((tool("node"), self.source_name), "run", silent=True)]

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return {"NODE_PATH": NODE_MODULES}

    def missing(self) -> list[str]:
        lines = super().missing()
        if not Path(NODE_MODULES, "js-md5").is_dir():
            lines.append(f"js-md5 not found in {NODE_MODULES} (JavaScript/162 needs it: "
                         f"npm install --prefix {Path(NODE_MODULES).parent} js-md5)")
        return lines
