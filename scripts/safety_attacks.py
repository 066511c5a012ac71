"""Re-run the hostile-tree attacks of issue 14 (items 1-3, 6 and 8) against `python -m tcl` and
flake8, and print tries / failures per area: the cache deleting or writing outside itself, reads
that block or fill memory, `fix --apply` writing through links or over protection, races between
fix's read and write, and temp files a SIGKILL leaves.

    python scripts/safety_attacks.py          # about a minute on 2 shared cores

Every case builds its own temporary directory with a victim tree next to the checked tree and
checks the victim is byte-for-byte unchanged (or, for fix, the one-line refusal and the files'
contents, mode and owner). Owner cases need root (they chown to uid 12345); they are skipped
otherwise. tests/test_safety.py holds the same cases as tests; this script adds variants.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

FIXABLE = "import torch\n\n@torch.compile\ndef step(x):\n    print(x)\n    return x\n"
MODULE = "import torch\n\nclass M(torch.nn.Module):\n    pass\n"
TCL_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# tcl cache directory\n"
FINDING = "a.py:5:5: TCL101"
TIMEOUT = 90
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

results: dict[str, list[tuple[str, bool, str]]] = {}


def record(area: str, name: str, ok: bool, detail: str = "") -> None:
    results.setdefault(area, []).append((name, ok, "" if ok else detail))


def run(command: list[str], cwd: str, timeout: float = TIMEOUT):
    """The finished process, or None when it ran past `timeout` (a hang is a failure)."""
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def tcl(*args: str) -> list[str]:
    return [sys.executable, "-m", "tcl", *args]


def tail(result) -> str:
    return "timeout" if result is None else result.stderr[-300:]


def snapshot(directory: str) -> dict:
    """Every path below `directory`, links not followed: bytes, link target or 'dir'."""
    found = {}
    for base, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.islink(path):
                found[os.path.relpath(path, directory)] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[os.path.relpath(path, directory)] = "dir"
            else:
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, directory)] = handle.read()
    return found


def backdate(path: str, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


class Scene:
    """A temporary directory with `victim/` (old bucket-like dirs and files) and `repo/` (a.py with
    one fixable finding, b.py with a module class: two files, so the project scan is cached)."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="tcl_attack_")
        self.victim = os.path.join(self.root, "victim")
        self.repo = os.path.join(self.root, "repo")
        os.mkdir(self.victim)
        for i in range(15):
            os.mkdir(f"{self.victim}/d{i}")
            with open(f"{self.victim}/d{i}/keep", "w") as handle:
                handle.write("precious")
            with open(f"{self.victim}/f{i}.json", "w") as handle:
                handle.write("{}")
            backdate(f"{self.victim}/d{i}", 86400 + i)
            backdate(f"{self.victim}/f{i}.json", 86400 + i)
        self.victim_before = snapshot(self.victim)
        os.mkdir(self.repo)
        self.write("a.py", FIXABLE)
        self.write("b.py", MODULE)

    def path(self, relative: str) -> str:
        return os.path.join(self.repo, relative)

    def write(self, relative: str, text: str) -> None:
        os.makedirs(os.path.dirname(self.path(relative)), exist_ok=True)
        with open(self.path(relative), "w") as handle:
            handle.write(text)

    def read(self, path: str) -> str:
        with open(path) as handle:
            return handle.read()

    def victim_intact(self) -> bool:
        return snapshot(self.victim) == self.victim_before

    def plant_tcl_cache(self) -> str:
        """A `.tcl_cache` with tcl's tag, as a cloned repository could ship it."""
        cache = self.path(".tcl_cache")
        os.mkdir(cache)
        with open(f"{cache}/CACHEDIR.TAG", "w") as handle:
            handle.write(TCL_TAG)
        return cache

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# -- area: the cache never deletes or writes outside itself -----------------------------------
def cache_case(name: str, plant, command=None) -> None:
    scene = Scene()
    try:
        extra = plant(scene) or []
        ok, result = True, None
        for _ in range(2):
            result = run(command or tcl("check", "--no-config", *extra, "."), scene.repo)
            ok &= result is not None and "Traceback" not in result.stderr and FINDING in result.stdout
        record("cache", name, ok and scene.victim_intact(), tail(result))
    finally:
        scene.close()


def root_is_link(scene):
    os.symlink(scene.victim, scene.path(".tcl_cache"))


def v1_is_link(scene):
    os.mkdir(scene.path(".tcl_cache"))
    os.symlink(scene.victim, scene.path(".tcl_cache/v1"))


def v1_is_link_tag_planted(scene):
    os.symlink(scene.victim, scene.plant_tcl_cache() + "/v1")


