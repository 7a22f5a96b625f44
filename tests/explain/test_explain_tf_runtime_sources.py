"""A sweep of the messages TensorFlow's GPU runtime prints, read from the source that prints them.

Each row names the file at a release tag, the format string (the parts a run fills in written
as ``{name}``), a line rendered from it with plausible values and the log prefix of that
generation, and what ``envcheck explain`` must make of that line alone: a pattern id, or
``harmless`` (only harmless notices), or ``quiet`` (nothing to act on: no explanation, or only
harmless ones). The table is the sweep: rerun it after catalogue changes to see that no
message of the runtime lost its meaning."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

TF = "https://github.com/tensorflow/tensorflow/blob"
P1 = "2019-03-01 10:00:00.000000: "  # TensorFlow 1.x-2.10 log prefix
P2 = "2023-06-19 17:03:27.840554: "  # 2.11-2.16
SE = "tensorflow/stream_executor/cuda"  # 2.0-2.10
GPU = "tensorflow/core/common_runtime/gpu"

# (source at a tag, format string, rendered line, expected)
SWEEP = [
    # gpu_device.cc: device discovery and creation
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Created device {name} with {mb} MB memory:  -> {desc}",
        P1
        + f"I {GPU}/gpu_device.cc:1525] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 10794 MB memory:  -> device: 0, name: Tesla K80, pci bus id: 0000:00:1e.0, compute capability: 3.7",
        "gpu-device-created",
    ),
    (
        f"{TF}/v1.15.0/{GPU}/gpu_device.cc",
        "Created TensorFlow device ({name} with {mb} MB memory) -> physical GPU ({desc})",
        P1
        + f"I {GPU}/gpu_device.cc:1304] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 10794 MB memory) -> physical GPU (device: 0, name: Tesla K80, pci bus id: 0000:00:1e.0, compute capability: 3.7)",
        "gpu-device-created",
    ),
    (
        f"{TF}/v2.16.1/{GPU}/gpu_device.cc",
        "Created device {name} with {mb} MB memory:  -> {desc}",
        "I0000 00:00:1755011248.049012     142 gpu_device.cc:2022] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22259 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 4090, pci bus id: 0000:01:00.0, compute capability: 8.9",
        "gpu-device-created",
    ),
    (
        f"{TF}/v2.3.0/{GPU}/gpu_device.cc",
        "Found device {i} with properties: pciBusID: {bus} name: {name} computeCapability: {cc}",
        P1
        + f"I {GPU}/gpu_device.cc:1561] Found device 0 with properties: pciBusID: 0000:01:00.0 name: GeForce GTX 1080 computeCapability: 6.1",
        "gpu-found",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Adding visible gpu devices: {ids}",
        P1 + f"I {GPU}/gpu_device.cc:1871] Adding visible gpu devices: 0",
        "harmless",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Device interconnect {name} with strength {n} edge matrix:",
        P1 + f"I {GPU}/gpu_device.cc:1258] Device interconnect StreamExecutor with strength 1 edge matrix:",
        "harmless",
    ),
    (f"{TF}/v2.8.0/{GPU}/gpu_device.cc", "{i}:   {Y|N ...}", P1 + f"I {GPU}/gpu_device.cc:1277] 0:   N Y ", "quiet"),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Cannot dlopen some GPU libraries. ... Skipping registering GPU devices...",
        P1
        + f"W {GPU}/gpu_device.cc:1835] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.",
        "cannot-dlopen-gpu-libraries",
    ),
    (
        f"{TF}/v2.16.1/{GPU}/gpu_device.cc",
        "Cannot dlopen some GPU libraries. ... Skipping registering GPU devices...",
        "W0000 00:00:1755011248.049012     142 gpu_device.cc:2344] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/pip for how to download and setup the required libraries for your platform.",
        "cannot-dlopen-gpu-libraries",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Ignoring visible gpu device ({desc}) with Cuda compute capability {cc}. The minimum required Cuda capability is {min}.",
        P1
        + f"I {GPU}/gpu_device.cc:1794] Ignoring visible gpu device (device: 0, name: GeForce GT 730, pci bus id: 0000:01:00.0, compute capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda capability is 3.7.",
        "compute-capability-too-low",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Ignoring visible gpu device ({desc}) with core count: {n}. The minimum required count is {min}. ...",
        P1
        + f"I {GPU}/gpu_device.cc:1688] Ignoring visible gpu device (device: 1, name: GeForce GT 1030, pci bus id: 0000:04:00.0, compute capability: 6.1) with core count: 3. The minimum required count is 8. You can adjust this requirement with the env var TF_MIN_GPU_MULTIPROCESSOR_COUNT.",
        "gpu-core-count-ignored",
    ),
    (
        f"{TF}/v1.15.0/{GPU}/gpu_device.cc",
        "Ignoring visible gpu device ({desc}) with Cuda multiprocessor count: {n}. The minimum required count is {min}. ...",
        P1
        + f"I {GPU}/gpu_device.cc:1469] Ignoring visible gpu device (device: 1, name: Quadro K4000, pci bus id: 0000:08:00.0, compute capability: 3.0) with Cuda multiprocessor count: 4. The minimum required count is 8. You can adjust this requirement with the env var TF_MIN_GPU_MULTIPROCESSOR_COUNT.",
        "gpu-core-count-ignored",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "TensorFlow was not built with CUDA kernel binaries compatible with compute capability {cc}. ...",
        P1
        + f"W {GPU}/gpu_device.cc:1406] TensorFlow was not built with CUDA kernel binaries compatible with compute capability 8.6. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.",
        "compute-capability-ptx-jit",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "Could not identify NUMA node of platform GPU id {id}, defaulting to 0.  Your kernel may not have been built with NUMA support.",
        P1
        + f"I {GPU}/gpu_device.cc:1150] Could not identify NUMA node of platform GPU id 0, defaulting to 0.  Your kernel may not have been built with NUMA support.",
        "numa-node-notice",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "cudaGetDevice() failed. Status: {cudaGetErrorString}",
        P1
        + f"E {GPU}/gpu_device.cc:1200] Internal: cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version",
        "cuda-driver-too-old",
    ),
    (
        f"{TF}/v2.4.0/{GPU}/gpu_device.cc",
        "CUDA runtime implicit initialization on GPU:{id} failed. Status: {cudaGetErrorString}",
        "InternalError: CUDA runtime implicit initialization on GPU:0 failed. Status: all CUDA-capable devices are busy or unavailable",
        "cuda-devices-busy",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_bfc_allocator.cc",
        "Overriding allow_growth setting because the TF_FORCE_GPU_ALLOW_GROWTH environment variable is set. Original config value was {v}.",
        P1
        + f"I {GPU}/gpu_bfc_allocator.cc:42] Overriding allow_growth setting because the TF_FORCE_GPU_ALLOW_GROWTH environment variable is set. Original config value was 0.",
        "allow-growth-override",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_device.cc",
        "{n} potential peer access pairs were reported by the driver, but no peering could be enabled.",
        "InternalError: 2 potential peer access pairs were reported by the driver, but no peering could be enabled.",
        "peer-access-none-enabled",
    ),
    (
        f"{TF}/master/{GPU}/gpu_device.cc",
        "Not enough GPUs to create virtual devices. num_gpus_to_use: {n} #virtual_devices: {m}",
        "UnknownError: Not enough GPUs to create virtual devices. num_gpus_to_use: 1 #virtual_devices: 2",
        "virtual-device-config-invalid",
    ),
    (
        f"{TF}/master/{GPU}/gpu_device.cc",
        "It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set.",
        "InvalidArgumentError: It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set.",
        "virtual-device-config-invalid",
    ),
    (
        f"{TF}/master/{GPU}/gpu_device.cc",
        "Unified memory on GPUs with compute capability lower than 6.0 (pre-Pascal class GPUs) does not support oversubscription.",
        "InternalError: Unified memory on GPUs with compute capability lower than 6.0 (pre-Pascal class GPUs) does not support oversubscription.",
        "unified-memory-oversubscription-unsupported",
    ),
    (
        f"{TF}/master/{GPU}/gpu_device.cc",
        "Ignoring visible gpu device {id} whose executor is in invalid state: {status}",
        P2
        + f"I {GPU}/gpu_device.cc:2015] Ignoring visible gpu device 1 whose executor is in invalid state: INTERNAL: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY: out of memory; total memory reported: 25425608704",
        "cuda-out-of-memory",
    ),
    (
        f"{TF}/v1.15.0/{GPU}/gpu_device.cc",
        "'visible_device_list' listed an invalid GPU id '{id}' but visible device count is {count}",
        "InvalidArgumentError: 'visible_device_list' listed an invalid GPU id '1' but visible device count is 1",
        "visible-device-list-invalid-id",
    ),
    # gpu_util.cc: a copy or a sync on a stream already in error (LOG(FATAL))
    (
        f"{TF}/v2.8.0/{GPU}/gpu_util.cc",
        "GPU->CPU Memcpy failed",
        P1 + f"F {GPU}/gpu_util.cc:291] GPU->CPU Memcpy failed",
        "gpu-stream-failed-fatal",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_util.cc",
        "CPU->GPU Memcpy failed",
        P1 + f"F {GPU}/gpu_util.cc:339] CPU->GPU Memcpy failed",
        "gpu-stream-failed-fatal",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_util.cc",
        "GPU sync failed",
        P1 + f"F {GPU}/gpu_util.cc:401] GPU sync failed",
        "gpu-stream-failed-fatal",
    ),
    # bfc_allocator.cc: the allocator's own out-of-memory report and its notices
    (
        "https://github.com/tensorflow/tensorflow/blob/v2.8.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Allocator ({name}) ran out of memory trying to allocate {size} (rounded to {bytes})requested by op {op}",
        P1
        + "W tensorflow/core/common_runtime/bfc_allocator.cc:457] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)requested by op Conv2D",
        "bfc-allocator-out-of-memory",
    ),
    (
        "https://github.com/tensorflow/tensorflow/blob/v1.15.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Allocator ({name}) ran out of memory trying to allocate {size}.  Current allocation summary follows.",
        P1
        + "W tensorflow/core/common_runtime/bfc_allocator.cc:279] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.22GiB.  Current allocation summary follows.",
        "bfc-allocator-out-of-memory",
    ),
    (
        "https://github.com/tensorflow/tensorflow/blob/v2.8.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Allocator ({name}) ran out of memory trying to allocate {size} with freed_by_count={n}. The caller indicates that this is not a failure, ...",
        P1
        + "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.14GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.",
        "allocator-not-a-failure",
    ),
    (
        "https://github.com/tensorflow/tensorflow/blob/v2.8.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Garbage collection: deallocate free memory regions ... Set TF_ENABLE_GPU_GARBAGE_COLLECTION=false ...",
        P1
        + "W tensorflow/core/common_runtime/bfc_allocator.cc:343] Garbage collection: deallocate free memory regions (i.e., allocations) so that we can re-allocate a larger region to avoid OOM due to memory fragmentation. If you see this message frequently, you are running near the threshold of the available device memory and re-allocation may incur great performance overhead. You may try smaller batch sizes to observe the performance impact. Set TF_ENABLE_GPU_GARBAGE_COLLECTION=false if you'd like to disable this feature.",
        "allocator-garbage-collection",
    ),
    (
        "https://github.com/tensorflow/tensorflow/blob/v2.8.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Sum Total of in-use chunks: {size}",
        P1 + "I tensorflow/core/common_runtime/bfc_allocator.cc:1035] Sum Total of in-use chunks: 3.52GiB",
        "quiet",
    ),
    (
        "https://github.com/tensorflow/tensorflow/blob/v2.8.0/tensorflow/core/common_runtime/bfc_allocator.cc",
        "Bin ({size}): \tTotal Chunks: {n}, Chunks in use: {m}. ...",
        P1
        + "I tensorflow/core/common_runtime/bfc_allocator.cc:1010] Bin (256): \tTotal Chunks: 48, Chunks in use: 47. 12.0KiB allocated for chunks. 11.8KiB in use in bin. 1.2KiB client-requested in use in bin.",
        "quiet",
    ),
    # gpu_cudamallocasync_allocator.cc and gpu_process_state.cc: TF_GPU_ALLOCATOR=cuda_malloc_async
    (
        f"{TF}/v2.6.0/{GPU}/gpu_cudamallocasync_allocator.cc",
        "TF_GPU_ALLOCATOR=cuda_malloc_async isn't currently supported. Possible causes: ...",
        P1
        + f"F {GPU}/gpu_cudamallocasync_allocator.cc:94] TF_GPU_ALLOCATOR=cuda_malloc_async isn't currently supported. Possible causes: device not supported, driver too old,  OS not supported, CUDA version too old.",
        "cuda-malloc-async-unsupported",
    ),
    (
        f"{TF}/v2.6.0/{GPU}/gpu_cudamallocasync_allocator.cc",
        "GpuCudaMallocAsyncAllocator requires CUDA 11.2+",
        P1 + f"F {GPU}/gpu_cudamallocasync_allocator.cc:265] GpuCudaMallocAsyncAllocator requires CUDA 11.2+",
        "cuda-malloc-async-unsupported",
    ),
    (
        f"{TF}/v2.6.0/{GPU}/gpu_cudamallocasync_allocator.cc",
        "{name} cuMemAllocAsync failed to allocate {n}: {CUDA error: ... (NAME)}",
        P1
        + f"E {GPU}/gpu_cudamallocasync_allocator.cc:288] gpu_async_0 cuMemAllocAsync failed to allocate 268435456: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)",
        "cuda-out-of-memory",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_process_state.cc",
        "Using CUDA malloc Async allocator for GPU: {id}",
        P1 + f"I {GPU}/gpu_process_state.cc:222] Using CUDA malloc Async allocator for GPU: 0",
        "harmless",
    ),
    (
        f"{TF}/v2.8.0/{GPU}/gpu_host_allocator.h",
        "could not allocate pinned host memory of size: {n}",
        P1 + f"W ./{GPU}/gpu_host_allocator.h:44] could not allocate pinned host memory of size: 2147483648",
        "pinned-host-memory-failed",
    ),
    # cuda_driver.cc
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed call to cuInit: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        "cuinit-no-device",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed call to cuInit: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
        "cuda-driver-mismatch",
    ),
    (
        f"{TF}/v2.15.0/third_party/xla/xla/stream_executor/cuda/cuda_driver.cc",
        "failed call to cuInit: {status}",
        P2
        + "E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        "cuinit-unknown-error",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed to allocate {size} ({bytes} bytes) from device: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:1002] failed to allocate 3.87G (4156162048 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        "cuda-out-of-memory",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed to alloc {bytes} bytes on host: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:1150] failed to alloc 2147483648 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        "pinned-host-memory-failed",  # HostAllocate pins RAM (cuMemHostAlloc): not the GPU's memory
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed call to cuDevicePrimaryCtxRetain: {status}; total memory reported: {n}",
        P1
        + f"E {SE}/cuda_driver.cc:890] failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY: out of memory; total memory reported: 11554717696",
        "cuda-out-of-memory",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "could not retrieve CUDA device count: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:806] could not retrieve CUDA device count: CUDA_ERROR_NOT_INITIALIZED: initialization error",
        "cuda-not-initialized-after-fork",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed to load in-memory CUBIN: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:700] failed to load in-memory CUBIN: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the device",
        "no-kernel-image-for-device",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed to load PTX text as a module: {status}",
        P1
        + f"E {SE}/cuda_driver.cc:700] failed to load PTX text as a module: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed",
        "cuda-invalid-ptx",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_driver.cc",
        "failed to enqueue async memcpy from host to device: {status}; ...",
        P1
        + f"E {SE}/cuda_driver.cc:1010] failed to enqueue async memcpy from host to device: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered; GPU dst: 0x7f; host src: 0x7e; size: 4=0x4",
        "cuda-illegal-address",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_event.cc",
        "Error polling for event status: failed to query event: {status}",
        P1
        + f"E {SE}/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
        "cuda-illegal-address",
    ),
    # cuda_diagnostics.cc: what TensorFlow prints after cuInit failed
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "retrieving CUDA diagnostic information for host: {host}",
        P1 + f"I {SE}/cuda_diagnostics.cc:169] retrieving CUDA diagnostic information for host: myhost",
        "quiet",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "hostname: {host}",
        P1 + f"I {SE}/cuda_diagnostics.cc:176] hostname: myhost",
        "quiet",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "kernel reported version is: {version}",
        P1 + f"I {SE}/cuda_diagnostics.cc:204] kernel reported version is: 470.82.1",
        "quiet",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "libcuda reported version is: {version or status}",
        P1
        + f"I {SE}/cuda_diagnostics.cc:200] libcuda reported version is: Not found: was unable to find libcuda.so DSO loaded into this program",
        "libcuda-not-in-process",
    ),
    (
        f"{TF}/v2.16.1/third_party/xla/xla/stream_executor/cuda/cuda_diagnostics.cc",
        "libcuda reported version is: {version or status}",
        "I0000 00:00:1755011248.049012     142 cuda_diagnostics.cc:137] libcuda reported version is: NOT_FOUND: was unable to find libcuda.so DSO loaded into this program. The library may be missing or provided via another object.",
        "libcuda-not-in-process",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "kernel driver does not appear to be running on this host ({host}): {path} does not exist",
        P1
        + f"I {SE}/cuda_diagnostics.cc:176] kernel driver does not appear to be running on this host (myhost): /proc/driver/nvidia/version does not exist",
        "kernel-driver-not-running",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_diagnostics.cc",
        "kernel version {k} does not match DSO version {d} -- cannot find working devices in this configuration",
        P1
        + f"E {SE}/cuda_diagnostics.cc:313] kernel version 450.80.2 does not match DSO version 470.57.2 -- cannot find working devices in this configuration",
        "kernel-dso-version-mismatch",
    ),
    # cuda_gpu_executor.cc (2.0-2.10), cuda_executor.cc (2.11+)
    (
        f"{TF}/v2.8.0/{SE}/cuda_gpu_executor.cc",
        "successful NUMA node read from SysFS had negative value ({v}), ...",
        P1
        + f"I {SE}/cuda_gpu_executor.cc:937] successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero",
        "numa-node-notice",
    ),
    (
        f"{TF}/v2.16.1/third_party/xla/xla/stream_executor/cuda/cuda_executor.cc",
        "successful NUMA node read from SysFS had negative value ({v}), ...",
        "I0000 00:00:1755011248.049012     142 cuda_executor.cc:1015] successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero. See more at https://github.com/torvalds/linux/blob/v6.0/Documentation/ABI/testing/sysfs-bus-pci#L344-L355",
        "numa-node-notice",
    ),
    # dso_loader.cc and cudart_stub.cc
    (
        f"{TF}/v2.8.0/tensorflow/stream_executor/platform/default/dso_loader.cc",
        "Successfully opened dynamic library {name}",
        P1
        + "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudart.so.11.0",
        "harmless",
    ),
    (
        f"{TF}/v2.8.0/tensorflow/stream_executor/platform/default/dso_loader.cc",
        "Could not load dynamic library '{name}'; dlerror: {err}",
        P1
        + "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory",
        "cudart-not-loaded",
    ),
    (
        f"{TF}/v1.4.0/tensorflow/stream_executor/dso_loader.cc",
        "Couldn't open CUDA library {name}. LD_LIBRARY_PATH: {path}",
        P1
        + "I tensorflow/stream_executor/dso_loader.cc:126] Couldn't open CUDA library libcudnn.so.5. LD_LIBRARY_PATH: /usr/local/cuda/lib64",
        "cudnn-not-loaded",
    ),
    (
        f"{TF}/v1.4.0/tensorflow/stream_executor/dso_loader.cc",
        "successfully opened CUDA library {name} locally",
        P1
        + "I tensorflow/stream_executor/dso_loader.cc:135] successfully opened CUDA library libcublas.so.8.0 locally",
        "quiet",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cudart_stub.cc",
        "Ignore above cudart dlerror if you do not have a GPU set up on your machine.",
        P1 + f"I {SE}/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.",
        "cudart-stub-ignore-hint",
    ),
    (
        f"{TF}/v2.13.0/tensorflow/tsl/cuda/cudart_stub.cc",
        "Could not find cuda drivers on your machine, GPU will not be used.",
        P2
        + "I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.",
        "no-cuda-drivers",
    ),
    # cuda_dnn.cc
    (
        f"{TF}/v2.8.0/{SE}/cuda_dnn.cc",
        "Could not create cudnn handle: {status}",
        P1 + f"E {SE}/cuda_dnn.cc:374] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
        "cudnn-handle-failed",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_dnn.cc",
        "Possibly insufficient driver version: {version}",
        P1 + f"E {SE}/cuda_dnn.cc:382] Possibly insufficient driver version: 470.82.1",
        "cudnn-driver-version-hint",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_dnn.cc",
        "Loaded runtime CuDNN library: {loaded} but source was compiled with: {compiled}. ...",
        P1
        + f"E {SE}/cuda_dnn.cc:366] Loaded runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, make sure the library loaded at runtime is compatible with the version specified during compile configuration.",
        "cudnn-version-mismatch",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_dnn.cc",
        "Loaded cuDNN version {n}",
        P1 + f"I {SE}/cuda_dnn.cc:384] Loaded cuDNN version 8101",
        "cudnn-loaded-notice",
    ),
    (
        f"{TF}/v1.4.0/{SE}/cuda_dnn.cc",
        "Unable to load cuDNN DSO",
        P1 + f"I {SE}/cuda_dnn.cc:3517] Unable to load cuDNN DSO",
        "cudnn-dso-not-loaded",
    ),
    (
        f"{TF}/v2.15.0/third_party/xla/xla/stream_executor/cuda/cuda_dnn.cc",
        "Unable to register cuDNN factory: {status}",
        P2
        + "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
        "factory-registered-twice",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_dnn.cc",
        "Check failed: status == CUDNN_STATUS_SUCCESS ({a} vs. 0)Failed to set cuDNN stream.",
        P1
        + f"F {SE}/cuda_dnn.cc:190] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.",
        "cudnn-status",
    ),
    # cuda_blas.cc and cuda_fft.cc
    (
        f"{TF}/v2.8.0/{SE}/cuda_blas.cc",
        "failed to create cublas handle: {status}",
        P1 + f"E {SE}/cuda_blas.cc:226] failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED",
        "cublas-handle-failed",
    ),
    (
        f"{TF}/v2.15.0/third_party/xla/xla/stream_executor/cuda/cuda_blas.cc",
        "Unable to register cuBLAS factory: {status}",
        P2
        + "E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:1515] Unable to register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered",
        "factory-registered-twice",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_fft.cc",
        "failed to create cuFFT batched plan:{status}",
        P1 + f"E {SE}/cuda_fft.cc:253] failed to create cuFFT batched plan:CUFFT_INTERNAL_ERROR",
        "cufft-plan-failed",
    ),
    (
        f"{TF}/v2.8.0/{SE}/cuda_fft.cc",
        "failed to run cuFFT routine {routine}: {status}",
        P1 + f"E {SE}/cuda_fft.cc:436] failed to run cuFFT routine cufftExecR2C: CUFFT_EXEC_FAILED",
        "cuda-math-library-status",
    ),
    # cpu_feature_guard.cc
    (
        f"{TF}/v1.15.0/tensorflow/core/platform/cpu_feature_guard.cc",
        "The TensorFlow library was compiled to use {feature} instructions, but these aren't available on your machine.",
        P1
        + "F tensorflow/core/platform/cpu_feature_guard.cc:35] The TensorFlow library was compiled to use AVX instructions, but these aren't available on your machine.",
        "tf-cpu-feature-missing",
    ),
    (
        f"{TF}/v2.3.0/tensorflow/core/platform/cpu_feature_guard.cc",
        "Your CPU supports instructions that this TensorFlow binary was not compiled to use: {features}",
        P1
        + "I tensorflow/core/platform/cpu_feature_guard.cc:142] Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA",
        "cpu-instructions-not-used",
    ),
    (
        f"{TF}/v2.13.0/tensorflow/core/platform/cpu_feature_guard.cc",
        "This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.",
        P2
        + "I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.",
        "cpu-optimized-notice",
    ),
    # kernels: the first convolution or matmul on the GPU
    (
        f"{TF}/v2.4.0/tensorflow/core/kernels/conv_ops.cc",
        "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, ...",
        "UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed above. [Op:Conv2D]",
        "conv-algorithm-failed",
    ),
    (
        f"{TF}/v2.8.0/tensorflow/core/kernels/conv_ops_gpu.cc",
        "No algorithm worked!",
        "NotFoundError: No algorithm worked! [Op:Conv2D]",
        "no-algorithm-worked",
    ),
    (
        f"{TF}/v2.8.0/tensorflow/core/kernels/conv_ops.cc",
        "DNN library is not found.",
        "UnimplementedError: DNN library is not found. [Op:Conv2D]",
        "dnn-library-not-found",
    ),
    (
        "https://github.com/openxla/xla/blob/main/xla/service/gpu/autotuning/conv_algorithm_picker.cc",
        "No DNN in stream executor.",
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: No DNN in stream executor. [Op:Conv2D]",
        "dnn-library-not-found",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/core/kernels/conv_ops.cc",
        "cuDNN launch failure : input shape({s}) filter shape({f})",
        "InternalError: cuDNN launch failure : input shape([1,3,224,224]) filter shape([7,7,3,64]) [Op:Conv2D]",
        "cudnn-launch-failure",
    ),
    (
        f"{TF}/v2.4.0/tensorflow/core/kernels/matmul_op.cc",
        "Blas GEMM launch failed : a.shape={a}, b.shape={b}, m={m}, n={n}, k={k}",
        "InternalError: Blas GEMM launch failed : a.shape=(64, 2), b.shape=(2, 128), m=64, n=128, k=2",
        "blas-launch-failed",
    ),
    (
        f"{TF}/v2.8.0/tensorflow/core/kernels/matmul_op_impl.h",
        "Attempting to perform BLAS operation using StreamExecutor without BLAS support",
        "InternalError: Attempting to perform BLAS operation using StreamExecutor without BLAS support [Op:MatMul]",
        "blas-without-blas-support",
    ),
    (
        f"{TF}/v2.8.0/tensorflow/core/framework/op_kernel.cc",
        "OP_REQUIRES failed at {file}:{line} : {status}",
        P1
        + "W tensorflow/core/framework/op_kernel.cc:1767] OP_REQUIRES failed at conv_ops.cc:1115 : Resource exhausted: OOM when allocating tensor with shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        "oom-allocating-tensor",
    ),
    # start-up notices of other parts of the GPU build
    (
        f"{TF}/v2.13.0/tensorflow/compiler/tf2tensorrt/utils/py_utils.cc",
        "TF-TRT Warning: Could not find TensorRT",
        P2 + "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT",
        "tensorrt-not-found",
    ),
    (
        f"{TF}/v2.13.0/tensorflow/core/util/port.cc",
        "oneDNN custom operations are on. ...",
        P2
        + "I tensorflow/core/util/port.cc:110] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
        "onednn-notice",
    ),
]


def _explained(line: str):
    return explain(CATALOGUE.scan_text(line))


@pytest.mark.parametrize(
    ("source", "fmt", "line", "expected"), SWEEP, ids=[f"{i}-{row[3]}" for i, row in enumerate(SWEEP)]
)
def test_runtime_message(source: str, fmt: str, line: str, expected: str) -> None:
    found = _explained(line)
    if expected == "quiet":
        assert not [e.id for e in found if not e.harmless], (fmt, [e.id for e in found])
    elif expected == "harmless":
        assert found and all(e.harmless for e in found), (fmt, [(e.id, e.harmless) for e in found])
    else:
        ids = [e.id for e in found]
        assert expected in ids, (fmt, ids)


def test_sweep_rows_name_a_release_source() -> None:
    for source, fmt, line, _ in SWEEP:
        assert source.startswith("https://github.com/"), source
        assert "/blob/" in source, source
        assert fmt and line


# The parts the new patterns read from their messages
PARTS = [
    (
        P1
        + "W tensorflow/core/common_runtime/bfc_allocator.cc:457] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)requested by op Conv2D",
        "bfc-allocator-out-of-memory",
        {"allocator": "GPU_0_bfc", "size": "2.00GiB", "rounded": "2147483648", "op": "Conv2D"},
    ),
    (
        P1
        + f"I {GPU}/gpu_device.cc:1688] Ignoring visible gpu device (device: 1, name: GeForce GT 1030, pci bus id: 0000:04:00.0, compute capability: 6.1) with core count: 3. The minimum required count is 8. You can adjust this requirement with the env var TF_MIN_GPU_MULTIPROCESSOR_COUNT.",
        "gpu-core-count-ignored",
        {"count": "3", "min_count": "8"},
    ),
    (
        P1 + f"F {GPU}/gpu_util.cc:291] GPU->CPU Memcpy failed",
        "gpu-stream-failed-fatal",
        {"what": "GPU->CPU Memcpy failed"},
    ),
]


@pytest.mark.parametrize(("line", "pattern_id", "parts"), PARTS)
def test_parts_read(line: str, pattern_id: str, parts: dict[str, str]) -> None:
    found = {e.id: e for e in _explained(line)}
    assert pattern_id in found, sorted(found)
    for name, value in parts.items():
        assert found[pattern_id].variables.get(name) == value, (name, found[pattern_id].variables)


def test_stream_failure_gives_way_to_the_cuda_error_before_it() -> None:
    log = (
        P1
        + f"E {SE}/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\n"
        + P1
        + f"F {GPU}/gpu_util.cc:291] GPU->CPU Memcpy failed\n"
    )
    ids = [e.id for e in _explained(log)]
    assert "cuda-illegal-address" in ids
    assert "gpu-stream-failed-fatal" not in ids


def test_fragmentation_fix_is_the_shell_of_the_log() -> None:
    line = "W0000 00:00:1755011248.049012     142 bfc_allocator.cc:501] Allocator (GPU_0_bfc) ran out of memory trying to allocate 512.00MiB (rounded to 536870912)requested by op MatMul"
    found = {e.id: e for e in _explained(line)}
    causes = [c.id for c in found["bfc-allocator-out-of-memory"].causes]
    assert causes[:3] == ["batch-too-large", "other-process-holds-gpu", "gpu-memory-fragmented"]
