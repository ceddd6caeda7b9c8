//! Running programs from a test: our own binaries, and the tools some tests drive (kubectl,
//! go, buildah). A machine may lack a tool; the test that needs it is then skipped, except
//! under `CI=true`, where `scripts/install-test-deps.sh` has installed every one.

use std::process::Command;

/// How a program ended and what it printed.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code; `None` when a signal ended the program.
    pub code: Option<i32>,
    /// Its standard output, decoded lossily.
    pub stdout: String,
    /// Its standard error, decoded lossily.
    pub stderr: String,
}

impl Outcome {
    /// The standard output of a run that must succeed: the test fails, showing standard
    /// error, when the program exited otherwise than with 0.
    pub fn succeeded(self) -> String {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        self.stdout
    }

    /// Fails the test, showing standard error, unless the program exited with `code` and its
    /// standard error contains each of `parts`.
    pub fn assert_exit(&self, code: i32, parts: &[&str]) {
        assert_eq!(self.code, Some(code), "{}", self.stderr);
        self.assert_stderr_has(parts);
    }

    /// Fails the test, showing standard error, unless it contains each of `parts`.
    pub fn assert_stderr_has(&self, parts: &[&str]) {
        for part in parts {
            assert!(
                self.stderr.contains(part),
                "{part:?} not in:\n{}",
                self.stderr
            );
        }
    }
}

/// Runs `command` to its end and collects what it printed. The test fails when the program
/// cannot be started.
pub fn run(command: &mut Command) -> Outcome {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Whether `program` is a file in one of PATH's directories.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Whether a test that needs `program` runs here. Without it the test says it is skipped and
/// returns early, except under `CI=true`, where it fails: CI runs every test, and
/// `scripts/install-test-deps.sh` installs `program` there from the Debian package `package`.
pub fn required(program: &str, package: &str) -> bool {
    if on_path(program) {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{program} is missing under CI=true: scripts/install-test-deps.sh installs {package}"
    );
    println!(
        "skipping: {program} is not on PATH (scripts/install-test-deps.sh installs {package})"
    );
    false
}
