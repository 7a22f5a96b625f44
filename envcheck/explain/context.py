"""The whole input as context for each message in it: the versions a log prints anywhere
(TensorFlow, CUDA, cuDNN, the user-space driver and the kernel module, Python), the platform its
paths, shells and prompts show, whether it shows an NVIDIA GPU, and whether it ends in a crash.

Read from the first and the last chunk of the input (versions are printed at start-up, a crash
comes last), so a 100 MB log costs the same as a short one. The facts become variables every
explanation of the input carries (``log_tf``, ``log_driver``, ``log_os`` ...): patterns' conditions
test them, ``contradictions`` drops a cause a version rules out, and the report shows the commands
for the platform the log comes from.
"""

from __future__ import annotations

import re
from typing import Optional

from . import gpu_names
from .derivers import cudnn_version_text, memory_size
from .gpu_stacks import read_gpu_stack
from .lines import lines_with

_VERSION = r"(\d{1,4}(?:\.\d{1,4}){1,3})"
# a line that is no build-info dict of TensorFlow's (tf.sysconfig.get_build_info(): "is_cuda_build",
# "cuda_compute_capabilities" beside the build's own "cuda_version" and "cudnn_version"), up to the match
_NOT_BUILD_INFO = r"^(?![^\n]{0,2000}?(?:is_cuda_build|cuda_compute_capabilities))[^\n]{0,2000}?"
# (variable, regex whose group 1 is the value, the lower-case strings one of which every match
# holds); the last match in the text wins for versions. A regex runs only on the lines that hold
# one of its strings, so a log full of "tensorflow/..." paths costs no regex pass per fact.
_FACTS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (name, re.compile(regex, re.I | re.M), hints)
    for name, regex, hints in (
        (
            "log_tf",
            r"\bTensorFlow(?:-gpu|-cpu)?(?: version)?[: =]{1,3}v?" + _VERSION + r"\b",
            ("tensorflow:", "tensorflow ", "tensorflow=", "tensorflow-gpu", "tensorflow-cpu"),
        ),
        ("log_tf", r"\btensorflow(?:-gpu|-cpu|-macos|\[and-cuda\])?==" + _VERSION, ("==",)),
        # prose and the issue template's older lines: "my tensorflow version is 2.12.0", "TensorFlow
        # version (use command below): 2.1.0", "TensorFlow: tensorflow-gpu-1.5.0"
        ("log_tf", r"\bTensorFlow(?:-gpu)?(?: version)? is v?" + _VERSION + r"\b", ("tensorflow",)),
        (
            "log_tf",
            r"\bTensorFlow(?:-gpu)? version \(use command below\): {0,3}(?:v\d[\w.-]{0,40} )?v?" + _VERSION + r"\b",
            ("use command below",),
        ),
        ("log_tf", r"\bTensorFlow: {0,3}tensorflow(?:-gpu|-cpu)?[- =]{1,3}v?" + _VERSION + r"\b", ("tensorflow:",)),
        (
            "log_tf",
            r"Successfully installed [^\n]{0,400}?\btensorflow(?:-gpu|-cpu)?-" + _VERSION,
            ("successfully installed",),
        ),
        (
            "log_tf",
            r"\b(?:tf|tensorflow)\.__version__[^\n]{0,20}?['\"]?" + _VERSION,
            ("tf.__version__", "tensorflow.__version__"),
        ),
        # a wheel's or an installed distribution's file name (PEP 427: "{name}-{version}-{python
        # tag}-...whl", PEP 376: "{name}-{version}.dist-info"), TensorFlow's own distributions only
        # (not tensorflow_estimator-2.4.0.dist-info, tensorflow_io_gcs_filesystem-0.21.0-cp38-...)
        (
            "log_tf",
            r"(?<![\w.-])tensorflow(?:[-_](?:gpu|cpu|intel|macos))?-"
            + _VERSION
            + r"(?=-cp\d|-py\d|\.dist-info\b|\.egg-info\b)",
            ("tensorflow-", "tensorflow_"),
        ),
        # "TF version: 2.4.1", the short form posters write
        ("log_tf", r"\bTF(?:-GPU)? version[: =]{1,3}v?" + _VERSION + r"\b", ("tf version", "tf-gpu version")),
        # pip's "Requirement already satisfied: tensorflow in /.../site-packages (2.4.1)": the installed
        # release in brackets (pip's req_install, the satisfied requirement and its version)
        (
            "log_tf",
            r"\bRequirement already satisfied: tensorflow(?:-gpu|-cpu|-intel|-macos)?(?:\[and-cuda\])? in "
            r"[^\n]{0,300}?\(" + _VERSION + r"\)",
            ("requirement already satisfied: tensorflow",),
        ),
        # a CUDA project's own error check printed the status: the cudaCheckError() helper that
        # projects copy into their kernels' sources (py-faster-rcnn's and Faster-RCNN_TF's ROI
        # pooling and NMS kernels, many custom ops) calls cudaGetLastError() after the project's
        # own launch, so the kernel that failed was compiled by the project's build
        ("log_kernel_check", r"\b(cudaCheckError)\(\)(?: with sync)? failed\b", ("checkerror()",)),
        # a kernel's own assert() failed on the device: CUDA prints "<file>:<line>: <function>:
        # block: [x,y,z], thread: [x,y,z] Assertion `<expression>` failed." for each thread that
        # failed it (the CUDA C++ Programming Guide, "Assertion"; PyTorch's Windows builds leave the
        # function out), and the status it leaves is cudaErrorAssert (710, "device-side assert
        # triggered"): the program's own check of its data (an index or a label out of range)
        (
            "log_device_assert",
            r"(\bblock: \[\d{1,6}, ?\d{1,6}, ?\d{1,6}\], thread: \[\d{1,6}, ?\d{1,6}, ?\d{1,6}\] Assertion `|"
            r"\bdevice-side assert triggered\b|(?-i:\bcudaErrorAssert\b|\bCUDA_ERROR_ASSERT\b))",
            ("] assertion `", "device-side assert triggered", "cudaerrorassert", "cuda_error_assert"),
        ),
        # a cryptocurrency miner's log (ethminer, Phoenix Miner, T-Rex, NBMiner, lolMiner, NiceHash's
        # excavator): the proof-of-work algorithm it mines, its pool's stratum address, the DAG it
        # builds in the GPU's memory for the epoch, its hash rate, T-Rex's "TREX: " prefix. Its
        # CUDA lines are the miner's own (a DAG that outgrew the card), not a framework's.
        (
            "log_miner",
            r"(\b(?:ethash|etchash|daggerhashimoto|kawpow|autolykos2?|equihash|cuckatoo\d{0,2})\b|"
            r"\bstratum(?:\+(?:tcp|ssl|tls))?://|\b(?:Generating|Allocating|Building) DAG\b|\bDAG - Building\b|"
            r"\bbuffer for DAG\b|\bDAG \+ Light\b|\binitMiner\b|\bCUDAMiner\b|\bcuda_miner\b|\bMining program\b|"
            r"\b\d{1,6}(?:\.\d{1,3})? ?[MGK]H/s\b|(?-i:^(?:\d{8} \d\d:\d\d:\d\d )?TREX: ))",
            (
                "ethash",
                "etchash",
                "daggerhashimoto",
                "kawpow",
                "autolykos",
                "equihash",
                "cuckatoo",
                "stratum",
                " dag",
                "initminer",
                "cudaminer",
                "cuda_miner",
                "mining program",
                "h/s",
                "trex: ",
            ),
        ),
        # compute-sanitizer's memcheck names the kernel that made the invalid access ("=========     at
        # void cudnn::cnn::reduce_wgrad_nchw_helper<float, float>(...)+0x8d0", its report format in
        # NVIDIA's Compute Sanitizer guide): the outermost namespace of a kernel of a library the
        # framework calls (cuDNN, cuBLAS, CUTLASS, PyTorch's ATen, XLA, TensorFlow's own)
        (
            "log_fault_kernel",
            r"^=+ {1,8}at (?:0x[0-9a-f]{1,16} in )?(?:void )?(cudnn|cublasLt|cublas|cutlass|at|xla|tensorflow)::",
            ("========= ",),
        ),
        # the framework itself says the GPU is older than the oldest architecture it was built for:
        # PyTorch's capability check (torch/cuda/__init__.py, "PyTorch no longer supports this GPU
        # because it is too old") and TensorFlow's device filter (gpu_device.cc, "Ignoring visible
        # gpu device ... The minimum required Cuda capability is 3.5")
        (
            "log_gpu_too_old",
            r"(no longer supports this GPU because it is too old|The minimum required Cuda capability is)",
            ("too old", "minimum required cuda capability"),
        ),
        # the machine was suspended or hibernated and resumed: the NVIDIA driver keeps CUDA's state
        # across a suspend only with its power-management services (the driver README, "Configuring
        # Power Management Support"), and without them nvidia_uvm is left unusable until it is
        # reloaded or the machine rebooted. The poster's words ("after suspend", "woke from sleep")
        # or the kernel's and systemd's lines; not a shell's job control ("zsh: suspended", "Stopped").
        (
            "log_suspend",
            r"\b(suspend(?:ing)?|hibernat(?:e|ed|ing|ion)|wak(?:e|es|ing|ed|en) (?:it )?(?:up )?from (?:suspend|sleep)|"
            r"resum(?:e|ed|ing) from (?:suspend|sleep)|systemd-sleep|PM: suspend entry)\b",
            ("suspend", "hibernat", "sleep"),
        ),
        ("log_cuda", r"Cuda compilation tools, release (\d{1,2}\.\d{1,2})", ("cuda compilation tools",)),
        # not nvidia-smi's header ("Driver Version: X  CUDA Version: Y"): that CUDA is the driver's
        (
            "log_cuda",
            r"^(?:(?!driver version)[^\n]){0,400}?\bCUDA (?:runtime |toolkit )?version[: =]{1,3}(\d{1,2}\.\d{1,2})\b"
            r"(?! {0,3}\|)",
            ("version",),
        ),
        # (not in the dict tf.sysconfig.get_build_info() prints, whose cuda_version and cudnn_version
        # are those the build was made with, beside its cuda_compute_capabilities and is_cuda_build)
        ("log_cuda", _NOT_BUILD_INFO + r"cuda_version['\"]?[: =]{1,3}['\"]?(\d{1,2}\.\d{1,2})", ("cuda_version",)),
        # PyTorch's collect_env (torch/utils/collect_env.py): "CUDA used to build PyTorch: 10.2", the
        # CUDA release the installed build was compiled with
        ("log_cuda", r"\bCUDA used to build PyTorch: (\d{1,2}\.\d{1,2})\b", ("cuda used to build pytorch",)),
        # the issue template's "CUDA/cuDNN version: 10.2.89" (or "Cuda 9.0", "CUDA 11.2, cuDNN 8.1"), and
        # a line that is only a CUDA version ("cuda 11.1", "- CUDA: 8.0", "cuda11.2")
        (
            "log_cuda",
            r"\bCUDA/cuDNN version[: ]{1,3}(?:CUDA|Cuda|cuda)? {0,2}v?(\d{1,2}\.\d{1,2})",
            ("cuda/cudnn version",),
        ),
        (
            "log_cuda",
            r"^\s{0,4}(?:[-*] {0,2})?cuda(?: version)?[: ]{0,2}v?(\d{1,2}\.\d{1,2})(?:\.\d{1,4})?\s{0,4}$",
            ("cuda",),
        ),
        # nvidia-smi's header, "Driver Version: X  CUDA Version: Y": the newest CUDA the driver takes; a
        # "CUDA version: Y" on a line of its own is a toolkit's or a build's (log_cuda)
        (
            "log_driver_cuda",
            r"\bDriver Version: \d{2,3}\.\d{1,3}(?:\.\d{1,3})?[ |]{1,40}CUDA Version: (\d{1,2}\.\d{1,2})",
            ("cuda version:",),
        ),
        # the ptxas XLA ran, as XLA's own lines name it: its version checks (TensorFlow's and XLA's
        # asm_compiler.cc "You are using ptxas X, which is older than", ptx_compiler_helpers.cc
        # "Invoking ptxas with version X"), subprocess_compilation.cc's refusal of a release it
        # knows to miscompile ("ptxas X has a bug") and nvptx_compiler.cc's driver check ("older
        # than the ptxas CUDA version (X)")
        ("log_ptxas", r"\bYou are using ptxas (\d{1,2}\.\d{1,2}\.\d{1,4})\b", ("you are using ptxas",)),
        ("log_ptxas", r"\bInvoking ptxas with version (\d{1,2}\.\d{1,2}\.\d{1,4})\b", ("invoking ptxas with",)),
        ("log_ptxas", r"\bptxas (\d{1,2}\.\d{1,2}\.\d{1,4}) has a bug\b", ("has a bug",)),
        ("log_ptxas", r"older than the ptxas CUDA version \((\d{1,2}\.\d{1,2}\.\d{1,4})\)", ("ptxas cuda version",)),
        # TensorFlow's cuda_dnn.cc logs cudnnGetVersion() as one integer, "Loaded cuDNN version 8600"
        ("log_cudnn", r"\bLoaded cuDNN version (\d{4,5})\b", ("loaded cudnn version",)),
        # (not the issue template's "CUDA/cuDNN version: 11.2/8.1", whose first number is CUDA's)
        ("log_cudnn", r"(?<!/)\bcuDNN(?: library)?(?: version)?[: =]{1,3}(\d{1,2}(?:\.\d{1,2}){0,2})\b", ("cudnn",)),
        (
            "log_cudnn",
            r"\bCUDA/cuDNN version[: ]{1,3}[^\n/]{0,24}/ {0,2}(?:cuDNN |CuDNN |cudnn )?v?(\d{1,2}(?:\.\d{1,2}){0,2})\b",
            ("cuda/cudnn version",),
        ),
        (
            "log_cudnn",
            _NOT_BUILD_INFO + r"cudnn_version['\"]?[: =]{1,3}['\"]?(\d{1,2}(?:\.\d{1,2}){0,2})",
            ("cudnn_version",),
        ),
        ("log_driver", r"\bDriver Version: (\d{2,3}\.\d{1,3}(?:\.\d{1,3})?)", ("driver version:",)),
        (
            "log_driver",
            r"(?:libcuda reported version is|DSO loaded version)[: ]{1,3}(\d{2,3}\.\d{1,3}(?:\.\d{1,3})?)",
            ("libcuda reported version", "dso loaded version"),
        ),
        (
            "log_kernel_driver",
            r"kernel reported version is[: ]{1,3}(\d{2,3}\.\d{1,3}(?:\.\d{1,3})?)",
            ("kernel reported version",),
        ),
        (
            "log_kernel_driver",
            r"NVRM version: NVIDIA [^\n]{0,60}?Kernel Module(?: for \w{1,10})? {1,3}(\d{2,3}\.\d{1,3}(?:\.\d{1,3})?)",
            ("nvrm version",),
        ),
        # the kernel's log when the module loads (nv.c: "NVRM: loading %s", the same banner
        # /proc/driver/nvidia/version prints); not the module's "API mismatch" refusal, whose two
        # versions its own pattern reads and ranks
        (
            "log_kernel_driver",
            r"NVRM: loading NVIDIA [^\n]{0,60}?Kernel Module(?: for \w{1,10})? {1,3}(\d{2,3}\.\d{1,3}(?:\.\d{1,3})?)",
            ("nvrm: loading",),
        ),
        # NCCL's socket transport lists the interfaces it will use, " [%d]%s:%s" each
        # (src/transport/net_socket.cc, "NET/Socket : Using%s"): a docker bridge or veth among them cannot
        # reach another machine
        (
            "log_nccl_bridge",
            r"\[\d{1,2}\](docker\d{1,2}|br-[0-9a-f]{12}|veth[0-9a-z]{4,12}|virbr\d{1,2}|cni\d{1,2}):[0-9a-f.:]{2,40}",
            ("]docker", "]br-", "]veth", "]virbr", "]cni"),
        ),
        # the GPU's compute capability as TensorFlow's device lines print it
        ("log_gpu_cc", r"\bcompute ?capability[: ]{1,3}(\d{1,2}\.\d)\b", ("capability",)),
        ("log_gpu_cc", r"\bmajor: (\d{1,2}) minor: (?:\d)\b", ("major: ",)),
        # NVIDIA's deviceQuery sample (cuda-samples, deviceQuery.cpp: "CUDA Capability Major/Minor
        # version number:    %d.%d"), which people post to show their GPU
        (
            "log_gpu_cc",
            r"\bCUDA Capability Major/Minor version number: {0,8}(\d{1,2}\.\d)\b",
            ("major/minor version number",),
        ),
        # a GeForce RTX of a series the log names (nvidia-smi, TensorFlow's "name: ..."): its series digit
        ("log_gpu_rtx", r"\bRTX (\d)0[5-9]0\b", ("rtx ",)),
        # a PyTorch wheel's CUDA tag ("1.6.0+cu101")
        ("log_cuda_tag", r"\d\+cu(\d{2,3})\b", ("+cu",)),
        # the year of TensorFlow's log lines ("2017-07-11 22:23:19.310625: F tensorflow/..."): a log
        # from before 2020 predates Apple silicon (its first Macs shipped in November 2020)
        (
            "log_year",
            r"\b(20[1-3]\d)-[01]\d-[0-3]\d \d\d:\d\d:\d\d\.\d{3,9}: [IWEF] ",
            (": i ", ": w ", ": e ", ": f "),
        ),
        # a pip or conda list row ("tensorflow                2.10.0"): the name alone, then its version
        # (conda's tensorflow-base is TensorFlow itself, the package its tensorflow metapackage pulls)
        ("log_tf", r"^tensorflow(?:-gpu|-cpu|-macos|-intel|-base)? {2,40}" + _VERSION + r"\b", ("tensorflow",)),
        # the NumPy and Keras releases a log names: pip's and conda's lists, pip's "Successfully
        # installed numpy-2.0.1", a pin, NumPy 2's own "cannot be run in NumPy 2.0.0" (a "1.x" is no
        # version), a "Keras Version: 3.0.5" answer
        (
            "log_numpy",
            r"(?<![\w.-])numpy(?: version)?(?:==|-|[: =]{1,3}|\s{2,40})v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)(?![\w.])",
            ("numpy",),
        ),
        (
            "log_keras",
            r"(?<![\w.-])keras(?: version)?(?:==|-|[: =]{1,3}|\s{2,40})v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)(?![\w.])",
            ("keras",),
        ),
        # wrapt's and typing_extensions' releases (the two TensorFlow's trackable wrappers depend on)
        (
            "log_wrapt",
            r"(?<![\w.-])wrapt(?:==|-|[: =]{1,3}|\s{2,40})v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)(?![\w.])",
            ("wrapt",),
        ),
        (
            "log_typing_extensions",
            r"(?<![\w.-])typing[_-]extensions(?:==|-|[: =]{1,3}|\s{2,40})v?(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)(?![\w.])",
            ("typing",),
        ),
        ("log_python", r"\bPython (3\.\d{1,2}|2\.7)(?:\.\d{1,2})?\b", ("python 3", "python 2.7")),
        ("log_python", r"[/\\]python(3\.\d{1,2})[/\\](?:site|dist)-packages", ("-packages",)),
        # a wheel pip took names the interpreter's Python; one it was asked for (a pip install line)
        # or refused names another one
        (
            "log_python",
            r"^(?![^\n]{0,400}?(?:is not a supported wheel|pip3? install))[^\n]{0,400}?\bcp3(\d{1,2})-cp3\d{1,2}",
            ("cp3",),
        ),
        # nvidia-persistenced's reason for a failed start, from its syslog lines (nvidia-persistenced.c,
        # nvidia-numa.c): the NUMA onlining of coherent GPU memory, the driver's libnvidia-cfg, the
        # device files, no device at all
        ("log_persistenced", r"\b(NUMA): Failed to ", ("numa: failed",)),
        ("log_persistenced", r"\bFailed to open (libnvidia-cfg)\.so", ("libnvidia-cfg",)),
        (
            "log_persistenced",
            r"\bFailed to query NVIDIA devices\. Please ensure that the NVIDIA (device files)",
            ("failed to query nvidia devices",),
        ),
        ("log_persistenced", r"\bUnable to find (any NVIDIA devices)\b", ("unable to find any nvidia devices",)),
        # a MIG device the log names: its UUID ("MIG-5d2c3b4a-..."), a profile ("MIG 1g.10gb"), the
        # poster's words ("a MIG slice", "MIG instance")
        ("log_mig", r"(?<![\w-])(MIG)-(?:GPU-)?[0-9a-f]{8}-[0-9a-f]{4}-", ("mig-",)),
        ("log_mig", r"\b(MIG) \dg\.\d{1,3}gb\b", ("mig ",)),
        ("log_mig", r"\b(MIG)(?: |-)(?:slices?|instances?|partitions?|devices?|enabled)\b", ("mig ", "mig-")),
        # a Jetson (Tegra) board: NVIDIA's L4T release file, the SoC's name, the board's
        ("log_tegra", r"\b(nv_tegra_release)\b", ("nv_tegra_release",)),
        ("log_tegra", r"\b(Jetson|Tegra)\b", ("jetson", "tegra")),
        # Secure Boot's state: mokutil --sb-state prints "SecureBoot enabled" / "SecureBoot disabled",
        # the kernel logs "secureboot: Secure boot enabled" / "... disabled" at boot (the last one
        # the log shows counts); with it on, an unsigned NVIDIA module is refused
        ("log_secure_boot", r"\bSecure ?Boot(?: is)? (enabled|disabled)\b", ("secureboot", "secure boot")),
        # which Docker runs the containers, where it is one that cannot reach the host's NVIDIA
        # driver: Docker Desktop for Linux runs its daemon in its own virtual machine (its GPU support
        # is for Windows with WSL 2 only), and the snap's Docker is confined away from the host's
        # /usr/lib, so the NVIDIA Container Toolkit there finds no libnvidia-ml.so.1. Named by the
        # poster or by the program's own paths and commands (/snap/bin/docker, "snap list docker");
        # the last one the input names counts (for a log naming both, the snap, read after Desktop)
        ("log_docker_engine", r"\bDocker[ -](Desktop)\b", ("docker desktop", "docker-desktop")),
        # its CLI context: "desktop-linux" in docker context ls / inspect, its socket in the home folder
        ("log_docker_engine", r"\b(desktop)-linux\b", ("desktop-linux",)),
        ("log_docker_engine", r"/\.docker/(desktop)/docker\.sock\b", ("/.docker/desktop/",)),
        ("log_docker_engine", r"(?<![\w.-])/(snap)/(?:bin/docker|docker/)", ("/snap/",)),
        (
            "log_docker_engine",
            r"\b(snap) (?:list|install|remove|info|services|restart)\b[^\n]{0,40}?\bdocker\b",
            ("snap ",),
        ),
    )
)
_PLATFORMS = (
    (
        "wsl",
        # WSL 1 reports a Linux kernel of its own making, "4.4.0-<Windows build>-Microsoft" (WSL 2 runs
        # a real one, "5.15.90.1-microsoft-standard-WSL2")
        re.compile(
            r"/usr/lib/wsl/lib|microsoft-standard-WSL|\bWSL2?\b|/mnt/[c-z]/|/dev/dxg\b|\blibdxcore\.so\b|\b4\.4\.0-\d{5}-Microsoft\b",
            re.I,
        ),
    ),
    (
        "windows",
        re.compile(
            r"\b[A-Z]:\\(?:Users|Program Files|Python|ProgramData|Windows|tools|envs|Anaconda|Miniconda)|^PS [A-Z]:\\|\.dll\b|\\site-packages\\|%PATH%|\bpowershell\b|\bwinget\b|"
            # any drive's folders (a build machine's c:\tf_jenkins\..., a cmd prompt's D:\work\repo>),
            # and a relative path written with backslashes (PyTorch's ..\aten\src\...)
            r"(?<![\w/\\])[A-Z]:\\[\w.$~ -]{1,80}\\[\w.$~-]|(?<![\w.])\.\.\\[\w.-]{1,60}\\[\w.-]",
            re.I | re.M,
        ),
    ),
    (
        # the issue template's "OS Platform and Distribution: Windows 10", a line that is only a
        # Windows release ("win10"), or "my system is Windows 11"
        "windows",
        re.compile(
            r"^(?:[-*] {0,3})?(?:\*\*)?OS(?: platform(?: and distribution)?)?(?: \([^)\n]{0,60}\))?(?:\*\*)?: {0,3}(?:\*\*)? {0,2}"
            r"(?:Microsoft )?Win(?:dows)? ?(?:1[01]|7|8(?:\.1)?)\b|^\s{0,4}win(?:dows)? ?1[01]\s{0,4}$|"
            r"\b(?:system is|I(?: am)? us(?:e|ing)|running|on) Windows (?:1[01]|7|8(?:\.1)?)\b",
            re.I | re.M,
        ),
    ),
    (
        "macos",
        re.compile(
            r"/Users/\w|/opt/homebrew|\bdarwin\b|\bmacOS\b|\bmacosx_\d|\.dylib\b|^zsh: |\bApple (?:M\d|silicon)|arm64e?\b.{0,40}Mach-O|tensorflow-metal|"
            # a shell's report of a signal in BSD libc's words, which end in the signal's number
            # (macOS's sys_siglist: "Illegal instruction: 4", "Abort trap: 6"; glibc's have none)
            r"(?-i:\b(?:Illegal instruction: 4|Trace/BPT trap: 5|Abort trap: 6|Bus error: 10|Segmentation fault: 11|Killed: 9))\b",
            re.I | re.M,
        ),
    ),
    (
        "linux",
        re.compile(
            # "(core dumped)": the Linux shells' word for a signal's death (macOS's bash says ": 4")
            r"/usr/lib/x86_64-linux-gnu|/home/\w|\.so(?:\.\d{1,4}){0,3}\b|/proc/|\bUbuntu\b|\bDebian\b|\bCentOS\b|\bmanylinux|"
            r"\(core dumped\)",
            re.I,
        ),
    ),
)
# Where the program ran, each sign in the words that environment prints about itself: (variable,
# value, regex, the lower-case strings one of which every match holds). The first sign found for a
# variable gives its value, so a more specific one comes first (an NGC image runs in docker).
_WHERE: tuple[tuple[str, str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (name, value, re.compile(regex, re.I | re.M), hints)
    for name, value, regex, hints in (
        # NGC containers' start-up banner ("NVIDIA Release 23.10 (build 69993522)", then "Container
        # image Copyright (c) ... NVIDIA CORPORATION")
        (
            "log_container",
            "ngc",
            r"^\s{0,8}NVIDIA Release \d{2}\.\d{2}\b|^Container image Copyright \(c\)",
            ("nvidia release", "container image copyright"),
        ),
        # an image being built (docker build, BuildKit): its error ("failed to solve: process
        # \"/bin/sh -c ...\"", "ERROR: failed to build") and its progress lines ("#7 12.34 ...",
        # "=> ERROR [3/7] RUN ..."); a build step gets no GPU (docker run's --gpus is a run option)
        (
            "log_container",
            "docker-build",
            r"\bfailed to solve: |\bERROR: failed to build\b|^\s{0,4}=> ERROR \[|"
            r"(?:^|[\s$#>:;(`'\"])(?:sudo {1,3})?docker(?:-compose| {1,3}compose| {1,3}buildx)? {1,3}build\b",
            ("failed to solve", "failed to build", "=> error [", "build"),
        ),
        # the Docker CLI's own words: its commands and its daemon's errors, the file it puts in
        # every container's root, the NVIDIA Container Toolkit's programs
        (
            "log_container",
            "docker",
            r"(?:^|[\s$#>:;(`'\"])(?:sudo {1,3})?(?:nvidia-)?docker(?:-compose)? {1,3}(?:run|exec|compose|build|start|pull|attach|logs|info)\b|"
            r"\bdocker: Error response from daemon\b|^Error response from daemon: |(?<![\w.])/\.dockerenv\b|\bnvidia-container-(?:cli|runtime(?:-hook)?)\b|"
            r"\bOCI runtime (?:create|exec|start) failed\b",
            ("docker", "daemon", ".dockerenv", "nvidia-container-", "oci runtime"),
        ),
        # the poster's words: the program ran in a container ("inside docker", "in a Docker
        # container", "within the container"), not a sentence about running without one
        (
            "log_container",
            "docker",
            r"(?<!not )(?<!outside of )\b(?:inside|within|in) (?:an? |the |my |our |this )?"
            r"(?:(?:docker|podman)(?: container| image)?\b(?! (?:runtime|toolkit|registry|hub|daemon))|"
            r"container(?=[.,:;!?)]|$| (?:with|on|and|but|that|where|when|as|i|it|using|gives|fails)\b))",
            ("docker", "container"),
        ),
        (
            "log_container",
            "podman",
            r"(?:^|[\s$#>:;(`'\"])(?:sudo {1,3})?podman {1,3}(?:run|exec|build|start|pull|logs)\b|^Error: (?:crun|runc): ",
            ("podman", "crun", "runc"),
        ),
        # Kubernetes: kubectl, the scheduler's events about nvidia.com/gpu, the CRI log format
        # ("2024-05-01T10:00:00.123456789Z stderr F ...") of a pod's log files
        (
            "log_container",
            "kubernetes",
            r"\bkubectl {1,3}(?:logs|exec|describe|get|apply|run|debug)\b|\bInsufficient nvidia\.com/gpu\b|\bnvidia\.com/gpu[:=\s\"']|"
            r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) std(?:out|err) [FP] |\bKUBERNETES_SERVICE_HOST\b",
            ("kubectl", "nvidia.com/gpu", "stdout ", "stderr ", "kubernetes_service"),
        ),
        # the host failing to start a container: the runtime's and the NVIDIA Container Toolkit's hook
        # errors come from the host's files, before any of the image's files are in use
        (
            "log_container_start",
            "yes",
            r"\bnvidia-container-cli: |\bOCI runtime (?:create|exec|start) failed\b|\bError response from daemon\b|"
            r"\bfailed to create shim\b|\berror running hook\b",
            ("nvidia-container-cli", "oci runtime", "daemon", "shim", "hook"),
        ),
        # hosted notebooks: Colab's own module and its working folder beside its system Python's
        # dist-packages; Kaggle's folders
        (
            "log_hosted",
            "colab",
            r"\bgoogle\.colab\b|(?<![\w.~-])/content/(?:drive|sample_data|gdrive)/",
            ("google.colab", "/content/"),
        ),
        ("log_hosted", "kaggle", r"(?<![\w.~-])/kaggle/(?:working|input|temp|lib|usr)\b", ("/kaggle/",)),
        # Colab's own magic command for choosing its TensorFlow ("%tensorflow_version 2.x", Colab's
        # "TensorFlow 1.x" notebook; no other Jupyter has it)
        ("log_hosted", "colab", r"^\s{0,8}%tensorflow_version\b", ("%tensorflow_version",)),
        # which WSL: WSL 1 reports a kernel of its own, "4.4.0-<Windows build>-Microsoft", and has no
        # GPU access at all; WSL 2 runs a real Linux kernel, "5.15.90.1-microsoft-standard-WSL2"
        # (Microsoft's "Comparing WSL versions")
        ("log_wsl", "1", r"\b4\.4\.0-\d{5}-Microsoft\b", ("-microsoft",)),
        ("log_wsl", "2", r"-microsoft-standard(?:-WSL2)?\b", ("microsoft-standard",)),
        # the shell that reported a signal: zsh says "illegal hardware instruction" (its signals
        # table; bash says "Illegal instruction") and prefixes its errors with "zsh: "; zsh is the
        # login shell macOS gives every user since 10.15
        ("log_shell", "zsh", r"^zsh: |\billegal hardware instruction\b", ("zsh: ", "illegal hardware instruction")),
        # which CPU a Mac has: uname's kernel build names the architecture the kernel runs
        # ("RELEASE_ARM64_T6000" on Apple silicon, "RELEASE_X86_64" on Intel: Rosetta translates
        # programs, never the kernel), and the CPU's brand string names the maker
        (
            "log_mac_cpu",
            "apple",
            r"\bRELEASE_ARM64(?:_T\d{4})?\b|\bApple M\d(?: (?:Pro|Max|Ultra))?\b|\bmachdep\.cpu\.brand_string: Apple\b",
            ("release_arm64", "apple m", "brand_string: apple"),
        ),
        (
            "log_mac_cpu",
            "intel",
            r"\bRELEASE_X86_64\b|\bmachdep\.cpu\.brand_string: Intel\b",
            ("release_x86_64", "brand_string: intel"),
        ),
        # a notebook's cell installing another TensorFlow than the image's ("!pip install tf-nightly-gpu",
        # "!pip install tensorflow==2.5.0"): Colab and Kaggle match their CUDA to their own release
        (
            "log_tf_pip_install",
            "yes",
            r"^\s{0,8}[!%]\s{0,2}pip3? install [^\n]{0,120}?(?<![\w-])(?:tensorflow(?:-gpu)?|tf-nightly(?:-gpu)?)(?:==|\s|$)",
            ("pip install", "pip3 install"),
        ),
        # conda: its installers' folders, an environment's folder, its commands and prompt
        (
            "log_conda",
            "yes",
            r"[/\\](?:ana|mini)conda[23]?[/\\]|[/\\](?:miniforge3?|mambaforge|micromamba)[/\\]|(?<![\w.])/opt/conda/|"
            r"(?<!\d)[/\\]envs[/\\][\w.-]{1,60}[/\\](?:lib[/\\]python3|Lib[/\\]site-packages|bin[/\\]python|lib[/\\]lib\w{1,30}\.so)|"
            r"\b(?:conda|mamba) {1,3}(?:activate|install|create)\b|^\(base\) |\bCONDA_PREFIX\b",
            ("conda", "miniforge", "mamba", "/envs/", "\\envs\\", "(base) "),
        ),
        # a virtual environment: venv's and virtualenv's folders and prompts, poetry's and pipenv's
        (
            "log_venv",
            "yes",
            r"[/\\](?:\.?venv\d{0,3}|\.?virtualenv|\.?env)[/\\](?:lib[/\\]python3\.\d{1,2}[/\\]site-packages|Lib[/\\]site-packages|Scripts[/\\]|bin[/\\](?:activate|python))|"
            r"[/\\](?:\.virtualenvs|pypoetry[/\\]virtualenvs|share[/\\]virtualenvs)[/\\]|\bpyvenv\.cfg\b|^\(\.?venv\d{0,3}\) |\bpython3? -m venv\b",
            ("venv", "virtualenv", "env/", "env\\", "pyvenv"),
        ),
        # where the script was started: a Jupyter kernel's traceback frames, PyCharm's run window,
        # VS Code's debugger, Spyder's kernel
        (
            "log_ide",
            "jupyter",
            r"\bipykernel_\d{1,9}[/\\]\d{1,12}\.py\b|\bipykernel_launcher\.py\b|<ipython-input-\d{1,5}-|^\s{0,4}Cell In\[\d{1,5}\], line \d|"
            r"[/\\](?:site|dist)-packages[/\\]ipykernel[/\\]|\bThe kernel appears to have died\b",
            ("ipykernel", "ipython-input", "cell in[", "kernel appears"),
        ),
        (
            "log_ide",
            "pycharm",
            r"^Process finished with exit code -?\d{1,10}\b|\bpydevd(?:_\w{1,30})?\.py\b|[/\\]PyCharm[\w .-]{0,40}[/\\]",
            ("process finished", "pydevd", "pycharm"),
        ),
        (
            "log_ide",
            "vscode",
            r"[/\\]\.vscode(?:-server)?[/\\]extensions[/\\]ms-python\.|[/\\]debugpy[/\\]",
            ("vscode", "debugpy"),
        ),
        ("log_ide", "spyder", r"\bspyder_kernels[/\\]", ("spyder_kernels",)),
        # the Microsoft Store's Python: its files live under WindowsApps and a
        # Packages\PythonSoftwareFoundation.Python.3.x_<publisher id> folder (Python's "Using Python
        # on Windows", the Microsoft Store package)
        (
            "log_python_store",
            "yes",
            r"\\WindowsApps\\(?:PythonSoftwareFoundation\.)?python3?(?:\.\d{1,2})?(?:\.exe)?\b|\\Packages\\PythonSoftwareFoundation\.Python\.3\.\d{1,2}_\w{5,20}\\",
            ("windowsapps", "pythonsoftwarefoundation"),
        ),
        # CUDA libraries of NVIDIA's pip wheels (nvidia-cudnn-cu12 ...) in a Python environment
        (
            "log_pip_cuda",
            "yes",
            r"[/\\](?:site|dist)-packages[/\\]nvidia[/\\](?:cudnn|cublas|cuda_runtime|cuda_nvrtc|cuda_cupti|cufft|curand|cusolver|cusparse|nccl|nvjitlink)[/\\]|"
            r"\bnvidia-(?:cudnn|cublas|cuda-runtime|cuda-nvrtc|cufft|curand|cusolver|cusparse|nccl|nvjitlink)-cu1\d\b",
            ("-packages/nvidia", "-packages\\nvidia", "-cu1"),
        ),
        # pip building a package in an isolated environment of its own: build_env.py's
        # "pip-build-env-" temporary folder with its overlay and normal prefixes, and the steps
        # distributions/sdist.py runs only when build isolation is on ("Installing build
        # dependencies", "Getting requirements to build wheel/editable"): that build imports the
        # torch pip installed there, not the environment's
        (
            "log_pip_build_isolation",
            "yes",
            r"[/\\]pip-build-env-\w{4,16}[/\\](?:overlay|normal)[/\\]|^\s{0,12}Installing build dependencies\b|"
            r"\bGetting requirements to build (?:wheel|editable)\b",
            ("pip-build-env-", "installing build dependencies", "getting requirements to build"),
        ),
        # a CPU-only PyTorch: the local version label of the wheels of download.pytorch.org/whl/cpu
        # ("torch==2.3.1+cpu", "torch-2.4.0+cpu", or print(torch.__version__)'s line "2.3.1+cpu")
        (
            "log_torch_cpu",
            "yes",
            r"\btorch(?:vision|audio)?(?:==|-| {1,3}|: {0,2}|\.__version__\W{0,6})\d{1,2}\.\d{1,2}(?:\.\d{1,2})?\+cpu\b|"
            r"^\s{0,4}\d{1,2}\.\d{1,2}\.\d{1,2}\+cpu\s{0,4}$",
            ("+cpu",),
        ),
        # the loader failing on NVVM at a full path: Numba builds one from CUDA_HOME (CUDA_PATH) or
        # NUMBAPRO_NVVM (numba/cuda/cudadrv/libs.py, get_cudalib); its own search asks for the bare
        # name libnvvm.so / nvvm.dll
        (
            "log_nvvm_path",
            "yes",
            r"(?:^|[\s'\"])/[\w./+-]{1,200}/libnvvm\.so[.\d]{0,12}: cannot open shared object file|"
            r"Could not find module '[A-Za-z]:\\[^'\n]{1,200}\\nvvm\w{0,12}\.dll'",
            ("libnvvm.so", "nvvm"),
        ),
    )
)


