"""A message read into its parts, before any pattern explains it: the library file and its
version, why the dynamic loader refused it, the Windows error code, the status of the CUDA
stack it names, and how a crashed process was reported (an NTSTATUS or a signal). Every explanation carries these parts, so a pattern's causes can depend on them
(``dlerror_reason: [other-file]``) and a status is given its meaning wherever it appears.

``library_stack`` is "cuda" when the file is one of the CUDA stack's own libraries (the driver's,
the toolkit's, cuDNN, NCCL, TensorRT), "other" for any other file (a package's own, the system's).

The dynamic loader's reasons, as glibc's ``dlerror()``, macOS's ``dlopen`` and Windows'
``LoadLibrary`` word them:

  not-found           the file is not on the search path
  other-file          the file was found, but a library it needs (``dependency``) was not
  wrong-architecture  wrong ELF class (32/64-bit), a Mach-O of another architecture, WinError 193
  undefined-symbol    a symbol (or a symbol version) is missing: two versions of a library are mixed
  version-not-found   a symbol version the file needs (GLIBC_2.28, GLIBCXX_3.4.26, CXXABI_1.3.11)
                      is not in the system library (``needed_version``)
  damaged-file        not a library at all (a truncated download, a Git LFS pointer)
  permission-denied   the file cannot be read
  executable-stack    the library asks for an executable stack, which newer glibc refuses

and the others that ``loader_reasons.LOADER_REASONS`` reads from the loaders' message strings
(static-tls, segment-map-failed, memory-protection, not-loadable-elf, not-a-file,
too-many-open-files, out-of-memory, code-signature, os-too-old), each with its meaning
(``dlerror_meaning``) and the cause its source states (``PATH_REASON_CAUSES``).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Optional

from envcheck.explain import loader_reasons
from envcheck.explain.exit_codes import PART_SPELLINGS as CRASH_SPELLINGS
from envcheck.explain.normalise import normalise_line
from envcheck.explain.statuses import FAMILIES, load_statuses, status_variables

_LIBRARY = re.compile(
    r"(?P<file>(?:lib[\w+.-]{1,80}?\.so(?:\.\d{1,6}){0,4}|[\w.-]{1,80}\.dll|lib[\w.+-]{1,80}\.dylib))\b", re.I
)
# The reasons whose text names a part (the symbol, the version needed); every other reason is
# read from loader_reasons.LOADER_REASONS, in its order.
_CAPTURING = {
    "version-not-found": re.compile(r"version [`'\"](?P<needed_version>[\w.+-]{1,60})['\"] not found", re.I),
    "undefined-symbol": re.compile(
        r"undefined symbol: (?P<symbol>[\w@.$]{1,200})|Symbol not found: (?P<macos_symbol>[\w@.$]{1,200})|"
        # dyld 4 (macOS 12+), a symbol no loaded image exports: "symbol not found in flat namespace '_X'"
        r"symbol not found in flat namespace '?(?P<flat_symbol>[\w@.$]{1,200})|"
        # glibc elf/dl-lookup.c: a versioned symbol the file that was loaded does not define
        r"symbol (?P<versioned_symbol>[\w@.$]{1,300}),? version [\w.+-]{1,60} not defined in file|"
        # musl ldso/dynlink.c: "Error relocating <file>: <symbol>: symbol not found"
        r"Error relocating [^\n]{1,300}?: (?P<musl_symbol>[\w@.$]{1,200}): symbol not found",
        re.I,
    ),
}
_REASONS = tuple((reason, _CAPTURING.get(reason, regex)) for reason, regex in loader_reasons.REASONS)
# The file the loader's message is about: glibc starts with it, macOS says "Library not loaded: X".
_DLERROR_FILE = re.compile(
    r"(?:dlerror: |Library not loaded: (?:@rpath/)?|Error loading \"[^\"]{0,300}?|^)"
    r"(?P<file>[\w/.\\:+-]{0,300}?(?:lib[\w+.-]{1,80}?\.so(?:\.\d{1,6}){0,4}|[\w.-]{1,80}\.dll|[\w.+-]{1,80}\.dylib))",
    re.I,
)
# The file's path as the loader names it, before its reason (glibc "<path>: <reason>", dyld's
# "tried: '<path>' (<reason>)", musl's "Error relocating <path>: "), spaces and all: a folder and
# the file's name, which ends in a library's or an extension module's suffix.
_LOADER_PATH = re.compile(
    r"(?:tried: '|Error relocating |\(needed by |(?<![^\s'\"(]))(?P<path>(?:[A-Za-z]:)?[/\\][^:'\"\n]{0,300}?[/\\]"
    r"[\w.+-]{1,200}\.(?:so|dylib|node|pyd|dll)[\d.]{0,12})(?=[:')]|$)",
    re.I,
)
# cuDNN 8's own loader passes dlerror on as "Could not load library X. Error: <dlerror>".
_DLERROR = re.compile(
    r"dlerror: (?P<text>[^\n]{1,400})|dlopen\([^)]{0,300}\): (?P<macos>[^\n]{1,400})|"
    r"Could not load library [\w.+-]{1,120}\. Error: (?P<cudnn>[^\n]{1,400})",
    re.I,
)
# Where a line with no dlerror is still the dynamic loader's own message (ld.so's, dyld's, Python's
# ctypes and import machinery): only there is a "not found" a loader's reason.
_LOADER_FRAME = re.compile(
    r"cannot open shared object file|error while loading shared libraries|Library not loaded|image not found|"
    r"Error loading \"|wrong ELF class|undefined symbol: | not defined in file |version [`'\"][\w.+-]{1,60}['\"] not found|"
    r"cannot enable executable stack|invalid ELF header|file too short|Symbol not found: |"
    r"Could not (?:load|find|locate) (?:dynamic library |library |module )?'?[\w.+\\/:-]{1,300}\.(?:so|dll|dylib)|"
    + loader_reasons.FRAME_PHRASES,
    re.I,
)
# A Windows error code is the loader's only in its own frame: Python's [WinError N], LoadLibrary's
# "failed with error N", or "Error code N" on a line that names a DLL (TensorFlow's Windows loader
# prints that form); an "error code 126" of a licence server or an HTTP client is not one.
_WINDOWS_CODE = re.compile(
    r"\[WinError (?P<code>\d{1,5})\]|LoadLibrary(?:Ex)?\w{0,2} failed with error[: ]{1,2}(?P<code2>\d{1,5})\b|"
    r"\.dll\b[^\n]{0,200}?\berror code(?: is)?[: ]{1,2}(?P<code3>\d{1,5})\b|"
    r"\berror code(?: is)?[: ]{1,2}(?P<code4>\d{1,5})\b[^\n]{0,200}?\.dll\b",
    re.I,
)
# Windows' own wording of the loader's errors (FormatMessage's text for the system error codes on
# Microsoft's "System Error Codes" pages), as Windows prints it in the languages users post: a
# message that carries the text and not the number ("DLL load failed: <text>", PyTorch's "<text>
# Error loading "X.dll" or one of its dependencies", a program's "X.dll - <text>") names the code
# all the same. Only a line that is the loader's (a DLL named, Python's DLL load, [WinError N])
# is read so.
WINDOWS_TEXTS: tuple[tuple[str, str], ...] = (
    (
        "126",  # ERROR_MOD_NOT_FOUND
        r"The specified module (?:could not|cannot) be found|Could not find the specified module|"
        r"Das angegebene Modul wurde nicht gefunden|Le module sp[ée]cifi[ée] est introuvable|"
        r"No se puede encontrar el m[óo]dulo especificado|Impossibile trovare il modulo specificato|"
        r"N[ãa]o foi poss[íi]vel encontrar o m[óo]dulo especificado|Не найден указанный модуль|"
        r"找不到指定的模[块組组]|指定されたモジュールが見つかりません|지정된 모듈을 찾을 수 없습니다",
    ),
    (
        "127",  # ERROR_PROC_NOT_FOUND
        r"The specified procedure could not be found|Die angegebene Prozedur wurde nicht gefunden|"
        r"La proc[ée]dure sp[ée]cifi[ée]e est introuvable|No se encontr[óo] el proceso especificado|"
        r"Impossibile trovare la procedura specificata|N[ãa]o foi poss[íi]vel encontrar o procedimento especificado|"
        r"Не найдена указанная процедура|找不到指定的程序|指定されたプロシージャが見つかりません|지정된 프로시저를 찾을 수 없습니다",
    ),
    (
        "193",  # ERROR_BAD_EXE_FORMAT
        r"is not a valid Win32 application|ist keine zul[äa]ssige Win32-Anwendung|n.est pas une application Win32 valide|"
        r"no es una aplicaci[óo]n Win32 v[áa]lida|non [èe] un.applicazione di Win32 valida|не является приложением Win32|"
        r"不是有效的 ?Win32 ?应用程序|は有効な Win32 アプリケーションではありません",
    ),
    (
        "1114",  # ERROR_DLL_INIT_FAILED
        r"A dynamic link library \(DLL\) initialization routine failed|DLL-Initialisierungsroutine ist fehlgeschlagen|"
        r"routine d.initialisation d.une biblioth[èe]que de liens dynamiques \(DLL\) a [ée]chou[ée]|"
        r"rutina de inicializaci[óo]n de biblioteca de v[íi]nculos din[áa]micos \(DLL\)|"
        r"动态链接库 ?\(DLL\) ?初始化例程失败|ダイナミック リンク ライブラリ \(DLL\) 初期化ルーチンの実行に失敗しました|"
        r"сбой в программе инициализации библиотеки динамической компоновки",
    ),
    (
        "1455",  # ERROR_COMMITMENT_LIMIT
        r"The paging file is too small for this operation to complete|Die Auslagerungsdatei ist zu klein|"
        r"Le fichier de pagination est insuffisant|页面文件太小，?无法完成操作|ページング ファイルが小さすぎる|"
        r"Файл подкачки слишком мал",
    ),
)
_WINDOWS_TEXT = re.compile("|".join(f"(?P<t{code}>{text})" for code, text in WINDOWS_TEXTS), re.I)
_WINDOWS_LOADER_LINE = re.compile(r"\.dll\b|DLL load failed|\[WinError|LoadLibrary|or one of its dependencies", re.I)
# The package a DLL belongs to when it is one of an installed Python package's own files
# (site-packages\torch\lib\cudnn64_8.dll is PyTorch's copy of cuDNN, not a system-wide one).
_PACKAGE_LIBRARY = re.compile(
    r"[\\/](?:site|dist)-packages[\\/](?P<owner>[\w.-]{1,80})[\\/](?:[\w.-]{1,80}[\\/]){0,4}[\w.-]{1,80}\.(?:dll|so|pyd|dylib)\b",
    re.I,
)
# The frame of the stack envcheck explains: a file or module of the CUDA stack (the driver, the
# toolkit's libraries, cuDNN, NCCL, TensorRT, NVML, XLA's ptxas and libdevice), of a framework that
# loads it (TensorFlow, Keras, JAX/XLA, PyTorch and the other CUDA-using Python packages), or of an
# installed Python package (``_PACKAGE_FRAME``). The generic loader patterns (``stack_only``)
# explain a line only in this frame: a game's DLL, a system program's library or Mesa's driver are
# other software's errors. XLA's files and modules are "xla" as a word or before "_", "/", ".":
# "xlabel" (Matplotlib) and "xlarge" (a cloud instance type) are not XLA. CUDA's own files and
# modules are named as files are: libcuda.so, nvcuda.dll, cuda.h, TensorFlow's cuda_driver.cc and
# stream_executor/cuda/, the toolkit's /usr/local/cuda/ and cuda-12.4, CUDA_VISIBLE_DEVICES; the word
# "CUDA" in a sentence, another program's device name ("CUDA0", "cuda-3") or its own source file
# (darknet's src/cuda.c) is a program that uses CUDA, not the stack.
_STACK_FRAME = re.compile(
    r"\b(?:lib)?(?:cu(?:da(?=[_/\\]|\.(?:so|dll|dylib|h)\b|-\d{1,2}\.\d)|dart|dnn|blas|fft|rand|solver|sparse|pti|file)|nvrtc|nvjitlink|nvinfer|nvonnxparser|"
    r"nccl|nvml|nvidia|nvcuda|nvvm|nvptx|libdevice|ptxas|tensorrt|zlibwapi|tensorflow|_pywrap_|keras|jax|xla(?![a-z])|"
    r"torch|c10|caffe2|fbgemm|paddle|mxnet|onnxruntime|cupy|numba|triton|bitsandbytes|llama|dlib|xgboost|lightgbm)",
    re.I,
)
# An installed Python package is in the frame only where the line is one of its frames or names one
# of its library files, not wherever "site-packages" is written (pip's "Requirement already
# satisfied: ... in .../dist-packages", "normal site-packages is not writeable", a warning's
# "path.py:30: UserWarning:" location, which warnings.formatwarning prints, is no frame):
#   CPython's traceback module (Lib/traceback.py, FrameSummary):  File "<path>", line <n>, in <name>
#   IPython's traceback (IPython/core/ultratb.py): "File <path>:<n>, in <name>" (IPython 8 and
#   newer) and "<path> in <name>(<args>)" (IPython 7 and older)
#   a library file of the package (an extension module, a shared library it ships), which the
#   loader's messages and a C++ stack dump (glibc's backtrace_symbols, gdb's "from <file>") name
#   an extension module by the file name CPython gives it wherever it lies (PEP 3149's ABI tag and
#   importlib.machinery.EXTENSION_SUFFIXES: "_engine.cpython-311-x86_64-linux-gnu.so",
#   "_core.cpython-312-darwin.so", "_ext.cp311-win_amd64.pyd", "_lib.abi3.so"): a loader's message
#   often quotes the file without its folder
_PACKAGES = r"[\\/](?:site|dist)-packages[\\/]"
_EXTENSION_MODULE = (
    r"\b[\w-]{1,200}\.(?:cpython-3\d{1,2}[a-z]{0,3}-[\w-]{1,60}|cp3\d{1,2}-win[\w]{1,20}|abi3)\.(?:so|pyd)\b"
)
_PACKAGE_FRAME = re.compile(
    r'\bFile "[^"\n]{0,400}?' + _PACKAGES + r'[^"\n]{1,400}", line \d{1,7}|'
    r"\bFile [^\s\"]{0,400}?"
    + _PACKAGES
    + r"[^\s:]{1,400}:\d{1,7}, in |"
    + _PACKAGES
    + r"\S{1,400}\.py in [\w<>.]{1,200}\(|"
    + _PACKAGES
    + r"[^\s\"':]{0,400}?\.(?:so|pyd|dll|dylib)\b|"
    + _EXTENSION_MODULE,
    re.I,
)


# FFmpeg's log lines carry the context that printed them: libavutil/log.c (format_line) writes
# "[%s @ %p] ", the component's name and its address ("[h264_nvenc @ 0x55d020323ac0] ",
# "[AVHWDeviceContext @ 000002937d4c2d40] ", "[vost#0:0/h264_nvenc @ 0x...] "). Such a line is
# FFmpeg's message about its own encoder or decoder, whatever CUDA status or library it names.
_FFMPEG_CONTEXT = re.compile(r"\[[A-Za-z][\w:/#.-]{0,80} @ (?:0x)?[0-9a-f]{6,16}\] ", re.I)
# Other programs that call the CUDA driver, NVRTC, NVML or cuDNN themselves print what a call
# returned in their own formats, which no library of the stack and no framework on it prints:
#   hashcat (src/ext_cuda.c, src/ext_nvrtc.c, src/ext_nvml.c: hc_cuInit and the others): the call's
#   name, "(): " and the driver's text (or its number), which begin its line: "cuInit(): forward
#   compatibility was attempted on non supported HW",
#   "nvrtcCompileProgram(): NVRTC_ERROR_INVALID_OPTION", "nvmlDeviceGetClockInfo(): Not Supported";
#   OBS Studio's NVENC plugin (plugins/obs-nvenc, cuda_error_check): '%s: CUDA call "%s" failed with
#   %s (%d): %s', its function's name first (or "... failed with %d" without the driver's names);
#   darknet (src/dark_cuda.c check_error, then src/utils.c error() through perror): "CUDA Error: %s",
#   then perror's ": " and strerror(errno) of whatever errno was ("CUDA Error: out of memory: File
#   exists", "...: No error" from Windows' C runtime), after its check_error_extended's "CUDA status
#   Error: file: %s : %s() : line: %d" (darknet's own functions: cuda_free(), cuda_push_array());
#   OpenCV (modules/core/src/system.cpp, cv::Exception::formatMessage): "OpenCV(%s) %s:%d: error:
#   (%d:%s) %s in function '%s'", its cuDNN wrapper's status (modules/dnn/src/cuda4dnn/csl/cudnn)
#   then " in function '<name>'"; Blender's Cycles (intern/cycles/device/cuda/util.h, cuda_assert):
#   "%s in %s (%s:%d)", the driver's text, the call as written and Cycles' source file ("Invalid
#   context in cuCtxPopCurrent(NULL) (intern/cycles/device/cuda/util.cpp:31)"), and before Blender
#   2.90 "CUDA error: %s in %s, line %d"; and libstdc++'s verbose terminate handler (libsupc++/vterminate.cc)
#   names the type of the exception that ended the program, whose namespace is the thrower's:
#   "terminate called after throwing an instance of 'cv::dnn::cuda4dnn::csl::cudnn::cuDNNException'"
#   is OpenCV's, "... of 'dxvk::DxvkError'" DXVK's;
#   and AMD's RCCL, NCCL's source turned into HIP (hipify) and built with NCCL's debug.cc, so its
#   lines keep NCCL's format ("<host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN ...", "NCCL INFO
#   <file>:<line> -> <code>") and NCCL's words ("Cuda failure 'invalid argument'" is CUDACHECK
#   turned into a HIP call's check), but <file> is RCCL's own source as its build compiled it, a
#   path through its rccl or hipify folder ("/rccl/build/hipify/src/transport/p2p.cc:237",
#   "/src/extlibs/rccl/build/src/init.cpp:126"): a ROCm GPU's message, not NVIDIA's NCCL's;
#   and the video programs built on NVIDIA's Video Codec SDK (NVEncC, LAV Filters, StaxRip, VPF,
#   OBS), whose line names a call of the SDK's decoder (nvcuvid.h: cuvidCreateDecoder,
#   cuvidParseVideoData, cuvidCtxLockCreate) or encoder (nvEncodeAPI.h: NvEncOpenEncodeSessionEx,
#   nvEncInitializeEncoder), which no framework calls: "cuvid: Failed cuvidCreateDecoder 2
#   (CUDA_ERROR_OUT_OF_MEMORY)" is NVDEC's decoder refused by the driver, not a CUDA setup's fault.
# Such a line is that program's message about its own use of the GPU, not TensorFlow's.
# (a call's name keeps its case; not a member or a field: "x.cuInit(): ", "cu->cuInit(): ")
_CALL_RETURNED = re.compile(r"(?<![\w.>-])(?:cu|nvrtc|nvml|cl|hip)[A-Z]\w{1,60}\(\): \S")
_OWN_FORMATS = re.compile(
    r'\bCUDA call "[^"\n]{1,200}" failed with |'
    r"\bCUDA status(?: = cudaDeviceSynchronize\(\))? Error: file: |"
    r"\bCUDA Error: [^:\n]{1,200}: (?:No error|Success|File exists|No such file or directory|Invalid argument|"
    r"Resource temporarily unavailable|Operation not permitted|Bad file descriptor|Inappropriate ioctl for device|"
    r"Cannot allocate memory|Not enough space)\s{0,4}$|"
    r"\bOpenCV\(\d[\w.-]{0,20}\) [^\n]{0,400}: error: \(-?\d{1,5}:[^)\n]{1,60}\)|"
    r"\b(?:CUDNN|CUBLAS|CUFFT|CURAND|CUSOLVER|CUSPARSE)_STATUS_[A-Z_]{2,60} in function '|"
    r"\bterminate called after throwing an instance of '(?:cv|dxvk)::|"
    r"\bin cu[A-Z]\w{1,60}\([^\n]{0,300}\)(?:, line \d{1,6}| \([^\n()]{0,400}\.cpp:\d{1,6}\))\s{0,4}$|"
    r"[\\/](?:rccl[\w.+-]{0,30}|hipify)[\\/][^\s:]{0,300}:\d{1,6} NCCL (?:WARN|INFO)\b|"
    r"\bNCCL (?:WARN|INFO) [^\s:]{0,300}?[\\/](?:rccl[\w.+-]{0,30}|hipify)[\\/][^\s:]{0,300}:\d{1,6}\b|"
    r"(?-i:\b(?:cuvid|NvEnc|nvEnc)[A-Z]\w{1,60})",
    re.I,
)


def another_programs_line(text: str) -> bool:
    """Whether a line is, by its own log prefix or format, another program's message (FFmpeg's,
    hashcat's, OBS Studio's, darknet's, OpenCV's, Blender's, RCCL's, a Video Codec SDK program's)."""
    return any(own.search(text) is not None for own in (_FFMPEG_CONTEXT, _CALL_RETURNED, _OWN_FORMATS))


