"""Writes docs/options.md, the option reference, from the one option table (`settings.OPTIONS`,
read from the fields of `Settings`) that also feeds the command line and the ini keys: a
hand-written copy would drift.

    python scripts/options_page.py           # rewrite docs/options.md
    python scripts/options_page.py --check   # exit 1 when docs/options.md is not what it gives

tests/runs/test_docs.py fails when the committed page and the table disagree.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

from pytest_humanfix.settings import OPTIONS, Option

PAGE = Path(__file__).resolve().parent.parent / "docs" / "options.md"
REGENERATE = "python scripts/options_page.py"

HEADER = f"""# Options

<!-- Generated from pytest_humanfix/settings/declared.py by `{REGENERATE}`: edit the fields
of `Settings` there. -->

Every option works on the command line and as an ini key (in `pytest.ini`, `tox.ini`,
`setup.cfg` or `pyproject.toml`); the command line wins over the ini file, the ini file over an
environment variable where one is named, and that over the default. A flag's ini key takes
`true` or `false`. A bad value stops the run with one line naming the option and what it takes.

pytest reads the value of an option given as `--opt value` as a candidate path when it picks
the rootdir; outside a project with a pytest configuration, write `--humanfix-dataset=PATH`.

| option and ini key | default | meaning |
| --- | --- | --- |
"""


def cell(text: str) -> str:
    """Table-cell prose: `<model>` would be read as an HTML tag, `|` as a column break (inside
    a code span, neither is, and an escape would show)."""
    return html.escape(text, quote=False).replace("|", "\\|")


def default_of(option: Option) -> str:
    if option.flag:
        return "off"
    if not option.shown_default:
        return "&mdash;"  # none, or one the help text states (it depends on other settings)
    return f"`{option.shown_default}`"


def row(option: Option) -> str:
    usage = option.cli if option.flag else f"{option.cli} {option.metavar or 'VALUE'}"
    meaning = option.written_help  # its default is in a column of its own
    if option.env:
        meaning += f"; environment variable `{option.env}`"
    if option.repeat:
        meaning += "; may be given several times"
    if option.former:
        meaning += (f"; formerly `{option.former.cli}` (ini `{option.former.dest}`), a name "
                    "still read, with a deprecation warning")
    return (f"| `{usage}`<br>ini `{option.dest}` | {default_of(option)} "
            f"| {cell(meaning)} |\n")


def render() -> str:
    return HEADER + "".join(row(option) for option in OPTIONS)


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        if PAGE.read_text(encoding="utf-8") != render():
            print(f"{PAGE} is not what settings.OPTIONS gives: run `{REGENERATE}`")
            return 1
        return 0
    if argv:
        print(__doc__)
        return 2
    PAGE.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
