"""How long the probes may take, in seconds: written once, read by the probes and the flags."""

TF_TIMEOUT = 60.0  # the TensorFlow check: the import plus a matmul and a convolution per GPU
DOCTOR_TIMEOUT = 90.0  # the whole collection (``doctor --timeout``)
INTERPRETER_TIMEOUT = 30.0  # the probed interpreter's own facts (``--python``)
NVML_TIMEOUT = 20.0  # nvmlInit and the per-GPU queries
COMMAND_TIMEOUT = 10.0  # ldconfig, nvidia-smi