def in_stack_frame(text: str) -> bool:
    """Whether a line names a file, module or frame of the CUDA stack or of a framework on it, or
    is a frame of an installed Python package (``_PACKAGE_FRAME``)."""
    return _STACK_FRAME.search(text) is not None or _PACKAGE_FRAME.search(text) is not None


# How many of the stack's names an input-wide look reads before it counts the input as the stack's.
MAX_FRAME_HITS = 64


def shows_stack_frame(text: str) -> bool:
    """Whether any line of an input is in the stack's frame (``in_stack_frame``), counting no line
    that is another program's own message: OpenCV's cuDNN error names its own csl/cudnn/ sources,
    hashcat's "cuInit(): ..." the driver's call, and both are those programs' lines, which frame
    nothing else of theirs (the shell's crash report after them, a loader error). Past
    MAX_FRAME_HITS names all on other programs' lines, the input counts as the stack's."""
    hits = 0
    for frame in (_STACK_FRAME, _PACKAGE_FRAME):
        for hit in frame.finditer(text):
            hits += 1
            if hits > MAX_FRAME_HITS:
                return True
            start = text.rfind("\n", 0, hit.start()) + 1
            end = text.find("\n", hit.end())
            if not another_programs_line(normalise_line(text[start : len(text) if end < 0 else end])):
                return True
    return False


