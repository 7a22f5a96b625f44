/*
 * A stand-in for libnvidia-ml.so.1: the NVML entry points nvidia-ml-py calls, answering from
 * environment variables so a test can describe any machine without a GPU.
 *
 * Built by the test suite as libnvidia-ml.so.1 and found through LD_LIBRARY_PATH, so the real
 * pynvml binding and the real probe run unchanged against it.
 *
 * System-wide:
 *   FAKE_NVML_INIT_ERROR     NVML return code of nvmlInitWithFlags (e.g. 9 driver not loaded,
 *                            18 driver/library version mismatch); default 0 (success)
 *   FAKE_NVML_DRIVER_VERSION "550.54.15"
 *   FAKE_NVML_CUDA_VERSION   highest CUDA version the driver supports, as NVML encodes it (12040)
 *   FAKE_NVML_NVML_VERSION   "12.550.54.15"
 *   FAKE_NVML_COUNT_ERROR    return code of nvmlDeviceGetCount_v2
 *   FAKE_NVML_GPU_COUNT      number of GPUs
 * Per GPU i (0-based):
 *   FAKE_NVML_GPU<i>_ERROR   return code of nvmlDeviceGetHandleByIndex_v2 for this GPU
 *   FAKE_NVML_GPU<i>_NAME, _UUID, _SERIAL, _PCI (bus id "00000000:07:00.0"), _PCI_DEVICE_ID (hex)
 *   FAKE_NVML_GPU<i>_CC      compute capability "8.0"
 *   FAKE_NVML_GPU<i>_MEM_TOTAL_MB, _MEM_USED_MB
 *   FAKE_NVML_GPU<i>_MIG     "0" or "1"; unset means the card does not support MIG
 *   FAKE_NVML_GPU<i>_PROCS   "pid:name:used_mb,pid:name:used_mb"
 *   FAKE_NVML_GPU<i>_FAIL    per query failures "memory=15,serial=4" (query names as below)
 * What decides the GPU's speed (each unset knob answers NVML_ERROR_NOT_SUPPORTED):
 *   FAKE_NVML_GPU<i>_PCIE    "current_gen,current_width,max_gen,max_width[,gpu_max_gen]"
 *   FAKE_NVML_GPU<i>_CLOCKS  "sm_mhz,sm_max_mhz,mem_mhz,mem_max_mhz"
 *   FAKE_NVML_GPU<i>_EVENTS  clock event (throttle) reasons, the nvml.h bit mask: "0x60"
 *   FAKE_NVML_GPU<i>_TEMP    "celsius,slowdown_celsius"
 *   FAKE_NVML_GPU<i>_POWER   "usage_mw,enforced_limit_mw,default_limit_mw"
 *   FAKE_NVML_GPU<i>_UTIL    "gpu_pct,memory_pct"
 *   FAKE_NVML_GPU<i>_PERSISTENCE "0"/"1";  FAKE_NVML_GPU<i>_COMPUTE_MODE  nvmlComputeMode_t
 *   FAKE_NVML_GPU<i>_ECC     "enabled,corrected_volatile,uncorrected_volatile,uncorrected_aggregate"
 *   FAKE_NVML_GPU<i>_RETIRED "single_bit_pages,double_bit_pages,pending"
 *   FAKE_NVML_GPU<i>_REMAP   "correctable,uncorrectable,pending,failure"
 *   FAKE_NVML_GPU<i>_NUMA    NUMA node;  FAKE_NVML_GPU<i>_CPUS  CPU affinity as hex words "ffff,0"
 *   FAKE_NVML_GPU<i>_NVLINK  "active,links"
 * Per pair of GPUs a < b:
 *   FAKE_NVML_PAIR_<a>_<b>   "topology_level,p2p_read,p2p_write,p2p_nvlink" (nvml.h's enums)
 * An unset string field answers NVML_ERROR_NOT_SUPPORTED, as real cards do for serials and MIG.
 *
 * Compile-time variants model older drivers through missing symbols, which pynvml reports as
 * NVML_ERROR_FUNCTION_NOT_FOUND exactly as it would with a real old library:
 *   -DOMIT_NEWER_ENTRY_POINTS  no nvmlSystemGetCudaDriverVersion_v2, no ..._ComputeRunningProcesses_v3,
 *                              no nvmlDeviceGetCurrentClocksEventReasons (535), NumaNodeId,
 *                              GpuMaxPcieLinkGeneration or RemappedRows
 *   -DOMIT_INIT_WITH_FLAGS     no nvmlInitWithFlags (a very old driver)
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_UNKNOWN = 999,
};

#define MAX_GPUS 16
#define MAX_PROCS 16

typedef struct fake_device {
    unsigned int index;
} *nvmlDevice_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

static struct fake_device devices[MAX_GPUS];
static int initialised = 0;

/* ---- configuration ---------------------------------------------------------------------- */

