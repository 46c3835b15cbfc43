/* A stand-in for a broken driver install's nvcuda.dll, for scripts/ci/windows.sh only:
 * cuDriverGetVersion writes through a null pointer. libcuda is asked first, so the probe's child
 * dies before any answer: that must read as a crash, not as a child that could not start (which
 * would ask again in cudoctor's own process and crash it). */
#include <windows.h>

__declspec(dllexport) int cuDriverGetVersion(int *version) {
  volatile int *nowhere = (volatile int *)0;
  *nowhere = 1;
  *version = 0;
  return 0;
}
