//! Whole-log behaviour: the first causal error wins, warnings are noted, ranks, colour, CRLF.

use cudoctor_explain::{explain_str, Category, Role};

#[test]
fn early_driver_error_beats_later_generic_failure() {
    let log = "\
INFO starting training
RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver
Traceback (most recent call last):
  File \"train.py\", line 10, in <module>
RuntimeError: CUDA error: unspecified launch failure
CUDA kernel errors might be asynchronously reported at some other API call
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::DriverTooOld);
    assert_eq!(e.fields.get("found_cuda").map(String::as_str), Some("11.4"));
    assert_eq!(e.matched.first().map(|m| m.line_no), Some(2));
    assert!(e.cause.contains("11.4"));
}

#[test]
fn a_cause_later_in_the_log_beats_an_earlier_symptom() {
    let log = "\
[rank1]: RuntimeError: NCCL error: unhandled system error, NCCL version 2.18.1
node:1:2 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)
";
    let e = explain_str(log);
    assert_eq!(e.signature.as_deref(), Some("nccl-shared-memory"));
    assert_eq!(e.category, Category::Nccl);
}

#[test]
fn warnings_are_noted_but_do_not_win() {
    let log = "\
attention.py:407: UserWarning: 1Torch was not compiled with flash attention.
step 10 loss 1.23
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::OutOfMemory);
    assert_eq!(e.fields.get("tried").map(String::as_str), Some("2.00 GiB"));
    assert_eq!(e.fields.get("total").map(String::as_str), Some("23.65 GiB"));
    assert!(e
        .also_seen
        .iter()
        .any(|a| a.category == Category::SdpaFallback && a.role == Role::Warning));
    assert!(
        e.evidence
            .iter()
            .any(|x| x.contains("earlier") && x.contains("warning")),
        "{:?}",
        e.evidence
    );
}

#[test]
fn a_warning_alone_is_the_answer() {
    let e = explain_str("UserWarning: 1Torch was not compiled with flash attention.");
    assert_eq!(e.category, Category::SdpaFallback);
}

#[test]
fn interleaved_ranks_find_the_first_rank_failure() {
    let log = "\
[rank0]: step 100 loss 0.5
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 79.10 GiB of which 100.00 MiB is free.
[rank0]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank1]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::OutOfMemory);
    assert_eq!(e.matched.first().and_then(|m| m.rank), Some(3));
    assert!(e.matched.iter().all(|m| !m.text.starts_with("[rank")));
    let timeouts = e
        .also_seen
        .iter()
        .find(|a| a.signature == "nccl-collective-timeout");
    assert_eq!(timeouts.map(|t| t.count), Some(2));
}

#[test]
fn repeated_errors_across_ranks_are_counted_once() {
    let mut log = String::new();
    for r in 0..8 {
        log.push_str(&format!("[rank{r}]: RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"));
    }
    let e = explain_str(&log);
    assert_eq!(e.category, Category::Nccl);
    assert_eq!(e.matched.len(), 1, "{:?}", e.matched);
    assert!(
        e.evidence
            .iter()
            .any(|x| x.contains("8 times") && x.contains("0, 1, 2")),
        "{:?}",
        e.evidence
    );
}

#[test]
fn colour_codes_and_crlf_are_ignored() {
    let log = "\x1b[1;31mERROR\x1b[0m \x1b[33mImportError: libcudart.so.12: cannot open shared object file: No such file or directory\x1b[0m\r\nnext\r\n";
    let e = explain_str(log);
    assert_eq!(e.category, Category::LibraryPath);
    assert_eq!(
        e.fields.get("lib").map(String::as_str),
        Some("libcudart.so.12")
    );
    assert!(e
        .matched
        .iter()
        .all(|m| !m.text.contains('\x1b') && !m.text.contains('\r')));
}

#[test]
fn a_generic_cuda_error_is_context_not_a_cause() {
    let e = explain_str("RuntimeError: CUDA error: unspecified launch failure\n");
    assert_eq!(e.category, Category::Unknown);
    assert_eq!(e.confidence, 0.0);
    assert!(
        e.cause.contains("unspecified launch failure")
            && e.cause.contains("nothing in the input identifies")
    );
    assert_eq!(e.matched.len(), 1);
    assert!(!e.looked_for.is_empty());
}

#[test]
fn nothing_matched_lists_what_was_looked_for() {
    let e = explain_str("hello\nworld\n");
    assert_eq!(e.category, Category::Unknown);
    assert!(e.fix.is_empty() && e.matched.is_empty());
    for c in Category::ALL {
        if c != Category::Unknown {
            assert!(
                e.looked_for.iter().any(|l| l.category == c),
                "{c} missing from looked_for"
            );
        }
    }
}