static const char *config(const char *key) {
    char name[128];
    snprintf(name, sizeof name, "FAKE_NVML_%s", key);
    return getenv(name);
}

static const char *gpu_config(unsigned int index, const char *key) {
    char name[64];
    snprintf(name, sizeof name, "GPU%u_%s", index, key);
    return config(name);
}

static int config_int(const char *value, int fallback) {
    return value && *value ? atoi(value) : fallback;
}

static unsigned int gpu_count(void) {
    int n = config_int(config("GPU_COUNT"), 0);
    if (n < 0) return 0;
    return n > MAX_GPUS ? MAX_GPUS : (unsigned int)n;
}

/* The return code injected for `query` on GPU `index` through FAKE_NVML_GPU<i>_FAIL, or 0. */
static nvmlReturn_t injected_failure(unsigned int index, const char *query) {
    const char *spec = gpu_config(index, "FAIL");
    size_t len = strlen(query);
    while (spec && *spec) {
        if (strncmp(spec, query, len) == 0 && spec[len] == '=') return atoi(spec + len + 1);
        spec = strchr(spec, ',');
        if (spec) spec++;
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(const char *value, char *out, unsigned int length) {
    if (!value) return NVML_ERROR_NOT_SUPPORTED;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(out, value);
    return NVML_SUCCESS;
}

/* Resolves a handle and applies the usual checks: initialised, valid, no injected failure. */
static nvmlReturn_t check_device(nvmlDevice_t device, const char *query, unsigned int *index) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!device || device < devices || device >= devices + gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
    *index = device->index;
    return injected_failure(*index, query);
}

/* ---- initialisation and errors ---------------------------------------------------------- */

static nvmlReturn_t do_init(void) {
    nvmlReturn_t ret = config_int(config("INIT_ERROR"), NVML_SUCCESS);
    if (ret != NVML_SUCCESS) return ret;
    for (unsigned int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
    initialised++;
    return NVML_SUCCESS;
}

#ifndef OMIT_INIT_WITH_FLAGS
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return do_init();
}
#endif

nvmlReturn_t nvmlInit_v2(void) { return do_init(); }

nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}

/* ---- system queries --------------------------------------------------------------------- */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return copy_string(config("DRIVER_VERSION"), version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return copy_string(config("NVML_VERSION"), version, length);
}

static nvmlReturn_t cuda_driver_version(int *version) {
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    const char *value = config("CUDA_VERSION");
    if (!value) return NVML_ERROR_NOT_SUPPORTED;
    *version = atoi(value);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) { return cuda_driver_version(version); }

#ifndef OMIT_NEWER_ENTRY_POINTS
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return cuda_driver_version(version); }
#endif

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    for (unsigned int g = 0; g < gpu_count(); g++) {
        const char *spec = gpu_config(g, "PROCS");
        while (spec && *spec) {
            unsigned int p = (unsigned int)strtoul(spec, NULL, 10);
            const char *colon = strchr(spec, ':');
            const char *end = strchr(spec, ',');
            if (p == pid && colon && (!end || colon < end)) {
                const char *stop = strchr(colon + 1, ':');
                size_t n = stop && (!end || stop < end) ? (size_t)(stop - colon - 1)
                                                        : (end ? (size_t)(end - colon - 1) : strlen(colon + 1));
                if (n + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
                memcpy(name, colon + 1, n);
                name[n] = '\0';
                return NVML_SUCCESS;
            }
            spec = end ? end + 1 : NULL;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* ---- devices ---------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t ret = config_int(config("COUNT_ERROR"), NVML_SUCCESS);
    if (ret != NVML_SUCCESS) return ret;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (index >= gpu_count() || !device) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = config_int(gpu_config(index, "ERROR"), NVML_SUCCESS);
    if (ret != NVML_SUCCESS) return ret;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "name", &i);
    return ret ? ret : copy_string(gpu_config(i, "NAME"), name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "uuid", &i);
    return ret ? ret : copy_string(gpu_config(i, "UUID"), uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "serial", &i);
    return ret ? ret : copy_string(gpu_config(i, "SERIAL"), serial, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "pci_bus_id", &i);
    if (ret) return ret;
    const char *bus_id = gpu_config(i, "PCI");
    if (!bus_id) return NVML_ERROR_NOT_SUPPORTED;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", bus_id);
    sscanf(bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    const char *device_id = gpu_config(i, "PCI_DEVICE_ID");
    pci->pciDeviceId = device_id ? (unsigned int)strtoul(device_id, NULL, 16) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "compute_capability", &i);
    if (ret) return ret;
    const char *cc = gpu_config(i, "CC");
    if (!cc) return NVML_ERROR_NOT_SUPPORTED;
    if (!major || !minor || sscanf(cc, "%d.%d", major, minor) != 2) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "memory", &i);
    if (ret) return ret;
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long mib = 1024ULL * 1024ULL;
    memory->total = (unsigned long long)config_int(gpu_config(i, "MEM_TOTAL_MB"), 0) * mib;
    memory->used = (unsigned long long)config_int(gpu_config(i, "MEM_USED_MB"), 0) * mib;
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "mig_mode", &i);
    if (ret) return ret;
    const char *mig = gpu_config(i, "MIG");
    if (!mig) return NVML_ERROR_NOT_SUPPORTED;
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = (unsigned int)atoi(mig);
    return NVML_SUCCESS;
}

