"""What each language of HumanEvalPack knows (pytest_humanfix/languages), without running a
toolchain: the program BigCode assembles for a candidate, the stop words and function end a
completion is cut by, the prompt base, the limits a toolchain needs, and the names it takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import LANGUAGES, NAMES, language, of_task_id, parse_languages
from pytest_humanfix.languages.base import split_top
from pytest_humanfix.languages.go import go_env
from pytest_humanfix.sandbox.environment import Limits
from pytest_humanfix.sandbox.program import PRELUDE

# The stop words of BigCode's humanevalpack.py (`get_stop_words` of each language).
BIGCODE_STOP_WORDS = {
    "python": ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\nassert", "<|endoftext|>"),
    "go": ("\n//", "\nfunc main(", "struct", "\nfunc", "<|endoftext|>"),
    "js": ("<|endoftext|>",), "java": ("<|endoftext|>",), "cpp": ("<|endoftext|>",),
    "rust": ("<|endoftext|>",),
}


@pytest.fixture(scope="module")
def first(dataset: Path) -> dict[str, Task]:
    """Each language's first task (has_close_elements in all six)."""
    return {name: load_tasks(str(dataset.parent / f"humanevalpack-{name}.jsonl"))[0]
            for name in NAMES}


def test_the_six_languages_by_bigcodes_names():
    assert NAMES == ("python", "js", "java", "go", "cpp", "rust")
    assert all(language(name).name == name for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_stop_words_are_bigcodes(name):
    assert LANGUAGES[name].stop_words == BIGCODE_STOP_WORDS[name]


def test_a_completion_ends_where_bigcodes_check_fn_says_the_function_ends():
    assert {name: LANGUAGES[name].function_end for name in NAMES} == {
        "python": "indent", "js": "braces:1", "java": "braces:2", "go": "braces:1",
        "cpp": "braces:1", "rust": "braces:1"}


@pytest.mark.parametrize("name", NAMES)
def test_the_first_task_of_each_file_names_its_language(first, name):
    assert of_task_id(first[name].task_id) is LANGUAGES[name]
    assert first[name].language == name


def test_an_id_of_no_known_prefix_has_no_language():
    assert of_task_id("HumanEval/0") is None


def test_language_lists_are_deduplicated_in_the_order_given():
    assert parse_languages("rust, go,rust") == ("rust", "go")
    assert parse_languages("all") == NAMES
    with pytest.raises(ValueError, match="not nothing"):
        parse_languages(" , ")


def test_python_runs_the_candidate_with_the_prelude_and_the_tests_apart(first):
    task = first["python"]
    job = LANGUAGES["python"].job(task.canonical_code, task.test, task)
    assert job.candidate.program == PRELUDE + "\n" + task.canonical_code.strip() + "\n"
    assert job.tests is not None and job.tests.program.endswith(task.test.lstrip("\n") + "\n")
    assert job.tests.program.startswith(PRELUDE + "\n")
    assert task.canonical_solution not in job.tests.program


def test_javascript_program_is_bigcodes_the_candidate_then_the_test(first):
    # The one program BigCode runs (benchmarks compare with it); ours runs apart (job).
    task = first["js"]
    assert LANGUAGES["js"].program("CODE", task.test, task) == "CODE\n\n" + task.test + "\n"


def test_java_drops_an_empty_main_class_a_model_adds(first):
    task = first["java"]
    code = task.canonical_code + "\npublic class Main {\n    }\n"
    program = LANGUAGES["java"].program(code, task.test, task)
    # The test brings the one Main class there is.
    assert program.count("public class Main") == 1 and task.test + "\n" in program


def test_go_adds_a_helper_import_only_for_a_use_outside_comments(first):
    task, go = first["go"], LANGUAGES["go"]
    used = go.assemble(task.declaration + '    fmt.Println(1)\n    return false\n}\n', task)
    assert '"fmt"' in used
    commented = go.assemble(task.declaration + "    // fmt.Println(1)\n    return false\n}\n",
                            task)
    assert '"fmt"' not in commented


def test_go_keeps_one_package_line_when_the_code_has_its_own(first):
    task = first["go"]
    program = LANGUAGES["go"].program(task.prompt + task.canonical_solution, task.test, task)
    assert program.count("package main") == 1
    assert program.count('"testing"') == 1


def test_rust_prompt_base_opens_with_main_in_the_tests_variant_only(first):
    task, rust = first["rust"], LANGUAGES["rust"]
    assert rust.prompt_base(task, "tests") == "fn main(){}\n" + task.declaration
    assert rust.prompt_base(task, "docs") == task.prompt


def test_rust_cuts_a_second_main_of_the_model(first):
    task = first["rust"]
    code = ("fn main(){}\n" + task.declaration + task.canonical_solution
            + "\nfn main() {\n    println!(\"x\");\n}\n")
    program = LANGUAGES["rust"].assemble(code, task)
    assert program.count("fn main()") == 1 and 'println!("x")' not in program


def test_toolchains_get_the_threads_and_files_they_need_and_python_keeps_its_limits():
    limits = Limits(processes=64, file_bytes=16 << 20)
    assert LANGUAGES["python"].limits(limits) == limits
    for name in ("java", "go", "rust"):
        assert LANGUAGES[name].limits(limits).processes == 256, name
    assert LANGUAGES["rust"].limits(limits).file_bytes == 64 << 20
    # A limit already above what a toolchain needs is kept.
    assert LANGUAGES["java"].limits(Limits(processes=512)).processes == 512


def test_go_builds_offline_in_gopath_mode():
    env = go_env("/box/gocache")
    assert env["GOCACHE"] == "/box/gocache" and env["GOPROXY"] == "off"
    assert env["GO111MODULE"] == "off" and "HOME" not in env


@pytest.mark.parametrize("name", NAMES)
def test_known_failures_are_tasks_of_their_own_language(name):
    for task_id, reason in LANGUAGES[name].known_failures.items():
        assert of_task_id(task_id) is LANGUAGES[name] and reason, task_id


@pytest.mark.parametrize("name", [name for name in NAMES if LANGUAGES[name].tools])
def test_a_missing_toolchain_names_the_debian_package(name, monkeypatch):
    monkeypatch.setattr("pytest_humanfix.languages.base.SANDBOX_PATH", "/nonexistent")
    lines = LANGUAGES[name].missing()
    packages = {package for _, package in LANGUAGES[name].tools}
    assert packages and all(any(f"apt-get install {p}" in line for line in lines)
                            for p in packages)


@pytest.mark.parametrize(("text", "brackets", "pieces"), [
    ("map<string,string> dict, int n", "<>", ["map<string,string> dict", "int n"]),
    ("f func(int, int) bool, xs []int", "()[]{}", ["f func(int, int) bool", "xs []int"]),
    ("a: HashMap<i32, Vec<(i32, i32)>>, b: &[i32]", "<>()[]",
     ["a: HashMap<i32, Vec<(i32, i32)>>", "b: &[i32]"]),
    ("", "<>", []),
])
def test_a_declarations_parameters_are_cut_at_the_commas_outside_brackets(text, brackets,
                                                                           pieces):
    assert split_top(text, brackets) == pieces
