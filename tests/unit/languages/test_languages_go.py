"""Go's driver: the candidate and the tests in two test binaries, only plain data between them,
typed by the declared signature (pytest_humanfix/languages/go.py, go_driver/wire.go). Every
parameter and result type of the 164 declarations crosses and compares under assert.Equal as
the candidate's value would; a candidate that exits (at init, from a goroutine, at its first
call), empties os.Args, reads the tests or the environment, or writes on the pipes changes
nothing but its own answers: scored not fixed, under the default settings, and never a harness
error. An honest fix beside them passes."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from pytest_humanfix.dataset import Task
from pytest_humanfix.languages import language
from pytest_humanfix.languages.go import SignatureError, helpers, signature, with_imports
from pytest_humanfix.sandbox.environment import Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

LANGUAGE = "go"
GO = language(LANGUAGE)


def run(sandbox: ToolchainSandbox, task: Task, code: str, tests: str | None = None) -> Verdict:
    return sandbox.run(GO.job(code, task.test if tests is None else tests, task))


# Every parameter and result type the 164 declarations use (listed by the test below).
TYPES = ["[2]float64", "[2]int", "[2]interface{}", "[][2]int", "[][]int", "[]float64", "[]int",
         "[]interface{}", "[]string", "bool", "float64", "int", "interface{}",
         "map[interface{}]interface{}", "map[rune]int", "string"]


def test_the_signatures_of_the_164_tasks(tasks):
    found = {kind for task in tasks for kind in [*signature(task)[0], signature(task)[1]]}
    assert sorted(found) == sorted(TYPES)
    by_id = {task.task_id: task for task in tasks}
    assert signature(by_id["Go/92"]) == (["interface{}"] * 3, "bool")
    assert signature(by_id["Go/154"]) == (["string", "string"], "bool")
    assert signature(by_id["Go/95"]) == (["map[interface{}]interface{}"], "bool")
    with pytest.raises(SignatureError, match=r"Go/0: the Go driver reads a declaration "
                                             r"'func HasCloseElements\(params\) result \{'"):
        signature(replace(by_id["Go/0"], declaration="func HasCloseElements(x int) (a, b int) {"))


def test_the_two_programs(tasks):
    """The candidate's file imports what its code uses (and keeps used an import of its own
    that only the tests used, as BigCode's one file did); the tests' file holds the prompt's
    helpers, never the candidate's code; the entry point's type is checked where it is
    answered."""
    task = next(t for t in tasks if t.task_id == "Go/38")
    assert with_imports("func F() float64 { return math.Abs(-1) }", ["math", "sort"]) == \
        'package main\n\nimport (\n    "math"\n)\n\nfunc F() float64 { return math.Abs(-1) }\n'
    kept = with_imports(task.prompt + task.canonical_solution, ["math"], task.test)
    assert kept.endswith("\nvar _ = time.Now\n") and "rand." not in kept
    assert helpers(task).startswith("// returns encoded string by cycling groups")
    assert "func DecodeCyclic" not in helpers(task) and "import" not in helpers(task)
    job = GO.job("CODE", "TESTS", task)
    files = {role: json.loads(job.side(role).program)["files"] for role in job.roles}
    assert "CODE" not in json.dumps(files["tests"]) and "TESTS" not in json.dumps(
        files["candidate"])
    assert "var entry func(string) string = DecodeCyclic" in files["candidate"][
        "humanfix_answer_test.go"]
    assert "func DecodeCyclic(humanfixArg0 string) string {" in files["tests"][
        "humanfix_stub_test.go"]


# A task whose entry point takes and returns every type: the candidate gives each back, as
# one value of its own (`interface{}`, so each crosses with its dynamic type too) and as the
# declared result (Echo16's).
ECHO = ("func Echo(a [2]float64, b [2]int, c [2]interface{}, d [][2]int, e [][]int, "
        "f []float64, g []int, h []interface{}, i []string, j bool, k float64, l int, "
        "m interface{}, n map[interface{}]interface{}, o map[rune]int, p string) []interface{} {")
ECHO_CODE = ECHO + "\n    return []interface{}{a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p}\n}\n"
ECHO_TESTS = r"""
func TestEcho(t *testing.T) {
    nan, inf, zero := math.NaN(), math.Inf(1), 0.0
    c := [2]interface{}{"x", []interface{}{int8(-3), uint64(18446744073709551615), nil}}
    d := [][2]int{{1, 2}, {-9223372036854775808, 9223372036854775807}}
    n := map[interface{}]interface{}{"p": 8, 8: "p", 2.5: []int(nil),
        [2]int{1, 2}: map[string]int{}}
    o := map[rune]int{'é': 1, 'a': 2}
    h := []interface{}{3.14, float32(0.1), 5, "s", true, []int{},
        map[interface{}]interface{}{}, nil, complex(1, -2)}
    got := Echo([2]float64{-zero, 1e308}, [2]int{-1, 2}, c, d, [][]int{nil, {}},
        []float64{inf, -inf, 5e-324}, nil, h, []string{"", "a\x00\xff\xfe", "\u00e9"}, true,
        0.1+0.2, -7, uint8(200), n, o, "x\ud7ff")
    assert.Equal(t, 16, len(got))
    assert.Equal(t, [2]int{-1, 2}, got[1])
    assert.Equal(t, c, got[2])
    assert.Equal(t, d, got[3])
    assert.Equal(t, [][]int{nil, {}}, got[4])
    assert.Equal(t, []int(nil), got[6])
    assert.Equal(t, h, got[7])
    assert.Equal(t, []string{"", "a\x00\xff\xfe", "\u00e9"}, got[8])
    assert.Equal(t, true, got[9])
    assert.Equal(t, 0.1+0.2, got[10])
    assert.Equal(t, -7, got[11])
    assert.Equal(t, uint8(200), got[12])
    assert.Equal(t, n, got[13])
    assert.Equal(t, o, got[14])
    assert.Equal(t, "x\ud7ff", got[15])
    a := got[0].([2]float64)
    assert.True(t, math.Signbit(a[0]) && a[0] == 0 && a[1] == 1e308)
    f := got[5].([]float64)
    assert.True(t, math.IsInf(f[0], 1) && math.IsInf(f[1], -1) && f[2] == 5e-324)
    m := Echo([2]float64{nan}, [2]int{}, [2]interface{}{}, nil, nil, []float64{nan}, []int{},
        nil, nil, false, nan, 0, nil, nil, nil, "")
    assert.True(t, math.IsNaN(m[0].([2]float64)[0]) && math.IsNaN(m[10].(float64)))
    assert.Equal(t, []int{}, m[6])
    assert.Nil(t, m[12])
    assert.Equal(t, map[interface{}]interface{}(nil), m[13])
}
"""


def echo_task(declaration: str = ECHO) -> Task:
    return Task(task_id="Go/0", entry_point=re.search(r"func (\w+)", declaration).group(1),
                bug_type="", prompt="", declaration=declaration + "\n", buggy_solution="",
                canonical_solution="", test="", test_setup='package main\n\nimport (\n'
                '    "testing"\n    "math"\n    "github.com/stretchr/testify/assert"\n)\n',
                language="go")


def test_every_declared_type_crosses_and_compares_as_the_candidates(sandbox):
    verdict = run(sandbox, echo_task(), ECHO_CODE, ECHO_TESTS)
    assert verdict.status == "passed", verdict.stderr[-3000:]


NOT_PLAIN = """type Mine string

