/* A stand-in for a broken driver install's nvml.dll, for scripts/ci/windows.sh only:
 * nvmlInit_v2 writes through a null pointer. Beside cudoctor.exe it must cost the check one
 * answer, not its report: the driver probe's child crashes, not cudoctor. */
#include <windows.h>

__declspec(dllexport) int nvmlInit_v2(void) {
  volatile int *nowhere = (volatile int *)0;
  *nowhere = 1;
  return 0;
}

__declspec(dllexport) int nvmlShutdown(void) { return 0; }
