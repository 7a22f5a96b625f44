"""What `import tensorflow` (and the packages beside it) print when a neighbour is the wrong version,
read from the source that prints each message and ranked by the versions the log shows.

- ml_dtypes: its CHANGELOG names the release that added each type and the one that removed
  float8_e4m3b11, so a missing name says which way the mismatch goes.
- protobuf: generated code needs a runtime at least as new as its protoc (the cross-version runtime
  guarantee); since the 5.x series the gencode checks that itself (runtime_version.py) and prints
  both versions.
- TensorFlow Probability and Addons check the TensorFlow they import (_ensure_tf_install,
  ensure_tf_install.py) and print the range they need.
- Keras 3's load_model reads .keras and .h5 files only; its Sequential takes its own Layer class only.
- h5py 3 returns string attributes as str; Keras releases written for h5py 2 decode them.
- NumPy 2 removed names from its main namespace (_expired_attrs_2_0.py) and broke 1.x builds' ABI;
  the NumPy and TensorFlow versions a log prints decide between "NumPy 2" and "NumPy too old".
- A wheel's file name carries its tags (PEP 425); pip's "from versions:" list holds only the
  releases it found for this interpreter.
"""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


def _one(text: str, pattern_id: str):
    found = [e for e in _explained(text) if e.id == pattern_id]
    assert found, (pattern_id, [e.id for e in _explained(text)])
    return found[0]


def _ids(explanation) -> list[str]:
    return [c.id for c in explanation.causes]


def _dropped(explanation) -> list[str]:
    return [cause_id for cause_id, _ in explanation.dropped]


# --- ml_dtypes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, first, version",
    [
        # removed in 0.3.0 (renamed float8_e4m3b11fnuz in 0.2.0): the module is older than ml_dtypes
        ("AttributeError: module 'ml_dtypes' has no attribute 'float8_e4m3b11'", "ml-dtypes-too-new", "0.3.0"),
        # added in 0.5.0 and 0.6.0: ml_dtypes is older than the module
        ("AttributeError: module 'ml_dtypes' has no attribute 'float6_e3m2fn'. Did you mean: 'float8_e3m4'?", "ml-dtypes-too-old", "0.5.0"),
        ("ImportError: cannot import name 'bcomplex32' from 'ml_dtypes' (/usr/lib/python3/dist-packages/ml_dtypes/__init__.py)", "ml-dtypes-too-old", "0.6.0"),
    ],
)  # fmt: skip
def test_a_missing_ml_dtypes_name_says_which_side_is_behind(text, first, version):
    explanation = _one(text, "ml-dtypes-name-missing")
    assert _ids(explanation)[0] == first
    assert version in explanation.causes[0].text or version in (
        explanation.causes[0].fix.text if explanation.causes[0].fix else ""
    )


def test_a_removed_name_rules_out_an_ml_dtypes_too_old_to_have_it():
    explanation = _one("AttributeError: module 'ml_dtypes' has no attribute 'float8_e4m3b11'", "ml-dtypes-name-missing")
    assert _ids(explanation) == ["ml-dtypes-too-new"]
    assert _dropped(explanation) == ["ml-dtypes-too-old"]


def test_a_name_ml_dtypes_never_had_still_reads_as_ml_dtypes_too_old_without_a_release():
    explanation = _one("AttributeError: module 'ml_dtypes' has no attribute 'int7'", "ml-dtypes-name-missing")
    assert _ids(explanation) == ["ml-dtypes-too-old"]
    assert explanation.variables["ml_dtypes_added_in"] == ""


def test_another_modules_missing_float8_is_not_ml_dtypes():
    assert not _explained("AttributeError: module 'torch' has no attribute 'float8_e4m3fn'")


