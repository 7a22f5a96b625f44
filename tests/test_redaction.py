"""Redaction in the Markdown report works by path prefix and by token: a user or host name is
replaced where it stands as a whole token (inside longer path components too), the short host
name of an FQDN as well as the full one, case-insensitively on Windows; a name that is short or a
common path word is not redacted as a word, and serials and UUIDs only as whole tokens."""

from __future__ import annotations

from dataclasses import replace

from envcheck import redact
from envcheck.facts import EnvFacts, Facts, NvmlFacts, NvmlGpu, PlatformFacts, PythonFacts, TensorflowFacts
from envcheck.findings import Report
from envcheck.render import markdown
from envcheck.verdict import judge

UUID = "GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"


def report_for(
    user: str,
    hostname: str,
    home: str,
    *,
    system: str = "Linux",
    os: str = "linux",
    serial: str = "0324118012345",
    executable: str = "/usr/local/bin/python3",
    path: str = "/usr/local/cuda/bin:/usr/bin",
    log_lines=(),
) -> Report:
    facts = Facts(
        python=PythonFacts(executable=executable, version="3.11.7", implementation="CPython", bits=64),
        platform=PlatformFacts(
            system=system, os=os, hostname=hostname, user=user, home=home, distro="Ubuntu 22.04.4 LTS"
        ),
        env=EnvFacts(
            variables={
                "PATH": path,
                "LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/opt/venv/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib",
            }
        ),
        nvml=NvmlFacts(
            driver_version="550.54.14",
            cuda_driver_version="12.1",
            gpus=(NvmlGpu(index=0, name="NVIDIA A100", uuid=UUID, serial=serial, compute_capability="8.0"),),
        ),
        tensorflow=TensorflowFacts(status="error", log_lines=tuple(log_lines)),
    )
    return judge(facts)


def test_a_user_name_inside_longer_path_components_is_redacted():
    report = report_for(
        "alice",
        "gpu-box",
        "/home/alice",
        executable="/srv/alice-tf/.venv/bin/python",
        path="/data/alice_experiments/bin:/home/alice/bin:/opt/alice.tools/bin:/usr/bin",
    )
    text = markdown.render(report)
    assert "alice" not in text
    for redacted in (
        "/srv/<user>-tf/.venv/bin/python",
        "/data/<user>_experiments/bin",
        "~/bin",
        "/opt/<user>.tools/bin",
    ):
        assert redacted in text, redacted


def test_a_name_inside_a_longer_word_is_not_the_name():
    text = markdown.render(report_for("alice", "gpu-box", "/home/alice", executable="/opt/malice/aliceX/bin/python"))
    assert "/opt/malice/aliceX/bin/python" in text


def test_the_short_and_the_full_host_name_are_redacted():
    report = report_for(
        "alice",
        "box7.lab.example.com",
        "/home/alice",
        path="/mnt/box7-scratch/bin:/usr/bin",
        log_lines=("connecting to BOX7.lab.example.com:2222", "worker box7 ready"),
    )
    text = markdown.render(report)
    assert "box7" not in text.lower()
    assert "/mnt/<host>-scratch/bin" in text and "connecting to <host>:2222" in text and "worker <host> ready" in text


def test_windows_paths_and_names_are_matched_whatever_their_case():
    report = report_for(
        "Alice",
        "DESKTOP-7Q",
        "C:\\Users\\Alice",
        system="Windows",
        os="windows",
        executable="C:\\USERS\\ALICE\\venv\\Scripts\\python.exe",
        path="c:\\users\\alice\\bin;D:\\ALICE-data",
    )
    text = markdown.render(report)
    assert "alice" not in text.lower()
    assert "~\\\\venv\\\\Scripts\\\\python.exe" in text or "~\\venv\\Scripts\\python.exe" in text
    assert "D:\\\\<user>-data" in text


