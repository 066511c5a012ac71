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
    message: str
    gb: str | None
    severity: str
    fix: str
    reached_from: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        data = asdict(self)
        data["reached_from"] = list(self.reached_from)
        return data

    def sort_key(self):
        return (self.path, self.line, self.col, self.code)


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
