"""Text any XML file of ours may hold, whatever a model wrote: the code points XML 1.0 forbids,
even escaped, and lone surrogates (which UTF-8 cannot encode) shown as `#xNN`, as pytest's own
JUnit writer shows them, so a run's and a merge's junit.xml and the chart read the same.
"""

from __future__ import annotations

import re

# XML 1.0's Char, less DEL, which pytest's writer also shows escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\x80-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """`value` as text that XML can hold (escaping `&` and `<` is the writer's)."""
    return _NOT_XML.sub(lambda found: f"#x{ord(found.group()):02X}", str(value))
