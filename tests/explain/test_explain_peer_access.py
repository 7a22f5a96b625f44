"""TensorFlow logs a warning for each GPU pair whose peer-to-peer access could not be enabled and
goes on (gpu_device.cc, BaseGPUDeviceFactory::EnablePeerAccess); only when no pair at all could
be enabled does it fail. explain says so: a notice alone, part of the failure with the error."""

from __future__ import annotations

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()
WARNING = (
    "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1387] Unable to enable peer access between device "
    "ordinals {a} and {b}, status: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: peer access is not supported between these two devices"
)


def _explain(text: str):
    return explain(CATALOGUE.scan_text(text))


def test_a_pair_without_peer_access_is_a_notice_not_a_driver_error():
    (found,) = _explain(WARNING.format(a=0, b=1))
    assert found.id == "peer-access-pair-not-enabled" and found.harmless
    assert any(command.line == "nvidia-smi topo -m" for command in found.fix.commands)


def test_the_warnings_are_part_of_the_failure_when_no_pair_could_be_enabled():
    log = "\n".join(
        [
            WARNING.format(a=0, b=1),
            WARNING.format(a=1, b=0),
            "tensorflow.python.framework.errors_impl.InternalError: 2 potential peer access pairs were reported "
            "by the driver, but no peering could be enabled.",
        ]
    )
    found = _explain(log)
    assert {f.id for f in found} == {"peer-access-pair-not-enabled", "peer-access-none-enabled"}
    assert not any(f.harmless for f in found)


def test_the_same_status_outside_tensorflows_peer_setup_is_still_a_driver_error():
    (found,) = _explain(
        "RuntimeError: CUDA error: peer access is not supported between these two devices CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"
    )
    assert found.id != "peer-access-pair-not-enabled" and not found.harmless


def test_any_pair_and_any_status_the_driver_gives_is_the_same_notice():
    # the warning prints whatever EnablePeerAccess returned, for any ordinals
    for a, b, status in (
        (2, 7, "CUDA_ERROR_INVALID_DEVICE: invalid device ordinal"),
        (3, 1, "CUDA_ERROR_TOO_MANY_PEERS: peer mapping resources exhausted"),
        (0, 12, "INTERNAL: failed to enable peer access from 0x55d0 to 0x55e0: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"),
    ):
        line = (
            "W external/local_xla/xla/stream_executor/gpu/gpu_device.cc:2264] Unable to enable peer access "
            f"between device ordinals {a} and {b}, status: {status}"
        )
        (found,) = _explain(line)
        assert found.id == "peer-access-pair-not-enabled" and found.harmless, line
