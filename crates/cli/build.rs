//! Links the code `kube-endpoints run` executes next to each other (`hot-text.ld`).
//!
//! The kernel maps a binary's code in 64 KiB windows around each page it faults in, so code
//! spread thinly over the whole text costs resident memory for all of it. The linker script
//! gathers the functions a profile saw run into one output section ahead of `.text`; see
//! `scripts/hot-text.sh`, which writes it. Nothing changes but where functions sit.
//!
//! The script is passed only when the linker accepts it (a trial link of an empty C program),
//! and `KUBE_ENDPOINTS_HOT_TEXT=0` leaves it out.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let script = dir.join("hot-text.ld");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-env-changed=KUBE_ENDPOINTS_HOT_TEXT");
    if env::var("KUBE_ENDPOINTS_HOT_TEXT").as_deref() == Ok("0") {
        return;
    }
    let linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let native = env::var("HOST") == env::var("TARGET");
    if !linux || !native || !script.is_file() {
        return;
    }
    match trial_link(&script) {
        Ok(()) => println!(
            "cargo:rustc-link-arg-bin=kube-endpoints=-Wl,-T,{}",
            script.display()
        ),
        Err(why) => println!(
            "cargo:warning=linking without {}: the linker refused it ({why})",
            script.display()
        ),
    }
}

/// Links an empty program with the script, through the driver rustc links with (`cc`).
fn trial_link(script: &Path) -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let source = out.join("trial.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").map_err(|e| e.to_string())?;
    let output = Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(out.join("trial"))
        .arg(format!("-Wl,-T,{}", script.display()))
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}
