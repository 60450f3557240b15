"""JavaScript's driver: the candidate and the tests in two node processes, only plain data
between them (pytest_humanfix/languages/javascript.py, javascript_driver/wire.js). Values cross
the pipe and compare as the candidate's would have; a candidate that exits, hooks the exit,
replaces console.assert, deletes files, reads the tests or the environment, or writes on the
pipes changes nothing but its own answers: scored not fixed, under the default settings, and
never a harness error. An honest fix beside them passes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pytest_humanfix.dataset import Task
from pytest_humanfix.languages import language
from pytest_humanfix.languages.javascript import answering_program, calling_program
from pytest_humanfix.sandbox.environment import Verdict
from pytest_humanfix.sandbox.toolchain import ToolchainSandbox

LANGUAGE = "js"
JS = language(LANGUAGE)


def run(sandbox: ToolchainSandbox, task: Task, code: str, tests: str | None = None) -> Verdict:
    return sandbox.run(JS.job(code, task.test if tests is None else tests, task))


def test_the_two_programs(tasks):
    """The candidate's program is its code then the answer loop, under the name the
    declaration gives (JavaScript/114's row says minSubarraySum); the tests' program holds the
    declaration's helpers, never the candidate's code."""
    task = next(t for t in tasks if t.task_id == "JavaScript/114")
    candidate = answering_program("CODE", task)
    assert candidate.startswith("CODE\n;") and "\nconst __humanfixWire = (() => {" in candidate
    assert candidate.endswith(
        ';__humanfixWire.answer(() => minSubArraySum, "minSubArraySum")\n')
    program = calling_program("TESTS", task)
    assert 'const minSubArraySum = __humanfixWire.candidate("minSubArraySum")\nTESTS' in program
    helpers = calling_program("TESTS", next(t for t in tasks if t.task_id == "JavaScript/32"))
    assert helpers.startswith("const poly = (xs, x) => {")
    job = JS.job("CODE", "TESTS", task)
    assert job.silent and "CODE" not in job.tests.program


# What the candidate returns, by name; the tests compare each as the candidate's own value
# would compare (any failed console.assert prints, and output fails).
VALUES = """
const VALUES = {
  nan: NaN, inf: Infinity, ninf: -Infinity, nzero: -0, zero: 0, big: 2 ** 53 + 2,
  tiny: 5e-324, int: 7, float: 0.1 + 0.2, undef: undefined, nul: null, yes: true, no: false,
  str: 'a\\u0000\\ud800é\\n"', empty: '', arr: [1, 'x', [null, undefined], { a: [] }],
  holes: [1, , 3], obj: { b: 1, a: { c: [2] }, 2: 'two', 1: 'one' }, bare: Object.create(null),
  proto: JSON.parse('{"__proto__": 5, "x": 1}'), bigint: 12345678901234567890n,
}
VALUES.bare.k = 'v'
const echo = (kind, value) => {
  return kind === 'same' ? value : VALUES[kind]
}
"""
VALUE_TESTS = r"""
const same = (a, b) => Object.is(a, b)
console.assert(same(echo('nan'), NaN) && same(echo('inf'), Infinity))
console.assert(same(echo('ninf'), -Infinity) && same(echo('nzero'), -0))
console.assert(same(echo('zero'), 0) && echo('big') === 2 ** 53 + 2 && echo('tiny') === 5e-324)
console.assert(echo('int') === 7 && echo('float') === 0.1 + 0.2 && echo('float') !== 0.3)
console.assert(echo('undef') === undefined && echo('nul') === null)
console.assert(echo('yes') === true && echo('no') === false && typeof echo('yes') === 'boolean')
console.assert(echo('str') === 'a\u0000\ud800é\n"' && echo('empty') === '')
console.assert(JSON.stringify(echo('arr')) === '[1,"x",[null,null],{"a":[]}]')
console.assert(echo('arr')[2].length === 2 && echo('arr')[2][1] === undefined)
console.assert(JSON.stringify(echo('holes')) === '[1,null,3]' && echo('holes').length === 3)
console.assert(JSON.stringify(echo('obj')) === '{"1":"one","2":"two","b":1,"a":{"c":[2]}}')
console.assert(JSON.stringify(echo('bare')) === '{"k":"v"}')
const proto = echo('proto')
console.assert(Object.getPrototypeOf(proto) === Object.prototype && proto.x === 1)
console.assert(Object.keys(proto).join() === '__proto__,x' && proto.__proto__ === 5)
console.assert(echo('bigint') === 12345678901234567890n)
console.assert(Array.isArray(echo('arr')) && !Array.isArray(echo('obj')))
const sent = [NaN, -0, Infinity, 'é\ud800', [1, [2, {}]], { k: [undefined] }, 3n, null, undefined]
for (const value of sent) {
  console.assert(JSON.stringify(echo('same', value), (k, v) => typeof v === 'bigint'
    ? String(v) : v) === JSON.stringify(value, (k, v) => typeof v === 'bigint' ? String(v) : v))
}
console.assert(same(echo('same', -0), -0) && same(echo('same', NaN), NaN))
"""


def echo_task() -> Task:
    return Task(task_id="JavaScript/0", entry_point="echo", bug_type="", prompt="",
                declaration="const echo = (kind, value) => {\n", buggy_solution="",
                canonical_solution="", test="", language="js")


def test_values_cross_the_pipe_and_compare_as_the_candidates_would(sandbox):
    verdict = run(sandbox, echo_task(), VALUES, VALUE_TESTS)
    assert verdict.status == "passed", verdict.stderr


NOT_PLAIN = """
class Point { constructor() { this.x = 1 } }
const echo = (kind) => ({
  map: new Map(), set: new Set([1]), date: new Date(0), fn: () => 1, sym: Symbol('s'),
  point: new Point(), boxed: new String('x'), toJSON: { toJSON: () => [1] },
  deep: JSON.parse('['.repeat(200) + ']'.repeat(200)),
  getter: { get x() { throw new Error('no') } },
})[kind]
"""


@pytest.mark.parametrize("kind", ["map", "set", "date", "fn", "sym", "point", "boxed",
                                  "toJSON", "deep", "getter"])
def test_a_value_that_is_not_plain_data_fails_the_call(sandbox, kind):
    tests = (f"let failed = ''\ntry {{ echo('{kind}') }} catch (error) {{ failed = error.name + "
             f"': ' + error.message }}\nif (failed.startsWith('HumanfixCandidateError: echo "
             f"returned a value that cannot reach the tests')) process.exitCode = 0\n"
             f"else throw new Error(failed || 'no error')\n")
    verdict = run(sandbox, echo_task(), NOT_PLAIN, tests)
    assert verdict.status == "passed", verdict.stderr


def test_what_the_candidate_throws_is_thrown_in_the_tests(sandbox):
    code = ("const echo = (kind) => { if (kind === 'range') throw new RangeError('too far');"
            " if (kind === 'own') { class Mine extends Error {}; Mine.prototype.name = 'Mine';"
            " throw new Mine('mine') } throw 5 }\n")
    tests = ("const caught = (kind) => { try { echo(kind) } catch (e) { return e } }\n"
             "const range = caught('range'), own = caught('own'), five = caught('five')\n"
             "if (!(range instanceof RangeError && range.message === 'too far')) throw range\n"
             "if (!(own.name === 'Mine' && own.message === 'mine')) throw own\n"
             "if (!(five.name === 'number' && five.message === '5')) throw five\n")
    verdict = run(sandbox, echo_task(), code, tests)
    # The candidate's stack is its own output (BigCode's uncaught throw prints it too).
    assert verdict.status == "failed" and "RangeError: too far" in verdict.stderr
    assert "at echo (" in verdict.stderr and "wrote output" in verdict.stderr
    quiet = code.replace("const echo", "process.stderr.write = () => true\nconst echo")
    assert run(sandbox, echo_task(), quiet, tests).status == "passed"


# Attacks a model may write into task 0's buggy function (`body`: at its first call) or
# before it (`load`), each of which once passed or turned a failure into an error somewhere.
FS = "const fs = require('fs');\n"
# Returns what the tests expect of these arguments, where it finds them in a file.
READ_TESTS = (FS + "for (const name of ['test.js', 'tests.js', '../tests/box/tests.js']) { try "
              "{ const text = fs.readFileSync(name, 'utf8'); for (const found of text.matchAll("
              "/hasCloseElements\\(([^)]*)\\)\\s*===\\s*(true|false)/g)) { if ("
              "JSON.stringify(eval('[' + found[1] + ']')) === JSON.stringify([numbers, "
              "threshold])) return found[2] === 'true' } } catch {} }\n")
ATTACKS = {
    "exit at load": ("load", "process.exit(0);\n"),
    "reallyExit at load": ("load", "process.reallyExit(0);\n"),
    "exit at the first call": ("body", "process.exit(0);\n"),
    "exitCode and an exit from a timer": (
        "load", "process.exitCode = 0; setTimeout(() => process.exit(0), 0);\n"),
    "exit from beforeExit and exit handlers": (
        "load", "process.on('beforeExit', () => process.exit(0));\n"
                "process.on('exit', () => process.reallyExit(0));\n"),
    "exit from a signal handler and a worker thread": (
        "load", "process.on('SIGTERM', () => process.exit(0)); process.kill(process.pid, "
                "'SIGTERM');\nnew (require('worker_threads').Worker)('process.exit(0)', "
                "{ eval: true });\n"),
    "console.assert assigned": ("load", "console.assert = () => {};\n"),
    "console.assert through Reflect.set": ("load", "Reflect.set(console, 'assert', () => {});\n"),
    "console.assert defined": (
        "load", "Object.defineProperty(console, 'assert', { value: () => {} });\n"),
    "console.assert through an alias": (
        "load", "const c = globalThis['con' + 'sole']; c['ass' + 'ert'] = () => {};\n"),
    "output files unlinked and replaced": (
        "load", FS + "for (const name of fs.readdirSync('.')) { try { fs.unlinkSync(name); "
                "fs.writeFileSync(name, '') } catch {} }\n"
                "for (const fd of [1, 2]) { try { fs.ftruncateSync(fd, 0) } catch {} }\n"),
    "the tests read by file name": ("body", READ_TESTS),
    "the environment read for a secret": (
        "load", FS + "for (const value of Object.values(process.env)) { try { "
                "fs.writeFileSync('.humanfix-finished', value) } catch {} }\nprocess.exit(0);\n"),
    "the pipes closed": ("load", FS + "fs.closeSync(3); fs.closeSync(4);\n"),
    "garbage and a forged pass on the pipes": (
        "load", FS + "fs.writeSync(4, 'garbage\\npassed\\n'); try { fs.writeSync(5, "
                "'passed\\n') } catch {}\n"),
    "its parent killed": ("load", "process.kill(process.ppid, 'SIGKILL');\n"),
    "JSON.stringify replaced": ("load", "JSON.stringify = () => '1';\n"),
    "a value that lies to JSON.stringify": (
        "body", "return { toJSON: () => true, valueOf: () => true };\n"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_is_scored_not_fixed(sandbox, tasks, attack):
    where, snippet = ATTACKS[attack]
    task = tasks[0]
    code = (snippet + task.declaration + task.buggy_solution if where == "load"
            else task.declaration + snippet + task.buggy_solution)
    verdict = run(sandbox, task, code)  # a SandboxError (a harness error) would raise here
    assert verdict.status == "failed", (attack, verdict.stdout, verdict.stderr)
    assert "SyntaxError" not in verdict.stderr, verdict.stderr  # it ran, and did its worst


def test_the_tests_helper_redefined_by_the_candidate_is_not_the_tests(sandbox, tasks):
    """findZero's tests check the answer with `poly`: the candidate's own `poly` (always 0)
    stays in its process."""
    task = next(t for t in tasks if t.task_id == "JavaScript/32")
    rigged = task.prompt.replace("return xs.reduce(", "return 0 * xs.reduce(")
    assert rigged != task.prompt
    assert run(sandbox, task, rigged + task.buggy_solution).status == "failed"


def test_an_honest_fix_passes_beside_them(sandbox, tasks):
    task = tasks[0]
    assert run(sandbox, task, task.declaration + task.canonical_solution).status == "passed"


def test_output_of_the_candidate_alone_fails(sandbox, tasks):
    task = tasks[0]
    loud = task.canonical_solution.replace("return false;", "console.log('x'); return false;", 1)
    verdict = run(sandbox, task, task.declaration + loud)
    assert verdict.status == "failed" and "wrote output" in verdict.first_failure()


def test_the_attack_that_reads_the_tests_would_pass_were_they_in_its_folder(sandbox, tasks):
    """The reading attack is no straw man: with BigCode's test.js beside the candidate's
    program, as it was in the one folder of the program that held both, it passes."""
    task = tasks[0]
    job = JS.job(task.declaration + READ_TESTS + task.buggy_solution, task.test, task)
    files = {**json.loads(job.candidate.program)["files"], "test.js": task.test}
    exposed = replace(job, candidate=replace(job.candidate, program=json.dumps({"files": files})))
    assert sandbox.run(exposed).status == "passed"