_STATUS_NAME = re.compile(
    r"\b(?P<status>CUDA_ERROR_[A-Z0-9_]{2,60}|cudaError[A-Za-z]{2,60}|CUDNN_STATUS_[A-Z0-9_]{2,70}|"
    r"(?:CUBLAS_STATUS|CUSOLVER_STATUS|CUSPARSE_STATUS|CUFFT)_[A-Z0-9_]{2,70}|NVML_ERROR_[A-Z0-9_]{2,60}|"
    r"nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError|InProgress|Timeout))\b"
)
# The libraries of the CUDA stack itself (the driver's, the toolkit's, cuDNN, NCCL, TensorRT) by
# their file names on Linux and Windows; any other file a message names is a package's own or the
# system's, whose missing dependency is rarely CUDA (on Windows, most often the Visual C++ runtime).
_CUDA_STACK_FILE = re.compile(
    r"^(?:lib)?(?:cuda|nvcuda|cudart|cublas|cublaslt|cudnn|cufft|curand|cusolver|cusparse|nvrtc|nvjitlink|"
    r"nvtoolsext|nvtx|cupti|nccl|nvinfer|nvonnxparser|nvml|nvidia-ml|nvblas|npp)",
    re.I,
)
PART_NAMES = (
    "library_file",
    "library_file_version",
    "library_stack",
    "dlerror_reason",
    "dlerror_file",
    "dlerror_meaning",
    "dlerror_loader",
    "dlerror_path",
    "dlerror_path_q",
    "dlerror_dir_q",
    "dependency",
    "symbol",
    "symbol_namespace",
    "needed_version",
    "windows_code",
    "windows_error",
    "windows_meaning",
    "windows_label",
    "library_owner",
)