# --- protobuf ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, first",
    [
        ("google.protobuf.runtime_version.VersionError: Detected incompatible Protobuf Gencode/Runtime versions when loading object_detection/protos/anchor_generator.proto: gencode 5.27.2 runtime 5.26.1. Runtime version cannot be older than the linked gencode version.", "protobuf-runtime-older-than-gencode"),
        ("Detected mismatched Protobuf Gencode/Runtime major versions when loading tensorboard/compat/proto/summary.proto: gencode 4.25.0 runtime 6.30.0. Same major version is required.", "protobuf-gencode-older-major"),
        ("Detected mismatched Protobuf Gencode/Runtime major versions when loading x.proto: gencode 7.34.0 runtime 6.33.1. Same major version is required.", "protobuf-runtime-older-than-gencode"),
        ("Detected mismatched Protobuf Gencode/Runtime version suffixes when loading y.proto: gencode 5.29.0 runtime 5.29.0-rc1. Version suffixes must be the same.", "protobuf-version-suffix"),
    ],
)  # fmt: skip
def test_the_gencode_and_runtime_versions_decide_the_cause(text, first):
    explanation = _one(text, "protobuf-gencode-runtime-mismatch")
    assert _ids(explanation)[0] == first


def test_a_runtime_older_than_its_gencode_gets_an_install_line_of_the_gencodes_major():
    text = (
        "Detected incompatible Protobuf Gencode/Runtime versions when loading a.proto: gencode 5.29.5 runtime 5.27.2."
    )
    explanation = _one(text, "protobuf-gencode-runtime-mismatch")
    lines = [c.line for c in explanation.fix.commands]
    assert 'python -m pip install "protobuf>=5.29.5,<6"' in lines
    assert (explanation.variables["gencode"], explanation.variables["runtime"]) == ("5.29.5", "5.27.2")
    suffixed = _one(text.replace("5.27.2.", "5.30.0-rc2."), "protobuf-gencode-runtime-mismatch")
    assert suffixed.variables["runtime"] == "5.30.0-rc2"


@pytest.mark.parametrize(
    "text",
    [
        "AttributeError: module 'google.protobuf.descriptor' has no attribute '_internal_create_key'",
        "module \"google.protobuf.descriptor\" has no attribute '_internal_create_key'",
        "ImportError: cannot import name 'runtime_version' from 'google.protobuf' (/opt/conda/lib/python3.9/site-packages/google/protobuf/__init__.py)",
        "ImportError: cannot import name 'builder' from 'google.protobuf.internal' (/usr/lib/python3/dist-packages/google/protobuf/internal/__init__.py)",
    ],
)
def test_new_generated_code_on_an_old_runtime_is_protobuf_too_old(text):
    assert _ids(_one(text, "protobuf-too-old"))[0] == "protobuf-too-old"


def test_an_old_protobuf_is_first_and_a_shadowing_copy_second():
    message = "AttributeError: module 'google.protobuf.descriptor' has no attribute '_internal_create_key'"
    assert _ids(_one(message, "protobuf-too-old")) == ["protobuf-too-old", "protobuf-shadowed"]


def test_the_one_major_behind_warning_is_harmless_and_others_modules_names_are_not_protobuf():
    warning = "UserWarning: Protobuf gencode version 5.29.0 is exactly one major version older than the runtime version 6.31.1 at a.proto."
    assert [e.harmless for e in _explained(warning)] == [True]
    assert not _explained("ImportError: cannot import name 'runtime_version' from 'mylib'")
    assert not _explained("AttributeError: module 'google.protobuf.message' has no attribute 'Foo'")


# --- typing_extensions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, added",
    [
        ("ImportError: cannot import name 'Self' from 'typing_extensions' (/usr/lib/python3/dist-packages/typing_extensions.py)", "4.0.0"),
        ("AttributeError: module 'typing_extensions' has no attribute 'ReadOnly'", "4.9.0"),
        ("ImportError: cannot import name 'NoDefault' from 'typing_extensions'", "4.12.0"),
    ],
)  # fmt: skip
def test_a_missing_typing_extensions_name_names_the_release_that_added_it(text, added):
    explanation = _one(text, "typing-extensions-name-missing")
    assert _ids(explanation)[0] == "typing-extensions-too-old"
    assert f"typing_extensions {added} added" in explanation.causes[0].text


def test_tensorflow_2_13s_cap_comes_first_only_for_a_name_after_4_6_in_its_log():
    late = "ImportError: cannot import name 'TypeAliasType' from 'typing_extensions'"
    assert _ids(_one(late, "typing-extensions-name-missing"))[0] == "typing-extensions-too-old"
    assert _ids(_one("tensorflow==2.13.1\n" + late, "typing-extensions-name-missing"))[0] == "tf-pins-typing-extensions"
    early = "ImportError: cannot import name 'override' from 'typing_extensions'"
    assert _ids(_one("tensorflow==2.13.1\n" + early, "typing-extensions-name-missing")) == ["typing-extensions-too-old"]
    assert not _explained("ImportError: cannot import name 'Self' from 'typing'")


