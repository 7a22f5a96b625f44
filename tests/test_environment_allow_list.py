"""The environment is recorded by an explicit list of names, never by prefix: Terraform's and
OpenTofu's TF_* secrets, and any other variable, never reach a snapshot or a report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck.probes.system import ENV_ALLOW_EXACT, allowed_variable, probe_environment
from tests.conftest import REPO

SECRETS = {
    "TF_HTTP_PASSWORD": "hunter2-http",
    "TF_ENCRYPTION": 'key_provider "pbkdf2" "k" { passphrase = "hunter2-encryption" }',
    "TF_HTTP_USERNAME": "alice-http",
    "TF_VAR_db_password": "hunter2-var",
    "TF_TOKEN_app_terraform_io": "hunter2-token",
    "TF_CLI_ARGS": "-var=password=hunter2-cli",
    "TF_STATE_PASSPHRASE": "hunter2-state",
    "CUDA_SECRET": "hunter2-cuda",
    "NCCL_TOKEN": "hunter2-nccl",
    "XLA_API_KEY": "hunter2-xla",
    "TF_CONFIG": '{"cluster": {"worker": ["host-a.internal:2222"]}}',
}


def test_terraform_and_opentofu_secrets_are_never_recorded():
    recorded = probe_environment(
        {**SECRETS, "TF_FORCE_GPU_ALLOW_GROWTH": "true", "CUDA_PATH_V12_5": "C:/CUDA/v12.5"}
    ).variables
    assert recorded == {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "CUDA_PATH_V12_5": "C:/CUDA/v12.5"}


def test_the_doctors_json_and_markdown_carry_none_of_them():
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(REPO)}
    for fmt in ("--json", "--markdown"):
        done = subprocess.run(
            [sys.executable, "-m", "envcheck", "doctor", "--quick", fmt],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (0, 1), done.stderr
        for name, value in SECRETS.items():
            assert "hunter2" not in done.stdout
            assert value not in done.stdout, (fmt, name)
        if fmt == "--json":
            recorded = json.loads(done.stdout)["facts"]["env"]["variables"]
            assert not set(recorded) & set(SECRETS)


# Names of the families the list covers, none of them on it.
unlisted = st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(["TF_", "CUDA_", "NCCL_", "XLA_", "TF_VAR_", "CUDA_PATH", "CUDA_PATH_V", "TF_CPP_", "TF2_"]),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", max_size=12),
).filter(lambda name: name not in ENV_ALLOW_EXACT)


@settings(max_examples=examples(300))
@given(name=unlisted)
def test_no_prefix_lets_a_name_through(name):
    # CUDA_PATH_V<major>_<minor>, as the Windows installers set it: both numbers there, 1-3 digits
    major, _, minor = name[len("CUDA_PATH_V") :].partition("_")
    versioned = (
        name.startswith("CUDA_PATH_V")
        and name.count("_") == 3
        and all(part.isdigit() and len(part) <= 3 for part in (major, minor))
    )
    assert allowed_variable(name) == versioned, name


def test_every_variable_a_rule_reads_is_on_the_list():
    for name in (
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "TF_CPP_MIN_LOG_LEVEL",
        "LD_LIBRARY_PATH",
        "PATH",
        "XLA_FLAGS",
        "CUDA_HOME",
        "CUDA_PATH",
        "CONDA_PREFIX",
        "VIRTUAL_ENV",
    ):
        assert allowed_variable(name), name
