"""Every reason the dynamic loaders give for refusing a library, read from the loaders' own message
strings: glibc's ld.so (elf/dl-load.c, dl-load.h, dl-reloc.c, dl-lookup.c, dl-version.c; dlerror()
prints "<file>: <reason>" and, when the reason carries an errno, ": " and strerror's text), musl's
(ldso/dynlink.c: "Error loading shared library %s: %m (needed by %s)", "Error relocating %s: %s:
symbol not found"), Apple's dyld (dyld 2's "no suitable image found. Did find: <file>: <why>",
dyld 3/4's "tried: '<file>' (<why>), ..."). Windows' codes are cuda_status.yaml's Win32 table.

Each entry is (reason, regex, meaning, source). The first entry that matches the loader's text
decides, so a specific reason stands before a general one: the static TLS block's "cannot allocate
memory" before the errno's "Cannot allocate memory", a mapping refused with "Operation not
permitted" before a file that cannot be read. The errno texts after a glibc reason are glibc's
strerror strings (string/_strerror.c, sysdeps/gnu/errlist.h).
"""

from __future__ import annotations

import re

GLIBC = "https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/"
MUSL = "https://git.musl-libc.org/cgit/musl/tree/ldso/dynlink.c"
DYLD = "https://github.com/apple-oss-distributions/dyld"

# (reason, regex, meaning, source)
LOADER_REASONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "static-tls",
        # glibc dl-reloc.c _dl_allocate_static_tls; musl: an initial-exec TLS relocation against a
        # library loaded by dlopen
        r"cannot allocate memory in static TLS block|initial-exec TLS resolves to dynamic definition",
        "the library uses initial-exec thread-local storage, which must fit in the static TLS block the "
        "loader sized when the program started; a library loaded later (by dlopen, an import) finds it full",
        GLIBC + "dl-reloc.c (_dl_allocate_static_tls); " + MUSL,
    ),
    (
        "segment-map-failed",
        # glibc dl-load.h DL_MAP_SEGMENTS_ERROR_MAP_SEGMENT / _MAP_ZERO_FILL (the mmap of a segment)
        r"failed to map segment from shared object|cannot map zero-fill pages",
        "the kernel refused to map the library's code into memory: the file lies on a file system "
        "mounted noexec (mmap with PROT_EXEC fails with EPERM), or the process hit a memory limit (ENOMEM)",
        GLIBC + "dl-load.h (DL_MAP_SEGMENTS_ERROR_MAP_SEGMENT)",
    ),
    (
        "memory-protection",
        # glibc dl-reloc.c (text relocations: the segment made writable, then restored), dl-load.h
        # DL_MAP_SEGMENTS_ERROR_MPROTECT, dl-reloc.c _dl_protect_relro; musl's RELRO mprotect
        r"cannot restore segment prot after reloc|cannot make segment writable for relocation|"
        r"cannot change memory protections|cannot apply additional memory protection after relocation|"
        r"RELRO protection failed",
        "the kernel refused to change the protection of the library's pages (mprotect): a security "
        "policy (SELinux's execmod/texrel rules) forbids a library with text relocations, or its file label",
        GLIBC + "dl-reloc.c (_dl_relocate_object, _dl_protect_relro); " + MUSL,
    ),
    (
        "executable-stack",
        r"cannot enable executable stack",
        "the library is marked as needing an executable stack (PT_GNU_STACK), which the loader would not grant",
        GLIBC + "dl-load.c (_dl_map_object_from_fd)",
    ),
    (
        "code-signature",
        # dyld: the code-signing monitor refused the file (Library Validation, hardened runtime)
        r"code signature (?:in|invalid)\b[^\n]{0,400}?(?:not valid for use in process|errno=1)|"
        r"not valid for use in process using Library Validation",
        "macOS refused the library's code signature: the process uses Library Validation (the hardened "
        "runtime) and the file is unsigned, signed ad hoc or by another team",
        DYLD + " (dyld: 'code signature in <uuid> '<file>' not valid for use in process')",
    ),
    (
        "os-too-old",
        r"built for (?:macOS|Mac OS X) [\d.]{1,10} which is newer than running OS",
        "the library was built for a newer macOS than the one running",
        DYLD + " (dyld: 'built for macOS N which is newer than running OS')",
    ),
    (
        "wrong-architecture",
        # glibc dl-load.c open_verify (a 32-bit file for a 64-bit process, or the reverse; another
        # byte order); dyld 2 "mach-o, but wrong architecture", dyld 3/4 "incompatible architecture"
        r"wrong ELF class|ELF file data encoding not (?:big|little)-endian|incompatible architecture|"
        r"mach-o, but wrong architecture|is not a valid Win32 application",
        "the file is built for another architecture (32/64-bit, byte order, x86_64 against arm64)",
        GLIBC + "dl-load.c (open_verify)",
    ),
    (
        "version-not-found",
        r"version [`'\"][\w.+-]{1,60}['\"] not found",
        "the library needs a symbol version (GLIBC_2.28, GLIBCXX_3.4.30) that the system's library does not provide",
        GLIBC + "dl-version.c (match_symbol)",
    ),
    (
        "undefined-symbol",
        r"undefined symbol: |Symbol not found: |symbol not found in flat namespace|"
        r" not defined in file |: symbol not found\b",
        "a symbol the library needs is defined by no library loaded (glibc's 'undefined symbol', musl's "
        "'symbol not found', dyld's 'Symbol not found')",
        GLIBC + "dl-lookup.c (_dl_lookup_symbol_x); " + MUSL,
    ),
    (
        "not-loadable-elf",
        # glibc dl-load.c open_verify and _dl_map_object_from_fd: an ELF file, but not one this
        # loader can load as a library (another OS's ABI, an ABI version newer than this glibc's, an
        # object file, an executable, a file without a dynamic section); glibc dl-version.c for a
        # version record of a format it does not know
        r"ELF file OS ABI invalid|ELF file ABI version invalid|ELF file version (?:ident )?does not match current one|"
        r"nonzero padding in e_ident|only ET_DYN and ET_EXEC can be loaded|ELF file's phentsize not the expected size|"
        r"object file has no dynamic section|object file has no loadable segments|cannot dynamically load "
        r"(?:position-independent )?executable|shared object cannot be dlopen\(\)ed|"
        r"unsupported version \d{1,6} of Ver(?:def|need) record|ELF load command address/offset not page-aligned",
        "the file is an ELF file, but not a shared library this loader can load: built for another system "
        "or a newer C library (its OS ABI or ABI version), or an executable or object file instead of a library",
        GLIBC + "dl-load.c (open_verify, _dl_map_object_from_fd); " + GLIBC + "dl-version.c",
    ),
    (
        "damaged-file",
        r"file too short|invalid ELF header|not a dynamic executable|not a mach-o file|slide.{0,20}not a mach-o",
        "the file is not a library at all (a truncated download, a Git LFS pointer)",
        GLIBC + "dl-load.c (open_verify)",
    ),
    (
        "not-a-file",
        r"(?:cannot open shared object file|cannot read file data|cannot stat shared object): Is a directory",
        "the path names a folder, not the library file",
        GLIBC + "dl-load.c; strerror(EISDIR)",
    ),
    (
        "too-many-open-files",
        r"(?:cannot open shared object file|Error loading shared library [^\n]{1,300}?): Too many open files",
        "the process has as many files open as its limit allows (ulimit -n), so the loader could not open one more",
        GLIBC + "dl-load.c; strerror(EMFILE)",
    ),
    (
        "out-of-memory",
        r"(?:cannot open shared object file|cannot create shared object descriptor|cannot allocate memory for program header|cannot create (?:scope list|search path array)|"
        r"Error loading shared library [^\n]{1,300}?): Cannot allocate memory|"
        r"cannot create shared object descriptor|cannot allocate memory for program header",
        "the loader could not get memory for the library (a process memory limit: ulimit -v, a container's)",
        GLIBC + "dl-load.c; strerror(ENOMEM)",
    ),
    (
        "permission-denied",
        r"cannot open shared object file: Permission denied|cannot stat shared object: Permission denied|"
        r"Operation not permitted|\(errno=1\)",
        "the file cannot be read by this user",
        GLIBC + "dl-load.c; strerror(EACCES)",
    ),
    (
        "not-found",
        r"cannot open shared object file: No such file|image not found|not found|no such file",
        "the file is not on the search path",
        GLIBC + "dl-load.c; strerror(ENOENT)",
    ),
)
REASONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(text, re.I)) for name, text, _m, _s in LOADER_REASONS
)
MEANINGS: dict[str, str] = {
    **{name: meaning for name, _t, meaning, _s in LOADER_REASONS},
    # not read from the text alone: a "not found" that names another file than the one asked for
    "other-file": "the library was found, but a library it needs was not",
}

