"""Every file tcl reads, writes or deletes outside its own process goes through here.

The promises: a read opens only regular files (stat first, then O_NONBLOCK, then fstat again, so a
FIFO or device swapped in after discovery is refused instead of blocking, and an optional size cap
bounds what is read); a write never goes through a symlink -- new files are created with
O_EXCL|O_NOFOLLOW, a rewrite replaces the file atomically (temporary file in the same directory,
fsync, os.replace) keeping its mode, owner and group, and by default refuses a file that is a
symlink, hard-linked, read-only, owned by someone else or reached through a directory link out of
the checked tree; a deletion never follows a link (lstat, a link is unlinked as a link, rmtree only
below directories checked with lstat), and tcl deletes only inside a cache directory that carries
tcl's own CACHEDIR.TAG and whose path below that tag holds no symlink; tcl's temporary files carry
a recognisable name and an flock while in use, so the next run removes those an interrupted run
left behind (regular files only, unlocked, a few seconds old, never through a link). What is not
defended: another process swapping directories under a running tcl (the checks are lstat-then-act,
not openat chains); extended attributes and ACLs are not copied to a rewritten file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import IO, Iterable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, stale temp files are judged by age alone
    fcntl = None

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOCTTY = getattr(os, "O_NOCTTY", 0)
O_BINARY = getattr(os, "O_BINARY", 0)

# tcl's temporary files: `fix --apply` writes `.NAME.py.<8>.tcl-fix` beside the file it rewrites,
# the cache `.tmp-<8>.json` beside the entry. <8> is what tempfile.mkstemp used before this module
# (lower-case letters, digits, `_`), so files left by older versions are recognised too.
FIX_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tcl-fix")
CACHE_TEMP = re.compile(r"\.tmp-[a-z0-9_]{8}\.json")
# A temporary file younger than this may be one another tcl process is creating right now
# (between its O_CREAT and its flock): left alone. Without flock, age alone decides.
STALE_AFTER_S = 5.0
STALE_AFTER_WITHOUT_LOCKS_S = 3600.0

# The CACHEDIR.TAG standard's signature line, and the line that says the directory is tcl's.
CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
TCL_CACHE_MARK = "# tcl cache directory"
CACHEDIR_TAG_TEXT = (
    f"{CACHEDIR_SIGNATURE}\n"
    "# This file is a cache directory tag created by tcl, the torch.compile linter.\n"
    f"{TCL_CACHE_MARK}\n"
)


class Refused(OSError):
    """A file tcl will not read, write or delete; str() is the one-line reason (no errno)."""

    def __init__(self, reason: str) -> None:
        super().__init__(None, reason)

    def __str__(self) -> str:
        return self.strerror


class ChangedOnDisk(Exception):
    """The file no longer has the bytes that were read: it is left as it is."""


def describe_mode(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in (
        (stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def _not_regular(mode: int) -> Refused:
    return Refused(f"not a regular file ({describe_mode(mode)})")


# -- reading --------------------------------------------------------------------------------
def read_regular(path: str | os.PathLike, *, follow_links: bool = True, limit: int | None = None) -> bytes:
    """The bytes of a regular file. Never blocks on a FIFO or device and never opens one (a stat
    first; O_NONBLOCK and an fstat catch a swap in between). follow_links=False refuses a link as
    the last path component (ELOOP). limit: refuse a file larger than this many bytes."""
    st = os.stat(path) if follow_links else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(st.st_mode)
    flags = os.O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_BINARY | (0 if follow_links else O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(st.st_mode)
        if limit is not None and st.st_size > limit:
            raise Refused(f"larger than {limit:,} bytes")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if limit is not None and size > limit:  # grew while being read
                raise Refused(f"larger than {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- creating -------------------------------------------------------------------------------
def private_temp_dir(prefix: str) -> str:
    """A new directory only this user can enter (mode 0700), in the system temp directory."""
    return tempfile.mkdtemp(prefix=prefix)


def open_new(path: str | os.PathLike, mode: str = "w", *, permissions: int = 0o600) -> IO:
    """Create `path`, which must not exist (not even as a dangling link), and open it for writing."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_new: mode {mode!r}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY, permissions)
    if mode == "wb":
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8")


