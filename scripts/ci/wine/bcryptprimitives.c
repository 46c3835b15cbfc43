/* Wine 8.0 (Debian 12's) has no bcryptprimitives.dll, which every Rust program built for
 * Windows since Rust 1.78 imports for ProcessPrng (Windows 10 and later ship it). This stand-in
 * exists only for running the Windows binary under Wine in CI: it exports ProcessPrng on top of
 * advapi32's RtlGenRandom (SystemFunction036), which Wine has. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
