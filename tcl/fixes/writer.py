"""Reading a file for fixing and writing it back atomically.

The new text goes to a temporary file in the same directory (same filesystem, so the final
rename is atomic), is flushed and fsynced, and replaces the original with os.replace -- but
only if the file on disk still has the bytes that were read (a SHA-256 compared right before the
replace). An interrupted write leaves the original file untouched and no temporary behind.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import tokenize
from dataclasses import dataclass

from ..files import decode_source


class ChangedOnDisk(Exception):
    pass


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str
    encoding: str  # what to encode the fixed text with (BOM included via utf-8-sig)
    digest: str    # SHA-256 of the bytes read

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read(path: str) -> SourceFile:
    """Raises tcl.files.SourceError (one-line message) when the file cannot be read or decoded."""
    from ..files import SourceError

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    text = decode_source(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return SourceFile(path, text, encoding, digest(data))


def current_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return digest(handle.read())
    except OSError:
        return None


def write_atomic(path: str, data: bytes, expected_digest: str) -> None:
    """Replace `path` with `data` if it still hashes to `expected_digest`; else ChangedOnDisk."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tcl-fix", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):
            shutil.copymode(path, temporary)  # keep the original's permissions
        if current_digest(path) != expected_digest:
            raise ChangedOnDisk(path)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