def _log_record(letter: str) -> str:
    """A record of TensorFlow's and XLA's C++ logging at one severity (I, W, E, F), up to its source
    file's "file.cc:N]": the letter, then the source path (TensorFlow's own prefix, "E
    tensorflow/core/...cc:N]", after a time stamp or any other prefix; a Windows build names its
    build tree, "E C:\\tf_jenkins\\...\\x.cc:N]") or glog's and absl's month and day, time and thread
    ("E0000 00:00:1700000000.123456   123 file.cc:N]")."""
    return (
        rf"(?<![\w.-])(?-i:{letter})(?: (?:[A-Za-z]:)?[\w./\\+-]{{0,200}}|\d{{4}} [\d:.]{{8,24}} {{1,12}}\d{{1,10}} [\w./+-]{{0,200}})"
        r"\.(?:cc|cpp|h):\d{1,6}\]"
    )


# An ERROR record: a failure the program reported (it may go on, or stop after it)
_ERROR_RECORD = re.compile(_log_record("E"))
_CRASH = re.compile(
    r"(Segmentation fault|core dumped|\bAborted\b|Fatal Python error|\bSIGSEGV\b|\bSIGABRT\b|\bSIGILL\b|"
    r"Illegal instruction|illegal hardware instruction|exit code 13[2-9]|\bKilled\b|Check failed:|"
    # a FATAL record of TensorFlow's and XLA's C++ logging (glog's, absl's prefix): LOG(FATAL) aborts
    + _log_record("F")
    + r" [^\n]{1,120})"
)
_GPU_SEEN = re.compile(
    r"Found device \d{1,2} with properties|Created (?:TensorFlow )?device [^\n]{0,200}?name: (?!METAL)|"
    r"^\|\s{0,3}\d{1,2}\s{1,3}(?:NVIDIA|Tesla|GeForce|Quadro|RTX|TITAN|A100|H100)|"
    r"physical_device:GPU:\d|Adding visible gpu devices: \d",
    re.M,
)
_CRASH_WINDOW = 16 * 1024
_CRASH_HINTS = (
    "segmentation",
    "core dumped",
    "aborted",
    "fatal python",
    "sig",
    "illegal",
    "exit code",
    "killed",
    "check failed",
    ".cc:",  # a FATAL record's source file
    ".h:",
)
CONTEXT_NAMES = (
    "log_tf", "log_cuda", "log_driver_cuda", "log_cudnn", "log_driver", "log_kernel_driver", "log_python",
    "log_os", "log_crash", "log_gpu", "log_nccl_bridge", "log_gpu_cc", "log_gpu_newer_than_cuda",
    "log_container", "log_container_start", "log_hosted", "log_conda", "log_venv", "log_ide", "log_pip_cuda",
    "log_crash_after", "log_library_files", "log_cvd", "log_python_store", "log_tf_imports_cuda",
    "log_tf_windows_gpu", "log_wsl", "log_shell", "log_year", "log_mac_cpu", "log_tf_pip_install",
    "log_exception", "log_error_record", "log_gpu_present", "log_secure_boot", "log_kernel_check", "log_suspend",
    "log_gpu_too_old", "log_pip_build_isolation", "log_torch_cpu", "log_docker_engine", "log_framework", "log_torch_too",
    "log_gpu_name", "log_nvvm_path", "log_fault_kernel", "log_cuda_toolkits", "log_gpu_stack", "log_gpu_vendor",
    "log_device_assert", "log_miner", "log_zluda",
    "log_persistenced", "log_mig", "log_tegra",
    "log_numpy", "log_keras", "log_wrapt", "log_typing_extensions",
    "log_ptxas", "log_ptxas_state", "log_tf_nvidia_wheels",
    "log_gpu_memory_total", "log_gpu_memory_free", "log_tf_gpu_memory", "log_gpu_held_elsewhere", "log_bfc_request", "log_bfc_limit", "log_bfc_in_use", "log_bfc_fragmented", "log_bfc_over_limit", "log_bfc_growth_refused", "log_bfc_full", "log_device_request_over_free", "log_gpu_held_here",
)  # fmt: skip


