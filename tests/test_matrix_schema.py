"""Each kind of mistake in a matrix file gets one readable message naming file, line and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.errors import MatrixError
from envcheck.matrix import clear_cache, load_matrix

MINIMAL = Path(__file__).parent / "fixtures" / "matrix" / "minimal.yaml"


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def broken(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    text = MINIMAL.read_text()
    assert text.count(old) >= count, f"fixture no longer contains {old!r}"
    path = tmp_path / "matrix.yaml"
    path.write_text(text.replace(old, new, count))
    return path


def error_for(path: Path) -> str:
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    message = str(info.value)
    assert "\n" not in message, "a matrix error is one line"
    return message


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def test_the_fixture_itself_is_valid():
    matrix = load_matrix(MINIMAL)
    assert [(str(b.tf), b.os) for b in matrix.tf_releases()] == [
        ("2.10", "linux"),
        ("2.10", "windows"),
        ("2.11", "windows"),
    ]


def test_wrong_type_names_field_line_and_expectation(tmp_path):
    path = broken(tmp_path, 'python: ["3.9", "3.10"]', 'python: "3.9"')
    message = error_for(path)
    line = line_of(path, 'python: "3.9"')
    assert message.startswith(f"{path}, line {line}:")
    assert "tensorflow[0].linux.python" in message
    assert "expected a list of Python versions" in message


def test_unknown_key_is_an_error(tmp_path):
    path = broken(tmp_path, '    cudnn: "8.1"\n', '    cudnn: "8.1"\n    cudnn_version: "8.1"\n')
    message = error_for(path)
    assert f"line {line_of(path, 'cudnn_version')}" in message
    assert "tensorflow[0].linux.cudnn_version: unknown key" in message
    assert "compute_capabilities" in message  # lists what is allowed


def test_missing_key_is_an_error(tmp_path):
    path = broken(tmp_path, "  distribution: tensorflow\n  linux:", "  linux:")
    message = error_for(path)
    assert "tensorflow[0]: missing key 'distribution'" in message


def test_bad_version_string(tmp_path):
    path = broken(tmp_path, 'cuda: "11.2"', 'cuda: "eleven"')
    message = error_for(path)
    assert f"line {line_of(path, 'eleven')}" in message
    assert "tensorflow[0].linux.cuda: expected a version like '12.2', got 'eleven'" in message


def test_python_version_must_be_major_minor(tmp_path):
    path = broken(tmp_path, 'python: ["3.9", "3.10"]', 'python: ["3.9", "3.10.4"]')
    assert "tensorflow[0].linux.python[1]: expected a version like '3.10', got '3.10.4'" in error_for(path)


def test_versions_are_read_as_written_not_as_floats(tmp_path):
    # Unquoted 3.10 is a YAML float (3.1); the loader must keep the text.
    path = broken(tmp_path, 'python: ["3.9", "3.10"]', "python: [3.9, 3.10]")
    build = load_matrix(path).tf_build("2.10", "linux")
    assert build.python == ("3.9", "3.10")


def test_duplicate_tf_row(tmp_path):
    path = broken(tmp_path, '- tf: "2.11"', '- tf: "2.10"')
    message = error_for(path)
    first_row = line_of(path, '- tf: "2.10"')
    assert f"duplicate row: TensorFlow 2.10 windows is already given on line {first_row}" in message


def test_duplicate_cuda_row(tmp_path):
    row = '- version: "11.2"\n  min_driver: {linux: "460.27.03", windows: "460.82"}\n  architectures: ["3.5", "5.0", "8.0", "8.6"]\n  sources: [docs]\n'
    path = broken(tmp_path, "\ncuda_majors:", "\n" + row + "\ncuda_majors:")
    assert "cuda[1]: duplicate row: CUDA 11.2 is already given on line" in error_for(path)


def test_duplicate_gpu_name_across_products(tmp_path):
    path = broken(tmp_path, "  - {name: TITAN X (Pascal)", "  - NVIDIA GTX1060\n  - {name: TITAN X (Pascal)")
    assert "duplicate row: GPU name 'NVIDIA GTX1060' is already given" in error_for(path)


def test_duplicate_mapping_key(tmp_path):
    path = broken(tmp_path, '    cudnn: "8.1"\n', '    cudnn: "8.1"\n    cudnn: "8.0"\n')
    assert "tensorflow[0].linux.cudnn: duplicate key (first given on line" in error_for(path)


def test_unknown_source_reference(tmp_path):
    path = broken(tmp_path, "  sources: [docs]\n\ntensorflow:", "  sources: [dosc]\n\ntensorflow:")
    message = error_for(path)
    assert f"line {line_of(path, '[dosc]')}" in message
    assert "platform.sources[0]: unknown source 'dosc'" in message


def test_empty_sources_is_an_error(tmp_path):
    path = broken(tmp_path, "    sources: [https://example.org/windows-cpu]", "    sources: []")
    assert "tensorflow[1].windows.sources: expected at least one source" in error_for(path)


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = broken(tmp_path, 'python: ["3.9", "3.10"]', 'python: ["3.9", "3.10"')
    message = error_for(path)
    assert "not valid YAML" in message
    assert re.search(r", line \d+: ", message)


def test_cpu_only_build_may_not_list_gpu_code(tmp_path):
    path = broken(
        tmp_path,
        '    python: ["3.10"]\n    cuda: null\n',
        '    python: ["3.10"]\n    cuda: null\n    compute_capabilities: [sm_50]\n',
    )
    assert "tensorflow[1].windows.compute_capabilities: expected nothing for a CPU-only build" in error_for(path)


def test_tf_row_must_name_a_known_cuda_release(tmp_path):
    path = broken(
        tmp_path,
        '    cuda: "11.2"\n    cudnn: "8.1"\n    compute_capabilities: [sm_35, sm_50, compute_80]\n    libraries: [libcudart',
        '    cuda: "11.8"\n    cudnn: "8.1"\n    compute_capabilities: [sm_35, sm_50, compute_80]\n    libraries: [libcudart',
    )
    assert "tensorflow[0].linux.cuda: CUDA 11.8 has no row in the 'cuda' table" in error_for(path)


def test_architecture_entries_are_checked(tmp_path):
    path = broken(
        tmp_path, "compute_capabilities: [sm_35, sm_50, compute_80]", "compute_capabilities: [sm_35, sm50, compute_80]"
    )
    assert (
        "tensorflow[0].linux.compute_capabilities[1]: expected an architecture like 'sm_70' or 'compute_80', got 'sm50'"
        in error_for(path)
    )


def test_pip_cuda_specifiers_are_checked(tmp_path):
    path = broken(
        tmp_path,
        "    libraries: [libcudart.so.11.0, libcudnn.so.8]\n",
        '    libraries: [libcudart.so.11.0, libcudnn.so.8]\n    pip_cuda:\n      extra: and-cuda\n      packages: {nvidia-cudnn-cu11: "=> 8.6"}\n',
    )
    assert (
        "tensorflow[0].linux.pip_cuda.packages.nvidia-cudnn-cu11: expected a package name and a PEP 440 specifier"
        in error_for(path)
    )


def test_boolean_field_rejects_text(tmp_path):
    path = broken(tmp_path, "macos_gpu: false", "macos_gpu: nope")
    assert "platform.macos_gpu: expected true or false, got 'nope'" in error_for(path)


def test_future_schema_is_refused(tmp_path):
    path = broken(tmp_path, "schema: 2", "schema: 3")
    assert "schema: expected 2 (this envcheck reads matrix schema 2), got 3" in error_for(path)


def test_distributions_are_required_and_checked(tmp_path):
    path = broken(tmp_path, "  cuda: never\n", "  cuda: sometimes\n")
    assert "distributions[2].cuda: expected one of always, never, release, got 'sometimes'" in error_for(path)
    path = broken(tmp_path, "- name: tensorflow-cpu\n", "- name: TensorFlow_CPU\n")
    assert "expected a normalised PyPI name" in error_for(path)
    path = broken(tmp_path, "- name: tensorflow-cpu\n", "- name: tensorflow\n")
    assert "duplicate row: distribution tensorflow" in error_for(path)


def test_top_level_must_be_a_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- just\n- a list\n")
    assert "(top level): expected a mapping" in error_for(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing here\n")
    assert error_for(path) == f"{path}: the file is empty"


def test_missing_file(tmp_path):
    message = error_for(tmp_path / "nope.yaml")
    assert "cannot read the matrix file" in message and "nope.yaml" in message


def test_cache_reloads_an_edited_file(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(MINIMAL.read_text())
    first = load_matrix(path)
    assert load_matrix(path) is first, "an unchanged file is parsed once"
    path.write_text(
        MINIMAL.read_text().replace(
            'cudnn: "8.1"\n    compute', 'cudnn: "8.1"\n    compiler: GCC 9.3.1\n    compute', 1
        )
    )
    second = load_matrix(path)
    assert second is not first
    assert second.tf_build("2.10", "linux").compiler == "GCC 9.3.1"


# --- architectures and PCI device ids ------------------------------------------------------------


def test_the_fixture_knows_architectures_and_pci_ids():
    matrix = load_matrix(MINIMAL)
    assert matrix.last_driver_branch("Kepler") == "470" and matrix.last_driver_branch("6.1") == "580"
    assert matrix.last_driver_branch("8.6") is None and matrix.architecture("8.6").name == "Ampere"
    assert matrix.gpu_by_pci_id("0x1C03").name == "GeForce GTX 1060"
    assert matrix.gpu("RTX 3060 Laptop GPU").name == "GeForce RTX 3060"


def test_architectures_are_required(tmp_path):
    text = MINIMAL.read_text()
    start, end = text.index("architectures:\n"), text.index("\ngpus:")
    path = tmp_path / "matrix.yaml"
    path.write_text(text[:start] + text[end + 1 :])
    assert "(top level): missing key 'architectures'" in error_for(path)


def test_gpu_row_must_name_a_known_architecture(tmp_path):
    path = broken(tmp_path, "- architecture: Pascal\n", "- architecture: Pascual\n")
    message = error_for(path)
    assert f"line {line_of(path, 'Pascual')}" in message
    assert "gpus[0].architecture: unknown architecture 'Pascual' (expected one of: Kepler, Pascal, Ampere)" in message


def test_gpu_row_capability_must_be_within_its_architecture(tmp_path):
    path = broken(
        tmp_path,
        '- architecture: Pascal\n  compute_capability: "6.1"',
        '- architecture: Pascal\n  compute_capability: "7.5"',
    )
    assert "gpus[0].compute_capability: 7.5 is not a compute capability of Pascal (6.0, 6.1, 6.2)" in error_for(path)


def test_a_capability_belongs_to_one_architecture(tmp_path):
    path = broken(tmp_path, 'compute_capabilities: ["8.0", "8.6"]', 'compute_capabilities: ["6.2", "8.0", "8.6"]')
    assert "architectures[2].compute_capabilities: compute capability 6.2 is already Pascal's (line" in error_for(path)


def test_duplicate_architecture_name(tmp_path):
    path = broken(tmp_path, "- name: Ampere\n", "- name: pascal\n")
    assert "architectures[2]: duplicate row: architecture name 'pascal' is already given on line" in error_for(path)


@pytest.mark.parametrize("branch, shown", [('"R470"', "'R470'"), ('"470.57"', "'470.57'"), ("latest", "'latest'")])
def test_last_driver_branch_is_a_branch_number_or_null(tmp_path, branch, shown):
    path = broken(tmp_path, 'last_driver_branch: "470"', f"last_driver_branch: {branch}")
    message = error_for(path)
    assert f"line {line_of(path, 'last_driver_branch: ' + branch)}" in message
    assert (
        f"architectures[0].last_driver_branch: expected a driver branch like '470' (or null while supported), got {shown}"
        in message
    )


def test_last_driver_branch_is_required(tmp_path):
    path = broken(tmp_path, '  last_driver_branch: "470"\n', "")
    assert "architectures[0]: missing key 'last_driver_branch'" in error_for(path)


@pytest.mark.parametrize("bad", ['"1C03"', '"0x1c03"', '"1c033"', '"10de:1c03"', '"g103"', "null"])
def test_pci_ids_are_four_lower_case_hex_digits(tmp_path, bad):
    path = broken(tmp_path, 'pci_ids: ["1c02", "1c03"]', f'pci_ids: ["1c02", {bad}]')
    message = error_for(path)
    written = '"1c02", ' + bad
    assert f"line {line_of(path, written)}" in message
    assert "gpus[0].products[0].pci_ids[1]: expected " in message
    assert "PCI device id" in message


def test_a_pci_id_names_one_product(tmp_path):
    path = broken(tmp_path, 'pci_ids: ["1b00"]', 'pci_ids: ["1b00", "1c03"]')
    message = error_for(path)
    assert f"line {line_of(path, 'TITAN X (Pascal)')}" in message
    assert "gpus[0]: PCI device id '1c03' of TITAN X (Pascal) is already given to GeForce GTX 1060 on line" in message


def test_a_pci_id_is_given_once_in_a_product(tmp_path):
    path = broken(tmp_path, 'pci_ids: ["1c02", "1c03"]', 'pci_ids: ["1c02", "1c03", "1c02"]')
    assert "PCI device id '1c02' of GeForce GTX 1060 is already given to the same product" in error_for(path)


def test_pci_ids_must_be_a_list(tmp_path):
    path = broken(tmp_path, 'pci_ids: ["1b00"]', 'pci_ids: "1b00"')
    assert "gpus[0].products[1].pci_ids: expected a list of PCI device ids, got '1b00'" in error_for(path)


def test_a_laptop_name_is_another_name_than_the_desktop_one(tmp_path):
    # "RTX 3060 Laptop GPU" may be its own product; "RTX 3060 Mobile" then names the same one.
    path = broken(
        tmp_path,
        "  products: [GeForce RTX 3060]",
        "  products: [GeForce RTX 3060, GeForce RTX 3060 Laptop GPU, NVIDIA GeForce RTX 3060 Mobile]",
    )
    assert "duplicate row: GPU name 'NVIDIA GeForce RTX 3060 Mobile' is already given" in error_for(path)
    ok = broken(
        tmp_path, "  products: [GeForce RTX 3060]", "  products: [GeForce RTX 3060, GeForce RTX 3060 Laptop GPU]"
    )
    matrix = load_matrix(ok)
    assert matrix.gpu("RTX 3060 Max-Q").name == "GeForce RTX 3060 Laptop GPU"
    assert matrix.gpu("RTX 3060").name == "GeForce RTX 3060"
