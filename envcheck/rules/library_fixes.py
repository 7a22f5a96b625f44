"""Fixes for missing CUDA and cuDNN libraries: the release to install, where it goes, and how to
make the loader find it, per platform."""

from __future__ import annotations

from typing import Optional

from envcheck import shell
from envcheck.findings import Fix
from envcheck.machine import minor
from envcheck.machine.libraries import CUDA_RUNTIME, MATH, Needed, missing
from envcheck.matrix import requirement_text
from envcheck.rules.engine import Context
from envcheck.shell import Command


def search_where(ctx: Context) -> str:
    variable = ctx.platform.loader_title
    return (
        variable
        if ctx.platform.shell == shell.POWERSHELL
        else f"the loader's path ({variable}, the ldconfig cache, pip wheels)"
    )


def cuda_dir(ctx: Context, cuda: object) -> str:
    return ctx.platform.cuda_home(minor(cuda)) or ""


def add_to_loader_path(ctx: Context, directory: str) -> Command:
    """Put a folder first on the loader's path for this shell: the folder is quoted, so whatever
    it is called it stays one literal word."""
    return ctx.prepend_loader_path(directory)


def check_command(ctx: Context, name: str) -> Command:
    return ctx.shell_command(
        f"ldconfig -p | grep -F {shell.quote(name, shell.BASH)}", f"where.exe {shell.quote(name, shell.POWERSHELL)}"
    )


def tf_pip_reinstall(ctx: Context) -> Optional[Command]:
    """``pip install tensorflow[and-cuda]==X``: the pip wheels carry every CUDA library TF loads.
    The distribution is the GPU twin of the installed one (tf-nightly-cpu's is tf-nightly)."""
    build = ctx.tf_build
    if build is None or build.pip_cuda is None or not ctx.platform.linux_wheels:
        return None
    tf = ctx.installed_tf
    dist = ctx.matrix.gpu_distribution(tf.distribution if tf is not None else build.distribution, build)
    return ctx.pip_command("install", requirement_text(dist, build.pip_cuda.extra, build, tf.version if tf else None))


def cuda_fix(ctx: Context, names: list[Needed]) -> Fix:
    """Install the CUDA release TF was built with (or its pip wheels), and make its folder reachable."""
    build = ctx.tf_build
    cuda = ctx.tf_cuda or str(build.cuda)
    release = ctx.matrix.cuda(minor(cuda)) if cuda else None
    link = release.download_url if release is not None else None
    files = ", ".join(n.name for n in names)
    off_path = [c for n in names for c in n.off_path]
    if off_path:
        directory = off_path[0].directory
        return Fix(
            text=f"{files} is in {directory}, where the loader does not look: add that folder to {ctx.platform.loader_title} (for good: in your shell profile).",
            commands=(add_to_loader_path(ctx, directory), check_command(ctx, names[0].name)),
            url=link,
            release=ctx.installed_release,
        )
    pip_step = tf_pip_reinstall(ctx)
    conda = _conda_fix(ctx, build, cuda, files, link)
    if pip_step is None and conda is not None:
        return conda
    if pip_step is not None:
        return Fix(
            text=(
                f"Install the CUDA {minor(cuda)} libraries TensorFlow loads as pip wheels (no system "
                f"toolkit needed): reinstall TensorFlow with its [{build.pip_cuda.extra}] extra."
            ),
            commands=(pip_step,),
            url=link,
            release=ctx.installed_release,
        )
    bin_dir = ctx.platform.cuda_libraries(minor(cuda)) or ""
    return Fix(
        text=(
            f"Install CUDA {minor(cuda)} and put its {ctx.platform.cuda_library_dir} folder on "
            f"{ctx.platform.loader_title}. {ctx.tf_name} loads {files} from {bin_dir}; "
            "open a new terminal afterwards. Other CUDA versions can stay installed beside it."
        ),
        commands=(add_to_loader_path(ctx, bin_dir), check_command(ctx, names[0].name)),
        url=link,
        release=ctx.installed_release,
    )