def read_parts(text: str, library: str = "") -> dict[str, str]:
    """The parts of one message (a normalised line); ``library`` is the file a pattern captured,
    when it did. Names without a value are left out."""
    parts: dict[str, str] = {}
    found = _LIBRARY.search(text)
    if found is not None:
        parts["library_file"] = found.group("file")
        parts["library_file_version"] = _file_version(found.group("file"))
        parts["library_stack"] = "cuda" if _CUDA_STACK_FILE.match(found.group("file")) else "other"
    parts.update(_loader_reason(text, library or parts.get("library_file", "")))
    parts.update(_windows_code(text))
    owner = _PACKAGE_LIBRARY.search(text)
    if owner is not None:
        parts["library_owner"] = owner.group("owner").lower()
    parts.update(_status(text))
    return {k: v for k, v in parts.items() if v}


def _file_version(name: str) -> str:
    linux = re.search(r"\.so\.([\d.]{1,20})$", name)
    if linux:
        return linux.group(1)
    windows = re.search(r"(\d{1,4})(?:_\d{1,2})?\.dll$", name, re.I)
    return windows.group(1) if windows else ""


def _loader_reason(text: str, library: str) -> dict[str, str]:
    message = _DLERROR.search(text)
    if message is None and _LOADER_FRAME.search(text) is None:
        return {}  # "not found" in another program's words is not the loader's reason
    said = (message.group("text") or message.group("macos") or message.group("cudnn")) if message else text
    for reason, regex in _REASONS:
        hit = regex.search(said)
        if hit is None:
            continue
        parts = {"dlerror_reason": reason}
        groups = hit.groupdict()
        parts["symbol"] = (
            groups.get("symbol")
            or groups.get("macos_symbol")
            or groups.get("flat_symbol")
            or groups.get("versioned_symbol")
            or groups.get("musl_symbol")
            or ""
        )
        parts["symbol_namespace"] = cxx_namespace(parts["symbol"])
        parts["needed_version"] = groups.get("needed_version") or ""
        named = _DLERROR_FILE.search(said)
        if named is not None:
            parts["dlerror_file"] = re.split(r"[/\\]", named.group("file"))[-1]
        path = _LOADER_PATH.search(said)
        if path is not None:
            parts["dlerror_path"] = path.group("path").strip()
            parts.setdefault("dlerror_file", re.split(r"[/\\]", parts["dlerror_path"])[-1])
            # quoted for a shell command: a path may hold spaces
            parts["dlerror_path_q"] = shlex.quote(parts["dlerror_path"])
            parts["dlerror_dir_q"] = shlex.quote(os.path.dirname(parts["dlerror_path"]) or ".")
        if reason == "not-found" and _other_file(parts.get("dlerror_file", ""), library):
            parts["dlerror_reason"], parts["dependency"] = "other-file", parts["dlerror_file"]
        musl = loader_reasons.MUSL_LINE.search(said)
        if musl is not None:
            parts["dlerror_loader"] = "musl"
            needed = loader_reasons.MUSL_NEEDED.search(said)
            if needed is not None:  # musl names the dependency first, then the file that needs it
                parts["dependency"] = re.split(r"[/\\]", needed.group("dependency"))[-1]
                parts["dlerror_file"] = parts["dependency"]
                if reason == "not-found":
                    parts["dlerror_reason"] = "other-file"
        parts["dlerror_meaning"] = loader_reasons.MEANINGS.get(parts["dlerror_reason"], "")
        return parts
    return {}


