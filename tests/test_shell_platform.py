"""Which printed commands run on the system a log came from (envcheck.shell.runs_on): each case
that drops a command beside a look-alike that keeps it."""

import pytest

from envcheck.shell import runs_on


@pytest.mark.parametrize(
    ("shell", "line", "system", "runs"),
    [
        # native Windows: PowerShell, cmd and shell-neutral lines, none naming a Linux-only tool
        ("powershell", "where.exe cudart64_110.dll", "windows", True),
        ("cmd", "where cudnn64_8.dll", "windows", True),
        ("any", "nvidia-smi --query-gpu=name,memory.free --format=csv", "windows", True),
        ("bash", "nvidia-smi -L", "windows", False),
        ("any", "ldconfig -p | grep libcudnn", "windows", False),
        ("any", "python -c \"print(open('/proc/cpuinfo').read())\"", "windows", False),
        ("any", 'echo "$LD_LIBRARY_PATH"', "windows", False),
        ("any", "python -m pip list", "windows", True),
        # macOS: bash and any-shell lines without Linux-only tools or NVIDIA's tools
        ("bash", "sysctl -n machdep.cpu.features", "macos", True),
        ("bash", "grep -o avx /proc/cpuinfo", "macos", False),
        ("any", "nvidia-smi", "macos", False),
        ("bash", "nvcc --version", "macos", False),
        ("powershell", "Get-ComputerInfo", "macos", False),
        ("bash", "python3 -m pip install tensorflow-metal", "macos", True),
        # Linux: bash and any, whatever they name; no PowerShell
        ("bash", "grep -o avx /proc/cpuinfo", "linux", True),
        ("any", "ldconfig -p | grep libcudnn", "linux", True),
        ("powershell", "Get-ChildItem Env:", "linux", False),
        # WSL and an unknown system keep everything (WSL's fixes can need the Windows side)
        ("powershell", "wsl --shutdown", "wsl", True),
        ("bash", "ls -l /usr/lib/wsl/lib", "wsl", True),
        ("powershell", "where.exe nvcuda.dll", None, True),
        ("bash", "ldconfig -p", "", True),
    ],
)
def test_a_command_runs_where_its_shell_and_tools_exist(shell, line, system, runs):
    assert runs_on(shell, line, system) is runs


def test_a_word_that_only_contains_a_tool_name_is_not_the_tool():
    # 'memory.free' and 'apt' inside a longer word are not the Linux tools free or apt
    assert runs_on("any", "nvidia-smi --query-gpu=memory.free --format=csv", "windows")
    assert runs_on("any", 'python -c "import adaptive"', "windows")
