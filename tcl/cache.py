"""A content-hash cache of per-file reports, so an unchanged tree is re-checked in a blink.

Layout (all under `.tcl_cache/` in the project root: the pyproject.toml directory, else cwd)::

    .tcl_cache/
      .gitignore  CACHEDIR.TAG
      v1/<bucket>/<key[:2]>/<key>.json    one FileReport per checked file
      v1/scans/<key>.json                 the project pre-pass (ProjectScan) for a set of files

A report is valid for exactly one input, and every part of that input is in its key:

* **bucket** = hash of the *settings*: tcl's own source code and data (every tcl/**.py and
  tcl/**.json file -- the generated torch facts -- so a
  development checkout never reads results of older code), the tcl version, the Python and
  libcst versions, the selected rule codes, the target torch version and mode, the installed
  distributions (tcl.installed.environment_fingerprint: the class hierarchies of installed
  packages decide which classes are nn.Modules), and the *project fingerprint* (the ProjectScan: which classes of the checked tree are nn.Modules and
  which files the tree holds). Changing any of them starts a new bucket; the oldest buckets
  beyond `KEEP_BUCKETS` are removed.
* **key** = hash of the bucket, the file's path as given, its package, the sha-1 of its decoded
  text, and the string returned by the **dependency-fingerprint hook** (see below).
* Each entry also records the content hash of every file listed in `FileReport.dependencies`
  (other files the analysis read: helpers followed across files). A lookup re-hashes them
  and ignores the entry if any changed.
* Each entry records which other project files' compiled entries the analysis traced
  (`FileReport.other_entries`: those of files the run did not check); the runner ignores an
  entry whose choices differ for the files of the current run.

Dependency-fingerprint hook: a callable `(path, source, package) -> str`. When cross-file
analysis learns that a file's result depends on something the recorded dependencies do not
capture (a module that was looked up and *not* found, a config file, a stub), return a string
that changes whenever that input changes -- e.g. the hash of the names and contents it read.
The runner takes it from `Analyzer.dependency_fingerprint` when the analyzer defines one;
the default is "" (the bucket already covers the whole ProjectScan).

Per-file ignores are applied after the cache (they are not part of the key). Reports with a
timeout or an internal error are never stored. Writes go to a temporary file in the same
directory and are moved into place with os.replace, so concurrent `-j` workers or concurrent
tcl runs never see a half-written entry; an entry that cannot be read or decoded is a miss.
The cache never executes anything it reads: entries are JSON.

Every read, write and deletion goes through tcl.safe_files: the cache is used only when the
root is tcl's (a new or empty directory, which gets tcl's CACHEDIR.TAG, or one that has it) and
neither it nor `v1`, a bucket, a `<key[:2]>` directory or `scans` is a symlink; otherwise one
stderr line says the cache is disabled and nothing in it is touched. Entries are read only as
regular files of at most MAX_ENTRY_BYTES, never through a link.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from . import __version__
from .engine import FileReport
from .findings import FileError, Finding, Note
from .installed import environment_fingerprint
from .safe_files import (
    CACHE_TEMP, CACHEDIR_TAG_TEXT, Refused, is_tcl_cache_dir, link_in_chain, make_real_dirs,
    prune_children, read_regular, sweep_stale_temps, write_new_atomic,
)

CACHE_DIR_NAME = ".tcl_cache"
SCHEMA = "v1"
KEEP_BUCKETS = 8
KEEP_SCANS = 8
SCAN_BUCKET = "scans"
# An entry is a few KB; a cap keeps a planted huge file (or a link to /dev/zero) from filling memory.
MAX_ENTRY_BYTES = 64 << 20
_DECODE_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError)

DependencyFingerprint = Callable[[str, str, str], str]


def no_dependencies(path: str, source: str, package: str) -> str:
    """The default dependency-fingerprint hook: nothing beyond the recorded dependencies."""
    return ""


def content_hash(source: str) -> str:
    return hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()


def _digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode("utf-8", "backslashreplace"))
        h.update(b"\x00")
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of tcl's own source: any change to the analyzer invalidates every entry."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256(__version__.encode())
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json")):  # code and torch_facts data
        try:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        except OSError:
            continue
    return h.hexdigest()


def _libcst_version() -> str:
    try:
        from importlib import metadata

        return metadata.version("libcst")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "?"


def settings_fingerprint(analyzer, project_fingerprint: str = "") -> str:
    """Everything besides the file itself that decides a report."""
    config = analyzer.config
    return _digest(
        SCHEMA,
        code_fingerprint(),
        sys.version_info[:2],
        _libcst_version(),
        sorted(rule.code for rule in analyzer.rules),
        environment_fingerprint(),
        tuple(analyzer.version),
        config.mode,
        sorted(config.assume.items()),
        sorted(getattr(config, "dynamo_config", ())),
        project_fingerprint,
        # what the run starts from and follows (tcl/entries.py, tcl/installed.py)
        getattr(config, "follow_imports", False),
        getattr(config, "show_hidden", False),
        getattr(config, "api_entries", "auto"),
        sorted(spec.text for spec in getattr(analyzer, "entry_specs", ())),
        sorted({spec.file or "" for spec in getattr(analyzer, "entry_specs", ())}),
        # a re-recording whose closures held other classes reaches other code
        sorted(repr(spec.bindings) for spec in getattr(analyzer, "entry_specs", ()) if spec.bindings),
    )[:24]


def default_cache_dir(config, paths: list[str]) -> Path:
    """`.tcl_cache` next to the pyproject.toml that governs the run, else in the cwd."""
    from .config import find_pyproject

    if config.source is not None:
        return config.source.parent / CACHE_DIR_NAME
    try:
        found = find_pyproject(Path(paths[0]) if paths else Path("."))
    except OSError:
        found = None
    return (found.parent if found is not None else Path.cwd()) / CACHE_DIR_NAME


# -- JSON for dataclasses made of str/int/tuple/frozenset (FileReport parts, ProjectScan) ----
def _encode(value: Any) -> Any:
    if isinstance(value, (frozenset, set)):
        return {"__set__": sorted((_encode(v) for v in value), key=repr)}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("only str keys")
        return {"__dict__": {k: _encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__set__" in value:
            return frozenset(_decode(v) for v in value["__set__"])
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _decode(v) for k, v in value["__dict__"].items()}
        raise ValueError("unknown object in cache entry")
    return value


def _to_fields(obj) -> dict:
    return {f.name: _encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def _from_fields(cls, data: dict):
    names = {f.name for f in dataclasses.fields(cls)}
    if set(data) != names:
        raise ValueError(f"{cls.__name__} fields changed")
    return cls(**{k: _decode(v) for k, v in data.items()})


def report_to_json(report: FileReport) -> dict:
    return {
        "findings": [_to_fields(f) for f in report.findings],
        "errors": [_to_fields(e) for e in report.errors],
        "skipped": report.skipped,
        "dependencies": list(getattr(report, "dependencies", []) or []),
        "compiled": list(getattr(report, "compiled", []) or []),
        "other_entries": dict(getattr(report, "other_entries", {}) or {}),
        "notes": [_to_fields(n) for n in getattr(report, "notes", ())],
    }


def report_from_json(path: str, data: dict) -> FileReport:
    report = FileReport(path)
    report.findings = [_from_fields(Finding, f) for f in data["findings"]]
    report.errors = [_from_fields(FileError, e) for e in data["errors"]]
    report.skipped = bool(data["skipped"])
    if hasattr(report, "dependencies"):
        report.dependencies = list(data["dependencies"])
    report.compiled = [list(item) for item in data.get("compiled", [])]
    report.other_entries = {str(path): bool(traced) for path, traced in data.get("other_entries", {}).items()}
    report.notes = [_from_fields(Note, n) for n in data.get("notes", [])]
    return report


def cacheable(report: FileReport) -> bool:
    """Only deterministic outcomes: no timeouts, no internal errors (worth re-running)."""
    return not any(
        "timed out" in e.message or e.message.startswith("internal error") for e in report.errors
    )


class Cache:
    """Per-file reports for one run's settings. Every method swallows I/O problems: a cache
    that cannot be read or written is a slow run, never a failed one."""

    def __init__(self, directory: str | os.PathLike, dependency_fingerprint: DependencyFingerprint | None = None) -> None:
        self.root = Path(directory)
        self.hook = dependency_fingerprint or no_dependencies
        self.bucket: Path | None = None
        self.hits = 0
        self.misses = 0
        self.file_hash: Callable[[str], str | None] = lambda path: None  # set by the runner
        self._dirs_made: set[Path] = set()  # entry directories checked (and swept) this run
        self._usable: bool | None = None

    # -- setup -------------------------------------------------------------------------
    def _prepare_root(self) -> bool:
        """Whether the cache may be used: made or adopted once per Cache (see the docstring)."""
        if self._usable is None:
            try:
                self._adopt_root()
                self._usable = True
            except Refused as refusal:
                self._disable(str(refusal))
            except OSError:
                self._usable = False  # cannot be written (read-only file system): a slow run
        return self._usable

    def _adopt_root(self) -> None:
        root = self.root
        problem = link_in_chain(root, ())
        if problem is not None:
            raise Refused(problem)
        if not os.path.lexists(root):
            root.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(root)
            except FileExistsError:
                pass
            problem = link_in_chain(root, ())
            if problem is not None:
                raise Refused(problem)
        problem = link_in_chain(root, (SCHEMA, SCAN_BUCKET))  # the most telling reason first
        if problem is not None:
            raise Refused(problem)
        if not is_tcl_cache_dir(root):
            if any(not CACHE_TEMP.fullmatch(entry.name) for entry in os.scandir(root)):
                raise Refused(f"{root} is not a tcl cache (it holds files but no CACHEDIR.TAG written by "
                              "tcl); give a new or empty directory")
            _write(root / "CACHEDIR.TAG", CACHEDIR_TAG_TEXT)  # first: it is what makes the root tcl's
        if not os.path.lexists(root / ".gitignore"):
            _write(root / ".gitignore", "# written by tcl: the cache is never committed\n*\n")
        make_real_dirs(root, (SCHEMA,))
        sweep_stale_temps(root, CACHE_TEMP)  # a tag or .gitignore write a killed run left
        sweep_stale_temps(root / SCHEMA / SCAN_BUCKET, CACHE_TEMP)

    def _disable(self, reason: str) -> None:
        """Stop using the cache, saying why once per process and root (a flake8 or pytest run
        makes several Cache objects)."""
        self._usable = False
        self.bucket = None
        if str(self.root) not in _DISABLED_SAID:
            _DISABLED_SAID.add(str(self.root))
            sys.stderr.write(f"tcl: cache disabled: {reason}; nothing in it is read, written or deleted\n")

    def open_bucket(self, settings: str) -> None:
        """Select (and make) the bucket for these settings; prune the least recently used ones."""
        if not self._prepare_root():
            self.bucket = None
            return
        self.bucket = self.root / SCHEMA / settings
        problem = link_in_chain(self.root, (SCHEMA, settings))
        if problem is not None:
            self._disable(problem)
            return
        try:
            if self.bucket.is_dir():
                os.utime(self.bucket)  # most recently used (a real directory: checked above)
            else:
                make_real_dirs(self.root, (SCHEMA, settings))
                prune_children(self.root / SCHEMA, KEEP_BUCKETS, keep=(settings,), skip=(SCAN_BUCKET,))
        except Refused as refusal:
            self._disable(str(refusal))
        except OSError:
            pass

    def _entry_dir_ok(self, directory: Path, make: bool) -> bool:
        """Whether `<bucket>/<key[:2]>` is a real directory (made when `make`), checked once a run;
        its stale temporary files are swept the first time."""
        if directory in self._dirs_made:
            return True
        parts = (SCHEMA, directory.parent.name, directory.name)
        try:
            problem = link_in_chain(self.root, parts)
            if problem is not None:
                raise Refused(problem)
            if make:
                make_real_dirs(self.root, parts)
            elif not directory.is_dir():
                return False
        except Refused as refusal:
            self._disable(str(refusal))
            return False
        except OSError:
            return False
        sweep_stale_temps(directory, CACHE_TEMP)
        self._dirs_made.add(directory)
        return True

    # -- per-file reports ----------------------------------------------------------------
    def key(self, path: str, package: str, digest: str, source: str) -> str:
        try:
            extra = self.hook(path, source, package) or ""
        except Exception:  # a broken hook disables caching for this file, not the run
            return ""
        return _digest(self.bucket.name if self.bucket else "", path, package, digest, extra)

    def _entry(self, key: str) -> Path | None:
        if self.bucket is None or not key:
            return None
        return self.bucket / key[:2] / f"{key}.json"

    def get(self, path: str, key: str, file_hash: Callable[[str], str | None]) -> FileReport | None:
        """The stored report, if its entry is intact and its dependencies are unchanged.
        `file_hash(path)` returns the current content hash of a dependency (None: unreadable)."""
        entry = self._entry(key)
        if entry is None:
            return None
        try:
            if not self._entry_dir_ok(entry.parent, make=False):
                raise FileNotFoundError(entry)
            data = json.loads(_read_entry(entry))
            if data.get("key") != key or data.get("path") != path:
                raise ValueError("entry for another file")
            for dependency, digest in data["dependency_hashes"].items():
                if file_hash(dependency) != digest:
                    self.misses += 1
                    return None
            report = report_from_json(path, data["report"])
        except _DECODE_ERRORS:
            self.misses += 1
            return None  # missing, corrupt, or from an incompatible schema: analyse again
        self.hits += 1
        return report

    def put(self, path: str, key: str, report: FileReport, file_hash: Callable[[str], str | None]) -> None:
        entry = self._entry(key)
        if entry is None or not cacheable(report):
            return
        try:
            dependency_hashes = {}
            for dependency in getattr(report, "dependencies", []) or []:
                digest = file_hash(dependency)
                if digest is None:
                    return  # cannot prove it unchanged later: do not store
                dependency_hashes[dependency] = digest
            payload = {
                "key": key,
                "path": path,
                "dependency_hashes": dependency_hashes,
                "report": report_to_json(report),
            }
            text = json.dumps(payload, separators=(",", ":"))
        except (TypeError, ValueError):
            return
        try:
            if self._entry_dir_ok(entry.parent, make=True):
                _write(entry, text)
        except OSError:
            pass

    # -- the project pre-pass ------------------------------------------------------------
    def scan(self, files: Iterable[tuple[str, str | None]], compute: Callable[[], Any]) -> Any:
        """The ProjectScan for these (path, content hash) pairs: stored, or computed and stored."""
        files = list(files)
        if not self._prepare_root() or any(digest is None for _, digest in files):
            return compute()
        key = _digest(SCHEMA, code_fingerprint(), sys.version_info[:2], environment_fingerprint(), files)
        directory = self.root / SCHEMA / SCAN_BUCKET
        entry = directory / f"{key}.json"
        result = None
        try:
            data = json.loads(_read_entry(entry))
            if data.get("key") == key:
                from .project import ProjectScan

                result = _from_fields(ProjectScan, data["scan"])
                if os.utime in os.supports_follow_symlinks:
                    os.utime(entry, follow_symlinks=False)
        except (*_DECODE_ERRORS, ImportError):
            result = None
        if result is not None:
            return result
        result = compute()
        try:
            text = json.dumps({"key": key, "scan": _to_fields(result)}, separators=(",", ":"))
            make_real_dirs(self.root, (SCHEMA, SCAN_BUCKET))
            _write(entry, text)
            prune_children(directory, KEEP_SCANS, keep=(entry.name,))
        except Refused as refusal:
            self._disable(str(refusal))
        except (OSError, TypeError, ValueError):
            pass
        return result


def project_fingerprint(scan_result) -> str:
    """A stable hash of a ProjectScan (any dataclass of str/tuple/frozenset fields)."""
    try:
        return _digest(json.dumps(_to_fields(scan_result), sort_keys=True))
    except (TypeError, ValueError):
        return _digest(repr(scan_result))


_DISABLED_SAID: set[str] = set()


def _read_entry(entry: Path) -> str:
    """An entry's text: a regular file, not a link, at most MAX_ENTRY_BYTES (else OSError)."""
    return read_regular(entry, follow_links=False, limit=MAX_ENTRY_BYTES).decode("utf-8")


def _write(target: Path, text: str) -> None:
    """Atomically, never through a link at `target` (see tcl.safe_files.write_new_atomic)."""
    write_new_atomic(target, text.encode("utf-8"), temp_prefix=".tmp-", temp_suffix=".json")