def scans_is_link(scene):
    cache = scene.plant_tcl_cache()
    os.mkdir(f"{cache}/v1")
    os.symlink(scene.victim, f"{cache}/v1/scans")


def planted_bucket_links(scene):
    cache = scene.plant_tcl_cache()
    os.mkdir(f"{cache}/v1")
    for i in range(12):  # more than KEEP_BUCKETS, all older than the bucket this run makes
        os.symlink(scene.victim, f"{cache}/v1/b{i}")
        backdate(f"{cache}/v1/b{i}", 9e5)


def entry_dirs_are_links(scene):
    run(tcl("check", "--no-config", "."), scene.repo)
    v1 = scene.path(".tcl_cache/v1")
    for bucket in os.listdir(v1):
        if bucket == "scans":
            continue
        for sub in os.listdir(f"{v1}/{bucket}"):
            shutil.rmtree(f"{v1}/{bucket}/{sub}")
            os.symlink(scene.victim, f"{v1}/{bucket}/{sub}")


def cache_dir_is_the_victim(scene):
    return ["--cache-dir", scene.victim]


def cache_dir_has_foreign_v1(scene):
    foreign = os.path.join(scene.root, "foreign")
    os.mkdir(foreign)
    os.symlink(scene.victim, f"{foreign}/v1")
    return ["--cache-dir", foreign]


def cache_dir_is_a_file(scene):
    with open(os.path.join(scene.root, "afile"), "w") as handle:
        handle.write("x")
    return ["--cache-dir", os.path.join(scene.root, "afile")]


def gitignore_links_to_victim(scene):
    os.symlink(f"{scene.victim}/f0.json", scene.plant_tcl_cache() + "/.gitignore")


def tag_is_a_link(scene):
    cache = scene.path(".tcl_cache")
    os.mkdir(cache)
    with open(os.path.join(scene.root, "TAG"), "w") as handle:
        handle.write(TCL_TAG)
    os.symlink(os.path.join(scene.root, "TAG"), f"{cache}/CACHEDIR.TAG")
    os.symlink(scene.victim, f"{cache}/v1")


def cache_area() -> None:
    cache_case(".tcl_cache is a symlink", root_is_link)
    cache_case("v1 is a symlink", v1_is_link)
    cache_case("v1 is a symlink, tcl's tag planted", v1_is_link_tag_planted)
    cache_case("v1/scans is a symlink", scans_is_link)
    cache_case("12 planted bucket links", planted_bucket_links)
    cache_case("entry <xx> directories are symlinks", entry_dirs_are_links)
    cache_case("--cache-dir is the victim itself", cache_dir_is_the_victim)
    cache_case("--cache-dir DIR with DIR/v1 a link", cache_dir_has_foreign_v1)
    cache_case("--cache-dir is a regular file", cache_dir_is_a_file)
    cache_case(".gitignore links to a victim file", gitignore_links_to_victim)
    cache_case("CACHEDIR.TAG is a link", tag_is_a_link)
    cache_case("flake8 with v1 a symlink", v1_is_link,
               [sys.executable, "-m", "flake8", "--select", "TCL", "."])


# -- area: nothing blocks or fills memory ------------------------------------------------------
def cache_entries(scene, which: str) -> list[str]:
    v1 = scene.path(".tcl_cache/v1")
    if which == "scan":
        return [f"{v1}/scans/{name}" for name in os.listdir(f"{v1}/scans")]
    return [os.path.join(v1, bucket, sub, name) for bucket in os.listdir(v1) if bucket != "scans"
            for sub in os.listdir(f"{v1}/{bucket}") for name in os.listdir(f"{v1}/{bucket}/{sub}")]


def special_entry(name: str, which: str, make) -> None:
    scene = Scene()
    try:
        cold = run(tcl("check", "--no-config", "."), scene.repo)
        for entry in cache_entries(scene, which):
            os.unlink(entry)
            make(entry)
        warm = run(tcl("check", "--no-config", "."), scene.repo, timeout=60)
        same = warm is not None and (warm.returncode, warm.stdout, warm.stderr) == (
            cold.returncode, cold.stdout, cold.stderr)
        record("blocking", f"{which} entry: {name}", same, tail(warm))
    finally:
        scene.close()


