"""Java's driver: the candidate and the tests in two JVMs, only plain data between them
(pytest_humanfix/languages/java.py, java_driver/HumanfixWire.java). Every type the 164
declarations use crosses unchanged (doubles bit for bit); a candidate that exits from a static
initializer, a shutdown hook or a thread, returns an object equal to everything, shadows a class
the tests use, reads the tests or the environment, writes on the pipes, closes them, empties its
folder or kills its parent changes nothing but its own answers: scored not fixed, under the
default settings, and never a harness error. An honest fix beside them passes."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import language
from pytest_humanfix.languages.base import tool
from pytest_humanfix.languages.java import WIRE_CLASSES, SignatureError, signature
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer
from pytest_humanfix.sandbox.environment import Limits, Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

JAVA = language("java")


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, Task]:
    return {task.task_id: task
            for task in load_tasks(str(dataset.parent / "humanevalpack-java.jsonl"))}


@pytest.fixture(scope="module")
def sandbox():
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    made = ToolchainSandbox(layer, JAVA, Limits(timeout=JAVA.timeout), cgroups)
    made.start()
    yield made
    made.shutdown()


def run(sandbox: ToolchainSandbox, task: Task, code: str, tests: str | None = None) -> Verdict:
    return sandbox.run(JAVA.job(code, task.test if tests is None else tests, task))


# Every parameter and return type of the 164 declarations: each has a codec
# (HumanfixWire.java), and each is checked below.
DECLARED_TYPES = {
    "boolean", "int", "long", "double", "String", "Object", "List<Integer>", "List<Double>",
    "List<String>", "List<Object>", "List<List<Integer>>", "List<Optional<Integer>>",
    "Optional<Integer>", "Optional<String>", "Optional<Object>", "Map<String, Integer>",
    "Map<Object, Object>"}


def test_every_declared_type_is_one_the_wire_carries(tasks):
    found = set()
    for task in tasks.values():
        entry = signature(task)
        found |= {entry.result, *(kind for kind, _ in entry.params)}
    assert found == DECLARED_TYPES


def test_the_entry_point_is_read_from_the_declaration(tasks):
    md5 = signature(tasks["Java/162"])  # a throws clause, and imports of its own
    assert (md5.result, md5.name, md5.params) == ("Optional<String>", "stringToMd5",
                                                  (("String", "text"),))
    assert "import java.security.*;\n" in md5.imports
    assert signature(tasks["Java/95"]).params == (("Map<Object, Object>", "dict"),)
    assert signature(tasks["Java/92"]).params == (("Object", "x"), ("Object", "y"),
                                                  ("Object", "z"))
    # The row's entry_point says closest_integer; the declaration and the tests, countUpper.
    assert signature(tasks["Java/99"]).name == "countUpper"
    with pytest.raises(SignatureError, match="Java/0: the Java driver reads the entry point's"):
        signature(replace(tasks["Java/0"], declaration="class Solution {\n"))


def test_the_two_programs(tasks):
    """The candidate's program is BigCode's assembly and the answer loop; the tests' program
    is the declaration (with its helper, poly) whose entry point calls across the pipe, then
    the tests, never the candidate's code."""
    task = tasks["Java/32"]
    job = JAVA.job(task.prompt + "CANDIDATE\n", "TESTS", task)
    candidate = json.loads(job.candidate.program)["files"]
    assert set(candidate) == {"Main.java", "HumanfixAnswer.java"}
    assert "CANDIDATE" in candidate["Main.java"] and "TESTS" not in json.dumps(candidate)
    assert "return humanfixSolution.findZero(humanfixA0);" in candidate["HumanfixAnswer.java"]
    tests = json.loads(job.tests.program)["files"]
    assert list(tests) == ["Main.java"] and "CANDIDATE" not in tests["Main.java"]
    assert "public double poly(List<Double> xs, double x) {" in tests["Main.java"]
    assert tests["Main.java"].endswith(
        "    public double findZero(List<Double> xs) {\n        return (double) HumanfixWire."
        'call(Solution.class, "findZero", new Object[] {xs});\n    }\n}\n\nTESTS\n')
    assert not job.silent and job.entry_point == "findZero"


