//! Install and uninstall commands in an environment's own installer (`uv pip` for a uv-made
//! venv, which has no pip; the env's `python -m pip` otherwise), every word quoted.

use crate::fix::quote;
use crate::model::{Installer, TargetEnv};

/// `uv pip install --python P ARGS` or `P -m pip install ARGS`; `args` are words (pins,
/// options), each quoted.
pub fn install(target: &TargetEnv, args: &[String]) -> String {
    let python = quote(&target.python);
    let words = words(args);
    match target.installer {
        Installer::Uv => format!("uv pip install --python {python} {words}"),
        Installer::Pip | Installer::Conda => format!("{python} -m pip install {words}"),
    }
}

/// `uv pip uninstall --python P NAMES` or `P -m pip uninstall -y NAMES`.
pub fn uninstall(target: &TargetEnv, names: &[String]) -> String {
    let python = quote(&target.python);
    let words = words(names);
    match target.installer {
        Installer::Uv => format!("uv pip uninstall --python {python} {words}"),
        Installer::Pip | Installer::Conda => format!("{python} -m pip uninstall -y {words}"),
    }
}

fn words(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(installer: Installer) -> TargetEnv {
        TargetEnv {
            prefix: "/opt/my env".into(),
            python: "/opt/my env/bin/python".into(),
            installer,
            conda_pytorch: false,
        }
    }

    #[test]
    fn commands_use_the_envs_installer_and_quote_every_word() {
        let pins = vec!["jax[cuda13]==0.10.2".to_string()];
        assert_eq!(
            install(&target(Installer::Uv), &pins),
            "uv pip install --python '/opt/my env/bin/python' 'jax[cuda13]==0.10.2'"
        );
        assert_eq!(
            install(&target(Installer::Pip), &pins),
            "'/opt/my env/bin/python' -m pip install 'jax[cuda13]==0.10.2'"
        );
        let names = vec!["cupy-cuda12x".to_string()];
        assert_eq!(
            uninstall(&target(Installer::Conda), &names),
            "'/opt/my env/bin/python' -m pip uninstall -y cupy-cuda12x"
        );
        assert_eq!(
            uninstall(&target(Installer::Uv), &names),
            "uv pip uninstall --python '/opt/my env/bin/python' cupy-cuda12x"
        );
    }
}