def write_file(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def fifo_behind_link(path: str) -> None:
    os.mkfifo(path + ".fifo")
    os.symlink(path + ".fifo", path)


SWAP_AFTER_DISCOVERY = textwrap.dedent('''\
    import os, sys
    import tcl.runner as runner
    from tcl.cli import main
    discovered = runner.collect_files
    def collect_then_swap(paths, config, root="."):
        files, errors = discovered(paths, config, root)
        os.unlink("a.py")
        MAKE
        return files, errors
    runner.collect_files = collect_then_swap
    sys.exit(main(sys.argv[1:]))
''')


def swapped_source(label: str, make: str, command: list[str]) -> None:
    scene = Scene()
    try:
        if "-j2" in command:  # enough files for the parallel path
            for i in range(40):
                scene.write(f"m{i}.py", MODULE)
        script = SWAP_AFTER_DISCOVERY.replace("MAKE", make)
        result = run([sys.executable, "-c", script, *command, "--no-config", "."], scene.repo)
        ok = (result is not None and "Traceback" not in result.stderr
              and "a.py: cannot read: not a regular file" in result.stderr)
        record("blocking", f"source swapped for {label}: tcl {' '.join(command)}", ok, tail(result))
    finally:
        scene.close()


def blocking_area() -> None:
    for which in ("report", "scan"):
        special_entry("FIFO", which, os.mkfifo)
        special_entry("link to /dev/zero", which, lambda e: os.symlink("/dev/zero", e))
        special_entry("link to /dev/urandom", which, lambda e: os.symlink("/dev/urandom", e))
        special_entry("link to a FIFO", which, fifo_behind_link)
        special_entry("a directory", which, os.mkdir)
        special_entry("JSON nested 200,000 deep", which, lambda e: write_file(e, b"[" * 200_000))
        special_entry("70 MB of spaces", which, lambda e: write_file(e, b" " * (70 << 20)))
    swaps = (("a FIFO", 'os.mkfifo("a.py")'), ("a link to /dev/zero", 'os.symlink("/dev/zero", "a.py")'),
             ("a link to a FIFO", 'os.mkfifo("x.fifo"); os.symlink("x.fifo", "a.py")'))
    commands = (["check", "--no-cache", "-j1"], ["check", "-j1"], ["check", "--no-cache", "-j2"],
                ["fix", "--apply"], ["fix"])
    for label, make in swaps:
        for command in commands:
            swapped_source(label, make, command)


# -- area: what fix --apply writes -------------------------------------------------------------
def fix_case(name: str, plant, check, args=("--apply", "--no-config", "."), needs_root=False) -> None:
    if needs_root and not AS_ROOT:
        return
    scene = Scene()
    try:
        os.unlink(scene.path("b.py"))
        os.unlink(scene.path("a.py"))
        plant(scene)
        result = run(tcl("fix", *args), scene.repo)
        try:
            ok = result is not None and "Traceback" not in result.stderr and check(scene, result)
        except OSError:
            ok = False
        record("fix", name, ok, tail(result))
    finally:
        scene.close()


def refused(result, name: str, reason: str) -> bool:
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{name}: not written:")]
    return result.returncode == 2 and len(lines) == 1 and reason in lines[0]


def fixed(text: str) -> bool:
    return "is_compiling()" in text


def outside_dir_linked(scene, at="vendor"):
    os.mkdir(f"{scene.root}/out")
    write_file(f"{scene.root}/out/x.py", FIXABLE.encode())
    os.makedirs(os.path.dirname(scene.path(at)) or scene.repo, exist_ok=True)
    os.symlink(f"{scene.root}/out", scene.path(at))


def inside_dir_linked(scene):
    scene.write("pkg/x.py", FIXABLE)
    os.mkdir(scene.path("sub"))
    os.symlink(scene.path("pkg"), scene.path("sub/alias"))


def outside_file_linked(scene):
    write_file(f"{scene.root}/o.py", FIXABLE.encode())
    os.symlink(f"{scene.root}/o.py", scene.path("l.py"))


def inside_file_linked(scene):
    scene.write("o.py", FIXABLE)
    os.symlink("o.py", scene.path("l.py"))


def hard_linked(scene):
    scene.write("a.py", FIXABLE)
    os.link(scene.path("a.py"), f"{scene.root}/h.py")


def with_mode(mode: int, uid: int = -1, gid: int = -1):
    def plant(scene):
        scene.write("a.py", FIXABLE)
        os.chown(scene.path("a.py"), uid, gid)  # before chmod: chown clears set-gid
        os.chmod(scene.path("a.py"), mode)
    return plant


def planted_temp_link(scene):
    scene.write("a.py", FIXABLE)
    write_file(f"{scene.root}/v", b"v")
    os.symlink(f"{scene.root}/v", scene.path(".a.py.aaaaaaaa.tcl-fix"))


def mode_owner(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def fix_area() -> None:
    force = ("--apply", "--force-write", "--no-config", ".")
    fix_case("directory symlink out of the tree", outside_dir_linked,
             lambda s, r: refused(r, "vendor/x.py", "outside the checked tree") and s.read(f"{s.root}/out/x.py") == FIXABLE)
    fix_case("directory symlink out of src/, src/ given", lambda s: outside_dir_linked(s, "src/vendor"),
             lambda s, r: refused(r, "src/vendor/x.py", "outside") and s.read(f"{s.root}/out/x.py") == FIXABLE,
             ("--apply", "--no-config", "src"))
    fix_case("directory symlink within the tree", inside_dir_linked,
             lambda s, r: r.returncode == 1 and fixed(s.read(s.path("pkg/x.py"))))
    fix_case("file symlink out of the tree", outside_file_linked,
             lambda s, r: refused(r, "l.py", "is a symlink") and os.path.islink(s.path("l.py"))
             and s.read(f"{s.root}/o.py") == FIXABLE)
    fix_case("file symlink named explicitly", outside_file_linked,
             lambda s, r: refused(r, "l.py", "is a symlink") and s.read(f"{s.root}/o.py") == FIXABLE,
             ("--apply", "--no-config", "l.py"))
    fix_case("file symlink within the tree", inside_file_linked,
             lambda s, r: refused(r, "l.py", "is a symlink") and os.readlink(s.path("l.py")) == "o.py")
    fix_case("file symlink, forced: target fixed, link kept", outside_file_linked,
             lambda s, r: r.returncode == 1 and os.path.islink(s.path("l.py")) and fixed(s.read(f"{s.root}/o.py")), force)
    fix_case("hard link", hard_linked,
             lambda s, r: refused(r, "a.py", "hard links") and os.stat(s.path("a.py")).st_nlink == 2
             and s.read(f"{s.root}/h.py") == FIXABLE)
    fix_case("0444 file", with_mode(0o444), lambda s, r: refused(r, "a.py", "read-only") and s.read(s.path("a.py")) == FIXABLE)
    fix_case("0400 file", with_mode(0o400), lambda s, r: refused(r, "a.py", "read-only") and s.read(s.path("a.py")) == FIXABLE)
    fix_case("0444 file, forced: stays 0444", with_mode(0o444),
             lambda s, r: r.returncode == 1 and mode_owner(s.path("a.py"))[0] == 0o444 and fixed(s.read(s.path("a.py"))), force)
    fix_case("another user's 0640 file", with_mode(0o640, 12345, 12346),
             lambda s, r: refused(r, "a.py", "owned by another user") and s.read(s.path("a.py")) == FIXABLE, needs_root=True)
    fix_case("another user's 0640 file, forced: owner, group, mode kept", with_mode(0o640, 12345, 12346),
             lambda s, r: r.returncode == 1 and mode_owner(s.path("a.py")) == (0o640, 12345, 12346), force, needs_root=True)
    fix_case("own 2755 file of group 12346: mode and group kept", with_mode(0o2755, -1, 12346),
             lambda s, r: r.returncode == 1 and mode_owner(s.path("a.py"))[0::2] == (0o2755, 12346)
             and fixed(s.read(s.path("a.py"))), needs_root=True)
    fix_case("link planted at a temp file name", planted_temp_link,
             lambda s, r: r.returncode == 1 and s.read(f"{s.root}/v") == "v" and os.path.islink(s.path(".a.py.aaaaaaaa.tcl-fix")))


# -- area: the file changes between fix's read and its write ----------------------------------
CHANGE_AFTER_READ = textwrap.dedent('''\
    import os, sys, shutil
    import tcl.fixing.apply as apply
    from tcl.cli import main
    fix_source = apply.fix_source
    def fix_then_change(text, path, *args, **kwargs):
        result = fix_source(text, path, *args, **kwargs)
        CHANGE
        return result
    apply.fix_source = fix_then_change
    sys.exit(main(sys.argv[1:]))
''')


def race(name: str, change: str, check, file="a.py", needs_root=False) -> None:
    if needs_root and not AS_ROOT:
        return
    scene = Scene()
    try:
        os.unlink(scene.path("a.py"))
        os.unlink(scene.path("b.py"))
        scene.write(file, FIXABLE)
        write_file(f"{scene.root}/outside.py", FIXABLE.encode())
        script = CHANGE_AFTER_READ.replace("CHANGE", change)
        result = run([sys.executable, "-c", script, "fix", "--apply", "--no-config", "."], scene.repo)
        try:
            ok = result is not None and "Traceback" not in result.stderr and result.returncode == 2 and check(scene, result)
        except OSError:
            ok = False
        record("fix races", name, ok, tail(result))
    finally:
        scene.close()


def race_area() -> None:
    race("swapped for a symlink out of the tree", 'os.unlink(path); os.symlink("../outside.py", path)',
         lambda s, r: "a.py: not written: is a symlink" in r.stderr and s.read(f"{s.root}/outside.py") == FIXABLE)
    race("swapped for a hard link of an outside file", 'os.unlink(path); os.link("../outside.py", path)',
         lambda s, r: "a.py: not written: has 2 hard links" in r.stderr and s.read(f"{s.root}/outside.py") == FIXABLE)
    race("replaced by another user's file of the same bytes",
         'data = open(path).read(); os.unlink(path); open(path, "w").write(data); os.chown(path, 12345, 12345)',
         lambda s, r: "a.py: not written: is owned by another user" in r.stderr, needs_root=True)
    race("edited after the read", 'open(path, "a").write("# edit\\n")',
         lambda s, r: "a.py: changed on disk since read, skipped" in r.stderr and s.read(s.path("a.py")) == FIXABLE + "# edit\n")
    race("made read-only after the read", "os.chmod(path, 0o444)",
         lambda s, r: "a.py: not written: is read-only" in r.stderr and s.read(s.path("a.py")) == FIXABLE)
    race("its directory swapped for a link out of the tree",
         'shutil.move("pkg", "../moved"); os.symlink(os.path.abspath("../moved"), "pkg")',
         lambda s, r: "pkg/b.py: not written: is outside the checked tree" in r.stderr
         and s.read(f"{s.root}/moved/b.py") == FIXABLE, file="pkg/b.py")
    race("swapped for a FIFO after the read", "os.unlink(path); os.mkfifo(path)",
         lambda s, r: "a.py: not written: not a regular file (a FIFO)" in r.stderr)


# -- area: temporary files a SIGKILL leaves ----------------------------------------------------
KILLED_AT_REPLACE = textwrap.dedent('''\
    import os, signal, sys
    from tcl.fixing import writer
    path = sys.argv[1]
    data = open(path, "rb").read()
    os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
    writer.write_atomic(path, data + b"#\\n", writer.digest(data))
''')
KILLED_AT_CACHE_WRITE = textwrap.dedent('''\
    import os, signal, sys
    replace = os.replace
    def die_at_an_entry(source, target):
        if str(target).endswith(".json"):
            os.kill(os.getpid(), signal.SIGKILL)
        return replace(source, target)
    os.replace = die_at_an_entry
    from tcl.cli import main
    sys.exit(main(sys.argv[1:]))
''')


def temp_area() -> None:
    for attempt in range(3):
        scene = Scene()
        try:
            subprocess.run([sys.executable, "-c", KILLED_AT_REPLACE, scene.path("a.py")], timeout=TIMEOUT)
            left = [name for name in os.listdir(scene.repo) if name.endswith(".tcl-fix")]
            for name in left:
                backdate(scene.path(name), 30)  # older than safe_files.STALE_AFTER_S
            result = run(tcl("fix", "--apply", "--no-config", "."), scene.repo)
            ok = (len(left) == 1 and result is not None and result.returncode == 1
                  and not any(name.endswith(".tcl-fix") for name in os.listdir(scene.repo)))
            record("temp files", f"SIGKILL at fix's replace, then fix --apply (#{attempt + 1})", ok, tail(result))
        finally:
            scene.close()
    scene = Scene()
    try:
        subprocess.run([sys.executable, "-c", KILLED_AT_CACHE_WRITE, "check", "--no-config", "."],
                       cwd=scene.repo, timeout=TIMEOUT, capture_output=True)
        temps = [os.path.join(base, name) for base, _, names in os.walk(scene.path(".tcl_cache"))
                 for name in names if name.startswith(".tmp-")]
        for path in temps:
            backdate(path, 30)
        for _ in range(2):
            run(tcl("check", "--no-config", "."), scene.repo)
        left = [path for path in temps if os.path.exists(path)]
        record("temp files", "SIGKILL at a cache write, then check twice", bool(temps) and not left,
               f"{len(temps)} left behind, {len(left)} not removed")
    finally:
        scene.close()


def main() -> int:
    cache_area()
    blocking_area()
    fix_area()
    race_area()
    temp_area()
    tries = failures = 0
    for area, rows in results.items():
        failed = [row for row in rows if not row[1]]
        tries, failures = tries + len(rows), failures + len(failed)
        print(f"{area}: {len(rows)} tries, {len(failed)} failures")
        for name, _, detail in failed:
            print(f"    FAILED {name}: {detail}")
    print(f"total: {tries} tries, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
