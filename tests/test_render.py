"""Each renderer: what a person sees in the terminal, the JSON schema, the redacted Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.facts import EnvFacts, Facts, NvmlFacts, NvmlGpu, PlatformFacts, PythonFacts
from envcheck.findings import (
    CPU_ONLY,
    LINK_ERROR,
    LINK_OK,
    Command,
    Finding,
    Fix,
    LinkStatus,
    Report,
    Severity,
    Verdict,
)
from envcheck.render import SCHEMA_VERSION, markdown, terminal
from envcheck.render import json as json_render

HOME = "/home/alice"
UUID = "GPU-12345678-abcd-ef01-2345-6789abcdef01"


def sample_report() -> Report:
    facts = Facts(
        envcheck_version="0.1.0",
        python=PythonFacts(executable=f"{HOME}/venv/bin/python", version="3.11.7", implementation="CPython", bits=64),
        platform=PlatformFacts(system="Linux", os="linux", hostname="gpu-box-7", user="alice", home=HOME),
        env=EnvFacts(variables={"PATH": f"{HOME}/bin:/usr/bin"}),
        nvml=NvmlFacts(
            driver_version="470.57",
            gpus=(
                NvmlGpu(
                    index=0, name="NVIDIA GeForce GTX 1060", uuid=UUID, serial="0324118012345", compute_capability="6.1"
                ),
            ),
        ),
    )
    root = Finding(
        id="EC-DRV-001",
        severity=Severity.ERROR,
        title="driver 470.57 is too old for CUDA 12.2",
        link="driver",
        detail="TensorFlow 2.15 was built with CUDA 12.2, which needs driver 525.60.13 or newer.",
        evidence=(("nvml.driver_version", "470.57"),),
        fix=Fix(
            text="Install NVIDIA driver 525.60.13 or newer, then reboot.",
            commands=(Command("sudo ubuntu-drivers install", shell="bash"),),
            url="https://www.nvidia.com/Download/index.aspx",
        ),
    )
    child = Finding(
        id="EC-PLC-002",
        severity=Severity.ERROR,
        title="the placement test ran on the CPU",
        link="placement",
        caused_by="EC-DRV-001",
    )
    warning = Finding(
        id="EC-ENV-004", severity=Severity.WARNING, title="CUDA_DEVICE_ORDER is unset", link="environment"
    )
    verdict = Verdict(
        status=CPU_ONLY,
        reason=root.title,
        first_broken_link="driver",
        finding_id=root.id,
        gpu_path=(Fix(text=root.fix.text, commands=root.fix.commands, url=root.fix.url),),
        cpu_path=(Fix(text="Hide the GPU.", commands=(Command('export CUDA_VISIBLE_DEVICES=""', shell="bash"),)),),
    )
    links = (
        LinkStatus(name="python", status=LINK_OK, summary="CPython 3.11.7, 64-bit", seconds=0.002),
        LinkStatus(name="driver", status=LINK_ERROR, summary="driver 470.57"),
    )
    return Report(
        facts=facts,
        findings=(root, child, warning),
        verdict=verdict,
        links=links,
        exit_code=1,
        envcheck_version="0.1.0",
    )


def test_terminal_plain_ascii_when_not_a_tty():
    text = terminal.render(sample_report(), color=False)
    assert text.isascii()
    assert "\033[" not in text
    assert "[ok]   Python  CPython 3.11.7, 64-bit" in text
    assert "[FAIL] Driver  driver 470.57" in text
    # The verdict, then each fix once, numbered, with its rule id; commands whole, no prompt.
    assert "Verdict: CPU only: driver 470.57 is too old for CUDA 12.2" in text
    assert "To use the GPU, in this order:" in text and "  1. " in text and "[EC-DRV-001" in text
    assert "\n     sudo ubuntu-drivers install\n" in text and "$ sudo" not in text
    assert "On the CPU instead:" in text
    # Consequences are not repeated as steps: the fix that clears them names them once.
    assert "[EC-DRV-001; also clears EC-PLC-002]" in text and text.count("EC-PLC-002") == 1


def test_terminal_colour_and_verbose():
    text = terminal.render(sample_report(), verbose=True, color=True)
    assert "\033[" in text
    assert "evidence:" in text and "nvml.driver_version: 470.57" in text
    assert "(2 ms)" in text
    plain = terminal.render(sample_report(), verbose=False, color=False)
    assert "evidence:" not in plain


def test_terminal_respects_no_color(monkeypatch):
    class FakeTty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert terminal.use_color(FakeTty()) is True
    monkeypatch.setenv("NO_COLOR", "")
    assert terminal.use_color(FakeTty()) is True  # empty means unset
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.use_color(FakeTty()) is False


def test_json_has_the_documented_keys():
    data = json.loads(json_render.render(sample_report()))
    for key in ("schema_version", "envcheck_version", "facts", "findings", "verdict", "exit_code", "links"):
        assert key in data
    assert data["verdict"]["status"] == "cpu-only"
    assert data["verdict"]["reason"]
    assert data["facts"]["python"]["bits"] == 64
    assert data["facts"]["python"]["version"] == "3.11.7"
    finding = data["findings"][0]
    assert {"id", "severity", "title", "fix"} <= set(finding)
    assert finding["fix"]["commands"][0] == {"shell": "bash", "line": "sudo ubuntu-drivers install"}
    assert data["findings"][1]["caused_by"] == "EC-DRV-001"


def test_markdown_is_redacted_by_default():
    text = markdown.render(sample_report())
    for secret in (HOME, "alice", "gpu-box-7", UUID, "0324118012345"):
        assert secret not in text, secret
    assert "~/venv/bin/python" in text
    assert "<details>" in text and "</details>" in text
    assert "**Verdict:** CPU only" in text
    assert "| NVIDIA driver | **error** | driver 470.57 |" in text
    assert "### Two ways forward" in text
    assert text.index("To use the GPU, in this order:") < text.index("To run on the CPU today:")
    assert 'export CUDA_VISIBLE_DEVICES=""' in text


def test_markdown_no_redact_keeps_everything():
    text = markdown.render(sample_report(), redact=False)
    for value in (HOME, "gpu-box-7", UUID, "0324118012345"):
        assert value in text


def test_redaction_handles_windows_paths_in_json():
    report = sample_report()
    facts = report.facts
    win = Facts(
        python=PythonFacts(executable="C:\\Users\\bob\\py\\python.exe"),
        platform=PlatformFacts(system="Windows", os="windows", user="bob", home="C:\\Users\\bob", hostname="DESKTOP-1"),
        nvml=facts.nvml,
    )
    from dataclasses import replace

    text = markdown.render(replace(report, facts=win))
    assert "Users\\\\bob" not in text and "Users\\bob" not in text
    assert "DESKTOP-1" not in text


def test_colour_on_a_console_without_the_glyphs_uses_ascii_marks(monkeypatch):
    import io

    class AsciiTty(io.StringIO):
        encoding = "ascii"

        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setattr(terminal.sys, "stdout", AsciiTty())
    text = terminal.render(sample_report())
    assert "\033[" in text  # still coloured
    text.encode("ascii")  # but nothing the console cannot print
    assert "[FAIL]" in text


def test_every_key_in_the_readme_schema_is_in_real_json_output():
    """The README's ``doctor --json`` schema names only keys the renderer writes."""
    import re
    from pathlib import Path

    from envcheck.verdict import judge

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("### JSON (`--json`)", 1)[1].split("```jsonc", 1)[1].split("```", 1)[0]
    block = re.sub(r"//[^\n]*", "", block)
    documented = set(re.findall(r'"([a-z_]+)"\s*:', block))
    facts_sections = re.findall(r'^\s*"([a-z]+)":\s*\{"', block.split('"facts": {', 1)[1], flags=re.M)
    documented |= {name for line in re.findall(r"\{([^{}]*)\}", block) for name in re.findall(r'"([a-z_]+)"', line)}

    from envcheck.facts import Distribution, PackagesFacts

    packages = PackagesFacts(
        distributions=(Distribution(name="tensorflow", version="2.21.0", location="/x", requires=("numpy",)),)
    )
    data = json.loads(json_render.render(judge(Facts(packages=packages))))
    data["findings"] = json.loads(json_render.render(sample_report()))["findings"]
    from rules import builders

    data["gpus"] = json.loads(json_render.render(judge(builders.server())))["gpus"]
    seen: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                seen.add(key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    values = {
        "gpu-ready",
        "cpu-only",
        "broken",
        "not-installed",
        "ok",
        "warning",
        "error",
        "skipped",
        "info",
        "bash",
        "powershell",
        "any",
        "python",
        "gpu",
        "driver",
        "compute",
        "libraries",
        "tensorflow",
        "placement",
        "environment",
        "nvml",
        "pci",
    }
    missing = sorted(documented - seen - values)
    assert not missing, missing
    assert {"python", "platform", "env", "packages"} <= set(facts_sections) <= set(data["facts"])


def test_redaction_of_a_home_folder_written_with_a_trailing_slash():
    from dataclasses import replace

    report = sample_report()
    facts = replace(report.facts, platform=replace(report.facts.platform, home=HOME + "/"))
    text = markdown.render(replace(report, facts=facts))
    assert HOME not in text and "~/venv/bin/python" in text


@pytest.mark.parametrize(
    "argv",
    [
        ("doctor", "--facts", "FIXTURE", "--json"),
        ("plan", "--os", "linux", "--python", "3.11", "--gpu", "RTX 4090", "--json"),
        ("matrix", "tf", "2.15", "--json"),
        ("matrix", "cuda", "12.2", "--json"),
        ("matrix", "gpu", "GTX 1060", "--json"),
        ("explain", "--no-probe", "--json", "failed call to cuInit: CUDA_ERROR_NO_DEVICE"),
        ("explain", "--list", "--json"),
    ],
)
def test_every_json_document_has_the_same_envelope(cli, argv):
    from envcheck import __version__

    fixture = str(Path(__file__).parent / "fixtures" / "facts" / "multi_gpu_server.json")
    result = cli(*(fixture if a == "FIXTURE" else a for a in argv))
    data = json.loads(result.out)
    assert list(data)[:4] == ["schema_version", "envcheck_version", "command", "exit_code"]
    assert data["schema_version"] == SCHEMA_VERSION and data["envcheck_version"] == __version__
    assert data["command"] == argv[0] and data["exit_code"] == result.code


def test_the_readmes_doctor_examples_are_the_real_output(monkeypatch):
    """The README shows what the doctor prints for the named machines, at 100 columns."""
    from rules import builders

    from envcheck import invocation
    from envcheck.verdict import judge

    monkeypatch.setattr(invocation, "envcheck_word", lambda shell_name="bash": "envcheck")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for machine in (builders.no_gpu, builders.server):
        assert "$ envcheck doctor\n" + terminal.render(judge(machine()), color=False, width=100) + "```" in readme
