"""Reading a file for fixing and writing it back atomically (through tcl.safe_files).

The new text goes to a temporary file in the same directory (same filesystem, so the final
rename is atomic), is flushed and fsynced, gets the original's mode, owner and group, and
replaces the original with os.replace -- but only if, right before the replace, the file on disk
still has the bytes that were read (SHA-256) and is the file whose mode and owner were copied. An interrupted write
leaves the original file untouched; a temporary file a SIGKILL leaves behind is removed by the
next `tcl fix --apply`. Symlinks, hard links, read-only files, other users' files and files
reached through a directory link out of the checked tree are refused unless forced.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass
from typing import Iterable

from ..files import decode_source, read_source_bytes
from ..safe_files import ChangedOnDisk, Refused, replace_file, sha256

__all__ = ["ChangedOnDisk", "Refused", "SourceFile", "current_digest", "digest", "read", "write_atomic"]


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str
    encoding: str  # what to encode the fixed text with (BOM included via utf-8-sig)
    digest: str    # SHA-256 of the bytes read

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def digest(data: bytes) -> str:
    return sha256(data)


def read(path: str) -> SourceFile:
    """Raises tcl.files.SourceError (one-line message) when the file cannot be read or decoded."""
    data = read_source_bytes(path)
    text = decode_source(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return SourceFile(path, text, encoding, digest(data))


def current_digest(path: str) -> str | None:
    from ..files import SourceError

    try:
        return digest(read_source_bytes(path))
    except SourceError:
        return None


def write_atomic(path: str, data: bytes, expected_digest: str, *, roots: Iterable[str] | None = None,
                 force: bool = False) -> None:
    """Replace `path` with `data` if it still hashes to `expected_digest`; else ChangedOnDisk.
    Refused: a file tcl does not rewrite unless `force` (tcl.safe_files.write_refusal)."""
    replace_file(path, data, expected_digest, roots=roots, force=force)
