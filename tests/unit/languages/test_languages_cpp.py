"""C++'s driver: the candidate and the tests in two programs, only plain data between them
(pytest_humanfix/languages/cpp.py, cpp_driver/wire.hpp). Every type the 164 declarations use
crosses unchanged (floats bit for bit); a candidate that exits, hooks the exit or a signal,
overloads the tests' helper, redefines assert, reads the tests or the environment, forks,
writes on the pipes or kills its parent changes nothing but its own answers: scored not fixed,
under the default settings, and never a harness error. An honest fix beside them passes."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import language
from pytest_humanfix.languages.base import tool
from pytest_humanfix.languages.cpp import FLAGS, PRELUDE_NAME, SignatureError, signature
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import choose_layer
from pytest_humanfix.sandbox.environment import Limits, Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

CPP = language("cpp")


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, Task]:
    return {task.task_id: task
            for task in load_tasks(str(dataset.parent / "humanevalpack-cpp.jsonl"))}


@pytest.fixture(scope="module")
def sandbox():
    layer, _notes = choose_layer("auto")
    cgroups, _how = open_cgroups()
    made = ToolchainSandbox(layer, CPP, Limits(timeout=CPP.timeout), cgroups)
    made.start()
    yield made
    made.shutdown()


def run(sandbox: ToolchainSandbox, task: Task, code: str, tests: str | None = None) -> Verdict:
    return sandbox.run(CPP.job(code, task.test if tests is None else tests, task))


# Every parameter and return type of the 164 declarations, typedefs written out: each has a
# codec (wire.hpp), and each is checked below.
DECLARED_TYPES = {
    "bool", "int", "long long", "float", "double", "string", "boost::any",
    "vector<int>", "vector<long long>", "vector<float>", "vector<double>", "vector<string>",
    "vector<vector<int>>", "map<char,int>", "map<string,string>", "std::list<boost::any>"}


def test_every_declared_type_is_one_the_wire_carries(tasks):
    found = set()
    for task in tasks.values():
        entry = signature(task)
        found |= {entry.expanded(kind) for kind in (entry.result, *entry.params)}
    assert found == DECLARED_TYPES


def test_the_entry_point_is_read_from_the_declaration(tasks):
    # CPP/38's declaration goes on into the body it declares, after a helper of the tests'.
    cyclic = signature(tasks["CPP/38"])
    assert (cyclic.result, cyclic.name, cyclic.params) == ("string", "decode_cyclic",
                                                           ("string",))
    assert cyclic.helpers.rstrip().endswith("return output;\n}")
    # The row's entry_point says `solution`; the declaration and the tests, `solutions`.
    assert signature(tasks["CPP/121"]).name == "solutions"
    assert signature(tasks["CPP/52"]).params == ("vector<int>", "int")
    assert signature(tasks["CPP/95"]).params == ("map<string,string>",)
    # The candidate's side needs no typedef of the candidate's.
    any_list = signature(tasks["CPP/22"])
    assert any_list.params == ("list_any",)
    assert any_list.expanded("list_any") == "std::list<boost::any>"
    with pytest.raises(SignatureError, match="CPP/0: the C.. driver reads the entry point's"):
        signature(replace(tasks["CPP/0"], declaration="#include<vector>\n"))


def test_the_two_programs(tasks):
    """The candidate's program is BigCode's assembly (any main of the model's cut) and the
    answer loop; the tests' program holds the declaration's helpers, a stub, and the tests,
    never the candidate's code."""
    task = tasks["CPP/32"]
    job = CPP.job(task.prompt + "CANDIDATE\nint main(){ return 1; }\n", "TESTS", task)
    candidate = json.loads(job.candidate.program)["files"]["candidate.cpp"]
    assert candidate.startswith("using namespace std;\n#include<stdlib.h>")
    assert candidate.count("int main") == 1 and "CANDIDATE\n\nint main(){" in candidate
    assert "::find_zero(humanfix_a0)" in candidate and "TESTS" not in candidate
    tests = json.loads(job.tests.program)["files"]["tests.cpp"]
    assert "double poly(vector<double> xs, double x){" in tests and "CANDIDATE" not in tests
    assert tests.endswith('double find_zero(vector<double> humanfix_a0){\n    return '
                          'humanfix_wire::call<double>("find_zero", humanfix_a0);\n}\n\nTESTS\n')
    assert not job.silent and job.entry_point == "find_zero"


# Each value: written as the wire writes it, read back into the same type, written again the
# same; floats read back bit for bit. Then texts that each type's reader must refuse.
ROUND_TRIP = r"""
#include <cstring>
int failures = 0;
template <class T> bool same(const T& a, const T& b) { return a == b; }
template <class T> bool same_bits(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}
bool same(const float& a, const float& b) { return same_bits(a, b); }
bool same(const double& a, const double& b) { return same_bits(a, b); }
bool same(const vector<float>& a, const vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) if (!same(a[i], b[i])) return false;
    return true;
}
bool same(const boost::any& a, const boost::any& b) {
    return a.type() == b.type() && humanfix_wire::encoded(a) == humanfix_wire::encoded(b);
}
bool same(const std::list<boost::any>& a, const std::list<boost::any>& b) {
    return humanfix_wire::encoded(a) == humanfix_wire::encoded(b) && a.size() == b.size()
        && std::equal(a.begin(), a.end(), b.begin(),
                      [](const boost::any& x, const boost::any& y) { return same(x, y); });
}
template <class T> void check(const T& value, const string& text) {
    string written = humanfix_wire::encoded(value);
    humanfix_wire::Reader in(written);
    T read = humanfix_wire::decoded<T>(in);
    in.end();
    if (written != text || !same(read, value) || humanfix_wire::encoded(read) != text) {
        printf("FAIL %s: wrote %s, wanted %s\n", text.c_str(), written.c_str(), text.c_str());
        ++failures;
    }
}
template <class T> void refused(const string& text) {
    try {
        humanfix_wire::Reader in(text);
        humanfix_wire::decoded<T>(in);
        in.end();
        printf("NOT REFUSED %s\n", text.c_str());
        ++failures;
    } catch (const humanfix_wire::Error&) {}
}
int main() {
    check(true, "true");
    check(false, "false");
    check('c', "\"c\"");
    check('\xff', "\"\\u00ff\"");
    check(-2147483647 - 1, "-2147483648");
    check(9223372036854775807LL, "9223372036854775807");
    check(0.3f, "0.300000012");
    check(-0.0f, "-0");
    check(float(NAN), "NaN");
    check(-float(INFINITY), "-Infinity");
    check(0.1 + 0.2, "0.30000000000000004");
    check(5e-324, "4.9406564584124654e-324");
    check(double(INFINITY), "Infinity");
    check(-0.0, "-0");
    check(string("a\"\\\n\x01\xc3\xa9"), "\"a\\\"\\\\\\u000a\\u0001\\u00c3\\u00a9\"");
    check(string(), "\"\"");
    check(vector<int>{1, -2}, "[1,-2]");
    check(vector<long long>{1LL << 40}, "[1099511627776]");
    check(vector<float>{1.5f, float(NAN), 0.1f}, "[1.5,NaN,0.100000001]");
    check(vector<double>{}, "[]");
    check(vector<string>{"x", ""}, "[\"x\",\"\"]");
    check(vector<vector<int>>{{1}, {}}, "[[1],[]]");
    check(map<char, int>{{'b', 2}, {'a', 1}}, "[[\"a\",1],[\"b\",2]]");
    check(map<string, string>{{"k", "v"}}, "[[\"k\",\"v\"]]");
    check(boost::any(2.5), "{\"double\":2.5}");
    check(boost::any(string("None")), "{\"string\":\"None\"}");
    check(boost::any(), "{\"empty\":null}");
    check(std::list<boost::any>{4, boost::any(), 23.2, string("adasd"), 'c'},
          "[{\"int\":4},{\"empty\":null},{\"double\":23.199999999999999},"
          "{\"string\":\"adasd\"},{\"char\":\"c\"}]");
    check(std::make_pair(1, string("x")), "[1,\"x\"]");
    check(set<int>{3, 1}, "[1,3]");
    refused<int>("1.5");
    refused<int>("2147483648");
    refused<int>("01");
    refused<int>("NaN");
    refused<unsigned>("-1");
    refused<bool>("tru");
    refused<char>("\"ab\"");
    refused<string>("\"\\u0100\"");
    refused<string>("\"open");
    refused<string>("\"a\x01\"");
    refused<vector<int>>("[1,2");
    refused<vector<int>>("[1 2]");
    refused<vector<int>>("[1,2] 3");
    refused<double>("0x10");
    refused<double>("inf");
    refused<boost::any>("{\"vector\":[1]}");
    try {
        humanfix_wire::encoded(boost::any(vector<int>{1}));
        printf("NOT REFUSED any of vector<int>\n");
        ++failures;
    } catch (const humanfix_wire::Error&) {}
    for (const char* call : {"{\"args\":[1]", "{\"kwargs\":[]}", "[1]"}) {
        try { humanfix_wire::Call read(call); printf("NOT REFUSED %s\n", call); ++failures; }
        catch (const humanfix_wire::Error&) {}
    }
    try {
        humanfix_wire::Call deep("{\"kwargs\":" + string(200, '[') + string(200, ']')
                                 + ",\"args\":[]}");
        printf("NOT REFUSED a call nested 200 deep\n");
        ++failures;
    } catch (const humanfix_wire::Error&) {}
    return failures != 0;
}
"""


def test_each_declared_type_crosses_unchanged_and_bad_text_is_refused(sandbox, tmp_path):
    (tmp_path / "round_trip.cpp").write_text(ROUND_TRIP, encoding="utf-8")
    subprocess.run([tool("g++"), *FLAGS, "-include", str(sandbox.cache / PRELUDE_NAME),
                    "round_trip.cpp", "-o", "round_trip"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    done = subprocess.run(["./round_trip"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (0, "")


def test_both_programs_are_built_on_the_workers_precompiled_header(sandbox, tasks, tmp_path):
    task = tasks["CPP/0"]
    for role, side in (("candidate", CPP.job(task.canonical_code, task.test, task).candidate),
                       ("tests", CPP.job(task.canonical_code, task.test, task).tests)):
        for name, text in json.loads(side.program)["files"].items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        compile_step = CPP.steps(sandbox.cache, role)[0]
        shown = subprocess.run([*compile_step.argv, "-H", "-Winvalid-pch"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
        # -H marks a precompiled header it used with '!'.
        assert shown.stderr.startswith(f"! {sandbox.cache / PRELUDE_NAME}.gch\n"), shown.stderr


def test_an_honest_fix_passes_and_the_bug_fails_at_its_assert(sandbox, tasks):
    task = tasks["CPP/0"]
    assert run(sandbox, task, task.prompt + task.canonical_solution).status == "passed"
    buggy = run(sandbox, task, task.prompt + task.buggy_solution)
    assert buggy.status == "failed"
    assert buggy.first_failure().startswith("TestError: killed by signal 6: tests: tests.cpp:")
    assert "Assertion `has_close_elements(a, 0.05) == false' failed." in buggy.first_failure()


@pytest.mark.parametrize(("failure", "said"), [
    ('throw std::out_of_range("too far");', "threw std::out_of_range: too far"),
    ("throw 42;", "threw int"),
    ("{ volatile int* nowhere = 0; return *nowhere; }",
     "got no answer: the candidate's process ended")])
def test_an_exception_or_a_crash_of_the_candidate_fails_the_call_naming_it(sandbox, tasks,
                                                                           failure, said):
    task = tasks["CPP/0"]
    code = task.prompt + "    " + failure + "\n" + task.canonical_solution
    verdict = run(sandbox, task, code)
    assert verdict.status == "failed"
    assert (f"error: the call has_close_elements([1,2,3.9000001,4,5,2.20000005],0.300000012) "
            f"{said}") in verdict.stderr, verdict.stderr


# Attacks a model may write into task 0's buggy function: code before it (`load`) and at its
# first call (`body`), each of which once passed in one program, or was asked of this driver.
UNISTD = "#include<unistd.h>\n"
RIGHT = ("            for (size_t i = 0; i < numbers.size(); i++)\n"
         "                for (size_t j = i + 1; j < numbers.size(); j++)\n"
         "                    if (fabs(numbers[i] - numbers[j]) < threshold) return true;\n"
         "            return false;\n")
# Answers right only where the tests' source is in reach: by name at run time, or at compile
# time through the preprocessor.
READ_TESTS = (
    "    for (const char* name : {\"test.cpp\", \"tests.cpp\", \"../../tests/box/tests.cpp\", "
    "\"/tmp/humanfix/box/tests.cpp\"})\n"
    "        if (FILE* found = fopen(name, \"r\")) {\n            fclose(found);\n"
    + RIGHT + "        }\n")
PREPROCESSED = ("#if __has_include(\"test.cpp\") || __has_include(\"tests.cpp\") || "
                "__has_include(\"../../tests/box/tests.cpp\")\n#define TESTS_IN_REACH 1\n"
                "#else\n#define TESTS_IN_REACH 0\n#endif\n")
ATTACKS = {
    "exit 0 from a static initializer": ("static int early = (exit(0), 0);\n", ""),
    "a global object's constructor writes a pass and exits 0": (
        UNISTD + "struct Early { Early() { printf(\"passed\\n\"); fflush(stdout); "
        "for (int fd = 0; fd < 64; ++fd) write(fd, \"passed\\n\", 7); _exit(0); } };\n"
        "Early early;\n", ""),
    "a global object's destructor exits 0": (
        UNISTD + "struct Late { ~Late() { _exit(0); } } late;\nstatic int gone = "
        "(exit(1), 0);\n", ""),
    "atexit and at_quick_exit handlers exit 0": (
        UNISTD + "static void fine() { _exit(0); }\nstatic int hooked = (atexit(fine), "
        "at_quick_exit(fine), 0);\nstatic int first = (quick_exit(1), 0);\n", ""),
    "a signal handler exits 0": (
        "#include<signal.h>\n" + UNISTD,
        "    signal(SIGSEGV, [](int) { _exit(0); });\n    signal(SIGABRT, [](int) "
        "{ _exit(0); });\n    abort();\n"),
    "assert redefined": (
        "#include<assert.h>\n#undef assert\n#define assert(x) ((void)0)\n#define NDEBUG\n", ""),
    "the environment read for a secret": (
        UNISTD + "#include<fstream>\nstatic int forged = [] {\n"
        "    for (char** pair = environ; *pair; ++pair)\n"
        "        std::ofstream(\".humanfix-finished\") << (strchr(*pair, '=') + 1);\n"
        "    for (char** pair = __environ; *pair; ++pair) {}\n"
        "    if (const char* secret = getenv(\"HUMANFIX_FINISHED\"))\n"
        "        std::ofstream(\".humanfix-finished\") << secret;\n"
        "    exit(0);\n    return 0;\n}();\n", ""),
    "the tests read by file name": ("", READ_TESTS),
    "the tests read by the preprocessor": (
        PREPROCESSED, "    if (TESTS_IN_REACH) {\n" + RIGHT + "    }\n"),
    "exit_group at the first call": (
        UNISTD + "#include<sys/syscall.h>\n", "    syscall(SYS_exit_group, 0);\n"),
    "a forked child that answers in its parent's place": (
        UNISTD + "static int forked = fork() > 0 ? (_exit(0), 0) : 0;\n", ""),
    "the pipes closed": (UNISTD + "static int closed = (close(3), close(4), 0);\n", ""),
    "garbage and forged answers on the pipes": (
        UNISTD + "static int forged = [] {\n    for (int i = 0; i < 100; ++i) "
        "write(4, \"{\\\"value\\\":true}\\n\", 15);\n    write(4, \"garbage\\npassed\\n"
        "\", 15);\n    write(5, \"passed\\n\", 7);\n    return 0;\n}();\n", ""),
    "its parent killed": (
        UNISTD + "#include<signal.h>\nstatic int killed = (kill(getppid(), SIGKILL), 0);\n", ""),
}


# Out of reach because the layer hides the tests' folder: the process layer hides no file
# (docs/sandbox.md#the-process-layer), and CI runs bwrap (scripts/setup installs it).
HIDDEN_BY_THE_LAYER = ("the tests read by file name", "the tests read by the preprocessor")


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_is_scored_not_fixed(sandbox, tasks, attack):
    load, body = ATTACKS[attack]
    task = tasks["CPP/0"]
    if attack in HIDDEN_BY_THE_LAYER:
        assert sandbox.layer.name == "bwrap"
    verdict = run(sandbox, task, load + task.declaration + body + task.buggy_solution)
    # A SandboxError (a harness error) would raise above.
    assert verdict.status == "failed", (attack, verdict.stdout, verdict.stderr)
    assert "CompileError" not in verdict.stderr, verdict.stderr  # it ran, and did its worst


OBJECTS = {
    # Only ever equal: not a bool, so the answer loop does not compile.
    "Always": ("struct Always { template <class T> bool operator==(const T&) const { return "
               "true; } };\n", "CompileError: "),
    # Also true as a bool: it answers true to every call.
    "Yes": ("struct Yes { operator bool() const { return true; } template <class T> bool "
            "operator==(const T&) const { return true; } };\n", "TestError: "),
}


@pytest.mark.parametrize("name", OBJECTS)
def test_an_object_equal_to_everything_is_no_answer(sandbox, tasks, name):
    """In one program `has_close_elements(a, 0.3) == true` called the object's operator==;
    the answer loop turns what the entry point returns into the declared bool."""
    kind, failure = OBJECTS[name]
    code = (f"#include<vector>\nusing namespace std;\n{kind}{name} has_close_elements("
            f"vector<float> numbers, float threshold){{ return {name}(); }}\n")
    verdict = run(sandbox, tasks["CPP/0"], code)
    assert verdict.status == "failed"
    assert verdict.first_failure().startswith(failure), verdict.stderr


def test_the_reading_attack_would_pass_were_the_tests_in_its_folder(sandbox, tasks):
    """No straw man: with BigCode's test.cpp beside the candidate's program, as it was in the
    one folder of the program that held both, the reading attack passes."""
    task = tasks["CPP/0"]
    job = CPP.job(task.declaration + READ_TESTS + task.buggy_solution, task.test, task)
    files = {**json.loads(job.candidate.program)["files"], "test.cpp": task.test}
    exposed = replace(job, candidate=replace(job.candidate, program=json.dumps({"files": files})))
    assert sandbox.run(exposed).status == "passed"


# An overload that beats the tests' own issame for a braced list of string literals: an
# initializer_list<const char*> is an exact match, where the tests' vector<string> needs a
# conversion. In one program with the tests it passes every check.
ISSAME = ("#include<initializer_list>\ntemplate <class T> bool issame(T, "
          "std::initializer_list<const char*>) { return true; }\n")


def test_an_overload_of_the_tests_helper_stays_in_the_candidates_process(sandbox, tasks):
    task = tasks["CPP/1"]
    assert run(sandbox, task, ISSAME + task.prompt + task.buggy_solution).status == "failed"
    # In the tests' program, as in BigCode's one program, it would pass the buggy solution.
    rigged = task.test.replace("#include<assert.h>\n", "#include<assert.h>\n" + ISSAME, 1)
    assert run(sandbox, task, ISSAME + task.prompt + task.buggy_solution, rigged).status == \
        "passed"


def test_the_tests_helper_is_the_declarations_not_the_candidates(sandbox, tasks):
    """find_zero's tests check the answer with `poly`: the candidate's own `poly` (always 0)
    stays in its process."""
    task = tasks["CPP/32"]
    rigged = task.prompt.replace("double sum=0;", "return 0; double sum=0;", 1)
    assert rigged != task.prompt
    assert run(sandbox, task, rigged + task.buggy_solution).status == "failed"


def test_a_candidate_cannot_write_into_the_workers_precompiled_header(sandbox, tasks):
    assert sandbox.layer.name == "bwrap"  # the process layer protects no file
    header = sandbox.cache / (PRELUDE_NAME + ".gch")
    before = header.stat()
    task = tasks["CPP/0"]
    vandal = ('#include<fstream>\nstatic int vandal = [] {\n'
              f'    std::ofstream("{header}") << "owned";\n'
              f'    remove("{header}");\n    return 0;\n}}();\n'
              + task.prompt + task.canonical_solution)
    verdict = run(sandbox, task, vandal)
    assert verdict.status == "passed"  # the writes failed and the function is right
    after = header.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert run(sandbox, task, task.prompt + task.canonical_solution).status == "passed"
