# What loading NVML and libcuda, as cudoctor's driver probe does, adds to a process's memory.
import ctypes, os
def mem(label):
    d = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "Threads"):
            d[k] = v.strip()
    print(f"{label:40s} {d}")
mem("start")
nvml = ctypes.CDLL("libnvidia-ml.so.1")
mem("nvml loaded")
print("nvmlInit_v2", nvml.nvmlInit_v2())
mem("nvml initialised")
n = ctypes.c_uint(0); nvml.nvmlDeviceGetCount_v2(ctypes.byref(n))
v = ctypes.c_int(0); nvml.nvmlSystemGetCudaDriverVersion(ctypes.byref(v))
mem(f"nvml queried ({n.value} GPUs, CUDA {v.value})")
print("nvmlShutdown", nvml.nvmlShutdown())
mem("nvml shut down")
cuda = ctypes.CDLL("libcuda.so.1")
mem("libcuda loaded")
cuda.cuDriverGetVersion(ctypes.byref(v))
mem(f"cuDriverGetVersion ({v.value})")