# The loader's own frame, by the phrases only a loader prints: where a line holds none of them (and
# no dlerror), "not found" or "Cannot allocate memory" is another program's sentence.
FRAME_PHRASES = (
    r"cannot allocate memory in static TLS block|initial-exec TLS resolves to dynamic definition|"
    r"failed to map segment from shared object|cannot map zero-fill pages|cannot restore segment prot after reloc|"
    r"cannot make segment writable for relocation|cannot change memory protections|RELRO protection failed|"
    r"cannot apply additional memory protection after relocation|not valid for use in process|"
    r"which is newer than running OS|mach-o, but wrong architecture|not a mach-o file|"
    r"ELF file (?:OS ABI|ABI version|version|data encoding)|only ET_DYN and ET_EXEC|object file has no (?:dynamic|loadable)|"
    r"cannot dynamically load (?:position-independent )?executable|of Ver(?:def|need) record|"
    r"cannot stat shared object|cannot create shared object descriptor|cannot read file data|"
    r"Error relocating [^\n]{1,300}?: [^\n]{1,300}?: symbol not found|Error loading shared library "
)

# musl's loader: its lines name it (the glibc-built wheel on Alpine reads its own symbols as missing)
MUSL_LINE = re.compile(r"\bError (?:relocating|loading shared library) [^\n]{1,300}?: ", re.I)
# musl's "Error loading shared library X: <errno text> (needed by Y)": X is the dependency
MUSL_NEEDED = re.compile(r"Error loading shared library (?P<dependency>[^\s:]{1,300}): [^\n()]{1,80}\(needed by ", re.I)
# files of glibc itself, which only a glibc system has
GLIBC_FILES = re.compile(
    r"^(?:ld-linux[\w.-]{0,30}\.so\.\d|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1)$"
)