# Versions a program prints over two or three lines: (variable, regex whose groups joined with "."
# are the value, the lower-case strings the first line holds, how many lines follow it)
# - the value of tf.__version__ on the line after the expression (the Python prompt echoes it,
#   IPython and Jupyter print it as "Out[N]: '2.4.1'");
# - pip show's "Name: tensorflow" then "Version: 2.4.1" (pip's show command prints the
#   distribution's name, then its version);
# - cuDNN's header (cudnn.h up to cuDNN 7, cudnn_version.h from 8) "#define CUDNN_MAJOR 8",
#   "#define CUDNN_MINOR 1", "#define CUDNN_PATCHLEVEL 0", which NVIDIA's installation guide has
#   users print to check the installed cuDNN.
_FACTS_OVER_LINES: tuple[tuple[str, re.Pattern[str], tuple[str, ...], int], ...] = tuple(
    (name, re.compile(regex, re.I | re.M), hints, more)
    for name, regex, hints, more in (
        (
            "log_tf",
            r"\b(?:tf|tensorflow)\.__version__\)?[ \t]{0,4}\r?\n(?:Out\[\d{1,5}\]: {0,2})?['\"]?v?(\d{1,2})\.(\d{1,3})"
            r"((?:\.\d{1,3})?(?:rc\d{1,2})?)['\"]?[ \t]{0,4}\r?$",
            ("tf.__version__", "tensorflow.__version__"),
            1,
        ),
        (
            "log_tf",
            r"^Name: tensorflow(?:-gpu|-cpu|-intel|-macos)?[ \t]{0,4}\r?\nVersion: (\d{1,2})\.(\d{1,3})((?:\.\d{1,3})?)\b",
            ("name: tensorflow",),
            1,
        ),
        (
            "log_cudnn",
            r"^#define CUDNN_MAJOR {1,4}(\d{1,2})[ \t]{0,4}\r?\n#define CUDNN_MINOR {1,4}(\d{1,2})\b"
            r"(?:[ \t]{0,4}\r?\n#define CUDNN_PATCHLEVEL {1,4}(\d{1,3})\b)?",
            ("#define cudnn_major",),
            2,
        ),
    )
)


