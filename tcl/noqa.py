"""`# noqa` and `# noqa: TCL101,TCL2` suppression, on any line a finding spans.

flake8 only looks at the reported line; a multi-line call is often suppressed on its last line,
so tcl accepts the comment anywhere inside the finding's range.
"""

from __future__ import annotations

import re

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
ALL = None


class NoqaMap:
    def __init__(self, source: str) -> None:
        self.lines: dict[int, frozenset[str] | None] = {}
        if "noqa" not in source and "NOQA" not in source:
            return
        for number, line in enumerate(source.splitlines(), 1):
            if "#" not in line:
                continue
            match = NOQA.search(line)
            if match is None:
                continue
            codes = match.group("codes")
            self.lines[number] = (
                ALL if codes is None else frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
            )

    def suppressed(self, code: str, first_line: int, last_line: int) -> bool:
        if not self.lines:
            return False
        for line in range(first_line, last_line + 1):
            if line not in self.lines:
                continue
            codes = self.lines[line]
            if codes is ALL or any(code.startswith(prefix) for prefix in codes):
                return True
        return False
