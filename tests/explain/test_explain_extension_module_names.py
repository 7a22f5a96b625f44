"""A Python extension module is a package's file by the name CPython gives it (PEP 3149's ABI tag,
importlib.machinery.EXTENSION_SUFFIXES), wherever it lies: a loader's message that quotes
"_engine.cpython-311-x86_64-linux-gnu.so" without its site-packages folder is an installed
package's, so the generic loader patterns (stack_only) explain it. A program's own library
(libfoo.so.1) is still another program's."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import in_stack_frame

CATALOGUE = load_patterns()


@pytest.mark.parametrize(
    "text",
    [
        "_mnncengine.cpython-311-x86_64-linux-gnu.so",
        "ImportError: _C.cpython-312-darwin.so: cannot open shared object file",
        "_core.cpython-313t-aarch64-linux-gnu.so",  # a free-threaded build's tag
        r"C:\src\build\lib\_ext.cp311-win_amd64.pyd",
        "_rust.abi3.so: undefined symbol: PyInit__rust",
        "_pywrap.cpython-310-powerpc64le-linux-gnu.so",
    ],
)
def test_an_extension_module_is_a_packages_file(text):
    assert in_stack_frame(text)


@pytest.mark.parametrize(
    "text",
    [
        "/opt/foo/libbar.so.1: cannot enable executable stack as shared object requires: Invalid argument",
        "libcallback.so.0: cannot enable executable stack",
        "cpython-311-x86_64-linux-gnu",  # a tag without a module
        "python3.11: error while loading shared libraries: libpython3.11.so.1.0",
        "foo.cpython.so",
    ],
)
def test_other_files_are_not(text):
    assert not in_stack_frame(text)


@pytest.mark.parametrize(
    "text",
    [
        "_mnncengine.cpython-311-x86_64-linux-gnu.so: cannot enable executable stack as shared object",
        "ImportError: _engine.cpython-312-x86_64-linux-gnu.so: cannot enable executable stack as shared object requires: Invalid argument",
        "OSError: /home/u/.venv/lib/python3.12/site-packages/jaxlib/xla_extension.so: cannot enable executable stack as shared object requires: Invalid argument",
    ],
)
def test_a_packages_executable_stack_is_explained(text):
    assert [e.id for e in explain(CATALOGUE.scan_text(text))] == ["loader-executable-stack"]


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: cannot enable executable stack as shared object requires: Invalid argument",
        "/usr/bin/foo: error while loading shared libraries: /opt/foo/libbar.so.1: cannot enable executable stack as shared object requires: Invalid argument",
        "cannot enable the feature",
    ],
)
def test_another_programs_executable_stack_is_not(text):
    assert "loader-executable-stack" not in [e.id for e in explain(CATALOGUE.scan_text(text))]
