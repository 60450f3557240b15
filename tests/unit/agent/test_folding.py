"""What the reading behind Python's flags says an expression amounts to (agent/folding.py,
agent/scopes.py): string expressions folded, names followed through their bindings in every
scope, and None where it cannot tell, never a wrong single answer."""

from __future__ import annotations

import ast

import pytest

from pytest_humanfix.agent.folding import Namespace, Reader
from pytest_humanfix.agent.scopes import Ref


def value_of(code: str, name: str = "RESULT") -> frozenset | None:
    """What the reading says of the last read of `name` in `code`, or of a read put after it."""
    reads = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    tree = ast.parse(code if reads else f"{code}\n{name}")
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    return Reader(tree).values(reads[-1])


@pytest.mark.parametrize("code, expected", [
    ("RESULT = 'f_loc' + 'als'", {"f_locals"}),
    ("P = 'ex'\nRESULT = f'{P}it'", {"exit"}),
    ("RESULT = f'{95:c}{\"x\"!r}'", {"_'x'"}),
    ("RESULT = ''.join(['_e', 'xit'])", {"_exit"}),
    ("RESULT = '{}{}'.format('_ex', 'it')", {"_exit"}),
    ("RESULT = '%s%s' % ('_ex', 'it')", {"_exit"}),
    ("RESULT = 'tixe_'[::-1]", {"_exit"}),
    ("RESULT = 'xx_exit'[2:]", {"_exit"}),
    ("RESULT = bytes([95, 101, 120, 105, 116]).decode()", {"_exit"}),
    ("RESULT = ''.join(map(chr, [95, 101, 120, 105, 116]))", {"_exit"}),
    ("RESULT = ''.join(map(lambda c: chr(c + 1), [94, 100]))", {"_e"}),
    ("RESULT = ''.join(chr(c) for c in range(95, 97))", {"_`"}),
    ("import base64\nRESULT = base64.b64decode('X2V4aXQ=').decode()", {"_exit"}),
    ("import codecs\nRESULT = codecs.decode('rkvg', 'rot13')", {"exit"}),
    ("RESULT = 'EXIT'.lower()", {"exit"}),
    ("RESULT = 'a'\nRESULT += 'b'", {"a", "ab"}),  # every binding counts, whatever the order
    ("import os as o\nRESULT = o", {Ref("os")}),
    ("from os import _exit as q\nRESULT = q", {Ref("os._exit")}),
    ("import sys\nRESULT = getattr(sys, '_get' + 'frame')", {Ref("sys._getframe")}),
    ("RESULT = __import__('o' + 's').path", {Ref("os.path")}),
    ("import importlib\nRESULT = importlib.import_module('os')", {Ref("os")}),
    ("import builtins\nRESULT = vars(builtins)['ev' + 'al']", {Ref("builtins.eval")}),
    ("import builtins\nRESULT = builtins.__dict__", {Namespace("builtins")}),
    ("import sys\nRESULT = sys.modules['o' + 's']", {Ref("os")}),
    ("RESULT = eval", {Ref("builtins.eval")}),
    ("_E = eval\nRESULT = _E", {Ref("builtins.eval")}),
    ("for RESULT in ('a', 'b'):\n    pass", {"a", "b"}),
])
def test_strings_fold_and_names_follow_their_bindings(code, expected):
    assert value_of(code) == frozenset(expected)


@pytest.mark.parametrize("code", [
    "def f(RESULT):\n    return RESULT",                     # a parameter: the tests' input
    "RESULT = ''\nfor c in 'exit':\n    RESULT += c",         # grows in a loop
    "RESULT = 'a' * 100000",                                   # past the bounds
    "RESULT = '{0.__class__}'.format('')",                     # a field that reaches inside
    "RESULT = open('f').read()",                               # not a pure function
    "RESULT = RESULT + 'x'",                                   # reads only itself
    "import random\nRESULT = random.choice(['a', 'b'])",
])
def test_what_the_reading_cannot_tell_is_unknown(code):
    assert value_of(code) is None


def test_scopes_global_nonlocal_and_class_bodies():
    code = """
X = 'module'
def outer():
    X = 'outer'
    def inner():
        nonlocal X
        X = 'nonlocal'
    return X
def writer():
    global X
    X = 'global'
class C:
    X = 'class'
    def method(self):
        return X
"""
    tree = ast.parse(code)
    reader = Reader(tree)
    reads = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            names = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "X"
                     and isinstance(n.ctx, ast.Load)]
            if names:
                reads[function.name] = reader.values(names[0])
    assert reads == {"outer": frozenset({"outer", "nonlocal"}),
                     # a method does not see its class's body: the module's X
                     "method": frozenset({"module", "global"})}


def test_a_long_chain_of_names_is_read_once_each():
    code = "S0 = 'ab'\n" + "".join(f"S{i + 1} = S{i} + S{i}\n" for i in range(60)) + \
        "RESULT = S60"
    assert value_of(code) is None  # 2**61 characters: past the bounds, and read at once


def test_parameters_are_what_the_tests_pass_in():
    tree = ast.parse("def f(ops, xs):\n    text = str(xs[0])\n    for o in ops:\n"
                     "        text += o\n    return eval(text)\nK = 'k'\nprint(eval(K))\n")
    reader = Reader(tree)
    evals = [n.args[0] for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "eval"]
    assert [reader.scopes.reads_parameters(arg) for arg in evals] == [True, False]