# Itanium C++ ABI mangling: _ZN, then cv-qualifiers of a member function (K, V, r), then the first
# name as <length><identifier> ("_ZN10tensorflow12OpDefBuilder..." -> "tensorflow"). glibc prints the
# mangled name, so the namespace says whose C++ API a library was compiled against; Mach-O puts one
# more underscore before every C symbol name, so dyld prints "__ZN10tensorflow...".
_MANGLED_NAMESPACE = re.compile(r"^_?_ZN[KVr]{0,3}(\d{1,3})([A-Za-z_]\w{0,200})")


def cxx_namespace(symbol: str) -> str:
    """The outermost C++ namespace (or class) of a mangled symbol, "" for a C symbol."""
    found = _MANGLED_NAMESPACE.match(symbol)
    if found is None:
        return ""
    length = int(found.group(1))
    name = found.group(2)
    return name[:length] if len(name) >= length else ""


def _other_file(named: str, library: str) -> bool:
    """Whether the loader's message names another file than the one asked for."""
    if not named or not library:
        return False
    base = re.split(r"[/\\]", library)[-1].lower()
    return named.lower() != base and not base.startswith(named.lower()) and not named.lower().startswith(base)


def _windows_code(text: str) -> dict[str, str]:
    found = _WINDOWS_CODE.search(text)
    code = next((c for c in found.groups() if c), "") if found else ""
    if not code:
        code = windows_code_of_text(text)
    if not code:
        if "or one of its dependencies" in text and in_stack_frame(text):  # PyTorch's line, cut before the code
            return {
                "windows_label": "the text ends before Windows' code",
                "windows_meaning": "the code is not in the text; for a package's own DLL it is most often 126, a DLL it "
                "needs (the Visual C++ or OpenMP runtime) was not found",
            }
        return {}
    statuses = [s for s in load_statuses().statuses if s.enum == "Win32 error codes" and s.value == int(code)]
    if not statuses:
        return {"windows_code": code, "windows_label": f"WinError {code}"}
    return {
        "windows_code": code,
        "windows_error": statuses[0].name,
        "windows_meaning": statuses[0].meaning,
        "windows_label": f"{statuses[0].name}, WinError {code}",
    }


