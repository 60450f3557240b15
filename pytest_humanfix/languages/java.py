"""Java: the candidate and the tests in two JVMs. The candidate's is BigCode's assembly of it
(its `class Solution`, in Main.java) and an answer loop, `HumanfixAnswer`, whose `main` answers
the tests' calls of the entry point through a method of the declared signature; compiled and run
in the candidate's sandbox. The tests' is the declaration (its imports, its `class Solution`
with the helpers the tests call, poly or encodeShift) whose entry point is a stub that calls
across the pipe, and the tests' `Main`: compiled by the harness once per worker and source,
where only the tests' processes see it. Both use the wire (`java_driver/HumanfixWire.java`,
whose comment defines how each type crosses), compiled once per worker
(docs/languages.md#execution)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

from ..dataset import Task
from ..sandbox.environment import Job, Limits, Side
from ..sandbox.toolchain import Step
from .base import SANDBOX_PATH, Language, split_top, threads_allowed, tool

# A JVM reserves a compressed class space of 1 GiB and a heap of a quarter of the machine's
# memory up front, more than the sandbox's address-space limit; these fit inside it. The
# serial collector runs no collector thread per core.
JVM_FLAGS = ("-Xmx512m", "-Xss8m", "-XX:CompressedClassSpaceSize=128m",
             "-XX:ReservedCodeCacheSize=64m", "-XX:+UseSerialGC")
# javac's JVM only: a compile of one file ends before C2's optimised code pays for compiling it,
# and the perf-data file is a write per start that nothing reads. Neither changes the class files
# javac writes. The run step keeps the default JIT: a candidate's speed is as BigCode's.
JAVAC_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
# The wire opens descriptors 3 and 4 as FileDescriptors, whose number field java.io keeps to
# itself: opening /proc/self/fd/3 instead would block for ever on a pipe whose other end has
# already closed (a candidate that exits at once).
OPENS = ("--add-opens", "java.base/java.io=ALL-UNNAMED")
WIRE_NAME = "HumanfixWire.java"
COMPILER_NAME = "HumanfixCompiler.java"
WIRE_CLASSES = "wire"  # in a worker's cache: the wire's class files
CANDIDATE_NAME, ANSWER_NAME, ANSWER_CLASS = "Main.java", "HumanfixAnswer.java", "HumanfixAnswer"
TESTS_NAME, TESTS_CLASS = "Main.java", "Main"
# The last tests' builds a worker keeps: a task's rounds run the same tests again.
TESTS_KEPT = 8
# The entry point's header, the declaration's last line: `public type name(params) [throws
# ...] {`.
HEADER = re.compile(r"\s*public\s+(?P<result>[\w<>\[\], ?]+?)\s+(?P<name>\w+)\s*"
                    r"\((?P<params>[^()]*)\)\s*(?:throws\s+[\w., ]+?)?\s*\{\s*")
PARAMETER = re.compile(r"\s*(?P<type>\S.*?)\s+(?P<name>[A-Za-z_$][\w$]*)\s*")


class SignatureError(ValueError):
    """A declaration whose entry point's signature the driver cannot read."""


@dataclass(frozen=True)
class Signature:
    """The entry point as the declaration declares it: its result and parameter types as
    written, their names, its name (the tests call what is declared: Java/99's row says
    closest_integer, its declaration countUpper) and the declaration's imports."""

    result: str
    name: str
    params: tuple[tuple[str, str], ...]
    imports: str


def signature(task: Task) -> Signature:
    header = HEADER.fullmatch(task.declaration.rstrip().rsplit("\n", 1)[-1])
    if header is None:
        raise SignatureError(
            f"{task.task_id}: the Java driver reads the entry point's header from the "
            f"declaration's last line, 'public type name(params) {{', and it is "
            f"{task.declaration.rstrip()[-200:]!r}: give the task such a declaration")
    params = []
    for piece in split_top(header.group("params"), "<>"):
        found = PARAMETER.fullmatch(piece)
        if found is None:
            raise SignatureError(f"{task.task_id}: the Java driver reads each parameter as "
                                 f"'type name', and {piece.strip()!r} is not")
        params.append((" ".join(found.group("type").split()), found.group("name")))
    imports = "".join(line + "\n" for line in task.declaration.splitlines()
                      if re.match(r"\s*import\s", line))
    return Signature(" ".join(header.group("result").split()), header.group("name"),
                     tuple(params), imports)


@cache
def wire() -> str:
    return files(__package__).joinpath(f"java_driver/{WIRE_NAME}").read_text(encoding="utf-8")


def answer_loop(entry: Signature) -> str:
    """The candidate's `HumanfixAnswer`: a method of the declared signature that calls the
    entry point of one Solution (as the tests' one `new Solution()`), and a `main` that answers
    each call through it."""
    declared = ", ".join(f"{kind} humanfixA{index}" for index, (kind, _) in enumerate(entry.params))
    args = ", ".join(f"humanfixA{index}" for index in range(len(entry.params)))
    return (f"{entry.imports}\nclass {ANSWER_CLASS} {{\n"
            "    private static Solution humanfixSolution;\n\n"
            f"    static {entry.result} humanfixShape({declared}) throws Throwable {{\n"
            "        if (humanfixSolution == null) humanfixSolution = new Solution();\n"
            f"        return humanfixSolution.{entry.name}({args});\n    }}\n\n"
            "    public static void main(String[] args) throws Exception {\n"
            f"        HumanfixWire.answerCalls({ANSWER_CLASS}.class, \"humanfixShape\");\n"
            "    }\n}\n")


