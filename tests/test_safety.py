"""tcl never harms the user's files (issue 14, items 1-3, 6 and 8; docs/safety.md).

Each case of the issue is rebuilt in tmp_path and run as the real command (`python -m tcl`):
a cache that is a symlink or not tcl's is never pruned, `fix --apply` refuses symlinks, hard
links, read-only and other users' files and directories linked out of the tree (unless
--force-write), keeps mode and owner, nothing blocks on a FIFO or reads /dev/zero, and the temp
files a killed run leaves are removed by the next one. Every subprocess has a timeout, so a
regression to blocking fails instead of hanging.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from tcl import safe_files
from tcl.cache import KEEP_BUCKETS

fcntl = pytest.importorskip("fcntl")  # POSIX: FIFOs, flock, hard links and owners as tested here

FIXABLE = textwrap.dedent('''\
    import torch

    @torch.compile
    def step(x):
        print(x)
        return x
''')
FIXED_LINE = "    if not torch.compiler.is_compiling():\n"
FINDING = ":5:5: TCL101 "
TIMEOUT = 120


def tcl(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tcl", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=TIMEOUT)


def snapshot(directory):
    """Every path below `directory` (links not followed) with its bytes, link target or 'dir'."""
    result = {}
    for base, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(base, name)
            relative = os.path.relpath(path, directory)
            if os.path.islink(path):
                result[relative] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                result[relative] = "dir"
            else:
                with open(path, "rb") as handle:
                    result[relative] = handle.read()
    return result


def victim_tree(path, count=20):
    """A directory that looks like cache buckets to a pruner: `count` old subdirectories with a
    file each, and `count` old plain files."""
    path.mkdir()
    for i in range(count):
        (path / f"d{i:02}").mkdir()
        (path / f"d{i:02}" / "keep.txt").write_text(f"precious {i}\n")
        (path / f"f{i:02}.json").write_text(f"{{\"precious\": {i}}}\n")
        old = time.time() - 86400 - i
        os.utime(path / f"d{i:02}", (old, old))
        os.utime(path / f"f{i:02}.json", (old, old))
    return snapshot(path)


def two_files(tree):
    """Two checked files (a project scan, so `v1/scans` is used too), one with a finding."""
    tree.mkdir(exist_ok=True)
    (tree / "a.py").write_text(FIXABLE)
    (tree / "b.py").write_text("import torch\n\nclass M(torch.nn.Module):\n    pass\n")


def one_line_on_stderr(result, text):
    lines = [line for line in result.stderr.splitlines() if text in line]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# -- item 1: the cache never deletes outside itself ------------------------------------------
def test_symlinked_v1_is_never_pruned(tmp_path):
    before = victim_tree(tmp_path / "victim")
    tree = tmp_path / "repo"
    two_files(tree)
    (tree / ".tcl_cache").mkdir()
    # A cloned repo may ship tcl's own tag too: the link still disables the cache.
    (tree / ".tcl_cache" / "CACHEDIR.TAG").write_text(safe_files.CACHEDIR_TAG_TEXT)
    (tree / ".tcl_cache" / "v1").symlink_to(tmp_path / "victim")
    for _ in range(2):
        result = tcl("check", "--no-config", ".", cwd=tree)
        assert result.returncode == 1 and "a.py" + FINDING in result.stdout
        line = one_line_on_stderr(result, "cache disabled")
        assert "v1 is a symlink" in line
    assert snapshot(tmp_path / "victim") == before


def test_symlinked_scans_is_never_pruned(tmp_path):
    before = victim_tree(tmp_path / "victim")
    tree = tmp_path / "repo"
    two_files(tree)
    assert tcl("check", "--no-config", ".", cwd=tree).returncode == 1  # a real cache of tcl's
    scans = tree / ".tcl_cache" / "v1" / "scans"
    assert scans.is_dir()
    for entry in scans.iterdir():
        entry.unlink()
    scans.rmdir()
    scans.symlink_to(tmp_path / "victim")
    (tree / "b.py").write_text("import torch\n")  # a new file set: a scan is computed and stored
    result = tcl("check", "--no-config", ".", cwd=tree)
    assert result.returncode == 1 and "a.py" + FINDING in result.stdout
    assert "scans is a symlink" in one_line_on_stderr(result, "cache disabled")
    assert snapshot(tmp_path / "victim") == before


def test_a_symlinked_entry_directory_disables_the_cache(tmp_path):
    before = victim_tree(tmp_path / "victim")
    tree = tmp_path / "repo"
    two_files(tree)
    cold = tcl("check", "--no-config", ".", cwd=tree)
    buckets = [p for p in (tree / ".tcl_cache" / "v1").iterdir() if p.name != "scans"]
    for directory in [d for bucket in buckets for d in bucket.iterdir()]:
        for entry in directory.iterdir():
            entry.unlink()
        directory.rmdir()
        directory.symlink_to(tmp_path / "victim")
    warm = tcl("check", "--no-config", ".", cwd=tree)
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout)
    assert "is a symlink" in one_line_on_stderr(warm, "cache disabled")
    assert snapshot(tmp_path / "victim") == before


def test_cache_dir_over_a_foreign_directory_is_left_alone(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    before_v1 = victim_tree(foreign / "v1")
    (foreign / "notes.txt").write_text("mine\n")
    tree = tmp_path / "repo"
    two_files(tree)
    result = tcl("check", "--no-config", "--cache-dir", str(foreign), ".", cwd=tree)
    assert result.returncode == 1 and "a.py" + FINDING in result.stdout
    assert "is not a tcl cache" in one_line_on_stderr(result, "cache disabled")
    assert snapshot(foreign / "v1") == before_v1
    assert sorted(os.listdir(foreign)) == ["notes.txt", "v1"]  # no tag, no .gitignore written


def test_cache_dir_that_is_empty_is_adopted(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    tree = tmp_path / "repo"
    two_files(tree)
    cold = tcl("check", "--no-config", "--cache-dir", str(empty), ".", cwd=tree)
    warm = tcl("check", "--no-config", "--cache-dir", str(empty), ".", cwd=tree)
    assert (cold.returncode, cold.stdout, cold.stderr) == (warm.returncode, warm.stdout, warm.stderr)
    assert safe_files.is_tcl_cache_dir(empty) and list(empty.rglob("*.json"))


def test_a_planted_bucket_link_is_unlinked_not_followed(tmp_path):
    before = victim_tree(tmp_path / "victim")
    tree = tmp_path / "repo"
    two_files(tree)
    assert tcl("check", "--no-config", ".", cwd=tree).returncode == 1
    v1 = tree / ".tcl_cache" / "v1"
    old = time.time() - 10 * 86400
    for i in range(KEEP_BUCKETS + 2):  # enough old buckets that pruning removes some
        (v1 / f"planted{i}").symlink_to(tmp_path / "victim")
        os.utime(v1 / f"planted{i}", (old, old), follow_symlinks=False)
    (tree / "a.py").write_text(FIXABLE + "\n")  # a new project fingerprint: a new bucket, a prune
    (tree / "b.py").write_text("import torch\n\nclass N(torch.nn.Module):\n    pass\n")
    result = tcl("check", "--no-config", ".", cwd=tree)
    assert result.returncode == 1 and "cache disabled" not in result.stderr
    assert snapshot(tmp_path / "victim") == before
    assert len([p for p in v1.iterdir() if p.is_symlink()]) < KEEP_BUCKETS + 2


# -- item 6 (cache part): FIFOs and /dev/zero as entries -------------------------------------
@pytest.mark.parametrize("which", ["report", "scan"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_special_cache_entries_are_misses(tmp_path, kind, which):
    tree = tmp_path / "repo"
    two_files(tree)
    cold = tcl("check", "--no-config", ".", cwd=tree)
    cache = tree / ".tcl_cache" / "v1"
    if which == "scan":
        entries = list((cache / "scans").glob("*.json"))
    else:
        entries = [p for p in cache.glob("*/*/*.json") if p.parent.parent.name != "scans"]
    assert entries
    for entry in entries:
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        else:
            entry.symlink_to("/dev/zero")
    warm = tcl("check", "--no-config", ".", cwd=tree)  # a hang fails through TIMEOUT
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert all(entry.is_file() and not entry.is_symlink() for entry in entries)  # rewritten as files


def test_a_huge_cache_entry_is_not_read(tmp_path, monkeypatch):
    from tcl import cache

    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 100)
    entry = tmp_path / "e.json"
    entry.write_text(json.dumps({"pad": "x" * 200}))
    with pytest.raises(OSError, match="larger than 100 bytes"):
        cache._read_entry(entry)


# -- item 6 (source part): a file swapped for a FIFO after discovery --------------------------
SWAP_AFTER_DISCOVERY = textwrap.dedent('''\
    import os, sys
    import tcl.runner as runner
    from tcl.cli import main

    discovered = runner.collect_files

    def collect_then_swap(paths, config, root="."):
        files, errors = discovered(paths, config, root)
        os.unlink("swapped.py")
        os.mkfifo("swapped.py")  # discovery saw a regular file; the read now meets a FIFO
        return files, errors

    runner.collect_files = collect_then_swap
    sys.exit(main(sys.argv[1:]))
''')


@pytest.mark.parametrize("command", [["check", "--no-cache"], ["check", "--no-cache", "-j1"], ["fix", "--apply"]])
def test_source_swapped_for_a_fifo_does_not_block(tmp_path, command):
    (tmp_path / "good.py").write_text(FIXABLE)
    (tmp_path / "swapped.py").write_text(FIXABLE)
    result = subprocess.run([sys.executable, "-c", SWAP_AFTER_DISCOVERY, *command, "--no-config", "."],
                            capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT)
    assert result.returncode == 2, result.stderr
    line = one_line_on_stderr(result, "swapped.py")
    assert line == "swapped.py: cannot read: not a regular file (a FIFO)"
    if command[0] == "check":
        assert "good.py" + FINDING in result.stdout
    else:
        assert FIXED_LINE in (tmp_path / "good.py").read_text()


def test_read_regular_refuses_fifos_and_devices_without_opening(tmp_path):
    fifo = tmp_path / "x.py"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="a FIFO"):
        safe_files.read_regular(fifo)
    with pytest.raises(OSError, match="a character device"):
        safe_files.read_regular("/dev/zero")
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "x.py")
    with pytest.raises(OSError):
        safe_files.read_regular(link, follow_links=False)


# -- items 2 and 3: what fix --apply refuses, and what --force-write does ---------------------
def fix(tree, *extra):
    return tcl("fix", "--apply", "--no-config", *extra, ".", cwd=tree)


def refused(result, name, reason):
    assert result.returncode == 2, result.stderr
    line = one_line_on_stderr(result, f"{name}: not written:")
    assert reason in line and line.endswith("--force-write writes it anyway"), line
    return line


def test_fix_does_not_write_through_a_directory_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lib.py").write_text(FIXABLE)
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "own.py").write_text(FIXABLE)
    (tree / "vendor").symlink_to(outside)
    result = fix(tree)
    refused(result, os.path.join("vendor", "lib.py"), "outside the checked tree")
    assert (outside / "lib.py").read_text() == FIXABLE
    assert FIXED_LINE in (tree / "own.py").read_text()  # the rest of the run goes on
    forced = fix(tree, "--force-write")
    assert forced.returncode == 1, forced.stderr
    assert FIXED_LINE in (outside / "lib.py").read_text()


def test_fix_keeps_a_file_symlink_a_symlink(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(FIXABLE)
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside)
    result = fix(tree)
    refused(result, "link.py", "is a symlink")
    assert (tree / "link.py").is_symlink() and outside.read_text() == FIXABLE
    forced = fix(tree, "--force-write")
    assert forced.returncode == 1, forced.stderr
    assert (tree / "link.py").is_symlink() and os.readlink(tree / "link.py") == str(outside)
    assert FIXED_LINE in outside.read_text()


def test_fix_does_not_split_hard_links(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    os.link(tree / "a.py", tmp_path / "other-name.py")
    result = fix(tree)
    refused(result, "a.py", "has 2 hard links")
    assert os.stat(tree / "a.py").st_nlink == 2 and (tmp_path / "other-name.py").read_text() == FIXABLE
    forced = fix(tree, "--force-write")
    assert forced.returncode == 1, forced.stderr
    assert FIXED_LINE in (tree / "a.py").read_text() and (tmp_path / "other-name.py").read_text() == FIXABLE


def test_fix_refuses_a_read_only_file_and_forced_keeps_it_read_only(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    os.chmod(tree / "a.py", 0o444)
    result = fix(tree)
    refused(result, "a.py", "is read-only (mode 0444)")
    assert (tree / "a.py").read_text() == FIXABLE
    forced = fix(tree, "--force-write")
    assert forced.returncode == 1, forced.stderr
    assert FIXED_LINE in (tree / "a.py").read_text()
    assert stat.S_IMODE(os.stat(tree / "a.py").st_mode) == 0o444


def test_fix_keeps_the_mode(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    os.chmod(tree / "a.py", 0o751)
    result = fix(tree)
    assert result.returncode == 1, result.stderr
    assert FIXED_LINE in (tree / "a.py").read_text()
    assert stat.S_IMODE(os.stat(tree / "a.py").st_mode) == 0o751


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_fix_as_root_refuses_another_users_file_and_forced_keeps_its_owner(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    os.chmod(tree / "a.py", 0o640)  # the issue's case: root:root would lock the owner out
    os.chown(tree / "a.py", 12345, 12346)
    result = fix(tree)
    refused(result, "a.py", "owned by another user (uid 12345)")
    assert (tree / "a.py").read_text() == FIXABLE
    forced = fix(tree, "--force-write")
    assert forced.returncode == 1, forced.stderr
    st = os.stat(tree / "a.py")
    assert FIXED_LINE in (tree / "a.py").read_text()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (12345, 12346, 0o640)


def test_own_file_keeps_its_group(tmp_path):
    """Running as the owner (root here, or any user): the group of the file is kept."""
    path = tmp_path / "a.py"
    path.write_bytes(b"a = 1\n")
    groups = os.getgroups() if os.geteuid() != 0 else [12346]
    os.chown(path, -1, groups[-1])
    safe_files.replace_file(str(path), b"a = 2\n", safe_files.sha256(b"a = 1\n"))
    assert path.read_bytes() == b"a = 2\n" and os.stat(path).st_gid == groups[-1]


def test_diffs_without_apply_are_shown_for_refused_files(tmp_path):
    """Refusals are about writing: a plain `tcl fix` still shows the diff and writes nothing."""
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    os.chmod(tree / "a.py", 0o444)
    result = tcl("fix", "--no-config", ".", cwd=tree)
    assert result.returncode == 1 and "+" + FIXED_LINE in result.stdout
    assert "not written" not in result.stderr and (tree / "a.py").read_text() == FIXABLE


def test_force_write_is_in_help():
    result = tcl("fix", "--help", cwd=".")
    assert "--force-write" in result.stdout and "hard-linked" in result.stdout


# -- item 8: temporary files left by a killed run --------------------------------------------
KILLED_AT_REPLACE = textwrap.dedent('''\
    import os, signal, sys
    from tcl.fixing import writer

    path = sys.argv[1]
    with open(path, "rb") as handle:
        data = handle.read()
    os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # dies with its temp file there
    writer.write_atomic(path, data + b"# changed\\n", writer.digest(data))
''')


def backdate(path, seconds=60):
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def test_a_killed_fix_leaves_a_temp_file_the_next_fix_removes(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_REPLACE, str(tree / "a.py")],
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert killed.returncode == -signal.SIGKILL
    (left,) = [p for p in tree.iterdir() if p.name.endswith(".tcl-fix")]
    assert safe_files.FIX_TEMP.fullmatch(left.name) and (tree / "a.py").read_text() == FIXABLE
    backdate(left)
    result = fix(tree)
    assert result.returncode == 1, result.stderr
    line = one_line_on_stderr(result, "interrupted run")
    assert left.name in line and not left.exists()
    assert sorted(p.name for p in tree.iterdir()) == ["a.py"]


def test_only_tcl_stale_unlocked_regular_temp_files_are_removed(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "a.py").write_text(FIXABLE)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    stale = tree / ".a.py.k3j2h1g0.tcl-fix"       # what tempfile.mkstemp named them before
    young = tree / ".a.py.0123abcd.tcl-fix"       # another fix may be writing it right now
    locked = tree / ".a.py.feedbeef.tcl-fix"      # held by a live process
    link = tree / ".b.py.deadbeef.tcl-fix"        # a link is never followed nor removed
    fifo = tree / ".c.py.cafebabe.tcl-fix"
    unrelated = tree / ".a.py.notours.tcl-fix.bak"
    for path in (stale, young, locked, unrelated):
        path.write_text("partial\n")
    link.symlink_to(victim)
    os.mkfifo(fifo)
    for path in (stale, locked, link, fifo, unrelated):
        backdate(path)
    with open(locked, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        result = fix(tree)
    assert result.returncode == 1, result.stderr
    assert not stale.exists()
    assert all(os.path.lexists(p) for p in (young, locked, link, fifo, unrelated))
    assert victim.read_text() == "precious\n"
    assert one_line_on_stderr(result, "interrupted run")


def test_stale_cache_temp_files_are_removed(tmp_path):
    tree = tmp_path / "repo"
    two_files(tree)
    assert tcl("check", "--no-config", ".", cwd=tree).returncode == 1
    cache = tree / ".tcl_cache"
    (entry,) = [p for p in cache.glob("v1/*/*/*.json") if p.parent.parent.name != "scans"][:1]
    planted = [cache / ".tmp-abcd1234.json", entry.parent / ".tmp-k3j2h1g0.json", cache / "v1" / "scans" / ".tmp-zz99yy88.json"]
    young = entry.parent / ".tmp-young000.json"
    for path in planted + [young]:
        path.write_text("{")
    for path in planted:
        backdate(path)
    result = tcl("check", "--no-config", ".", cwd=tree)  # warm: the entry directory is read, swept
    assert result.returncode == 1 and result.stderr == ""
    assert not any(p.exists() for p in planted) and young.exists()


# -- item 6 of the brief: verify's and bench's temporary files --------------------------------
def test_bench_copies_are_private_and_never_written_through_links(tmp_path):
    from tcl.bench import copy_for_fixing

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "model.py").write_text("a = 1\n")
    (tmp_path / "two" / "model.py").write_text("a = 2\n")
    work = safe_files.private_temp_dir("tcl_test_")
    try:
        assert stat.S_IMODE(os.stat(work).st_mode) == 0o700
        first = copy_for_fixing(str(tmp_path / "one" / "model.py"), work, 0)
        second = copy_for_fixing(str(tmp_path / "two" / "model.py"), work, 1)
        assert open(first).read() == "a = 1\n" and open(second).read() == "a = 2\n"
        fifo = tmp_path / "fifo.py"
        os.mkfifo(fifo)
        with pytest.raises(OSError, match="a FIFO"):
            copy_for_fixing(str(fifo), work, 2)
    finally:
        safe_files.remove_tree(work)
    assert not os.path.exists(work)


def test_open_new_never_writes_through_a_link(tmp_path):
    target = tmp_path / "user-file.py"
    target.write_text("mine\n")
    planted = tmp_path / "child1.job.json"
    planted.symlink_to(target)
    with pytest.raises(FileExistsError):
        safe_files.open_new(planted)
    dangling = tmp_path / "child2.stderr"
    dangling.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(FileExistsError):
        safe_files.open_new(dangling, "wb")
    with pytest.raises(OSError):
        safe_files.open_append(planted)
    assert target.read_text() == "mine\n" and not (tmp_path / "would-be-created").exists()


def test_remove_tree_unlinks_a_link_and_keeps_its_target(tmp_path):
    before = victim_tree(tmp_path / "victim", count=3)
    (tmp_path / "work").symlink_to(tmp_path / "victim")
    safe_files.remove_tree(tmp_path / "work")
    assert not os.path.lexists(tmp_path / "work") and snapshot(tmp_path / "victim") == before


def test_verify_runner_files_are_created_in_its_private_directory(tmp_path):
    from tcl.verify.examples import Runner

    work = safe_files.private_temp_dir("tcl_verify_test_")
    try:
        os.symlink(tmp_path / "outside.json", os.path.join(work, "child1.job.json"))
        runner = Runner(argparse.Namespace(), "cpu", [], [], work, 1)
        with pytest.raises(FileExistsError):
            runner._start({"source": None}, 0)
        assert not (tmp_path / "outside.json").exists()
    finally:
        safe_files.remove_tree(work)
    assert not os.path.exists(work)


def test_recording_temp_file_is_never_written_through_a_link(tmp_path):
    import zipfile

    from tcl.recording import merge_parts

    part = tmp_path / "rec.zip.gw0.part"
    with zipfile.ZipFile(part, "w") as archive:
        archive.writestr("index.json", json.dumps({"records": [], "problems": [], "torch": "2.13"}))
    target = tmp_path / "user-file.py"
    target.write_text("mine\n")
    recording = tmp_path / "rec.zip"
    os.symlink(target, f"{recording}.{os.getpid()}.tmp")  # a predictable name, planted
    with pytest.raises(FileExistsError):
        merge_parts(str(recording), [str(part)], str(tmp_path))
    assert target.read_text() == "mine\n" and not recording.exists()
    os.unlink(f"{recording}.{os.getpid()}.tmp")
    (tmp_path / f"rec.zip.{os.getpid()}.tmp").write_text("left by a killed session")
    assert merge_parts(str(recording), [str(part)], str(tmp_path))["records"] == []
    assert zipfile.ZipFile(recording).namelist() == ["index.json"]
