// An executable (not a shared library) with device code.
#include <cstdio>

__global__ void fill(int *out, int v) { out[threadIdx.x] = v; }

int main() {
    std::printf("%p\n", reinterpret_cast<void *>(fill));
    return 0;
}