# Each value: written as the wire writes it, read back into the same type, written again the
# same; then texts that each type's reader must refuse.
ROUND_TRIP = r"""
import java.lang.reflect.*;
import java.util.*;

public class RoundTrip {
    static int failures = 0;

    // One method per declared type: its generic return type is the type checked.
    static boolean aBoolean() { return false; }
    static int anInt() { return 0; }
    static long aLong() { return 0; }
    static double aDouble() { return 0; }
    static char aChar() { return 0; }
    static String aString() { return null; }
    static Object anObject() { return null; }
    static List<Integer> integers() { return null; }
    static List<Double> doubles() { return null; }
    static List<String> strings() { return null; }
    static List<Object> objects() { return null; }
    static List<List<Integer>> nested() { return null; }
    static List<Optional<Integer>> optionals() { return null; }
    static Optional<Integer> optionalInteger() { return null; }
    static Optional<String> optionalString() { return null; }
    static Optional<Object> optionalObject() { return null; }
    static Map<String, Integer> counts() { return null; }
    static Map<Object, Object> anyMap() { return null; }
    static int[] ints() { return null; }

    static Type type(String name) throws Exception {
        return RoundTrip.class.getDeclaredMethod(name).getGenericReturnType();
    }

    static void check(String name, Object value, String text) throws Exception {
        Type type = type(name);
        String written = HumanfixWire.text(HumanfixWire.plain(value, type, 0));
        Object read = HumanfixWire.rebuilt(new HumanfixWire.Reader(written).document(), type);
        String again = HumanfixWire.text(HumanfixWire.plain(read, type, 0));
        boolean same = value instanceof int[] ? Arrays.equals((int[]) value, (int[]) read)
                       : Objects.equals(value, read);
        if (!written.equals(text) || !same || !again.equals(text)) {
            System.out.println("FAIL " + name + ": wrote " + written + ", wanted " + text);
            failures++;
        }
    }

    static void refused(String name, String text) throws Exception {
        try {
            HumanfixWire.rebuilt(new HumanfixWire.Reader(text).document(), type(name));
            System.out.println("NOT REFUSED " + name + " " + text);
            failures++;
        } catch (HumanfixWire.Refused expected) {
        }
    }

    static void unsent(String name, Object value) throws Exception {
        try {
            HumanfixWire.plain(value, type(name), 0);
            System.out.println("NOT REFUSED to send " + name + " " + value);
            failures++;
        } catch (HumanfixWire.Refused expected) {
        }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        check("aBoolean", true, "true");
        check("anInt", Integer.MIN_VALUE, "-2147483648");
        check("aLong", 125411328000L, "125411328000");
        check("aLong", Long.MAX_VALUE, "9223372036854775807");
        check("aDouble", 0.1 + 0.2, "0.30000000000000004");
        check("aDouble", -0.0, "-0.0");
        check("aDouble", Double.NaN, "NaN");
        check("aDouble", Double.NEGATIVE_INFINITY, "-Infinity");
        check("aDouble", Double.MIN_VALUE, "4.9E-324");
        check("aChar", 'c', "\"c\"");
        check("aString", "a\"\\\n\u00e9\ud800", "\"a\\\"\\\\\\u000a\\u00e9\\ud800\"");
        check("aString", null, "null");
        check("anObject", 4, "{\"Integer\":4}");
        check("anObject", 2.5, "{\"Double\":2.5}");
        check("anObject", "11", "{\"String\":\"11\"}");
        check("anObject", Arrays.asList("Hello", "world!"),
              "{\"List\":[{\"String\":\"Hello\"},{\"String\":\"world!\"}]}");
        check("anObject", 'c', "{\"Character\":\"c\"}");
        check("anObject", Map.of(), "{\"Map\":[]}");
        check("anObject", 7L, "{\"Long\":7}");
        check("anObject", null, "null");
        check("integers", Arrays.asList(5, -8), "[5,-8]");
        check("doubles", Arrays.asList(1.5, Double.POSITIVE_INFINITY), "[1.5,Infinity]");
        check("strings", new ArrayList<>(), "[]");
        check("objects", Arrays.asList(4, 23.2, "adasd", List.of(), false),
              "[{\"Integer\":4},{\"Double\":23.2},{\"String\":\"adasd\"},{\"List\":[]},"
              + "{\"Boolean\":false}]");
        check("nested", Arrays.asList(Arrays.asList(0, 1), List.of()), "[[0,1],[]]");
        check("optionals", Arrays.asList(Optional.empty(), Optional.of(1)), "[[],[1]]");
        check("optionalInteger", Optional.of(-35), "[-35]");
        check("optionalString", Optional.empty(), "[]");
        check("optionalObject", Optional.of(2.5), "[{\"Double\":2.5}]");
        Map<String, Integer> counts = new LinkedHashMap<>();
        counts.put("b", 4);
        counts.put("a", 2);
        check("counts", counts, "[[\"b\",4],[\"a\",2]]");
        Map<Object, Object> anyMap = new LinkedHashMap<>();
        anyMap.put(5, "banana");
        anyMap.put("p", "pineapple");
        check("anyMap", anyMap,
              "[[{\"Integer\":5},{\"String\":\"banana\"}],[{\"String\":\"p\"},{\"String\":\"pineapple\"}]]");
        check("ints", new int[] {3, 1}, "[3,1]");
        // A rebuilt string is the literal's own instance.
        Object interned = HumanfixWire.rebuilt(new HumanfixWire.Reader("\"2,3\"").document(),
                                               type("aString"));
        if (interned != "2,3") {
            System.out.println("FAIL a rebuilt string is not interned");
            failures++;
        }
        refused("anInt", "1.5");
        refused("anInt", "2147483648");
        refused("anInt", "01");
        refused("anInt", "\"1\"");
        refused("anInt", "null");
        refused("aLong", "9223372036854775808");
        refused("aBoolean", "tru");
        refused("aDouble", "0x10");
        refused("aDouble", "inf");
        refused("aChar", "\"ab\"");
        refused("aString", "\"open");
        refused("aString", "\"a\u0001\"");
        refused("integers", "[1,2");
        refused("integers", "[1 2]");
        refused("integers", "[1,2] 3");
        refused("integers", "[1,\"2\"]");
        refused("anObject", "4");
        refused("anObject", "{\"Thread\":1}");
        refused("anObject", "{\"Integer\":1,\"String\":\"1\"}");
        refused("optionalInteger", "[1,2]");
        refused("counts", "[[\"a\"]]");
        refused("integers", "[".repeat(200) + "]".repeat(200));
        // What the candidate's code returns that is not of the declared type, or not plain.
        List raw = new ArrayList();
        raw.add("x");
        unsent("integers", raw);
        unsent("anObject", new Object() {
            public boolean equals(Object other) { return true; }
        });
        unsent("anObject", new StringBuilder("x"));
        unsent("anInt", null);
        unsent("anObject", Arrays.asList(new Thread()));
        System.exit(failures == 0 ? 0 : 1);
    }
}
"""


