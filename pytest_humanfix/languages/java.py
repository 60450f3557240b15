"""Java: the candidate's `class Solution` and the test's `public class Main` in Main.java,
`javac Main.java`, then `java -cp . Main` (docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Limits
from ..sandbox.toolchain import Step
from .base import Language, threads_allowed, tool

# A JVM reserves a compressed class space of 1 GiB and a heap of a quarter of the machine's
# memory up front, more than the sandbox's address-space limit; these fit inside it. The
# serial collector runs no collector thread per core.
JVM_FLAGS = ("-Xmx512m", "-Xss8m", "-XX:CompressedClassSpaceSize=128m",
             "-XX:ReservedCodeCacheSize=64m", "-XX:+UseSerialGC")


class Java(Language):
    name = "java"
    title = "Java"
    fence = "java"
    fence_tags = ("java",)
    timeout = 10.0
    function_end = "braces:2"  # the prompt base opens the class and the method
    source_name = "Main.java"
    failure_pattern = r"error:|Exception|AssertionError"
    tools = (("javac", "default-jdk-headless"), ("java", "default-jdk-headless"))

    def assemble(self, code: str, task: Task) -> str:
        # BigCode drops an empty Main class a model may add (the test brings its own).
        return code.replace("public class Main {\n    }", "").strip()

    def steps(self, cache: Path) -> list[Step]:
        return [Step((tool("javac"), *(f"-J{flag}" for flag in JVM_FLAGS), self.source_name),
                     "compile"),
                Step((tool("java"), *JVM_FLAGS, "-cp", ".", "Main"), "run")]

    def limits(self, limits: Limits) -> Limits:
        return threads_allowed(limits, 256)
