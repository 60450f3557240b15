"""JavaScript: `node test.js`, judged as BigCode judges it: the tests use `console.assert`,
which prints and never throws, so any output on stdout or stderr is a failure
(docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..sandbox.toolchain import Step
from .base import Language, tool

# Where scripts/setup installs js-md5 (JavaScript/162 needs it): outside the home folder and
# /tmp, which the bwrap layer hides.
NODE_MODULES = "/usr/local/lib/humanfix/node_modules"


class JavaScript(Language):
    name = "js"
    title = "JavaScript"
    fence = "javascript"
    fence_tags = ("javascript", "js", "node", "nodejs")
    timeout = 10.0
    source_name = "test.js"
    failure_pattern = r"Assertion failed|Error"
    tools = (("node", "nodejs"),)

    def steps(self, cache: Path) -> list[Step]:
        return [Step((tool("node"), self.source_name), "run", silent=True)]

    def env(self, box: str, cache: Path) -> dict[str, str]:
        return {"NODE_PATH": NODE_MODULES}

    def missing(self) -> list[str]:
        lines = super().missing()
        if not Path(NODE_MODULES, "js-md5").is_dir():
            lines.append(f"js-md5 not found in {NODE_MODULES} (JavaScript/162 needs it: "
                         f"npm install --prefix {Path(NODE_MODULES).parent} js-md5)")
        return lines
