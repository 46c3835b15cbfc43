//! Reading a line as clauses: a *subject* of the CUDA stack (the driver, a CUDA library, the
//! compiler, a framework, a GPU architecture, NCCL, a container runtime...) and a *failure* said
//! of it (not found, cannot load, too old, mismatch, unsupported, CPU-only, undefined symbol,
//! hang, denied, out of memory...). The category follows from the pair through one table
//! ([`category_of`]), so a message never seen before, from a framework never seen before, lands
//! in its family as long as it speaks of a known subject and a known failure.
//!
//! The lexicon is words, not messages: English and Chinese, matched case-insensitively in one
//! Aho-Corasick pass over the line, short words only at word boundaries. Hand-typed text
//! (short inputs) is first corrected for typos of the domain's words ([`correct_typos`]).
//! Signatures stay the precise layer (their own fields and fixes); clauses answer where no
//! signature names a cause, and a clause on a fatal line outranks a signature warning.

use crate::category::Category;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::OnceLock;

/// What a clause speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// A hardware event: an Xid, the GPU off the bus, ECC.
    Hardware,
    Nccl,
    /// Docker, Kubernetes, CDI, the NVIDIA container runtime, WSL's passthrough.
    Container,
    /// A Windows DLL.
    WindowsDll,
    /// torchvision, torchaudio, xformers: packages built for one torch.
    Companion,
    /// nvcc, ptxas, nvlink, CUDA_HOME, the CUDA toolkit, its headers.
    Toolkit,
    /// gcc, MSVC, clang as nvcc's host compiler.
    HostCompiler,
    /// A GPU architecture, compute capability, kernel image.
    GpuArch,
    /// Fused attention kernels.
    Attention,
    /// The NVIDIA driver.
    Driver,
    /// libcuda, NVML: the driver's user-space libraries.
    DriverLibrary,
    /// The kernel module (NVRM, DKMS, nouveau, signing).
    KernelModule,
    /// A CUDA library: cudart, cuBLAS, cuDNN, NVRTC...
    CudaLibrary,
    /// A framework that uses CUDA (torch, TensorFlow, JAX, CuPy, Paddle, ONNX Runtime...).
    Framework,
    /// CUDA or the GPU in general.
    Gpu,
    /// GPU memory.
    Memory,
    /// Where the program put its values: the devices of its tensors and arrays
    /// ([`crate::placement`]).
    Placement,
    /// Which GPUs the program selects for itself (CUDA_VISIBLE_DEVICES set in its code).
    Selection,
    /// A shared library outside the CUDA stack (the system's libGL, libsndfile, OpenMP), named
    /// where the loader's words alone would make it a CUDA library
    /// ([`crate::libraries::of_the_stack`]).
    OtherLibrary,
}

/// What a clause says went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    OutOfMemory,
    /// A hardware fault (Xid, fallen off the bus, uncorrectable ECC).
    Fault,
    NotCompiled,
    UndefinedSymbol,
    CannotLoad,
    NotFound,
    TooOld,
    Mismatch,
    Unsupported,
    Timeout,
    Hang,
    Denied,
    NotAvailable,
    /// The machine's GPU is not NVIDIA's (an integrated Intel GPU, an AMD Radeon): no CUDA
    /// driver can serve it, whatever the message about the driver says.
    NotNvidia,
    /// A program's own statement of the GPU it needs, made when it found none ("This program
    /// needs a CUDA-Enabled GPU"): the machine shows it no such GPU. Unlike a framework's bare
    /// "not available", the program checked for the device itself, so its build is not the
    /// suspect.
    Required,
    /// Values one operation was given are on different devices ([`crate::placement`]).
    Misplaced,
    /// A setting the program made does not take effect ("os.environ['CUDA_VISIBLE_DEVICES']
    /// has no effect").
    Ignored,
    /// A generic failure word ("failed", "error").
    Failed,
}

#[derive(Debug, Clone, Copy)]
enum Word {
    Subject(Subject),
    Failure(Failure),
    /// A phrase in which a failure word says something else: "size mismatch" and "shape
    /// mismatch" are a program's tensors disagreeing, not two versions. A failure word found
    /// only inside such phrases is not read.
    Cancel(Failure),
    /// A phrase in which a subject word names something else: nvcc's banner "Cuda compiler
    /// driver" is the compiler, not the NVIDIA driver. A subject found only inside such
    /// phrases is not read.
    NotSubject(Subject),
    /// A phrase that says the parts the line names work ("the driver and CUDA are fine",
    /// "显卡驱动没问题"): a generic failure word on the same line ("training errors out") is
    /// said of something else.
    Works,
    /// A shell's refusal to run a command ("bash: X: command not found", "'X' is not
    /// recognized as an internal or external command"): the failure is the command's, named
    /// right before it, and says nothing of the stack unless that command is one of its tools.
    Command,
    /// Python's words for a name a module lacks ("module 'X' has no attribute 'Y'", "cannot
    /// import name 'Y' from 'X'"): read by [`api_gap`] and [`missing_attribute`], which name
    /// whose gap it is; the words alone say nothing.
    ApiGap,
    /// A name of CUDA's error enumerations as a binding spells it (the lexicon's last rows): the
    /// subject and failure it stands for.
    Code(Subject, Failure),
}

/// How serious a line says it is, from its own wording: fatal lines outrank errors, errors
/// outrank plain lines, and warnings come last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Fatal,
    Error,
    Plain,
    Warning,
    /// An informational line of a logger (`NCCL INFO`, `level=INFO`, `I0101 ...`): what a
    /// program reports about itself while working, never a failure to answer with.
    Info,
}

/// A clause read from one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub category: Category,
    pub subject: Subject,
    pub failure: Failure,
    pub severity: Severity,
}

use Failure as F;
use Subject as S;