func Give(kind string) interface{} {
    switch kind {
    case "named":
        return Mine("x")
    case "pointer":
        one := 1
        return &one
    case "struct":
        return struct{ A int }{1}
    case "func":
        return func() {}
    case "error":
        return []error{nil}
    }
    panic("no such kind: " + kind)
}
"""
NOT_PLAIN_TESTS = """
func TestGive(t *testing.T) {
    for _, kind := range []string{"named", "pointer", "struct", "func", "error"} {
        assert.PanicsWithValue(t, "the entry point returned a value that cannot reach the "+
            "tests: a value of type "+map[string]string{"named": "main.Mine", "pointer": "*int",
            "struct": "struct { A int }", "func": "func()", "error": "error"}[kind]+
            " is not plain data (bool, numbers, string, slices, arrays, maps and interface{} "+
            "of them)", func() { Give(kind) })
    }
    assert.PanicsWithValue(t, `Give("boom") panicked in the candidate's process: no such `+
        `kind: boom`, func() { Give("boom") })
}
"""


def test_a_value_that_is_not_plain_data_or_a_panic_fails_the_call(sandbox):
    task = echo_task("func Give(kind string) interface{} {")
    verdict = run(sandbox, task, NOT_PLAIN, NOT_PLAIN_TESTS)
    assert verdict.status == "passed", verdict.stderr[-3000:]
    # The candidate's panic, as Go writes one, is its own output.
    assert "panic: no such kind: boom\n\ngoroutine " in verdict.stderr


# Attacks a model may write into task 0's fixed function (`body`: at its first call) or beside
# it (`file`), each of which passed a program that held the tests, or would have.
READ_TESTS = """    for _, name := range []string{"main_test.go", "tests_test.go",
        "../tests/box/tests_test.go"} {
        text, err := os.ReadFile(name)
        if err != nil {
            continue
        }
        for _, line := range strings.Split(string(text), "\\n") {
            found := regexp.MustCompile(`Equal\\((true|false), HasCloseElements\\(` +
                `\\[\\]float64\\{([^}]*)\\}, ([0-9.]+)\\)`).FindStringSubmatch(line)
            if found == nil {
                continue
            }
            same := fmt.Sprint(threshold) == fmt.Sprint(parse(found[3]))
            for i, field := range strings.Split(found[2], ",") {
                same = same && i < len(numbers) && numbers[i] == parse(strings.TrimSpace(field))
            }
            if same {
                return found[1] == "true"
            }
        }
    }
