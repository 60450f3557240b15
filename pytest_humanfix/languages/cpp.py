"""C++: BigCode's include helper before the candidate, `g++ -std=c++11 test.cpp -lcrypto
-lssl`, then the binary (docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..dataset import Task
from ..sandbox.toolchain import Step
from .base import Language, tool

# BigCode's IMPORT_HELPER["cpp"], in its order.
INCLUDE_HELPER = (
    "using namespace std;", "#include<stdlib.h>", "#include<algorithm>", "#include<cmath>",
    "#include<math.h>", "#include<numeric>", "#include<stdio.h>", "#include<vector>",
    "#include<set>", "#include<map>", "#include<queue>", "#include<stack>", "#include<list>",
    "#include<deque>", "#include<boost/any.hpp>", "#include<string>", "#include<climits>",
    "#include<cstring>", "#include<iostream>", "#include<sstream>", "#include<fstream>",
)


class Cpp(Language):
    name = "cpp"
    title = "C++"
    fence = "cpp"
    fence_tags = ("cpp", "c++", "cc", "cxx", "c")
    timeout = 60.0
    source_name = "test.cpp"
    failure_pattern = r"error:|Assertion .* failed|terminate called"
    tools = (("g++", "g++"),)
    known_failures = {
        "CPP/23": "the tests call strlen with a string literal, which picks the C library's "
                  "strlen(const char*) (declared by the include helper's <cstring>) over the "
                  "task's strlen(string): any solution passes, the buggy one included"}

    def assemble(self, code: str, task: Task) -> str:
        # A main the model wrote would clash with the test's.
        return ("\n".join(INCLUDE_HELPER) + "\n" + code.split("int main")[0]).strip()

    def steps(self, cache: Path) -> list[Step]:
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