def test_each_declared_type_crosses_unchanged_and_bad_text_is_refused(sandbox, tmp_path):
    (tmp_path / "RoundTrip.java").write_text(ROUND_TRIP, encoding="utf-8")
    wire = str(sandbox.cache / WIRE_CLASSES)
    subprocess.run([tool("javac"), "-cp", wire, "-d", ".", "RoundTrip.java"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=120)
    done = subprocess.run([tool("java"), "-cp", f".:{wire}", "RoundTrip"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")


def test_an_honest_fix_passes_and_the_bug_fails_at_its_assert(sandbox, tasks):
    task = tasks["Java/0"]
    assert run(sandbox, task, task.declaration + task.canonical_solution).status == "passed"
    buggy = run(sandbox, task, task.declaration + task.buggy_solution)
    assert buggy.status == "failed"
    assert "java.lang.AssertionError" in buggy.stderr, buggy.stderr


def test_the_tests_are_compiled_once_per_worker_and_source(sandbox, tasks):
    task = tasks["Java/2"]
    before = {path.name for path in sandbox.tests_cache.iterdir()}
    for _ in range(2):
        assert run(sandbox, task, task.declaration + task.canonical_solution).status == \
            "passed"
    assert len({path.name for path in sandbox.tests_cache.iterdir()} - before) == 1


@pytest.mark.parametrize(("failure", "said"), [
    ('throw new IllegalStateException("too far");',
     "threw java.lang.IllegalStateException: too far"),
    ("return hasCloseElements(numbers, threshold);", "threw java.lang.StackOverflowError"),
    ("Runtime.getRuntime().halt(3);", "got no answer: the candidate's process ended")])
def test_an_exception_or_an_exit_of_the_candidate_fails_the_call_naming_it(sandbox, tasks,
                                                                           failure, said):
    task = tasks["Java/0"]
    # Behind an if: javac refuses code after a throw as unreachable.
    verdict = run(sandbox, task, task.declaration + "        if (threshold > 0) " + failure + "\n"
                  + task.canonical_solution)
    assert verdict.status == "failed"
    assert ("error: the call hasCloseElements([11.0,2.0,3.9,4.0,5.0,2.2],0.3) " + said
            in verdict.stderr), verdict.stderr


# Attacks a model may write into task 0's buggy function: members of its class (`members`,
# a static initializer runs as the answer loop makes the first Solution) and code at the
# function's first call (`body`), each of which passed, or would, in BigCode's one program.
RIGHT = ("            for (int i = 0; i < numbers.size(); i++)\n"
         "                for (int j = i + 1; j < numbers.size(); j++)\n"
         "                    if (Math.abs(numbers.get(i) - numbers.get(j)) < threshold) "
         "return true;\n            return false;\n")
# Reflection, as the wire does, makes a FileDescriptor of any number.
DESCRIPTOR = ("    static java.io.FileDescriptor fd(int number) throws Exception {\n"
              "        java.io.FileDescriptor made = new java.io.FileDescriptor();\n"
              "        java.lang.reflect.Field field = java.io.FileDescriptor.class"
              ".getDeclaredField(\"fd\");\n        field.setAccessible(true);\n"
              "        field.setInt(made, number);\n        return made;\n    }\n")


def read_tests(tests_cache: Path) -> str:
    """Answers right only where the tests' source or classes are in reach: BigCode's one file,
    beside the candidate's (Main.java holds the candidate's code: it must hold the tests'
    calls), the tests' box, or where the harness built them."""
    return ("        for (String name : new String[] {\"Main.java\", \"../tests/Main.java\", "
            f"\"/tmp/humanfix/box/Main.java\", {json.dumps(str(tests_cache))}}}) {{\n"
            "            java.io.File found = new java.io.File(name);\n"
            "            boolean tests = found.isDirectory() && found.list().length > 0;\n"
            "            try {\n                tests |= new String(java.nio.file.Files."
            "readAllBytes(found.toPath())).contains(\"s.hasCloseElements(\" + \"new ArrayList\");\n"
            "            } catch (Exception e) {}\n"
            "            if (tests) {\n" + RIGHT + "            }\n        }\n")


ATTACKS = {
    "exit 0 from a static initializer": ("    static { System.exit(0); }\n", ""),
    "halt 0 at the first call": ("", "        Runtime.getRuntime().halt(0);\n"),
    # Not a lambda: its code would be Solution's, whose initialisation waits on the exit.
    "a shutdown hook halts with 0": (
        "    static {\n        Runtime.getRuntime().addShutdownHook(new Thread() {\n"
        "            public void run() { Runtime.getRuntime().halt(0); }\n        });\n"
        "        System.exit(1);\n    }\n", ""),
    "a thread exits 0": (
        "    static {\n        Thread exiting = new Thread(() -> System.exit(0));\n"
        "        exiting.setDaemon(false);\n        exiting.start();\n    }\n",
        "        try { Thread.sleep(2000); } catch (InterruptedException e) {}\n"),
    "the environment read for a secret": (
        "    static {\n        for (Map.Entry<String, String> pair : System.getenv().entrySet())"
        " {\n            try {\n                java.nio.file.Files.write(java.nio.file.Paths"
        ".get(\".humanfix-finished\"), pair.getValue().getBytes());\n"
        "            } catch (Exception e) {}\n        }\n        System.exit(0);\n    }\n", ""),
    "its folder emptied, the harness's marker included": (
        "    static {\n        for (java.io.File each : new java.io.File(\".\").listFiles()) "
        "each.delete();\n        new java.io.File(\".humanfix-started\").delete();\n    }\n",
        ""),
    "a forged pass on its output": (
        "", "        System.out.println(\"passed\");\n        System.err.println(\"passed\");\n"),
    "the pipes closed": (
        DESCRIPTOR + "    static {\n        try {\n            new java.io.FileInputStream("
        "fd(3)).close();\n            new java.io.FileOutputStream(fd(4)).close();\n"
        "        } catch (Exception e) {}\n    }\n", ""),
    "garbage and forged answers on the pipes": (
        DESCRIPTOR + "    static {\n        try {\n            java.io.FileOutputStream out = "
        "new java.io.FileOutputStream(fd(4));\n            for (int i = 0; i < 100; i++) "
        "out.write(\"{\\\"value\\\":true}\\n\".getBytes());\n            out.write(\"garbage\\n"
        "passed\\n\".getBytes());\n            new java.io.FileOutputStream(fd(5)).write("
        "\"passed\\n\".getBytes());\n        } catch (Exception e) {}\n    }\n", ""),
    "its parent killed": (
        "    static {\n        ProcessHandle.current().parent().ifPresent(parent -> {\n"
        "            parent.parent().ifPresent(ProcessHandle::destroyForcibly);\n"
        "            parent.destroyForcibly();\n        });\n    }\n", ""),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_is_scored_not_fixed(sandbox, tasks, attack):
    members, body = ATTACKS[attack]
    task = tasks["Java/0"]
    code = (task.declaration.replace("class Solution {\n", "class Solution {\n" + members, 1)
            + body + task.buggy_solution)
    verdict = run(sandbox, task, code)
    # A SandboxError (a harness error) would raise above.
    assert verdict.status == "failed", (attack, verdict.stdout, verdict.stderr)
    assert "CompileError" not in verdict.stderr, verdict.stderr  # it ran, and did its worst


def test_the_tests_read_by_file_name_are_out_of_reach(sandbox, tasks):
    # The process layer hides no file (docs/sandbox.md#the-process-layer); CI runs bwrap.
    assert sandbox.layer.name == "bwrap"
    task = tasks["Java/0"]
    code = task.declaration + read_tests(sandbox.tests_cache) + task.buggy_solution
    assert run(sandbox, task, code).status == "failed"


def test_the_reading_attack_would_pass_were_the_tests_in_its_folder(sandbox, tasks):
    """No straw man: with BigCode's one Main.java, the candidate and the tests, in the
    candidate's folder, the reading attack passes."""
    task = tasks["Java/0"]
    code = task.declaration + read_tests(sandbox.tests_cache) + task.buggy_solution
    job = JAVA.job(code, task.test, task)
    files = json.loads(job.candidate.program)["files"]
    files["Main.java"] += "\n" + task.test
    exposed = replace(job, candidate=replace(job.candidate, program=json.dumps({"files": files})))
    assert sandbox.run(exposed).status == "passed"


# Only ever equal: in one program `Objects.equals(s.splitWords(...), Arrays.asList(...))`
# called its equals, and each check held.
ALWAYS_EQUAL = ("    public Object splitWords(String txt) {\n"
                "        return new ArrayList<String>() {\n"
                "            public boolean equals(Object other) { return true; }\n"
                "        };\n    }\n}\n")
EQUAL_OBJECT = ("    public Object splitWords(String txt) {\n        return new Object() {\n"
                "            public boolean equals(Object other) { return true; }\n"
                "        };\n    }\n}\n")


@pytest.mark.parametrize(("returned", "said"), [
    (ALWAYS_EQUAL, "java.lang.AssertionError"),
    (EQUAL_OBJECT, "has an answer that cannot cross: an Object of Solution$1")])
def test_an_object_equal_to_everything_is_no_answer(sandbox, tasks, returned, said):
    task = tasks["Java/125"]
    code = task.declaration.rsplit("    public Object splitWords", 1)[0] + returned
    verdict = run(sandbox, task, code)
    assert verdict.status == "failed"
    assert said in verdict.stderr, verdict.stderr
    # In the tests' program, as in BigCode's one, it would pass the tests.
    rigged = task.test.replace("Solution s = new Solution();", "Solution s = new Solution() {\n"
                               + returned.rsplit("}", 1)[0] + "};", 1)
    assert run(sandbox, task, code, rigged).status == "passed"


# A class named like one the tests use comes before java.util's in one file: with it, the
# tests' list of checks is empty, and no check fails.
SHADOW = ("class Arrays {\n    static <T> List<T> asList(T... items) { return new ArrayList<>(); }"
          "\n}\n")


def test_a_class_named_like_one_the_tests_use_stays_in_the_candidates_process(sandbox, tasks):
    task = tasks["Java/0"]
    code = task.declaration + task.buggy_solution + "\n" + SHADOW
    assert run(sandbox, task, code).status == "failed"
    # In the tests' program, as in BigCode's one program, it would pass the buggy solution.
    assert run(sandbox, task, code, task.test + "\n" + SHADOW).status == "passed"


def test_the_tests_helper_is_the_declarations_not_the_candidates(sandbox, tasks):
    """findZero's tests check the answer with `poly`: the candidate's own `poly` (always 0)
    stays in its process."""
    task = tasks["Java/32"]
    rigged = task.prompt.replace("double result = 0;", "double result = 0; if (true) return 0;",
                                 1)
    assert rigged != task.prompt
    assert run(sandbox, task, rigged + task.buggy_solution).status == "failed"


def test_a_candidate_cannot_write_into_the_workers_wire(sandbox, tasks):
    assert sandbox.layer.name == "bwrap"  # the process layer protects no file
    wire = sandbox.cache / WIRE_CLASSES / "HumanfixWire.class"
    before = wire.read_bytes()
    task = tasks["Java/0"]
    vandal = ("    static {\n        try {\n            java.nio.file.Files.write("
              f"java.nio.file.Paths.get({json.dumps(str(wire))}), new byte[] {{1}});\n"
              "        } catch (Exception e) {}\n"
              f"        new java.io.File({json.dumps(str(wire))}).delete();\n    }}\n")
    code = (task.declaration.replace("class Solution {\n", "class Solution {\n" + vandal, 1)
            + task.canonical_solution)
    assert run(sandbox, task, code).status == "passed"  # the writes failed; the function is right
    assert wire.read_bytes() == before