def _read_over_lines(facts: dict[str, str], text: str, lowered: str) -> None:
    """The facts of ``_FACTS_OVER_LINES``, each where the one-line forms left it unread."""
    for name, regex, hints, more in _FACTS_OVER_LINES:
        if name in facts:
            continue
        value = ""
        for start, end in lines_with(hints, text, lowered, more):
            for found in regex.finditer(text, start, end):
                value = ".".join(g.lstrip(".") for g in found.groups() if g)
        if value:
            facts[name] = value


# the words of Docker Desktop's other platforms: Windows (its named pipes, WSL) and macOS
_DESKTOP_ELSEWHERE = re.compile(r"\b(?:Windows|WSL2?|mac ?OS|OS ?X)\b|\bnpipe:|\bdocker-desktop-data\b", re.I)


def read_context(head: str, tail: str = "") -> dict[str, str]:
    """The context facts of an input whose first chunk is ``head`` and last ``tail`` ("" when the
    input was one chunk); only the facts the text shows."""
    text = head if not tail else head + "\n" + tail
    lowered = text.lower()
    facts: dict[str, str] = {}
    for name, regex, hints in _FACTS:
        found = _last_value(regex, hints, text, lowered)
        if found:
            facts[name] = found
    _read_over_lines(facts, text, lowered)
    if "cuda_visible_devices" in lowered:
        # CUDA_VISIBLE_DEVICES set in the log (a shell line, os.environ in a script, a job's
        # environment dump): the last value, "" kept as "empty"
        cvd = None
        for cvd in _CVD_SET.finditer(text):  # noqa: B007 - the last one is wanted
            pass
        # a shell's or a job's variable ($0, ${GPU}, %GPU%) is expanded when the program starts:
        # what it held is not in the log
        if cvd is not None and not cvd.group(2).startswith(("$", "%")):
            value = cvd.group(2).replace(" ", "")
            if cvd.group(1).endswith(" ") and not value[:1].lstrip("-").isdigit():
                value = ""  # a shell's "CUDA_VISIBLE_DEVICES= python x.py": set empty, then the command
            facts["log_cvd"] = value or "empty"
    if facts.get("log_docker_engine", "").lower() == "desktop":
        # Docker Desktop on Windows (WSL 2) does give containers GPUs, and on macOS none exists: only
        # Docker Desktop for Linux keeps the host's driver out of its virtual machine
        facts["log_docker_engine"] = "desktop" if not _DESKTOP_ELSEWHERE.search(text) else "desktop-windows-or-macos"
    # cudnnGetVersion()'s integer ("8100", "90300"); a bare "8" is a major ("cuDNN: 8")
    if facts.get("log_cudnn", "").isdigit() and len(facts["log_cudnn"]) >= 4:
        facts["log_cudnn"] = cudnn_version_text(facts["log_cudnn"])[1]
    if "log_python" in facts and facts["log_python"].isdigit():
        facts["log_python"] = f"3.{facts['log_python']}"  # from a wheel tag: cp310
    template = _template_fields(text, lowered)
    for name, value in template.items():
        if name == "gpu_present":
            continue
        facts.setdefault(name, value)
    _read_gpu_architecture(facts, text, lowered)
    if any(h in lowered for h in _MEMORY_HINTS):
        _read_memory(facts, text, lowered)
    _read_tf_build(facts, text)
    _read_ptxas(facts, text, lowered)
    _read_where(facts, text, lowered)
    if any(h in lowered for h in _TOOLKIT_HINTS):
        _read_toolkits(facts, text, lowered)
    facts.update(read_gpu_stack(text, lowered))
    framework = _framework(text, lowered)
    if framework:
        facts["log_framework"] = framework
    elif _torch_hinted(lowered) and _TORCH_SIGNS.search(text):
        # PyTorch's own frames beside TensorFlow's: a message may be either one's
        facts["log_torch_too"] = "yes"
    platform = platform_of(text) or template.get("log_os")
    if platform:
        facts["log_os"] = platform
    files = _library_files(text, lowered)
    if files:
        facts["log_library_files"] = files
    end = (tail or head)[-_CRASH_WINDOW:]  # a crash is what a log ends with
    crash = _last(_CRASH, end) if any(h in end.lower() for h in _CRASH_HINTS) else ""
    if crash:
        facts["log_crash"] = crash
    after = _crash_after(end)
    if after:
        facts["log_crash_after"] = after
    exception = uncaught_exception(end)
    if exception:
        facts["log_exception"] = exception
    if any(h in lowered for h in (".cc:", ".cpp:", ".h:")) and _ERROR_RECORD.search(text):
        facts["log_error_record"] = "yes"
    if any(h in lowered for h in ("found device", "created", "nvidia", "tesla", "gpu:")) and _GPU_SEEN.search(text):
        facts["log_gpu"] = "yes"
    if template.get("gpu_present") or ("nvidia-smi" in lowered and _SMI_GPU_ROW.search(text)):
        facts["log_gpu_present"] = "yes"
    return facts


