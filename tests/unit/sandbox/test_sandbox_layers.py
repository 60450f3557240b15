"""The isolation layers and the choice among them (sandbox/layers.py, sandbox/choose.py), read
as the commands they build and the notes they print, nothing executed in them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy
import pytest

from pytest_humanfix.sandbox import choose, layers
from pytest_humanfix.sandbox.environment import Limits, SandboxError
from pytest_humanfix.sandbox.fresh import FreshSandbox
from pytest_humanfix.sandbox.layers import BOX, BwrapLayer, ProcessLayer


def pairs(args: list[str], flag: str) -> list[tuple[str, str]]:
    """The (source, destination) of each `flag SRC DEST` in a bwrap command."""
    return [(args[i + 1], args[i + 2]) for i, arg in enumerate(args) if arg == flag]


@pytest.fixture
def bwrap_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A command whose layer shows `tmp_path/shown` as if it were a system folder, with the
    run's dataset inside it."""
    shown = tmp_path / "shown"
    dataset = shown / "data" / "data.jsonl"
    dataset.parent.mkdir(parents=True)
    dataset.write_text("{}\n")
    system = layers.shown_paths
    monkeypatch.setattr(layers, "shown_paths", lambda python: (
        *system(python), ("--ro-bind", str(shown), str(shown))))
    layer = BwrapLayer("/usr/bin/bwrap", hidden=(str(dataset), str(tmp_path / "absent")))
    root = tmp_path / "box"
    cache = tmp_path / "cache"
    args = layer.command(["python", "-I", "program.py"], root, root / "work", readable=(cache,))
    return layer, args, dataset, root, cache


def test_bwrap_binds_the_private_folder_as_the_only_writable_one(bwrap_command):
    _, args, _, root, _ = bwrap_command
    assert args[0] == "/usr/bin/bwrap" and ("/", "/") not in pairs(args, "--ro-bind")
    assert pairs(args, "--bind") == [(str(root), BOX)]


def test_bwrap_shows_the_system_the_interpreter_and_numpy_and_nothing_else(bwrap_command):
    """Deny by default: not the checkout, the home folder, /opt, /srv, /var or /work."""
    _, args, _, _, cache = bwrap_command
    shown = {source for source, _ in pairs(args, "--ro-bind")}
    allowed = [Path(p) for p in layers.SYSTEM_FOLDERS] + [
        Path(p).resolve() for p in (sys.prefix, sys.base_prefix)] + [cache, Path("/dev/null")]
    for source in shown:
        assert any(Path(source).is_relative_to(root) for root in allowed) \
            or "shown" in Path(source).parts, source
    checkout = Path(__file__).resolve().parents[3]
    assert not any(Path(source) == checkout or checkout.is_relative_to(source)
                   for source in shown)
    numpy_folder = str(Path(numpy.__file__).resolve().parent)
    assert numpy_folder in shown


def test_bwrap_empties_every_package_folder_before_showing_numpy_again(bwrap_command):
    _, args, _, _, _ = bwrap_command
    emptied = [args[i + 1] for i, arg in enumerate(args) if arg == "--tmpfs"]
    site = str(Path(numpy.__file__).resolve().parents[1])
    assert site in emptied
    numpy_bind = args.index(str(Path(numpy.__file__).resolve().parent))
    assert args.index(site) < numpy_bind  # emptied first, then numpy shown again in it
    assert all(Path(folder).name in ("site-packages", "dist-packages", "tmp")
               or "data" in Path(folder).parts for folder in emptied)


def test_bwrap_hides_a_datasets_folder_inside_what_it_shows(bwrap_command):
    _, args, dataset, _, _ = bwrap_command
    folder = str(dataset.parent.resolve())
    assert args[args.index(folder) - 1] == "--tmpfs"
    assert args[args.index(folder, args.index(folder) + 1) - 1] == "--remount-ro"
    assert not any("absent" in arg for arg in args)


def test_bwrap_shows_the_caches_read_only_and_runs_the_program_inside(bwrap_command):
    _, args, _, _, cache = bwrap_command
    assert (str(cache), str(cache)) in pairs(args, "--ro-bind")
    for flag in ("--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert args[args.index("--chdir") + 1] == f"{BOX}/work"
    assert args[args.index("--") + 1:] == ["python", "-I", "program.py"]


def test_bwrap_reads_a_signal_death_as_a_shell_reports_it():
    layer = BwrapLayer("/usr/bin/bwrap")
    assert layer.exit_code(128 + 9) == -9
    assert layer.exit_code(1) == 1 and layer.exit_code(128) == 128 and layer.exit_code(255) == 255


def test_the_process_layer_runs_the_command_as_given():
    layer = ProcessLayer()
    root = Path("/tmp/box")
    assert layer.command(["python", "x.py"], root, root) == ["python", "x.py"]
    assert layer.inside(root / "x.py", root) == "/tmp/box/x.py" and layer.exit_code(-9) == -9
    assert layer.network in ("namespace", "guard")


def test_process_asked_for_is_taken_without_probing_bwrap(monkeypatch):
    monkeypatch.setattr(choose, "probe_bwrap", lambda python: pytest.fail("probed"))
    layer, notes = choose.choose_layer("process")
    assert layer.name == "process" and notes[0].endswith("(--humanfix-sandbox process)")


def test_bwrap_asked_for_and_unusable_is_an_error_naming_the_way_out(monkeypatch):
    monkeypatch.setattr(choose, "probe_bwrap", lambda python: (None, "bwrap is not installed"))
    with pytest.raises(SandboxError, match="is not installed. Use --humanfix-sandbox process"):
        choose.choose_layer("bwrap")


def test_auto_falls_back_to_the_process_layer_saying_what_it_does_not_protect(monkeypatch):
    monkeypatch.setattr(choose, "probe_bwrap", lambda python: (None, "no user namespaces"))
    layer, notes = choose.choose_layer("auto")
    assert layer.name == "process"
    assert "auto fell back: no user namespaces" in notes[0]
    assert notes[1:] == [f"sandbox: the process layer does NOT protect against: {limit}"
                         for limit in layer.limits()]


def test_auto_takes_bwrap_where_it_works(monkeypatch):
    monkeypatch.setattr(choose, "probe_bwrap", lambda python: ("/usr/bin/bwrap", "bwrap works"))
    layer, notes = choose.choose_layer("auto", hidden=())
    assert layer.name == "bwrap" and notes[0].endswith("(auto: bwrap works)")


def test_a_fresh_executor_asked_for_is_said_after_the_layer_and_the_cgroups():
    choice = choose.make_sandbox("process", "fresh", Limits(timeout=5))
    assert isinstance(choice.sandbox, FreshSandbox)
    assert choice.notes[0].startswith("sandbox: process layer")
    assert "cgroup" in choice.notes[-2]
    assert choice.notes[-1] == "sandbox: a fresh interpreter per execution " \
        "(--humanfix-executor fresh)"


def test_without_cgroups_warm_asked_for_is_an_error_and_auto_falls_back_saying_why(monkeypatch):
    monkeypatch.setattr(choose, "open_cgroups", lambda: (None, "not mounted"))
    with pytest.raises(SandboxError, match="--humanfix-executor warm: it needs writable cgroups"):
        choose.make_sandbox("process", "warm", Limits(timeout=5))
    choice = choose.make_sandbox("process", "auto", Limits(timeout=5))
    assert isinstance(choice.sandbox, FreshSandbox)
    assert any("sandbox: no cgroups (not mounted)" in note for note in choice.notes)
    assert choice.notes[-1] == choose.warm_unavailable(
        "it needs writable cgroups to reap what each child leaves behind")