def tests_program(tests: str, task: Task) -> str:
    """The declaration, its entry point's body a call across the pipe, then the tests."""
    entry = signature(task)
    args = "".join(f", {name}" for _, name in entry.params)
    return (task.declaration.rstrip() + "\n"
            f"        return ({entry.result}) HumanfixWire.call(Solution.class, "
            f"{json.dumps(entry.name)}, new Object[] {{{args[2:]}}});\n    }}\n}}\n\n"
            + tests.strip() + "\n")


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
    # stood in for it in BigCode's one file (same-file types come before java.lang and
    # on-demand imports); apart it cannot, and the flag still says what the code tried.
    definitions = r"\b(?:class|interface|enum|record)\s+(?!Solution\b)([A-Za-z_$][\w$]*)"

    def job(self, code: str, tests: str, task: Task) -> Job:
        programs = {
            "candidate": {CANDIDATE_NAME: self.assemble(code, task),
                          ANSWER_NAME: answer_loop(signature(task))},
            "tests": {TESTS_NAME: tests_program(tests, task)}}
        sides = {role: Side(json.dumps({"files": program}), next(iter(program)), steps=True)
                 for role, program in programs.items()}
        return Job(sides["candidate"], sides["tests"], signature(task).name)

    def assemble(self, code: str, task: Task) -> str:
        # BigCode drops an empty Main class a model may add (the test brings its own).
        return code.replace("public class Main {\n    }", "").strip()

    def steps(self, cache: Path, role: str) -> list[Step]:
        """The candidate's: its code and the answer loop compiled against the worker's wire."""
        wire_classes = str(cache / WIRE_CLASSES)
        return [Step((tool("javac"), *(f"-J{flag}" for flag in (*JVM_FLAGS, *JAVAC_FLAGS)),
                      "-cp", wire_classes, "-d", ".", CANDIDATE_NAME, ANSWER_NAME), "compile"),
                Step((tool("java"), *JVM_FLAGS, *OPENS, "-cp", f".:{wire_classes}",
                      ANSWER_CLASS), "run")]

    def limits(self, limits: Limits) -> Limits:
        return threads_allowed(limits, 256)

    def warm(self, cache: Path) -> None:
        """The wire's classes, compiled once (harness code, before any candidate)."""
        compile_java({WIRE_NAME: wire()}, cache / WIRE_CLASSES, None)

    def built(self, files: dict[str, str], cache: Path) -> list[Step] | None:
        """The tests' classes, compiled here once per source (against the wire's, compiled
        into this folder on the first); the last `TESTS_KEPT` are kept."""
        wire_classes = cache / WIRE_CLASSES
        if not wire_classes.exists():
            compile_java({WIRE_NAME: wire()}, wire_classes, None)
        key = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:32]
        classes = cache / key
        if classes.exists():
            classes.touch()
        else:
            compile_java(files, classes, wire_classes)
            kept = sorted((found.stat().st_mtime, found) for found in cache.iterdir()
                          if found.name != WIRE_CLASSES)
            for _, folder in kept[:-TESTS_KEPT]:
                shutil.rmtree(folder, ignore_errors=True)
        return [Step((tool("java"), *JVM_FLAGS, *OPENS, "-cp", f"{classes}:{wire_classes}",
                      TESTS_CLASS), "run")]


class HarnessCompiler:
    """The worker's javac for harness code (`java_driver/HumanfixCompiler.java`, run from its
    source), started at its first compile and ended with the worker (the end of its input):
    warm, it compiles a task's tests for a fraction of a new javac's start."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()

    def compile(self, argv: list[str]) -> None:
        """javac with `argv`; raises CalledProcessError, with what javac said, where it
        failed."""
        if any("\t" in arg or "\n" in arg for arg in argv):
            raise ValueError(f"a javac argument with a tab or a newline: {argv!r}")
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = self.started()
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write("\t".join(argv) + "\n")
            self.process.stdin.flush()
            answer = self.process.stdout.readline()
        status, _, said = answer.rstrip("\n").partition("\t")
        if not status.lstrip("-").isdigit() or int(status) != 0:
            message = said.replace("\\n", "\n").replace("\\\\", "\\") if status else \
                "the harness's javac ended"
            raise subprocess.CalledProcessError(int(status) if status.lstrip("-").isdigit()
                                                else -1, ["javac", *argv],
                                                stderr=message.encode())

    def started(self) -> subprocess.Popen[str]:
        folder = Path(tempfile.mkdtemp(prefix="humanfix-javac-"))
        source = folder / COMPILER_NAME
        source.write_text(files(__package__).joinpath(f"java_driver/{COMPILER_NAME}")
                          .read_text(encoding="utf-8"), encoding="utf-8")
        return subprocess.Popen([tool("java"), *JVM_FLAGS, "-XX:-UsePerfData", str(source)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
                                cwd=folder, env={"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"})


HARNESS_JAVAC = HarnessCompiler()


def compile_java(sources: dict[str, str], classes: Path, wire_classes: Path | None) -> None:
    """javac of harness code (the wire, the tests), outside the sandbox, into `classes`: a
    folder that appears whole once compiled, so no execution finds half of it."""
    classes.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="humanfix-java-build-", dir=classes.parent) as folder:
        for name, text in sources.items():
            Path(folder, name).write_text(text, encoding="utf-8")
        built = Path(folder, "classes")
        HARNESS_JAVAC.compile([*(("-cp", str(wire_classes)) if wire_classes else ()),
                               "-d", str(built), *(str(Path(folder, name)) for name in sources)])
        built.rename(classes)
