// Two small kernels for the fat binary tests; what they compute does not matter.
__global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

extern "C" void launch_axpy(float a, const float *x, float *y, int n) {
    axpy<<<(n + 255) / 256, 256>>>(a, x, y, n);
}

extern "C" void launch_scale(float *x, float s, int n) {
    scale<<<(n + 255) / 256, 256>>>(x, s, n);
}