/// The lexicon: each word, the subject or failure it names, and whether it must stand alone
/// (short words inside longer ones: "oom" in "room", "gcc" in "nvgcc").
const LEXICON: &[(&str, Word, bool)] = &[
    // --- subjects ---
    ("xid", Word::Subject(S::Hardware), true),
    ("fallen off the bus", Word::Subject(S::Hardware), false),
    ("ecc error", Word::Subject(S::Hardware), false),
    ("uncorrectable ecc", Word::Subject(S::Hardware), false),
    ("row remap", Word::Subject(S::Hardware), false),
    ("double bit ecc", Word::Subject(S::Hardware), false),
    ("gpu has fallen", Word::Subject(S::Hardware), false),
    (
        "unable to determine the device handle",
        Word::Subject(S::Hardware),
        false,
    ),
    ("off the bus", Word::Subject(S::Hardware), false),
    // NVIDIA's "GPU is lost" (nvidia-smi, NVML's GPU_IS_LOST): the card dropped out, as
    // "掉卡" says in Chinese.
    ("gpu is lost", Word::Subject(S::Hardware), false),
    ("gpu lost", Word::Subject(S::Hardware), false),
    ("gpu_is_lost", Word::Subject(S::Hardware), false),
    ("掉卡", Word::Subject(S::Hardware), false),
    ("off of the bus", Word::Subject(S::Hardware), false),
    ("out of the bus", Word::Subject(S::Hardware), false),
    // The parts between the GPU and the machine that users name when the card drops out or the
    // machine resets under load, and nvidia-smi's "ERR!" for a field it cannot read.
    ("power supply", Word::Subject(S::Hardware), false),
    ("psu", Word::Subject(S::Hardware), true),
    ("riser", Word::Subject(S::Hardware), true),
    ("risers", Word::Subject(S::Hardware), true),
    ("overclock", Word::Subject(S::Hardware), false),
    ("overheat", Word::Subject(S::Hardware), false),
    ("err!", Word::Subject(S::Hardware), false),
    ("err!", Word::Failure(F::Fault), false),
    // DCGM's health watch of the card's temperature ("Detected clocks event due to thermal
    // violation in GPU 2. Verify that the cooling on this machine is functional").
    ("thermal violation", Word::Subject(S::Hardware), false),
    ("thermal violation", Word::Failure(F::Fault), false),
    ("nccl", Word::Subject(S::Nccl), false),
    ("processgroupnccl", Word::Subject(S::Nccl), false),
    ("collective operation", Word::Subject(S::Nccl), false),
    ("allreduce", Word::Subject(S::Nccl), false),
    ("all_reduce", Word::Subject(S::Nccl), false),
    ("all-reduce", Word::Subject(S::Nccl), false),
    // NCCL's bootstrap finding no network interface to use ("Bootstrap : no socket interface
    // found", NCCL_SOCKET_IFNAME naming none).
    ("no socket interface", Word::Subject(S::Nccl), false),
    ("no socket interface", Word::Failure(F::Failed), false),
    ("docker", Word::Subject(S::Container), false),
    ("container", Word::Subject(S::Container), false),
    ("kubernetes", Word::Subject(S::Container), false),
    ("k8s", Word::Subject(S::Container), true),
    ("kubelet", Word::Subject(S::Container), false),
    ("nvidia.com/gpu", Word::Subject(S::Container), false),
    ("device plugin", Word::Subject(S::Container), false),
    ("device-plugin", Word::Subject(S::Container), false),
    ("cdi", Word::Subject(S::Container), true),
    ("--gpus", Word::Subject(S::Container), false),
    ("--gpu=all", Word::Subject(S::Container), false),
    ("podman", Word::Subject(S::Container), false),
    ("pod", Word::Subject(S::Container), true),
    ("pods", Word::Subject(S::Container), true),
    ("containerd", Word::Subject(S::Container), false),
    ("wsl", Word::Subject(S::Container), true),
    ("wsl2", Word::Subject(S::Container), true),
    ("/usr/lib/wsl", Word::Subject(S::Container), false),
    ("microsoft-standard", Word::Subject(S::Container), false),
    // A shell prompt on a Windows machine's default host name: a WSL distribution.
    ("@desktop-", Word::Subject(S::Container), false),
    ("容器", Word::Subject(S::Container), false),
    // Kubernetes' and the container runtimes' own names: the objects that hand a GPU to a
    // workload (a daemonset's pod, a runtime class, the OCI runtime and its hook).
    ("daemonset", Word::Subject(S::Container), false),
    ("gpu-operator", Word::Subject(S::Container), false),
    ("gpu operator", Word::Subject(S::Container), false),
    ("runtimeclass", Word::Subject(S::Container), false),
    ("oci runtime", Word::Subject(S::Container), false),
    ("runc", Word::Subject(S::Container), true),
    ("default runtime", Word::Subject(S::Container), false),
    ("default-runtime", Word::Subject(S::Container), false),
    ("nvidia-ctk", Word::Subject(S::Container), false),
    ("singularity", Word::Subject(S::Container), true),
    ("apptainer", Word::Subject(S::Container), true),
    ("enroot", Word::Subject(S::Container), true),
    (".dll", Word::Subject(S::WindowsDll), false),
    ("winerror 126", Word::Subject(S::WindowsDll), false),
    ("winerror 127", Word::Subject(S::WindowsDll), false),
    ("winerror 1114", Word::Subject(S::WindowsDll), false),
    ("loadlibrary", Word::Subject(S::WindowsDll), false),
    ("dll load failed", Word::Subject(S::WindowsDll), false),
    // A DLL named as such, and Windows' own words for a DLL it could not load
    // (ERROR_MOD_NOT_FOUND, WinError 126).
    ("dll", Word::Subject(S::WindowsDll), true),
    (
        "specified module could not be found",
        Word::Subject(S::WindowsDll),
        false,
    ),
    ("torchvision", Word::Subject(S::Companion), false),
    ("torchaudio", Word::Subject(S::Companion), false),
    ("torchtext", Word::Subject(S::Companion), false),
    ("xformers", Word::Subject(S::Companion), false),
    ("nvcc", Word::Subject(S::Toolkit), true),
    ("ptxas", Word::Subject(S::Toolkit), false),
    // nvlink the device linker, by its own messages' heads (NVLink the interconnect is not a
    // toolkit: "no NVLink", "NVLink topology").
    ("nvlink error", Word::Subject(S::Toolkit), false),
    ("nvlink fatal", Word::Subject(S::Toolkit), false),
    ("nvlink warning", Word::Subject(S::Toolkit), false),
    ("cuda_home", Word::Subject(S::Toolkit), false),
    ("cuda_path", Word::Subject(S::Toolkit), false),
    // The toolkit's libdevice (nvvm/libdevice/libdevice.10.bc), which XLA and NVRTC-based
    // compilers link into every kernel: not found, the toolkit is not where they look.
    ("libdevice", Word::Subject(S::Toolkit), false),
    // The variables a build reads for cuDNN's root beside the toolkit's (CUDNN_HOME,
    // CUDNN_ROOT_DIR): unset, the build finds no cuDNN to compile against.
    ("cudnn_home", Word::Subject(S::Toolkit), false),
    ("cudnn_root", Word::Subject(S::Toolkit), false),
    ("cuda toolkit", Word::Subject(S::Toolkit), false),
    ("cudatoolkit", Word::Subject(S::Toolkit), false),
    ("cuda-toolkit", Word::Subject(S::Toolkit), false),
    ("cuda compiler", Word::Subject(S::Toolkit), false),
    ("cuda.h", Word::Subject(S::Toolkit), true),
    ("cuda_runtime.h", Word::Subject(S::Toolkit), false),
    ("cuda_runtime_api.h", Word::Subject(S::Toolkit), false),
    ("cuda_fp16.h", Word::Subject(S::Toolkit), false),
    ("cublas_v2.h", Word::Subject(S::Toolkit), false),
    ("cudnn.h", Word::Subject(S::Toolkit), false),
    ("findcuda", Word::Subject(S::Toolkit), false),
    ("cudatoolkit_root", Word::Subject(S::Toolkit), false),
    // CMake's CUDA compiler detection ("Couldn't find CUDA library root") and a makefile's
    // variable for the toolkit ("CUDA variable is not defined").
    ("cuda library root", Word::Subject(S::Toolkit), false),
    ("cuda variable", Word::Subject(S::Toolkit), false),
    // CMake's FindCUDA variables and Visual Studio's CUDA toolset.
    ("cuda_toolkit_root", Word::Subject(S::Toolkit), false),
    // torch's cpp_extension calls the toolkit that builds an extension "the detected CUDA
    // version"; a build says what it is being compiled with.
    ("detected cuda version", Word::Subject(S::Toolkit), false),
    ("being compiled with", Word::Subject(S::Toolkit), false),
    // The CUDA installed on the system beside a framework's own: the toolkit that builds
    // extensions ("PyTorch CUDA version and system CUDA version not match"); torch's
    // cpp_extension asks to "use the same CUDA versions" for the two.
    ("system cuda", Word::Subject(S::Toolkit), false),
    ("same cuda version", Word::Subject(S::Toolkit), false),
    ("cuda_nvcc_executable", Word::Subject(S::Toolkit), false),
    ("cuda toolset", Word::Subject(S::Toolkit), false),
    ("cmake_cuda_compiler", Word::Subject(S::Toolkit), false),
    ("cmake_cuda_architectures", Word::Subject(S::Toolkit), false),
    ("cuda compilation tools", Word::Subject(S::Toolkit), false),
    // The build of a package's CUDA half named by its switch (apex's and its forks'
    // `--cuda_ext`): what fails there is nvcc's compile.
    ("--cuda_ext", Word::Subject(S::Toolkit), false),
    ("nvvm", Word::Subject(S::Toolkit), false),
    ("cmake_cuda", Word::Subject(S::Toolkit), false),
    ("nvrtc: error", Word::Subject(S::Toolkit), false),
    ("unknown cuda arch", Word::Subject(S::Toolkit), false),
    // nvcc's refusal of an architecture it cannot target, quoted without its "nvcc fatal"
    // prefix: the compiler is the subject, not the GPU.
    (
        "unsupported gpu architecture",
        Word::Subject(S::Toolkit),
        false,
    ),
    ("工具包", Word::Subject(S::Toolkit), false),
    (
        "unsupported gnu version",
        Word::Subject(S::HostCompiler),
        false,
    ),
    ("gcc", Word::Subject(S::HostCompiler), true),
    ("g++", Word::Subject(S::HostCompiler), false),
    ("msvc", Word::Subject(S::HostCompiler), true),
    ("visual studio", Word::Subject(S::HostCompiler), false),
    ("host compiler", Word::Subject(S::HostCompiler), false),
    ("host_config.h", Word::Subject(S::HostCompiler), false),
    ("include/c++/", Word::Subject(S::HostCompiler), false),
    // The C++ runtime's symbol-version tags, named only when a library asks for a version the
    // loaded libstdc++ lacks ("version `GLIBCXX_3.4.30' not found").
    ("glibcxx_3", Word::Subject(S::HostCompiler), false),
    ("cxxabi_1", Word::Subject(S::HostCompiler), false),
    (
        "unexpected compiler version",
        Word::Subject(S::HostCompiler),
        false,
    ),
    ("sm_", Word::Subject(S::GpuArch), false),
    // TensorRT's code of an SM it has no kernels for ("Unsupported SM: 0x809", sm_89).
    ("sm: 0x", Word::Subject(S::GpuArch), false),
    // OpenCV's build settings of the architectures it compiles ("Please check CUDA_ARCH_PTX or
    // CUDA_ARCH_BIN").
    ("cuda_arch_bin", Word::Subject(S::GpuArch), false),
    ("cuda_arch_ptx", Word::Subject(S::GpuArch), false),
    ("compute_", Word::Subject(S::GpuArch), false),
    ("compute capability", Word::Subject(S::GpuArch), false),
    ("cuda capability", Word::Subject(S::GpuArch), false),
    ("kernel image", Word::Subject(S::GpuArch), false),
    ("gpu architecture", Word::Subject(S::GpuArch), false),
    ("gpu arch", Word::Subject(S::GpuArch), false),
    // cuDNN's and cuBLAS' status for a GPU their kernels were not built for.
    ("arch_mismatch", Word::Subject(S::GpuArch), false),
    ("cuda arch", Word::Subject(S::GpuArch), false),
    ("invalid device function", Word::Subject(S::GpuArch), false),
    ("torch_cuda_arch_list", Word::Subject(S::GpuArch), false),
    ("gpu-architecture", Word::Subject(S::GpuArch), false),
    ("incompatible device", Word::Subject(S::GpuArch), false),
    // Kokkos' "likely mismatch of architecture" between the build's and the GPU's.
    ("mismatch of architecture", Word::Subject(S::GpuArch), false),
    ("supports this gpu", Word::Subject(S::GpuArch), false),
    ("gpu is too old", Word::Subject(S::GpuArch), false),
    ("unknown cuda arch", Word::Subject(S::GpuArch), false),
    ("算力", Word::Subject(S::GpuArch), false),
    ("flash attention", Word::Subject(S::Attention), false),
    ("flash_attn", Word::Subject(S::Attention), false),
    // The package's name as pip spells it.
    ("flash-attn", Word::Subject(S::Attention), false),
    ("flashattention", Word::Subject(S::Attention), false),
    ("flash-attention", Word::Subject(S::Attention), false),
    (
        "memory efficient kernel",
        Word::Subject(S::Attention),
        false,
    ),
    ("scaled_dot_product", Word::Subject(S::Attention), false),
    ("sdpa", Word::Subject(S::Attention), true),
    ("is_sm8x", Word::Subject(S::Attention), false),
    ("is_sm80", Word::Subject(S::Attention), false),
    ("is_sm90", Word::Subject(S::Attention), false),
    ("driver", Word::Subject(S::Driver), false),
    ("nvidia-smi", Word::Subject(S::Driver), false),
    // CUDA's "system not yet initialized" (error 802, cudaErrorSystemNotReady): on NVSwitch
    // machines the fabric manager, the driver's service that sets the switches up.
    (
        "system not yet initialized",
        Word::Subject(S::Driver),
        false,
    ),
    ("systemnotready", Word::Subject(S::Driver), false),
    ("fabricmanager", Word::Subject(S::Driver), false),
    ("fabric manager", Word::Subject(S::Driver), false),
    ("fabric-manager", Word::Subject(S::Driver), false),
    ("驱动", Word::Subject(S::Driver), false),
    ("libcuda.so", Word::Subject(S::DriverLibrary), false),
    ("libcuda", Word::Subject(S::DriverLibrary), true),
    ("nvcuda.dll", Word::Subject(S::DriverLibrary), false),
    ("nvml", Word::Subject(S::DriverLibrary), false),
    ("libnvidia-ml", Word::Subject(S::DriverLibrary), false),
    ("cuinit", Word::Subject(S::DriverLibrary), false),
    // TensorFlow's name for the driver's user-space library against the kernel module's
    // version ("kernel version X does not match DSO version Y").
    ("dso version", Word::Subject(S::DriverLibrary), false),
    // The driver's JIT linker (cuLinkAddData) runs ptxas on PTX handed to it.
    (
        "ptxas application ptx input",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    ("culinkadddata", Word::Subject(S::DriverLibrary), false),
    // The driver refusing to load a module's code (cudaErrorInvalidKernelImage): PTX or a
    // cubin newer than its JIT and loader accept.
    (
        "kernel image is invalid",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    // The same refusal by its status names, in the runtime's and the driver's spellings.
    (
        "cudaerrorinvalidkernelimage",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    (
        "cudaerrorinvalidkernelimage",
        Word::Failure(F::Unsupported),
        false,
    ),
    (
        "cuda_error_invalid_image",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    (
        "cuda_error_invalid_image",
        Word::Failure(F::Unsupported),
        false,
    ),
    (
        "cudaerrorinvalidsource",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    (
        "cudaerrorinvalidsource",
        Word::Failure(F::Unsupported),
        false,
    ),
    (
        "cuda_error_invalid_source",
        Word::Subject(S::DriverLibrary),
        false,
    ),
    (
        "cuda_error_invalid_source",
        Word::Failure(F::Unsupported),
        false,
    ),
    ("kernel module", Word::Subject(S::KernelModule), false),
    ("nvidia module", Word::Subject(S::KernelModule), false),
    ("lsmod", Word::Subject(S::KernelModule), true),
    ("nvidia.ko", Word::Subject(S::KernelModule), false),
    ("dkms", Word::Subject(S::KernelModule), true),
    ("modprobe", Word::Subject(S::KernelModule), false),
    ("nouveau", Word::Subject(S::KernelModule), false),
    ("secure boot", Word::Subject(S::KernelModule), false),
    ("module verification", Word::Subject(S::KernelModule), false),
    ("nvrm", Word::Subject(S::KernelModule), true),
    ("insmod", Word::Subject(S::KernelModule), false),
    ("内核模块", Word::Subject(S::KernelModule), false),
    ("kernel headers", Word::Subject(S::KernelModule), false),
    ("module build", Word::Subject(S::KernelModule), false),
    // The loader's search path, said of the CUDA libraries ("CUDA missing from
    // LD_LIBRARY_PATH", "had to run ldconfig on /usr/local/cuda/lib64").
    ("ld_library_path", Word::Subject(S::CudaLibrary), false),
    ("ldconfig", Word::Subject(S::CudaLibrary), false),
    ("libcudart", Word::Subject(S::CudaLibrary), false),
    ("libcublas", Word::Subject(S::CudaLibrary), false),
    ("libcudnn", Word::Subject(S::CudaLibrary), false),
    ("libcufft", Word::Subject(S::CudaLibrary), false),
    ("libcurand", Word::Subject(S::CudaLibrary), false),
    ("libcusparse", Word::Subject(S::CudaLibrary), false),
    ("libcusolver", Word::Subject(S::CudaLibrary), false),
    ("libnvrtc", Word::Subject(S::CudaLibrary), false),
    ("libnvjitlink", Word::Subject(S::CudaLibrary), false),
    ("libnccl", Word::Subject(S::CudaLibrary), false),
    ("libnvinfer", Word::Subject(S::CudaLibrary), false),
    ("libcupti", Word::Subject(S::CudaLibrary), false),
    // TensorFlow's name for the CUDA libraries it loads ("Cannot dlopen some GPU libraries").
    ("gpu libraries", Word::Subject(S::CudaLibrary), false),
    // TensorRT's libraries as TensorFlow's TF-TRT looks for them.
    (
        "could not find tensorrt",
        Word::Subject(S::CudaLibrary),
        false,
    ),
    ("libnvtoolsext", Word::Subject(S::CudaLibrary), false),
    ("libcusparselt", Word::Subject(S::CudaLibrary), false),
    ("libcufile", Word::Subject(S::CudaLibrary), false),
    ("stubs/libcuda", Word::Subject(S::CudaLibrary), false),
    // The toolkit's link-time stub of the driver's library, loaded at run time.
    ("stub library", Word::Subject(S::CudaLibrary), false),
    // The same by its status name (CUDA_ERROR_STUB_LIBRARY, cudaErrorStubLibrary).
    ("stub_library", Word::Subject(S::CudaLibrary), false),
    ("stublibrary", Word::Subject(S::CudaLibrary), false),
    ("cuda lib", Word::Subject(S::CudaLibrary), true),
    ("cudnn", Word::Subject(S::CudaLibrary), false),
    ("cublas", Word::Subject(S::CudaLibrary), false),
    ("cufft", Word::Subject(S::CudaLibrary), false),
    ("nvrtc", Word::Subject(S::CudaLibrary), false),
    ("cusparse", Word::Subject(S::CudaLibrary), false),
    ("cusolver", Word::Subject(S::CudaLibrary), false),
    ("cuda runtime", Word::Subject(S::CudaLibrary), false),
    ("cudart", Word::Subject(S::CudaLibrary), false),
    ("dynamic library", Word::Subject(S::CudaLibrary), false),
    // An execution provider's CUDA libraries, as ONNX Runtime names them when the provider
    // cannot be created ("... to ensure all dependencies are met").
    (
        "all dependencies are met",
        Word::Subject(S::CudaLibrary),
        false,
    ),
    (
        "all dependencies are met",
        Word::Failure(F::CannotLoad),
        false,
    ),
    // The dynamic loader's cache: a library it cannot list is a library-path problem.
    ("ld.so.cache", Word::Subject(S::CudaLibrary), false),
    ("shared object", Word::Subject(S::CudaLibrary), false),
    // CUDA's "shared object symbol not found" by its status names: a library the loader found
    // lacks the symbol, so another version of it was loaded.
    (
        "cudaerrorsharedobjectsymbolnotfound",
        Word::Subject(S::CudaLibrary),
        false,
    ),
    (
        "cudaerrorsharedobjectsymbolnotfound",
        Word::Failure(F::CannotLoad),
        false,
    ),
    (
        "cuda_error_shared_object_symbol_not_found",
        Word::Subject(S::CudaLibrary),
        false,
    ),
    (
        "cuda_error_shared_object_symbol_not_found",
        Word::Failure(F::CannotLoad),
        false,
    ),
    // The linker's flag for a CUDA library (`ld: cannot find -lcudart`, `-lcuda`, `-lcublas`).
    ("-lcu", Word::Subject(S::CudaLibrary), false),
    // torch's own CUDA libraries, which an extension built for a CUDA torch links.
    ("libc10_cuda", Word::Subject(S::CudaLibrary), false),
    ("libtorch_cuda", Word::Subject(S::CudaLibrary), false),
    ("-lnvrtc", Word::Subject(S::CudaLibrary), false),
    ("-lnccl", Word::Subject(S::CudaLibrary), false),
    ("-lnvinfer", Word::Subject(S::CudaLibrary), false),
    ("torch", Word::Subject(S::Framework), false),
    ("pytorch", Word::Subject(S::Framework), false),
    ("tensorflow", Word::Subject(S::Framework), false),
    ("jax", Word::Subject(S::Framework), true),
    ("jaxlib", Word::Subject(S::Framework), false),
    ("cupy", Word::Subject(S::Framework), false),
    ("paddle", Word::Subject(S::Framework), false),
    ("onnxruntime", Word::Subject(S::Framework), false),
    ("cudaexecutionprovider", Word::Subject(S::Framework), false),
    ("cpuexecutionprovider", Word::Subject(S::Framework), false),
    ("tensorrt", Word::Subject(S::Framework), false),
    ("vllm", Word::Subject(S::Framework), false),
    ("sglang", Word::Subject(S::Framework), false),
    ("llama", Word::Subject(S::Framework), false),
    ("ctranslate2", Word::Subject(S::Framework), false),
    ("bitsandbytes", Word::Subject(S::Framework), false),
    ("triton", Word::Subject(S::Framework), false),
    ("numba", Word::Subject(S::Framework), false),
    ("mxnet", Word::Subject(S::Framework), false),
    ("mmcv", Word::Subject(S::Framework), false),
    ("faiss", Word::Subject(S::Framework), true),
    ("deepspeed", Word::Subject(S::Framework), false),
    ("ollama", Word::Subject(S::Framework), false),
    ("[trt]", Word::Subject(S::Framework), false),
    ("engine plan", Word::Subject(S::Framework), false),
    // A serialized TensorRT engine: built by one TensorRT version for that version only.
    ("serialized engine", Word::Subject(S::Framework), false),
    ("cuda", Word::Subject(S::Gpu), true),
    ("gpu", Word::Subject(S::Gpu), true),
    ("gpus", Word::Subject(S::Gpu), true),
    ("cuda device", Word::Subject(S::Gpu), false),
    // The CUDA runtime's status names (`cudaSuccess`, `cudaErrorMemoryAllocation`) name CUDA.
    ("cudasuccess", Word::Subject(S::Gpu), false),
    ("cudaerror", Word::Subject(S::Gpu), false),
    ("cuda-capable device", Word::Subject(S::Gpu), false),
    ("显卡", Word::Subject(S::Gpu), false),
    // nvidia-smi's own words when the driver answers but lists no GPU.
    ("no devices were found", Word::Subject(S::Gpu), false),
    ("gpu memory", Word::Subject(S::Memory), false),
    ("device memory", Word::Subject(S::Memory), false),
    ("vram", Word::Subject(S::Memory), true),
    ("allocating tensor", Word::Subject(S::Memory), false),
    ("resourceexhausted", Word::Subject(S::Memory), false),
    ("resource exhausted", Word::Subject(S::Memory), false),
    ("显存", Word::Subject(S::Memory), false),
    // The device allocators' own names: CUDA's (`cudaMalloc failed: out of memory`), the
    // driver API's and RAPIDS' memory manager (`RMM failure ... maximum pool size exceeded`).
    ("cudamalloc", Word::Subject(S::Memory), false),
    ("cumemalloc", Word::Subject(S::Memory), false),
    ("rmm", Word::Subject(S::Memory), true),
    // --- failures ---
    ("out of memory", Word::Failure(F::OutOfMemory), false),
    // The words in another order, as typed by hand ("out of CUDA memory").
    ("out of cuda memory", Word::Failure(F::OutOfMemory), false),
    ("out of gpu memory", Word::Failure(F::OutOfMemory), false),
    ("outofmemoryerror", Word::Failure(F::OutOfMemory), false),
    (
        "cuda_error_out_of_memory",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    ("oom", Word::Failure(F::OutOfMemory), true),
    ("显存不足", Word::Failure(F::OutOfMemory), false),
    // ggml's buffer on a CUDA device that could not be allocated ("unable to allocate CUDA0
    // buffer", "failed to allocate CUDA1 buffer of size ...").
    (
        "unable to allocate cuda",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "failed to allocate cuda",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    // Memory said to be short, in other words ("not enough GPU memory", "gpu内存不足", "显存不够",
    // vLLM's "Free memory on device ... is less than desired GPU memory utilization").
    ("显存不够", Word::Failure(F::OutOfMemory), false),
    ("内存不足", Word::Failure(F::OutOfMemory), false),
    ("内存不够", Word::Failure(F::OutOfMemory), false),
    ("gpu内存", Word::Subject(S::Memory), false),
    ("gpu 内存", Word::Subject(S::Memory), false),
    ("not enough memory", Word::Failure(F::OutOfMemory), false),
    // What is needed said to exceed what is free ("6.30 GiB KV cache is needed, which is
    // larger than the available KV cache memory", "Need: 2.3GB free, Have: 1.1GB free"), an
    // allocator's pool at its cap, an allocation refused in Paddle's words ("Cannot malloc 49
    // MB GPU memory"), and a search for a batch size that every size failed.
    (
        "larger than the available",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "exceeds the available",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "more than the available",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "maximum pool size exceeded",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    ("cannot malloc", Word::Failure(F::OutOfMemory), false),
    (
        "make sure you have enough gpu",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "no executable batch size",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "insufficient space in device",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    (
        "not enough gpu memory",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    ("not enough vram", Word::Failure(F::OutOfMemory), false),
    ("insufficient memory", Word::Failure(F::OutOfMemory), false),
    (
        "insufficient gpu memory",
        Word::Failure(F::OutOfMemory),
        false,
    ),
    ("insufficient vram", Word::Failure(F::OutOfMemory), false),
    (
        "less than desired gpu memory",
        Word::Code(S::Memory, F::OutOfMemory),
        false,
    ),
    // "of" left out, as typed by hand ("why does it out memory?").
    ("out memory", Word::Code(S::Memory, F::OutOfMemory), true),
    ("爆显存", Word::Failure(F::OutOfMemory), false),
    ("显存爆", Word::Failure(F::OutOfMemory), false),
    ("显存溢出", Word::Failure(F::OutOfMemory), false),
    // Overflow and burst said of the memory in either order ("溢出显存", "显存...增加到爆了").
    ("溢出", Word::Failure(F::OutOfMemory), false),
    ("爆了", Word::Failure(F::OutOfMemory), false),
    // XLA's and TensorFlow's status for an allocation that failed.
    ("resource exhausted", Word::Failure(F::OutOfMemory), false),
    ("resourceexhausted", Word::Failure(F::OutOfMemory), false),
    ("fallen off the bus", Word::Failure(F::Fault), false),
    ("off of the bus", Word::Failure(F::Fault), false),
    ("xid", Word::Failure(F::Fault), true),
    ("gpu is lost", Word::Failure(F::Fault), false),
    ("gpu lost", Word::Failure(F::Fault), false),
    ("gpu_is_lost", Word::Failure(F::Fault), false),
    // The card itself said to be broken, in a report's own words ("my GPU is toast", "the
    // card died", "显卡坏了"): said of the card, not of a process or a worker: the
    // card's hardware, failing.
    ("gpu is toast", Word::Failure(F::Fault), false),
    ("gpu is dead", Word::Failure(F::Fault), false),
    ("gpu died", Word::Failure(F::Fault), false),
    ("gpu is dying", Word::Failure(F::Fault), false),
    ("gpu is fried", Word::Failure(F::Fault), false),
    ("card is toast", Word::Failure(F::Fault), false),
    ("card is dead", Word::Failure(F::Fault), false),
    ("card died", Word::Failure(F::Fault), false),
    ("card is dying", Word::Failure(F::Fault), false),
    ("card is fried", Word::Failure(F::Fault), false),
    // The same as a present state or an adjective ("one of the GPUs is failing", "a faulty
    // card", "the defective GPU").
    ("gpu is failing", Word::Failure(F::Fault), false),
    ("gpus is failing", Word::Failure(F::Fault), false),
    ("gpus are failing", Word::Failure(F::Fault), false),
    ("card is failing", Word::Failure(F::Fault), false),
    ("failing gpu", Word::Failure(F::Fault), false),
    ("faulty gpu", Word::Failure(F::Fault), false),
    ("faulty card", Word::Failure(F::Fault), false),
    ("defective gpu", Word::Failure(F::Fault), false),
    ("defective card", Word::Failure(F::Fault), false),
    ("显卡坏了", Word::Failure(F::Fault), false),
    ("gpu is toast", Word::Subject(S::Hardware), false),
    ("gpu is dead", Word::Subject(S::Hardware), false),
    ("gpu died", Word::Subject(S::Hardware), false),
    ("gpu is dying", Word::Subject(S::Hardware), false),
    ("gpu is fried", Word::Subject(S::Hardware), false),
    ("card is toast", Word::Subject(S::Hardware), false),
    ("card is dead", Word::Subject(S::Hardware), false),
    ("card died", Word::Subject(S::Hardware), false),
    ("card is dying", Word::Subject(S::Hardware), false),
    ("card is fried", Word::Subject(S::Hardware), false),
    ("显卡坏了", Word::Subject(S::Hardware), false),
    ("gpu is failing", Word::Subject(S::Hardware), false),
    ("gpus is failing", Word::Subject(S::Hardware), false),
    ("gpus are failing", Word::Subject(S::Hardware), false),
    ("card is failing", Word::Subject(S::Hardware), false),
    ("failing gpu", Word::Subject(S::Hardware), false),
    ("faulty gpu", Word::Subject(S::Hardware), false),
    ("faulty card", Word::Subject(S::Hardware), false),
    ("defective gpu", Word::Subject(S::Hardware), false),
    ("defective card", Word::Subject(S::Hardware), false),
    ("掉卡", Word::Failure(F::Fault), false),
    ("uncorrectable", Word::Failure(F::Fault), false),
    ("ecc error", Word::Failure(F::Fault), false),
    ("remapping failure", Word::Failure(F::Fault), false),
    ("unknown error", Word::Failure(F::Fault), false),
    ("not compiled with", Word::Failure(F::NotCompiled), false),
    ("not built with", Word::Failure(F::NotCompiled), false),
    // OpenCV's refusal of a device its CUDA build holds no code for ("OpenCV was not built to
    // work with the selected device").
    (
        "not built to work with",
        Word::Failure(F::Unsupported),
        false,
    ),
    ("compiled without", Word::Failure(F::NotCompiled), false),
    ("built without", Word::Failure(F::NotCompiled), false),
    // c10's "PyTorch is not linked with support for cuda devices"; Paddle's "PaddlePaddle should
    // compile with GPU" (said of a build that was not).
    (
        "not linked with support for",
        Word::Failure(F::NotCompiled),
        false,
    ),
    (
        "should compile with gpu",
        Word::Failure(F::NotCompiled),
        false,
    ),
    (
        "should compile with cuda",
        Word::Failure(F::NotCompiled),
        false,
    ),
    (
        "not compiled with cuda",
        Word::Failure(F::NotCompiled),
        false,
    ),
    ("cpu-only", Word::Failure(F::NotCompiled), false),
    ("cpu only", Word::Failure(F::NotCompiled), false),
    ("cpu version", Word::Failure(F::NotCompiled), false),
    ("cpu build", Word::Failure(F::NotCompiled), false),
    ("+cpu", Word::Failure(F::NotCompiled), false),
    ("cpu版", Word::Failure(F::NotCompiled), false),
    ("cpu 版", Word::Failure(F::NotCompiled), false),
    ("cpu的版本", Word::Failure(F::NotCompiled), false),
    ("don't compiled with", Word::Failure(F::NotCompiled), false),
    ("wasn't compiled with", Word::Failure(F::NotCompiled), false),
    ("isn't compiled with", Word::Failure(F::NotCompiled), false),
    // A build that leaves something out in other words than "compiled": a prebuilt binary
    // that "doesn't include sm_121" or "does not target" an architecture has no code for it.
    ("doesn't include", Word::Failure(F::NotCompiled), false),
    ("don't include", Word::Failure(F::NotCompiled), false),
    ("does not include", Word::Failure(F::NotCompiled), false),
    ("do not include", Word::Failure(F::NotCompiled), false),
    ("doesn't target", Word::Failure(F::NotCompiled), false),
    ("does not target", Word::Failure(F::NotCompiled), false),
    (
        "cuda-enabled jaxlib is not installed",
        Word::Failure(F::NotCompiled),
        false,
    ),
    // A package's CPU flavour, named as it is installed: the build, not the machine, lacks
    // CUDA (onnxruntime without its CUDA provider, bitsandbytes' CPU library, conda's cpuonly).
    (
        "not in available provider names",
        Word::Failure(F::NotCompiled),
        false,
    ),
    ("tensorflow-cpu", Word::Failure(F::NotCompiled), false),
    ("faiss-cpu", Word::Failure(F::NotCompiled), false),
    ("jax[cpu]", Word::Failure(F::NotCompiled), false),
    ("cpuonly", Word::Failure(F::NotCompiled), true),
    ("libbitsandbytes_cpu", Word::Failure(F::NotCompiled), false),
    ("paddlepaddle==", Word::Failure(F::NotCompiled), false),
    // mmcv's lite flavour ships no compiled ops (`mmcv-full` / mmcv 2's CUDA build does).
    ("mmcv._ext", Word::Failure(F::NotCompiled), false),
    // A package's CUDA part said absent in its own words: apex's ops ("requires cuda
    // extensions", "installed without --cuda_ext"), a quantizer's kernels ("could not import
    // the C++/CUDA dependencies", "kernels are not properly installed", "extension is not
    // installed"), mmcv's lite build ("You should install mmcv-full").
    (
        "requires cuda extensions",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "without --cuda_ext",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "without --cpp_ext",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "c++/cuda dependencies",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "kernels are not properly installed",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "extension is not installed",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "install ``mmcv-full``",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    // The program says it runs on the CPU (it found no GPU it could use).
    ("only cpu", Word::Failure(F::NotCompiled), false),
    ("only use cpu", Word::Failure(F::NotCompiled), false),
    ("use cpu for", Word::Failure(F::NotCompiled), false),
    ("only uses cpu", Word::Failure(F::NotCompiled), false),
    // libtorch's (and its bindings') words for a CPU build: the CUDA half of ATen is absent.
    ("without aten_cuda", Word::Failure(F::NotCompiled), false),
    // The program said to run on the CPU, not the GPU: the GPU unused, a symptom (a build
    // without CUDA, a container not given the GPU), not a cause of its own.
    ("not using the gpu", Word::Failure(F::NotAvailable), false),
    ("not using gpu", Word::Failure(F::NotAvailable), false),
    ("not use the gpu", Word::Failure(F::NotAvailable), false),
    ("doesn't use the gpu", Word::Failure(F::NotAvailable), false),
    ("gpu does nothing", Word::Failure(F::NotAvailable), false),
    ("runs on the cpu", Word::Failure(F::NotAvailable), false),
    ("running on the cpu", Word::Failure(F::NotAvailable), false),
    ("runs on cpu", Word::Failure(F::NotAvailable), false),
    ("running on cpu", Word::Failure(F::NotAvailable), false),
    // The same in Chinese ("the model ran on the CPU").
    ("跑在了cpu上", Word::Failure(F::NotAvailable), false),
    ("跑在cpu上", Word::Failure(F::NotAvailable), false),
    ("在cpu上跑", Word::Failure(F::NotAvailable), false),
    ("在cpu上运行", Word::Failure(F::NotAvailable), false),
    ("falling back to cpu", Word::Failure(F::NotAvailable), false),
    ("只能使用cpu", Word::Failure(F::NotCompiled), false),
    ("只能用cpu", Word::Failure(F::NotCompiled), false),
    ("只用cpu", Word::Failure(F::NotCompiled), false),
    ("用的是cpu", Word::Failure(F::NotCompiled), false),
    // "compiled without CUDA" in Chinese: 编译时未激活cuda, 未编译cuda, 没有编译cuda.
    ("编译时未", Word::Failure(F::NotCompiled), false),
    ("未编译", Word::Failure(F::NotCompiled), false),
    ("没有编译", Word::Failure(F::NotCompiled), false),
    ("使用的是cpu", Word::Failure(F::NotCompiled), false),
    // No GPU build installed ("没有gpu版本", "不是gpu版").
    ("没有gpu版", Word::Failure(F::NotCompiled), false),
    ("不是gpu版", Word::Failure(F::NotCompiled), false),
    ("not the gpu version", Word::Failure(F::NotCompiled), false),
    // A framework asking for its GPU build ("Please use PaddlePaddle with GPU version"): the
    // one installed is not.
    ("with gpu version", Word::Failure(F::NotCompiled), false),
    (
        "install the gpu version",
        Word::Failure(F::NotCompiled),
        false,
    ),
    ("install gpu version", Word::Failure(F::NotCompiled), false),
    ("no such operator", Word::Failure(F::Mismatch), false),
    ("undefined symbol", Word::Failure(F::UndefinedSymbol), false),
    (
        "undefined reference",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    ("symbol not found", Word::Failure(F::UndefinedSymbol), false),
    (
        "procedure entry point",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    (
        "could not be located in the dynamic link library",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    ("winerror 127", Word::Failure(F::UndefinedSymbol), false),
    // Windows' own dialog in Chinese: "无法定位程序输入点 X 于动态链接库 Y.dll 上".
    (
        "无法定位程序输入点",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    ("无法定位输入点", Word::Failure(F::UndefinedSymbol), false),
    // pybind11's type that another compiled module registers, not seen from this one ("(type
    // not registered yet?)"): the two modules were built with different compilers or binding
    // versions, so their type tables do not meet, an ABI mismatch between binaries.
    (
        "type not registered",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    // Windows' words for an unresolved import (WinError 127).
    (
        "specified procedure could not be found",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    (
        "symbol lookup for",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    // The loader's symbol-version check ("symbol X version Y not defined in file
    // libcudart.so.11.0 with link time reference").
    (
        "not defined in file",
        Word::Failure(F::UndefinedSymbol),
        false,
    ),
    (
        "cannot open shared object",
        Word::Failure(F::CannotLoad),
        false,
    ),
    ("could not load", Word::Failure(F::CannotLoad), false),
    ("couldn't load", Word::Failure(F::CannotLoad), false),
    ("cannot load", Word::Failure(F::CannotLoad), false),
    ("can't load", Word::Failure(F::CannotLoad), false),
    ("failed to load", Word::Failure(F::CannotLoad), false),
    // ONNX Runtime's "CUDA_PATH is set but CUDA wasnt able to be loaded".
    (
        "wasnt able to be loaded",
        Word::Failure(F::CannotLoad),
        false,
    ),
    (
        "wasn't able to be loaded",
        Word::Failure(F::CannotLoad),
        false,
    ),
    (
        "was not able to be loaded",
        Word::Failure(F::CannotLoad),
        false,
    ),
    // A tool that could not be started ("Couldn't invoke ptxas --version"): not where it is
    // looked for.
    ("couldn't invoke", Word::Failure(F::NotFound), false),
    ("could not invoke", Word::Failure(F::NotFound), false),
    ("unable to load", Word::Failure(F::CannotLoad), false),
    ("cannot dlopen", Word::Failure(F::CannotLoad), false),
    ("error loading", Word::Failure(F::CannotLoad), false),
    // The dynamic loader's own heading ("error while loading shared libraries: libcudart.so.9.0").
    ("error while loading", Word::Failure(F::CannotLoad), false),
    ("cannot dlopen", Word::Failure(F::CannotLoad), false),
    ("can not open", Word::Failure(F::CannotLoad), false),
    ("can't open", Word::Failure(F::CannotLoad), false),
    ("can not load", Word::Failure(F::CannotLoad), false),
    ("failed to open", Word::Failure(F::CannotLoad), false),
    ("load failed", Word::Failure(F::CannotLoad), false),
    ("not loaded", Word::Failure(F::CannotLoad), false),
    ("dlopen", Word::Failure(F::CannotLoad), false),
    // Paddle's loader: "The third-party dynamic library (cudnn64_7.dll) that Paddle depends
    // on is not configured correctly" (the library could not be loaded from the search path).
    (
        "not configured correctly",
        Word::Failure(F::CannotLoad),
        false,
    ),
    ("winerror 126", Word::Failure(F::CannotLoad), false),
    ("winerror 1114", Word::Failure(F::CannotLoad), false),
    ("failed with error 126", Word::Failure(F::CannotLoad), false),
    ("无法加载", Word::Failure(F::CannotLoad), false),
    ("加载失败", Word::Failure(F::CannotLoad), false),
    ("not found", Word::Failure(F::NotFound), false),
    ("no such file", Word::Failure(F::NotFound), false),
    ("cannot find", Word::Failure(F::NotFound), false),
    ("can't find", Word::Failure(F::NotFound), false),
    ("could not find", Word::Failure(F::NotFound), false),
    // CuPy's "CUDA path could not be detected": the toolkit's root, not found.
    (
        "cuda path could not be detected",
        Word::Subject(S::Toolkit),
        false,
    ),
    (
        "cuda path could not be detected",
        Word::Failure(F::NotFound),
        false,
    ),
    ("couldn't find", Word::Failure(F::NotFound), false),
    ("unable to find", Word::Failure(F::NotFound), false),
    ("failed to find", Word::Failure(F::NotFound), false),
    ("can not find", Word::Failure(F::NotFound), false),
    ("not find", Word::Failure(F::NotFound), false),
    ("could not locate", Word::Failure(F::NotFound), false),
    ("cannot locate", Word::Failure(F::NotFound), false),
    ("unable to locate", Word::Failure(F::NotFound), false),
    ("could be found", Word::Failure(F::NotFound), false),
    ("cannot be found", Word::Failure(F::NotFound), false),
    ("could not be found", Word::Failure(F::NotFound), false),
    ("can't be found", Word::Failure(F::NotFound), false),
    (
        "identification is unknown",
        Word::Failure(F::NotFound),
        false,
    ),
    ("does not exist", Word::Failure(F::NotFound), false),
    ("doesn't exist", Word::Failure(F::NotFound), false),
    ("not installed", Word::Failure(F::NotFound), false),
    ("is missing", Word::Failure(F::NotFound), false),
    ("lack of", Word::Failure(F::NotFound), false),
    ("missing", Word::Failure(F::NotFound), false),
    ("not set", Word::Failure(F::NotFound), false),
    // A variable a build reads, undefined ("CUDA variable is not defined, aborting build", "not
    // defined environment variable:CUDNN_ROOT_DIR"), and a program not on the search path.
    ("variable is not defined", Word::Failure(F::NotFound), false),
    (
        "not defined environment variable",
        Word::Failure(F::NotFound),
        false,
    ),
    ("could not be located", Word::Failure(F::NotFound), false),
    ("not in path", Word::Failure(F::NotFound), false),
    ("not on path", Word::Failure(F::NotFound), false),
    ("not in your path", Word::Failure(F::NotFound), false),
    ("not on your path", Word::Failure(F::NotFound), false),
    ("not in the path", Word::Failure(F::NotFound), false),
    ("not on the path", Word::Failure(F::NotFound), false),
    ("not in $path", Word::Failure(F::NotFound), false),
    (
        "no cuda runtime is found",
        Word::Failure(F::NotFound),
        false,
    ),
    ("找不到", Word::Failure(F::NotFound), false),
    // The shell's "command not found", on Windows and in Chinese.
    (
        "is not recognized as an internal or external command",
        Word::Failure(F::NotFound),
        false,
    ),
    ("不是内部或外部命令", Word::Failure(F::NotFound), false),
    ("no cuda toolset found", Word::Failure(F::NotFound), false),
    ("未找到", Word::Failure(F::NotFound), false),
    ("没有找到", Word::Failure(F::NotFound), false),
    ("缺少", Word::Failure(F::NotFound), false),
    ("没有安装", Word::Failure(F::NotFound), false),
    ("未安装", Word::Failure(F::NotFound), false),
    ("too old", Word::Failure(F::TooOld), false),
    ("insufficient", Word::Failure(F::TooOld), false),
    // "Insufficient" said of permissions or power is not a version too old: NVML's
    // `Insufficient Permissions` is access denied, its `Insufficient External Power` the
    // card's power connectors (the hardware).
    ("insufficient permission", Word::Cancel(F::TooOld), false),
    ("insufficient permission", Word::Failure(F::Denied), false),
    (
        "insufficient external power",
        Word::Cancel(F::TooOld),
        false,
    ),
    (
        "insufficient external power",
        Word::Code(S::Hardware, F::Fault),
        false,
    ),
    // A driver entry point the driver's library lacks ("Driver missing function:
    // cuDeviceGetUuid", numba's words): the symbol is unresolved, so the driver is older than
    // the caller.
    ("missing function", Word::Failure(F::UndefinedSymbol), false),
    // A build made without its CUDA half, in MXNet's and other CMake projects' words ("Compile
    // with USE_CUDA=1 to enable GPU usage", "GPU support is disabled").
    (
        "use_cuda=1",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "gpu support is disabled",
        Word::Code(S::Gpu, F::NotCompiled),
        false,
    ),
    ("older than", Word::Failure(F::TooOld), false),
    ("outdated", Word::Failure(F::TooOld), false),
    // A requirement stated against what was found, in the frameworks' own words ("Found CUDA
    // driver version 11040, but JAX was built against version 12020, which is newer"; "The
    // local installation version must be no lower than 8900").
    ("which is newer", Word::Failure(F::TooOld), false),
    ("no lower than", Word::Failure(F::TooOld), false),
    ("or later, but", Word::Failure(F::TooOld), false),
    ("or newer, but", Word::Failure(F::TooOld), false),
    ("below the minimum", Word::Failure(F::TooOld), false),
    ("lower than the minimum", Word::Failure(F::TooOld), false),
    ("must be at least", Word::Failure(F::TooOld), false),
    ("太老", Word::Failure(F::TooOld), false),
    // "insufficient" in Chinese ("驱动版本不足以支持CUDA运行时版本").
    ("不足以", Word::Failure(F::TooOld), false),
    ("版本不足", Word::Failure(F::TooOld), false),
    ("过老", Word::Failure(F::TooOld), false),
    ("更新显卡驱动", Word::Failure(F::TooOld), false),
    ("升级显卡驱动", Word::Failure(F::TooOld), false),
    ("显卡驱动升级", Word::Failure(F::TooOld), false),
    ("显卡驱动更新", Word::Failure(F::TooOld), false),
    ("needs to be upgraded", Word::Failure(F::TooOld), false),
    ("update your", Word::Failure(F::TooOld), false),
    ("upgrade your", Word::Failure(F::TooOld), false),
    ("minimum required", Word::Failure(F::TooOld), false),
    ("太低", Word::Failure(F::TooOld), false),
    ("过低", Word::Failure(F::TooOld), false),
    ("太旧", Word::Failure(F::TooOld), false),
    ("过旧", Word::Failure(F::TooOld), false),
    ("版本低", Word::Failure(F::TooOld), false),
    ("驱动升级", Word::Failure(F::TooOld), false),
    ("升级驱动", Word::Failure(F::TooOld), false),
    ("更新驱动", Word::Failure(F::TooOld), false),
    ("驱动更新", Word::Failure(F::TooOld), false),
    ("is too old", Word::Failure(F::TooOld), false),
    ("please upgrade", Word::Failure(F::TooOld), false),
    // A requirement stated against what was found ("requires NVIDIA driver >= 525, found
    // 470", "is lower than required", "does not support CUDA 12.1").
    ("lower than required", Word::Failure(F::TooOld), false),
    ("lower than the required", Word::Failure(F::TooOld), false),
    ("requires nvidia driver", Word::Failure(F::TooOld), false),
    ("requires driver", Word::Failure(F::TooOld), false),
    ("requires a newer", Word::Failure(F::TooOld), false),
    ("newer driver", Word::Failure(F::TooOld), false),
    ("update the driver", Word::Failure(F::TooOld), false),
    ("upgrade the driver", Word::Failure(F::TooOld), false),
    ("does not support cuda", Word::Failure(F::TooOld), false),
    ("doesn't support cuda", Word::Failure(F::TooOld), false),
    // A version the thing found falls short of ("Driver does not support the required NVENC API
    // version. Required: 13.0 Found: 12.1"): too old for it, not a feature it lacks.
    (
        "does not support the required",
        Word::Failure(F::TooOld),
        false,
    ),
    (
        "doesn't support the required",
        Word::Failure(F::TooOld),
        false,
    ),
    ("mismatch", Word::Failure(F::Mismatch), false),
    ("mis-match", Word::Failure(F::Mismatch), false),
    ("unmatched", Word::Failure(F::Mismatch), false),
    ("incompatible", Word::Failure(F::Mismatch), false),
    ("not compatible", Word::Failure(F::Mismatch), false),
    // Two packages' versions said to conflict ("torch=2.0.1和xformers版本冲突").
    ("conflicts with", Word::Failure(F::Mismatch), false),
    ("conflict with", Word::Failure(F::Mismatch), false),
    ("版本冲突", Word::Failure(F::Mismatch), false),
    ("does not match", Word::Failure(F::Mismatch), false),
    ("doesn't match", Word::Failure(F::Mismatch), false),
    ("do not match", Word::Failure(F::Mismatch), false),
    ("not match", Word::Failure(F::Mismatch), false),
    ("different cuda", Word::Failure(F::Mismatch), false),
    ("compiled with different", Word::Failure(F::Mismatch), false),
    (
        "but source was compiled with",
        Word::Failure(F::Mismatch),
        false,
    ),
    ("version conflict", Word::Failure(F::Mismatch), false),
    ("incompatibility", Word::Failure(F::Mismatch), false),
    // A package that says what it was built for ("xFormers was built for: PyTorch 2.0.1+cu118
    // ... (you have 2.1.0+cu121)").
    ("was built for", Word::Failure(F::Mismatch), false),
    // The same said of code and the device it meets ("running kernels compiled for compute
    // capability 7.0 on device with compute capability 5.0", "Binary was compiled for sm_80").
    ("was compiled for", Word::Failure(F::Mismatch), false),
    ("were compiled for", Word::Failure(F::Mismatch), false),
    ("kernels compiled for", Word::Failure(F::Mismatch), false),
    // One piece of a framework that requires another version of its other piece ("jaxlib is
    // version 0.4.1, but this version of jax requires version >= 0.4.7").
    ("but this version of", Word::Failure(F::Mismatch), false),
    ("requires version", Word::Failure(F::Mismatch), false),
    (
        "unexpected compiler version",
        Word::Failure(F::Mismatch),
        false,
    ),
    ("stubs/libcuda", Word::Failure(F::Mismatch), false),
    // A library's link-time stub loaded where the real one should be (CuPy's "You are running
    // using the stub version of nvrtc").
    ("stub version of", Word::Failure(F::Mismatch), false),
    // TensorFlow's cuDNN call that failed to launch: in every report of it in the material, a
    // cuDNN of another version than the one TensorFlow was built for.
    ("cudnn launch failure", Word::Failure(F::Mismatch), false),
    ("不匹配", Word::Failure(F::Mismatch), false),
    ("不对应", Word::Failure(F::Mismatch), false),
    ("对应不上", Word::Failure(F::Mismatch), false),
    // A program's tensors or arguments that disagree: not two versions.
    ("size mismatch", Word::Cancel(F::Mismatch), false),
    ("shape mismatch", Word::Cancel(F::Mismatch), false),
    ("dtype mismatch", Word::Cancel(F::Mismatch), false),
    ("type mismatch", Word::Cancel(F::Mismatch), false),
    ("length mismatch", Word::Cancel(F::Mismatch), false),
    ("dimension mismatch", Word::Cancel(F::Mismatch), false),
    // A CUDA library's handle that could not be made ("cublas runtime error : library not
    // initialized", CUBLAS_STATUS_NOT_INITIALIZED): memory run out or an earlier fault of the
    // program as often as the library itself, so it names no cause.
    (
        "library not initialized",
        Word::Cancel(F::NotAvailable),
        false,
    ),
    // "sm_" inside an identifier ("asm_compiler.cc", XLA's assembler in a log line's prefix)
    // is no architecture.
    ("asm_", Word::NotSubject(S::GpuArch), false),
    // torch's advice when an extension builds without an architecture list ("TORCH_CUDA_ARCH_
    // LIST is not set, all archs for visible cards are included"): a default taken, not a
    // variable missing.
    ("is not set, all archs", Word::Cancel(F::NotFound), false),
    // Windows' missing procedure, which the lexicon reads as an unresolved symbol.
    (
        "could not be located in the dynamic link library",
        Word::Cancel(F::NotFound),
        false,
    ),
    // A library's hint text for its status ("The cuDNN library was not initialized properly"):
    // the handle's creation failed, which memory run out does as often as the library.
    (
        "library was not initialized",
        Word::Cancel(F::NotAvailable),
        false,
    ),
    // nvcc's own banner ("nvcc: NVIDIA (R) Cuda compiler driver").
    ("compiler driver", Word::NotSubject(S::Driver), false),
    // The driver *API*, the interface a call went through, in its callers' framings
    // ("checkCudaErrors() Driver API error = 0046", CuPy's `cupy_backends.cuda.api.driver.
    // CUDADriverError: CUDA_ERROR_X`, cuDNN's `..._EXECUTION_FAILED_CUDA_DRIVER`): the status
    // that follows says what failed, the interface's name does not say the driver did.
    ("driver api", Word::NotSubject(S::Driver), false),
    // A Python module of a driver API's bindings (`cupy_backends.cuda.api.driver`,
    // `numba.cuda.cudadrv.driver`, `cuda.bindings.driver`, `pycuda.driver`): a dotted path.
    (".driver.", Word::NotSubject(S::Driver), false),
    ("cudadrivererror", Word::NotSubject(S::Driver), false),
    ("failed_cuda_driver", Word::NotSubject(S::Driver), false),
    // TensorFlow's lazy loader of the CUDA libraries, by its file's name in the log's prefix
    // ("cudart_stub.cc:28] Could not find cuda drivers on your machine"): where the line was
    // printed, not what it found missing.
    ("cudart_stub", Word::NotSubject(S::CudaLibrary), false),
    // What users say of the parts that work.
    ("没问题", Word::Works, false),
    ("没有问题", Word::Works, false),
    ("都正常", Word::Works, false),
    ("能正常", Word::Works, false),
    ("可以正常", Word::Works, false),
    ("正常使用", Word::Works, false),
    ("使用正常", Word::Works, false),
    ("运行正常", Word::Works, false),
    ("正常运行", Word::Works, false),
    ("works fine", Word::Works, false),
    ("working fine", Word::Works, false),
    ("work fine", Word::Works, false),
    ("works well", Word::Works, false),
    ("is working fine", Word::Works, false),
    ("no problem", Word::Works, false),
    ("command not found", Word::Command, false),
    // A name one package asks of another that the installed release lacks.
    ("has no attribute", Word::ApiGap, false),
    ("cannot import name", Word::ApiGap, false),
    ("No module named", Word::ApiGap, false),
    // A name its own module never got ("NameError: name '_C' is not defined"): a package's
    // compiled part whose guarded import failed ([`compiled_part_skipped`]).
    ("NameError: name", Word::ApiGap, false),
    (
        "is not recognized as an internal or external command",
        Word::Command,
        false,
    ),
    ("不是内部或外部命令", Word::Command, false),
    ("不一致", Word::Failure(F::Mismatch), false),
    ("不兼容", Word::Failure(F::Mismatch), false),
    ("对不上", Word::Failure(F::Mismatch), false),
    ("unsupported", Word::Failure(F::Unsupported), false),
    // A compiler given an option it does not have yet ("nvcc fatal : Unknown option
    // '-generate-dependencies-with-compile'"): the option is newer than the compiler.
    ("unknown option", Word::Failure(F::Unsupported), false),
    ("not supported", Word::Failure(F::Unsupported), false),
    ("only supported on", Word::Failure(F::Unsupported), false),
    ("no longer support", Word::Failure(F::Unsupported), false),
    ("does not support", Word::Failure(F::Unsupported), false),
    ("doesn't support", Word::Failure(F::Unsupported), false),
    // What a component works with, said of something else ("Flash-Attention only works with
    // Ampere", "only supports sm_80 and newer").
    ("only work with", Word::Failure(F::Unsupported), false),
    ("only works with", Word::Failure(F::Unsupported), false),
    ("only supports", Word::Failure(F::Unsupported), false),
    ("isn't supported", Word::Failure(F::Unsupported), false),
    (
        "is not compatible with the current",
        Word::Failure(F::Unsupported),
        false,
    ),
    ("no kernel image", Word::Failure(F::Unsupported), false),
    (
        "kernel image is invalid",
        Word::Failure(F::Unsupported),
        false,
    ),
    (
        "is not defined for option",
        Word::Failure(F::Unsupported),
        false,
    ),
    ("no longer compatible", Word::Failure(F::Mismatch), false),
    ("invalid value for", Word::Failure(F::Unsupported), false),
    ("unknown cuda arch", Word::Failure(F::Unsupported), false),
    (
        "to be true, but got false",
        Word::Failure(F::Unsupported),
        false,
    ),
    ("不支持", Word::Failure(F::Unsupported), false),
    ("timed out", Word::Failure(F::Timeout), false),
    // A socket's or a connection's timeout is the network failing between ranks or nodes,
    // not a collective that waited for a rank.
    ("socket timeout", Word::Cancel(F::Timeout), false),
    ("socket timeout", Word::Failure(F::Failed), false),
    ("connection timed out", Word::Cancel(F::Timeout), false),
    ("connection timed out", Word::Failure(F::Failed), false),
    ("connect timed out", Word::Cancel(F::Timeout), false),
    ("connect timed out", Word::Failure(F::Failed), false),
    ("timeout", Word::Failure(F::Timeout), false),
    ("time out", Word::Failure(F::Timeout), false),
    ("超时", Word::Failure(F::Timeout), false),
    ("hangs", Word::Failure(F::Hang), true),
    ("hang", Word::Failure(F::Hang), true),
    ("hanging", Word::Failure(F::Hang), true),
    ("stuck", Word::Failure(F::Hang), true),
    ("freezes", Word::Failure(F::Hang), true),
    ("卡住", Word::Failure(F::Hang), false),
    ("deadlock", Word::Failure(F::Hang), false),
    ("dead lock", Word::Failure(F::Hang), false),
    ("死锁", Word::Failure(F::Hang), false),
    ("卡死", Word::Failure(F::Hang), false),
    ("permission denied", Word::Failure(F::Denied), false),
    ("access denied", Word::Failure(F::Denied), false),
    ("operation not permitted", Word::Failure(F::Denied), false),
    (
        "required key not available",
        Word::Failure(F::Denied),
        false,
    ),
    ("权限", Word::Failure(F::Denied), false),
    (
        "is_available() false",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "is_available() returns false",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "is_available() return false",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "is_available() is false",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "is_available()` returns false",
        Word::Failure(F::NotAvailable),
        false,
    ),
    ("not available", Word::Failure(F::NotAvailable), false),
    // `is_available()` followed by its answer, however the words between are spelt
    // ("is_available()发现是False", "is_available() -> False"): read in [`words`].
    ("is_available()", Word::Subject(S::Gpu), false),
    // A framework's own question whether its build has CUDA (tf.test.is_built_with_cuda(),
    // paddle.is_compiled_with_cuda()) and TensorFlow's list of GPUs: read with their answers.
    ("with_cuda()", Word::Subject(S::Framework), false),
    ("list_physical_devices('gpu')", Word::Subject(S::Gpu), false),
    (
        "list_physical_devices(\"gpu\")",
        Word::Subject(S::Gpu),
        false,
    ),
    ("can't utilize", Word::Failure(F::NotAvailable), false),
    ("cannot utilize", Word::Failure(F::NotAvailable), false),
    ("can not utilize", Word::Failure(F::NotAvailable), false),
    ("not utilizing", Word::Failure(F::NotAvailable), false),
    ("unavailable", Word::Failure(F::NotAvailable), false),
    ("cannot use", Word::Failure(F::NotAvailable), false),
    ("can't use", Word::Failure(F::NotAvailable), false),
    ("not initialized", Word::Failure(F::NotAvailable), false),
    ("not yet initialized", Word::Failure(F::NotAvailable), false),
    ("systemnotready", Word::Failure(F::NotAvailable), false),
    (
        "no cuda gpus are available",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "no cuda-capable device",
        Word::Failure(F::NotAvailable),
        false,
    ),
    (
        "cuda_error_no_device",
        Word::Failure(F::NotAvailable),
        false,
    ),
    // A program that states the GPU it needs (Meshroom's "This program needs a CUDA-Enabled
    // GPU", a renderer's "requires an NVIDIA GPU"). A CUDA *build* or version asked for ("needs
    // a CUDA 12.8 build") names no GPU after the article and stays out.
    (
        "needs a cuda-enabled gpu",
        Word::Failure(F::Required),
        false,
    ),
    (
        "requires a cuda-enabled gpu",
        Word::Failure(F::Required),
        false,
    ),
    (
        "needs a cuda-capable gpu",
        Word::Failure(F::Required),
        false,
    ),
    (
        "requires a cuda-capable gpu",
        Word::Failure(F::Required),
        false,
    ),
    ("needs a cuda gpu", Word::Failure(F::Required), false),
    ("requires a cuda gpu", Word::Failure(F::Required), false),
    ("needs an nvidia gpu", Word::Failure(F::Required), false),
    ("requires an nvidia gpu", Word::Failure(F::Required), false),
    ("no gpu", Word::Failure(F::NotAvailable), false),
    ("no gpus", Word::Failure(F::NotAvailable), false),
    ("no usable gpu", Word::Failure(F::NotAvailable), false),
    ("no compatible gpu", Word::Failure(F::NotAvailable), false),
    ("no supported gpu", Word::Failure(F::NotAvailable), false),
    ("no nvidia gpu", Word::Failure(F::NotAvailable), false),
    ("no cuda device", Word::Failure(F::NotAvailable), false),
    ("not detected", Word::Failure(F::NotAvailable), false),
    ("not detect", Word::Failure(F::NotAvailable), false),
    ("not recognized", Word::Failure(F::NotAvailable), false),
    // Typed without the apostrophe.
    ("isnt recognized", Word::Failure(F::NotAvailable), false),
    ("isnt detected", Word::Failure(F::NotAvailable), false),
    // The GPU unrecognised in the active voice ("the node doesn't recognize the GPU").
    ("n't recognize", Word::Failure(F::NotAvailable), false),
    ("not recognize", Word::Failure(F::NotAvailable), false),
    // A count of GPUs that is zero: a scheduler's or a device plugin's inventory
    // ("nvidia.com/gpu: 0", "sees 0 GPUs", "0 graphics cards") where a GPU was expected.
    ("0 gpus", Word::Failure(F::NotAvailable), true),
    ("0 graphics cards", Word::Failure(F::NotAvailable), true),
    ("zero gpus", Word::Failure(F::NotAvailable), true),
    ("gpu: 0", Word::Failure(F::NotAvailable), true),
    ("gpus: 0", Word::Failure(F::NotAvailable), true),
    ("found no nvidia", Word::Failure(F::NotAvailable), false),
    (
        "no devices were found",
        Word::Failure(F::NotAvailable),
        false,
    ),
    ("检测不到", Word::Failure(F::NotAvailable), false),
    // A GPU that is not NVIDIA's, as users name theirs.
    ("integrated intel", Word::Failure(F::NotNvidia), false),
    ("intel gpu", Word::Failure(F::NotNvidia), false),
    ("intel(r) uhd", Word::Failure(F::NotNvidia), false),
    ("intel uhd", Word::Failure(F::NotNvidia), false),
    ("intel hd graphics", Word::Failure(F::NotNvidia), false),
    ("iris xe", Word::Failure(F::NotNvidia), false),
    ("integrated graphics", Word::Failure(F::NotNvidia), false),
    ("radeon", Word::Failure(F::NotNvidia), false),
    ("intel card", Word::Failure(F::NotNvidia), false),
    ("intel graphics", Word::Failure(F::NotNvidia), false),
    ("intel显卡", Word::Failure(F::NotNvidia), false),
    ("amd card", Word::Failure(F::NotNvidia), false),
    ("amd显卡", Word::Failure(F::NotNvidia), false),
    ("apple silicon", Word::Failure(F::NotNvidia), false),
    ("amd hardware", Word::Failure(F::NotNvidia), false),
    ("amd gpu", Word::Failure(F::NotNvidia), false),
    ("集成显卡", Word::Failure(F::NotNvidia), false),
    ("核显", Word::Failure(F::NotNvidia), false),
    ("识别不到", Word::Failure(F::NotAvailable), false),
    ("识别不了", Word::Failure(F::NotAvailable), false),
    ("用不了", Word::Failure(F::NotAvailable), false),
    ("不可用", Word::Failure(F::NotAvailable), false),
    ("无法使用", Word::Failure(F::NotAvailable), false),
    ("调用不了", Word::Failure(F::NotAvailable), false),
    ("failed", Word::Failure(F::Failed), false),
    // What users type when something does not do its job, without saying how.
    ("not working", Word::Failure(F::Failed), false),
    ("don't work", Word::Failure(F::Failed), false),
    ("dont work", Word::Failure(F::Failed), false),
    ("doesn't work", Word::Failure(F::Failed), false),
    ("doesnt work", Word::Failure(F::Failed), false),
    ("does not work", Word::Failure(F::Failed), false),
    ("isn't working", Word::Failure(F::Failed), false),
    ("failure", Word::Failure(F::Failed), false),
    ("error", Word::Failure(F::Failed), false),
    ("cannot", Word::Failure(F::Failed), false),
    ("unable to", Word::Failure(F::Failed), false),
    // Kubernetes' state of a pod that keeps failing at start.
    ("crashloopbackoff", Word::Failure(F::Failed), false),
    ("connection refused", Word::Failure(F::Failed), false),
    ("couldn't communicate", Word::Failure(F::Failed), false),
    ("失败", Word::Failure(F::Failed), false),
    ("报错", Word::Failure(F::Failed), false),
    ("错误", Word::Failure(F::Failed), false),
    // CUDA's error enumerations (the driver API's CUresult, the runtime's cudaError_t) by the
    // names bindings print, case and underscores aside: C and CuPy write
    // `CUDA_ERROR_NO_BINARY_FOR_GPU`, the runtime `cudaErrorInvalidPtx`, Rust's cust and
    // rustacuda `NoBinaryForGpu`, CUDA.NET and ManagedCuda `ErrorInvalidPtx`, CUDA.jl
    // `ERROR_NO_BINARY_FOR_GPU`. Each stands for what the canonical name's reading says (the
    // emitters' tables test both). `CUDA_ERROR_INVALID_PTX` ("a PTX JIT compilation failed") is
    // read as PTX the driver cannot compile for this GPU: in every report of it in the material
    // but one, the PTX was built for a newer architecture than the GPU's (the other: PTX newer than
    // the driver), so the answer says both.
    (
        "nobinaryforgpu",
        Word::Code(S::GpuArch, F::Unsupported),
        false,
    ),
    (
        "no_binary_for_gpu",
        Word::Code(S::GpuArch, F::Unsupported),
        false,
    ),
    ("invalidptx", Word::Code(S::GpuArch, F::Unsupported), false),
    ("invalid_ptx", Word::Code(S::GpuArch, F::Unsupported), false),
    (
        "ptx jit compilation failed",
        Word::Code(S::GpuArch, F::Unsupported),
        false,
    ),
    (
        "unsupportedptxversion",
        Word::Code(S::DriverLibrary, F::Unsupported),
        false,
    ),
    (
        "insufficientdriver",
        Word::Code(S::Driver, F::TooOld),
        false,
    ),
    ("errornodevice", Word::Code(S::Gpu, F::NotAvailable), false),
    (
        "systemdrivermismatch",
        Word::Code(S::DriverLibrary, F::Mismatch),
        false,
    ),
    (
        "compatnotsupportedondevice",
        Word::Code(S::Driver, F::TooOld),
        false,
    ),
    (
        "errorstublibrary",
        Word::Code(S::CudaLibrary, F::CannotLoad),
        false,
    ),
    ("eccuncorrectable", Word::Code(S::Hardware, F::Fault), false),
    (
        "nvlinkuncorrectable",
        Word::Code(S::Hardware, F::Fault),
        false,
    ),
    (
        "jitcompilernotfound",
        Word::Code(S::CudaLibrary, F::NotFound),
        false,
    ),
    (
        "unsupported_ptx_version",
        Word::Code(S::DriverLibrary, F::Unsupported),
        false,
    ),
    (
        "insufficient_driver",
        Word::Code(S::Driver, F::TooOld),
        false,
    ),
    (
        "error_no_device",
        Word::Code(S::Gpu, F::NotAvailable),
        false,
    ),
    (
        "system_driver_mismatch",
        Word::Code(S::DriverLibrary, F::Mismatch),
        false,
    ),
    (
        "compat_not_supported_on_device",
        Word::Code(S::Driver, F::TooOld),
        false,
    ),
    (
        "error_stub_library",
        Word::Code(S::CudaLibrary, F::CannotLoad),
        false,
    ),
    (
        "ecc_uncorrectable",
        Word::Code(S::Hardware, F::Fault),
        false,
    ),
    (
        "nvlink_uncorrectable",
        Word::Code(S::Hardware, F::Fault),
        false,
    ),
    (
        "jit_compiler_not_found",
        Word::Code(S::CudaLibrary, F::NotFound),
        false,
    ), // A build without the CUDA half, in its own words: TensorFlow's device placement finding no
    // GPU device ("Device mapping: no known devices", a CPU package or a build without
    // --config=cuda; libraries it failed to load say so on lines of their own), MXNet's "Please
    // compile with CUDA enabled", mmcv's dispatcher finding no CUDA implementation of an op
    // ("hard_voxelize_forward_impl: implementation for device cuda:0 not found").
    (
        "no known devices",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "compile with cuda enabled",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    (
        "implementation for device cuda",
        Word::Code(S::Framework, F::NotCompiled),
        false,
    ),
    // FFmpeg built without NVIDIA's codecs and filters: "No such filter: 'scale_cuda'",
    // "Unknown encoder 'h264_nvenc'", "Unknown decoder 'h264_cuvid'".
    ("_nvenc", Word::Subject(S::Framework), false),
    ("_cuvid", Word::Subject(S::Framework), false),
    ("scale_cuda", Word::Subject(S::Framework), false),
    ("no such filter", Word::Failure(F::NotCompiled), false),
    ("unknown encoder", Word::Failure(F::NotCompiled), false),
    ("unknown decoder", Word::Failure(F::NotCompiled), false),
    // The toolkit not found where a build looks for it, in the build tools' words: nvcc without
    // its toolkit's libdevice (a distribution's /usr/bin/nvcc), CMake's compiler search, Rust's
    // find_cuda_helper.
    (
        "path to libdevice",
        Word::Code(S::Toolkit, F::NotFound),
        false,
    ),
    (
        "cuda compiler - notfound",
        Word::Code(S::Toolkit, F::NotFound),
        false,
    ),
    (
        "could not find a cuda installation",
        Word::Code(S::Toolkit, F::NotFound),
        false,
    ),
];

struct Lexicon {
    automaton: AhoCorasick,
}

fn lexicon() -> &'static Lexicon {
    static LEX: OnceLock<Lexicon> = OnceLock::new();
    LEX.get_or_init(|| {
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(lexicon_words())
            .unwrap_or_else(|_| {
                // The lexicon is a constant; the unit tests build it.
                AhoCorasick::new(["\u{0}never\u{0}"]).unwrap_or_else(|_| unreachable!())
            });
        Lexicon { automaton }
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The subjects and failures a line names (each once), in a fixed order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Words {
    pub subjects: Vec<Subject>,
    pub failures: Vec<Failure>,
    /// Where each subject is first named (byte offset), in the order found.
    pub at: Vec<(Subject, usize)>,
    /// Where each failure word of the lexicon ends (byte offset), in the order found.
    pub failed_at: Vec<(Failure, usize)>,
    /// Whether the line holds Python's words for a name a module lacks, so that [`api_gap`]
    /// is worth calling.
    pub gap_words: bool,
    /// Whether the line names the GPU only as the card ("gpu", "显卡"), never as CUDA: what it
    /// says of the GPU's age is the card's architecture, not the CUDA the driver runs.
    pub gpu_as_card: bool,
}

impl Words {
    pub fn has(&self, s: Subject) -> bool {
        self.subjects.contains(&s)
    }
    fn fails(&self, f: Failure) -> bool {
        self.failures.contains(&f)
    }
    /// The first of `fs` the line names.
    fn first_failing(&self, fs: &[Failure]) -> Option<Failure> {
        fs.iter().copied().find(|f| self.fails(*f))
    }
    /// `s` with the first of `fs`, when the line names both.
    fn pick(&self, s: Subject, fs: &[Failure]) -> Option<(Subject, Failure)> {
        if self.has(s) {
            self.first_failing(fs).map(|f| (s, f))
        } else {
            None
        }
    }
    /// Where the line first names `s`.
    fn first_at(&self, s: Subject) -> Option<usize> {
        self.at.iter().find(|(x, _)| *x == s).map(|(_, i)| *i)
    }
    /// Of `among`, the subject the line names last before it first says `f` (by where each
    /// subject is first named).
    fn nearest_before(&self, f: Failure, among: &[Subject]) -> Option<Subject> {
        let end = self
            .failed_at
            .iter()
            .find(|(x, _)| *x == f)
            .map(|(_, e)| *e)?;
        among
            .iter()
            .filter_map(|s| self.first_at(*s).filter(|at| *at < end).map(|at| (at, *s)))
            .max()
            .map(|(_, s)| s)
    }
    fn add_subject(&mut self, s: Subject, at: usize) {
        if !self.subjects.contains(&s) {
            self.subjects.push(s);
            self.at.push((s, at));
        }
    }
    fn add_failure(&mut self, f: Failure) {
        if !self.failures.contains(&f) {
            self.failures.push(f);
        }
    }
}

/// Reads the subject and failure words of `line`.
pub fn words(line: &str) -> Words {
    let bytes = line.as_bytes();
    let mut w = Words::default();
    // Where a call of CALL_ANSWERS ends, when the lexicon found one: its answer follows.
    let mut calls: Vec<(usize, &str, Failure)> = Vec::new();
    let mut failures: Vec<(Failure, usize, usize)> = Vec::new();
    let mut cancels: Vec<(Failure, usize, usize)> = Vec::new();
    let mut subjects: Vec<(Subject, usize, usize)> = Vec::new();
    let mut not_subjects: Vec<(Subject, usize, usize)> = Vec::new();
    // Spans whose failure words are not the stack's: a shell's refusal of a command that is
    // none of its tools.
    let mut foreign: Vec<(usize, usize)> = Vec::new();
    let mut works_at: Vec<usize> = Vec::new();
    // What the readers below need the line to hold, noted from the lexicon's own pass so
    // that an ordinary line costs them nothing: CUDA named (inside a word too, as in
    // `cudaGetDeviceCount`), a package with a CPU flavour.
    let (mut saw_cuda, mut saw_flavour, mut saw_arch) = (false, false, false);
    let (mut saw_gap, mut saw_placement) = (false, false);
    // How the line names the GPU: as the card, or as CUDA.
    let (mut gpu_as_card, mut gpu_as_cuda) = (false, false);
    // The line lowered for the readings of negations, made once and only if one needs it.
    let lowered_line = std::cell::OnceCell::new();
    let lower = || lowered_line.get_or_init(|| lowered(line)).as_str();
    for m in lexicon().automaton.find_overlapping_iter(line) {
        // Past the lexicon's own words come the relations of placements.
        let Some((text, word, whole)) = LEXICON.get(m.pattern().as_usize()) else {
            saw_placement = true;
            continue;
        };
        saw_cuda |= text.starts_with("cuda");
        saw_arch |= matches!(*text, "sm_" | "compute_");
        saw_flavour |= CPU_FLAVOURS.iter().any(|f| f.starts_with(text));
        if text.ends_with(')') {
            if let Some((_, answer, failure)) = CALL_ANSWERS.iter().find(|(c, _, _)| c == text) {
                calls.push((m.end(), answer, *failure));
            }
        }
        if *whole {
            let before = m.start().checked_sub(1).and_then(|i| bytes.get(i));
            // A word with an index or a version run on ("GPU1", "cuda12") still stands alone.
            let digits = bytes
                .get(m.end()..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let after = bytes.get(m.end() + digits);
            if before.is_some_and(|b| is_word_byte(*b)) || after.is_some_and(|b| is_word_byte(*b)) {
                continue;
            }
        }
        match *word {
            Word::Subject(S::Gpu) => {
                if matches!(*text, "gpu" | "gpus" | "显卡") {
                    gpu_as_card = true;
                } else {
                    gpu_as_cuda = true;
                }
                subjects.push((S::Gpu, m.start(), m.end()));
            }
            Word::Subject(s) => subjects.push((s, m.start(), m.end())),
            Word::Failure(f) => failures.push((f, m.start(), m.end())),
            Word::Cancel(f) => cancels.push((f, m.start(), m.end())),
            Word::NotSubject(s) => not_subjects.push((s, m.start(), m.end())),
            Word::Works => works_at.push(m.start()),
            Word::Command => {
                if !command_is_a_tool(line.get(..m.start()).unwrap_or_default()) {
                    foreign.push((m.start(), m.end()));
                }
            }
            Word::ApiGap => saw_gap = true,
            Word::Code(s, f) => {
                subjects.push((s, m.start(), m.end()));
                failures.push((f, m.start(), m.end()));
            }
        }
    }
    // "Works" is said of the stack when one of its subjects is named right before it ("the
    // driver and CUDA work fine", "显卡驱动,CUDA都没问题"), not of another card or program
    // ("on the same machine a 3060 works fine").
    let works = works_at.iter().any(|&at| {
        subjects
            .iter()
            .any(|(_, _, end)| *end <= at && at - *end <= WORKS_REACH)
    });
    // "没有" right before a subject ("没有nvcc编译器", "没有 CUDA 工具包") says it is missing.
    if line.contains("没有")
        && subjects.iter().any(|(_, start, _)| {
            line.get(..*start)
                .is_some_and(|before| before.trim_end().ends_with("没有"))
        })
    {
        failures.push((F::NotFound, 0, 0));
    }
    // "no" right before a part of the stack that is installed or loaded ("nvidia-smi reports
    // no driver", "there is no nvcc", "no NVIDIA driver loaded") says it is missing.
    if subjects.iter().any(|(s, start, end)| {
        NO_BEFORE_SUBJECTS.contains(s)
            && line.get(..*start).is_some_and(no_right_before)
            && !line.get(*end..).is_some_and(said_of_what_follows)
    }) {
        failures.push((F::NotFound, 0, 0));
    }
    for (s, start, end) in subjects {
        let cancelled = not_subjects
            .iter()
            .any(|(c, cs, ce)| *c == s && *cs <= start && end <= *ce)
            || (s == S::CudaLibrary && in_image_tag(line, start));
        if !cancelled {
            w.add_subject(s, start);
        }
    }
    for (f, start, end) in failures {
        let cancelled = cancels
            .iter()
            .any(|(c, cs, ce)| *c == f && *cs <= start && end <= *ce)
            || foreign.iter().any(|(cs, ce)| *cs <= start && end <= *ce)
            || (works && f == F::Failed);
        if !cancelled {
            w.add_failure(f);
            w.failed_at.push((f, end));
        }
    }
    for (end, answer, failure) in calls {
        if w.fails(failure) {
            continue;
        }
        let near: String = line
            .get(end..)
            .unwrap_or_default()
            .chars()
            .take(16)
            .collect();
        if find_ascii_ci(&near, answer).is_some() {
            w.failures.push(failure);
        }
    }
    // Support denied in a user's words ("didn't support V100", "doesn't actually support
    // sm_75"), which the lexicon reads only side by side with its own negations.
    if !w.fails(F::Unsupported) && may_negate(line) && negated_support(lower()) {
        w.add_failure(F::Unsupported);
    }
    // An attention kernel said not to work on a card ("xFormers does not work on RTX 50s"):
    // attention kernels are built for some architectures only, so the card is what it refuses.
    if w.has(S::Attention) && !w.fails(F::Unsupported) && works_not_on_a_card(lower()) {
        w.add_failure(F::Unsupported);
    }
    // An architecture said to be missing from a build ("has no sm_60 kernels").
    if saw_arch && arch_absent(line) {
        w.add_failure(F::Unsupported);
    }
    // An architecture matters only to a line that says something failed.
    if !w.failures.is_empty() && !w.has(S::GpuArch) && names_sm_arch(line) {
        w.add_subject(S::GpuArch, line.len());
    }
    // An attention kernel that names the cards it requires ("FlashAttention backward for head
    // dim 256 requires A100/A800 or H100/H800", "needs an Ampere GPU"): unsupported here.
    if w.has(S::Attention)
        && w.failures.iter().all(|f| *f == F::Failed)
        && (find_ascii_ci(line, "requires").is_some() || find_ascii_ci(line, "needs ").is_some())
        && names_a_gpu(line)
    {
        w.add_failure(F::Unsupported);
    }
    // A card named by its model in a line that says it is not supported ("1.3 no longer
    // supporting Tesla K40m"): the model stands for its architecture. Attention kernels say
    // which cards they run on themselves.
    if w.fails(F::Unsupported) && !w.has(S::GpuArch) && !w.has(S::Attention) && names_card(line) {
        w.add_subject(S::GpuArch, line.len());
    }
    if let Some((s, f)) = saw_cuda.then(|| cuda_error_code(line)).flatten() {
        w.add_subject(s, line.len());
        w.add_failure(f);
    }
    if w.has(S::WindowsDll) && !w.fails(F::CannotLoad) && !w.fails(F::UndefinedSymbol) {
        if let Some(f) = windows_error_code(line) {
            w.add_failure(f);
        }
    }
    if w.fails(F::Hang) && !w.has(S::Nccl) && multi_gpu(line) {
        w.add_subject(S::Nccl, line.len());
    }
    if let Some((s, f)) = cuda_identifier_undefined(line)
        .or_else(|| providers_without_cuda(line))
        .or_else(|| empty_toolkit_root(line))
    {
        w.add_subject(s, line.len());
        w.add_failure(f);
    }
    if !w.fails(F::NotFound) && nothing_found(line) {
        w.add_failure(F::NotFound);
    }
    if w.fails(F::NotFound) && named_function_not_found(line).is_some() {
        w.add_failure(F::UndefinedSymbol);
    }
    w.gap_words = saw_gap;
    w.gpu_as_card = gpu_as_card && !gpu_as_cuda;
    // The loader's words ("cannot open shared object file") said of a library outside the
    // stack, on a line that names nothing of the stack: the library is the system's.
    if w.has(S::CudaLibrary) && loads_only_a_library_outside_the_stack(line) {
        w.subjects.retain(|s| *s != S::CudaLibrary);
        w.at.retain(|(s, _)| *s != S::CudaLibrary);
        w.add_subject(S::OtherLibrary, line.len());
    }
    if saw_cuda && selection_ignored(line) {
        w.add_subject(S::Selection, line.len());
        w.add_failure(F::Ignored);
    }
    if saw_placement && crate::placement::mixes_devices(line) {
        w.add_subject(S::Placement, line.len());
        w.add_failure(F::Misplaced);
    }
    if let Some((s, f)) = saw_gap.then(|| missing_attribute(line)).flatten() {
        w.add_subject(s, line.len());
        w.add_failure(f);
    }
    if saw_cuda && !w.fails(F::TooOld) && cuda_below_requirement(line) {
        w.add_subject(S::Gpu, line.len());
        w.add_failure(F::TooOld);
    }
    if saw_cuda && (cuda_build_none(line) || choices_without_cuda(line)) {
        w.add_subject(S::Framework, line.len());
        w.add_failure(F::NotCompiled);
    }
    if saw_flavour && cpu_flavour_installed(line) {
        w.add_subject(S::Framework, line.len());
        w.add_failure(F::NotCompiled);
    }
    // An import that fails after the framework was upgraded ("ImportError after upgrading to
    // PyTorch 1.1.0"): an extension built against the release before, whose symbols the new
    // one no longer exports, as the loader's "undefined symbol" says when it is shown.
    if !w.fails(F::UndefinedSymbol) && import_fails_after_framework_upgrade(line) {
        w.add_subject(S::Framework, line.len());
        w.add_failure(F::UndefinedSymbol);
    }
    // A framework's GPU package that cannot be found for the machine ("I can not find the
    // tensorflow-gpu for my CUDA", pip's "No matching distribution found for
    // paddlepaddle-gpu"): only its CPU build exists there.
    if w.fails(F::NotFound) && !w.fails(F::NotCompiled) && names_gpu_package(line) {
        w.add_subject(S::Framework, line.len());
        w.add_failure(F::NotCompiled);
    }
    // A package list's row of a framework whose build string is a CPU one (conda's
    // `cpu_generic_py311h8354fdb_2`, `py3.11_cpu_0`, `cpu_mkl_py310...`).
    if w.has(S::Framework) && !w.fails(F::NotCompiled) && cpu_build_listed(line) {
        w.add_failure(F::NotCompiled);
    }
    // A version's CPU variant typed with a hyphen ("torch=2.2.0-cpu"), as "+cpu" is written.
    if !w.fails(F::NotCompiled) && version_with_cpu_suffix(line) {
        w.add_failure(F::NotCompiled);
    }
    if !w.fails(F::NotAvailable) && may_negate(line) && negation_apart_from_its_verb(lower()) {
        w.add_failure(F::NotAvailable);
    }
    if !w.fails(F::CannotLoad) && may_negate(line) && negated_loading(lower()) {
        w.add_failure(F::CannotLoad);
    }
    // A comparison whose found side is a version of zeros ("expecting 5.1.5 got 0.0.0") read
    // no version at all: the file or answer it came from was unreadable (a corrupted plan, a
    // header read in text mode, a query that failed), so nothing is too old or mismatched.
    if (w.fails(F::Mismatch) || w.fails(F::TooOld)) && found_version_is_zero(line) {
        w.failures.retain(|f| !matches!(f, F::Mismatch | F::TooOld));
        w.failed_at
            .retain(|(f, _)| !matches!(f, F::Mismatch | F::TooOld));
    }
    w.subjects.sort();
    w.failures.sort();
    w
}

/// Whether the only library a line names is outside the CUDA stack and the line names nothing
/// of the stack besides ("ImportError: libGL.so.1: cannot open shared object file").
fn loads_only_a_library_outside_the_stack(line: &str) -> bool {
    !crate::libraries::names_the_stack(line)
        && fields(line)
            .get("library")
            .is_some_and(|lib| !crate::libraries::of_the_stack(lib))
}

/// What users say of a setting that does not take effect.
const NO_EFFECT: [&str; 10] = [
    "no effect",
    "not take effect",
    "n't take effect",
    "not work",
    "n't work",
    "not honoured",
    "not honored",
    "not respected",
    "is ignored",
    "does nothing",
];

/// A selection of GPUs that the program makes in its own code (`os.environ`, or a setting it
/// makes in its script) and that does not take effect ("os.environ['CUDA_VISIBLE_DEVICES']
/// has no effect", "setting CUDA_VISIBLE_DEVICES in my code does not work"): CUDA reads the
/// variable once, when it starts, so one set after that is ignored. The program's order of
/// steps, not the installation. A variable set on the command line is the user's shell, and a
/// framework's own warning about the variable ("changing env variable CUDA_VISIBLE_DEVICES
/// after program start") says no such thing.
fn selection_ignored(line: &str) -> bool {
    let Some(at) = find_ascii_ci(line, "cuda_visible_devices") else {
        return false;
    };
    let set_in_code = ["os.environ", "environ[", "setting ", "set "]
        .iter()
        .any(|k| find_ascii_ci(line, k).is_some());
    let shell = line
        .get(at + "cuda_visible_devices".len()..)
        .is_some_and(|r| r.starts_with('=') && !line.contains("environ"));
    set_in_code && !shell && NO_EFFECT.iter().any(|k| find_ascii_ci(line, k).is_some())
}

/// The words of an upgrade, then of the framework upgraded, a few bytes apart.
const UPGRADES: [&str; 6] = [
    "after upgrading",
    "since upgrading",
    "after updating",
    "since updating",
    "after the upgrade",
    "after an upgrade",
];
const UPGRADED: [&str; 4] = ["torch", "tensorflow", "paddle", "jax"];
/// The words of a failed import.
const IMPORT_FAILS: [&str; 5] = [
    "importerror",
    "import error",
    "cannot import",
    "failed to import",
    "dll load failed",
];

/// Whether a line says an import failed after the framework was upgraded.
fn import_fails_after_framework_upgrade(line: &str) -> bool {
    if find_ascii_ci(line, "after").is_none() && find_ascii_ci(line, "since").is_none() {
        return false;
    }
    let lower = line.to_ascii_lowercase();
    let upgraded = UPGRADES.iter().any(|u| {
        lower.match_indices(u).any(|(i, _)| {
            let near: String = lower
                .get(i + u.len()..)
                .unwrap_or_default()
                .chars()
                .take(16)
                .collect();
            UPGRADED.iter().any(|f| near.contains(f))
        })
    });
    upgraded && IMPORT_FAILS.iter().any(|k| lower.contains(k))
}

/// The frameworks published as a separate GPU package (`NAME-gpu`).
const GPU_PACKAGES: [&str; 5] = [
    "tensorflow-gpu",
    "paddlepaddle-gpu",
    "onnxruntime-gpu",
    "faiss-gpu",
    "mxnet-gpu",
];

/// Whether a line names a framework's GPU package.
fn names_gpu_package(line: &str) -> bool {
    find_ascii_ci(line, "-gpu").is_some()
        && GPU_PACKAGES
            .iter()
            .any(|p| find_ascii_ci(line, p).is_some())
}

/// Whether a version number runs into "-cpu" ("2.2.0-cpu"), the CPU variant's local version
/// as users type it.
fn version_with_cpu_suffix(line: &str) -> bool {
    line.match_indices("-cpu").any(|(i, _)| {
        let b = line.as_bytes();
        let digit_before = i
            .checked_sub(1)
            .and_then(|j| b.get(j))
            .is_some_and(u8::is_ascii_digit);
        let word_after = b.get(i + 4).is_some_and(|c| c.is_ascii_alphanumeric());
        digit_before && !word_after
    })
}

/// Negations that a verb follows, with the apostrophe users leave out ("dont", "couldnt").
const NEGATIONS: [&str; 15] = [
    "n't ",
    "not ",
    "cannot ",
    "unable to ",
    "failed to ",
    "fails to ",
    "fail to ",
    "dont ",
    "cant ",
    "couldnt ",
    "doesnt ",
    "didnt ",
    "wont ",
    "不能",
    "无法",
];
/// The verbs by which a program or a machine sees a GPU (their stems).
const PERCEIVING: [&str; 5] = ["recogni", "detect", "see", "find", "识别"];
/// Whether a word is a verb of perception: "recogni..." and "detect..." by their stems; "see"
/// and "find" only as themselves and their inflections ("seem", "seen as", "findings" are
/// not).
fn perceives(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    PERCEIVING.iter().any(|v| match *v {
        "see" => matches!(w, "see" | "sees" | "seeing"),
        "find" => matches!(w, "find" | "finds" | "finding"),
        _ => w.starts_with(v),
    })
}

/// Whether a word is a verb by which a loader takes a library in ("load", "open", "dlopen" and
/// their inflections).
fn loads(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    matches!(
        w,
        "load"
            | "loads"
            | "loaded"
            | "loading"
            | "open"
            | "opens"
            | "opened"
            | "opening"
            | "dlopen"
    )
}

/// Words allowed between a negation and its verb (an inverted question's subject, an adverb).
const NEGATION_GAP_WORDS: usize = 4;

/// The verb a negation governs, a few words after it at most: `verb` decides which words are
/// the verb; `side_by_side` whether the verb right after the negation counts (the lexicon
/// already reads the phrases it holds); `passive` whether the passive counts ("cannot be
/// opened"): a library that cannot be loaded is the subject either way, while in "cannot be
/// recognized" what is not seen is often a name the tool does not know, not a GPU.
/// `lower` is the line as [`lowered`] gives it.
fn negated_verb(lower: &str, verb: fn(&str) -> bool, side_by_side: bool, passive: bool) -> bool {
    NEGATIONS.iter().any(|neg| {
        lower.match_indices(neg).any(|(i, _)| {
            let rest = lower.get(i + neg.len()..).unwrap_or_default();
            rest.split_whitespace()
                .filter(|word| !(passive && matches!(*word, "be" | "been" | "being")))
                .take(NEGATION_GAP_WORDS + 1)
                .take_while(|word| passive || !matches!(*word, "be" | "been" | "being"))
                .enumerate()
                .any(|(k, word)| (side_by_side || k > 0) && verb(word))
        })
    })
}

/// A line in lower case with its typographic apostrophes straightened ("doesn’t"), as the
/// readings of negations below search it; [`words`] makes it once per line.
fn lowered(line: &str) -> String {
    line.to_lowercase().replace('’', "'")
}

/// Whether the line may hold a negation ([`NEGATIONS`]), before it is lowered and searched.
fn may_negate(line: &str) -> bool {
    line.contains("n't")
        || line.contains("not")
        || line.contains("unable")
        || line.contains("ail")
        || line.contains("nt ")
        || line.contains("不能")
        || line.contains("无法")
}

/// Whether a negation and its verb of perception stand apart, a few words between ("why
/// doesn't my Kubernetes node recognize the GPU", "it does not always detect the card"): the
/// lexicon reads them only side by side ("not detected", "n't recognize").
fn negation_apart_from_its_verb(lower: &str) -> bool {
    negated_verb(lower, perceives, false, false)
}

/// Whether the line says something could not be loaded in words the lexicon does not hold
/// ("Couldn't open CUDA library libcudnn.so", "libcudnn.so.8 and libcusolver.so.10 dont
/// load", "could not be opened").
fn negated_loading(lower: &str) -> bool {
    negated_verb(lower, loads, true, true)
}

/// Whether a word is the verb of support ("support", "supports", "supported").
fn supports(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    matches!(w, "support" | "supports" | "supported" | "supporting")
}

/// Whether the line denies support in words the lexicon does not hold ("didn't support",
/// "doesn't actually support", "won't be supported").
fn negated_support(lower: &str) -> bool {
    negated_verb(lower, supports, true, true)
}

/// Whether the line says something does not work or run on a card it names after the verb
/// ("does not work on RTX 50s", "doesn't run on the V100").
fn works_not_on_a_card(lower: &str) -> bool {
    [
        "not work on",
        "n't work on",
        "not run on",
        "n't run on",
        "not working on",
    ]
    .iter()
    .filter_map(|k| lower.find(k).map(|i| i + k.len()))
    .any(|end| {
        let rest = lower.get(end..).unwrap_or_default();
        let near: String = rest.chars().take(40).collect();
        names_a_gpu(&near)
    })
}

/// The words that introduce the version a comparison found.
const FOUND_WORDS: [&str; 7] = ["got", "found", "version", "is", "detected", "=", ":"];

/// Whether the line gives a version of two or three zeros ("0.0", "0.0.0", never an address
/// such as "0.0.0.0" or a version such as "10.0.0") right after a word that introduces what
/// was found ("got 0.0.0", "found version 0.0").
fn found_version_is_zero(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line
        .get(from..)
        .and_then(|rest| rest.find("0.0"))
        .map(|i| i + from)
    {
        from = i + 3;
        let mut end = i + 3;
        if bytes.get(end..end + 2) == Some(b".0") {
            end += 2;
        }
        let before = i.checked_sub(1).and_then(|j| bytes.get(j));
        let after = bytes.get(end);
        let bounded = !before.is_some_and(|b| b.is_ascii_digit() || *b == b'.')
            && !after.is_some_and(|b| {
                b.is_ascii_digit()
                    || *b == b'.' && bytes.get(end + 1).is_some_and(u8::is_ascii_digit)
            });
        let lead = line
            .get(..i)
            .unwrap_or_default()
            .trim_end()
            .to_ascii_lowercase();
        let introduced = FOUND_WORDS.iter().any(|w| {
            lead.strip_suffix(w).is_some_and(|rest| {
                !w.starts_with(|c: char| c.is_ascii_alphabetic())
                    || !rest.ends_with(|c: char| c.is_ascii_alphanumeric())
            })
        });
        if bounded && introduced {
            return true;
        }
    }
    false
}

/// Whether the word at `at` lies in the tag of a container image's name
/// (`paddle/paddle:2.1.3-gpu-cuda11.2-cudnn8`, `nvidia/cuda:12.1.0-cudnn8-runtime`): the tag
/// names what the image was built with, not a library a failure is said of.
fn in_image_tag(line: &str, at: usize) -> bool {
    let Some(before) = line.get(..at) else {
        return false;
    };
    let token_start = before
        .rfind(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '=' | '('))
        .map_or(0, |i| i + 1);
    let token = before.get(token_start..).unwrap_or_default();
    // A repository, a colon, then the tag up to the word: no URL, no path after the colon.
    token.split_once(':').is_some_and(|(repo, tag)| {
        repo.contains('/')
            && !repo.contains("//")
            && !tag.starts_with('/')
            && !tag.contains('/')
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric())
    })
}

/// The parts of the stack a "no" right before says are missing (not the GPU or its memory:
/// "no GPU memory leak", "no GPU usage" say other things).
const NO_BEFORE_SUBJECTS: [Subject; 5] = [
    S::Driver,
    S::DriverLibrary,
    S::KernelModule,
    S::Toolkit,
    S::CudaLibrary,
];

/// Whether the word after a subject makes it a modifier of what the "no" denies ("no driver
/// errors", "no CUDA toolkit issues"): then the part itself is there.
fn said_of_what_follows(after: &str) -> bool {
    let next = after
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_end_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_lowercase();
    [
        "error", "errors", "issue", "issues", "problem", "problems", "warning", "warnings",
        "update", "updates", "change", "changes", "crash", "crashes", "message", "messages",
    ]
    .contains(&next.as_str())
}

/// Whether the text before a subject ends on the word "no", past the vendor's name ("no
/// NVIDIA driver").
fn no_right_before(before: &str) -> bool {
    let mut words = before.split_whitespace().rev();
    let mut last = words.next();
    if last.is_some_and(|w| w.eq_ignore_ascii_case("nvidia")) {
        last = words.next();
    }
    last.is_some_and(|w| w.eq_ignore_ascii_case("no"))
}

/// Bytes between a subject and the phrase that says it works, at most.
const WORKS_REACH: usize = 16;

/// Whether the command a shell refused, named at the end of `before` ("bash: nvcc:",
/// "'nvidia-smi'"), is a tool of the stack (its name holds a subject word of the lexicon). A
/// name that is not a command word (the shell's refusal quoted after prose) counts as one: the
/// failure is then read as before.
fn command_is_a_tool(before: &str) -> bool {
    let quotes: &[char] = &['\'', '"', '`', '‘', '’'];
    let rest = before
        .trim_end()
        .trim_end_matches(':')
        .trim_end()
        .trim_end_matches(quotes);
    let name: String = rest
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || "._/+-".contains(*c))
        .collect::<Vec<char>>()
        .into_iter()
        .rev()
        .collect();
    if name.is_empty() || !name.bytes().any(|b| b.is_ascii_alphabetic()) {
        return true;
    }
    lexicon()
        .automaton
        .find_overlapping_iter(name.as_str())
        .filter_map(|m| LEXICON.get(m.pattern().as_usize()))
        .any(|(_, word, _)| matches!(word, Word::Subject(_)))
}

/// The number a line gives as CUDA's error code ("CUDA error 35", "Cuda error(35)", "CUDA
/// initialization failure with error: 35", "cudaGetDeviceCount returned 100", "error code
/// 209"), read as what it means: the same fact in the runtime's and the driver API's shared
/// numbering, written by programs that print the number and not the name. Only the codes that
/// name a cause of the stack: 35 (the driver older than the runtime), 36 (a call the driver is
/// too old to have), 100 (no device), 209 (no kernel image for the GPU), 222 (PTX newer than the
/// driver's JIT), 34 (the toolkit's stub in place of the driver's library), 999 (the driver
/// cannot start); zero-padded as the CUDA samples' checks print them ("error = 0035").
fn cuda_error_code(line: &str) -> Option<(Subject, Failure)> {
    find_ascii_ci(line, "cuda")?;
    let lower = line.to_ascii_lowercase();
    // Caffe's and glog's check of a CUDA call: "Check failed: error == cudaSuccess (2 vs. 0)".
    if let Some(i) = lower.find("cudasuccess (") {
        let code: String = lower
            .get(i + "cudasuccess (".len()..)
            .unwrap_or_default()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if code == "2" {
            return Some((S::Memory, F::OutOfMemory));
        }
        if let Some(m) = cuda_code_meaning(&code) {
            return Some(m);
        }
    }
    // 2 is memory allocation in both numberings (cudaErrorMemoryAllocation,
    // CUDA_ERROR_OUT_OF_MEMORY), read only right after "CUDA error": a make's "Error 2" on a
    // line that names a .cu file is a build's exit, not CUDA's.
    if let Some(i) = lower.find("cuda error") {
        let rest =
            lower[i + "cuda error".len()..].trim_start_matches([' ', ':', '!', '#', '(', '=']);
        let rest = rest
            .strip_prefix("code")
            .map_or(rest, |r| r.trim_start_matches([' ', ':', '=']));
        if rest
            .strip_prefix('2')
            .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
        {
            return Some((S::Memory, F::OutOfMemory));
        }
    }
    error_numbers(&lower)
        .into_iter()
        .find_map(|code| cuda_code_meaning(&code))
}

/// The numbers a line gives as an error's code, in order: after "error", "failure",
/// "returned", "code" or "status", spelt "error: 35", "error(35)", "error = 35", "error code
/// 35", "error code is 126", "error #35"; never a version ("35.1") nor part of a word.
fn error_numbers(lower: &str) -> Vec<String> {
    numbers_after(lower, &["error", "failure", "returned", "code", "status"])
}

/// The numbers `lower` gives right after one of `keys`, spelt as [`error_numbers`] reads them.
pub(crate) fn numbers_after(lower: &str, keys: &[&str]) -> Vec<String> {
    let b = lower.as_bytes();
    let mut out = Vec::new();
    for key in keys {
        let mut from = 0;
        while let Some(i) = lower.get(from..).and_then(|r| r.find(key)) {
            let mut j = from + i + key.len();
            from = j;
            let skip = |j: &mut usize| {
                while b
                    .get(*j)
                    .is_some_and(|c| matches!(c, b' ' | b':' | b'=' | b'(' | b'#'))
                {
                    *j += 1;
                }
            };
            skip(&mut j);
            if lower.get(j..).is_some_and(|r| r.starts_with("code")) {
                j += 4;
                skip(&mut j);
            }
            if lower.get(j..).is_some_and(|r| r.starts_with("is ")) {
                j += 3;
                skip(&mut j);
            }
            let start = j;
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            if j == start
                || b.get(j)
                    .is_some_and(|c| *c == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))
                || b.get(j).is_some_and(|c| c.is_ascii_alphabetic())
            {
                continue;
            }
            if let Some(n) = lower.get(start..j) {
                out.push(n.to_string());
            }
        }
    }
    out
}

/// What Windows' loader error number says of a DLL, on a line that names one ("The
/// third-party dynamic library (cudnn64_7.dll) ... (error code is 126)", "LoadLibrary failed
/// with error 126", "error 193"): 126 the module or one of its dependencies not found, 127 a
/// procedure it imports not found, 193 a DLL of another architecture, 1114 its initialisation
/// failed.
fn windows_error_code(line: &str) -> Option<Failure> {
    let lower = line.to_ascii_lowercase();
    error_numbers(&lower)
        .into_iter()
        .find_map(|code| match code.as_str() {
            "126" | "193" | "1114" => Some(F::CannotLoad),
            "127" => Some(F::UndefinedSymbol),
            _ => None,
        })
}

/// What a CUDA error number names, for the numbers that name a cause of the stack.
fn cuda_code_meaning(code: &str) -> Option<(Subject, Failure)> {
    // Printed zero-padded by some checks ("Driver API error = 0034").
    Some(match code.trim_start_matches('0') {
        "35" => (S::Driver, F::TooOld),
        // cudaErrorCallRequiresNewerDriver: an API call the installed driver does not have.
        "36" => (S::Driver, F::TooOld),
        "100" => (S::Gpu, F::NotAvailable),
        "209" => (S::GpuArch, F::Unsupported),
        "222" => (S::DriverLibrary, F::Unsupported),
        "34" => (S::CudaLibrary, F::CannotLoad),
        // CUDA_ERROR_UNKNOWN from the driver's initialisation: the driver in a state it cannot
        // start from (its UVM module missing, a resume from suspend), as torch's "CUDA unknown
        // error" says.
        "999" => (S::DriverLibrary, F::Failed),
        // cudaErrorSystemNotReady: the driver is loaded but the system around the GPUs is
        // not (on NVSwitch machines, the fabric manager not running or of another version).
        "802" => (S::Driver, F::NotAvailable),
        _ => return None,
    })
}

/// Whether the line names a GPU architecture as `sm80` / `sm_80` / `SM86`: "sm" and two or
/// three digits standing alone (the lexicon finds `sm_`; the spelling without the underscore
/// is as common in hand-typed reports and some libraries' messages).
fn names_sm_arch(line: &str) -> bool {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line.get(from..).and_then(|r| find_ascii_ci(r, "sm")) {
        let at = from + i;
        from = at + 2;
        if at > 0 && b.get(at - 1).is_some_and(|c| is_word_byte(*c)) {
            continue;
        }
        let digits = b
            .get(at + 2..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let after = b.get(at + 2 + digits);
        if (2..=3).contains(&digits)
            && !after.is_some_and(|c| {
                c.is_ascii_digit() || (c.is_ascii_alphabetic() && !matches!(c, b'a' | b'f'))
            })
        {
            return true;
        }
    }
    false
}

/// Whether the line says an architecture is absent from a build: `sm_XX` or `compute_XX`
/// right after "no", "without", "lacks" or "missing" ("the image's torch has no sm_60
/// kernels", "built without sm_120").
fn arch_absent(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    tokens.windows(2).any(|pair| {
        let word = pair[0].trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let arch = pair[1].trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        matches!(word, "no" | "without" | "lacks" | "lacking" | "missing")
            && (arch.starts_with("sm_") || arch.starts_with("compute_"))
    })
}

/// Whether the text names a card, by its model line or as a data-centre card or architecture
/// ([`names_card_model`], [`names_datacenter_card`]).
fn names_card(text: &str) -> bool {
    names_card_model(text) || names_datacenter_card(text)
}

/// Whether the text names a GPU: a card ([`names_card`]) or an architecture as `sm_XX`.
fn names_a_gpu(text: &str) -> bool {
    names_card(text) || names_sm_arch(text)
}

/// Whether the line names an NVIDIA card by its model line (`Tesla K40m`, `GeForce GTX 1080`,
/// `Quadro M2200`, `RTX 5090`, `TITAN V`).
fn names_card_model(line: &str) -> bool {
    [
        "tesla ", "geforce", "quadro ", "rtx ", "rtx-", "gtx ", "gtx-", "titan ",
    ]
    .iter()
    .any(|m| find_ascii_ci(line, m).is_some())
}

/// Whether a word is a GeForce card's number without its series (`4090`, `3060`, `1080`):
/// four digits, the generation, a zero, the tier from 5 to 9, a zero.
fn is_geforce_number(word: &str) -> bool {
    matches!(word.as_bytes(), [b'1'..=b'5', b'0', b'5'..=b'9', b'0'])
}

/// Whether the line names a data-centre card or an architecture by name ("A100", "H800",
/// "Ampere"), as attention kernels state what they require.
fn names_datacenter_card(line: &str) -> bool {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .any(is_datacenter_model)
        || [
            "ampere",
            "hopper",
            "ada lovelace",
            "blackwell",
            "turing",
            "volta",
        ]
        .iter()
        .any(|a| find_ascii_ci(line, a).is_some())
}

/// Whether a word is a data-centre or workstation card's model, in either case: A100, H200,
/// L40, V100, B200, P100 (a letter and two or three digits), K80 (two), the RTX A4000 to A6000
/// (four), and the one-digit T4 and L4 ("T5" is a language model, "H264" a video codec). A
/// lower-case "v" and two digits is a version ("v17.10"), not a V-series card.
pub fn is_datacenter_model(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let letter = first.to_ascii_uppercase();
    let digits = chars.as_str();
    if digits.is_empty() || !digits.bytes().all(|d| d.is_ascii_digit()) {
        return false;
    }
    if first == 'v' && digits.len() != 3 {
        return false;
    }
    if letter == 'H' && matches!(digits, "264" | "265") {
        return false;
    }
    match (letter, digits.len()) {
        ('T' | 'L', 1) => digits == "4",
        ('A' | 'H' | 'L' | 'V' | 'B' | 'P', 2..=3) => true,
        ('A', 4) => true,
        ('K', 2) => true,
        _ => false,
    }
}

/// Bytes between "no" and "found" in "no <thing> found", at most.
const NOTHING_FOUND_REACH: usize = 40;

/// Whether the line says "no <thing> found" ("No CUDA toolkit found", "no libcudnn found in
/// the path"): the lexicon's "not found" with its thing in between.
fn nothing_found(line: &str) -> bool {
    // std's substring search first: most lines a clause reads hold no "found".
    let Some(found) = line.find(" found") else {
        return false;
    };
    let lower = line.get(..found).unwrap_or_default().to_ascii_lowercase();
    let b = lower.as_bytes();
    lower.match_indices("no ").any(|(i, _)| {
        (i == 0 || !b.get(i - 1).is_some_and(|c| is_word_byte(*c)))
            && found - i <= NOTHING_FOUND_REACH
            && !lower.get(i..).unwrap_or_default().contains(['.', ',', ';'])
    })
}

/// Whether a line speaks of several GPUs working together ("two GPUs", "multi-GPU", 多卡,
/// 两卡): a hang said of them is the collectives' (NCCL's) first suspect.
fn multi_gpu(line: &str) -> bool {
    multi_gpu_by_phrase(line) || crate::prose::several_gpus_in(line)
}

fn multi_gpu_by_phrase(line: &str) -> bool {
    const WORDS: [&str; 18] = [
        "multi-gpu",
        "multi gpu",
        "multiple gpus",
        "two gpus",
        "2 gpus",
        "多卡",
        "两卡",
        "双卡",
        "两张卡",
        "多张卡",
        "多gpu",
        "multi-node",
        // A model split over GPUs (vLLM's and SGLang's `--tensor-parallel-size`, DeepSpeed's
        // and Megatron's pipeline stages) runs its collectives between them.
        "tensor-parallel",
        "tensor_parallel",
        "tensor parallel",
        "pipeline-parallel",
        "pipeline_parallel",
        "pipeline parallel",
    ];
    let lower = line.to_ascii_lowercase();
    // "with multiple 4090s", "on multiple A100", "multiple RTX 3090": several cards of a model.
    let several_cards = lower.match_indices("multiple ").any(|(i, w)| {
        let rest = &line[i + w.len()..];
        let next = rest
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or_default();
        names_card_model(crate::scanner::shorten_ref(rest, 8))
            || is_datacenter_model(next)
            || is_geforce_number(next.trim_end_matches(['s', 'S']))
    });
    several_cards || WORDS.iter().any(|w| lower.contains(w))
}

/// An identifier of CUDA's own headers that the compiler does not know ("identifier
/// \"__shfl_down_sync\" is undefined", "'cudaHostRegisterReadOnly' was not declared in this
/// scope", "use of undeclared identifier 'cuTensorMapEncodeTiled'"): CUDA's intrinsics
/// (`__*_sync`, `__syncwarp`, ...) and API (`cuda*`, `cu[A-Z]*`, `CUDA_*`, `CU_*`, the
/// libraries' `cublas*`, `cudnn*`...) come with the toolkit, so a toolkit older than the code
/// compiles it (or an older one found first).
fn cuda_identifier_undefined(line: &str) -> Option<(Subject, Failure)> {
    if !(line.contains("identifier") || line.contains("declared")) {
        return None;
    }
    let lower = line.to_ascii_lowercase();
    let (at, after) = [
        ("identifier \"", "\" is undefined"),
        ("undeclared identifier '", "'"),
        ("'", "' was not declared in this scope"),
        ("‘", "’ was not declared in this scope"),
    ]
    .iter()
    .find_map(|(open, close)| {
        if *open == "'" || *open == "‘" {
            // The quote that opens the name closes nothing before it.
            let end = lower.find(close)?;
            let start = lower.get(..end)?.rfind(open)? + open.len();
            return Some((start, end));
        }
        let start = lower.find(open)? + open.len();
        let end = start + lower.get(start..)?.find(close)?;
        Some((start, end))
    })?;
    let name = line.get(at..after)?;
    let intrinsic = name.starts_with("__")
        && [
            "_sync",
            "syncwarp",
            "activemask",
            "ldg",
            "nanosleep",
            "hmul",
            "hadd",
            "half2",
            "bfloat16",
            "nv_bfloat",
        ]
        .iter()
        .any(|k| name.contains(k));
    let api = name.starts_with("cuda")
        || name.starts_with("CUDA_")
        || name.starts_with("CU_")
        || name.starts_with("cublas")
        || name.starts_with("cudnn")
        || name.starts_with("cusparse")
        || name.starts_with("nv_bfloat")
        || (name.starts_with("cu") && name.chars().nth(2).is_some_and(|c| c.is_ascii_uppercase()));
    (intrinsic || api).then_some((S::Toolkit, F::TooOld))
}

/// An execution-provider list without CUDA's (ONNX Runtime and the libraries built on it:
/// "Available providers: ['AzureExecutionProvider', 'CPUExecutionProvider']", "Available
/// providers: CPUExecutionProvider, . Fallback to cpu!"), or CUDA's said to be missing from it:
/// the installed build has no CUDA provider.
fn providers_without_cuda(line: &str) -> Option<(Subject, Failure)> {
    find_ascii_ci(line, "provider")?;
    let lower = line.to_ascii_lowercase();
    // In a user's words: the execution providers offered without CUDA among them ("execution
    // providers: no cuda option"), what ONNX Runtime's CPU package offers.
    if lower.contains("execution provider")
        && [
            "no cuda",
            "not cuda",
            "without cuda",
            "cuda missing",
            "cuda is missing",
        ]
        .iter()
        .any(|k| lower.contains(k))
    {
        return Some((S::Framework, F::NotCompiled));
    }
    // "only `CPUExecutionProvider` is available": the CPU package's one provider.
    if let Some(i) = lower.find("cpuexecutionprovider") {
        let before = lower
            .get(..i)
            .unwrap_or_default()
            .trim_end_matches(|c: char| !c.is_alphanumeric());
        if before
            .split_whitespace()
            .next_back()
            .is_some_and(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == "only")
        {
            return Some((S::Framework, F::NotCompiled));
        }
    }
    let listed = ["available provider", "available_provider"]
        .iter()
        .find_map(|k| lower.find(k))?;
    let cuda = lower.contains("cudaexecutionprovider");
    let missing = ["missing", "not in", "not found", "not available"]
        .iter()
        .any(|k| lower.contains(k));
    // The providers listed as available are those after the words ("['CUDAExecutionProvider']
    // does not contain a subset of available providers ['CPUExecutionProvider']"): CUDA asked
    // for before them is not among them.
    let offered = lower.get(listed..).unwrap_or_default();
    let cpu_only =
        offered.contains("cpuexecutionprovider") && !offered.contains("cudaexecutionprovider");
    (cpu_only || (cuda && missing)).then_some((S::Framework, F::NotCompiled))
}

/// Verbs that state what CUDA something asks for, right before the CUDA they name.
const REQUIRING_VERBS: [&str; 5] = ["needs", "need", "requires", "require", "required"];

/// The CUDA versions a line names, each with whether it is stated as a requirement
/// (`CUDA >= 11.8`, `cuda>=12.4`) or as what is there (`CUDA 11.2`, `CUDA Version: 12.2`), as
/// (major, minor).
fn cuda_versions(line: &str) -> Vec<((u32, u32), bool)> {
    let lower = line.to_ascii_lowercase();
    let mut out = Vec::new();
    for (i, _) in lower.match_indices("cuda") {
        let b = lower.as_bytes();
        if i > 0 && b.get(i - 1).is_some_and(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        let rest = lower.get(i + 4..).unwrap_or_default();
        let rest = rest.strip_prefix(" version").unwrap_or(rest);
        let rest = rest.trim_start_matches([' ', ':']);
        // Asked for by a verb right before ("needs CUDA 12.1", "requires CUDA 12.1").
        let asked = lower
            .get(..i)
            .unwrap_or_default()
            .split_whitespace()
            .next_back()
            .is_some_and(|w| REQUIRING_VERBS.contains(&w));
        let mut required = asked || rest.starts_with(">=") || rest.starts_with('≥');
        let rest = rest.trim_start_matches(['>', '=', '≥', ' ']);
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        // A floor said after the number ("CUDA 12.1 or later", "CUDA 12.1+").
        let after = rest.get(number.len()..).unwrap_or_default();
        required |= after.starts_with('+')
            || [" or later", " or newer", " or higher", " or above"]
                .iter()
                .any(|k| after.starts_with(k));
        let mut parts = number.split('.');
        let (Some(major), minor) = (
            parts.next().and_then(|m| m.parse::<u32>().ok()),
            parts
                .next()
                .and_then(|m| m.parse::<u32>().ok())
                .unwrap_or(0),
        ) else {
            continue;
        };
        // CUDA's majors run from 1 to the tens; a larger number is something else (a build
        // number, a driver version).
        if (1..=30).contains(&major) {
            out.push(((major, minor), required));
        }
    }
    out
}

/// Whether the line states a CUDA requirement ("CUDA >= 11.8") above a CUDA it names as there
/// ("installed CUDA 11.2"): the CUDA the machine runs is too old for what asks for it.
fn cuda_below_requirement(line: &str) -> bool {
    let versions = cuda_versions(line);
    let Some(required) = versions.iter().filter(|(_, r)| *r).map(|(v, _)| *v).max() else {
        return false;
    };
    versions.iter().any(|(v, r)| !r && *v < required)
}

/// Whether the line gives the CUDA versions a program supports and then what the machine has
/// ("yours is", "you have", "found"), newer in its major than every supported one.
fn stack_newer_than_supported(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let Some(at) = ["yours is", "you have", "found"]
        .iter()
        .filter_map(|k| lower.find(k))
        .min()
    else {
        return false;
    };
    let (before, after) = lower.split_at(at);
    let supported: Vec<u32> = cuda_versions(before).iter().map(|((m, _), _)| *m).collect();
    let Some(&max) = supported.iter().max() else {
        return false;
    };
    cuda_versions(after)
        .first()
        .is_some_and(|((major, _), _)| *major > max)
}

/// Bytes between a framework's CUDA build field and the `None` it shows, at most.
const BUILD_NONE_REACH: usize = 40;

/// A framework that reports the CUDA it was built with as none (`torch.version.cuda` printed
/// as `None`, collect_env's "CUDA used to build PyTorch: None", "CUDA version: None"), with no
/// version printed between the field and its `None`: a build without CUDA.
fn cuda_build_none(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["version.cuda", "cuda used to build", "cuda version:"]
        .iter()
        .any(|field| {
            lower.match_indices(field).any(|(i, _)| {
                let after = lower.get(i + field.len()..).unwrap_or_default();
                let near = after
                    .get(..BUILD_NONE_REACH.min(after.len()))
                    .unwrap_or(after);
                // `None` as the field's value: no version printed between them.
                near.match_indices("none").any(|(j, _)| {
                    let b = near.as_bytes();
                    let word_before = j
                        .checked_sub(1)
                        .and_then(|k| b.get(k))
                        .is_some_and(|c| is_word_byte(*c));
                    let word_after = b.get(j + 4).is_some_and(|c| is_word_byte(*c));
                    let version_between = near
                        .get(..j)
                        .unwrap_or_default()
                        .bytes()
                        .any(|c| c.is_ascii_digit());
                    !(word_before || word_after || version_between)
                })
            })
        })
}

/// A program's list of devices to choose from that holds the CPU and not CUDA ("invalid
/// choice: 'cuda' (choose from 'cpu')"): the installed build offers no CUDA device.
fn choices_without_cuda(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let Some(i) = lower.find("choose from") else {
        return false;
    };
    let list = lower.get(i..).unwrap_or_default();
    let list = list.split(')').next().unwrap_or(list);
    list.contains("cpu") && !list.contains("cuda")
}

/// A toolkit file whose path begins at the root where `$CUDA_HOME/` should be
/// (`'/lib64/libcudart.so'`, ` /bin/nvcc`): the build joined an empty CUDA_HOME to it.
fn empty_toolkit_root(line: &str) -> Option<(Subject, Failure)> {
    if !(line.contains("/lib64/") || line.contains("/bin/nvcc") || line.contains("/include/")) {
        return None;
    }
    let b = line.as_bytes();
    [
        "/lib64/libcudart",
        "/lib64/libcuda.",
        "/bin/nvcc",
        "/include/cuda_runtime",
    ]
    .iter()
    .any(|p| {
        line.match_indices(p).any(|(i, _)| {
            i == 0
                || b.get(i - 1)
                    .is_some_and(|c| matches!(c, b'\'' | b'"' | b' ' | b'=' | b'`'))
        })
    })
    .then_some((S::Toolkit, F::NotFound))
}

/// A compiled module that lacks an attribute its Python side uses ("module 'X' has no
/// attribute 'Y'"): torch's C module without its private CUDA bindings (`_cuda_setDevice`,
/// `_cuda_getDeviceCount`) is a build without CUDA; jaxlib (jax's compiled half) without what
/// jax asks of it is the other version of the pair.
fn missing_attribute(line: &str) -> Option<(Subject, Failure)> {
    // Python's own wording, always in lower case.
    let at = line.find("has no attribute")?;
    let (before, after) = (line.get(..at)?, line.get(at + "has no attribute".len()..)?);
    let attribute = after
        .trim_start_matches([' ', '\'', '"', '`'])
        .split(['\'', '"', '`', ' '])
        .next()
        .unwrap_or_default();
    let module = before
        .rsplit("module")
        .next()
        .unwrap_or_default()
        .trim_matches([' ', '\'', '"', '`']);
    if module.starts_with("jaxlib") {
        return Some((S::Companion, F::Mismatch));
    }
    let a = attribute.to_ascii_lowercase();
    if a.starts_with("_cuda") && module.contains("._C") {
        return Some((S::Framework, F::NotCompiled));
    }
    None
}

/// Packages of the CUDA/ML stack and the libraries they build on, by their import name: a
/// name one installed package asks of another of these that the other lacks is two releases
/// that were not made for each other (numpy 2 without a name a numba release still uses,
/// transformers older than the peft that imports from it).
const STACK_PACKAGES: &[&str] = &[
    "numpy",
    "scipy",
    "sympy",
    "typing_extensions",
    "torch",
    "torchvision",
    "torchaudio",
    "jax",
    "jaxlib",
    "tensorflow",
    "keras",
    "transformers",
    "tokenizers",
    "accelerate",
    "diffusers",
    "peft",
    "huggingface_hub",
    "safetensors",
    "triton",
    "xformers",
    "flash_attn",
    "bitsandbytes",
    "deepspeed",
    "vllm",
    "numba",
    "cupy",
    "onnx",
    "onnxruntime",
    "tensorrt",
    "cuda",
    "pynvml",
    "mmcv",
    "paddle",
];

/// A name a module of the stack lacks, as Python says it ("AttributeError: module 'numpy' has
/// no attribute 'row_stack'", "ImportError: cannot import name 'TypeIs' from
/// 'typing_extensions'"): the module's top package and the name. Only a module named as a
/// module: an object's missing attribute ("'Tensor' object has no attribute 'x'") is the
/// program's, and a circular import ("from partially initialized module") is the program's
/// own files.
pub fn api_gap(line: &str) -> Option<(&str, &str)> {
    let (module, name) = if let Some(at) = line.find("has no attribute") {
        let before = line.get(..at)?.trim_end();
        let start = before.rfind("module ")?;
        let (module, used) = quoted(before.get(start + "module ".len()..)?)?;
        // The module's quoted name ends right before "has no attribute".
        if start + "module ".len() + used != before.len() {
            return None;
        }
        let (name, _) = quoted(line.get(at + "has no attribute".len()..)?)?;
        (module, name)
    } else if line.contains("cannot import name") {
        let (name, module) = cannot_import(line)?;
        (module, name)
    } else {
        // A submodule the installed release does not have ("No module named 'torch._six'",
        // "'triton.ops'"), as a name its package lacks. Not a compiled part (`mmcv._ext`,
        // `torch._C`, `*_cuda`): a package built without its compiled ops lacks those.
        let at = line.find("No module named")?;
        let (module, _) = quoted(line.get(at + "No module named".len()..)?)?;
        let (package, name) = module.rsplit_once('.')?;
        if is_compiled_part(name) {
            return None;
        }
        (package, name)
    };
    let top = module.split('.').next().unwrap_or(module);
    (STACK_PACKAGES.contains(&top) && !name.is_empty()).then_some((top, name))
}

/// Whether the line names a package's library built for one CUDA by a tag in its file name
/// (`libbitsandbytes_cuda122.so`, `..._cuda118_nocublaslt.so`, `xyz_cu121.dll`).
fn names_cuda_tagged_library(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["_cuda", "_cu"].iter().any(|tag| {
        lower.match_indices(tag).any(|(i, _)| {
            let rest = &lower[i + tag.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let tail = &rest[digits..];
            let file_end = tail
                .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ')' | ','))
                .unwrap_or(tail.len());
            let tail = &tail[..file_end];
            let stem = lower[..i]
                .rsplit(['/', '\\', ' ', '\''])
                .next()
                .unwrap_or_default();
            (2..=3).contains(&digits)
                && ((stem.starts_with("lib") && (tail.ends_with(".so") || tail.contains(".so.")))
                    || tail.ends_with(".dll"))
        })
    })
}

/// Whether a module's last name is that of a compiled part (`_C`, `_ext`, `awq_ext`,
/// `exllamav2_kernels`, `autogptq_marlin_cuda`, apex's `amp_C`), which a build without its
/// compiled ops lacks.
fn is_compiled_part(name: &str) -> bool {
    ["_cuda", "_ext", "_C", "_cpp", "_ops", "_kernels"]
        .iter()
        .any(|k| name.ends_with(k))
}

/// A package's compiled part that Python cannot find ("No module named 'awq_ext'", "'mmcv._ext'",
/// "'exllamav2_kernels'"): the package was built or installed without its CUDA ops. torch's
/// own `torch._C` missing is a broken install or a source tree on the path, not a build
/// choice.
fn compiled_part_missing(line: &str) -> bool {
    let Some(at) = line.find("No module named") else {
        return false;
    };
    let rest = line[at + "No module named".len()..].trim_start();
    let Some(q) = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))
    else {
        return false;
    };
    let Some(module) = rest[1..].split(q).next() else {
        return false;
    };
    let name = module.rsplit('.').next().unwrap_or(module);
    !module.starts_with("torch.") && is_compiled_part(name)
}

/// The quoted name at the start of `s` (after spaces), and the bytes of `s` it and its quotes
/// take: `'_C' is not defined` -> `("_C", 4)`.
fn quoted(s: &str) -> Option<(&str, usize)> {
    let s0 = s.trim_start();
    let q = s0
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let body = s0.get(1..)?;
    let end = body.find(q)?;
    Some((body.get(..end)?, s.len() - s0.len() + 1 + end + 1))
}

/// A package's compiled part that its own code imported and did not get ("NameError: name
/// '_C' is not defined", "cannot import name '_C' from 'groundingdino'"): the package guards
/// the import and goes on without it, which source-built packages do when their setup.py
/// skipped the CUDA extension because it found no CUDA toolkit (no `CUDA_HOME`, no nvcc) at
/// install time. torch's own `_C` is a broken install, not this.
fn compiled_part_skipped(line: &str) -> bool {
    if let Some(at) = line.find("NameError: name ") {
        let rest = &line[at + "NameError: name ".len()..];
        return quoted(rest).is_some_and(|(name, used)| {
            is_compiled_part(name) && rest[used..].trim_start().starts_with("is not defined")
        });
    }
    cannot_import(line)
        .is_some_and(|(name, module)| is_compiled_part(name) && !module.starts_with("torch"))
}

/// The name and the module of Python's "cannot import name 'X' from 'Y'".
fn cannot_import(line: &str) -> Option<(&str, &str)> {
    let at = line.find("cannot import name")?;
    let rest = line.get(at + "cannot import name".len()..)?;
    let (name, used) = quoted(rest)?;
    let rest = rest.get(used..)?.trim_start().strip_prefix("from")?;
    Some((name, quoted(rest)?.0))
}

/// The installed package a Python traceback frame runs in (`File ".../site-packages/numba_cuda/
/// numba/cuda/np/arrayobj.py", line 12, in <module>`): the directory right below
/// `site-packages` or `dist-packages`. `None` for any other line; `Some("")` for a frame of
/// the program's own files, which is no installed package.
pub fn frame_package(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("File ")?;
    let path = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or(quoted),
        // IPython's and Jupyter's frames: `File ~/env/lib/python3.11/site-packages/x/y.py:40,
        // in f`, the path unquoted with its line after a colon.
        None => {
            let path = rest.split_whitespace().next().unwrap_or_default();
            let path = path
                .trim_end_matches(',')
                .trim_end_matches(|c: char| c.is_ascii_digit());
            path.strip_suffix(':').filter(|p| p.ends_with(".py"))?
        }
    };
    // Python's own import machinery (`<frozen importlib._bootstrap>`) runs between the
    // importer and the import: not a frame of anyone's code.
    if path.starts_with('<') {
        return None;
    }
    let Some(at) = path
        .find("site-packages")
        .or_else(|| path.find("dist-packages"))
    else {
        return Some("");
    };
    let below = path
        .get(at + "site-packages".len()..)?
        .trim_start_matches(['/', '\\']);
    Some(below.split(['/', '\\']).next().unwrap_or_default())
}

/// Whether a message stops on the word that introduces a name ("please set environment
/// variable", "set the variable:"): a terminal or a build's message wrapped it before the name,
/// and the next line begins with it ([`begins_with_a_name`]).
pub fn ends_before_a_name(line: &str) -> bool {
    let end = line.trim_end_matches([' ', ':']);
    let Some(start) = end.len().checked_sub("variable".len()) else {
        return false;
    };
    end.get(start..)
        .is_some_and(|w| w.eq_ignore_ascii_case("variable"))
}

/// Whether a line begins with an environment variable's name (`CUDNN_HOME to ...`, `CUDA_HOME.`):
/// capitals, digits and underscores, at least two, then the end, a space or punctuation.
pub fn begins_with_a_name(line: &str) -> bool {
    let name = line
        .bytes()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
        .count();
    // A logger's level begins its own line, not a wrapped name.
    let level = [
        "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "FATAL", "NOTE", "TRACE",
    ]
    .contains(&line.get(..name).unwrap_or_default());
    name >= 2
        && !level
        && line
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_uppercase() || *b == b'_')
        && !line
            .as_bytes()
            .get(name)
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// What every frame line [`frame_package`] reads holds, for the scan's gate.
pub fn frame_literals() -> impl Iterator<Item = &'static str> {
    // A quoted frame's path ends `.py"`; an IPython frame's is named only by where it lies.
    [".py\"", "site-packages", "dist-packages"].into_iter()
}

/// The installed package that asked `module` for a name, from the traceback's frames (oldest
/// first): the last frame outside `module`'s own package (a module's own `__getattr__` raises
/// for the caller, as numpy's does for its removed names). `None` when that frame is the
/// program's own file (its own code asked) or every frame is the module's (it raised about its
/// own internals).
pub fn caller_package<'a>(frames: &'a [String], module: &str) -> Option<&'a str> {
    let caller = frames
        .iter()
        .rev()
        .map(|f| package_name(f))
        .find(|p| *p != module)?;
    (!caller.is_empty()).then_some(caller)
}

/// A directory under site-packages as the package it holds (`numpy-1.26.4.dist-info`,
/// `six.py`).
fn package_name(dir: &str) -> &str {
    let dir = dir.trim_end_matches(".py");
    dir.split('-').next().unwrap_or(dir)
}

/// A package whose plain name is its CPU flavour, the CUDA flavour carrying a suffix
/// (`onnxruntime` / `onnxruntime-gpu`, `paddlepaddle` / `paddlepaddle-gpu`, `faiss` /
/// `faiss-gpu`, `mxnet` / `mxnet-cu112`), named as installed: after `install`, or with its
/// version (`==1.16`, a `pip list` row).
/// Packages whose plain name is the CPU flavour (see [`cpu_flavour_installed`]).
const CPU_FLAVOURS: [&str; 4] = ["onnxruntime", "paddlepaddle", "faiss", "mxnet"];

fn cpu_flavour_installed(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    CPU_FLAVOURS.iter().any(|name| {
        lower.match_indices(name).any(|(i, _)| {
            let b = lower.as_bytes();
            let before_ok = i == 0 || !b.get(i - 1).is_some_and(|c| is_word_byte(*c) || *c == b'-');
            let rest = lower.get(i + name.len()..).unwrap_or_default();
            let after_ok =
                !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || "-_.[".contains(c));
            // The word before the name, past any flags ("pip install -U onnxruntime"), is
            // `install` (not `uninstall`).
            let by_install = lower
                .get(..i)
                .unwrap_or_default()
                .split_whitespace()
                .rev()
                .find(|t| !t.starts_with('-'))
                == Some("install");
            let installed = by_install
                || rest.starts_with("==")
                || rest
                    .trim_start_matches(' ')
                    .starts_with(|c: char| c.is_ascii_digit())
                    && rest.starts_with(' ');
            before_ok && after_ok && installed
        })
    })
}

/// The packages whose builds with and without CUDA conda lists under one name.
const FRAMEWORK_PACKAGES: [&str; 9] = [
    "pytorch",
    "torch",
    "libtorch",
    "tensorflow",
    "tensorflow-base",
    "jaxlib",
    "paddlepaddle",
    "mxnet",
    "onnxruntime",
];

/// Whether a line is a package list's row (`name version build [channel]`, as `conda list`
/// prints it) of a framework whose build string names a CPU build: a part `cpu` between its
/// underscores (`py3.11_cpu_0`) or a first part that starts with it (`cpu_generic_...`).
fn cpu_build_listed(line: &str) -> bool {
    let mut t = line.split_whitespace();
    let (Some(name), Some(version), Some(build)) = (t.next(), t.next(), t.next()) else {
        return false;
    };
    FRAMEWORK_PACKAGES
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p))
        && version.starts_with(|c: char| c.is_ascii_digit())
        && build
            .to_ascii_lowercase()
            .split('_')
            .enumerate()
            .any(|(i, part)| part == "cpu" || (i == 0 && part.starts_with("cpu")))
}

/// A call a user pastes with the answer it gave, and the failure that answer states: the
/// GPU not available, the build without CUDA, no GPU listed.
const CALL_ANSWERS: [(&str, &str, Failure); 4] = [
    ("is_available()", "false", F::NotAvailable),
    ("with_cuda()", "false", F::NotCompiled),
    ("list_physical_devices('gpu')", "[]", F::NotAvailable),
    ("list_physical_devices(\"gpu\")", "[]", F::NotAvailable),
];

/// Where `needle` (ASCII) first occurs in `hay`, compared ASCII case-insensitively.
pub(crate) fn find_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Every word of the lexicon (for the scan's gate, which must see whatever a clause could).
pub fn lexicon_words() -> impl Iterator<Item = &'static str> {
    LEXICON
        .iter()
        .map(|(w, _, _)| *w)
        .chain(crate::placement::relation_words())
}

/// Whether a line names a container runtime that binds the host's NVIDIA driver only when
/// asked (Singularity's and Apptainer's `--nv`, `--nvccli`). Docker's and Kubernetes' NVIDIA
/// runtime binds it whenever it hands over a GPU, so a driver too old there is the host's.
pub fn binds_driver_on_request(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["singularity", "apptainer"]
        .iter()
        .any(|r| lower.contains(r))
}

/// Whether a line is a Dockerfile's `FROM` instruction naming an image (`FROM
/// nvidia/cuda:12.4.1-runtime-ubuntu22.04`, `FROM ubuntu:22.04 AS build`): a report that
/// quotes its Dockerfile runs in the container built from it. The instruction is upper case
/// at the line's start and names an image by repository or tag, which English prose's "from"
/// does not.
pub fn is_dockerfile_from(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("FROM ") else {
        return false;
    };
    let image = rest
        .split_whitespace()
        .find(|w| !w.starts_with("--"))
        .unwrap_or_default();
    !image.is_empty()
        && (image.contains(':') || image.contains('/'))
        && image
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/:@$".contains(&b))
}

/// The lexicon's words for WSL: the Linux of a Windows machine, whose driver libraries Windows
/// places in `/usr/lib/wsl/lib`; no container runtime stands between it and the driver.
const WSL_WORDS: [&str; 5] = [
    "/usr/lib/wsl",
    "microsoft-standard",
    "@desktop-",
    "wsl2",
    "wsl",
];

/// Whether a line that speaks of a container, Kubernetes or WSL names something besides WSL
/// (Docker Desktop on WSL2 is Docker's).
pub fn names_container_beside_wsl(line: &str) -> bool {
    let mut lower = line.to_lowercase();
    for w in WSL_WORDS {
        lower = lower.replace(w, " ");
    }
    words(&lower).has(S::Container)
}

/// Whether the line is a container's own: a shell prompt in one (`root@098b49afe624:/#`, the
/// host name Docker gives a container being its 12-hex-digit id) or a line of Docker Compose's
/// log, prefixed by its service (`qna-transformers_1  | `, `api-1  | `).
pub fn is_container_line(line: &str) -> bool {
    let t = line.trim_start_matches(['>', ' ']);
    if let Some(at) = t.find('@') {
        let user = t.get(..at).unwrap_or_default();
        let host = t.get(at + 1..).unwrap_or_default();
        if !user.is_empty()
            && user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && host.len() > 12
            && host.as_bytes().get(12) == Some(&b':')
            && host
                .bytes()
                .take(12)
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return true;
        }
    }
    // Compose: the service, a separator and its index, spaces, then the bar.
    let Some((service, rest)) = line.split_once(" |") else {
        return false;
    };
    let service = service.trim_end();
    let Some(index_at) = service.rfind(['_', '-']) else {
        return false;
    };
    let (name, index) = (
        service.get(..index_at).unwrap_or_default(),
        service.get(index_at + 1..).unwrap_or_default(),
    );
    !name.is_empty()
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        && !index.is_empty()
        && index.len() <= 2
        && index.bytes().all(|b| b.is_ascii_digit())
        && (rest.is_empty() || rest.starts_with(' '))
}

/// Whether the line holds any word of the lexicon: the cheap first test.
pub fn mentions_any(line: &str) -> bool {
    lexicon().automaton.is_match(line)
}

/// Python's exceptions that a program raises about its own data: an index, a key, a value, a
/// division. Raised last in a log and naming nothing of the stack, they are the program's
/// failure, and a CUDA error before them is where it surfaced first (an index out of range
/// reported by cuBLAS as an allocation failure). Errors about objects (`AttributeError`,
/// `TypeError` on a `None`) are left out: they follow as often from a library that failed to
/// load as from the program.
const PROGRAM_ERRORS: [&str; 4] = ["IndexError", "KeyError", "ValueError", "ZeroDivisionError"];

/// Whether a line reports a CUDA call's own error ("CUDA error: ...", `cudaErrorNoDevice`,
/// `CUDA_ERROR_NO_DEVICE`, "cuda runtime error (100)"): only a build with CUDA makes the call.
pub fn reports_cuda_error(line: &str) -> bool {
    [
        "cuda error",
        "cudaerror",
        "cuda_error",
        "cuda runtime error",
    ]
    .iter()
    .any(|k| find_ascii_ci(line, k).is_some())
}

/// A Python exception a line begins with (`IndexError: ...`, `pkg.mod.ShapeError: ...`): its
/// class without the module path, and its message.
pub fn exception(line: &str) -> Option<(&str, &str)> {
    let (head, message) = line.split_once(':').unwrap_or((line, ""));
    if head.is_empty()
        || head.contains(' ')
        || !(head.ends_with("Error") || head.ends_with("Exception"))
    {
        return None;
    }
    Some((head.rsplit('.').next().unwrap_or(head), message.trim()))
}

/// Whether a line is a program's own exception with a message that names nothing of the
/// stack (`IndexError: index out of range in self`, `KeyError: 'label'`), given its words.
pub fn is_program_error(line: &str, w: &Words) -> bool {
    exception(line).is_some_and(|(class, message)| {
        PROGRAM_ERRORS.contains(&class) && !message.is_empty() && w.subjects.is_empty()
    })
}

/// How serious the line says it is.
pub fn severity(line: &str) -> Severity {
    let lower_has = |needle: &str| find_ascii_ci(line, needle).is_some();
    // A Python exception line: "SomeError: ..." / "pkg.mod.SomeException: ...".
    let head = line.split(':').next().unwrap_or_default();
    let exception_head = !head.contains(' ')
        && (head.ends_with("Error") || head.ends_with("Exception") || head.ends_with("Failure"));
    if line.contains("NCCL INFO")
        || line.contains("level=INFO")
        || line.starts_with("INFO")
        // A logger's "I " before its timestamp; "I installed..." is a person writing.
        || line
            .strip_prefix("I ")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        || line.starts_with("[I ")
        || line.contains(" INFO ")
    {
        return Severity::Info;
    }
    if exception_head
        || lower_has("fatal")
        || line.contains("#error")
        || lower_has("error:")
        || line.starts_with("E ")
        || line.starts_with("[E ")
        || line.starts_with("ERROR")
        || line.starts_with("CRITICAL")
        || line.starts_with("FAILED")
        || line.starts_with("terminate called")
    {
        return Severity::Fatal;
    }
    if lower_has("warning")
        || line.starts_with("W ")
        || line.starts_with("[W ")
        || line.starts_with("WARN")
        || lower_has(" warn ")
        || lower_has("nccl warn")
    {
        return Severity::Warning;
    }
    if lower_has("error") || lower_has("failed") || line.contains("报错") || line.contains("失败")
    {
        return Severity::Error;
    }
    Severity::Plain
}

/// The owner of an unresolved symbol, from its name: the driver's entry points (`cu*` of
/// libcuda), a CUDA library's (`cublas*`, `cudnn*`...), or a C++ name of a framework.
fn symbol_category(line: &str) -> Category {
    let lower = line.to_ascii_lowercase();
    let sym = [
        "undefined symbol:",
        "undefined reference to",
        "symbol not found:",
        "symbol lookup for",
        "procedure entry point",
        "missing function:",
    ]
    .iter()
    .find_map(|k| lower.find(k).map(|i| i + k.len()))
    .and_then(|i| line.get(i..))
    .map(|rest| {
        rest.trim_start_matches([' ', '`', '\'', '"'])
            .split(|c: char| c.is_whitespace() || c == ',' || c == '\'' || c == '`')
            .next()
            .unwrap_or_default()
    })
    .or_else(|| named_function_not_found(line))
    .unwrap_or_default();
    if lower.contains("/stubs/") || lower.contains("\\stubs\\") {
        // The toolkit's link-time stub loaded at run time in place of the real library.
        return Category::LibraryPath;
    }
    if sym.starts_with("nccl") {
        // ncclCommRegister...: NCCL's own entry points, so another NCCL than the one the
        // framework was built against was loaded first.
        return Category::Nccl;
    }
    let library_prefixes = [
        "cublas",
        "cudnn",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvrtc",
        "cupti",
        "nvjitlink",
        "cudart",
        "__cuda",
        "cudaGetDriverEntryPoint",
    ];
    if sym.starts_with("cu")
        && sym.chars().nth(2).is_some_and(|c| c.is_ascii_uppercase())
        && !sym.starts_with("cuda")
    {
        // cuInit, cuTensorMapEncodeTiled...: libcuda's own, so the driver is too old for them.
        return Category::DriverTooOld;
    }
    if library_prefixes.iter().any(|p| sym.starts_with(p)) || sym.starts_with("cuda") {
        return Category::LibraryPath;
    }
    if lower.contains("libcudart")
        || lower.contains("libcublas")
        || lower.contains("libcudnn")
        || lower.contains("/stubs/")
    {
        return Category::LibraryPath;
    }
    Category::AbiMismatch
}

/// The function a line says was not found, by name: a program that resolves an entry point
/// itself (`cuGetProcAddress`, `dlsym`) says so in its own words ("Function \"cuMemAllocAsync\"
/// not found", "symbol cuCtxCreate_v4 not found", "entry point cuTensorMapEncodeTiled was not
/// found"), the same fact as the loader's "undefined symbol".
fn named_function_not_found(line: &str) -> Option<&str> {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| {
            regex::Regex::new(
                r#"(?i)(?-u:\b)(?:function|symbol|entry point)\s+["'`]?([A-Za-z_]\w{2,})["'`]?\s+(?:was\s+|is\s+)?(?:not found|could not be found|missing)"#,
            )
            .ok()
        })
        .as_ref()?;
    Some(re.captures(line)?.get(1)?.as_str())
}

/// A frame of a C++ or Python stack trace ("frame #3: c10d::ProcessGroupNCCL::watchdogHandler()
/// ...", "Exception raised from checkTimeout at ..."): it says where the program was, not what
/// went wrong, so it states no clause however many of the lexicon's words its names hold.
fn is_stack_frame(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("frame #") || t.starts_with("Exception raised from ")
}

/// The owner of the unresolved symbol a line names, when its name or its library's path says
/// whose it is (the driver, a CUDA library, NCCL, a stub library); None for a framework's or an
/// unknown name.
pub fn symbol_owner(line: &str) -> Option<Category> {
    Some(symbol_category(line)).filter(|c| *c != Category::AbiMismatch)
}

/// A line's category, with the subject and failure that decided it.
pub type Reading = (Category, Subject, Failure);

/// The category a line's words name, with the subject and failure that decided it. The table
/// reads from the most specific subject to the most general.
pub fn category_of(line: &str, w: &Words) -> Option<Reading> {
    // Values of one operation on different devices: the program placed them, and the GPU the
    // line names holds some of them.
    if w.fails(F::Misplaced) {
        return Some((Category::NotEnvironment, S::Placement, F::Misplaced));
    }
    // The machine's GPU is not NVIDIA's: nothing of the CUDA stack can run on it.
    if w.fails(F::NotNvidia) {
        let s = w.subjects.first().copied().unwrap_or(S::Gpu);
        return Some((Category::DriverMissing, s, F::NotNvidia));
    }
    // bf16 asked of a GPU older than Ampere ("this GPU does not support bfloat16"), an
    // attention kernel refusing the card, a quantization method's minimum capability.
    if let Some(reading) = by_a_stated_floor(line, w) {
        return reading;
    }
    // A program's own check of the driver, by the versions it states (the one installed is
    // below the one it requires), or a driver stated beside a CUDA newer than its branch runs.
    if w.has(S::Driver) {
        let lower = line.to_lowercase();
        let words = crate::prose::words_of(&lower);
        if crate::stated_driver::installed_below_required(&words)
            || cudoctor_kb::Kb::try_embedded()
                .is_ok_and(|kb| crate::prose::driver_below_cuda(&words, kb))
        {
            return Some((Category::DriverTooOld, S::Driver, F::TooOld));
        }
    }
    // A program that supports only older CUDA than the machine has ("only supports drivers for
    // CUDA 11.x or 12.x (yours is for CUDA 13.0)"): the program is behind the stack, which a
    // release of the program catches up with; nothing of the machine is wrong or old.
    if w.fails(F::Unsupported) && stack_newer_than_supported(line) {
        return None;
    }
    // A GPU said unavailable or failing on a line that chooses which GPUs are visible
    // ("CUDA_VISIBLE_DEVICES set in the script is unavailable", "... has no effect"): the
    // selection, a setting of the program, is what the line speaks of.
    if w.failures
        .iter()
        .all(|f| matches!(f, F::NotAvailable | F::Failed))
        && find_ascii_ci(line, "cuda_visible_devices").is_some()
    {
        return None;
    }
    // The program's own selection of GPUs that does not take effect: set after CUDA started.
    if w.fails(F::Ignored) {
        return Some((Category::NotEnvironment, S::Selection, F::Ignored));
    }
    // A library outside the stack that cannot be loaded: the system's, not CUDA's.
    if let Some((s, f)) = w.pick(
        S::OtherLibrary,
        &[F::CannotLoad, F::NotFound, F::UndefinedSymbol, F::Failed],
    ) {
        return Some((Category::NotEnvironment, s, f));
    }
    if compiled_part_missing(line) {
        return Some((Category::CpuOnlyWheel, S::Framework, F::NotCompiled));
    }
    // A package's library for one CUDA, named by its tag (`libbitsandbytes_cuda122.so`), not
    // found: the package has no build for the CUDA it detected.
    if (w.fails(F::NotFound) || w.fails(F::CannotLoad)) && names_cuda_tagged_library(line) {
        return Some((Category::VersionSuffixMismatch, S::Framework, F::NotFound));
    }
    by_the_machine(line, w)
        .or_else(|| by_whose_it_is(line, w))
        .or_else(|| by_the_stack_below(w))
        .or_else(|| by_code_and_toolchain(line, w))
        .or_else(|| by_general_subject(line, w))
}

/// A floor the line states for the GPU ([`crate::floor`]): an attention kernel refusing the
/// card, a dtype it lacks, or other kernels without code for it. `Some(None)` is a reading
/// that names no environment cause (the program's dtype or inputs).
fn by_a_stated_floor(line: &str, w: &Words) -> Option<Option<Reading>> {
    // A toolkit's or compiler's own floors are theirs ("CUDA 12 requires compute capability
    // 5.0 or later", nvcc's `compute_35`): read below by their subjects.
    // Nor is a program's statement of the GPU it needs at all ("requires a CUDA-capable GPU
    // (compute capability 3.5 or higher)"): it found none.
    if w.has(S::Toolkit) || w.has(S::HostCompiler) || w.fails(F::Required) {
        return None;
    }
    let lower = lowered(line);
    let unsupported = w.fails(F::Unsupported) || w.fails(F::TooOld);
    // The program's dtype or inputs name no environment cause; the line leaves the report to
    // its other lines (the signatures answer bf16 on a GPU older than Ampere where they know it).
    if w.has(S::Attention) && crate::floor::attention_refuses_inputs(&lower) {
        return Some(None);
    }
    let gpu_named = w.has(S::GpuArch) || w.has(S::Gpu);
    match crate::floor::floor_of(&lower, !w.failures.is_empty()) {
        Some(crate::floor::Floor::Attention) => {
            Some(Some((Category::SdpaFallback, S::Attention, F::Unsupported)))
        }
        Some(crate::floor::Floor::Dtype) => Some(None),
        Some(crate::floor::Floor::Kernels) => {
            Some(Some((Category::NoKernelImage, S::GpuArch, F::Unsupported)))
        }
        None if crate::floor::dtype_refused(&lower, unsupported, gpu_named) => Some(None),
        None => None,
    }
}

/// The machine itself failing: its GPU hardware, or memory run out.
fn by_the_machine(line: &str, w: &Words) -> Option<Reading> {
    if let Some((s, f)) = w.pick(S::Hardware, &[F::Fault, F::Failed, F::Timeout]) {
        return Some((Category::GpuHardware, s, f));
    }
    if w.fails(F::OutOfMemory) && (w.has(S::Memory) || w.has(S::Gpu) || w.has(S::Framework)) {
        let s = if w.has(S::Memory) { S::Memory } else { S::Gpu };
        return Some((Category::OutOfMemory, s, F::OutOfMemory));
    }
    // Memory run out on a line that names nothing else ("Got an OOM, unloading all loaded
    // models", "Not enough memory to handle 4096 prefill tokens"): a report of the CUDA stack
    // speaks of the GPU's memory unless the line says the host's.
    if w.fails(F::OutOfMemory) && w.subjects.is_empty() {
        let lower = line.to_ascii_lowercase();
        if !names_host_memory(&lower) && !supposes(&lower) {
            return Some((Category::OutOfMemory, S::Memory, F::OutOfMemory));
        }
    }
    None
}

/// Whether a lowered line supposes what it says rather than reports it ("FP32 will cause Out
/// of Memory", "if you get OOM").
fn supposes(lower: &str) -> bool {
    [" will ", " would ", " might ", " may ", " could ", "if "]
        .iter()
        .any(|w| lower.contains(w))
}

/// Whether a lowered line speaks of the host's memory or disk, not the GPU's ("RAM", "swap",
/// the OOM killer, Python's `MemoryError` without a device allocator, "Cannot allocate
/// memory").
fn names_host_memory(lower: &str) -> bool {
    let word = |w: &str| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].bytes().next_back();
            let after = lower.as_bytes().get(i + w.len());
            !before.is_some_and(|b| b.is_ascii_alphanumeric())
                && !after.is_some_and(|b| b.is_ascii_alphanumeric())
        })
    };
    [
        "ram",
        "swap",
        "disk",
        "heap",
        "host",
        "cpu",
        "system memory",
        "killed",
    ]
    .iter()
    .any(|w| word(w))
        || [
            "oom-kill",
            "oom_kill",
            "oom killer",
            "cannot allocate memory",
            "shared memory",
            "/dev/shm",
            "java",
        ]
        .iter()
        .any(|w| lower.contains(w))
        || (lower.contains("memoryerror") && !lower.contains("rmm"))
}

/// A line whose names say whose the failure is, before its subjects do: an unresolved symbol's
/// owner, the driver's stub library, the driver too old for what follows it, a toolkit component
/// missing, a library of torch's own CUDA half.
fn by_whose_it_is(line: &str, w: &Words) -> Option<Reading> {
    // An unresolved symbol whose name says whose it is (the driver's cu* entry points, a CUDA
    // library's, NCCL's) decides by its owner, whatever file or DLL the line names.
    if w.fails(F::UndefinedSymbol) {
        let owner = symbol_category(line);
        if owner != Category::AbiMismatch {
            // A line that names no subject of its own ("undefined symbol: cuGreenCtxDestroy")
            // speaks of the symbol's owner: the driver's library for its `cu*` entry points,
            // a CUDA library, NCCL. That makes it as specific as a named subject would.
            // An allocator's name in the symbol (`cuMemAlloc_v2`) is the symbol, not memory.
            let s = w
                .subjects
                .iter()
                .copied()
                .find(|s| *s != S::Memory)
                .unwrap_or_else(|| owner_subject(owner));
            return Some((owner, s, F::UndefinedSymbol));
        }
        // Windows: an import failed for a missing procedure and the line names no DLL, so
        // the module imported (an extension's _C) was built against other versions of the
        // libraries it links.
        if w.has(S::WindowsDll) && !line.to_ascii_lowercase().contains(".dll") {
            return Some((Category::AbiMismatch, S::WindowsDll, F::UndefinedSymbol));
        }
    }
    // A driver requirement stated against the driver found, whatever runs it ("This container
    // was built for NVIDIA Driver Release 545.23 or later, but version 535.104.05 was
    // detected"): the driver is too old for the image.
    if w.has(S::Driver) && w.fails(F::TooOld) && find_ascii_ci(line, "driver release").is_some() {
        return Some((Category::DriverTooOld, S::Driver, F::TooOld));
    }
    // A capability the driver is said to lack ("API call is not supported in the installed CUDA
    // driver", "not supported by the driver"): the driver is older than what asks for it.
    if w.fails(F::Unsupported) && unsupported_by_the_driver(line, w) {
        return Some((Category::DriverTooOld, S::Driver, F::Unsupported));
    }
    // The driver's library found is the toolkit's link-time stub ("CUDA driver is a stub
    // library", `.../stubs/libcuda.so`): the loader's path puts the stub first.
    if w.has(S::CudaLibrary) && (w.has(S::Driver) || w.has(S::DriverLibrary)) {
        let lower = line.to_ascii_lowercase();
        if ["stub library", "stub_library", "stublibrary"]
            .iter()
            .any(|w| lower.contains(w))
        {
            let f = w.failures.first().copied().unwrap_or(F::Failed);
            return Some((Category::LibraryPath, S::CudaLibrary, f));
        }
    }
    // The driver said to be too old for something the line names after it ("CUDA driver
    // version is too old for the installed CUDA toolkit"): the driver is the subject, what
    // follows is what needs it.
    if w.fails(F::TooOld) {
        let driver = [S::Driver, S::DriverLibrary]
            .iter()
            .filter_map(|s| w.first_at(*s).map(|i| (i, *s)))
            .min();
        let other = [S::Toolkit, S::CudaLibrary, S::Framework, S::Companion]
            .iter()
            .filter_map(|s| w.first_at(*s))
            .min();
        if let Some((at, s)) = driver {
            if other.is_some_and(|o| at < o) {
                return Some((Category::DriverTooOld, s, F::TooOld));
            }
        }
    }
    // A version of the C++ runtime that the loaded libstdc++ lacks: a library built with a newer
    // compiler than the runtime the environment loads (a conda env's older libstdc++).
    if w.has(S::HostCompiler)
        && w.fails(F::NotFound)
        && (find_ascii_ci(line, "glibcxx_3").is_some() || find_ascii_ci(line, "cxxabi_1").is_some())
    {
        return Some((Category::AbiMismatch, S::HostCompiler, F::NotFound));
    }
    if w.has(S::Toolkit) {
        // A toolkit component missing (libNVVM, nvcc): the toolkit, whatever file names it.
        if let Some((s, f)) = w.pick(S::Toolkit, &[F::NotFound]) {
            return Some((Category::CudaHomeMissing, s, f));
        }
    }
    // A library of torch's own CUDA half an extension cannot load, by its owner: the libraries
    // torch 1.10-1.12 split its CUDA code into (libtorch_cuda_cu, libtorch_cuda_cpp) mean an
    // extension built for another torch. (torch's CUDA library itself missing is either a CPU
    // torch or the extension imported before torch: the soname does not tell which.)
    if (w.fails(F::CannotLoad) || w.fails(F::NotFound)) && !w.has(S::WindowsDll) {
        let lower = line.to_ascii_lowercase();
        if lower.contains("libtorch_cuda_cu") || lower.contains("libtorch_cuda_cpp") {
            let f = if w.fails(F::CannotLoad) {
                F::CannotLoad
            } else {
                F::NotFound
            };
            return Some((Category::AbiMismatch, S::Framework, f));
        }
    }
    None
}

/// Bytes between "not supported in/by" and the driver it names, at most.
const SUPPORTED_BY_REACH: usize = 32;

/// Whether a line says something is not supported *in* or *by* the driver, the driver named
/// right after the failure ("is not supported in the installed CUDA driver").
fn unsupported_by_the_driver(line: &str, w: &Words) -> bool {
    w.failed_at
        .iter()
        .filter(|(f, _)| *f == F::Unsupported)
        .any(|(_, end)| {
            let rest = line.get(*end..).unwrap_or_default();
            let head = rest.trim_start().get(..3).unwrap_or_default();
            let by = head.eq_ignore_ascii_case("in ") || head.eq_ignore_ascii_case("by ");
            by && [S::Driver, S::DriverLibrary].iter().any(|s| {
                w.first_at(*s)
                    .is_some_and(|at| at > *end && at - *end <= SUPPORTED_BY_REACH)
            })
        })
}

/// The subject that owns an unresolved symbol of `owner`'s category (see [`symbol_category`]).
fn owner_subject(owner: Category) -> Subject {
    match owner {
        Category::DriverTooOld => S::DriverLibrary,
        Category::Nccl => S::Nccl,
        Category::LibraryPath => S::CudaLibrary,
        _ => S::Framework,
    }
}

/// The subjects below the framework that a failure names, most specific first: the kernel
/// module, a build without CUDA, a Windows DLL, a CUDA library not loaded, NCCL, the container,
/// a companion's version.
fn by_the_stack_below(w: &Words) -> Option<Reading> {
    // The kernel module's build or load failing is the driver's, whatever compiler or
    // toolkit words its message holds ("built against the wrong kernel sources, with a version
    // of gcc that differs").
    if w.has(S::KernelModule) && !w.has(S::Hardware) {
        if let Some(f) = w.first_failing(&[F::CannotLoad, F::NotFound, F::Denied, F::Failed]) {
            return Some((Category::DriverMissing, S::KernelModule, f));
        }
    }
    // A line that says the framework was built without CUDA states the cause; a library it
    // then did not find or load on the same line follows from it ("ggml_init_cublas not found;
    // llama.cpp was built without GPU support").
    if w.fails(F::NotCompiled)
        && (w.has(S::Framework) || w.has(S::Gpu))
        && !w.has(S::Companion)
        && !w.has(S::Attention)
        && !w.has(S::WindowsDll)
        && !w.has(S::GpuArch)
    {
        let s = if w.has(S::Framework) {
            S::Framework
        } else {
            S::Gpu
        };
        return Some((Category::CpuOnlyWheel, s, F::NotCompiled));
    }
    // The driver's own DLL (nvcuda.dll, nvml.dll) not loaded is the driver missing, which the
    // general subjects read.
    if let Some((s, f)) = w
        .pick(
            S::WindowsDll,
            &[
                F::CannotLoad,
                F::UndefinedSymbol,
                F::NotFound,
                F::NotAvailable,
            ],
        )
        .filter(|_| !w.has(S::DriverLibrary))
    {
        return Some((Category::WindowsDll, s, f));
    }
    if let Some((s, f)) = w.pick(S::CudaLibrary, &[F::CannotLoad, F::NotFound]) {
        if !w.has(S::Toolkit) || f == F::CannotLoad {
            return Some((Category::LibraryPath, s, f));
        }
    }
    if let Some((s, f)) = w.pick(
        S::Nccl,
        // A collective's timeout alone names no cause: it is where a rank that stopped or took
        // another path surfaces (the program, most often), so it is read by the signatures
        // with what else the log says, not as an NCCL failure.
        &[F::Hang, F::Mismatch, F::Unsupported, F::Denied, F::Failed],
    ) {
        // Nor does a line that says only that the timeout failed or hung ("NCCL 超时 ... 报错",
        // "hangs till the NCCL timeout"): the failure it names is the timeout.
        let only_the_timeout = w.fails(F::Timeout) && matches!(f, F::Failed | F::Hang);
        if !only_the_timeout {
            return Some((Category::Nccl, s, f));
        }
    }
    if let Some((s, f)) = w.pick(
        S::Container,
        &[
            F::NotAvailable,
            F::NotFound,
            F::Denied,
            F::CannotLoad,
            F::Unsupported,
            F::TooOld,
            F::Failed,
        ],
    ) {
        return Some((Category::Container, s, f));
    }
    if let Some((s, f)) = w.pick(S::Companion, &[F::Mismatch, F::UndefinedSymbol]) {
        return Some((Category::VersionSuffixMismatch, s, f));
    }
    None
}

/// The code built for the GPU and the toolchain that builds it: PTX too new for the driver,
/// no kernel image, a build without CUDA, the host compiler, the toolkit.
fn by_code_and_toolchain(line: &str, w: &Words) -> Option<Reading> {
    // PTX newer than the driver's JIT accepts ("ptxas application ptx input ... Unsupported
    // .version"): the driver, not a toolkit, compiles it.
    if w.has(S::DriverLibrary) && w.fails(F::Unsupported) {
        return Some((Category::DriverTooOld, S::DriverLibrary, F::Unsupported));
    }
    if w.has(S::Toolkit) && w.has(S::GpuArch) {
        if let Some(f) = w.first_failing(&[F::Unsupported]) {
            return Some((Category::ToolkitMismatch, S::Toolkit, f));
        }
    }
    // An attention kernel that refuses this GPU ("FlashAttention is not supported on sm_75",
    // "requires an Ampere or newer card"): the kernel says which cards it runs on, and attention
    // falls back to another. A kernel image missing is a build without this GPU's code; a CUDA
    // or nvcc it refuses is the toolkit's.
    let names_a_gpu = w.has(S::GpuArch) || w.has(S::Gpu) || names_card(line);
    if w.has(S::Attention)
        && names_a_gpu
        && !w.has(S::Toolkit)
        && find_ascii_ci(line, "kernel image").is_none()
        && find_ascii_ci(line, "invalid device function").is_none()
    {
        if let Some(f) = w.first_failing(&[F::Unsupported, F::TooOld]) {
            return Some((Category::SdpaFallback, S::Attention, f));
        }
    }
    if let Some((s, f)) = w.pick(
        S::GpuArch,
        &[
            F::Unsupported,
            F::Mismatch,
            F::TooOld,
            F::NotFound,
            // "not compiled with any CUDA arch <= 610": no code for this GPU.
            F::NotCompiled,
        ],
    ) {
        return Some((Category::NoKernelImage, s, f));
    }
    if let Some((s, f)) = w.pick(S::Framework, &[F::NotCompiled]) {
        return Some((Category::CpuOnlyWheel, s, f));
    }
    if w.fails(F::NotCompiled) && w.has(S::Gpu) {
        return Some((Category::CpuOnlyWheel, S::Gpu, F::NotCompiled));
    }
    if let Some((s, f)) = w.pick(
        S::HostCompiler,
        &[F::Unsupported, F::TooOld, F::Mismatch, F::Failed],
    ) {
        return Some((Category::ToolkitMismatch, s, f));
    }
    if let Some((s, f)) = w.pick(S::Toolkit, &[F::NotFound]) {
        return Some((Category::CudaHomeMissing, s, f));
    }
    if let Some((s, f)) = w.pick(S::Toolkit, &[F::Mismatch, F::TooOld, F::Unsupported]) {
        // A CUDA library named between the toolkit and the failure is what the failure is said
        // of ("installed with cudatoolkit=10.0 ... compiled with cuDNN 7.6, but cuDNN in your
        // machine is 7.3, incompatible"): the library's version, read below.
        if w.nearest_before(f, &[S::Toolkit, S::CudaLibrary]) != Some(S::CudaLibrary) {
            return Some((Category::ToolkitMismatch, s, f));
        }
    }
    None
}

/// The most general subjects last: a symbol nobody owns, the driver, a CUDA library's version,
/// a framework's pieces, attention, the GPU, a compiler step that failed.
fn by_general_subject(line: &str, w: &Words) -> Option<Reading> {
    if w.fails(F::UndefinedSymbol) {
        let s = w.subjects.first().copied().unwrap_or(S::Framework);
        return Some((symbol_category(line), s, F::UndefinedSymbol));
    }
    for s in [S::Driver, S::DriverLibrary] {
        if let Some((s, f)) = w.pick(s, &[F::TooOld]) {
            return Some((Category::DriverTooOld, s, f));
        }
    }
    for s in [S::Driver, S::DriverLibrary, S::KernelModule] {
        if let Some((s, f)) = w.pick(
            s,
            &[
                F::NotFound,
                F::CannotLoad,
                F::Mismatch,
                F::Denied,
                F::NotAvailable,
                F::Failed,
            ],
        ) {
            return Some((Category::DriverMissing, s, f));
        }
    }
    if let Some((s, f)) = w.pick(S::CudaLibrary, &[F::Mismatch, F::TooOld, F::NotAvailable]) {
        return Some((Category::LibraryPath, s, f));
    }
    // Two pieces of one framework (jax and jaxlib, a TensorRT engine and its runtime) of
    // different versions.
    // A serialized engine or plan that its runtime cannot read (its size or layout not what the
    // runtime expects) was written by another release of that runtime, versions named or not.
    if let Some((s, f)) = w.pick(S::Framework, &[F::Mismatch]) {
        let lower = line.to_ascii_lowercase();
        if ["version", "serialized engine", "engine plan"]
            .iter()
            .any(|k| lower.contains(k))
        {
            return Some((Category::VersionSuffixMismatch, s, f));
        }
    }
    if let Some((s, f)) = w.pick(
        S::Attention,
        &[
            F::NotAvailable,
            F::NotCompiled,
            F::Unsupported,
            F::TooOld,
            F::NotFound,
        ],
    ) {
        return Some((Category::SdpaFallback, s, f));
    }
    if let Some((s, f)) = w.pick(S::Gpu, &[F::NotAvailable, F::Required]) {
        return Some((Category::DriverMissing, s, f));
    }
    // The card too old ("GPU too old for this version of pytorch", "显卡太老"): its
    // architecture, which the framework's build no longer holds code for.
    if w.gpu_as_card {
        if let Some((_, f)) = w.pick(S::Gpu, &[F::TooOld]) {
            return Some((Category::NoKernelImage, S::GpuArch, f));
        }
    }
    // "CUDA version too low" (cuda版本低): the CUDA the driver runs, as nvidia-smi shows it.
    if let Some((s, f)) = w.pick(S::Gpu, &[F::TooOld]) {
        return Some((Category::DriverTooOld, s, f));
    }
    // A compiler step that failed and says no more: the toolchain is the first suspect.
    if let Some((s, f)) = w.pick(S::Toolkit, &[F::Failed]) {
        return Some((Category::ToolkitMismatch, s, f));
    }
    None
}

/// A subject a report names as part of its setup ("Docker version 24", "Driver Version: 535",
/// "GPU: RTX 4090") as often as in its failure: a generic failure word elsewhere in a report is
/// not said of it.
pub fn is_setup_subject(s: Subject) -> bool {
    matches!(
        s,
        S::Container | S::Driver | S::DriverLibrary | S::Gpu | S::Framework
    )
}

impl Clause {
    /// A clause precise enough to outrank a signature's warning: a named subject with a named
    /// failure, not "the GPU is not available" nor a bare "failed".
    pub fn is_specific(&self) -> bool {
        !matches!(
            self.subject,
            Subject::Gpu | Subject::Framework | Subject::Memory
        ) && !matches!(self.failure, Failure::Failed | Failure::NotAvailable)
    }
}

/// A stable name of a subject, for JSON.
pub fn subject_id(s: Subject) -> &'static str {
    match s {
        Subject::Hardware => "hardware",
        Subject::Nccl => "nccl",
        Subject::Container => "container",
        Subject::WindowsDll => "windows_dll",
        Subject::Companion => "companion",
        Subject::Toolkit => "toolkit",
        Subject::HostCompiler => "host_compiler",
        Subject::GpuArch => "gpu_arch",
        Subject::Attention => "attention",
        Subject::Driver => "driver",
        Subject::DriverLibrary => "driver_library",
        Subject::KernelModule => "kernel_module",
        Subject::CudaLibrary => "cuda_library",
        Subject::Framework => "framework",
        Subject::Gpu => "gpu",
        Subject::Memory => "memory",
        Subject::Placement => "placement",
        Subject::Selection => "selection",
        Subject::OtherLibrary => "other_library",
    }
}

/// A stable name of a failure, for JSON.
pub fn failure_id(f: Failure) -> &'static str {
    match f {
        Failure::OutOfMemory => "out_of_memory",
        Failure::Fault => "fault",
        Failure::NotCompiled => "not_compiled",
        Failure::UndefinedSymbol => "undefined_symbol",
        Failure::CannotLoad => "cannot_load",
        Failure::NotFound => "not_found",
        Failure::TooOld => "too_old",
        Failure::Mismatch => "mismatch",
        Failure::Unsupported => "unsupported",
        Failure::Timeout => "timeout",
        Failure::Hang => "hang",
        Failure::Denied => "denied",
        Failure::NotAvailable => "not_available",
        Failure::Required => "required",
        Failure::NotNvidia => "not_nvidia",
        Failure::Misplaced => "misplaced",
        Failure::Ignored => "ignored",
        Failure::Failed => "failed",
    }
}

/// The clause of one line, if its words name a category.
pub fn read(line: &str) -> Option<Clause> {
    if !mentions_any(line) {
        return None;
    }
    from_words(line, &words(line))
}

/// The clause of the first sentence of a short report whose prose says what failed
/// ([`crate::prose`]), read with that sentence's own words: a construction the lexicon's
/// phrases do not list ("can't see my RTX 5090"), never paired with a subject of another
/// sentence.
pub fn read_prose(text: &str) -> Option<Clause> {
    crate::prose::sentences(text).find_map(|sentence| {
        let readings = crate::prose::read_sentence(sentence);
        if readings.is_empty() {
            return None;
        }
        let mut w = words(sentence);
        for r in readings {
            w.add_subject(r.subject, sentence.len());
            w.add_failure(r.failure);
            w.failed_at.push((r.failure, sentence.len()));
        }
        w.subjects.sort();
        w.failures.sort();
        from_words(sentence, &w)
    })
}

/// The clause `line` states with the words `w` read from it.
pub fn from_words(line: &str, w: &Words) -> Option<Clause> {
    if is_stack_frame(line) {
        return None;
    }
    // A framework's CPU package named beside its GPU package ("both onnxruntime and
    // onnxruntime-gpu"): the two install into one directory, and the CPU build's files win.
    if w.has(S::Framework) && cpu_package_beside_gpu_package(line) {
        return Some(Clause {
            category: Category::CpuOnlyWheel,
            subject: S::Framework,
            failure: F::NotCompiled,
            severity: severity(line),
        });
    }
    if compiled_part_skipped(line) {
        return Some(Clause {
            category: Category::CudaHomeMissing,
            subject: S::Toolkit,
            failure: F::NotFound,
            severity: severity(line),
        });
    }
    // An unresolved symbol needs no subject word: its name says whose it is; nor does memory
    // run out, which is the GPU's unless the line says the host's, nor a package's compiled
    // part that Python cannot find.
    if w.failures.is_empty()
        || (w.subjects.is_empty()
            && !w.fails(F::UndefinedSymbol)
            && !w.fails(F::NotNvidia)
            && !w.fails(F::OutOfMemory)
            && !compiled_part_missing(line))
    {
        return None;
    }
    let (category, subject, failure) = category_of(line, w)?;
    Some(Clause {
        category,
        subject,
        failure,
        severity: severity(line),
    })
}

/// The frameworks published as a CPU package and a GPU package of the same import name (pip's
/// `onnxruntime` and `onnxruntime-gpu`, `tensorflow` and `tensorflow-gpu` before 2.1,
/// `paddlepaddle` and `paddlepaddle-gpu`, `faiss-cpu` and `faiss-gpu`, `mxnet` and `mxnet-cu*`
/// aside): installed together, one overwrites the other's files.
const CPU_GPU_PACKAGES: [&str; 4] = ["onnxruntime", "tensorflow", "paddlepaddle", "faiss"];

/// Whether a line names a framework's CPU package and its GPU package together.
fn cpu_package_beside_gpu_package(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    CPU_GPU_PACKAGES.iter().any(|name| {
        let gpu = [format!("{name}-gpu"), format!("{name}_gpu")];
        if !gpu.iter().any(|g| lower.contains(g.as_str())) {
            return false;
        }
        // The CPU package: the name as a package of its own ("faiss-cpu", or the name ending
        // there and listed with its version, beside the GPU package, or after "both"), not the
        // GPU package's first half, a module path ("onnxruntime.capi", ".../onnxruntime/capi",
        // which the GPU package installs too) nor the framework's name in a sentence
        // ("onnxruntime InferenceSession").
        lower.match_indices(name).any(|(i, _)| {
            let before_ok = i == 0
                || matches!(
                    lower.as_bytes()[i - 1],
                    b' ' | b',' | b'(' | b'\'' | b'"' | b'`'
                );
            let rest = &lower[i + name.len()..];
            let cpu_suffix = rest.starts_with("-cpu") || rest.starts_with("_cpu");
            let ends_there = rest.is_empty()
                || rest.starts_with([' ', ',', ')', '\'', '"', '=', '<', '>', '~', ';', '`']);
            let listed = {
                let next = rest.trim_start();
                next.starts_with("==")
                    || next.starts_with(|c: char| c.is_ascii_digit())
                    || next.starts_with("and ")
                    || lower[..i].trim_end().ends_with("both")
            };
            before_ok && (cpu_suffix || ends_there && listed)
        })
    })
}

/// The values a clause's line names: a library (`library`, with `library_provider`), a GPU
/// architecture (`arch`), an unresolved symbol (`symbol`, with `symbol_owner`).
pub fn fields(line: &str) -> std::collections::BTreeMap<String, String> {
    use crate::fields::FieldKind;
    static RE: OnceLock<Option<[regex::Regex; 3]>> = OnceLock::new();
    let mut out = std::collections::BTreeMap::new();
    let Some(res) = RE
        .get_or_init(|| {
            Some([
                regex::Regex::new(
                    r"(?i)\b(lib[a-z0-9_+-]+(?:\.[0-9]+)*\.so(?:\.[0-9]+)*|[a-z0-9_]+\.dll)\b",
                )
                .ok()?,
                regex::Regex::new(r"(?i)\b(?:sm|compute)_?([0-9]{2,3}[af]?)\b").ok()?,
                regex::Regex::new(
                    r"(?i)(?:undefined symbol:?|undefined reference to|symbol not found:?)\s*[`'\x22]?([A-Za-z_][A-Za-z0-9_@.$]*)",
                )
                .ok()?,
            ])
        })
        .as_ref()
    else {
        return out;
    };
    let kinds = [
        ("library", FieldKind::Library),
        ("arch", FieldKind::Arch),
        ("symbol", FieldKind::Symbol),
    ];
    for ((name, kind), re) in kinds.iter().zip(res.iter()) {
        let Some(raw) = re.captures(line).and_then(|c| c.get(1)) else {
            continue;
        };
        let raw = if *name == "arch" {
            format!("sm_{}", raw.as_str())
        } else {
            raw.as_str().to_string()
        };
        if let Some(v) = kind.normalize(&raw) {
            if let (Some(d), Some(dv)) = (kind.derived_name(name), kind.derive(&v)) {
                out.insert(d, dv);
            }
            out.insert((*name).to_string(), v);
        }
    }
    out
}

/// The domain's words that hand-typed text misspells ("avaliable", "compatable", "nvidai").
const DOMAIN_WORDS: &[&str] = &[
    "available",
    "compiled",
    "compatible",
    "incompatible",
    "insufficient",
    "driver",
    "nvidia",
    "version",
    "mismatch",
    "library",
    "libraries",
    "toolkit",
    "kernel",
    "image",
    "device",
    "detected",
    "supported",
    "unsupported",
    "undefined",
    "symbol",
    "shared",
    "object",
    "memory",
    "container",
    "docker",
    "timeout",
    "installed",
    "pytorch",
    "tensorflow",
    "torchvision",
    "libcudart",
    "libcudnn",
    "libcublas",
    "cudnn",
    "cublas",
];

/// Damerau-Levenshtein distance with transpositions (the optimal string alignment form),
/// stopping early once it exceeds `limit`.
fn osa_distance(a: &[u8], b: &[u8], limit: usize) -> usize {
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let n = b.len();
    let mut prev2 = vec![0usize; n + 1];
    let mut prev: Vec<usize> = (0..=n).collect();
    let mut cur = vec![0usize; n + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=n {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[n]
}

/// Hand-typed text with its misspelt domain words corrected: a word of six letters or more
/// within one edit (two from nine letters) of a domain word, and not itself one, is replaced.
/// Returns `None` when nothing changed.
/// Whether `word` and `domain` are one stem with different last letters ("compiler" and
/// "compiled"): an English word of its own, which a typo correction must leave alone.
fn same_stem_other_ending(word: &str, domain: &str) -> bool {
    let n = word.len();
    if n == domain.len() && n > 1 && word.get(..n - 1) == domain.get(..n - 1) {
        return true;
    }
    // An inflection of the domain word ("devices", "drivers", "libraries", "detect"): a plural
    // or a tense is the same word, which the lexicon's phrases spell as they are ("no devices
    // were found"), not a typo to be rewritten into the singular.
    let inflected = |stem: &str, ending: &str| {
        word.strip_suffix(ending).is_some_and(|w| w == stem)
            || domain.strip_suffix(ending).is_some_and(|d| d == word)
    };
    // A negation of the domain word ("unavailable", "incompatible", "unsupported") is its
    // opposite, not a typo of it.
    let negated = |a: &str, b: &str| {
        ["un", "in", "im", "non"]
            .iter()
            .any(|p| a.strip_prefix(p).is_some_and(|rest| rest == b))
    };
    negated(word, domain)
        || negated(domain, word)
        || inflected(domain, "s")
        || inflected(domain, "es")
        || inflected(domain, "d")
        || inflected(domain, "ed")
        || domain
            .strip_suffix("ies")
            .is_some_and(|d| word.strip_suffix('y') == Some(d))
        || domain
            .strip_suffix('y')
            .is_some_and(|d| word.strip_suffix("ies") == Some(d))
}

pub fn correct_typos(line: &str) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut changed = false;
    let mut rest = line;
    while !rest.is_empty() {
        let start = rest
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        out.push_str(rest.get(..start).unwrap_or_default());
        rest = rest.get(start..).unwrap_or_default();
        let end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let word = rest.get(..end).unwrap_or_default();
        rest = rest.get(end..).unwrap_or_default();
        if word.is_empty() {
            continue;
        }
        let lower = word.to_ascii_lowercase();
        let replacement = (lower.len() >= 6 && !DOMAIN_WORDS.contains(&lower.as_str()))
            .then(|| {
                let limit = if lower.len() >= 9 { 2 } else { 1 };
                DOMAIN_WORDS
                    .iter()
                    // Another ending of the same stem is another word, not a typo
                    // ("compiler" is not "compiled", "devices" not "detected"'s kin).
                    .filter(|d| !same_stem_other_ending(&lower, d))
                    .map(|d| (osa_distance(lower.as_bytes(), d.as_bytes(), limit), *d))
                    .filter(|(dist, _)| *dist <= limit)
                    .min()
                    .map(|(_, d)| d)
            })
            .flatten();
        match replacement {
            Some(d) => {
                out.push_str(d);
                changed = true;
            }
            None => out.push_str(word),
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(line: &str) -> Option<Category> {
        read(line).map(|c| c.category)
    }

    #[test]
    fn cuda_error_two_is_memory_only_right_after_cuda_error() {
        for line in [
            "CUDA error! 2",
            "CUDA error 2 at kernel.cu:45",
            "cuda error code: 2",
        ] {
            assert_eq!(cat(line), Some(Category::OutOfMemory), "{line}");
        }
        // A make's exit on a CUDA source, and other numbers.
        for line in [
            "make[2]: *** [CMakeFiles/x.dir/cuda_kernel.cu.o] Error 2",
            "CUDA error: 20",
            "CUDA error 2.5 seconds later",
        ] {
            assert_ne!(cat(line), Some(Category::OutOfMemory), "{line}");
        }
    }

    #[test]
    fn a_compiled_part_its_own_package_went_on_without_is_a_build_that_found_no_toolkit() {
        for line in [
            "NameError: name '_C' is not defined",
            "ImportError: cannot import name '_C' from 'groundingdino' (unknown location)",
        ] {
            assert_eq!(cat(line), Some(Category::CudaHomeMissing), "{line}");
        }
        // torch's own compiled part, and a name that is no compiled part.
        assert_ne!(
            cat("ImportError: cannot import name '_C' from 'torch'"),
            Some(Category::CudaHomeMissing)
        );
        assert_eq!(cat("NameError: name 'model' is not defined"), None);
    }

    #[test]
    fn cuda_error_names_as_bindings_spell_them_read_as_the_canonical_names() {
        for (line, want) in [
            (
                "called `Result::unwrap()` on an `Err` value: Cuda(NoBinaryForGpu)",
                Category::NoKernelImage,
            ),
            (
                "Cudafy.Host.CudafyHostException: CUDA.NET exception: ErrorInvalidPtx",
                Category::NoKernelImage,
            ),
            ("Error: InvalidPtx", Category::NoKernelImage),
            (
                "CUDA error 'a PTX JIT compilation failed' in func 'get_device_bus_id_str'",
                Category::NoKernelImage,
            ),
            (
                "ERROR: CUDA error: ERROR_UNSUPPORTED_PTX_VERSION",
                Category::DriverTooOld,
            ),
            ("CudaError::InsufficientDriver", Category::DriverTooOld),
            (
                "cudaErrorNoDevice returned by cudaGetDeviceCount",
                Category::DriverMissing,
            ),
            (
                "DriverError(CUDA_ERROR_ECC_UNCORRECTABLE)",
                Category::GpuHardware,
            ),
        ] {
            assert_eq!(cat(line), Some(want), "{line}");
        }
        // The words inside other identifiers or prose are not the names.
        for line in ["invalid image name: ErrImagePull", "the ptx file is valid"] {
            assert_ne!(cat(line), Some(Category::NoKernelImage), "{line}");
        }
    }

    #[test]
    fn the_toolkit_not_found_in_the_build_tools_words() {
        for line in [
            "nvcc fatal   : Path to libdevice library not specified",
            "nvvl build error: path to libdevice not specified",
            "-- Looking for a CUDA compiler - NOTFOUND",
            "thread 'main' panicked at 'Could not find a cuda installation', find_cuda_helper-0.2.0/src/lib.rs:12:13",
        ] {
            assert_eq!(cat(line), Some(Category::CudaHomeMissing), "{line}");
        }
    }

    #[test]
    fn a_build_without_cuda_in_the_words_of_its_own_tools() {
        for line in [
            "pytorch                   2.1.0           cpu_generic_py311h8354fdb_2    conda-forge",
            "pytorch                   2.5.1           py3.11_cpu_0    pytorch",
            "I tensorflow/core/common_runtime/direct_session.cc:45] Device mapping: no known devices.",
            "mxnet.base.MXNetError: [10:23:36] src/storage/storage.cc:50: Please compile with CUDA enabled",
            "RuntimeError: hard_voxelize_forward_impl: implementation for device cuda:0 not found.",
            "[AVFilterGraph @ 0x55] No such filter: 'scale_cuda'",
            "Unknown encoder 'h264_nvenc'",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
        for line in [
            "pytorch                   2.5.1           py3.11_cuda12.1_cudnn9_0    pytorch",
            "No such filter: 'scale'",
        ] {
            assert_ne!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
    }

    #[test]
    fn data_centre_models_in_either_case() {
        for w in [
            "A100", "a100", "H200", "L40", "V100", "v100", "B200", "P100", "K80", "T4", "l4",
            "A6000",
        ] {
            assert!(is_datacenter_model(w), "{w}");
        }
        for w in [
            "T5", "H264", "h265", "A1", "K800", "V1000", "RTX", "4090", "", "A100s",
        ] {
            assert!(!is_datacenter_model(w), "{w}");
        }
    }

    #[test]
    fn a_data_centre_card_said_unsupported_is_its_architecture() {
        for line in [
            "P100 not supported anymore in torch 2.6",
            "K80 is no longer supported",
            "the T4 is not supported by this build",
        ] {
            assert_eq!(cat(line), Some(Category::NoKernelImage), "{line}");
        }
        // A model named like a card, and a data type a card lacks, are not the installation.
        for line in [
            "T5 is not supported by vLLM",
            "bf16 is not supported on V100",
        ] {
            assert_ne!(cat(line), Some(Category::NoKernelImage), "{line}");
        }
    }

    #[test]
    fn the_lexicon_builds_and_respects_word_boundaries() {
        assert!(mentions_any("NCCL INFO"));
        assert!(!words("the room is full").failures.contains(&F::OutOfMemory));
        assert!(words("OOM killed").failures.contains(&F::OutOfMemory));
        assert!(!words("nvgccx").subjects.contains(&S::HostCompiler));
    }

    #[test]
    fn messages_never_seen_land_in_their_family() {
        assert_eq!(
            cat("OSError: libcufft.so.11: cannot open shared object file: No such file or directory"),
            Some(Category::LibraryPath)
        );
        assert_eq!(
            cat("jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4."),
            Some(Category::LibraryPath)
        );
        assert_eq!(
            cat("AssertionError: Paddle is not compiled with CUDA"),
            Some(Category::CpuOnlyWheel)
        );
        assert_eq!(
            cat("nvcc fatal : Unsupported gpu architecture 'compute_120'"),
            Some(Category::ToolkitMismatch)
        );
        assert_eq!(
            cat("ImportError: /x/_C.so: undefined symbol: _ZN3c104cuda20CUDACachingAllocator9allocatorE"),
            Some(Category::AbiMismatch)
        );
        assert_eq!(
            cat("undefined symbol: cuTensorMapEncodeTiled"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."),
            Some(Category::GpuHardware)
        );
        assert_eq!(cat("显卡驱动版本太低"), Some(Category::DriverTooOld));
        assert_eq!(
            cat("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."),
            Some(Category::Container)
        );
        assert_eq!(
            cat("torch.cuda.is_available() returns False"),
            Some(Category::DriverMissing)
        );
    }

    #[test]
    fn what_the_driver_does_not_support_it_is_too_old_for() {
        assert_eq!(
            cat("RuntimeError: [XX][ERROR] CUDA runtime error: operation not supported by the installed NVIDIA driver"),
            Some(Category::DriverTooOld)
        );
        // The driver as the thing not supported is not the driver lacking something.
        assert_ne!(
            cat("Error: this tool only supports NVIDIA drivers of the 535 branch"),
            Some(Category::DriverTooOld)
        );
    }

    #[test]
    fn a_word_with_its_index_run_on_still_stands_alone() {
        assert!(words("ERROR: GPU3 stopped").has(S::Gpu));
        assert!(words("cuda12 is not available").has(S::Gpu));
        // A longer word is still another word.
        assert!(!words("gpuburn finished").has(S::Gpu));
    }

    #[test]
    fn vocabulary_of_loaders_runtimes_and_reports() {
        for (line, want) in [
            (
                "error while loading shared libraries: libcudart.so.10.1",
                Some(Category::LibraryPath),
            ),
            (
                "Import Error: DLL failed. The specified module could not be found.",
                Some(Category::WindowsDll),
            ),
            (
                "ImportError: /opt/env/lib/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by /x/_ext.so)",
                Some(Category::AbiMismatch),
            ),
            (
                "libfoo.so: symbol cublasLtSomething version libcublasLt.so.12 not defined in file libcublasLt.so.12 with link time reference",
                Some(Category::LibraryPath),
            ),
            ("训练几个小时后溢出显存", Some(Category::OutOfMemory)),
            // Falling back to the CPU is the symptom; the driver's failure beside it the cause.
            (
                "failed call to cuInit: CUDA_ERROR_UNKNOWN, falling back to CPU",
                Some(Category::DriverMissing),
            ),
            ("启动时报没有nvcc编译器的错误", Some(Category::CudaHomeMissing)),
            // "没有" before something else is not said of the subject.
            ("nvcc 没有问题, 训练报错", None),
            (
                "setting up NCCL communicator failed: store->get('3') got error: Socket Timeout",
                Some(Category::Nccl),
            ),
            ("No CUDA toolkit found on this machine", Some(Category::CudaHomeMissing)),
            (
                "CMake Error: cannot find the cudnn library, set CUDNN_HOME to its root",
                Some(Category::CudaHomeMissing),
            ),
            // The device selection is the program's setting.
            (
                "os.environ['CUDA_VISIBLE_DEVICES'] set late in the script: the GPU is unavailable",
                None,
            ),
            // A library's handle not made names no cause.
            (
                "RuntimeError: cublas runtime error : library not initialized at THCGeneral.cpp:250",
                None,
            ),
            // A collective's own timeout still names no cause.
            (
                "[E ProcessGroupNCCL.cpp:100] Watchdog caught collective operation timeout",
                None,
            ),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
        // "no ... found" reaches across a few words only, and not across a sentence.
        assert!(!nothing_found("no. Then the build found it"));
    }

    #[test]
    fn a_program_behind_a_newer_stack_is_the_program_s() {
        assert_eq!(
            cat("Error: this release of the tool only supports drivers for CUDA 11.x or 12.x (yours is for CUDA 13.0)"),
            None
        );
        // Older than what it supports is the machine's.
        assert!(!stack_newer_than_supported(
            "only supports drivers for CUDA 12.x (yours is for CUDA 11.4)"
        ));
    }

    #[test]
    fn a_cuda_below_the_requirement_the_line_states() {
        assert!(cuda_below_requirement(
            "the server has CUDA 11.4 installed; does this need CUDA >= 12.1?"
        ));
        assert_eq!(
            cat("the server has CUDA 11.4 installed, the tool fails: it needs CUDA >= 12.1"),
            Some(Category::DriverTooOld)
        );
        // A CUDA that meets the requirement, and a requirement alone, state nothing.
        assert!(!cuda_below_requirement(
            "CUDA 12.4 here, and it needs CUDA >= 12.1"
        ));
        assert!(!cuda_below_requirement("this release needs cuda>=12.1"));
        // The requirement said in words: by a verb before it, or a floor after it.
        assert_eq!(
            cat("error: the driver here supports CUDA 11.4; the image requires CUDA 12.2"),
            Some(Category::DriverTooOld)
        );
        assert!(cuda_below_requirement(
            "driver supports CUDA 11.4, this image is for CUDA 12.1 or later"
        ));
        assert!(cuda_below_requirement(
            "CUDA 11.4 found, CUDA 12.1+ expected"
        ));
        assert!(!cuda_below_requirement(
            "CUDA 12.4 found, the image needs CUDA 12.1 or newer"
        ));
        // The toolkit named with it is the toolkit's.
        assert_eq!(
            cat("nvcc reports CUDA 11.4, this extension fails: it needs CUDA >= 12.1"),
            Some(Category::ToolkitMismatch)
        );
    }

    #[test]
    fn a_build_that_says_it_has_no_cuda() {
        for line in [
            ">>> print(torch.cuda.is_available(), torch.version.cuda)  ->  False None",
            "CUDA used to build PyTorch: None",
            "main.py: error: argument --device: invalid choice: 'cuda' (choose from 'cpu')",
            "安装之后还是提示 Please use MyFramework with GPU version",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
        // A CUDA build says which.
        assert_ne!(
            cat("CUDA used to build PyTorch: 12.1, none of the GPUs failed"),
            Some(Category::CpuOnlyWheel)
        );
        assert!(!choices_without_cuda(
            "invalid choice: 'rocm' (choose from 'cpu', 'cuda')"
        ));
    }

    #[test]
    fn a_failure_is_said_of_the_library_named_between_the_toolkit_and_it() {
        assert_eq!(
            cat("set up with cudatoolkit=11.0; built with cuDNN 8.9 but this machine's cuDNN is 8.2, incompatible"),
            Some(Category::LibraryPath)
        );
        assert_eq!(
            cat("cuDNN 8.9 installed; the CUDA toolkit 11.0 is incompatible with this build"),
            Some(Category::ToolkitMismatch)
        );
        assert_eq!(
            cat("all my AMD hardware, CPU and GPU, cannot run the CUDA kernels"),
            Some(Category::DriverMissing)
        );
    }

    #[test]
    fn a_negation_is_not_a_typo_of_its_word() {
        assert_eq!(
            correct_typos("the GPU becomes unavailable in the container"),
            None
        );
        assert_eq!(
            correct_typos("the GPU is not availble").as_deref(),
            Some("the GPU is not available")
        );
    }

    #[test]
    fn a_person_s_i_is_not_a_logger_s_info() {
        assert_eq!(severity("I 10:02:11.516 loaded 3 shards"), Severity::Info);
        assert_ne!(
            severity("I set it up on my board, but cuda.is_available() returns false"),
            Severity::Info
        );
    }

    #[test]
    fn phrases_whose_words_name_something_else() {
        // nvcc's banner calls it a compiler driver: not the NVIDIA driver.
        let w = words("nvcc: NVIDIA (R) Cuda compiler driver");
        assert!(w.has(S::Toolkit) && !w.has(S::Driver));
        assert!(words("the NVIDIA driver failed to load").has(S::Driver));
        // A stack part said to work clears a generic failure on its line, and only then.
        assert!(words("the driver and CUDA work fine, the job errors out")
            .failures
            .is_empty());
        assert!(words("the driver errors out, another card works fine").fails(F::Failed));
        assert!(words("nvcc命令能正常执行,只是训练时报错")
            .failures
            .is_empty());
        // A shell's refusal is said of the command it names.
        assert!(!words("bash: my-tool: command not found").fails(F::NotFound));
        assert!(words("bash: nvcc: command not found").fails(F::NotFound));
        assert!(
            words("'nvcc' is not recognized as an internal or external command").fails(F::NotFound)
        );
    }

    #[test]
    fn an_architecture_named_absent_or_by_its_card_is_the_build_s() {
        assert_eq!(
            cat("the image's torch has no sm_61 kernels, so every op fails"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("Release 2.0 no longer supporting Tesla K20c?"),
            Some(Category::NoKernelImage)
        );
        // Attention kernels say themselves which cards they run on.
        assert_eq!(
            cat("flash attention is not supported on Tesla V100"),
            Some(Category::SdpaFallback)
        );
        // ... by architecture too, or by the cards they require: the kernel refuses this GPU,
        // attention falls back; no build lacks code for it.
        for line in [
            "flash attention is not supported on sm_75, using the math kernel",
            "this flash-attn kernel requires an Ampere or newer card",
            "RuntimeError: FlashAttention backward with dropout requires A100 or H100",
            "flash attention: your GPU is too old (sm_70), needs sm_80",
        ] {
            assert_eq!(cat(line), Some(Category::SdpaFallback), "{line}");
        }
        // A build of the kernel without this GPU's code is still no kernel image.
        assert_eq!(
            cat("flash_attn_2_cuda: no kernel image is available for execution on the device"),
            Some(Category::NoKernelImage)
        );
        // A card named without a failure of support is not an architecture's failure.
        assert_ne!(
            cat("GeForce RTX 3060 not found by the driver"),
            Some(Category::NoKernelImage)
        );
    }

    #[test]
    fn an_unresolved_symbol_without_a_subject_word_speaks_of_its_owner() {
        // The driver's entry point, a CUDA library's and NCCL's, each named bare in a title.
        for (line, subject, category) in [
            (
                "[Bug] undefined symbol: cuMemCreateSomething",
                S::DriverLibrary,
                Category::DriverTooOld,
            ),
            (
                "undefined symbol: cublasLtMatmulSomething, version 12",
                S::CudaLibrary,
                Category::LibraryPath,
            ),
            (
                "undefined symbol: ncclCommSomething",
                S::Nccl,
                Category::Nccl,
            ),
        ] {
            let c = read(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!((c.subject, c.category), (subject, category), "{line}");
            assert!(c.is_specific(), "{line}");
        }
        // A framework's C++ symbol keeps the generic reading.
        let c = read("undefined symbol: _ZN2at6detail10empty_cudaE").unwrap_or_else(|| panic!());
        assert_eq!(c.category, Category::AbiMismatch);
    }

    #[test]
    fn cpu_builds_runtimes_and_version_pairs_in_their_own_words() {
        // A package's CPU flavour and a program that says it runs on the CPU.
        for line in [
            "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: 'CPUExecutionProvider'",
            "Loading binary /venv/lib/site-packages/bitsandbytes/libbitsandbytes_cpu.so...",
            "paddle only cpu is used after pip install paddlepaddle==2.6.1",
            "import paddle之后提示只能使用cpu",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
        // Kubernetes' and the runtimes' objects.
        for line in [
            "nvidia-device-plugin-daemonset-x2k 0/1 CrashLoopBackOff 7 12m",
            "Error: OCI runtime create failed: unable to start container process",
            "FATAL: singularity could not find the nvidia driver libraries",
        ] {
            assert_eq!(cat(line), Some(Category::Container), "{line}");
        }
        assert_eq!(
            cat("RuntimeError: jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.7."),
            Some(Category::VersionSuffixMismatch)
        );
    }

    #[test]
    fn calls_read_with_their_answers_and_libraries_by_their_owner() {
        assert_eq!(
            cat("print(tf.test.is_built_with_cuda())  # False"),
            Some(Category::CpuOnlyWheel)
        );
        assert_eq!(
            cat("torch.cuda.is_available()发现是False"),
            Some(Category::DriverMissing)
        );
        assert_eq!(cat("torch.cuda.is_available() is True"), None);
        assert_eq!(
            cat("ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory"),
            Some(Category::AbiMismatch)
        );
        assert_eq!(
            cat("ERROR: Unable to load the kernel module 'nvidia.ko'. This happens when it was built with a version of gcc that differs from the one used to build the target kernel"),
            Some(Category::DriverMissing)
        );
    }

    #[test]
    fn requirements_against_what_was_found_are_read() {
        for line in [
            "The NVIDIA driver 470.82 does not support CUDA 12.1. Please update the driver.",
            "requires NVIDIA driver >= 525.60.13, found 470.161.03",
        ] {
            assert_eq!(cat(line), Some(Category::DriverTooOld), "{line}");
        }
        assert_eq!(
            cat(
                "xFormers was built for: PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.1.0+cu121)"
            ),
            Some(Category::VersionSuffixMismatch)
        );
        assert_eq!(
            cat("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 9, 2) but found runtime version (8, 5, 0)."),
            Some(Category::LibraryPath)
        );
        assert_eq!(
            cat("Error: failed to run cuda initialization: CUDA driver is a stub library"),
            Some(Category::LibraryPath)
        );
    }

    #[test]
    fn an_unresolved_symbol_is_judged_by_its_owner() {
        // NCCL's entry point: another NCCL loaded first.
        assert_eq!(
            cat("ImportError: /x/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommWindowRegister"),
            Some(Category::Nccl)
        );
        // The driver's entry point looked up in the Windows driver DLL: the driver is too old.
        assert_eq!(
            cat(
                r#"msg="unable to load cuda driver library" library=C:\WINDOWS\system32\nvcuda.dll error="symbol lookup for cuCtxCreate_v4 failed""#
            ),
            Some(Category::DriverTooOld)
        );
        // The toolkit's stub of libcuda loaded in place of the driver's.
        assert_eq!(
            cat("OSError: /opt/cuda/lib64/stubs/libcuda.so: undefined symbol: cuDeviceGetUuid"),
            Some(Category::LibraryPath)
        );
        // A compiled module's import that misses a procedure, no DLL named: built against
        // other versions of what it links.
        assert_eq!(
            cat("ImportError: DLL load failed while importing _ext: The specified procedure could not be found."),
            Some(Category::AbiMismatch)
        );
        // A named DLL that cannot be loaded stays a DLL problem.
        assert_eq!(
            cat("OSError: [WinError 126] The specified module could not be found. Error loading \"c:\\x\\torch\\lib\\cudnn_ops64_9.dll\""),
            Some(Category::WindowsDll)
        );
    }

    #[test]
    fn a_collective_timeout_alone_names_no_nccl_failure() {
        assert_eq!(
            cat("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=BROADCAST) ran for 600000 milliseconds before timing out."),
            None
        );
        assert_eq!(cat("NCCL hangs at init on two nodes"), Some(Category::Nccl));
    }

    #[test]
    fn program_bugs_name_no_family_of_the_environment() {
        for line in [
            "RuntimeError: CUDA error: device-side assert triggered",
            "RuntimeError: size mismatch for fc.weight: copying a param with shape torch.Size([10, 512])",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ] {
            assert_eq!(cat(line), None, "{line}");
        }
        // Values on different devices are read as what they are: the program's placement.
        assert_eq!(
            cat("RuntimeError: Expected all tensors to be on the same device, but found at least two devices"),
            Some(Category::NotEnvironment)
        );
    }

    #[test]
    fn a_card_too_old_is_its_architecture_and_cuda_too_old_the_driver_s() {
        for line in [
            "GPU too old for this version of pytorch",
            "is my gpu too old?",
            "显卡太老了",
        ] {
            assert_eq!(cat(line), Some(Category::NoKernelImage), "{line}");
        }
        for line in [
            "CUDA version too old",
            "your GPU driver is too old",
            "cuda版本低",
            "the GPU's CUDA is too old",
        ] {
            assert_eq!(cat(line), Some(Category::DriverTooOld), "{line}");
        }
    }

    #[test]
    fn a_library_outside_the_stack_is_not_a_cuda_library() {
        for line in [
            "ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
            "OSError: libsndfile.so.1: cannot open shared object file: No such file or directory",
            "error while loading shared libraries: libgomp.so.1: cannot open shared object file",
            "python: error while loading shared libraries: libpython3.8.so.1.0: cannot open shared object file: No such file or directory",
        ] {
            assert_eq!(cat(line), Some(Category::NotEnvironment), "{line}");
        }
        for line in [
            "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
            "OSError: libtorch_cuda.so: cannot open shared object file: No such file or directory",
            // A library of the stack's own directory is the stack's.
            "ImportError: /usr/local/cuda/lib64/libfoo.so.1: cannot open shared object file",
        ] {
            assert_eq!(cat(line), Some(Category::LibraryPath), "{line}");
        }
    }

    #[test]
    fn a_selection_of_gpus_set_in_code_without_effect_is_the_program_s() {
        for line in [
            "[1.12] os.environ[\"CUDA_VISIBLE_DEVICES\"] has no effect",
            "setting CUDA_VISIBLE_DEVICES in my code does not work, it always uses GPU 0",
        ] {
            assert_eq!(cat(line), Some(Category::NotEnvironment), "{line}");
        }
        for line in [
            // The shell's setting, and the framework's own warning about the variable.
            "CUDA_VISIBLE_DEVICES=1 python train.py does not work: No CUDA GPUs are available",
            "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
        ] {
            assert_ne!(cat(line), Some(Category::NotEnvironment), "{line}");
        }
    }

    /// The negatives' families are written for the program's choices of devices (where its
    /// values are, which GPUs it selects) and a library outside the stack: nothing else reads
    /// as a negative.
    #[test]
    fn only_the_program_s_choices_and_system_libraries_read_as_negatives() {
        let subjects = [
            S::Hardware,
            S::Nccl,
            S::Container,
            S::WindowsDll,
            S::Companion,
            S::Toolkit,
            S::HostCompiler,
            S::GpuArch,
            S::Attention,
            S::Driver,
            S::DriverLibrary,
            S::KernelModule,
            S::CudaLibrary,
            S::Framework,
            S::Gpu,
            S::Memory,
            S::Placement,
            S::Selection,
            S::OtherLibrary,
        ];
        let failures = [
            F::OutOfMemory,
            F::Fault,
            F::NotCompiled,
            F::UndefinedSymbol,
            F::CannotLoad,
            F::NotFound,
            F::TooOld,
            F::Mismatch,
            F::Unsupported,
            F::Timeout,
            F::Hang,
            F::Denied,
            F::NotAvailable,
            F::NotNvidia,
            F::Required,
            F::Misplaced,
            F::Ignored,
            F::Failed,
        ];
        for s in subjects {
            for f in failures {
                let mut w = Words::default();
                w.add_subject(s, 0);
                w.add_failure(f);
                let negative = category_of("", &w).is_some_and(|r| r.0 == Category::NotEnvironment);
                let own_choice = matches!(f, F::Misplaced | F::Ignored);
                let system_library = s == S::OtherLibrary
                    && matches!(
                        f,
                        F::CannotLoad | F::NotFound | F::UndefinedSymbol | F::Failed
                    );
                assert_eq!(negative, own_choice || system_library, "{s:?} {f:?}");
            }
        }
    }

    #[test]
    fn severity_reads_the_line() {
        assert_eq!(
            severity(
                "/usr/include/crt/host_config.h:132:2: error: #error -- unsupported GNU version!"
            ),
            Severity::Fatal
        );
        assert_eq!(
            severity("UserWarning: There are no g++ version bounds defined for CUDA version 12.1"),
            Severity::Warning
        );
        assert_eq!(severity("RuntimeError: boom"), Severity::Fatal);
        assert_eq!(severity("cuda is not available"), Severity::Plain);
        assert_eq!(
            severity("omega:18302:18445 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory"),
            Severity::Info
        );
    }

    #[test]
    fn another_ending_of_a_domain_word_is_not_a_typo() {
        assert_eq!(correct_typos("Unexpected compiler version"), None);
        // Plurals and tenses are the word itself: "devices" stays "devices".
        assert_eq!(correct_typos("smi says: No devices were found"), None);
        assert_eq!(correct_typos("both drivers and containers"), None);
        assert_eq!(correct_typos("the library is missing"), None);
        assert_eq!(
            correct_typos("tf lists no devcie").as_deref(),
            Some("tf lists no device")
        );
    }

    #[test]
    fn typos_of_the_domain_words_are_corrected() {
        assert_eq!(
            correct_typos("cuda is not avaliable, driver is insuficient").as_deref(),
            Some("cuda is not available, driver is insufficient")
        );
        assert_eq!(correct_typos("the round table"), None);
        assert_eq!(correct_typos("cuda available"), None);
    }

    #[test]
    fn cuda_error_numbers_read_as_what_they_mean() {
        assert_eq!(
            cat("[TRT] CUDA initialization failure with error: 35. Check your install"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("myapp: CUDA error(222) while loading module"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("cudaGetDeviceCount returned 100"),
            Some(Category::DriverMissing)
        );
        assert_eq!(
            cat("kernel launch: CUDA error code 209"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 999: unknown error"),
            Some(Category::DriverMissing)
        );
        // A version is not a code, nor a number with no CUDA on the line.
        assert_eq!(
            cuda_error_code("CUDA error in version 35.1 of the tool"),
            None
        );
        assert_eq!(cuda_error_code("http error 100 from the proxy"), None);
    }

    #[test]
    fn what_a_build_names_and_lacks_in_its_own_words() {
        // CUDA's own identifiers unknown to the compiler: the toolkit is older than the code.
        for line in [
            "kernel.cu(146): error: identifier \"__shfl_xor_sync\" is undefined",
            "x.cu(11): error: identifier \"cudaHostRegisterReadOnly\" is undefined",
            "a.cpp:3:5: error: 'cudaMallocAsync' was not declared in this scope",
            "b.cu:9: error: use of undeclared identifier 'cuTensorMapEncodeTiled'",
        ] {
            assert_eq!(cat(line), Some(Category::ToolkitMismatch), "{line}");
        }
        // A program's own identifier is not the toolkit's.
        assert_eq!(
            cuda_identifier_undefined("m.cu(3): error: identifier \"my_helper\" is undefined"),
            None
        );
        // A provider list without CUDA's: the package's CPU build.
        assert_eq!(
            cat("Available providers: ['AzureExecutionProvider', 'CPUExecutionProvider']"),
            Some(Category::CpuOnlyWheel)
        );
        assert_eq!(
            cat("Available providers: ['CUDAExecutionProvider', 'CPUExecutionProvider']"),
            None
        );
        // An empty CUDA_HOME joined to a toolkit file.
        assert_eq!(
            cat("ninja: error: '/lib64/libcudart.so', needed by 'ext.so', missing"),
            Some(Category::CudaHomeMissing)
        );
        assert_eq!(
            cat("ninja: error: '/usr/local/cuda/lib64/libcudart.so', needed by 'ext.so', missing"),
            Some(Category::LibraryPath)
        );
        // A header and a library of two majors.
        assert_eq!(
            cat("[cudnn init] libcudnn v7 with header v5 unmatched!"),
            Some(Category::LibraryPath)
        );
    }

    #[test]
    fn hangs_of_several_gpus_the_interconnect_and_a_driver_release() {
        assert_eq!(cat("单卡正常，两卡就卡住不动"), Some(Category::Nccl));
        assert_eq!(
            cat("training on two GPUs hangs at the first step"),
            Some(Category::Nccl)
        );
        assert_eq!(cat("training hangs at the first step"), None);
        assert_eq!(
            cat("ncclAllReduce enters a deadlock on two GPUs with no NVLink"),
            Some(Category::Nccl)
        );
        // NVLink the interconnect is not the device linker.
        assert_eq!(cat("error: no NVLink between the GPUs"), None);
        assert_eq!(
            cat("nvlink error   : Undefined reference to '_Z3foov' in 'a.o'"),
            Some(Category::AbiMismatch)
        );
        assert_eq!(
            cat("This container was built for NVIDIA Driver Release 545.23 or later, but version 535.104.05 was detected"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("PyTorch CUDA version and system CUDA version not match"),
            Some(Category::ToolkitMismatch)
        );
    }

    #[test]
    fn the_fabric_manager_and_windows_loader_numbers() {
        // Error 802 in CUDA's words or number: the system around the GPUs is not up.
        assert_eq!(
            cat("my_test: CUDA failure common.cu:941 'system not yet initialized'"),
            Some(Category::DriverMissing)
        );
        assert_eq!(
            cat("RuntimeError: cuda runtime error (802) : at THCGeneral.cpp:50"),
            Some(Category::DriverMissing)
        );
        // Windows' loader numbers said of a DLL, in any framework's wording.
        assert_eq!(
            cat("RuntimeError: The third-party dynamic library (cufft64_10.dll) that SomeLib depends on could not be used (error code is 126)"),
            Some(Category::WindowsDll)
        );
        assert_eq!(
            cat("The dynamic library (curand64_10.dll) that X depends on is not configured correctly."),
            Some(Category::WindowsDll)
        );
        assert_eq!(
            windows_error_code("error code is 126 in foo.dll"),
            Some(F::CannotLoad)
        );
        assert_eq!(windows_error_code("error 127"), Some(F::UndefinedSymbol));
        assert_eq!(windows_error_code("error 1260"), None);
        // A number with no DLL on the line is not read as Windows'.
        assert_eq!(cat("step failed with error code 126"), None);
    }

    #[test]
    fn a_required_version_newer_than_the_one_found_is_too_old() {
        assert_eq!(
            cat("backend init failed: found CUDA driver version 11080, but the library was built against 12030, which is newer"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("Outdated cuDNN installation found: the local cuDNN must be no lower than 9100"),
            Some(Category::LibraryPath)
        );
        // The driver named first is what is too old; the toolkit after it is what needs it.
        assert_eq!(
            cat("error: the CUDA driver is too old for the installed CUDA toolkit"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("提示需要更新显卡驱动才能运行"),
            Some(Category::DriverTooOld)
        );
    }

    #[test]
    fn the_driver_library_against_the_kernel_module() {
        assert_eq!(
            cat("kernel version 550.1.2 does not match DSO version 550.3.4"),
            Some(Category::DriverMissing)
        );
        assert_eq!(
            cat("the nvidia module is not loaded after the kernel upgrade"),
            Some(Category::DriverMissing)
        );
        assert_eq!(
            cat("smi says: No devices were found"),
            Some(Category::DriverMissing)
        );
    }

    #[test]
    fn tensors_that_disagree_are_not_versions_that_do() {
        assert_eq!(
            cat("RuntimeError: size mismatch for fc.weight: torch.Size([2]) vs torch.Size([6]), version 2"),
            None
        );
        assert_eq!(
            cat("torch version mismatch between the two packages"),
            Some(Category::VersionSuffixMismatch)
        );
    }

    #[test]
    fn a_library_in_an_image_s_tag_is_what_the_image_was_built_with() {
        let line = "docker run --gpus all myorg/trainer:1.4-cuda12.1-cudnn9 python x.py";
        assert!(in_image_tag(line, line.find("cudnn9").unwrap()));
        // A library file and a URL are not image tags.
        let file = "OSError: /opt/lib/libcudnn.so.9: cannot open shared object file";
        assert!(!in_image_tag(file, file.find("libcudnn").unwrap()));
        let url = "see https://example.org/cudnn-install";
        assert!(!in_image_tag(url, url.find("cudnn").unwrap()));
        // Only the tag names no library the failure is said of; the runtime stays.
        assert_eq!(
            cat("pulled myorg/trainer:1.4-cuda12.1-cudnn9 with nvidia-docker, GPU not available"),
            Some(Category::Container)
        );
    }

    #[test]
    fn no_right_before_a_part_of_the_stack_is_it_missing() {
        assert_eq!(
            cat("lspci lists the card, but nvidia-smi says there is no NVIDIA driver"),
            Some(Category::DriverMissing)
        );
        assert!(no_right_before("the tool finds no "));
        assert!(!no_right_before("the tool finds a "));
        // What the "no" denies follows the part: the part is there.
        assert!(!words("there were no driver errors in the kernel log").fails(F::NotFound));
        assert!(words("the kernel log says no driver was loaded").fails(F::NotFound));
        assert!(said_of_what_follows(" issues at all"));
        assert!(!said_of_what_follows(" installed on this host"));
    }

    #[test]
    fn a_message_stopped_before_a_name_and_the_name() {
        assert!(ends_before_a_name("please set environment variable"));
        assert!(ends_before_a_name("Set the Variable: "));
        assert!(!ends_before_a_name("variable not set"));
        assert!(begins_with_a_name("CUDNN_HOME to the cudnn root"));
        assert!(begins_with_a_name("CUDA_HOME."));
        assert!(!begins_with_a_name("Could not find"));
        assert!(!begins_with_a_name("A b"));
        assert!(!begins_with_a_name("ERROR: the build failed"));
        assert!(begins_with_a_name("PATH and restart the shell"));
    }

    #[test]
    fn a_name_a_stack_module_lacks_and_the_frame_that_asked() {
        assert_eq!(
            api_gap("AttributeError: module 'numpy.linalg' has no attribute 'oldname'"),
            Some(("numpy", "oldname"))
        );
        assert_eq!(
            api_gap("ImportError: cannot import name 'TypeIs' from 'typing_extensions' (/x/typing_extensions.py)"),
            Some(("typing_extensions", "TypeIs"))
        );
        // An object's attribute, a module outside the stack, a circular import.
        assert_eq!(
            api_gap("AttributeError: 'NoneType' object has no attribute 'numpy'"),
            None
        );
        assert_eq!(
            api_gap("AttributeError: module 'mytools' has no attribute 'x'"),
            None
        );
        assert_eq!(
            api_gap(
                "ImportError: cannot import name 'x' from partially initialized module 'torch'"
            ),
            None
        );
        assert_eq!(
            frame_package(
                r#"  File "/v/lib/python3.11/site-packages/numba_cuda/np/a.py", line 4, in <module>"#
            ),
            Some("numba_cuda")
        );
        assert_eq!(
            frame_package(r#"File "train.py", line 4, in <module>"#),
            Some("")
        );
        assert_eq!(
            frame_package(r#"File "<frozen importlib._bootstrap>", line 1"#),
            None
        );
        let frames = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // numpy's own __getattr__ raises for the package that asked.
        assert_eq!(
            caller_package(&frames(&["", "numba_cuda", "numpy"]), "numpy"),
            Some("numba_cuda")
        );
        // The program's own file asked, or numpy raised about itself.
        assert_eq!(
            caller_package(&frames(&["numba_cuda", "", "numpy"]), "numpy"),
            None
        );
        assert_eq!(caller_package(&frames(&["numpy", "numpy"]), "numpy"), None);
        assert_eq!(caller_package(&frames(&[]), "numpy"), None);
    }

    #[test]
    fn a_build_without_cuda_in_its_own_words() {
        assert_eq!(
            cat("AttributeError: module 'torch._C' has no attribute '_cuda_getDeviceCount'"),
            Some(Category::CpuOnlyWheel)
        );
        assert_eq!(
            cat("RuntimeError: module 'jaxlib.gpu_ext' has no attribute 'SomeConfig'"),
            Some(Category::VersionSuffixMismatch)
        );
        assert_eq!(
            cat("ModuleNotFoundError: No module named 'mmcv._ext'"),
            Some(Category::CpuOnlyWheel)
        );
        // The CPU flavour as installed; not the GPU flavour, nor its removal.
        assert!(cpu_flavour_installed("pip install -U onnxruntime"));
        assert!(cpu_flavour_installed("onnxruntime 1.17.1"));
        assert!(!cpu_flavour_installed("pip install onnxruntime-gpu"));
        assert!(!cpu_flavour_installed("pip uninstall onnxruntime"));
        assert!(!cpu_flavour_installed("import onnxruntime as ort"));
        // Said on the same line, the build outranks the library it then could not find.
        assert_eq!(
            cat("cublas not found: the app was built without GPU support"),
            Some(Category::CpuOnlyWheel)
        );
    }

    #[test]
    fn a_cuda_check_with_its_status_number() {
        assert_eq!(
            cat("F0101 net.cpp:10] Check failed: error == cudaSuccess (2 vs. 0)  out of memory"),
            Some(Category::OutOfMemory)
        );
        assert_eq!(
            cat("F0101 common.cpp:5] Check failed: error == cudaSuccess (35 vs. 0)"),
            Some(Category::DriverTooOld)
        );
    }

    #[test]
    fn architectures_spelt_without_the_underscore() {
        assert!(names_sm_arch("this kernel is for sm80 only"));
        assert!(names_sm_arch("SM90a build"));
        assert!(!names_sm_arch("small sm1234 smtp"));
        assert_eq!(
            cat("error: this function is for sm80, but was built for sm75"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("ggml was not compiled with any CUDA arch <= 700"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("New releases no longer support the Tesla P40 (sm_61)"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("Flash attention only works with Ampere or newer"),
            Some(Category::SdpaFallback)
        );
    }

    #[test]
    fn chinese_for_a_build_without_cuda() {
        assert_eq!(
            cat("启动时说torch编译时未启用cuda"),
            Some(Category::CpuOnlyWheel)
        );
    }

    #[test]
    fn a_line_that_says_only_that_the_collective_timed_out_names_no_nccl_cause() {
        assert_eq!(cat("调大了 nccl 超时时间, 还是报错"), None);
        assert_eq!(
            cat("training hangs until the NCCL timeout when ranks get different batch counts"),
            None
        );
        assert_eq!(
            cat("NCCL WARN NET/IB : Got completion with error 12"),
            Some(Category::Nccl)
        );
    }

    #[test]
    fn the_toolkit_missing_in_cmake_s_and_the_shells_words() {
        assert_eq!(
            cat("Could NOT find CUDA (missing: CUDA_TOOLKIT_ROOT_DIR CUDA_NVCC_EXECUTABLE)"),
            Some(Category::CudaHomeMissing)
        );
        assert_eq!(
            cat("CMake Error at build.cmake:4: No CUDA toolset found."),
            Some(Category::CudaHomeMissing)
        );
        assert_eq!(
            cat("'nvcc' is not recognized as an internal or external command,"),
            Some(Category::CudaHomeMissing)
        );
        assert_eq!(
            cat("'nvidia-smi' 不是内部或外部命令，也不是可运行的程序"),
            Some(Category::DriverMissing)
        );
    }

    #[test]
    fn the_toolkit_building_an_extension_against_the_framework_s_cuda() {
        assert_eq!(
            cat("cuda extensions are being compiled with a version of Cuda that does not match the version used to compile Pytorch binaries."),
            Some(Category::ToolkitMismatch)
        );
        assert_eq!(
            cat("RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compile PyTorch (%s).', '11.3', '12.8')"),
            Some(Category::ToolkitMismatch)
        );
    }

    #[test]
    fn packages_whose_versions_conflict() {
        for line in [
            "torch=2.0.1和xformers版本冲突",
            "torchvision 0.16.0 conflicts with torch 2.0.1",
        ] {
            assert_eq!(cat(line), Some(Category::VersionSuffixMismatch), "{line}");
        }
    }

    #[test]
    fn a_container_s_own_lines() {
        for line in [
            "root@098b49afe624:/# nvidia-smi",
            "qna-transformers_1  |     torch._C._cuda_init()",
            "api-1  | RuntimeError: Found no NVIDIA driver on your system.",
        ] {
            assert!(is_container_line(line), "{line}");
        }
        for line in [
            "root@my-workstation:~# nvidia-smi",
            "| NVIDIA-SMI 535.104  Driver Version: 535.104 |",
            "a + b | c",
        ] {
            assert!(!is_container_line(line), "{line}");
        }
    }

    #[test]
    fn an_attention_kernel_said_not_to_support_a_card() {
        for line in [
            "FlashAttention does not work on RTX 50s",
            "Flash attention 2 didn't support V100, and it just throws error on V100 gpus.",
        ] {
            assert_eq!(cat(line), Some(Category::SdpaFallback), "{line}");
        }
        // Support denied a card by a build that is no attention kernel: its kernel image.
        assert_eq!(
            cat("only to find out that the wheel doesn't actually support sm_75"),
            Some(Category::NoKernelImage)
        );
    }

    #[test]
    fn a_toolkit_its_build_cannot_locate() {
        for line in [
            "OSError: The nvcc binary could not be located in your $PATH. Either add it to your path, or set $CUDAHOME",
            "CMakeDetermineCUDACompiler.cmake:227 (message): Couldn't find CUDA library root",
            "legion/runtime/runtime.mk:287: *** CUDA variable is not defined, aborting build.  Stop.",
            "CMake Error at source/tnn/device/cuda/CMakeLists.txt:13 (message): not defined environment variable:CUDNN_ROOT_DIR",
        ] {
            assert_eq!(cat(line), Some(Category::CudaHomeMissing), "{line}");
        }
    }

    #[test]
    fn memory_said_to_be_short_in_other_words() {
        for line in [
            "readme上面的，应该是gpu内存不足",
            "vLLM v0.9.1 Free Memory on device on startup is less than desired GPU memory utilization",
            "请问一下为什么会out memory？",
            "RuntimeError: not enough GPU memory to load the model",
        ] {
            assert_eq!(cat(line), Some(Category::OutOfMemory), "{line}");
        }
        // Memory of the host, or the words inside others.
        assert_eq!(cat("the paging file: without memory of the past"), None);
    }

    #[test]
    fn an_entry_point_named_as_not_found_is_an_unresolved_symbol() {
        assert_eq!(
            cat("RuntimeError: Function \"cuMemAllocAsync\" not found"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(
            cat("symbol cuTensorMapEncodeTiled was not found in libcuda"),
            Some(Category::DriverTooOld)
        );
    }

    #[test]
    fn onnx_runtime_offering_only_its_cpu_provider() {
        for line in [
            "ValueError: ['CUDAExecutionProvider'] does not contain a subset of available providers ['CPUExecutionProvider']",
            "If you install `onnxruntime-gpu` first and then `onnxruntime`, you will notice that only `CPUExecutionProvider` is available.",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
    }

    #[test]
    fn chinese_for_insufficient_no_gpu_build_and_memory_blown() {
        assert_eq!(
            cat("报错 CUDA驱动版本不足以支持CUDA运行时版本"),
            Some(Category::DriverTooOld)
        );
        assert_eq!(cat("paddle提示没有gpu版本"), Some(Category::CpuOnlyWheel));
        assert_eq!(cat("batch开大以后显存爆了"), Some(Category::OutOfMemory));
    }

    #[test]
    fn a_gpu_below_what_a_library_was_built_for() {
        assert_eq!(
            cat("RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH"),
            Some(Category::NoKernelImage)
        );
        assert_eq!(
            cat("runner: GPU compute capability 3.5 is below the minimum 5.0"),
            Some(Category::NoKernelImage)
        );
        // An attention kernel refusing the architecture: the corpora's threads answer it with
        // attention's fallback (a card it does not run on), not a build to redo.
        assert_eq!(
            cat("ValueError: this GPU architecture does not support FlashAttention 2"),
            Some(Category::SdpaFallback)
        );
        assert_eq!(
            cat("Error: the current card does not support Flash Attention"),
            Some(Category::SdpaFallback)
        );
    }

    #[test]
    fn the_parts_around_the_gpu_that_fail() {
        assert_eq!(
            cat("the GPU dropped out again, error on the PCIe riser"),
            Some(Category::GpuHardware)
        );
        assert_eq!(
            cat("| 0  Tesla V100   ERR!  |"),
            Some(Category::GpuHardware)
        );
    }

    #[test]
    fn bf16_refused_by_an_older_gpu_names_no_environment_cause() {
        assert_eq!(
            cat("Your GPU (compute capability 7.5) does not support bfloat16"),
            None
        );
    }

    #[test]
    fn a_gpu_that_is_not_nvidia_s() {
        assert_eq!(
            cat("my laptop only has an integrated Intel GPU (Iris Xe)"),
            Some(Category::DriverMissing)
        );
        assert_eq!(
            cat("电脑是核显，没有独立显卡"),
            Some(Category::DriverMissing)
        );
    }

    /// A framework's CPU package named beside its GPU package is the CPU build's files winning;
    /// the GPU package alone, or a module path of the package, is not.
    #[test]
    fn a_cpu_package_beside_its_gpu_package() {
        for line in [
            "Do not install both onnxruntime and onnxruntime-gpu",
            "pip list: onnxruntime==1.16.0 onnxruntime-gpu==1.16.0",
            "faiss-cpu and faiss-gpu are both installed",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
        for line in [
            "I installed onnxruntime-gpu 1.16",
            "onnxruntime-gpu: onnxruntime/capi/onnxruntime_pybind11_state.so cannot open",
            "tensorflow-gpu is deprecated",
        ] {
            assert_ne!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
    }

    #[test]
    fn memory_run_out_needs_no_subject_word_unless_the_line_says_the_host_s() {
        for line in [
            "Got an OOM, unloading all loaded models.",
            "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 5120.00 MiB on device 0: cudaMalloc failed: out of memory",
            "MemoryError: std::bad_alloc: out_of_memory: RMM failure at: pool_memory_resource.hpp:196: Maximum pool size exceeded",
        ] {
            assert_eq!(cat(line), Some(Category::OutOfMemory), "{line}");
        }
        for line in [
            "MemoryError: Unable to allocate 3.2 GiB for an array (out of memory)",
            "the job ran out of memory and was killed by the OOM killer",
            "FP32 will cause Out of Memory on the V100",
            "out of memory: not enough RAM to load the dataset",
        ] {
            assert_ne!(cat(line), Some(Category::OutOfMemory), "{line}");
        }
    }

    #[test]
    fn a_package_s_compiled_part_missing_is_a_build_without_it() {
        for line in [
            "ModuleNotFoundError: External AWQ kernels are not properly installed.No module named 'awq_ext'",
            "ValueError: Trying to use the exllama v2 backend, but could not import the C++/CUDA dependencies with the following error: No module named 'exllamav2_kernels'",
            "ModuleNotFoundError: No module named 'amp_C'",
            "RuntimeError: apex.optimizers.FusedAdam requires cuda extensions",
        ] {
            assert_eq!(cat(line), Some(Category::CpuOnlyWheel), "{line}");
        }
        // torch's own compiled module missing is a broken install, and a plain submodule a
        // release lacks is the pair of versions.
        assert_ne!(
            cat("ModuleNotFoundError: No module named 'torch._C'"),
            Some(Category::CpuOnlyWheel)
        );
        assert_ne!(
            cat("ModuleNotFoundError: No module named 'torch._six'"),
            Some(Category::CpuOnlyWheel)
        );
    }

    #[test]
    fn a_package_s_library_for_one_cuda_not_found_is_a_build_for_another() {
        for line in [
            "CUDA SETUP: Required library version not found: libbitsandbytes_cuda122.so. Maybe you need to compile it from source?",
            "No compatible CUDA library found (tried: libbitsandbytes_cuda131.so).",
        ] {
            assert_eq!(cat(line), Some(Category::VersionSuffixMismatch), "{line}");
        }
        assert_ne!(
            cat("OSError: libcudart.so.12: cannot open shared object file: No such file or directory"),
            Some(Category::VersionSuffixMismatch)
        );
    }

    #[test]
    fn a_stated_capability_floor_names_whose_kernels_refuse_the_gpu() {
        for (line, want) in [
            ("ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.", Some(Category::NoKernelImage)),
            ("AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use `--attention-backend flashinfer`.", Some(Category::SdpaFallback)),
            // The program's dtype: no environment cause on this line.
            ("RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.", None),
            ("RuntimeError: FlashAttention only support fp16 and bf16 data type", None),
            // A floor on CUDA's version is the toolkit's, and a program that needs a GPU at
            // all found none.
            ("Failed to get device capability: SM 12.x requires CUDA >= 12.9", None),
        ] {
            let got = cat(line);
            if want.is_none() {
                assert!(
                    !matches!(got, Some(Category::NoKernelImage | Category::SdpaFallback)),
                    "{line}: {got:?}"
                );
            } else {
                assert_eq!(got, want, "{line}");
            }
        }
    }
}