def windows_code_of_text(text: str) -> str:
    """The system error code whose wording (in any language ``WINDOWS_TEXTS`` knows) a loader's
    line of the CUDA stack's frame carries, "" when it carries none or is no such line."""
    if _WINDOWS_LOADER_LINE.search(text) is None or not in_stack_frame(text):
        return ""  # another program's (Python's own _ssl, a game's DLL) wording is not ours to read
    found = _WINDOWS_TEXT.search(text)
    if found is None:
        return ""
    return next(name[1:] for name, value in found.groupdict().items() if value)


# A status given by number next to its library's name (the status patterns read more forms).
_STATUS_NUMBER = re.compile(
    r"\b(?:(?P<cudart>CUDA (?:runtime )?error)|(?P<cudnn>cuDNN (?:error|status))|(?P<cublas>cuBLAS (?:error|status))|"
    r"(?P<nccl>NCCL (?:error|result)))[: ]{1,2}\(?(?P<number>\d{1,4})(?!\d)",
    re.I,
)

# NCCL's result as ncclGetErrorString prints it (src/init.cc), after the line names NCCL: PyTorch's
# "NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error", nccl-tests' "Test NCCL failure
# common.cu:777 'unhandled cuda error'", Horovod's and TensorFlow's "NCCL ... : internal error". The
# texts are cuda_status.yaml's `strings` of ncclResult_t; the table decides which status a text is.
_NCCL_TEXT = re.compile(
    r"\bNCCL\b[^\n]{0,300}?[,:'\]] ?'?(?P<text>unhandled (?:cuda|system) error|internal error|invalid argument|"
    r"invalid usage|remote process exited or there was a network error)",
    re.I,
)


def _status(text: str) -> dict[str, str]:
    for found in _STATUS_NAME.finditer(text):
        named = status_variables({"status": found.group("status")})
        if named is not None:
            return named
    for found in _STATUS_NUMBER.finditer(text):
        family = next(f for f in ("cudart", "cudnn", "cublas", "nccl") if found.group(f))
        named = status_variables({f"{family}_number": found.group("number")})
        if named is not None:
            return named
    if "nccl" in text.lower():
        found = _NCCL_TEXT.search(text)
        named = status_variables({"nccl_text": found.group("text")}) if found else None
        if named is not None:
            return named
    # how a crashed process was reported (an NTSTATUS, a signal, an exit status of 128+N)
    for found in CRASH_SPELLINGS.finditer(text):
        named = status_variables({k: v for k, v in found.groupdict().items() if v})
        if named is not None:
            return named
    return {}


def status_family(enum: str) -> Optional[str]:
    return next((family for family, enums in FAMILIES.items() if enum in enums), None)