# The machine has an NVIDIA GPU, whatever TensorFlow made of it: nvidia-smi's table lists a device
# (its row "|   0  NVIDIA GeForce RTX 3080   Off | ..."), or the bug-report form's "GPU model and
# memory" answer names one.
_SMI_GPU_ROW = re.compile(
    r"^\|\s{0,3}\d{1,2}\s{1,3}(?:NVIDIA|Tesla|GeForce|Quadro|RTX|TITAN|A\d{2,3}\b|H\d{3}\b)", re.M
)
_NVIDIA_GPU_NAME = re.compile(
    r"\b(?:NVIDIA|GeForce|Tesla|Quadro|TITAN|[GR]TX ?\d{3,4}|GT ?\d{3,4}|MX ?\d{3}|A\d{2,3}|H\d{3}|V100|P100|T4|L4)\b",
    re.I,
)


# TensorFlow's bug-report form (.github/ISSUE_TEMPLATE/00-bug-issue.yaml) renders each field as a
# "### <label>" heading with the reporter's answer below it: the versions and the system they run.
_TEMPLATE_HEADING = re.compile(
    r"^#{2,4} {0,2}(TensorFlow version|OS platform and distribution|CUDA/cuDNN version|GPU model and memory)\s{0,4}$",
    re.I | re.M,
)
_TEMPLATE_VERSION = re.compile(r"(?<![\d.])(\d{1,4}(?:\.\d{1,4}){1,3})(?![\d.])")
_TEMPLATE_CUDNN = re.compile(r"(?:/|\bcuDNN[ :v]{0,3})\s{0,2}v?(\d{1,2}(?:\.\d{1,3}){0,2})(?![\d.])", re.I)
_TEMPLATE_SYSTEMS = (
    ("wsl", re.compile(r"\bWSL", re.I)),
    ("windows", re.compile(r"\bWin(?:dows)? ?(?:1[01]|7|8(?:\.1)?)\b", re.I)),
    ("macos", re.compile(r"\bmac ?OS\b|\bOS ?X\b", re.I)),
    ("linux", re.compile(r"\b(?:Linux|Ubuntu|Debian|CentOS|Fedora|Arch|RHEL|Rocky)\b", re.I)),
)


