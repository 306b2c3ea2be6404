/* A GPU workload without the CUDA toolkit, for tests/gpu/real_gpu_check.sh:
 * the CUDA driver API through dlopen("libcuda.so.1") and a PTX kernel the
 * driver compiles. It holds --mem MiB on --device and, with --busy, keeps
 * every SM spinning on FMAs for --seconds (or just holds the memory, idle).
 * Prints "ready PID" once the memory is held. Exit status 0, or 2 with a
 * message when CUDA is not there. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;

/* One thread: n dependent FMAs, then one store (so nothing is optimised away). */
static const char ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry spin(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .pred %p;\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.f32 %f1, 0f3F800000;\n"
    "  mov.f32 %f2, 0f3F7FBE77;\n"
    "  mov.u32 %r2, 0;\n"
    "LOOP:\n"
    "  fma.rn.f32 %f1, %f1, %f2, 0f3A83126F;\n"
    "  add.u32 %r2, %r2, 1;\n"
    "  setp.lt.u32 %p, %r2, %r1;\n"
    "  @%p bra LOOP;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r3, 4;\n"
    "  add.s64 %rd2, %rd2, %rd3;\n"
    "  st.global.f32 [%rd2], %f1;\n"
    "  ret;\n"
    "}\n";

struct cuda {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
    CUresult (*module_load)(CUmodule *, const void *);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*memset)(CUdeviceptr, unsigned char, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                       void **, void **);
    CUresult (*sync)(void);
};

static void *need(void *so, const char *name)
{
    void *p = dlsym(so, name);
    if (!p) {
        fprintf(stderr, "cuda_burn: libcuda.so.1 lacks %s\n", name);
        exit(2);
    }
    return p;
}

static void check(CUresult r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "cuda_burn: %s failed: CUDA error %d\n", what, r);
        exit(2);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t mib = 256;
    double seconds = 10;
    int device = 0, busy = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc)
            mib = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--busy"))
            busy = 1;
        else {
            fprintf(stderr, "usage: cuda_burn [--mem MIB] [--seconds S] [--device N] [--busy]\n");
            return 2;
        }
    }
    void *so = dlopen("libcuda.so.1", RTLD_NOW);
    if (!so) {
        fprintf(stderr, "cuda_burn: %s\n", dlerror());
        return 2;
    }
    struct cuda c;
    *(void **)&c.init = need(so, "cuInit");
    *(void **)&c.device_get = need(so, "cuDeviceGet");
    *(void **)&c.ctx_create = need(so, "cuCtxCreate_v2");
    *(void **)&c.module_load = need(so, "cuModuleLoadData");
    *(void **)&c.get_function = need(so, "cuModuleGetFunction");
    *(void **)&c.mem_alloc = need(so, "cuMemAlloc_v2");
    *(void **)&c.memset = need(so, "cuMemsetD8_v2");
    *(void **)&c.launch = need(so, "cuLaunchKernel");
    *(void **)&c.sync = need(so, "cuCtxSynchronize");
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr buf;
    check(c.init(0), "cuInit");
    check(c.device_get(&dev, device), "cuDeviceGet");
    check(c.ctx_create(&ctx, 0, dev), "cuCtxCreate");
    check(c.module_load(&mod, ptx), "cuModuleLoadData (the PTX)");
    check(c.get_function(&fn, mod, "spin"), "cuModuleGetFunction");
    check(c.mem_alloc(&buf, mib << 20), "cuMemAlloc");
    check(c.memset(buf, 0, mib << 20), "cuMemsetD8"); /* the memory is really held */
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    double end = now() + seconds;
    unsigned n = 1u << 16;
    void *params[] = {&buf, &n};
    while (now() < end) {
        if (!busy) {
            usleep(100000);
            continue;
        }
        /* Enough blocks for every SM of the largest cards, a few ms each. */
        check(c.launch(fn, 4096, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
        check(c.sync(), "cuCtxSynchronize");
    }
    return 0;
}