# What a loader's reason or a Windows code says about the cause, whatever message carried it: the
# explanation ranks this first. (cause id, text, how to tell, its fix, commands by shell). From
# glibc's dlopen(3) and ld.so(8), Apple's dyld, and Microsoft's LoadLibraryEx and system error
# codes (the sources of cuda_status.yaml's Win32 table).
REASON_CAUSES: dict[str, tuple[str, str, str, str]] = {
    "other-file": (
        "dependency-missing",
        "{library} itself was found, but a library it needs, {dependency}, was not: the loader's message names "
        "the dependency, so install or put on the library path that one (often another part of CUDA or cuDNN).",
        "The loader names the missing file; ldd lists every dependency it cannot find.",
        "ldd $(python -c 'import ctypes.util,sys; print(ctypes.util.find_library(sys.argv[1]) or sys.argv[1])' {library}) | grep 'not found'",
    ),
    "wrong-architecture": (
        "wrong-architecture",
        "The library is built for another architecture than this Python (32-bit against 64-bit, x86_64 against "
        "arm64): install the build for this interpreter's architecture.",
        "Compare the file's architecture with the interpreter's.",
        "file -L {library_file}; python -c 'import platform; print(platform.machine(), platform.architecture()[0])'",
    ),
    "undefined-symbol": (
        "mixed-library-versions",
        "Two versions of a library are mixed: {library_file} expects {symbol} from a library that was built "
        "from another release (a second copy earlier on the library path, or packages from different releases).",
        "Find every copy of the library the symbol belongs to; the one that loads first is the stale one.",
        "python -m pip list 2>/dev/null | grep -i -E 'tensorflow|nvidia|torch|jax'",
    ),
    "version-not-found": (
        "system-library-too-old",
        "The system's {needed_version_family} is older than the library needs ({needed_version}): the wheel was "
        "built for a newer Linux (or a conda environment carries an older libstdc++ than the system's).",
        "List the versions the system library provides.",
        "strings $(ldconfig -p | grep -m1 -E 'libstdc\\+\\+.so.6|libc.so.6' | awk '{{print $NF}}') | grep -E '^(GLIBC|GLIBCXX|CXXABI)_' | sort -V | tail -3",
    ),
    "damaged-file": (
        "damaged-library-file",
        "{library_file} is not a complete library (a truncated download, or a Git LFS pointer instead of the "
        "file): reinstall the package that owns it.",
        "A real library is megabytes; a damaged one is often a few hundred bytes.",
        "ls -l {library_file}",
    ),
    "permission-denied": (
        "library-not-readable",
        "The library exists but this user cannot read it (its permissions, or a security policy).",
        "Check the file's permissions.",
        "ls -l {library_file}",
    ),
    "executable-stack": (
        "executable-stack-refused",
        "The library asks for an executable stack, which glibc 2.41 and newer refuse to grant: upgrade the package "
        "to a release built without it, or clear the flag on the file (patchelf --clear-execstack).",
        "glibc's version decides: 2.41 or newer refuses.",
        "ldd --version | head -1",
    ),
}
# The reasons loader_reasons reads beyond those above, each with the cause its source states. A
# command that names {dlerror_path_q} (the file as the loader named it, quoted for the shell) is
# used only where the message gave a path; the second line is the check without one.
PATH_REASON_CAUSES: dict[str, tuple[str, str, str, tuple[str, str]]] = {
    # glibc: the static TLS block is sized at start-up (elf/dl-tls.c; the manual's tunable
    # glibc.rtld.optional_static_tls is its surplus); a library loaded first is given its space then
    "static-tls": (
        "static-tls-exhausted",
        "{dlerror_file} uses initial-exec thread-local storage and was loaded after start-up, when the static TLS "
        "block was already spent (often libgomp on aarch64, loaded after TensorFlow or PyTorch): load it first, "
        "by importing its package before the others or with LD_PRELOAD, or give the block more room with "
        "GLIBC_TUNABLES=glibc.rtld.optional_static_tls (glibc 2.32 and newer).",
        "Preloaded, the library takes its static TLS at start-up: if the error goes away with this, it is the cause.",
        ("export LD_PRELOAD={dlerror_path_q}", "ldd --version | head -1"),
    ),
    # glibc dl-load.h: the segment's mmap failed; EPERM from a noexec mount (mount(8) "noexec"),
    # ENOMEM from the address-space limit
    "segment-map-failed": (
        "noexec-mount",
        "The library lies on a file system mounted noexec (a /tmp, a removable drive or a mount with the "
        "'user' option, a container's tmpfs), where the kernel maps no code; or the process reached its "
        "memory limit (ulimit -v). Move the file (or the cache folder that holds it) to an exec mount, or "
        "remount it with exec.",
        "The mount that holds the file lists noexec among its options.",
        (
            "findmnt -no TARGET,OPTIONS -T {dlerror_dir_q}; ulimit -v",
            "findmnt -lo TARGET,OPTIONS | grep noexec; ulimit -v",
        ),
    ),
    # glibc dl-reloc.c: mprotect of a segment with text relocations; SELinux's execmod permission
    # (Red Hat's SELinux guide: the textrel_shlib_t type allows it)
    "memory-protection": (
        "selinux-denied",
        "SELinux (enforcing) refused to make the library's pages writable and executable: the library has text "
        "relocations (built without -fPIC) or its file has the wrong label. Relabel it (restorecon, or chcon -t "
        "textrel_shlib_t for a library that needs text relocations) or install a build without text relocations.",
        "SELinux is enforcing and the audit log shows an AVC denial (execmod) for the file.",
        (
            "getenforce; sudo ausearch -m avc -ts recent | tail -5",
            "getenforce; sudo ausearch -m avc -ts recent | tail -5",
        ),
    ),
    # dyld: Library Validation (the hardened runtime) loads only Apple's or the same team's code
    "code-signature": (
        "library-validation",
        "macOS refused the library's code signature: the program runs with Library Validation (the hardened "
        "runtime, or an app from the App Store) and the library is unsigned, signed ad hoc or signed by another "
        "team. Sign the library ad hoc for a program of your own (codesign --force --sign -), or run it from an "
        "interpreter without Library Validation (Homebrew's or python.org's Python, a virtual environment).",
        "codesign names the library's signature and team; a file of another team (or none) is the case.",
        (
            "codesign -dv --verbose=2 {dlerror_path_q} 2>&1 | grep -E 'Signature|TeamIdentifier'",
            "sw_vers -productVersion",
        ),
    ),
    "os-too-old": (
        "macos-older-than-build",
        "The library was built for a newer macOS than this one: upgrade macOS or install a release of the package "
        "built for this macOS.",
        "This macOS is older than the one the message names.",
        ("sw_vers -productVersion", "sw_vers -productVersion"),
    ),
    "not-loadable-elf": (
        "not-loadable-elf",
        "The file is an ELF file, but not a library this loader can load: a build for another system (its OS ABI) "
        "or for a newer C library (its ABI version), or an executable or object file in the library's place. "
        "Install the package's build for this Linux.",
        "file names the file's system, architecture and type (a shared object, for this machine, is what loads).",
        ("file -L {dlerror_path_q}", "uname -m; ldd --version | head -1"),
    ),
    "not-a-file": (
        "library-path-is-folder",
        "The path the library was loaded from names a folder, not the library file: a path variable (or a "
        "setting) points at the folder where it should name the file, or the other way round.",
        "The path is a directory.",
        ("ls -ld {dlerror_path_q}", 'echo "$LD_LIBRARY_PATH"'),
    ),
    "too-many-open-files": (
        "open-file-limit",
        "The process reached its limit of open files (EMFILE), so the loader could not open the library: raise the "
        "limit (ulimit -n) or close the files the program leaks (data-loader workers, sockets).",
        "The limit is the number of files the process may hold open.",
        ("ulimit -n", "ulimit -n"),
    ),
    "out-of-memory": (
        "loader-out-of-memory",
        "The loader could not get memory to load the library (ENOMEM): the process's address-space limit "
        "(ulimit -v, common on cluster login nodes) or its container's memory limit is reached.",
        "An address-space limit other than unlimited is the usual cause.",
        ("ulimit -v; free -m", "ulimit -v; free -m"),
    ),
}
# musl: a wheel built for glibc (manylinux) on a musl system (Alpine) misses glibc's own symbols
# (__sprintf_chk, __isnanf) and files (ld-linux-x86-64.so.2); PEP 656's musllinux wheels are built for musl
MUSL_CAUSE = (
    "glibc-build-on-musl",
    "This is a musl system (Alpine Linux): {dlerror_file} is built for glibc (a manylinux wheel), which musl "
    "cannot load: it misses glibc's own symbols and files. Use a glibc-based image (Debian, Ubuntu) or a "
    "package built for musl (a musllinux wheel).",
    "musl's loader says it is musl.",
    "ldd --version 2>&1 | head -1",
)