/* Two-call protocol: with infos NULL (or too small) it reports the count and INSUFFICIENT_SIZE. */
static nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "processes", &i);
    if (ret) return ret;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlProcessInfo_t found[MAX_PROCS];
    unsigned int n = 0;
    const char *spec = gpu_config(i, "PROCS");
    while (spec && *spec && n < MAX_PROCS) {
        found[n].pid = (unsigned int)strtoul(spec, NULL, 10);
        const char *end = strchr(spec, ',');
        const char *last = strrchr(spec, ':');
        if (end) {
            last = NULL;
            for (const char *c = spec; c < end; c++)
                if (*c == ':') last = c;
        }
        found[n].usedGpuMemory = last ? strtoull(last + 1, NULL, 10) * 1024ULL * 1024ULL : 0;
        found[n].gpuInstanceId = found[n].computeInstanceId = 0xFFFFFFFFu;
        n++;
        spec = end ? end + 1 : NULL;
    }
    if (n == 0) {
        *count = 0;
        return NVML_SUCCESS;
    }
    if (!infos || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(infos, found, n * sizeof found[0]);
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(device, count, infos);
}

#ifndef OMIT_NEWER_ENTRY_POINTS
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(device, count, infos);
}
#endif

/* ---- what decides a GPU's speed --------------------------------------------------------- */

/* Reads up to `n` comma-separated unsigned numbers (decimal, or hex with 0x) from GPU knob `key`. */
static int gpu_numbers(unsigned int index, const char *key, unsigned long long *out, int n) {
    const char *spec = gpu_config(index, key);
    int found = 0;
    while (spec && *spec && found < n) {
        char *end;
        out[found++] = strtoull(spec, &end, 0);
        spec = strchr(end, ',');
        if (spec) spec++;
    }
    return found;
}

/* One field of a knob: the query's checks, then field `at` of `key`, or NOT_SUPPORTED. */
static nvmlReturn_t gpu_field(nvmlDevice_t device, const char *query, const char *key, int at,
                              unsigned long long *value) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, query, &i);
    if (ret) return ret;
    unsigned long long numbers[8];
    if (gpu_numbers(i, key, numbers, 8) <= at) return NVML_ERROR_NOT_SUPPORTED;
    if (!value) return NVML_ERROR_INVALID_ARGUMENT;
    *value = numbers[at];
    return NVML_SUCCESS;
}

static nvmlReturn_t gpu_uint(nvmlDevice_t device, const char *query, const char *key, int at, unsigned int *out) {
    unsigned long long value;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = gpu_field(device, query, key, at, &value);
    if (ret == NVML_SUCCESS) *out = (unsigned int)value;
    return ret;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie", "PCIE", 0, v); }
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie", "PCIE", 1, v); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie", "PCIE", 2, v); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie", "PCIE", 3, v); }

/* nvmlClockType_t: 0 graphics, 1 SM, 2 memory. */
static nvmlReturn_t clock(nvmlDevice_t d, unsigned int type, int max, unsigned int *v) {
    if (type == 1) return gpu_uint(d, "clocks", "CLOCKS", max ? 1 : 0, v);
    if (type == 2) return gpu_uint(d, "clocks", "CLOCKS", max ? 3 : 2, v);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, unsigned int type, unsigned int *v) { return clock(d, type, 0, v); }
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, unsigned int type, unsigned int *v) { return clock(d, type, 1, v); }

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_field(d, "clock_events", "EVENTS", 0, v);
}

