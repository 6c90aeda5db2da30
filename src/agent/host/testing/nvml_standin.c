/* A stand-in for NVIDIA's libnvidia-ml.so.1, built by the tests (CMake SHARED library):
 * the few calls agent/host/nvml.h uses, answering what a file says, so the NVML path is
 * tested through dlopen and dlsym as on a GPU machine.
 *
 * The file is named by $TPUFLEET_NVML_STANDIN (no variable: NVML starts and has no GPU).
 * One line per fact, read at nvmlInit_v2:
 *   init CODE                     nvmlInit_v2 returns CODE (9: the driver is not loaded)
 *   gpu UTIL MEMUTIL USED TOTAL MINOR PIDS
 *                                 a GPU: utilization.gpu and .memory (-1: the call says
 *                                 not supported, as on a MIG GPU), memory used and total
 *                                 bytes, its /dev/nvidiaMINOR, its compute processes'
 *                                 pids ("1,2,3", "-" for none)
 *   late N                        the count call leaves out the last N processes of each
 *                                 GPU, as if they started between the two calls
 * Built with -DSTANDIN_WITHOUT_MEMORY_INFO it lacks nvmlDeviceGetMemoryInfo (an NVML
 * missing a call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16
#define MAX_PIDS 64

typedef struct {
  int util, mem_util;
  unsigned long long used, total;
  unsigned int minor;
  unsigned int pids[MAX_PIDS];
  unsigned int npids;
} Gpu;

typedef struct {
  unsigned int gpu, memory;
} Utilization;
typedef struct {
  unsigned long long total, free, used;
} Memory;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} ProcessInfo;

static Gpu gpus[MAX_GPUS];
static unsigned int ngpus;
static unsigned int late;
static int initialised;

static void load(int* init_code) {
  const char* path = getenv("TPUFLEET_NVML_STANDIN");
  char line[1024];
  FILE* f;
  ngpus = 0;
  late = 0;
  *init_code = 0;
  if (path == NULL || (f = fopen(path, "r")) == NULL) {
    return;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    Gpu g;
    char pids[800];
    memset(&g, 0, sizeof g);
    if (sscanf(line, "init %d", init_code) == 1 || sscanf(line, "late %u", &late) == 1) {
      continue;
    }
    if (ngpus < MAX_GPUS && sscanf(line, "gpu %d %d %llu %llu %u %799s", &g.util, &g.mem_util,
                                   &g.used, &g.total, &g.minor, pids) == 6) {
      char* save = NULL;
      char* tok;
      for (tok = strtok_r(pids, ",", &save); tok != NULL && g.npids < MAX_PIDS;
           tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "-") != 0) {
          g.pids[g.npids++] = (unsigned int)strtoul(tok, NULL, 10);
        }
      }
      gpus[ngpus++] = g;
    }
  }
  fclose(f);
}

static Gpu* device(void* handle) {
  Gpu* g = (Gpu*)handle;
  return initialised && g >= gpus && g < gpus + ngpus ? g : NULL;
}

int nvmlInit_v2(void) {
  int code;
  load(&code);
  initialised = code == 0;
  return code;
}

int nvmlShutdown(void) {
  if (!initialised) {
    return 1; /* NVML_ERROR_UNINITIALIZED */
  }
  initialised = 0;
  return 0;
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialised) {
    return 1;
  }
  *count = ngpus;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** handle) {
  if (!initialised) {
    return 1;
  }
  if (index >= ngpus) {
    return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  }
  *handle = &gpus[index];
  return 0;
}

int nvmlDeviceGetMinorNumber(void* handle, unsigned int* minor) {
  Gpu* g = device(handle);
  if (g == NULL) {
    return 2;
  }
  *minor = g->minor;
  return 0;
}

int nvmlDeviceGetUtilizationRates(void* handle, Utilization* u) {
  Gpu* g = device(handle);
  if (g == NULL) {
    return 2;
  }
  if (g->util < 0) {
    return 3; /* NVML_ERROR_NOT_SUPPORTED */
  }
  u->gpu = (unsigned int)g->util;
  u->memory = (unsigned int)g->mem_util;
  return 0;
}

#ifndef STANDIN_WITHOUT_MEMORY_INFO
int nvmlDeviceGetMemoryInfo(void* handle, Memory* m) {
  Gpu* g = device(handle);
  if (g == NULL) {
    return 2;
  }
  m->total = g->total;
  m->used = g->used;
  m->free = g->total - g->used;
  return 0;
}
#endif

/* As NVML: with too small a count, INSUFFICIENT_SIZE and the count needed. */
int nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count,
                                            ProcessInfo* infos) {
  Gpu* g = device(handle);
  unsigned int i;
  if (g == NULL || count == NULL) {
    return 2;
  }
  if (*count < g->npids) {
    *count = infos == NULL && g->npids > late ? g->npids - late : g->npids;
    return *count == 0 ? 0 : 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  for (i = 0; i < g->npids; ++i) {
    infos[i].pid = g->pids[i];
    infos[i].usedGpuMemory = 1ULL << 30;
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = g->npids;
  return 0;
}
