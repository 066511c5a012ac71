"""The one finding model shared by the CLI, JSON/SARIF output, flake8 and the verifier."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# A break splits the graph; a break inside a loop, `with` or `try` makes Dynamo give up on the
# whole frame and run it eagerly, which costs far more, so it is reported as an error.
WARNING = "warning"
ERROR = "error"


@dataclass(frozen=True)
class Finding:
    code: str
    path: str
    line: int
    col: int  # 1-based, as flake8 prints it
    end_line: int
    end_col: int
    message: str  # what was found: the first line of text output
    gb: str | None
    severity: str
    fix: str
    reached_from: tuple[str, ...] = field(default=())
    # The rest of the rule's message, as written after `message` in one-line outputs (": every
    # call compiles again ..." or " (inside a for loop: ...)"); text output gives it a line.
    note: str = ""
    # Which value was judged tensor data and why (`scale: x.sum() at line 12`), for the rules
    # about tensor data; shown in parentheses after the message.
    evidence: str = ""
    function: str = ""  # the helper the finding is in, when it is reached from compiled code elsewhere
    # Where the hazard itself is when it lies in an installed package (--follow-imports): the
    # finding is reported at the user's line that reaches it, and this names the library's
    # `path:line:col` (the path below site-packages); library_path is the file's full path.
    library: str = ""
    library_path: str = ""
    library_line: int = 0  # the hazard's first and last line there
    library_end_line: int = 0
    # The calls inside installed code from the user's line down to the function that holds the
    # hazard, outermost first: (`pkg/mod.py:LINE:COL`, the file's full path, LINE, the calling
    # function). Empty when the user's line calls that function directly.
    trail: tuple[tuple[str, str, int, str], ...] = ()

    @property
    def full_message(self) -> str:
        return self.message + self.note

    @property
    def note_text(self) -> str:
        """The note as a line of its own: `every call ... (inside a for loop: ...)`."""
        text = self.note.removeprefix(": ")
        if text.startswith(" (") and text.endswith(")") and text.count(" (") == 1:
            text = text[2:-1]
        return text.strip()

    @property
    def context(self) -> str:
        """`in rms_norm, reached from Block.forward, Model.forward`, or "" for a compiled function itself."""
        where = f" at {self.library}" if self.library else ""
        if not self.reached_from:
            return f"in {self.function}{where}" if where else ""
        if self.reached_from == ("public API",):  # tcl/api_entries.py: no compiled caller, its own API
            return f"in {self.function}{where}, public API that takes tensor data (users may compile it)"
        if self.reached_from == ("public API, updating its module",):  # api_entries.PUBLIC_STATE_API
            return f"in {self.function}{where}, public API that updates its module's tensors (users may compile it)"
        return f"in {self.function or '?'}{where}, reached from {', '.join(self.reached_from)}"

    @property
    def trail_text(self) -> str:
        """`demucs/demucs.py:416:13 (Demucs.forward) -> julius/resample.py:220:12 (resample_frac)`."""
        return " -> ".join(f"{where} ({function})" for where, _, _, function in self.trail)

    def to_json(self) -> dict:
        data = asdict(self)
        data["reached_from"] = list(self.reached_from)
        data["trail"] = [{"at": where, "path": path, "line": line, "function": function}
                         for where, path, line, function in self.trail]
        return data

    def sort_key(self):
        return (self.path, self.line, self.col, self.code)


@dataclass(frozen=True)
class Note:
    """Something the user should know about a file that is not a finding and does not fail the
    run: a compile call into an installed package that this run does not read."""

    path: str
    line: int
    col: int
    message: str

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: note: {self.message}"


@dataclass(frozen=True)
class FileError:
    """A file tcl could not analyse; reported as one line, the run goes on."""

    path: str
    line: int
    message: str

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"