def _conda_fix(ctx: Context, build, cuda: object, files: str, link) -> Optional[Fix]:
    """In a conda environment, releases without pip CUDA wheels take CUDA and cuDNN from conda
    (TensorFlow's own install guide did so for 2.4 to 2.11): nothing system-wide changes."""
    if not ctx.facts.python.in_conda or not ctx.platform.linux_wheels or build is None or build.cudnn is None:
        return None
    cudnn = ".".join(str(p) for p in build.cudnn.release[:2])
    return Fix(
        text=(
            f"Install CUDA {minor(cuda)} and cuDNN {cudnn} into this conda environment ({ctx.tf_name} loads {files}), "
            "then let the loader look in its lib folder."
        ),
        commands=(
            ctx.shell_command(f"conda install -c conda-forge cudatoolkit={minor(cuda)} cudnn={cudnn}"),
            Command(
                shell.prepend_path_under(ctx.platform.loader_variable, "CONDA_PREFIX", "lib", ctx.platform.shell),
                shell=ctx.platform.shell,
            ),
        ),
        url=link,
        release=ctx.installed_release,
    )


def cudnn_fix(ctx: Context, names: list[Needed]) -> Fix:
    build = ctx.tf_build
    cuda = ctx.tf_cuda or str(build.cuda)
    version = build.cudnn
    release = ctx.matrix.cudnn(version) if version is not None else None
    link = release.download_url if release is not None else None
    files = ", ".join(n.name for n in names)
    off_path = [c for n in names for c in n.off_path]
    if off_path:
        return Fix(
            text=f"{files} is in {off_path[0].directory}, where the loader does not look: add that folder to the search path.",
            commands=(add_to_loader_path(ctx, off_path[0].directory), check_command(ctx, names[0].name)),
            url=link,
            release=ctx.installed_release,
        )
    if tf_pip_reinstall(ctx) is not None and missing(ctx, CUDA_RUNTIME + MATH):
        return cuda_fix(ctx, names)  # one reinstall with the CUDA extra brings cuDNN along with the rest
    pins = ctx.cuda_pins
    pinned = [f"{name}{spec}" for name, spec in sorted(pins.items()) if name.startswith("nvidia-cudnn")]
    if pinned and ctx.platform.linux_wheels:
        return Fix(
            text=f"Install the cuDNN {version} wheel that {ctx.tf_name} pins.",
            commands=(ctx.pip_command("install", *pinned),),
            url=link,
            release=ctx.installed_release,
        )
    directory = cuda_dir(ctx, cuda)
    if ctx.platform.shell == shell.POWERSHELL:
        source = ".\\cuda\\*" if version is not None and version.major <= 7 else ".\\cudnn-windows-x86_64-*\\*"
        commands = (
            Command(
                f"Copy-Item -Recurse -Force {source} {shell.quote_always(directory + chr(92), shell.POWERSHELL)}",
                shell="powershell",
            ),
            check_command(ctx, names[0].name),
        )
        where = f"copy its bin, include and lib folders into {directory}"
    else:
        commands = (
            Command(
                f"sudo cp -P cudnn-*-archive/include/cudnn*.h {shell.quote(directory + '/include/', shell.BASH)} && "
                f"sudo cp -P cudnn-*-archive/lib/libcudnn* {shell.quote(directory + '/lib64/', shell.BASH)} && sudo ldconfig",
                shell="bash",
            ),
            check_command(ctx, names[0].name),
        )
        where = f"copy its include and lib files into {directory}"
    return Fix(
        text=(
            f"Install cuDNN {version} for CUDA {minor(cuda)} into the CUDA {minor(cuda)} folder. Download it "
            f"(a free NVIDIA developer account is needed), unzip it and {where}."
        ),
        commands=commands,
        url=link,
        release=ctx.installed_release,
    )