# --- TensorFlow's trackable wrappers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log, first",
    [
        ("", "wrapt-too-new-for-tf"),
        ("wrapt                     1.16.0\ntyping_extensions        4.5.0\n", "wrapt-too-new-for-tf"),
        ("wrapt                     1.14.1\ntyping_extensions        4.12.2\n", "typing-extensions-too-new-for-tf"),
        ("Successfully installed typing-extensions-4.8.0\n", "typing-extensions-too-new-for-tf"),
    ],
)
def test_the_wrapper_failure_is_ranked_by_the_wrapt_and_typing_extensions_the_log_shows(log, first):
    text = log + "TypeError: this __dict__ descriptor does not support '_TupleWrapper' objects"
    explanation = _one(text, "tf-trackable-wrapper-dict")
    assert _ids(explanation)[0] == first
    assert set(_ids(explanation)) == {"wrapt-too-new-for-tf", "typing-extensions-too-new-for-tf"}


def test_another_dict_descriptor_error_is_not_tensorflows_wrapper():
    assert not _explained("TypeError: this __dict__ descriptor does not support 'Foo' objects")


# --- TensorFlow Probability and Addons -------------------------------------------------------------------


@pytest.mark.parametrize(
    "detected, tfp",
    [("2.9.0", "0.17"), ("2.3.0-dev20200603", "0.11"), ("2.15.1", "0.23"), ("2.16.2", "0.24"), ("1.15.0", "")],
)
def test_tfp_names_the_release_made_for_the_tensorflow_found(detected, tfp):
    text = (
        "ImportError: This version of TensorFlow Probability requires TensorFlow version >= 2.18; "
        f"Detected an installation of version {detected}. Please upgrade TensorFlow to proceed."
    )
    explanation = _one(text, "tfp-requires-newer-tf")
    assert explanation.variables["detected"] == detected
    assert explanation.variables["tfp_for_detected"] == tfp
    lines = [c.line for c in explanation.fix.commands]
    # the install line names the release only where the pairing is known
    assert lines == ([f'python -m pip install "tensorflow-probability=={tfp}.*"'] if tfp else [])


def test_the_addons_range_is_read_and_an_addons_install_line_is_no_warning():
    text = "UserWarning: Tensorflow Addons supports using Python ops for all Tensorflow versions above or equal to 2.11.0 and strictly below 2.14.0 (nightly versions are not supported)."
    explanation = _one(text, "tfa-tf-versions-mismatch")
    assert (explanation.variables["min"], explanation.variables["max"]) == ("2.11.0", "2.14.0")
    assert not _explained("Successfully installed tensorflow-addons-0.21.0 typeguard-2.13.3")


# --- Keras 3 -------------------------------------------------------------------------------------------------


def test_keras3_refusing_a_folder_puts_the_savedmodel_first_and_a_missing_keras_file_its_path():
    folder = _one(
        "ValueError: File format not supported: filepath=D:\\runs\\export. Keras 3 only supports V3 `.keras` files, legacy H5 format files (`.h5` extension).",
        "keras3-legacy-savedmodel",
    )
    assert _ids(folder)[0] == "keras3-legacy-savedmodel"
    missing = _one(
        "ValueError: File not found: filepath=models/best.keras. Please ensure the file is an accessible `.keras` zip file.",
        "keras3-legacy-savedmodel",
    )
    assert _ids(missing)[0] == "keras-file-not-found"


def test_a_keras2_layer_in_keras3s_sequential_is_keras2_code_unless_the_log_shows_keras_2():
    text = "ValueError: Only instances of `keras.Layer` can be added to a Sequential model. Received: <tensorflow_hub.keras_layer.KerasLayer object at 0x7f80> (of type <class 'tensorflow_hub.keras_layer.KerasLayer'>)"
    assert _ids(_one(text, "keras3-unsupported-code"))[0] == "keras3-with-tf-keras-code"
    # Keras 3 installed beside TensorFlow 2.15 is still Keras 3: the log's keras version wins
    beside = _one("tensorflow==2.15.0\nkeras==3.3.3\n" + text, "keras3-unsupported-code")
    assert "keras3-with-tf-keras-code" not in _dropped(beside)
    # another class name in the message (not Keras 3's keras.Layer) is not this message
    assert not _explained("ValueError: Only instances of `Layer` can be added to a Sequential model.")