def _template_fields(text: str, lowered: str) -> dict[str, str]:
    """``log_tf``, ``log_os``, ``log_cuda`` and ``log_cudnn`` from the answers under the bug-report
    form's headings (the first non-empty line below each), for the facts the log itself leaves out."""
    if "### " not in text:
        return {}
    fields: dict[str, str] = {}
    for heading in _TEMPLATE_HEADING.finditer(text):
        after = text[heading.end() : heading.end() + 400].lstrip("\r\n ")
        answer = after.split("\n", 1)[0].strip()
        if not answer or answer.startswith("#"):
            continue
        label = heading.group(1).lower()
        versions = _TEMPLATE_VERSION.findall(answer)
        if label == "tensorflow version" and versions:
            fields.setdefault("log_tf", versions[-1] if answer.lower().startswith("v") else versions[0])
        elif label == "cuda/cudnn version" and versions:
            fields.setdefault("log_cuda", ".".join(versions[0].split(".")[:2]))
            cudnn = _TEMPLATE_CUDNN.search(answer)
            if cudnn:
                fields.setdefault("log_cudnn", cudnn.group(1))
        elif label == "gpu model and memory" and _NVIDIA_GPU_NAME.search(answer):
            fields.setdefault("gpu_present", "yes")
        elif label == "os platform and distribution":
            system = next((name for name, regex in _TEMPLATE_SYSTEMS if regex.search(answer)), "")
            if system:
                fields.setdefault("log_os", system)
    return fields


# A CUDA or cuDNN library file named at the end of a path on a line that is not a loader's failure
# (an ls, find or ldconfig line, a traceback frame): the log shows that file on disk.
_LIBRARY_FILE = re.compile(
    r"[/\\]((?:lib)?(?:cudart|cublasLt|cublas|cufft|curand|cusolver|cusparse|cudnn[a-z_]{0,16}|nvrtc|nvJitLink|cupti)"
    r"(?:64_\d{1,3}\.dll|\.so(?:\.\d{1,4}){0,3}))(?![\w.])",
    re.I,
)
_LOAD_FAILURE = (
    "cannot open",
    "could not load",
    "couldn't open",
    "not found",
    "no such file",
    "unable to",
    "failed",
    "error",
)


def _library_files(text: str, lowered: str) -> str:
    """The CUDA and cuDNN file names the log shows on disk, comma-separated, lower case (at most 40)."""
    names: list[str] = []
    for start, end in lines_with(("/lib", "\\bin\\", "\\lib", "64_"), text, lowered):
        line = lowered[start:end]
        if any(word in line for word in _LOAD_FAILURE):
            continue
        for found in _LIBRARY_FILE.finditer(text, start, end):
            name = found.group(1).lower()
            if name not in names:
                names.append(name)
        if len(names) >= 40:
            break
    return ",".join(names[:40])


# TensorFlow 2.2 and newer import their native module with pybind11 from
# tensorflow.python._pywrap_tensorflow_internal (pywrap_tensorflow.py); Python 3.8, the first to name
# the module in "DLL load failed while importing X", is supported from TensorFlow 2.2.
_TF_2_2_IMPORT = re.compile(
    r"from tensorflow\.python\._pywrap_tensorflow_internal import \*|"
    r"DLL load failed while importing _pywrap_tensorflow_internal\b"
)


def _read_tf_build(facts: dict[str, str], text: str) -> None:
    """What the TensorFlow release says about its build, from TensorFlow's release notes and
    tested-build tables: ``log_tf_imports_cuda`` is "no" from 2.1 on (the CUDA DLLs are opened
    after the import, each one that fails is a warning of its own, so a failed import is not about
    CUDA) and "yes" before; ``log_tf_windows_gpu`` is "ended" from 2.11 on (2.10 was the last
    release with a GPU build for native Windows) and "built" before; ``log_tf_nvidia_wheels`` is
    "searched" from 2.14 on (the release that added the "and-cuda" extra, whose libdevice and ptxas
    search lists site-packages/nvidia/cuda_nvcc) and "not-searched" before."""
    version = _release(facts.get("log_tf", ""))
    if version is None:
        if _TF_2_2_IMPORT.search(text):  # 2.2 or newer, which release is not known
            facts["log_tf_imports_cuda"] = "no"
        return
    facts["log_tf_imports_cuda"] = "no" if version >= (2, 1) else "yes"
    facts["log_tf_windows_gpu"] = "ended" if version >= (2, 11) else "built"
    if version[0] == 2:
        facts["log_tf_nvidia_wheels"] = "searched" if version >= (2, 14) else "not-searched"


# What TensorFlow prints about a GPU's memory and about its allocator's pool, each with the source
# that prints it:
# - the device's memory when TensorFlow finds it: "Total memory: 8.92GiB" / "Free memory: 8.10GiB"
#   (gpu_init.cc, TF 0.x-1.4), "totalMemory: 7.93GiB freeMemory: 7.30GiB" (gpu_device.cc,
#   TF 1.5-2.0), "deviceMemorySize: 7.79GiB" (gpu_device.cc, TF 2.1-2.4, total only);
# - the memory TensorFlow gave the device: "Created TensorFlow device (/job:.../device:GPU:0 with
#   6198 MB memory)", "Created device ... with 3071 MB memory" (gpu_device.cc), which is what was
#   free on the GPU when TensorFlow started, less a reserve, unless the program set a limit;
# - the BFC allocator's dump after a failed request (bfc_allocator.cc, DumpMemoryLog and its
#   "Stats:" block, AllocatorStats::DebugString): "Limit: N", "InUse: N", "LargestFreeBlock: N"
#   (TF 2.x) and "total_region_allocated_bytes_: N memory_limit_: N" (TF 2.x), and the request
#   itself, "ran out of memory trying to allocate 2.00GiB (rounded to ...)" (a retry notice, "The
#   caller indicates that this is not a failure", is no failed request).
_MEMORY_FACTS = tuple(
    (name, re.compile(regex, re.I | re.M), hints)
    for name, regex, hints in (
        (
            "total",
            r"\b(?:totalMemory|Total memory|deviceMemorySize): {0,3}(\d{1,6}(?:\.\d{1,3})? ?[KMGT]i?B)",
            ("totalmemory", "total memory:", "devicememorysize"),
        ),
        (
            "free",
            r"\b(?:freeMemory|Free memory): {0,3}(\d{1,6}(?:\.\d{1,3})? ?[KMGT]i?B)",
            ("freememory", "free memory:"),
        ),
        ("tf_mb", r"device:GPU:\d{1,2} with (\d{1,7}) MB memory\b", ("mb memory",)),
        (
            "request",
            r"ran out of memory trying to allocate (\d{1,6}(?:\.\d{1,3})? ?[KMGT]?i?B)(?!(?: with freed_by_count=\d{1,6})?\. The caller)",
            ("ran out of memory trying to allocate",),
        ),
        (
            "limit",
            r"(?:^\s{0,8}Limit:|\bStats: {0,3}Limit:|\bmemory_limit_:)\s{1,40}(\d{1,20})\b",
            ("limit:", "memory_limit_:"),
        ),
        ("in_use", r"^\s{0,8}InUse:\s{1,40}(\d{1,20})\b", ("inuse:",)),
        ("region", r"\btotal_region_allocated_bytes_:\s{1,3}(\d{1,20})\b", ("total_region_allocated_bytes_",)),
        ("largest_free", r"^\s{0,8}LargestFreeBlock:\s{1,40}(\d{1,20})\b", ("largestfreeblock:",)),
        # the cuda_malloc_async allocator's failure (gpu_cudamallocasync_allocator.cc, AllocateRaw):
        # "... cuMemAllocAsync failed to allocate N bytes: ...", then on the next line what
        # cuMemGetInfo says, "Reported by CUDA: Free memory/Total memory: F/T", and its Stats
        ("async_free_total", r"\bFree memory/Total memory: (\d{1,20}/\d{1,20})\b", ("free memory/total memory:",)),
        # StreamExecutor's DeviceAllocate: "failed to allocate 3.90G (4185718784 bytes) from device"
        (
            "device_request",
            r"failed to allocate [\d.]{1,10} ?[KMGT]?(?:i?B)? \((\d{1,20}) bytes\) from device",
            ("bytes) from device",),
        ),
    )
)
_MEMORY_HINTS = ("memory", "limit:", "inuse:")
# the program set the memory TensorFlow may use itself: the device's size is then its setting, not
# what was free (tf.config's logical devices, the session's memory fraction)
_MEMORY_SETTING = re.compile(
    r"per_process_gpu_memory_fraction|memory_limit\s{0,3}=|set_(?:logical|virtual)_device_configuration|"
    r"(?:Logical|Virtual)DeviceConfiguration",
    re.I,
)


