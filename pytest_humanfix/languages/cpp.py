"""C++: BigCode's include helper before the candidate, the tests' main with the proof that the
tests finished before its closing brace, `g++ -std=c++11 test.cpp -lcrypto -lssl`, then the
binary (docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..dataset import Task
from ..sandbox.toolchain import FINISHED_NAME, FINISHED_VARIABLE, Step
from .base import Language, before_closing_brace, tool

# BigCode's IMPORT_HELPER["cpp"], in its order.
INCLUDE_HELPER = (
    "using namespace std;", "#include<stdlib.h>", "#include<algorithm>", "#include<cmath>",
    "#include<math.h>", "#include<numeric>", "#include<stdio.h>", "#include<vector>",
    "#include<set>", "#include<map>", "#include<queue>", "#include<stack>", "#include<list>",
    "#include<deque>", "#include<boost/any.hpp>", "#include<string>", "#include<climits>",
    "#include<cstring>", "#include<iostream>", "#include<sstream>", "#include<fstream>",
)

# The end of the tests' main, after its last assert (stdio.h and stdlib.h are in the helper).
DRIVER = f"""
    ;if (const char* humanfix_secret = getenv("{FINISHED_VARIABLE}")) {{
        if (FILE* humanfix_proof = fopen("{FINISHED_NAME}", "w")) {{
            fputs(humanfix_secret, humanfix_proof);
            fclose(humanfix_proof);
        }}
    }}
"""


class Cpp(Language):
    name = "cpp"
    title = "C++"
    fence = "cpp"
    fence_tags = ("cpp", "c++", "cc", "cxx", "c")
    timeout = 60.0
    source_name = "test.cpp"
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

    def assemble(self, code: str, task: Task) -> str:
        # A main the model wrote would clash with the test's.
        return ("\n".join(INCLUDE_HELPER) + "\n" + code.split("int main")[0]).strip()

    def finish(self, tests: str) -> str:
        return before_closing_brace(tests, 1, DRIVER)

    def steps(self, cache: Path, role: str) -> list[Step]:
        return [Step((tool("g++"), "-std=c++11", self.source_name, "-o", "test", "-lcrypto",
                      "-lssl"), "compile"),
                Step(("./test",), "run")]

    def missing(self) -> list[str]:
        lines = super().missing()
        if not Path("/usr/include/boost/any.hpp").is_file():
            lines.append("boost/any.hpp not found (Debian: apt-get install libboost-dev)")
        if not Path("/usr/include/openssl/md5.h").is_file():
            lines.append("openssl/md5.h not found (Debian: apt-get install libssl-dev)")
        return lines