# --- h5py 3 ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "  File \"/usr/lib/python3/dist-packages/keras/engine/saving.py\", line 1183, in load_weights_from_hdf5_group\n    original_keras_version = f.attrs['keras_version'].decode('utf8')\nAttributeError: 'str' object has no attribute 'decode'",
        "    training_config = json.loads(training_config.decode('utf-8'))\nAttributeError: 'str' object has no attribute 'decode'",
        '    original_backend = f.attrs["backend"].decode("utf8")',
    ],
)
def test_keras_decoding_an_hdf5_attribute_is_h5py3(text):
    assert _ids(_one(text, "h5py3-keras-str-attributes")) == ["h5py3-str-attributes"]


def test_another_decode_of_a_str_is_not_h5py():
    assert not _explained("    name = line.decode('utf8')\nAttributeError: 'str' object has no attribute 'decode'")


# --- NumPy --------------------------------------------------------------------------------------------------------


def test_numpy2s_removed_names_and_the_numpy_1_24_aliases_are_told_apart():
    removed = _one(
        "AttributeError: `np.unicode_` was removed in the NumPy 2.0 release. Use `np.str_` instead.",
        "numpy2-name-removed",
    )
    assert removed.variables["name"] == "unicode_"
    assert _ids(removed) == ["numpy-too-new-for-code"]
    assert [e.id for e in _explained("AttributeError: module 'numpy' has no attribute 'float'.")] == [
        "numpy-alias-removed"
    ]


BFLOAT16 = (
    '  File "/opt/venv/lib/python3.10/site-packages/tensorflow/python/framework/dtypes.py", line 29, in <module>\n'
    "    _np_bfloat16 = _pywrap_bfloat16.TF_bfloat16_type()\n"
    "TypeError: Unable to convert function return value to a Python type! The signature was\n"
    "\t() -> handle"
)


@pytest.mark.parametrize(
    "before, first, ruled_out",
    [
        ("", "numpy2-abi", None),
        # NumPy's own line before it says which way round
        (
            "RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf\n",
            "numpy-too-old",
            None,
        ),
        (
            "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.1 as it may crash.\n",
            "numpy2-abi",
            None,
        ),
        # the versions a pip list shows: NumPy 1.x cannot be NumPy 2's break
        ("numpy                     1.21.6\ntensorflow                2.9.1\n", "numpy-too-old", "numpy2-abi"),
        ("numpy                     2.1.3\ntensorflow                2.10.1\n", "numpy2-abi", "numpy-too-old"),
    ],
)
def test_tensorflows_bfloat16_failure_is_ranked_by_the_numpy_the_log_shows(before, first, ruled_out):
    explanation = _one(before + BFLOAT16, "tf-numpy-c-api-failed")
    assert _ids(explanation)[0] == first
    if ruled_out:
        assert ruled_out in _dropped(explanation)


def test_pybind11s_cast_error_of_another_program_is_not_tensorflows():
    assert not _explained(
        "TypeError: Unable to convert function return value to a Python type! The signature was\n\t(self: foo.Bar) -> object"
    )


def test_numpy_core_failing_to_import_under_numpy_2_puts_the_abi_break_first():
    text = "numpy==2.0.2\ntensorflow==2.12.0\nImportError: numpy.core.multiarray failed to import"
    explanation = _one(text, "numpy-too-old")
    assert _ids(explanation)[0] == "numpy2-abi"
    assert "numpy-too-old" in _dropped(explanation)
    plain = _one("ImportError: numpy.core.multiarray failed to import", "numpy-too-old")
    assert _ids(plain)[0] == "numpy-too-old"