"""
READ_HELPER = ('\nfunc parse(text string) float64 {\n    value, _ := strconv.ParseFloat(text, 64)\n'
               '    return value\n}\n')
ATTACKS = {
    "exit at the first call": ("body", "    os.Exit(0)\n"),
    "exit from init": ("file", "func init() {\n    os.Exit(0)\n}\n"),
    "exit from a package variable's initializer": (
        "file", "var _ = func() int {\n    os.Exit(0)\n    return 0\n}()\n"),
    "exit from a goroutine": ("body", "    go os.Exit(0)\n    time.Sleep(time.Second)\n"),
    "no test run (os.Args)": (
        "file", 'func init() {\n    os.Args = append(os.Args[:1], "-test.run=^$")\n}\n'),
    "a proof forged from the environment": (
        "file", "func init() {\n    for _, pair := range os.Environ() {\n"
                '        os.WriteFile(".humanfix-finished", []byte(pair[strings.Index(pair, '
                '"=")+1:]), 0o600)\n    }\n    os.Exit(0)\n}\n'),
    "the tests read by file name": ("body", READ_TESTS),
    "the harness's files deleted": (
        "file", 'func init() {\n    entries, _ := os.ReadDir(".")\n    for _, entry := range '
                "entries {\n        os.RemoveAll(entry.Name())\n"
                '        os.WriteFile(entry.Name(), nil, 0o600)\n    }\n}\n'),
    "the pipes closed": ("file", "func init() {\n    syscall.Close(3)\n    syscall.Close(4)\n}\n"),
    "garbage and a forged pass on the pipes": (
        "file", 'func init() {\n    os.NewFile(4, "").Write([]byte("garbage\\npassed\\n"))\n'
                '    os.NewFile(5, "").Write([]byte("passed\\n"))\n}\n'),
    "its parent killed": (
        "file", "func init() {\n    syscall.Kill(os.Getppid(), syscall.SIGKILL)\n}\n"),
    "a Goexit at the first call": ("body", "    runtime.Goexit()\n"),
    "exit from a signal handler": (
        "file", "func init() {\n    caught := make(chan os.Signal, 1)\n"
                "    signal.Notify(caught, syscall.SIGTERM)\n"
                "    go func() {\n        <-caught\n        os.Exit(0)\n    }()\n"
                "    syscall.Kill(os.Getpid(), syscall.SIGTERM)\n    time.Sleep(time.Second)\n}\n"),
    "the tests' assert redefined": (
        "file", "type assertions struct{}\n\nfunc (assertions) Equal(...interface{}) bool {\n"
                "    return true\n}\n\nvar assert = assertions{}\n"),
}
ATTACK_IMPORTS = ('import (\n    "fmt"\n    "os"\n    "os/signal"\n    "regexp"\n    "runtime"\n'
                  '    "strconv"\n    "strings"\n    "syscall"\n    "time"\n)\n\n'
                  "var _, _, _, _, _, _, _, _, _ = fmt.Sprint, regexp.MustCompile, runtime.Goexit, "
                  "strconv.Itoa, syscall.Close, time.Now, strings.Split, os.Exit, signal.Notify\n")


def attack(task: Task, name: str) -> str:
    where, snippet = ATTACKS[name]
    body = snippet + task.buggy_solution if where == "body" else task.buggy_solution + snippet
    return ATTACK_IMPORTS + task.declaration + body + READ_HELPER


@pytest.mark.parametrize("name", ATTACKS)
def test_an_attack_is_scored_not_fixed(sandbox, tasks, name):
    # A SandboxError (a harness error) would raise here.
    verdict = run(sandbox, tasks[0], attack(tasks[0], name))
    assert verdict.status == "failed", (name, verdict.stderr[-3000:])
    # Built and run: the tests failed on its answers, or on its process's end.
    assert "CompileError" not in verdict.stderr, verdict.stderr[-3000:]
    assert "--- FAIL: TestHasCloseElements" in verdict.stdout + verdict.stderr


def test_the_attack_that_reads_the_tests_would_pass_were_they_in_its_folder(sandbox, tasks):
    """The reading attack is no straw man: with the tests in a file beside the candidate, as
    they were in BigCode's main_test.go, which held both, it passes."""
    task = tasks[0]
    job = GO.job(attack(task, "the tests read by file name"), task.test, task)
    files = {**json.loads(job.candidate.program)["files"], "tests_test.go": task.test}
    exposed = replace(job, candidate=replace(job.candidate, program=json.dumps({"files": files})))
    assert sandbox.run(exposed).status == "passed"