def open_append(path: str | os.PathLike) -> IO:
    """Append to an existing regular file, never through a link (a link gives ELOOP)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_BINARY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8")


def _create_temp(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """(fd, path) of a new file `<prefix><8 hex><suffix>` in `directory`, mode 0600, locked with
    flock for as long as the fd is open (so a concurrent sweep leaves it alone)."""
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{secrets.token_hex(4)}{suffix}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY, 0o600)
        except FileExistsError:
            continue
        if fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd, path
    raise FileExistsError(f"no free temporary name in {directory}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_new_atomic(target: str | os.PathLike, data: bytes, *, temp_prefix: str, temp_suffix: str) -> None:
    """Put `data` at `target` through a temporary file beside it and os.replace. os.replace swaps
    the directory entry, so an existing link or hard link at `target` is replaced, never written
    through. For tcl's own files (cache entries, tags); user files go through replace_file."""
    directory = os.path.dirname(os.path.abspath(target))
    fd, temporary = _create_temp(directory, temp_prefix, temp_suffix)
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# -- rewriting the user's files -------------------------------------------------------------
def is_within(path: str, root: str) -> bool:
    """Whether real path `path` is `root` or below it (both already real paths)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def write_refusal(path: str, roots: Iterable[str] | None = None) -> str | None:
    """Why rewriting `path` would harm something (None: it would not): a symlink (it would become a
    plain file), a hard link (the other names would keep the old text), read-only, another
    user's, or its directory reached through a link out of the real paths in `roots`."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return f"is a symlink (to {os.path.realpath(path)}); rewriting it would replace the link"
    if not stat.S_ISREG(st.st_mode):
        return str(_not_regular(st.st_mode))
    if st.st_nlink > 1:
        return f"has {st.st_nlink} hard links; rewriting it would leave the other names with the old text"
    if _read_only(path, st):
        return f"is read-only (mode {stat.S_IMODE(st.st_mode):04o})"
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        return f"is owned by another user (uid {st.st_uid})"
    if roots is not None:
        directory = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        if not any(is_within(directory, root) for root in roots):
            return f"is outside the checked tree (its directory is really {directory}, reached through a symlink)"
    return None


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _read_only(path: str, st: os.stat_result) -> bool:
    if _euid() == 0:  # root may write anything: the mode bits say what the owner meant
        return not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    return not os.access(path, os.W_OK)