@pytest.mark.parametrize(
    "text, numpy, keras",
    [
        ("numpy                     1.26.4\nkeras                     3.6.0", "1.26.4", "3.6.0"),
        ("Successfully installed keras-2.15.0 numpy-1.26.4", "1.26.4", "2.15.0"),
        ("Keras Version: 3.0.5", "", "3.0.5"),
        # no versions: a requirement, NumPy's "1.x", tf_keras' own version, a "Keras 3" in prose
        ("pip install 'numpy<2'\nA module compiled using NumPy 1.x\ntf_keras 2.16.0\nKeras 3 only supports V3", "", ""),
    ],
)
def test_the_numpy_and_keras_versions_a_log_prints(text, numpy, keras):
    facts = read_context(text)
    assert facts.get("log_numpy", "") == numpy
    assert facts.get("log_keras", "") == keras


# --- wheels and Python versions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, first",
    [
        # the interpreter the log shows is another Python than the wheel's tag
        ("$ python --version\nPython 3.12.4\n$ pip install tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl\nERROR: tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl is not a supported wheel on this platform.", "python-version-unsupported"),
        # the log is from Windows and the wheel is a macOS one, for the same Python
        ("PS C:\\Users\\me> python --version\nPython 3.11.9\nERROR: tensorflow-2.16.1-cp311-cp311-macosx_12_0_arm64.whl is not a supported wheel on this platform.", "package-not-for-platform"),
    ],
)  # fmt: skip
def test_a_refused_wheel_is_read_by_its_tags_against_the_log(text, first):
    explanation = _one(text, "pip-unsupported-wheel")
    assert _ids(explanation)[0] == first


def test_a_refused_wheels_own_tag_is_not_the_interpreters_python():
    facts = read_context("pip install tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.whl\nERROR: tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.whl is not a supported wheel on this platform.")  # fmt: skip
    assert "log_python" not in facts
    assert (
        read_context("Using cached tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.whl (475.2 MB)")["log_python"]
        == "3.11"
    )


def test_any_packages_refused_wheel_is_read_by_the_same_tags():
    # pip refuses a wheel by its tags whatever the package (a TensorFlow installer's NumPy wheel)
    explanation = _one(
        "ERROR: numpy-1.18.5-cp38-cp38-macosx_11_0_x86_64.whl is not a supported wheel on this platform.",
        "pip-unsupported-wheel",
    )
    assert _ids(explanation)[0] == "pip-too-old-for-macos-tags"
    other = _one(
        "ERROR: pygame-2.1.0-cp39-cp39-win_amd64.whl is not a supported wheel on this platform.",
        "pip-unsupported-wheel",
    )
    assert "pip-too-old-for-macos-tags" not in _ids(other)


def test_a_pinned_release_missing_from_pips_list_is_this_pythons_and_rules_out_32_bit():
    text = (
        "ERROR: Could not find a version that satisfies the requirement tensorflow==2.12.0 (from versions: 2.16.0rc0, 2.16.1, 2.17.0)\n"
        "ERROR: No matching distribution found for tensorflow==2.12.0"
    )
    explanation = _one(text, "pip-no-matching-tensorflow")
    assert _ids(explanation)[0] == "python-version-unsupported"
    assert "python-32-bit" in _dropped(explanation)


def test_from_versions_none_keeps_every_cause():
    text = "ERROR: Could not find a version that satisfies the requirement tensorflow (from versions: none)"
    explanation = _one(text, "pip-no-matching-tensorflow")
    assert _dropped(explanation) == []
    assert set(_ids(explanation)) >= {"python-version-unsupported", "python-32-bit"}


@pytest.mark.parametrize(
    "python, first, ruled_out",
    [
        # no TensorFlow release in the matrix has wheels for Python 3.15
        ("3.15", "python-version-unsupported", None),
        # TensorFlow 2.15 has no wheel for Python 3.12 (2.16 was the first)
        ("3.12", "python-version-unsupported", None),
        # and one for Python 3.11: the Python version is not what pip refused
        ("3.11", None, "python-version-unsupported"),
    ],
)
def test_the_matrix_says_whether_the_pinned_release_has_a_wheel_for_the_logs_python(python, first, ruled_out):
    text = f"$ python -V\nPython {python}.1\nERROR: No matching distribution found for tensorflow==2.15.0"
    explanation = _one(text, "pip-no-matching-tensorflow")
    if first:
        assert _ids(explanation)[0] == first
    if ruled_out:
        assert ruled_out in _dropped(explanation)