/* Sensor 0 is the GPU; threshold 1 is the slowdown temperature. */
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, unsigned int sensor, unsigned int *v) {
    return sensor == 0 ? gpu_uint(d, "temperature", "TEMP", 0, v) : NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, unsigned int threshold, unsigned int *v) {
    return threshold == 1 ? gpu_uint(d, "temperature", "TEMP", 1, v) : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "power", "POWER", 0, v); }
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "power", "POWER", 1, v); }
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *v) {
    return gpu_uint(d, "power", "POWER", 2, v);
}

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    if (!u) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = gpu_uint(d, "utilization", "UTIL", 0, &u->gpu);
    return ret ? ret : gpu_uint(d, "utilization", "UTIL", 1, &u->memory);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, unsigned int *v) {
    return gpu_uint(d, "persistence_mode", "PERSISTENCE", 0, v);
}
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, unsigned int *v) {
    return gpu_uint(d, "compute_mode", "COMPUTE_MODE", 0, v);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    if (!pending) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = gpu_uint(d, "ecc", "ECC", 0, current);
    if (ret == NVML_SUCCESS) *pending = *current;
    return ret;
}

/* errorType 0 corrected, 1 uncorrected; counterType 0 volatile, 1 aggregate. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, unsigned int type, unsigned int counter, unsigned long long *v) {
    int at = type == 0 ? (counter == 0 ? 1 : -1) : (counter == 0 ? 2 : 3);
    if (at < 0) return NVML_ERROR_NOT_SUPPORTED;
    return gpu_field(d, "ecc", "ECC", at, v);
}

/* Two-call protocol as nvml.h documents it: no buffer (or too small) reports the count. */
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, unsigned int cause, unsigned int *count, unsigned long long *addresses) {
    unsigned long long pages;
    if (!count || cause > 1) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = gpu_field(d, "retired_pages", "RETIRED", (int)cause, &pages);
    if (ret) return ret;
    if (!addresses || *count < pages) {
        *count = (unsigned int)pages;
        return pages ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    for (unsigned long long p = 0; p < pages; p++) addresses[p] = 0x1000ULL * (p + 1);
    *count = (unsigned int)pages;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, unsigned int *v) {
    return gpu_uint(d, "retired_pages", "RETIRED", 2, v);
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int size, unsigned long *cpus) {
    unsigned int i;
    nvmlReturn_t ret = check_device(device, "affinity", &i);
    if (ret) return ret;
    unsigned long long words[16];
    int n = gpu_numbers(i, "CPUS", words, 16);
    if (n == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!cpus || size == 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int w = 0; w < size; w++) cpus[w] = w < (unsigned int)n ? (unsigned long)words[w] : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, unsigned int *active) {
    unsigned long long numbers[2];
    unsigned int i;
    nvmlReturn_t ret = check_device(d, "nvlink", &i);
    if (ret) return ret;
    if (!active) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_numbers(i, "NVLINK", numbers, 2) < 2 || numbers[1] == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= numbers[1]) return NVML_ERROR_INVALID_ARGUMENT;
    *active = link < numbers[0] ? 1 : 0;
    return NVML_SUCCESS;
}

/* The pair's knob, for a < b in either order of the arguments. */
static nvmlReturn_t pair_field(nvmlDevice_t d1, nvmlDevice_t d2, int at, unsigned int *out) {
    unsigned int a, b;
    nvmlReturn_t ret = check_device(d1, "topology", &a);
    if (ret) return ret;
    ret = check_device(d2, "topology", &b);
    if (ret) return ret;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "PAIR_%u_%u", a < b ? a : b, a < b ? b : a);
    const char *spec = config(key);
    for (int k = 0; spec && *spec && k < at; k++) {
        spec = strchr(spec, ',');
        if (spec) spec++;
    }
    if (!spec || !*spec) return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned int)strtoul(spec, NULL, 0);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2, unsigned int *level) {
    return pair_field(d1, d2, 0, level);
}

/* nvmlGpuP2PCapsIndex_t: 0 read, 1 write, 2 NVLink. */
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, unsigned int caps, unsigned int *status) {
    if (caps > 2) return NVML_ERROR_NOT_SUPPORTED;
    return pair_field(d1, d2, 1 + (int)caps, status);
}

#ifndef OMIT_NEWER_ENTRY_POINTS
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_field(d, "clock_events", "EVENTS", 0, v);
}
nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie", "PCIE", 4, v); }
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "numa", "NUMA", 0, v); }
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc, unsigned int *pending,
                                       unsigned int *failure) {
    nvmlReturn_t ret = gpu_uint(d, "remapped_rows", "REMAP", 0, corr);
    if (!ret) ret = gpu_uint(d, "remapped_rows", "REMAP", 1, unc);
    if (!ret) ret = gpu_uint(d, "remapped_rows", "REMAP", 2, pending);
    if (!ret) ret = gpu_uint(d, "remapped_rows", "REMAP", 3, failure);
    return ret;
}
#endif
