//! Running external commands with errors a person can act on.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Outcome;

/// Runs `command`, inheriting the terminal; a failure names the command.
pub fn run(command: &mut Command) -> Outcome {
    let description = describe(command);
    println!("xtask: $ {description}");
    let status = command
        .status()
        .map_err(|error| format!("could not start `{description}`: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{description}` failed ({status})"))
    }
}

/// Runs `command` quietly and returns its stdout, or `None` if it could not
/// start or failed. For probing what a machine has.
pub fn probe(command: &mut Command) -> Option<String> {
    let output = command.stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `command` with a deadline (for downloads that may hang on a closed
/// network). Returns whether it finished successfully in time.
pub fn run_with_deadline(command: &mut Command, deadline: Duration) -> bool {
    let description = describe(command);
    println!("xtask: $ {description}");
    let Ok(mut child) = command.stdin(Stdio::null()).spawn() else {
        return false;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if started.elapsed() < deadline => std::thread::sleep(Duration::from_millis(200)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                println!("xtask: gave up on `{description}` after {} s", deadline.as_secs());
                return false;
            }
        }
    }
}

/// Whether a program can be found on PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}
