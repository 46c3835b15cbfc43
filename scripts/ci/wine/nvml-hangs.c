/* A stand-in for a wedged driver's nvml.dll, for scripts/ci/windows.sh only: nvmlInit_v2 never
 * returns. Put beside cudoctor.exe (the loader's first directory), it must leave the check's
 * report intact: the driver probe runs in a child that is killed at --timeout. */
#include <windows.h>

__declspec(dllexport) int nvmlInit_v2(void) {
  Sleep(INFINITE);
  return 0;
}

__declspec(dllexport) int nvmlShutdown(void) { return 0; }
