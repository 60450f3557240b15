"""The data shipped inside the package (pytest_humanfix/data/): HumanEvalPack's six languages
and HumanEval+'s OriginFmt, gzip-compressed, each pinned by its source, revision, license and
the sha256 of its uncompressed bytes (what `sha256sum` gives on the upstream file), which every
read checks (docs/getting-started.md#the-dataset). Licenses and notice: data/NOTICE."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

# The value of --humanfix-dataset and --humanfix-plus-dataset that names this copy.
PACKAGED = "packaged"
FOLDER = Path(__file__).resolve().parent / "data"

_OCTOPACK = "github.com/bigcode-project/octopack"
_OCTOPACK_COMMIT = "e17a8f6470264286bc6a52eb8263582083bf3bf6"
_EVALPLUS = "github.com/evalplus/humanevalplus_release"
_EVALPLUS_COMMIT = "200defce9e3429d28ca215b6dd061c0f7f31c18b"


class DataFileError(Exception):
    """A packaged file is missing or not the pinned one; the message names the file and the fix."""


@dataclass(frozen=True)
class DataFile:
    name: str       # the file's name in data/, less `.jsonl.gz`
    sha256: str     # of the uncompressed bytes, the upstream file's own
    source: str     # the upstream file: repository and path
    revision: str   # the upstream commit it was taken from
    license: str    # SPDX

    @property
    def path(self) -> Path:
        return FOLDER / f"{self.name}.jsonl.gz"

    @property
    def label(self) -> str:
        """How records and summaries name this copy."""
        return f"{PACKAGED} {self.name} (sha256 {self.sha256})"

    def read_text(self) -> str:
        """The file's text, once its sha256 is the pinned one."""
        try:
            raw = gzip.decompress(self.path.read_bytes())
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFileError(
                f"packaged data file {self.path} is unreadable ({type(exc).__name__}: {exc}): "
                "reinstall pytest-humanfix (pip install --force-reinstall --no-deps "
                "pytest-humanfix), or name a dataset file with --humanfix-dataset.") from None
        digest = hashlib.sha256(raw).hexdigest()
        if digest != self.sha256:
            raise DataFileError(
                f"packaged data file {self.path} has sha256 {digest}, not the pinned "
                f"{self.sha256} ({self.source} at {self.revision}): the installation is damaged "
                "or the file was edited. Reinstall pytest-humanfix (pip install "
                "--force-reinstall --no-deps pytest-humanfix), or name a dataset file with "
                "--humanfix-dataset.")
        return raw.decode("utf-8")


def _humanevalpack(language: str, sha256: str) -> DataFile:
    return DataFile(
        f"humanevalpack-{language}", sha256,
        f"{_OCTOPACK}: evaluation/create/humaneval-x/data/{language}/data/humanevalpack.jsonl",
        _OCTOPACK_COMMIT, "MIT")


# By language, as the Hub's `bigcode/humanevalpack` names its configs.
HUMANEVALPACK = {file.name.removeprefix("humanevalpack-"): file for file in (
    _humanevalpack("python", "b1376d72be4bd016a62ad043d9de3846edb8d63edf1222da802a31330c14c3a7"),
    _humanevalpack("js", "04c86c1fac5f33818d9187cba278ed1dfc66cc259372dd8342126aa580fb7569"),
    _humanevalpack("java", "a8d077d300bbdc2eda91e1a733deb2944678bce8fcc7eb272214626516768cc1"),
    _humanevalpack("go", "0ee2cdca46d70afb33d913a0d4b205624fe4ded2f28c2efdb241727221837993"),
    _humanevalpack("cpp", "891a390c1b9d2cb85dd8fbebcf1d88dbdd565734a6b2b3259f9ddb3fe95e33d7"),
    _humanevalpack("rust", "01ece28eaf490d7af037ce53095083dacfd38022cf5b82662ccb78024dc269a1"),
)}

# EvalPlus's OriginFmt, the form --humanfix-tests plus reads (plus/data.py).
HUMANEVAL_PLUS = DataFile(
    "humanevalplus-v0.1.10-originfmt",
    "04228b8a570ff7c346c740b91f0c6a0b323f86a26e903db8477c6f2d10f38819",
    f"{_EVALPLUS}: HumanEvalPlus-OriginFmt.jsonl.gz (release v0.1.10)", _EVALPLUS_COMMIT,
    "Apache-2.0")

MANIFEST = (*HUMANEVALPACK.values(), HUMANEVAL_PLUS)


def humanevalpack(language: str) -> DataFile:
    """The packaged file of one language (a HumanEvalPack config name)."""
    try:
        return HUMANEVALPACK[language]
    except KeyError:
        raise DataFileError(
            f"no packaged HumanEvalPack data for language {language!r}; the package holds "
            f"{', '.join(HUMANEVALPACK)}.") from None
