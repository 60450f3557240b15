"""Java: the candidate's `class Solution` and the test's `public class Main` in Main.java, with
a test driver class that calls `Main.main` and then proves the tests finished; `javac
Main.java`, then `java -cp . HumanfixFinished` (docs/languages.md#execution)."""

from __future__ import annotations

from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Limits
from ..sandbox.toolchain import FINISHED_NAME, FINISHED_VARIABLE, Step
from .base import Language, threads_allowed, tool

# A JVM reserves a compressed class space of 1 GiB and a heap of a quarter of the machine's
# memory up front, more than the sandbox's address-space limit; these fit inside it. The
# serial collector runs no collector thread per core.
JVM_FLAGS = ("-Xmx512m", "-Xss8m", "-XX:CompressedClassSpaceSize=128m",
             "-XX:ReservedCodeCacheSize=64m", "-XX:+UseSerialGC")
# javac's JVM only: a compile of one file ends before C2's optimised code pays for compiling it,
# and the perf-data file is a write per start that nothing reads. Neither changes the class files
# javac writes. The run step keeps the default JIT: a candidate's speed is as BigCode's.
JAVAC_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
DRIVER_CLASS = "HumanfixFinished"
# Main.main returns only once the tests ran to their end; System.exit never returns.
DRIVER = f"""
class {DRIVER_CLASS} {{
    public static void main(String[] args) throws Throwable {{
        Main.main(args);
        String secret = System.getenv("{FINISHED_VARIABLE}");
        if (secret != null) {{
            java.nio.file.Files.write(java.nio.file.Paths.get("{FINISHED_NAME}"),
                                      secret.getBytes());
        }}
    }}
}}
"""


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
    flag_rules = (
        ("exit", r"\b(?:System\s*\.\s*exit|halt)(?=\s*\()|\bgetRuntime\s*\(\s*\)\s*\.\s*exit\b|"
                 r"\bSystem\s*::\s*exit\b|\b(?:getMethod|getDeclaredMethod)\s*\(\s*\"(?:exit|halt)\""),
        ("environment", r"\bgetenv\b|/proc/"),
        ("around the tests", r"\b(?:addShutdownHook|setDefaultUncaughtExceptionHandler|"
                             r"setUncaughtExceptionHandler|setSecurityManager|setAccessible|"
                             r"setOut|setErr)\b|\bjava\s*\.\s*lang\s*\.\s*reflect\b"),
        # Reflection reaches a method by a name it may compute; Runtime and ProcessHandle end
        # the JVM by an alias the rule on exit misses; a static import names System's members
        # bare.
        ("around the tests", r"\b(?:forName|getMethod|getDeclaredMethod|getField|"
                             r"getDeclaredField|getConstructor|getDeclaredConstructor|loadClass|"
                             r"invoke|invokeExact|findStatic|findVirtual)(?=\s*\()|"
                             r"\b(?:MethodHandles|getRuntime|ProcessHandle)\b|"
                             r"\bimport\s+static\s+java\s*\.\s*lang\s*\.\s*(?:System|Runtime)\b"))
    # A class of the candidate's named like one the tests use (AssertionError, Arrays, Main)
    # stands in for it: same-file types come before java.lang and on-demand imports.
    definitions = r"\b(?:class|interface|enum|record)\s+(?!Solution\b)([A-Za-z_$][\w$]*)"

    def assemble(self, code: str, task: Task) -> str:
        # BigCode drops an empty Main class a model may add (the test brings its own).
        return code.replace("public class Main {\n    }", "").strip()

    def finish(self, tests: str) -> str:
        return tests + "\n" + DRIVER

    def steps(self, cache: Path, role: str) -> list[Step]:
        return [Step((tool("javac"), *(f"-J{flag}" for flag in (*JVM_FLAGS, *JAVAC_FLAGS)),
                      self.source_name),
                     "compile"),
                Step((tool("java"), *JVM_FLAGS, "-cp", ".", DRIVER_CLASS), "run")]

    def limits(self, limits: Limits) -> Limits:
        return threads_allowed(limits, 256)
