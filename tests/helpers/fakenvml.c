/* A stand-in for the NVIDIA driver's libnvidia-ml, for machines without a GPU: the documented C
 * entry points that Accel Studio's NVML loader resolves, answering for two GPUs with fixed values.
 * The hardware probe and the monitor's sampler both read through that one loader; the tests load
 * this library in its place to check what each reads. */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fakeDevice *nvmlDevice_t;
struct fakeDevice {
    unsigned index;
};
static struct fakeDevice devices[2] = {{0}, {1}};
static int initialised = 0;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

enum { SUCCESS = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7 };
#define GIB (1024ULL * 1024ULL * 1024ULL)

nvmlReturn_t nvmlInit_v2(void) { initialised = 1; return SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { initialised = 0; return SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t code) { return code == SUCCESS ? "Success" : "Fake NVML error"; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
    if (!initialised)
        return UNINITIALIZED;
    *count = 2;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device)
{
    if (!initialised)
        return UNINITIALIZED;
    if (index >= 2)
        return INVALID_ARGUMENT;
    *device = &devices[index];
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned length)
{
    return snprintf(name, length, "Fake GPU %u", device->index) < (int)length ? SUCCESS : INSUFFICIENT_SIZE;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    memory->total = 80 * GIB;
    memory->used = (device->index + 1) * GIB;
    memory->free = memory->total - memory->used;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    utilization->gpu = 37 + device->index;
    utilization->memory = 5;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    (void)device;
    *major = 9;
    *minor = 0;
    return SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    return snprintf(version, length, "550.54.15") < (int)length ? SUCCESS : INSUFFICIENT_SIZE;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
    *version = 12040;
    return SUCCESS;
}

/* One process on each GPU, pid 4242, 512 MiB per GPU. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned *count, nvmlProcessInfo_v1_t *infos)
{
    if (*count < 1) {
        *count = 1;
        return INSUFFICIENT_SIZE;
    }
    *count = 1;
    infos[0].pid = 4242;
    infos[0].usedGpuMemory = GIB / 2;
    return SUCCESS;
}