#[test]
fn json_has_the_documented_shape() {
    let e = explain_str("AssertionError: Torch not compiled with CUDA enabled");
    let v: serde_json::Value =
        serde_json::from_str(&cudoctor_explain::render::to_json(&e)).unwrap_or_default();
    assert_eq!(v["category"], "cpu_only_wheel");
    assert!(v["confidence"].as_f64().is_some_and(|c| c > 0.9));
    assert!(v["cause"].is_string() && v["fix"].is_array() && v["evidence"].is_array());
    assert_eq!(v["matched"][0]["line_no"], 1);
    assert!(v["matched"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Torch not compiled")));
    assert_eq!(v["signature"], "torch-not-compiled-with-cuda");
    assert!(v["fields"].is_object());
}

#[test]
fn windows_messages_are_explained_on_any_os() {
    let e = explain_str(
        r#"OSError: [WinError 126] The specified module could not be found. Error loading "C:\venv\Lib\site-packages\torch\lib\c10.dll" or one of its dependencies."#,
    );
    assert_eq!(e.category, Category::WindowsDll);
    assert_eq!(e.fields.get("dll").map(String::as_str), Some("c10.dll"));
    let e = explain_str("Microsoft Visual C++ Redistributable is not installed, this may lead to the DLL load failure.");
    assert_eq!(e.category, Category::WindowsDll);
}

/// A Windows DLL failure in a portable ComfyUI: no fix installs torch from PyPI (its Windows
/// torch is the CPU build and would replace the CUDA one), and no command runs the python on
/// PATH instead of the one the log names.
#[test]
fn a_windows_dll_failure_never_installs_pypis_cpu_torch() {
    let e = explain_str(
        r#"OSError: [WinError 126] The specified module could not be found. Error loading "C:\ComfyUI_windows_portable\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll" or one of its dependencies."#,
    );
    assert_eq!(e.category, Category::WindowsDll);
    let commands: Vec<&str> = e
        .fix
        .iter()
        .filter_map(|f| match f {
            cudoctor_plan::FixStep::PowerShell(c) => Some(c.as_str()),
            _ => None,
        })
        .collect();
    assert!(e
        .fix
        .iter()
        .all(|f| !matches!(f, cudoctor_plan::FixStep::Shell(_))));
    assert_eq!(commands.len(), 1, "{:#?}", e.fix);
    assert!(
        commands[0].starts_with(
            r"& 'C:\ComfyUI_windows_portable\python_embeded\python.exe' -m pip install"
        ),
        "{}",
        commands[0]
    );
    assert!(commands[0].contains("--index-url"), "{}", commands[0]);

    // The CUDA build the log names is the index the fix installs from.
    let e = explain_str(
        "pytorch version: 2.4.0+cu121\r\nOSError: [WinError 126] The specified module could not be found. Error loading \"C:\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\torch\\lib\\fbgemm.dll\" or one of its dependencies.",
    );
    let cmd = e
        .fix
        .iter()
        .find_map(|f| match f {
            cudoctor_plan::FixStep::PowerShell(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(cmd.contains("python_embeded"), "{cmd}");
    assert!(cmd.trim_end_matches('\'').ends_with("cu121"), "{cmd}");
}

/// A portable ComfyUI's log begins with the prompt line its batch file echoes
/// (`C:\ComfyUI_windows_portable>.\python_embeded\python.exe -s ComfyUI\main.py`): a CPU torch
/// there is reinstalled by that interpreter from PyTorch's CUDA index, in PowerShell.
#[test]
fn a_comfyui_logs_prompt_names_the_python_its_fix_runs() {
    let e = explain_str(
        "C:\\ComfyUI_windows_portable>.\\python_embeded\\python.exe -s ComfyUI\\main.py --windows-standalone-build\r\nTotal VRAM 24564 MB\r\n  File \"C:\\ComfyUI_windows_portable\\ComfyUI\\comfy\\model_management.py\", line 221, in get_torch_device\r\nAssertionError: Torch not compiled with CUDA enabled",
    );
    assert_eq!(e.category, Category::CpuOnlyWheel);
    let cmd = e
        .fix
        .iter()
        .find_map(|f| match f {
            cudoctor_plan::FixStep::PowerShell(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        cmd.starts_with(
            r"& 'C:\ComfyUI_windows_portable\python_embeded\python.exe' -m pip install"
        ),
        "{:#?}",
        e.fix
    );
    assert!(cmd.contains("download.pytorch.org/whl/cu"), "{cmd}");
    assert!(e
        .fix
        .iter()
        .all(|f| !matches!(f, cudoctor_plan::FixStep::Shell(_))));
}

/// Every pip fix of a Windows log is a PowerShell command for the Python the log names (a
/// venv's Scripts\python.exe from its site-packages path), whatever the message.
#[test]
fn a_windows_logs_pip_fixes_run_its_own_python() {
    let e = explain_str(
        r#"  File "D:\proj\venv\Lib\site-packages\bitsandbytes\cextension.py", line 20, in <module>
RuntimeError: CUDA Setup failed despite GPU being available. Please run the following command to get more information: python -m bitsandbytes"#,
    );
    assert!(
        e.fix
            .iter()
            .any(|f| matches!(f, cudoctor_plan::FixStep::PowerShell(_))),
        "{:#?}",
        e.fix
    );
    for f in &e.fix {
        if let cudoctor_plan::FixStep::Shell(c) = f {
            panic!("a POSIX command for a Windows log: {c}");
        }
        if let cudoctor_plan::FixStep::PowerShell(c) = f {
            assert!(
                c.starts_with(r"& 'D:\proj\venv\Scripts\python.exe' -m pip"),
                "{c}"
            );
        }
    }
}

/// A terminal wraps at a fixed width, inside a word: the halves are read without a space too.
#[test]
fn a_message_wrapped_inside_a_word_is_read_whole() {
    let e = explain_str(
        "[rank0]:[E105 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpTyp\ne=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n",
    );
    // The collective-timeout signature read the joined line (its fields); a timeout alone names
    // no environment cause.
    assert_eq!(
        e.signature.as_deref(),
        Some("nccl-collective-timeout"),
        "{e:#?}"
    );
    assert_eq!(e.category, Category::NotEnvironment, "{e:#?}");
    assert_eq!(e.fields.get("op").map(String::as_str), Some("ALLREDUCE"));
}

/// Of two fatal lines, the one that says what failed answers, not the one that only says that
/// something failed (the driver's JIT refusing a newer PTX, under the linker's generic error).
#[test]
fn the_line_that_says_what_failed_answers() {
    let e = explain_str(
        "numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR\nptxas application ptx input, line 9; fatal   : Unsupported .version 8.4; current version is '8.2'\n",
    );
    assert_eq!(e.category, Category::DriverTooOld, "{e:#?}");
}

/// A collective timeout alone names no environment cause, but an NCCL error in the same log
/// still answers.
#[test]
fn a_timeout_defers_to_an_nccl_error() {
    let alone = "[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600659 milliseconds before timing out.\n";
    let e = explain_str(alone);
    assert_eq!(e.category, Category::NotEnvironment, "{e:#?}");
    let with_error = format!(
        "node1:123:456 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes, error: No space left on device (28)\n{alone}RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    );
    let e = explain_str(&with_error);
    assert_eq!(e.category, Category::Nccl, "{e:#?}");
}

/// A framework that does not see the GPU while the log shows the stack beneath it at work (the
/// driver's header, nvcc) or a Windows machine: the framework's build, not the driver.
#[test]
fn a_gpu_unseen_beside_a_working_stack_is_the_builds_doing() {
    let with_smi = "| NVIDIA-SMI 550.54.14   Driver Version: 550.54.14   CUDA Version: 12.4 |\n>>> torch.cuda.is_available() -> False\n";
    let e = explain_str(with_smi);
    assert_eq!(e.category, Category::CpuOnlyWheel, "{e:?}");
    assert!(e.evidence.iter().any(|l| l.contains("Driver Version")));
    let windows = "win11, cuda 12.1 installed\ntorch.cuda.is_available() returns False\n";
    assert_eq!(explain_str(windows).category, Category::CpuOnlyWheel);
    // Nothing shown of the stack and nothing said of the driver: the build is still the first
    // suspect (in the tuning corpora, no report that said only this was the driver's).
    let bare = "torch.cuda.is_available() returns False\n";
    assert_eq!(explain_str(bare).category, Category::CpuOnlyWheel);
    // The driver named in its failure is the driver's.
    let driver = "torch.cuda.is_available() returns False\nnvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n";
    assert_eq!(explain_str(driver).category, Category::DriverMissing);
    // The driver's branch gives the ceiling when the header's CUDA Version is not shown.
    let old = "Driver Version: 470.57.02\npip install cupy-cuda12x\ncupy not working on the GPU\n";
    assert_eq!(explain_str(old).category, Category::DriverTooOld);
}

/// The linker's flags name CUDA libraries; the driver refusing a module's image is the driver's.
#[test]
fn linker_flags_and_invalid_images_are_read() {
    assert_eq!(
        explain_str("/usr/bin/ld: can not not find -lcuda\n").category,
        Category::LibraryPath
    );
    assert_eq!(
        explain_str("Triton Error [CUDA]: device kernel image is invalid\n").category,
        Category::DriverTooOld
    );
}

/// A build tool's wrapper ("error: command ... failed with exit status 1") says only that its
/// step failed; the line above that says what failed answers, though it is quieter.
#[test]
fn what_failed_outranks_the_wrapper_that_reports_it() {
    let log = "unable to execute '/opt/cuda:/usr/local/cuda/bin/nvcc': No such file or directory\nerror: command '/opt/cuda:/usr/local/cuda/bin/nvcc' failed with exit status 1\n";
    assert_eq!(explain_str(log).category, Category::CudaHomeMissing);
}

/// A program that reports at INFO level that it found no GPU it can use answers when nothing
/// louder does; NCCL's INFO lines never answer.
#[test]
fn an_info_line_saying_no_gpu_is_usable_answers_alone() {
    let ollama = "time=2024-05-01T10:00:00.000Z level=INFO source=gpu.go:221 msg=\"no compatible GPUs were discovered\"\n";
    assert_eq!(explain_str(ollama).category, Category::DriverMissing);
    let nccl = "host:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0\n";
    assert_eq!(explain_str(nccl).category, Category::Unknown);
}

#[test]
fn a_cpu_build_listed_in_the_log_explains_the_gpu_it_does_not_see() {
    let log = "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nRuntimeError: No CUDA GPUs are available\n$ pip list | grep torch\ntorch 2.4.0+cpu\n";
    let e = explain_str(log);
    assert_eq!(e.category, Category::CpuOnlyWheel, "{e:?}");
}

#[test]
fn forward_compatibility_refused_means_a_driver_too_old_for_the_program() {
    let e = explain_str("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward compatibility was attempted on non supported HW");
    assert_eq!(e.category, Category::DriverTooOld);
}

#[test]
fn bf16_on_a_gpu_before_ampere_is_the_program_s_setting() {
    for log in [
        "ptxas /tmp/k.ptx, line 12; error   : Feature '.bf16' requires .target sm_80 or higher",
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your GPU has compute capability 7.0.",
    ] {
        assert_eq!(explain_str(log).category, Category::NotEnvironment, "{log}");
    }
}

#[test]
fn an_invalid_device_symbol_is_code_missing_for_the_gpu() {
    let e = explain_str("CUDA error 13 at src/kernels.cu:120: invalid device symbol");
    assert_eq!(e.category, Category::NoKernelImage);
}

#[test]
fn a_serving_engine_refusing_flash_attention_on_an_older_gpu() {
    let log = "ImportError: GPU with CUDA capability 7 5 is not supported for Flash Attention V2\nWARN text_generation_launcher: Could not import Flash Attention enabled models";
    assert_eq!(explain_str(log).category, Category::SdpaFallback);
}

#[test]
fn xformers_detail_line_pasted_without_its_heading() {
    let log = "    PyTorch 2.4.0+cu121 with CUDA 1201 (you have 2.5.1+cu121)\n    Python  3.10.11 (you have 3.10.11)\n  Please reinstall xformers";
    assert_eq!(explain_str(log).category, Category::AbiMismatch);
    let log = "    PyTorch 2.5.1+cu118 with CUDA 1108 (you have 2.5.1+cu124)";
    assert_eq!(explain_str(log).category, Category::VersionSuffixMismatch);
}

#[test]
fn bitsandbytes_cuda_setup_failing_on_windows_is_its_cpu_only_release() {
    let log = "Running on Windows 10\nCUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix your environment!";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
    let log = "CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix your environment!";
    assert_eq!(explain_str(log).category, Category::LibraryPath);
}

#[test]
fn an_insufficient_driver_on_a_machine_whose_gpu_is_not_nvidia_s() {
    let log = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\nThis laptop has an integrated Intel GPU (Iris Xe) only.";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
}

#[test]
fn the_machine_s_state_told_in_prose_decides_a_gpu_failure_no_line_explains() {
    // After a resume from suspend: the driver's unified-memory module.
    let log = "RuntimeError: CUDA error: unknown error\nit only happens after the laptop wakes from suspend; a reboot fixes it";
    let e = explain_str(log);
    assert_eq!(e.category, Category::DriverMissing);
    assert!(e
        .fix
        .iter()
        .any(|f| format!("{f:?}").contains("nvidia_uvm")));
    // The card's clocks named beside an illegal address: the hardware.
    let log = "CUDA error: an illegal memory access was encountered\nthe card runs with +150 core clock and an undervolt";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // Neither without the state: the illegal address stays the program's.
    let log = "CUDA error: an illegal memory access was encountered";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    // A cause that a line names is not answered again.
    let log = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\nafter resume from suspend";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
}

#[test]
fn a_machine_without_an_nvidia_gpu_has_none_to_give_a_container() {
    let log = "docker compose up\nError response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]\nI'm on an Apple silicon Mac";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
}

#[test]
fn a_device_map_that_sends_layers_to_disk_is_a_model_larger_than_the_gpu_s_memory() {
    for log in [
        "ValueError: We need an `offload_dir` to dispatch this model according to this `device_map`, the following submodules need to be offloaded: model.layers.26",
        "ValueError: We need an `offload_dir`to dispatch this model according to this`device_map`",
    ] {
        assert_eq!(explain_str(log).category, Category::OutOfMemory, "{log}");
    }
}

#[test]
fn torch_s_own_check_of_the_gpu_against_its_build_in_each_release_s_words() {
    for log in [
        "UserWarning: Found GPU0 NVIDIA GeForce RTX 5090 which is of compute capability (CC) 12.0.\nThe following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:\n- 9.0 which supports hardware CC >=9.0,<10.0",
        "Your installed torch==2.13.0+cu126 does not include kernels for this GPU. Reinstall the same version against a CUDA build that does, e.g.:",
        "No published PyTorch CUDA builds for release 2.13.0+cu130 support this GPU.",
        "Found GPU0 NVIDIA GeForce GTX 770 which is of cuda capability 3.0.\n    PyTorch no longer supports this GPU because it is too old.",
    ] {
        let e = explain_str(log);
        assert_eq!(e.category, Category::NoKernelImage, "{log}");
        assert_eq!(e.matched[0].signature, "torch-gpu-not-in-build", "{log}");
    }
    // The older range form warned of a GPU of the build's newest major, which runs its code.
    let log = "Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n    Minimum and Maximum cuda capability supported by this version of PyTorch is\n    (8.0) - (12.0)";
    assert_ne!(explain_str(log).category, Category::NoKernelImage);
}

#[test]
fn under_wsl_alone_a_driver_the_program_cannot_reach_is_the_loader_s() {
    // WSL's driver libraries live in /usr/lib/wsl/lib: a program that finds no device there
    // has a loader that does not search it (or finds a Linux driver's libcuda first).
    for log in [
        "Running on WSL2 Ubuntu\nnumba.cuda.cudadrv.driver.CudaAPIError: [100] Call to cuInit results in CUDA_ERROR_NO_DEVICE",
        "CUDA not found on WSL",
    ] {
        let e = explain_str(log);
        assert_eq!(e.category, Category::LibraryPath, "{log}");
        assert!(e.evidence.iter().any(|x| x.contains("/usr/lib/wsl/lib")), "{log}");
    }
    // The driver's own tools failing there too: the WSL machine has no GPU access.
    let log = "me@DESKTOP-930EG0A:~$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.";
    assert_eq!(explain_str(log).category, Category::Container);
    // A container runtime named beside WSL: the runtime's.
    let log = "docker run --gpus all on Docker Desktop with WSL2\nCall to cuInit results in CUDA_ERROR_NO_DEVICE";
    assert_eq!(explain_str(log).category, Category::Container);
}

#[test]
fn an_unresolved_driver_entry_point_outranks_a_louder_load_failure() {
    let log = "level=DEBUG msg=\"Unable to load nvcuda\" library=/usr/lib/libcuda.so.418.74 error=\"wrong ELF class: ELFCLASS32\"\ndlerr: /usr/lib64/libcuda.so.418.74: undefined symbol: cuCtxCreate_v3";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
}

#[test]
fn a_short_report_s_setup_is_not_what_its_generic_failure_is_said_of() {
    // The setup (a container, the GPU) listed beside a failure that names nothing of it.
    let report = "\
[Bug]: the table parser gpu failure
release 3.2, running with docker compose up -d
";
    assert_eq!(explain_str(report).category, Category::Unknown);
    // A tool that acts is what a generic failure is said of: the host compiler here.
    let build = "\
Building my_ext on Windows with MSVC 2019 stops
error C2872: 'std': ambiguous symbol
";
    assert_eq!(explain_str(build).category, Category::ToolkitMismatch);
}

#[test]
fn a_report_that_says_the_stack_works_names_no_cause_of_it() {
    let report = "\
Inference works, only training errors out
The driver and CUDA are no problem, the GUI and the web UI both run, training errors out.
";
    assert_eq!(explain_str(report).category, Category::Unknown);
    // Said of another card, "works fine" clears nothing of this one.
    let other =
        "nvidia-smi exits with an error on this box, on the same rack another card works fine";
    assert_eq!(explain_str(other).category, Category::DriverMissing);
}

#[test]
fn a_shell_s_refusal_is_the_command_s_own() {
    let report = "\
after docker run --gpus all my-image, inside the container
bash: pdf-tool: command not found
";
    assert_eq!(explain_str(report).category, Category::Unknown);
    // The stack's own tools refused are read as before.
    assert_eq!(
        explain_str("bash: nvcc: command not found").category,
        Category::CudaHomeMissing
    );
    assert_eq!(
        explain_str("'nvidia-smi' is not recognized as an internal or external command,").category,
        Category::DriverMissing
    );
}

#[test]
fn a_log_that_ends_on_the_program_s_own_data_error_is_the_program_s() {
    // cuBLAS reports an embedding index out of range as a failed allocation; run on the CPU,
    // the same step says what it is.
    let log = "\
RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`
on the CPU the same batch gives:
IndexError: index 50321 is out of bounds for dimension 0 with size 50257
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::NotEnvironment);
    assert_eq!(e.matched.first().map(|m| m.line_no), Some(3));
    // The program's error before the environment's is not the end of the log.
    let log = "\
KeyError: 'attention_mask'
RuntimeError: CUDA error: no kernel image is available for execution on the device
";
    assert_eq!(explain_str(log).category, Category::NoKernelImage);
    // An error about an object (a library that failed to load is a None) follows from the
    // failure before it.
    let log = "\
OSError: libcudnn_ops.so.9: cannot open shared object file: No such file or directory
AttributeError: 'NoneType' object has no attribute 'run'
";
    assert_eq!(explain_str(log).category, Category::LibraryPath);
    // A program's exception whose message names the stack is read as the stack's.
    let log = "\
RuntimeError: CUDA error: out of memory
ValueError: CUDA device 3 is out of range for this machine
";
    assert_ne!(explain_str(log).category, Category::NotEnvironment);
}

#[test]
fn a_gpu_unseen_with_no_word_of_the_driver_is_the_build_s() {
    // The framework says only that it found no GPU: most often a build without CUDA.
    let e = explain_str("WARNING:myapp.devices:No GPU found, falling back to the CPU");
    assert_eq!(e.category, Category::CpuOnlyWheel);
    let e = explain_str(
        "installed the package on my laptop, but torch.cuda.is_available() returns False",
    );
    assert_eq!(e.category, Category::CpuOnlyWheel);
    // The driver named in its own failure stays the driver's.
    let e = explain_str("NVIDIA driver not loaded, the GPU is not available");
    assert_eq!(e.category, Category::DriverMissing);
    // A CUDA call that returned an error ran in a CUDA build.
    let e =
        explain_str("RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable");
    assert_ne!(e.category, Category::CpuOnlyWheel);
    // In a container, the runtime that did not give it the GPU.
    let e = explain_str("inside the docker container torch.cuda.is_available() returns False");
    assert_eq!(e.category, Category::Container);
}

#[test]
fn a_numbered_gpu_that_stops_beside_its_cooling_is_the_hardware_s() {
    // "GPU2" is the GPU with its index; the fan named beside its failure is the card's cooling.
    let log = "ERROR: GPU2 has stopped responding, restarting\nits fan was at full speed while the card stayed cold (fan speed 100%)";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // Without the cooling named, nothing decides what failed.
    let log = "ERROR: GPU2 has stopped responding, restarting";
    assert_ne!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn faults_of_several_kinds_or_a_machine_going_down_are_the_hardware_s() {
    // One kind of fault, alone, stays the program's.
    let log = "RuntimeError: CUDA error: an illegal memory access was encountered";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    // Several kinds at random places in one report: the card.
    let log = "RuntimeError: CUDA error: an illegal memory access was encountered\nthe next run: RuntimeError: CUDA error: unspecified launch failure";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // The whole machine powering off under GPU load.
    let log = "training on the GPU, the machine shuts off with an error after ten minutes";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn a_program_said_to_run_on_the_cpu_is_the_gpu_unused() {
    // A symptom, read like "the GPU is not available": outside a container, the build.
    let report = "the detector runs on the CPU at full load while the gpu does nothing";
    assert_eq!(explain_str(report).category, Category::CpuOnlyWheel);
    // In a container, the runtime that did not give it the GPU.
    let report = "in the docker image: GPU not usable, running on CPU instead";
    assert_eq!(explain_str(report).category, Category::Container);
}

#[test]
fn a_provider_s_dependencies_unmet_are_its_libraries_unless_the_build_has_none() {
    let log = "[E:onnxruntime:Default] Failed to create CUDAExecutionProvider. Please reference the requirements page to ensure all dependencies are met.";
    assert_eq!(explain_str(log).category, Category::LibraryPath);
    // The CPU package stated anywhere: it has no CUDA libraries to load.
    let log = format!("{log}\n$ pip install onnxruntime 1.18");
    assert_eq!(explain_str(&log).category, Category::CpuOnlyWheel);
}

#[test]
fn a_library_that_is_a_windows_dll_is_windows_search_path_s() {
    let log = "2021-03-01 10:00:00: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found";
    let e = explain_str(log);
    assert_eq!(e.category, Category::WindowsDll);
    assert!(e.fix.iter().any(|f| format!("{f:?}").contains("PATH")));
    let log = "2021-03-01 10:00:00: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file";
    assert_eq!(explain_str(log).category, Category::LibraryPath);
}

#[test]
fn a_driver_lost_after_a_kernel_upgrade_is_its_module_not_rebuilt() {
    let log = "installed the driver and docker with the nvidia runtime\nafter the kernel upgrade and a reboot:\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver";
    let e = explain_str(log);
    assert_eq!(e.category, Category::DriverMissing);
    assert!(e.fix.iter().any(|f| format!("{f:?}").contains("dkms")));
    // A cause a line names is not answered again.
    let log = "after the kernel upgrade:\nRuntimeError: CUDA error: no kernel image is available for execution on the device";
    assert_eq!(explain_str(log).category, Category::NoKernelImage);
}

#[test]
fn a_name_one_package_asks_of_another_is_two_releases_that_do_not_fit() {
    // An installed package's frame raising about a module of the stack it imports.
    let log = "\
Traceback (most recent call last):
  File \"/opt/app/run.py\", line 3, in <module>
    import fastkernels
  File \"/opt/venv/lib/python3.12/site-packages/fastkernels/linalg/stack.py\", line 40, in <module>
    vstack_rows = np.row_stack
AttributeError: module 'numpy' has no attribute 'row_stack'
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::VersionSuffixMismatch);
    assert!(
        e.title.contains("fastkernels") && e.title.contains("numpy"),
        "{}",
        e.title
    );
    assert!(
        e.fix.iter().any(|f| format!("{f:?}").contains("numpy<X")),
        "{:?}",
        e.fix
    );
    // The same with an import, from a Windows path.
    let log = "\
  File \"C:\\Users\\me\\env\\Lib\\site-packages\\adapterlib\\__init__.py\", line 7, in <module>
    from transformers import NewCache
ImportError: cannot import name 'NewCache' from 'transformers' (C:\\Users\\me\\env\\Lib\\site-packages\\transformers\\__init__.py)
";
    assert_eq!(explain_str(log).category, Category::VersionSuffixMismatch);
    // The module's own __getattr__ raises last, for the package that asked.
    let log = "\
  File \"/srv/env/lib/python3.12/site-packages/fastkernels/linalg/stack.py\", line 40, in <module>
    vstack_rows = np.row_stack
  File \"/srv/env/lib/python3.12/site-packages/numpy/__init__.py\", line 700, in __getattr__
    raise AttributeError(f\"module {__name__!r} has no attribute {attr!r}\")
AttributeError: module 'numpy' has no attribute 'row_stack'
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::VersionSuffixMismatch);
    assert!(e.title.contains("fastkernels"), "{}", e.title);
}

#[test]
fn a_gap_of_the_program_s_own_code_or_objects_is_not_a_package_pair() {
    // The program's own file asks numpy for the name: no installed pair is named.
    let own_file = "\
  File \"/home/me/project/train.py\", line 12, in <module>
    x = np.row_stack(parts)
AttributeError: module 'numpy' has no attribute 'row_stack'
";
    assert_eq!(explain_str(own_file).category, Category::Unknown);
    // A package raising about its own internals.
    let own_package = "\
  File \"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py\", line 9, in f
AttributeError: module 'torch.nn' has no attribute 'Frobnicate'
";
    assert_eq!(explain_str(own_package).category, Category::Unknown);
    // An object's attribute, and a module outside the stack.
    let object = "\
  File \"/opt/venv/lib/python3.12/site-packages/fastkernels/ops.py\", line 5, in g
AttributeError: 'Tensor' object has no attribute 'row_stack'
";
    assert_eq!(explain_str(object).category, Category::Unknown);
    let other = "\
  File \"/opt/venv/lib/python3.12/site-packages/fastkernels/ops.py\", line 5, in g
ImportError: cannot import name 'helper' from 'mytools' (/home/me/mytools.py)
";
    assert_eq!(explain_str(other).category, Category::Unknown);
}

#[test]
fn a_message_wrapped_before_the_variable_it_names_is_read_whole() {
    // A build's message broken before the name it asks for: the name says what to set.
    let log = "\
CMake Error at src/CMakeLists.txt:12 (message):
  Could not locate the cudnn library files, please set environment variable
  CUDNN_HOME to the directory cudnn was unpacked into.
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::CudaHomeMissing);
    assert_eq!(e.matched.first().map(|m| m.line_no), Some(2));
    // Not wrapped: the line is read alone, as before.
    let alone = "\
Could not locate the cudnn library files, please set environment variable
make: *** [all] Error 2
";
    assert_ne!(explain_str(alone).category, Category::CudaHomeMissing);
}

#[test]
fn a_query_field_nvidia_smi_does_not_know_is_a_driver_older_than_it() {
    let log = "\
$ nvidia-smi --query-gpu=memory.reserved --format=csv
Field \"memory.reserved\" is not a valid field to query.
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::DriverTooOld);
    assert!(e.cause.contains("memory.reserved"), "{}", e.cause);
}

#[test]
fn vllm_s_memory_profile_leaving_the_kv_cache_nothing_is_memory() {
    // vLLM's profile, at INFO level, before the engine fails on it.
    let log = "\
INFO 01-02 10:00:00 worker.py:200] model weights take 13.50GiB; non_torch_memory takes 0.10GiB; PyTorch activation peak memory takes 2.00GiB; the rest of the memory reserved for KV Cache is -0.40GiB.
INFO 01-02 10:00:00 executor_base.py:100] # cuda blocks: 0, # CPU blocks: 2048
[rank0]: Traceback (most recent call last):
";
    assert_eq!(explain_str(log).category, Category::OutOfMemory);
    // A positive reservation is the profile of a working engine.
    let fine = "\
INFO 01-02 10:00:00 worker.py:200] the rest of the memory reserved for KV Cache is 3.40GiB.
INFO 01-02 10:00:00 executor_base.py:100] # cuda blocks: 1600, # CPU blocks: 2048
";
    assert_eq!(explain_str(fine).category, Category::Unknown);
}

#[test]
fn a_card_said_to_be_dead_is_its_hardware() {
    let log = "\
Since yesterday the render box is unusable: my GPU died, the screen goes black under load.
";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // A process or a worker that died is not the card.
    let worker = "\
(raylet) A worker died or was killed while executing a task on the GPU node.
";
    assert_ne!(explain_str(worker).category, Category::GpuHardware);
}

#[test]
fn a_module_built_against_another_numpy_is_an_abi_pair() {
    let log = "\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.1.0 as it may crash.
Traceback (most recent call last):
  File \"/srv/job/infer.py\", line 1, in <module>
    import fastkernels
AttributeError: _ARRAY_API not found
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::AbiMismatch);
    assert_eq!(e.signature.as_deref(), Some("numpy-abi-mismatch"));
    // Printed at import by a framework that runs on: a failure named later is the answer.
    let later = "\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.1.0 as it may crash.
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.06 GiB is free.
";
    assert_eq!(explain_str(later).category, Category::OutOfMemory);
}

#[test]
fn a_submodule_one_package_imports_from_another_release_is_the_pair() {
    let log = "\
  File \"/opt/venv/lib/python3.11/site-packages/oldtrainer/utils.py\", line 3, in <module>
    from torch._six import inf
ModuleNotFoundError: No module named 'torch._six'
";
    assert_eq!(explain_str(log).category, Category::VersionSuffixMismatch);
}

#[test]
fn a_program_that_states_the_gpu_it_needs_has_none() {
    let log = "[12:01:02.5][error] The solver requires a CUDA-capable GPU (compute capability 3.5 or higher).";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
    // A CUDA build asked for names no GPU: not a missing GPU.
    let log = "note: the RTX 5080 needs a CUDA 12.8 build of the library";
    assert_ne!(explain_str(log).category, Category::DriverMissing);
}

#[test]
fn a_cluster_that_counts_zero_gpus_or_does_not_recognize_one_is_the_runtime() {
    let log = "after installing the operator, kubectl describe node shows nvidia.com/gpu: 0";
    assert_eq!(explain_str(log).category, Category::Container);
    let log = "my kubernetes worker doesn't recognize the GPU even though the driver is installed";
    assert_eq!(explain_str(log).category, Category::Container);
    // Ten GPUs are not zero.
    let log = "the pod requests 10 GPUs and runs fine";
    assert_ne!(explain_str(log).category, Category::Container);
}

#[test]
fn a_report_that_quotes_its_dockerfile_runs_in_a_container() {
    let log = "FROM --platform=linux/amd64 nvidia/cuda:12.2.0-runtime-ubuntu22.04\nRUN apt-get install -y my-encoder\nerror: the NVIDIA driver is not installed or not loaded";
    assert_eq!(explain_str(log).category, Category::Container);
    // Prose that begins with "From" is no instruction.
    let log = "From what I see: the NVIDIA driver is not installed or not loaded";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
}

#[test]
fn a_prebuilt_binary_that_leaves_out_the_gpus_architecture_has_no_kernel_for_it() {
    let log = "the release binaries don't include sm_89 in their list of architectures, so my RTX 4090 cannot run them";
    assert_eq!(explain_str(log).category, Category::NoKernelImage);
    let log = "the prebuilt package does not target compute capability 3.0";
    assert_eq!(explain_str(log).category, Category::NoKernelImage);
}

#[test]
fn a_mining_program_named_beside_an_unexplained_gpu_fault_is_the_hardware() {
    let log = "lolMiner stops after an hour on my rig\nCUDA error in kernel 'search': unspecified launch failure";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn cudas_unknown_error_alone_is_the_drivers_unified_memory_module() {
    let log = "starting the renderer\nfailed to create context: CUDA_ERROR_UNKNOWN";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
    // With the card's power named, the hardware decides.
    let log = "the card is on a riser\nfailed to create context: CUDA_ERROR_UNKNOWN";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn other_words_for_the_fallbacks_and_builds_without_cuda() {
    // pip's name of the package, beside "not installed": the attention fallback.
    let log = "Notice: flash-attn is not installed, using the default attention implementation";
    assert_eq!(explain_str(log).category, Category::SdpaFallback);
    // libtorch's CPU build seen from C++ or Rust.
    let log = "error: Cannot initialize CUDA without ATen_cuda library loaded";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
    // A short report in Chinese: the model ran on the CPU, CUDA unused.
    let log = "推理很慢，模型跑在了CPU上\nCUDA没有被使用";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
}

#[test]
fn a_driver_that_does_not_support_the_required_version_is_too_old() {
    let log =
        "Driver does not support the required video decode API version (required 12.2, found 11.4)";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
    // Even when the program runs in a container: the host's driver is the one found.
    let log = "works on the host, but inside the docker container:\nDriver does not support the required video decode API version (required 12.2, found 11.4)";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
}

#[test]
fn a_card_said_to_be_failing_or_faulty_is_the_hardware() {
    let log = "I think one of the node's GPUs is failing, the job dies on it every night";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    let log = "replacing the faulty card fixed the training crashes";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn an_insufficient_driver_under_a_runtime_that_binds_it_on_request_is_the_runtime() {
    let log = "apptainer exec my.sif python train.py\nRuntimeError: CUDA driver version is insufficient for CUDA runtime version";
    assert_eq!(explain_str(log).category, Category::Container);
    // Docker's NVIDIA runtime binds the host's driver whenever it gives a GPU: the host's
    // driver is too old.
    let log = "docker run --gpus all my/image\nRuntimeError: CUDA driver version is insufficient for CUDA runtime version";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
}

/// A CUDA library of one CUDA that the loader cannot find, in a log that states only another
/// CUDA, was asked for by a package built for that other CUDA: the cause says so and the first
/// fix is the package's build for the CUDA installed. The category is the build's (a package
/// built for another CUDA variant), not the loader path's.
#[test]
fn a_library_of_another_cuda_than_the_log_states_names_the_build_as_the_cause() {
    let log = "\
$ nvcc --version
Cuda compilation tools, release 11.8, V11.8.89
$ python app.py
ImportError: libcublasLt.so.12: cannot open shared object file: No such file or directory
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::VersionSuffixMismatch);
    assert!(e.cause.contains("built for CUDA 12"), "{}", e.cause);
    assert!(e.cause.contains("CUDA 11.8"), "{}", e.cause);
    let first = format!("{:?}", e.fix.first());
    assert!(first.contains("build for CUDA 11.8"), "{first}");
    // Before CUDA 11 a soname names its minor: 10.0's runtime on a 10.2 machine is another CUDA.
    let jetson = "libcudart.so.10.0: cannot open shared object file: No such file or directory\nJetPack with CUDA 10.2\n";
    assert!(explain_str(jetson).cause.contains("built for CUDA 10.0"));
    // The log's CUDA is the library's own (any 12.x for libcudart.so.12): nothing to add.
    let same = "libcudart.so.12: cannot open shared object file: No such file or directory\nCUDA 12.4 installed\n";
    assert!(!explain_str(same).cause.contains("built for CUDA"));
    // cuFFT's soname follows its own version (libcufft.so.11 ships with CUDA 12).
    let cufft =
        "libcufft.so.11: cannot open shared object file: No such file or directory\nCUDA 12.4\n";
    assert!(!explain_str(cufft).cause.contains("built for CUDA"));
    assert_eq!(explain_str(cufft).category, Category::LibraryPath);
}

/// cuDNN's sonames carry cuDNN's own major: a package asking for `libcudnn*.so.8` where the log
/// shows cuDNN 9 (ldconfig's list, a package, words) was built for cuDNN 8.
#[test]
fn a_cudnn_library_of_another_major_than_the_log_shows_is_a_build_for_another_cudnn() {
    let log = "\
Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory
$ ldconfig -p | grep libcudnn
        libcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9
";
    let e = explain_str(log);
    assert_eq!(e.category, Category::VersionSuffixMismatch);
    assert!(e.cause.contains("built for cuDNN 8"), "{}", e.cause);
    assert!(e.cause.contains("cuDNN 9"), "{}", e.cause);
    let words = "OSError: libcudnn.so.8: cannot open shared object file: No such file or directory\nI installed cuDNN 9.1 from the NVIDIA repository\n";
    assert_eq!(explain_str(words).category, Category::VersionSuffixMismatch);
    // Only the asked-for major shown: the loader's path, nothing of another build.
    let alone = "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory\n";
    let e = explain_str(alone);
    assert_eq!(e.category, Category::LibraryPath);
    assert!(!e.cause.contains("built for cuDNN"), "{}", e.cause);
}

#[test]
fn a_found_version_of_zeros_is_no_version_to_compare() {
    // A model file read wrongly reports the version it was written with as zeros: nothing is
    // mismatched, the file is unreadable.
    let log =
        "[E] Serialized model is incompatible with this build of cuDNN: wanted 8.9.2, got 0.0.0";
    assert!(matches!(
        explain_str(log).category,
        Category::Unknown | Category::NotEnvironment
    ));
    // A real version on the found side is still a mismatch, and an address is not a version.
    let log =
        "[E] Serialized model is incompatible with this build of cuDNN: wanted 8.9.2, got 8.6.0";
    assert!(explain_str(log).is_known());
    let log = "server listening on 0.0.0.0:8000\nRuntimeError: The NVIDIA driver on your system is too old (found version 11040).";
    assert_eq!(explain_str(log).category, Category::DriverTooOld);
}

#[test]
fn a_kernel_fault_is_what_a_report_s_generic_error_is_said_of() {
    // The report's title names the program's fault; the library beside it, with its version,
    // is its setup.
    let log = "cudaErrorIllegalAddress error after enabling the custom allreduce\n\nnccl 2.21.5, cuda 12.4, 8x H100";
    assert!(matches!(
        explain_str(log).category,
        Category::Unknown | Category::NotEnvironment
    ));
    // Without a fault named, a tool's generic failure is still the tool's.
    let log = "allreduce error after enabling the custom kernel\n\nnccl 2.21.5 fails on two nodes";
    assert_eq!(explain_str(log).category, Category::Nccl);
}

#[test]
fn a_report_that_puts_the_fault_in_the_program_is_answered_so() {
    // A program meant to run without a GPU that asks for the driver there.
    let log = "Server mode does not start on hosts without a GPU since 2.3\nRuntimeError: Found no NVIDIA driver on your system.";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    // The same error, with nothing said of the setting, is the driver's.
    let log = "Server mode does not start since 2.3\nRuntimeError: Found no NVIDIA driver on your system.";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
    // A failure located in the program's history.
    let log = "no kernel image is available for execution on the device\nIt works on every commit before 1a2b3c4d, so the new loader broke it.";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    // An import the project's requirements leave out.
    let log = "ImportError: flash_attn is not installed\nflash_attn is imported by the model code but missing from requirements.txt";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    let log = "ImportError: flash_attn is not installed";
    assert_eq!(explain_str(log).category, Category::SdpaFallback);
    // A defect located in the program's build files.
    let log = "nvcc fatal : Value 'c++20' is not defined for option 'std'\nthe -std flag is wrong in CMakeLists.txt of the plugin";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    let log = "nvcc fatal : Value 'c++20' is not defined for option 'std'";
    assert_ne!(explain_str(log).category, Category::NotEnvironment);
    // A flag the program's build sets wrongly, and torch's own words for an environment that
    // was set up wrongly, which say nothing of the program.
    let log = "the arch parsing wrongly sets the -gencode flag to compute_20:\nnvcc fatal   : Unsupported gpu architecture 'compute_20'";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    let log = "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start.";
    assert_ne!(explain_str(log).category, Category::NotEnvironment);
    // The project's published build said to be broken.
    let log = "The 3.1 wheel is broken: OSError: libcufft.so.11: cannot open shared object file: No such file or directory";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    let log = "OSError: libcufft.so.11: cannot open shared object file: No such file or directory";
    assert_ne!(explain_str(log).category, Category::NotEnvironment);
}

#[test]
fn two_ranks_on_one_gpu_are_the_launcher_s_configuration() {
    let log = "\
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage, NCCL version 2.19.3
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
Last error:
Duplicate GPU detected : rank 3 and rank 2 both on CUDA device 41000";
    assert_eq!(explain_str(log).category, Category::NotEnvironment);
    // NCCL's invalid usage for another reason stays NCCL's.
    let log = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage, NCCL version 2.19.3";
    assert_eq!(explain_str(log).category, Category::Nccl);
}

#[test]
fn the_reporter_s_conclusion_that_the_hardware_failed() {
    let log = "CUDA error: unspecified launch failure after a few epochs\nSwapped cards around: it is definitely a hardware problem with the second card.";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // Denied or only asked, it concludes nothing.
    let log = "CUDA error: unspecified launch failure after a few epochs\nIt is not a hardware problem, the card passes every stress test.";
    assert_ne!(explain_str(log).category, Category::GpuHardware);
    let log = "CUDA error: unspecified launch failure after a few epochs\nCould this be a hardware problem?";
    assert_ne!(explain_str(log).category, Category::GpuHardware);
    let log = "CUDA error: unspecified launch failure after a few epochs\nI wonder if it might be a hardware problem";
    assert_ne!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn a_failed_build_of_a_package_s_cuda_half_is_the_toolchain_s() {
    // The switch that builds a package's CUDA extensions, in the command that failed.
    let log = "ERROR: Command \"python setup.py --cpp_ext --cuda_ext install\" failed with error code 1 in /tmp/pip-build/";
    assert_eq!(explain_str(log).category, Category::ToolkitMismatch);
    // Without it, a failed pip build names nothing of the stack.
    let log =
        "ERROR: Command \"python setup.py install\" failed with error code 1 in /tmp/pip-build/";
    assert_eq!(explain_str(log).category, Category::Unknown);
}

#[test]
fn a_fault_given_by_its_cuda_number_counts_as_that_fault() {
    // Two kinds of fault, one by name and one by number: faults at random places.
    let log = "the solver keeps crashing at random steps\nCUDA error: an illegal instruction was encountered\nlater run: CUDA error 719";
    assert_eq!(explain_str(log).category, Category::GpuHardware);
    // The same fault by name and by number is one kind: a program's bug as often as not.
    let log = "the solver keeps crashing at random steps\nCUDA error: an illegal instruction was encountered\nlater run: CUDA error 715";
    assert_ne!(explain_str(log).category, Category::GpuHardware);
}

#[test]
fn a_negation_apart_from_its_verb_still_says_the_gpu_is_unseen() {
    // An inverted question: the subject stands between the negation and its verb.
    let log = "Why doesn't my Kubernetes worker ever detect the GPU after the driver install?";
    assert_eq!(explain_str(log).category, Category::Container);
    let log = "Why doesn't my laptop ever detect the GPU after the driver install?";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
    // "seem" is no "see".
    let log = "my laptop does not really seem to like the GPU driver update";
    assert_ne!(explain_str(log).category, Category::DriverMissing);
    // The passive says a name is unknown to a tool, not a GPU unseen.
    let log = "the architecture sm_130 cannot be recognized by this nvcc";
    assert_ne!(explain_str(log).category, Category::DriverMissing);
}

#[test]
fn execution_providers_without_cuda_in_a_user_s_words_are_a_cpu_package() {
    let log = "Why are the EXECUTION PROVIDERS without CUDA in the settings menu?";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
    // Providers named with CUDA among them say nothing of a CPU package.
    let log = "Execution providers: CUDA, TensorRT, CPU. Inference is slow.";
    assert_ne!(explain_str(log).category, Category::CpuOnlyWheel);
}

#[test]
fn a_cpu_variant_typed_with_a_hyphen_is_a_cpu_build() {
    let log = "pip resolved torch==2.4.1-cpu for me, is that why the GPU is never used?";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
    // A word that goes on after "-cpu" is no variant (and the question alone, without "the
    // GPU is never used", names no failure).
    let log = "pip resolved torch==2.4.1-cpus for me, is that the right one?";
    assert_ne!(explain_str(log).category, Category::CpuOnlyWheel);
}

#[test]
fn an_import_that_fails_after_the_framework_s_upgrade_is_an_extension_built_for_the_old_one() {
    let log = "ImportError since updating to torch 2.3 when loading my_ext._C";
    assert_eq!(explain_str(log).category, Category::AbiMismatch);
    // The upgrade alone, with no import failing, says nothing.
    let log = "Training got slower since updating to torch 2.3";
    assert_ne!(explain_str(log).category, Category::AbiMismatch);
}

#[test]
fn a_framework_s_gpu_package_not_found_for_the_machine_leaves_its_cpu_build() {
    let log = "my CUDA is 12.1 but I can not find a tensorflow-gpu release for it on Windows";
    assert_eq!(explain_str(log).category, Category::CpuOnlyWheel);
    // Something else not found is no GPU build missing.
    let log = "my CUDA is 12.1 but I can not find the tensorflow release notes for it on Windows";
    assert_ne!(explain_str(log).category, Category::CpuOnlyWheel);
}

#[test]
fn a_binding_type_no_module_registered_is_two_binaries_built_apart() {
    let log = "ImportError: arg(): could not convert default argument 'grid: core::Grid' in function 'build_index' into a Python object (type not registered yet?)";
    assert_eq!(explain_str(log).category, Category::AbiMismatch);
    // A program passing the wrong type to a binding is its own error.
    let log = "TypeError: build_index(): incompatible function arguments. The following argument types are supported";
    assert_ne!(explain_str(log).category, Category::AbiMismatch);
}

#[test]
fn a_serialized_engine_its_runtime_cannot_read_was_written_by_another_release() {
    let log = "runtime.cpp:120: Assertion failed: layout mismatch between the serialized engine and this runtime";
    assert_eq!(explain_str(log).category, Category::VersionSuffixMismatch);
    // A mismatch of the program's own tensors stays the program's.
    let log =
        "RuntimeError: size mismatch for decoder.weight: copying a param with shape [10, 512]";
    assert_ne!(explain_str(log).category, Category::VersionSuffixMismatch);
}

#[test]
fn cuda_that_works_only_once_the_host_used_the_gpu_is_the_driver_s_modules_loaded_on_demand() {
    let log = "After a reboot the render service fails to start CUDA.\nIt works only after running nvidia-smi once, every time.";
    assert_eq!(explain_str(log).category, Category::DriverMissing);
    // Running nvidia-smi, said of nothing failing, is no such state.
    let log = "I checked by running nvidia-smi on the host, it shows both cards.";
    assert_eq!(explain_str(log).category, Category::Unknown);
}

/// A kernel fault or a library's refusal of the program's input after a warning that an
/// optional library is missing (TensorRT's plugin, which TensorFlow and torch warn of on healthy
/// machines) is the program's: a missing library stops a program from loading, it does not
/// fault a kernel that runs. A version mismatch stated before the status still outranks it.
#[test]
fn a_missing_optional_library_warned_of_does_not_outrank_a_kernel_fault() {
    for status in [
        "RuntimeError: CUDA error: misaligned address",
        "RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM",
    ] {
        let log = format!("UserWarning: Plugin libnvinfer.so.8 not found\n{status}\n");
        let e = explain_str(&log);
        assert_eq!(e.category, Category::NotEnvironment, "{log}\n{}", e.cause);
    }
    let mismatch = "UserWarning: cuDNN version incompatibility: PyTorch was compiled against (8, 9, 2) but found runtime version (8, 5, 0).\nRuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM\n";
    assert_ne!(explain_str(mismatch).category, Category::NotEnvironment);
}

/// A log that states the asked-for cuDNN besides another ("cuDNN 8.9.2 and 9.1 installed", the
/// distribution's `libcudnn8`) does show it: the evidence says what the log shows, never that
/// it does not show the version asked for.
#[test]
fn the_evidence_of_a_build_for_another_cudnn_never_denies_what_the_log_states() {
    const MISSING: &str = "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory";
    for shown in [
        "I have cuDNN 8.9.2 and cuDNN 9.1 installed",
        "libcudnn8 is already the newest version (8.9.7.29-1+cuda12.2).\nlibcudnn.so.9 => /usr/lib/x86_64-linux-gnu/libcudnn.so.9",
    ] {
        let log = format!("{shown}\n{MISSING}\n");
        let e = explain_str(&log);
        assert!(
            e.evidence.iter().all(|l| !l.contains("never cuDNN 8")),
            "{log}\n{:?}",
            e.evidence
        );
    }
}

/// ONNX Runtime's arena prints the same failure under its CPU provider as under its CUDA one: a
/// CPU session that ran out of host memory is not told the GPU is full.
#[test]
fn onnxruntime_s_arena_failure_does_not_claim_the_gpu_is_full() {
    let log = "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running MatMul node. Name:'MatMul_1' Status Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 1073741824\n";
    let e = explain_str(log);
    assert_eq!(e.category, Category::OutOfMemory);
    assert!(!e.cause.contains("the GPU is full"), "{}", e.cause);
    assert!(e.cause.contains("host"), "{}", e.cause);
}

/// An invalid device ordinal is a GPU index the process does not see (a hard-coded device, more
/// ranks than GPUs, CUDA_VISIBLE_DEVICES): the fix says so, not to rerun for the call's arguments.
#[test]
fn an_invalid_device_ordinal_is_told_as_a_gpu_index_the_process_does_not_see() {
    for log in [
        "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API call\n",
        "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal\n",
    ] {
        let e = explain_str(log);
        assert_eq!(e.category, Category::NotEnvironment, "{log}");
        assert!(e.cause.contains("CUDA_VISIBLE_DEVICES"), "{}", e.cause);
        let fix = format!("{:?}", e.fix);
        assert!(!fix.contains("CUDA_LAUNCH_BLOCKING"), "{fix}");
    }
}

/// A traceback that ends on values of one operation on different devices, in any framework's
/// words, is the program's placement; the answer names the line and says the GPU works.
#[test]
fn values_on_different_devices_are_the_program_s_placement() {
    for last in [
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
        "ValueError: Received incompatible devices for jitted computation. Got argument x of main with shape float32[3] and device ids [0] on platform GPU and argument y of main with shape float32[3] and device ids [0] on platform CPU",
        "ValueError: Array device must be same as the current device: array device = 1 while current = 0",
    ] {
        let log = format!(
            "Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n    out = model(x)\n{last}\n"
        );
        let e = explain_str(&log);
        assert_eq!(e.category, Category::NotEnvironment, "{last}");
        assert_eq!(e.matched.first().map(|m| m.line_no), Some(4), "{last}");
        assert!(e.cause.contains("on different devices"), "{}", e.cause);
    }
    // A GPU the framework cannot use, said beside the CPU it falls back to, is not a placement.
    let e = explain_str(
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.\n",
    );
    assert_ne!(e.category, Category::NotEnvironment);
}

/// Code said to be compiled for one architecture and run on a device of another, in any
/// program's words, is a build without the device's code; TensorRT's SM code and OpenCV's
/// refusal of the device say the same.
#[test]
fn code_compiled_for_another_architecture_than_the_device() {
    for log in [
        "Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 0.0 (< 5.0) on device with compute capability 5.0 (>=5.0), this would give incorrect results!",
        "The program was compiled for compute capability 8.6 but the device has compute capability 7.5",
        "Binary was compiled for sm_80 but this GPU is sm_75",
        "[F] [TRT] Assertion failed: Unsupported SM: 0x809",
        "error: (-216:No CUDA support) OpenCV was not built to work with the selected device. Please check CUDA_ARCH_PTX or CUDA_ARCH_BIN in your build configuration.",
    ] {
        assert_eq!(explain_str(log).category, Category::NoKernelImage, "{log}");
    }
}