def replace_file(path: str, data: bytes, expected_digest: str, *, roots: Iterable[str] | None = None,
                 force: bool = False) -> None:
    """Rewrite `path` with `data`, atomically, if it still hashes (SHA-256) to `expected_digest`.

    Refuses (Refused, one-line reason) what write_refusal names unless `force`; with `force` a
    symlink's target is rewritten (the link stays) and a hard-linked file is replaced (its other
    names keep the old text). The new file gets the old one's mode, owner and group (owner and
    group when tcl runs as root or as the owner; a group the owner cannot set is refused unless
    `force`). ChangedOnDisk: the file was changed or swapped since it was read; it is left as is.
    """
    if not force:
        reason = write_refusal(path, roots)
        if reason is not None:
            raise Refused(reason)
    target = os.path.realpath(path) if force else path  # force: through the link, keeping it
    st = os.lstat(target)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(st.st_mode)
    directory = os.path.dirname(os.path.abspath(target))
    fd, temporary = _create_temp(directory, f".{os.path.basename(target)}.", ".tcl-fix")
    try:
        try:
            _write_all(fd, data)
            _copy_owner_and_mode(fd, st, force)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            now = read_regular(target, follow_links=False)
            same_file = _same_file(os.lstat(target), st)
        except OSError:
            raise ChangedOnDisk(path) from None
        if not same_file or sha256(now) != expected_digest:
            raise ChangedOnDisk(path)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(directory)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _copy_owner_and_mode(fd: int, st: os.stat_result, force: bool) -> None:
    mine = os.fstat(fd)
    if hasattr(os, "fchown") and (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            # Not root: the owner may still set a group it belongs to; another user's uid is
            # only reachable with force (write_refusal refuses it), and then stays ours.
            try:
                os.fchown(fd, -1, st.st_gid)
            except PermissionError:
                if not force:
                    raise Refused(f"cannot keep its group (gid {st.st_gid})") from None
    if hasattr(os, "fchmod"):  # after chown, which clears set-uid/set-gid bits
        os.fchmod(fd, stat.S_IMODE(st.st_mode))


def fsync_directory(directory: str) -> None:
    """Make a rename durable (POSIX; a no-op where directories cannot be opened)."""
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


# -- deleting -------------------------------------------------------------------------------
def sweep_stale_temps(directory: str | os.PathLike, pattern: re.Pattern) -> list[str]:
    """Remove tcl's temporary files an interrupted run left in `directory` (not below it): names
    matching `pattern`, regular files (lstat: a link is never followed nor removed), unlocked and
    STALE_AFTER_S old. Returns the paths removed; problems are skipped silently."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            st = os.lstat(entry.path)
            if not stat.S_ISREG(st.st_mode):
                continue
            age = now - st.st_mtime
            if age < (STALE_AFTER_S if fcntl is not None else STALE_AFTER_WITHOUT_LOCKS_S):
                continue
            if fcntl is not None and not _unlocked(entry.path, st):
                continue
            os.unlink(entry.path)  # unlink never follows a link
            removed.append(entry.path)
        except OSError:
            continue
    return removed


def _unlocked(path: str, st: os.stat_result) -> bool:
    """No process holds tcl's flock on this file (one that died released it)."""
    fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    try:
        if not _same_file(os.fstat(fd), st):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    finally:
        os.close(fd)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove a directory tcl made (a private temp dir, a cache bucket), never through a link: a
    link at `path` is unlinked as a link; below it shutil.rmtree does not follow links."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def link_in_chain(root: Path, relative: Iterable[str]) -> str | None:
    """The first of root, root/a, root/a/b ... that is a symlink or not a directory, as a
    message ("ROOT/a is a symlink"); None when each is a real directory (or does not exist)."""
    current = root
    for part in ("", *relative):
        current = current / part if part else current
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{current}: {exc.strerror or exc}"
        if stat.S_ISLNK(st.st_mode):
            return f"{current} is a symlink"
        if not stat.S_ISDIR(st.st_mode):
            return f"{current} is not a directory"
    return None


def make_real_dirs(root: Path, relative: Iterable[str]) -> Path:
    """root/relative..., made where missing, each checked with lstat to be a real directory
    (Refused otherwise). `root` itself must already be one."""
    current = root
    parts = list(relative)
    for index, part in enumerate(parts):
        current = current / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(current)
        problem = link_in_chain(root, parts[: index + 1])
        if problem is not None:
            raise Refused(problem)
    return current


def is_tcl_cache_dir(root: Path) -> bool:
    """Whether `root` carries a CACHEDIR.TAG that tcl wrote (a regular file, not a link)."""
    try:
        text = read_regular(root / "CACHEDIR.TAG", follow_links=False, limit=4096).decode("utf-8", "replace")
    except OSError:
        return False
    lines = [line.strip() for line in text.splitlines()]
    return bool(lines) and lines[0] == CACHEDIR_SIGNATURE and TCL_CACHE_MARK in lines


def prune_children(parent: Path, keep_count: int, keep: Iterable[str] = (), skip: Iterable[str] = ()) -> None:
    """In a directory already checked to be tcl's (link_in_chain), keep the `keep_count` most
    recently modified entries (counting those named in `keep`, which stay), never touch `skip`,
    and remove the rest without following links: a link is unlinked, a directory rmtree'd."""
    keep, skip = set(keep), set(skip)
    try:
        children = []
        for entry in os.scandir(parent):
            if entry.name in skip or entry.name in keep:
                continue
            children.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
    except OSError:
        return
    children.sort(reverse=True)
    for _, path in children[max(keep_count - len(keep), 0):]:
        remove_tree(path)