def test_the_tests_helper_redefined_by_the_candidate_is_not_the_tests(sandbox, tasks):
    """FindZero's tests check the answer with Poly: the candidate's own Poly (always 0) stays
    in its binary."""
    task = next(t for t in tasks if t.task_id == "Go/32")
    rigged = task.prompt.replace("return sum\n", "return 0 * sum\n")
    assert rigged != task.prompt
    assert run(sandbox, task, rigged + task.buggy_solution).status == "failed"


def test_an_honest_fix_passes_beside_them(sandbox, tasks):
    task = tasks[0]
    fixed = ATTACK_IMPORTS + task.declaration + task.canonical_solution + READ_HELPER
    assert run(sandbox, task, fixed).status == "passed"


def test_the_tests_binary_is_out_of_the_candidates_reach(sandbox, tasks):
    """The harness builds the tests once per worker and source, into a folder that bwrap shows
    the tests' process alone: the candidate finds no such folder (the process layer shows it
    everything, docs/sandbox.md#the-process-layer)."""
    assert sandbox.layer.name == "bwrap"
    task = tasks[0]
    run(sandbox, task, task.prompt + task.canonical_solution)
    assert list(sandbox.tests_cache.glob("*/tests.test"))  # built, and kept for the next
    probe = (f'\nfunc init() {{\n    _, err := os.ReadDir("{sandbox.tests_cache}")\n'
             '    println("tests cache:", err.Error())\n}\n')
    verdict = run(sandbox, task, 'import "os"\n' + task.prompt + task.canonical_solution + probe)
    assert verdict.status == "passed"
    assert "tests cache: open " in verdict.stderr and "no such file or directory" in \
        verdict.stderr, verdict.stderr