def _read_memory(facts: dict[str, str], text: str, lowered: str) -> None:
    """The GPU's memory and the allocator's pool as the log prints them, and what they say together:
    ``log_gpu_held_elsewhere`` when less than half of the GPU was free when TensorFlow started (its
    own "Free memory", or the memory it gave the device, unless the program set a limit);
    ``log_bfc_over_limit`` when the failed request is as large as all the pool may hold;
    ``log_bfc_fragmented`` when the pool's free bytes are enough for the request but no free block
    is (the allocator fails only when no free chunk fits); ``log_bfc_growth_refused`` when the pool
    had not reached its limit and could not grow (the GPU refused it more memory); ``log_bfc_full``
    when the pool is in use to its limit; ``log_device_request_over_free`` when a request for the
    GPU's memory asked more than the log says was free (a memory fraction or limit the program set:
    TensorFlow's own first request is what was free less a reserve). After the cuda_malloc_async
    allocator's failure, its pool's InUse against what CUDA reported free and total gives
    ``log_gpu_held_here`` (the pool holds four fifths of the GPU or more) or
    ``log_gpu_held_elsewhere`` (the GPU all but full, the pool holding under half of it)."""
    raw = {name: _last_value(regex, hints, text, lowered) for name, regex, hints in _MEMORY_FACTS}
    total, free = memory_size(raw["total"]), memory_size(raw["free"])
    tf_bytes = float(raw["tf_mb"]) * 2**20 if raw["tf_mb"] else None
    if raw["total"]:
        facts["log_gpu_memory_total"] = raw["total"].replace(" ", "")
    if raw["free"]:
        facts["log_gpu_memory_free"] = raw["free"].replace(" ", "")
    if raw["tf_mb"]:
        facts["log_tf_gpu_memory"] = f"{raw['tf_mb']} MB"
    # TensorFlow's own first request is what was free less a reserve; more than was free is a
    # memory fraction (or limit) the program set, applied to the GPU's total
    device_request = float(raw["device_request"]) if raw["device_request"] else None
    if free is not None and device_request is not None and device_request > free:
        facts["log_device_request_over_free"] = "yes"
    if total and (
        (free is not None and free < 0.5 * total)
        or (tf_bytes is not None and tf_bytes < 0.5 * total and not _MEMORY_SETTING.search(text))
    ):
        facts["log_gpu_held_elsewhere"] = "yes"
    limit, in_use = (float(raw[n]) if raw[n] else None for n in ("limit", "in_use"))
    if raw["async_free_total"] and in_use is not None:
        # at the failure: this process's pool holding most of the GPU is its own tensors; the GPU
        # all but full while the pool holds under half of it is memory held outside it
        async_free, async_total = (float(n) for n in raw["async_free_total"].split("/"))
        if async_total and in_use >= 0.8 * async_total:
            facts["log_gpu_held_here"] = "yes"
        elif async_total and async_free < 0.1 * async_total and in_use < 0.5 * async_total:
            facts["log_gpu_held_elsewhere"] = "yes"
    request = memory_size(raw["request"])
    region = float(raw["region"]) if raw["region"] else None
    largest = float(raw["largest_free"]) if raw["largest_free"] else None
    if request is not None:
        facts["log_bfc_request"] = raw["request"].replace(" ", "")
    if limit:
        facts["log_bfc_limit"] = raw["limit"]
    if in_use is not None:
        facts["log_bfc_in_use"] = raw["in_use"]
    if not request or not limit:
        return
    if request >= limit:
        facts["log_bfc_over_limit"] = "yes"
        return
    if in_use is None:
        return
    pool = region if region and region <= limit else limit
    if pool - in_use >= request and (largest is None or largest < request):
        facts["log_bfc_fragmented"] = "yes"
    elif region is not None and region < 0.9 * limit:
        facts["log_bfc_growth_refused"] = "yes"
    elif in_use >= 0.9 * limit:
        facts["log_bfc_full"] = "yes"


