"""Times each NVML question the health layer asks, on GPU 0 (ctypes, libnvidia-ml.so.1):
which ones cost milliseconds on this driver. Prints one line per call: name, rc, ms."""
import ctypes, time
n = ctypes.CDLL("libnvidia-ml.so.1")
t = time.perf_counter(); rc = n.nvmlInit_v2(); print(f"nvmlInit_v2 rc {rc} {1000*(time.perf_counter()-t):.2f} ms")
dev = ctypes.c_void_p()
n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev))
buf = (ctypes.c_ubyte * 256)()
u = ctypes.c_uint(); u2 = ctypes.c_uint(); ull = ctypes.c_ulonglong()
calls = [
    ("nvmlDeviceGetPersistenceMode", (dev, ctypes.byref(u))),
    ("nvmlDeviceGetEccMode", (dev, ctypes.byref(u), ctypes.byref(u2))),
    ("nvmlDeviceGetTotalEccErrors", (dev, 1, 0, ctypes.byref(ull))),
    ("nvmlDeviceGetTotalEccErrors", (dev, 1, 1, ctypes.byref(ull))),
    ("nvmlDeviceGetRetiredPagesPendingStatus", (dev, ctypes.byref(u))),
    ("nvmlDeviceGetRemappedRows", (dev, ctypes.byref(u), ctypes.byref(u2), ctypes.byref(u), ctypes.byref(u2))),
    ("nvmlDeviceGetCurrentClocksEventReasons", (dev, ctypes.byref(ull))),
    ("nvmlDeviceGetUtilizationRates", (dev, ctypes.byref(buf))),
    ("nvmlDeviceGetPerformanceState", (dev, ctypes.byref(u))),
    ("nvmlDeviceGetCurrPcieLinkGeneration", (dev, ctypes.byref(u))),
    ("nvmlDeviceGetMaxPcieLinkWidth", (dev, ctypes.byref(u))),
    ("nvmlDeviceValidateInforom", (dev,)),
    ("nvmlDeviceGetMigMode", (dev, ctypes.byref(u), ctypes.byref(u2))),
    ("nvmlDeviceGetNvLinkState", (dev, 0, ctypes.byref(u))),
    ("nvmlDeviceGetNvLinkErrorCounter", (dev, 0, 0, ctypes.byref(ull))),
    ("nvmlDeviceGetComputeRunningProcesses_v3", (dev, ctypes.byref(u), None)),
]
for name, args in calls:
    f = getattr(n, name, None)
    if f is None:
        print(f"{name} missing"); continue
    t = time.perf_counter(); rc = f(*args); dt = 1000 * (time.perf_counter() - t)
    print(f"{name} rc {rc} {dt:.2f} ms")
