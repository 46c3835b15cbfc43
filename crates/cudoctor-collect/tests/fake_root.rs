//! `collect()` over a machine laid out by cudoctor-testkit's `FakeRoot`, without the binary:
//! what the end-to-end tests' fake machines hold is what the probes read.
#![cfg(unix)]

use std::time::Duration;

use cudoctor_collect::{collect, Host, Options};
use cudoctor_testkit::fake::FakeRoot;

#[test]
fn a_fake_h100_with_torch_is_read_as_its_files_say() {
    let m = FakeRoot::h100_cu130();
    let host = Host::rooted(m.root().to_path_buf(), m.vars(), Duration::from_secs(10));
    let snap = collect(&host, &Options::default(), "test");
    assert_eq!(
        snap.driver.version.as_ref().map(|v| v.value.as_str()),
        Some("580.159.04")
    );
    let env = snap
        .python_envs
        .iter()
        .find(|e| e.prefix == "/opt/venv")
        .unwrap_or_else(|| panic!("/opt/venv not found: {:?}", snap.python_envs));
    let torch = env.torch.as_ref().expect("torch in /opt/venv");
    assert_eq!(torch.version, "2.11.0+cu130");
    assert_eq!(torch.cuda.as_deref(), Some("13.0"));
}