WINDOWS_CAUSES: dict[str, tuple[str, str, str, str]] = {
    "126": (
        "dll-dependency-missing",
        "Windows found no DLL of that name, or found it and not a DLL it depends on (WinError 126 says the same "
        "for both): usually a CUDA or cuDNN DLL whose folder is not on PATH, or the Visual C++ runtime.",
        "Dependencies (the open-source successor of Dependency Walker) names the DLL that is missing.",
        "where.exe cudart64_*.dll cudnn*.dll msvcp140.dll",
    ),
    "193": (
        "wrong-architecture",
        "The DLL is not for this Python's architecture (WinError 193: a 32-bit DLL in a 64-bit Python, or the "
        "other way round), or the file is damaged.",
        "A 64-bit Python prints 64bit here.",
        'python -c "import platform; print(platform.architecture()[0])"',
    ),
    "127": (
        "mixed-library-versions",
        "The DLL loaded but lacks a function the module needs (WinError 127): two versions are mixed, typically an "
        "older copy of a CUDA, cuDNN or Visual C++ DLL earlier on PATH.",
        "Every copy on PATH, in search order.",
        "where.exe cudnn64_8.dll cudart64_110.dll",
    ),
    "1114": (
        "dll-init-failed",
        "A DLL's start-up failed (WinError 1114): most often a Visual C++ runtime older than the build needs, "
        "sometimes a CPU without the instructions (AVX) the build uses.",
        "Install the current Visual C++ Redistributable (x64) and try again.",
        "winget install Microsoft.VCRedist.2015+.x64",
    ),
    "1455": (
        "paging-file-too-small",
        "The paging file is too small for the memory the CUDA DLLs reserve when they load (WinError 1455), "
        "which several worker processes multiply: enlarge the paging file or start fewer workers.",
        "The paging file's size is under System > Advanced system settings > Performance > Virtual memory.",
        "Get-CimInstance Win32_PageFileUsage | Select-Object Name, AllocatedBaseSize",
    ),
}
