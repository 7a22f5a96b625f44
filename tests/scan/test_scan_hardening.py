"""scan on a hostile machine: each bad item is one "skipped: why" line (or a kernel finding) and the
scan goes on; nothing hangs, nothing is exit 3, the budget covers everything, and nothing a probed
interpreter starts is left running. Each scan runs as a real subprocess with a wall-clock guard, so
a hang fails the test instead of stopping the suite."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import uuid
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO

GUARD = 240  # seconds: far past what any of these scans needs; only a hang reaches it


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    return path / "bin" / "python"


def run_scan(
    home: Path, *args: str, cwd: Path | None = None, prefix: tuple[str, ...] = (), path: str = "/usr/bin:/bin"
):
    env = {
        "HOME": str(home),
        "PATH": path,
        "PYENV_ROOT": str(home / "no-pyenv"),
        "JUPYTER_DATA_DIR": str(home / "jd"),
        "PYTHONPATH": str(REPO),
        "COLUMNS": "200",
    }
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "envcheck", "scan", "--jobs", "4", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(cwd or home),
        timeout=GUARD,
    )
    assert done.returncode in (0, 1), (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done


def kernel(home: Path, name: str, text: str) -> Path:
    folder = home / "jd" / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(text)
    return folder


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    home = root / "home"
    (home / ".conda").mkdir(parents=True)
    conda = make_venv(root / "conda-env")
    (root / "conda-env" / "conda-meta").mkdir()
    long_folder = "/" + "d" * 300
    lines = [str(root / "conda-env"), "rel/folder", "./env", "with\0nul", long_folder, ""]
    (home / ".conda" / "environments.txt").write_text("\n".join(lines))
    python = make_venv(root / "kernel-venv")
    argv = json.dumps([str(python), "-m", "ipykernel_launcher"])
    kernel(home, "deep", "[" * 50_000 + "]" * 50_000)
    kernel(home, "eq-key", f'{{"argv": {argv}, "env": {{"A=B": "1"}}}}')
    kernel(home, "nul-key", f'{{"argv": {argv}, "env": {{"A\\u0000B": "1"}}}}')
    kernel(home, "nul-value", f'{{"argv": {argv}, "env": {{"CUDA_HOME": "x\\u0000y"}}}}')
    kernel(home, "-rf", f'{{"argv": ["{root}/gone/python", "-m", "ipykernel_launcher"]}}')
    fifo = kernel(home, "fifo", "{}") / "kernel.json"
    fifo.unlink()
    os.mkfifo(fifo)
    return {"root": root, "home": home, "conda": conda, "long": long_folder}


def test_each_bad_item_is_one_skipped_line_and_the_scan_goes_on(hostile_home):
    home = hostile_home["home"]
    text = run_scan(home, "--budget", "90").stdout
    skipped = [line.strip() for line in text.splitlines() if line.strip().startswith("skipped:")]
    listing = "~/.conda/environments.txt line"
    assert (
        f"skipped: {listing} 2: rel/folder: not an absolute folder (not resolved against the current folder)" in skipped
    )
    assert f"skipped: {listing} 3: ./env: not an absolute folder (not resolved against the current folder)" in skipped
    assert f"skipped: {listing} 4: with\\x00nul: it holds a NUL character" in skipped
    assert any(s.startswith(f"skipped: {listing} 5: /ddd") and s.endswith(": file name too long") for s in skipped)
    data = json.loads(run_scan(home, "--json", "--budget", "90").stdout)
    assert any(e["kind"] == "conda" for e in data["environments"])  # the good line is still scanned
    problems = {f["title"].split("'")[1]: f["title"] for f in data["findings"] if f["kind"] == "kernel-cannot-start"}
    assert problems["deep"].endswith("its kernel.json is nested too deeply to be a kernelspec")
    assert problems["eq-key"].endswith("sets a variable no process can have (the name 'A=B')")
    assert problems["nul-key"].endswith("sets a variable no process can have (the name 'A\\x00B')")
    assert problems["nul-value"].endswith("sets CUDA_HOME to a value no process can have (it holds a NUL character)")
    assert not any(r["path"].endswith("rel/folder/bin/python") for e in data["environments"] for r in e["reached"])


def test_a_fifo_kernel_json_named_by_jupyter_is_refused_not_waited_on(hostile_home, tmp_path):
    """Jupyter's own listing names the FIFO's folder; reading it must not block."""
    home = hostile_home["home"]
    fake = tmp_path / "bin"
    fake.mkdir()
    listing = {"kernelspecs": {"fifo": {"resource_dir": str(home / "jd" / "kernels" / "fifo"), "spec": {}}}}
    jupyter = fake / "jupyter"
    jupyter.write_text(f"#!/bin/sh\necho '{json.dumps(listing)}'\n")
    jupyter.chmod(0o755)
    data = json.loads(run_scan(home, "--json", "--budget", "90", path=f"{fake}:/usr/bin:/bin").stdout)
    fifo = next(f for f in data["findings"] if "'fifo'" in f["title"])
    assert fifo["title"].endswith("its kernel.json is a pipe (FIFO), not a kernel.json")


@pytest.mark.parametrize("kind", ["/dev/zero", "sparse", "fifo"])
def test_an_environments_txt_that_is_a_device_a_huge_file_or_a_fifo_is_skipped(tmp_path, kind):
    home = tmp_path / "home"
    (home / ".conda").mkdir(parents=True)
    listing = home / ".conda" / "environments.txt"
    if kind == "/dev/zero":
        listing.symlink_to("/dev/zero")
    elif kind == "sparse":
        with open(listing, "wb") as fh:
            fh.truncate(4 * 1024**3)
    else:
        os.mkfifo(listing)
    text = run_scan(home, "--budget", "60").stdout
    why = {
        "/dev/zero": "is a device, not a conda environments list",
        "sparse": "more than 1 MiB, the most envcheck reads as a conda environments list",
        "fifo": "is a pipe (FIFO), not a conda environments list",
    }[kind]
    assert f"skipped: ~/.conda/environments.txt: {why}" in text


def test_a_kernel_called_rf_gets_commands_that_take_it_as_a_name(hostile_home):
    data = json.loads(run_scan(hostile_home["home"], "--json", "--budget", "90").stdout)
    rf = next(f for f in data["findings"] if "'-rf'" in f["title"])
    lines = [c["line"] for c in rf["commands"]]
    assert lines == ["jupyter kernelspec remove -y -- -rf", "python -m ipykernel install --user --name=-rf"]
    assert shlex.split(lines[0])[-2:] == ["--", "-rf"]


def test_a_kernel_name_jupyter_does_not_take_is_removed_by_its_folder():
    from envcheck.scan.kernels import Kernel
    from envcheck.scan.result import _kernel_fix

    folder = "/home/u/.local/share/jupyter/kernels/k\x1b]52;c;eA==\x07"
    text, commands = _kernel_fix(Kernel("k\x1b]52;c;eA==\x07", folder + "/kernel.json", "k", None, None))
    assert [c.line for c in commands] == ["rm -r -- $'/home/u/.local/share/jupyter/kernels/k\\x1b]52;c;eA==\\x07'"]


def _hanging_venvs(home: Path, count: int) -> None:
    for n in range(count):
        folder = home / ".virtualenvs" / f"hang{n:02d}"
        (folder / "bin").mkdir(parents=True)
        (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
        python = folder / "bin" / "python"
        python.write_text("#!/bin/sh\nexec sleep 600\n")
        python.chmod(0o755)


def test_the_budget_covers_asking_each_interpreter_what_it_is(tmp_path):
    """24 venvs whose python hangs: each is asked within what is left of --budget, and those the
    budget does not reach are not asked at all; each is named, with the fix."""
    home = tmp_path / "home"
    _hanging_venvs(home, 24)
    data = json.loads(run_scan(home, "--json", "--budget", "4").stdout)
    hung = [f for f in data["findings"] if "/.virtualenvs/hang" in f["where"]]
    assert len(hung) == 24 and all(f["kind"] == "not-checked" for f in hung)
    said = [f["title"].split(") ", 1)[1] for f in hung]
    asked = [s for s in said if re.fullmatch(r"did not answer within [\d.]+ s \(the scan's budget\)", s)]
    unasked = [s for s in said if s == "was not asked what it is: the scan's budget ran out first"]
    assert len(asked) + len(unasked) == 24 and unasked  # no interpreter got the full 10 s of its own
    assert all(f["commands"][0]["line"].startswith("envcheck doctor --python ") for f in hung)


def _leaving(python: Path, real: Path, marks: tuple[str, str]) -> None:
    """An interpreter that starts two helpers and leaves them running: one in its process group,
    one in a session of its own (setsid), then runs the real Python."""
    python.write_text(
        "#!/bin/sh\n"
        f"sleep {marks[0]} &\n"
        f"setsid sh -c 'sleep {marks[1]}' >/dev/null 2>&1 < /dev/null &\n"
        f'exec {real} "$@"\n'
    )
    python.chmod(0o755)


def _running(marks: tuple[str, ...]) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                words = fh.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(m.encode() in words for m in marks):
            found.append(f"{pid}: {b' '.join(words).decode()}")
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds leftovers through /proc")
def test_nothing_a_probed_interpreter_starts_is_left_running(tmp_path):
    home = tmp_path / "home"
    real = make_venv(tmp_path / "real")
    folder = home / ".virtualenvs" / "leaves"
    make_venv(folder)
    python = folder / "bin" / "python"
    python.unlink()
    marks = (f"600.{uuid.uuid4().int % 10**8}", f"601.{uuid.uuid4().int % 10**8}")
    _leaving(python, real.resolve(), marks)
    data = json.loads(run_scan(home, "--json", "--budget", "90").stdout)
    assert any("leaves" in r["path"] for e in data["environments"] for r in e["reached"])
    left = _running(marks)
    for line in left:  # do not leave them to the next test either
        os.kill(int(line.split(":")[0]), 9)
    assert not left, left


def test_an_interpreter_that_cannot_be_run_is_said_plainly(tmp_path):
    home = tmp_path / "home"
    folder = tmp_path / "bin"
    folder.mkdir(parents=True)
    home.mkdir()
    broken = folder / "python3"
    broken.write_bytes(b"\x7fELF\x02garbage")
    broken.chmod(0o755)
    data = json.loads(run_scan(home, "--json", "--budget", "60", path=str(folder)).stdout)
    title = next(f["title"] for f in data["findings"] if f["where"] == str(broken))
    assert title == f"{broken} (PATH python3) cannot be run: Exec format error"


# --- unreadable folders: root reads anything, so the scan runs without the capabilities that let it --


def _unprivileged() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to count")
    probe = subprocess.run(
        [setpriv, "--bounding-set=-dac_override,-dac_read_search", "true"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode().strip()}")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


def test_unreadable_folders_under_the_current_folder_and_virtualenvs_are_skipped(tmp_path):
    prefix = _unprivileged()
    home = tmp_path / "home"
    project = tmp_path / "project"
    (home / ".virtualenvs" / "locked").mkdir(parents=True)
    (project / "lost+found").mkdir(parents=True)
    good = make_venv(project / "ok-venv")
    for locked in (home / ".virtualenvs" / "locked", project / "lost+found"):
        (locked / "pyvenv.cfg").write_text("home = /usr/bin\n")
        locked.chmod(0)
    try:
        done = run_scan(home, "--budget", "90", cwd=project, prefix=prefix)
    finally:
        for locked in (home / ".virtualenvs" / "locked", project / "lost+found"):
            locked.chmod(stat.S_IRWXU)
    skipped = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("skipped:")]
    assert f"skipped: {project / 'lost+found'}: permission denied" in skipped
    assert "skipped: ~/.virtualenvs/locked: permission denied" in skipped
    assert str(good.parent.parent.name) in done.stdout  # the readable venv beside it is scanned