def test_a_home_folder_is_a_prefix_not_a_substring():
    text = markdown.render(report_for("alice", "gpu-box", "/home/al", executable="/home/alberto/venv/bin/python"))
    assert "/home/alberto/venv/bin/python" in text


def test_common_path_words_and_short_names_are_not_redacted_as_words():
    for user, host in (("lib", "cuda"), ("bin", "local"), ("jo", "x1"), ("usr", "nvidia")):
        text = markdown.render(
            report_for(user, host, f"/home/{user}", executable="/opt/venv/.venv/lib/python3.11/bin/python")
        )
        for kept in ("/usr/local/cuda/lib64", ".venv/lib/python3.11", "/usr/local/cuda/bin", "nvidia/cudnn/lib"):
            assert kept in text, (user, host, kept)
        # Only the snapshot's own fields say who and where, replaced whatever their values.
        assert text.count("<user>") == 1 and '"user": "<user>"' in text, (user, host)
        assert text.count("<host>") == 1 and '"hostname": "<host>"' in text, (user, host)


def test_serials_and_uuids_only_as_whole_tokens():
    text = markdown.render(report_for("alice", "gpu-box", "/home/alice", serial="1"))
    assert "12.1" in text and "550.54.14" in text  # a one-character serial replaces nothing
    assert UUID not in text and "<gpu-uuid>" in text
    text = markdown.render(
        report_for(
            "alice",
            "gpu-box",
            "/home/alice",
            serial="0324118012345",
            log_lines=("serial 0324118012345 ok", "id 90324118012345 is another"),
        )
    )
    assert "serial <serial> ok" in text and "90324118012345" in text


def test_no_redact_keeps_everything():
    report = report_for("alice", "box7.lab.example.com", "/home/alice", executable="/srv/alice-tf/bin/python")
    text = markdown.render(report, redact=False)
    assert "/srv/alice-tf/bin/python" in text and "box7.lab.example.com" in text


def test_a_user_name_with_non_ascii_letters_is_redacted_in_the_json_too():
    report = report_for("jos\u00e9", "gpu-box", "/home/jos\u00e9", executable="/srv/jos\u00e9-tf/bin/python")
    text = markdown.render(report)
    assert "jos\u00e9" not in text and "jos\\u00e9" not in text


def test_redaction_leaves_the_rest_of_the_report_alone():
    report = report_for("alice", "gpu-box", "/home/alice")
    assert markdown.render(report) == markdown.render(replace(report), redact=True)
    assert "Ubuntu 22.04.4 LTS" in markdown.render(report)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis_budget import examples  # noqa: E402

names = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=3, max_size=10
).filter(lambda n: n.lower() not in redact.COMMON_WORDS and not n.isdigit())


@settings(max_examples=examples(200), deadline=None)
@given(user=names, host=names, glue=st.sampled_from(["-", "_", ".", "/", " ", "=", ":"]))
def test_a_name_never_survives_beside_a_separator(user, host, glue):
    if user.lower() in host.lower() or host.lower() in user.lower():
        return  # one would be redacted inside the other's marker; not what this checks
    # Every other word here is a common path word or shorter than 3 characters.
    report = report_for(
        user,
        host,
        f"/home/{user}",
        executable=f"/srv/{user}{glue}tf/bin/python",
        path=f"/data/x{glue}{user}{glue}y/bin:/mnt/{host}{glue}tmp",
        log_lines=(f"{host}{glue}{user}",),
    )
    text = markdown.render(report)
    assert f"/srv/<user>{glue}tf/bin/python" in text
    assert f"/data/x{glue}<user>{glue}y/bin:/mnt/<host>{glue}tmp" in text
    assert f"<host>{glue}<user>" in text


@settings(max_examples=examples(200), deadline=None)
@given(user=st.text(max_size=12), host=st.text(max_size=12), serial=st.text(max_size=8), home=st.text(max_size=16))
def test_any_name_at_all_renders(user, host, serial, home):
    markdown.render(report_for(user, host, home, serial=serial))