def _release(text: str) -> Optional[tuple[int, int]]:
    found = re.match(r"(\d{1,2})\.(\d{1,3})", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


# The CUDA toolkits a log names by release: the folders the installers make (/usr/local/cuda-11.8,
# /opt/cuda-12.1/bin, C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1) and nvcc --version's
# "Cuda compilation tools, release 11.8", and the release PyTorch's extension builder read from
# CUDA_HOME's nvcc for its host compiler check ("... the maximum required version by CUDA 11.8").
# Two releases mean two toolkits on the machine, the condition for a build to take another one
# than meant (an old one first on PATH or in CUDA_HOME).
_TOOLKIT_RELEASE = re.compile(
    r"[/\\]cuda-(\d{1,2}\.\d{1,2})(?=[/\\\s'\":;)]|$)|[/\\]CUDA[/\\]v(\d{1,2}\.\d{1,2})(?=[/\\\s'\":;)]|$)|"
    r"\bCuda compilation tools, release (\d{1,2}\.\d{1,2})\b|\brequired version by CUDA (\d{1,2}\.\d{1,2})\b",
    re.I | re.M,
)
_TOOLKIT_HINTS = ("/cuda-", "\\cuda-", "cuda\\v", "cuda/v", "cuda compilation tools", "required version by cuda")


def _read_toolkits(facts: dict[str, str], text: str, lowered: str) -> None:
    """``log_cuda_toolkits`` is "several" when the log names CUDA toolkits of two releases or more."""
    releases = {
        next(g for g in found.groups() if g)
        for start, end in lines_with(_TOOLKIT_HINTS, text, lowered)
        for found in _TOOLKIT_RELEASE.finditer(text, start, end)
    }
    if len(releases) > 1:
        facts["log_cuda_toolkits"] = "several"


def _read_where(facts: dict[str, str], text: str, lowered: str) -> None:
    """Where the program ran (a container, a hosted notebook, a conda or virtual environment, an
    IDE), each variable from the first of its signs the text shows."""
    for name, value, regex, hints in _WHERE:
        if name in facts:
            continue
        if any(regex.search(text, start, end) for start, end in lines_with(hints, text, lowered)):
            facts[name] = value
    # Colab runs scripts from /content with its system Python's packages in dist-packages
    if "log_hosted" not in facts and _COLAB_PACKAGES.search(text) and _COLAB_FOLDER.search(text):
        facts["log_hosted"] = "colab"


# PyTorch's own signs: a frame or a file of its package (torch/, its c10 core, libtorch), its
# calls (torch.cuda, torch.nn, torch._C), and the lines its CUDA error checks print after every
# CUDA error (c10/cuda/CUDAException: "CUDA kernel errors might be asynchronously reported ...",
# "For debugging consider passing CUDA_LAUNCH_BLOCKING=1", "Compile with `TORCH_USE_CUDA_DSA`"), and
# ATen's check of a CUDA math library's status (aten/src/ATen/cuda/Exceptions.h: "CUDA error:
# CUBLAS_STATUS_... when calling `cublasCreate(handle)`"), and its check of a cuDNN status
# (aten/src/ATen/cudnn/Exceptions.h, AT_CUDNN_CHECK: c10's CuDNNError, which Python raises as
# "RuntimeError: cuDNN error: " and cudnnGetErrorString's name).
_TORCH_SIGNS = re.compile(
    r"[/\\](?:site|dist)-packages[/\\]torch[/\\]|\btorch\.(?:cuda|nn|_C|utils|distributed|backends)\b|"
    r"\bimport torch\b|\blibtorch(?:_cuda|_cpu|_python)?\b|\bc10[/\\:]|"
    r"CUDA kernel errors might be asynchronously reported|consider passing CUDA_LAUNCH_BLOCKING=1|TORCH_USE_CUDA_DSA|"
    r"\breserved in total by PyTorch\b|\bwhen calling `(?:cublas|cublasLt|cusparse|cusolver\w{0,4}|cufft|curand)\w{0,40}\(|"
    r"\bRuntimeError: cuDNN error: CUDNN_STATUS_",
)
# TensorFlow's own signs: its package or its source tree in a path or a log prefix, its module.
_TF_SIGNS = re.compile(r"\btensorflow\b|\btf\.(?:config|keras|compat|test|distribute|data)\b|\bimport tf_keras\b", re.I)


def _torch_hinted(lowered: str) -> bool:
    return any(
        h in lowered
        for h in (
            "torch",
            "c10",
            "cuda_launch_blocking",
            "when calling `cu",
            "cuda kernel errors",
            "error: cudnn error: ",
        )
    )


def _framework(text: str, lowered: str) -> str:
    """``log_framework``: "pytorch" when the log shows PyTorch's own frames, calls or lines and
    nothing of TensorFlow's (``log_torch_too`` is "yes" when it shows both) (a process with both may hold TensorFlow's reservation; a log of
    neither says nothing)."""
    if not _torch_hinted(lowered):
        return ""
    if not _TORCH_SIGNS.search(text) or _TF_SIGNS.search(text):
        return ""
    return "pytorch"


_CVD_SET = re.compile(
    r"\bCUDA_VISIBLE_DEVICES['\"]?\]? {0,3}=( {0,3}['\"]?)"
    r"(-?\d{1,3}(?:, {0,2}-?\d{1,3}){0,15}(?![\d,])|[^\s'\"\],;)]{0,80})",
    re.I,
)
_COLAB_PACKAGES = re.compile(r"/usr/local/lib/python3\.\d{1,2}/dist-packages/")
_COLAB_FOLDER = re.compile(r"(?<![\w.~-])/content/[\w.-]{1,80}")


# GeForce RTX series (the digit of "RTX 3090") and their compute capability (NVIDIA's table)
_RTX_SERIES_CC = {"2": "7.5", "3": "8.6", "4": "8.9", "5": "12.0"}


def _read_gpu_architecture(facts: dict[str, str], text: str, lowered: str) -> None:
    """``log_gpu_cc``: the compute capability the log prints (TensorFlow's device lines, PyTorch's
    warnings and device properties), else that of the GPU it names where a program prints its
    device (nvidia-smi, TensorFlow's and PyTorch's device lines, lspci, the kernel module; looked up
    in the matrix's GPU table, ``gpu_names``), else that of a GeForce RTX series it names;
    ``log_gpu_name`` the matrix's product when the capability comes from its name; ``log_cuda`` from a PyTorch wheel's tag when
    nothing else names it, and ``log_gpu_newer_than_cuda`` ("yes") when that CUDA predates the GPU's
    architecture: the build has no machine code for it."""
    if facts.get("log_gpu_cc", "").isdigit():  # TensorFlow 1.x: "major: 8 minor: 6"
        found = re.search(r"\bmajor: (\d{1,2}) minor: (\d)\b", text)
        facts["log_gpu_cc"] = f"{found.group(1)}.{found.group(2)}" if found else ""
    if not facts.get("log_gpu_cc"):
        facts["log_gpu_cc"] = gpu_names.printed_capability(text, lowered)
    # the matrix is loaded only for a log that names a GPU and prints no capability
    device = gpu_names.read_device(text, lowered) if not facts["log_gpu_cc"] else None
    if device is not None:
        facts["log_gpu_name"], facts["log_gpu_cc"] = device
    if not facts.get("log_gpu_cc") and facts.get("log_gpu_rtx") in _RTX_SERIES_CC:
        facts["log_gpu_cc"] = _RTX_SERIES_CC[facts["log_gpu_rtx"]]
    facts.pop("log_gpu_rtx", None)
    tag = facts.pop("log_cuda_tag", "")
    if tag and "log_cuda" not in facts:
        facts["log_cuda"] = f"{tag[:-1]}.{tag[-1]}"  # cu101 -> 10.1, cu92 -> 9.2
    if not facts.get("log_gpu_cc"):
        facts.pop("log_gpu_cc", None)
        return
    cuda = re.fullmatch(r"(\d{1,2})\.(\d{1,2})", facts.get("log_cuda", ""))
    first = _first_cuda(facts["log_gpu_cc"]) if cuda else None
    if first and (int(cuda.group(1)), int(cuda.group(2))) < first:
        facts["log_gpu_newer_than_cuda"] = "yes"


# `ptxas --version` prints its banner, then the toolkit's release line with the full version
_PTXAS_BANNER = "ptx optimizing assembler"
_PTXAS_RELEASE = re.compile(r"Cuda compilation tools, release \d{1,2}\.\d{1,2}, V(\d{1,2}\.\d{1,2}\.\d{1,4})\b")
# what XLA's search for ptxas (xla/stream_executor/cuda/subprocess_compilation.cc,
# FindPtxAsExecutable) accepts: 11.8.0 or newer, and never 12.3.103, the release it knows to
# miscompile
_PTXAS_MINIMUM = (11, 8, 0)
_PTXAS_EXCLUDED = ((12, 3, 103),)


def _read_ptxas(facts: dict[str, str], text: str, lowered: str) -> None:
    """``log_ptxas``, the ptxas release the log shows (XLA's own lines first, else the output of
    ``ptxas --version``), and ``log_ptxas_state``: how XLA's search for ptxas takes that release
    ("below-xla-minimum", "excluded-by-xla" or "accepted")."""
    if "log_ptxas" not in facts:
        at = lowered.find(_PTXAS_BANNER)
        while at >= 0 and "log_ptxas" not in facts:
            found = _PTXAS_RELEASE.search(text, at, at + 400)
            if found:
                facts["log_ptxas"] = found.group(1)
            at = lowered.find(_PTXAS_BANNER, at + len(_PTXAS_BANNER))
    version = tuple(int(part) for part in facts.get("log_ptxas", "").split(".") if part.isdigit())
    if len(version) == 3:
        if version in _PTXAS_EXCLUDED:
            facts["log_ptxas_state"] = "excluded-by-xla"
        elif version < _PTXAS_MINIMUM:
            facts["log_ptxas_state"] = "below-xla-minimum"
        else:
            facts["log_ptxas_state"] = "accepted"


def _first_cuda(capability: str) -> Optional[tuple[int, ...]]:
    """(major, minor) of the first CUDA release that builds code for this compute capability, from
    the compatibility matrix (its CUDA releases' architectures, from CUDA's release notes)."""
    # lazy for speed: only a log that shows both a GPU's capability and a CUDA version needs the matrix
    from envcheck.matrix import load_matrix

    try:
        release = load_matrix().first_cuda(capability)
    except Exception:  # noqa: BLE001 - a matrix that cannot load leaves the fact out, not explain
        return None
    return tuple(release.version.release[:2]) if release is not None else None


def _last_value(regex: re.Pattern[str], hints: tuple[str, ...], text: str, lowered: str) -> str:
    """Group 1 of the last match of ``regex`` in ``text``, looked for only in the lines that hold
    one of ``hints`` (every match holds one); "" when there is none."""
    value = ""
    for start, end in lines_with(hints, text, lowered):
        for found in regex.finditer(text, start, end):
            value = found.group(1)
    return value


def platform_of(text: str) -> Optional[str]:
    """The OS the text comes from, by its paths, shells and prompts: the first of WSL, Windows,
    macOS and Linux that shows (WSL before Linux: a WSL log holds Linux paths too). Each regex
    runs only on the lines that hold one of its platform's words."""
    lowered = text.lower()
    for name, regex in _PLATFORMS:
        if any(regex.search(text, start, end) for start, end in lines_with(_PLATFORM_HINTS[name], text, lowered)):
            return name
    return None


_PLATFORM_HINTS = {
    "wsl": ("/usr/lib/wsl", "wsl", "/mnt/", "/dev/dxg", "libdxcore", "-microsoft"),
    "windows": (
        ":\\",
        ".dll",
        "%path%",
        "powershell",
        "winget",
        "\\site-packages\\",
        "..\\",
        "windows",
        "win1",
        "win 1",
    ),
    "macos": (
        "/users/",
        "homebrew",
        "darwin",
        "macos",
        ".dylib",
        "zsh: ",
        "apple",
        "mach-o",
        "metal",
        "instruction: ",
        "trap: ",
        "error: 10",
        "fault: 11",
        "killed: 9",
    ),
    "linux": ("/usr/lib/", "/home/", ".so", "/proc/", "ubuntu", "debian", "centos", "manylinux", "(core dumped)"),
}


# A crash report (a signal's, a Windows exception code's) and the CUDA library TensorFlow says it
# loaded last before it: a crash right after cuDNN or cuBLAS loads points at that library's version.
_CRASH_REPORT = re.compile(
    r"Segmentation fault|Bus error|\bAborted\b|Fatal Python error|Windows fatal exception|\bSIG(?:SEGV|ABRT|BUS)\b|"
    r"exit(?:ed)? (?:with )?(?:code|status)[ :=]{0,2}\(?(?:-10737\d{5}|32212\d{5}|0xC0[0-9a-f]{6}|13[4-9])\b",
    re.I,
)
_LIBRARY_LOADED = re.compile(
    r"Loaded cuDNN version|Successfully opened dynamic library (?:lib)?(cudnn|cublas)|"
    r"Loaded (?:runtime )?(cuBLAS|cudnn)",
    re.I,
)


# CPython prints an uncaught exception as "Traceback (most recent call last):", the frames indented,
# then "<qualified name>: <message>" at the start of a line (Lib/traceback.py, format_exception_only);
# IPython's ultratb puts "Traceback (most recent call last)" after the name on its first line and
# ends with the same "<name>: <message>" line. Names are those of exception classes by convention
# (PEP 8: "Error" for errors) and the built-in ones that end otherwise.
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]{0,80}\.){0,8}(?:[A-Za-z_]\w{0,80}(?:Error|Exception|Exit|Interrupt|Failure|Warning)|"
    r"StopIteration|StopAsyncIteration|GeneratorExit)(?::[ \t]{0,4}[^\n]{0,300}|[ \t]{0,4}$)",
    re.M,
)


def uncaught_exception(end: str) -> str:
    """The exception line (name and message, cut to 300 characters) of the last Python traceback in
    ``end``, or the exception line ``end`` ends with (a traceback pasted without its frames: the
    line CPython prints last before the program stops); "" when there is none."""
    start = None
    for start in _TRACEBACK.finditer(end):  # noqa: B007 - the last one is wanted
        pass
    if start is None:
        last = end.rstrip()[-400:].rsplit("\n", 1)[-1].strip()
        found = _EXCEPTION_LINE.match(last)
        # a warning's line is no stop (warnings.warn prints it and the program goes on)
        return found.group(0).strip() if found and "Warning" not in last.split(":", 1)[0] else ""
    found = _EXCEPTION_LINE.search(end, start.end())
    return found.group(0).strip() if found else ""


def _crash_after(end: str) -> str:
    """ "cudnn" or "cublas": the library loaded last before the crash the log ends with."""
    crash = None
    for crash in _CRASH_REPORT.finditer(end):  # noqa: B007 - the last one is wanted
        pass
    if crash is None:
        return ""
    loaded = None
    for loaded in _LIBRARY_LOADED.finditer(end, 0, crash.start()):  # noqa: B007
        pass
    if loaded is None:
        return ""
    return (loaded.group(1) or loaded.group(2) or "cudnn").lower()


def _last(regex: re.Pattern[str], text: str) -> str:
    found = None
    for found in regex.finditer(text):  # noqa: B007 - the last one is wanted
        pass
    return found.group(1) if found else ""


def shell_for(log_os: Optional[str]) -> Optional[str]:
    """The shell whose commands a log from ``log_os`` gets (None: show every shell, labelled)."""
    return {"windows": "powershell", "linux": "bash", "wsl": "bash", "macos": "bash"}.get(log_os or "")
