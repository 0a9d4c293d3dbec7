//! Privileged suite: real programs that are not ours run inside unchanged.

mod common;

use std::path::Path;

use common::*;
use vac_sandbox::{FsChange, Lab, Sandbox, Termination};

const PYTHON: &str = r#"
import os
print(open('/etc/os-release').read().splitlines()[0])
print(open('notes/a.md').read())
open(os.path.join(os.environ['HOME'], 'py-home.txt'), 'w').write('home')
open(os.path.join(os.environ['TMPDIR'], 'py-tmp.txt'), 'w').write('tmp')
"#;

const NODE: &str = r#"
const fs = require('fs'), path = require('path'), os = require('os');
console.log(fs.readFileSync('notes/a.md', 'utf8'));
fs.writeFileSync(path.join(os.homedir(), 'node-home.txt'), 'home');
fs.writeFileSync(path.join(os.tmpdir(), 'node-tmp.txt'), 'tmp');
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_reads_and_writes_home_and_tmpdir() {
    if !privileged("python_reads_and_writes_home_and_tmpdir") {
        return;
    }
    run_program(["python3", "-c", PYTHON], "py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_reads_and_writes_home_and_tmpdir() {
    if !privileged("node_reads_and_writes_home_and_tmpdir") {
        return;
    }
    run_program(["node", "-e", NODE], "node").await;
}

async fn run_program(command: [&str; 3], prefix: &str) {
    let lab = Lab::new().plant("work/notes/a.md", "planted note");
    let sandbox = Sandbox::builder(command).lab(lab).build().unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "stdout {out:?} stderr {err:?}"
    );
    assert!(out.contains("planted note"), "{out}");
    let report = stopped.witness().collect().unwrap();
    report.require_live().unwrap();
    for name in [
        format!("/lab/home/{prefix}-home.txt"),
        format!("/lab/tmp/{prefix}-tmp.txt"),
    ] {
        let found = report
            .changes
            .iter()
            .any(|c| matches!(c, FsChange::Created { path, .. } if path == Path::new(&name)));
        assert!(found, "{name} not witnessed:\n{}", render(&report));
    }
}
