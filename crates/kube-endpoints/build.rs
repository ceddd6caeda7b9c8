//! Links the code `kube-endpoints run` executes next to each other (`hot-text.ld`).
//!
//! The kernel maps a binary's code in 64 KiB windows around each page it faults in, so code
//! spread thinly over the whole text costs resident memory for all of it: an idle controller
//! kept 8.6 of the release binary's 11 MiB of code resident while running about 3.4 MiB of
//! it. The linker script gathers the functions a profile saw run into one output section
//! ahead of `.text`; see `scripts/hot-text.sh`, which writes it. Nothing changes but where
//! functions sit.
//!
//! The script is passed only when the linker accepts it (a trial link of an empty C program
//! with the same linker and link arguments), and `KUBE_ENDPOINTS_HOT_TEXT=0` leaves it out.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let script = dir.join("hot-text.ld");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-env-changed=KUBE_ENDPOINTS_HOT_TEXT");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
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

/// Links an empty program with the script, through the driver and with the link arguments
/// rustc will use (`cc` unless configured otherwise; `-C link-arg`s such as `-fuse-ld=mold`
/// pick a linker that may not take scripts).
fn trial_link(script: &Path) -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let source = out.join("trial.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").map_err(|e| e.to_string())?;
    let (linker, link_args) = linker_from_rustflags();
    let output = Command::new(&linker)
        .arg(&source)
        .arg("-o")
        .arg(out.join("trial"))
        .args(&link_args)
        .arg(format!("-Wl,-T,{}", script.display()))
        .output()
        .map_err(|e| format!("{linker}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        // One line: cargo reads a warning up to the end of its line.
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(stderr.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// The linker driver and link arguments in the rustflags cargo passes on.
fn linker_from_rustflags() -> (String, Vec<String>) {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut flags = flags.split('\x1f').filter(|f| !f.is_empty());
    // Cargo names a configured linker (`target.<triple>.linker`) to build scripts here.
    let mut linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
    let mut args = Vec::new();
    while let Some(flag) = flags.next() {
        let option = match flag {
            "-C" | "--codegen" => flags.next().unwrap_or_default(),
            _ => flag.strip_prefix("-C").unwrap_or_default(),
        };
        if let Some(path) = option.strip_prefix("linker=") {
            linker = path.to_owned();
        } else if let Some(arg) = option.strip_prefix("link-arg=") {
            args.push(arg.to_owned());
        } else if let Some(list) = option.strip_prefix("link-args=") {
            args.extend(list.split_whitespace().map(str::to_owned));
        }
    }
    (linker, args)
}
