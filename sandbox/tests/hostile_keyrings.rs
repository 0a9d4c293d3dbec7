//! Privileged suite: the program reaches none of the host's keys and leaves none behind, and
//! the kernel interfaces of `sandbox/SECCOMP.md` answer their errno, while ordinary programs
//! (threads, forks, subprocesses) run unchanged.
//!
//! The test plays the host: it joins a session keyring of its own with a secret key in it and
//! adds a key to its uid's user keyring, as a login would have, then starts the run from that
//! session. The sandbox forks from the test's thread, so the run inherits that session.
//!
//! The sandbox reports the serial of the fresh session keyring the program runs in: the test
//! sees it live while the program runs and checks that no keyring of the host's holds it
//! afterwards. The kernel collects that keyring asynchronously once the run's last process
//! is gone, with no event a test could wait on (this kernel has no key notifications), so
//! the per-uid counts of `/proc/key-users`, which other runs as the same uid move too, are
//! not compared; what could leave a key behind (the user keyring, a named session, a new
//! key) is checked by serial and by description instead. The user keyring compared is the test
//! process's, root's, which every uid-0 process shares and to which each test of this suite
//! adds its host key: `.config/nextest.toml` runs the suite alone.

mod common;

use std::ffi::CString;
use std::time::SystemTime;

use common::*;
use nix::errno::Errno;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use vac_sandbox::{RunAs, Sandbox, Termination};

/// The host's keys, made by the test: `keyctl` and `add_key` through libc, as keyutils does.
mod host {
    use super::*;

    pub(super) const SESSION: i32 = libc::KEY_SPEC_SESSION_KEYRING;
    pub(super) const USER: i32 = libc::KEY_SPEC_USER_KEYRING;

    fn keyctl(op: u32, args: [libc::c_ulong; 4]) -> Result<i64, Errno> {
        // SAFETY: every caller passes integers, or pointers to buffers that live across the
        // call with their true length, as the keyctl operation expects.
        let rc = unsafe { libc::syscall(libc::SYS_keyctl, op, args[0], args[1], args[2], args[3]) };
        Errno::result(rc)
    }

    /// Joins a new named session keyring (for the calling thread) and returns its serial.
    pub(super) fn join_session(name: &str) -> i32 {
        let name = CString::new(name).unwrap();
        let args = [name.as_ptr() as libc::c_ulong, 0, 0, 0];
        keyctl(libc::KEYCTL_JOIN_SESSION_KEYRING, args).expect("join a session keyring") as i32
    }

    pub(super) fn session_id() -> i32 {
        let args = [SESSION as libc::c_ulong, 0, 0, 0];
        keyctl(libc::KEYCTL_GET_KEYRING_ID, args).expect("the session keyring's id") as i32
    }

    /// Adds a `user` key to a keyring and returns its serial.
    pub(super) fn add(description: &str, payload: &str, keyring: i32) -> i32 {
        let (kind, description) = (c"user", CString::new(description).unwrap());
        // SAFETY: the type and description are NUL-terminated strings and the payload pointer
        // and length describe `payload`; all live across the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                kind.as_ptr(),
                description.as_ptr(),
                payload.as_ptr(),
                payload.len(),
                keyring,
            )
        };
        Errno::result(rc).expect("add a key") as i32
    }

    /// What a keyctl operation that fills a buffer gives for `serial` (at most `cap` bytes).
    fn read_with(op: u32, serial: i32, cap: usize) -> Result<Vec<u8>, Errno> {
        let mut buffer = vec![0u8; cap];
        let args = [
            serial as libc::c_ulong,
            buffer.as_mut_ptr() as libc::c_ulong,
            buffer.len() as libc::c_ulong,
            0,
        ];
        let len = keyctl(op, args)? as usize;
        buffer.truncate(len.min(cap));
        Ok(buffer)
    }

    /// The payload of a key, or the serials of a keyring.
    pub(super) fn read(serial: i32) -> Result<Vec<u8>, Errno> {
        read_with(libc::KEYCTL_READ, serial, 4096)
    }

    pub(super) fn keyring_serials(keyring: i32) -> Vec<i32> {
        let bytes = read(keyring).expect("read a keyring");
        let mut serials: Vec<i32> = bytes
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        serials.sort_unstable();
        serials
    }

    pub(super) fn invalidate(serial: i32) {
        let _ = keyctl(libc::KEYCTL_INVALIDATE, [serial as libc::c_ulong, 0, 0, 0]);
    }

    /// Unlinks a key from a keyring; a key in no keyring is collected. (The test cannot
    /// invalidate a user-keyring key: its session does not possess the user keyring.)
    pub(super) fn unlink(serial: i32, keyring: i32) {
        let args = [serial as libc::c_ulong, keyring as libc::c_ulong, 0, 0];
        let _ = keyctl(libc::KEYCTL_UNLINK, args);
    }

    /// The keys of the host the test sees in /proc/keys whose description contains `text`.
    pub(super) fn proc_keys_with(text: &str) -> Vec<String> {
        std::fs::read_to_string("/proc/keys")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(text))
            .map(str::to_owned)
            .collect()
    }

    /// The description of a key or keyring (`type;uid;gid;perm;description`).
    pub(super) fn describe(serial: i32) -> Result<String, Errno> {
        let bytes = read_with(libc::KEYCTL_DESCRIBE, serial, 512)?;
        Ok(String::from_utf8_lossy(&bytes)
            .trim_end_matches('\0')
            .to_owned())
    }
}

/// The keys a test made, invalidated however the test ends, so the uid's user keyring is as
/// it was before the test.
struct HostKeys {
    secret: i32,
    user_key: i32,
}

impl Drop for HostKeys {
    fn drop(&mut self) {
        host::unlink(self.user_key, host::USER);
        host::invalidate(self.secret);
    }
}

fn nonce() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// Every attempt, as `(name, nr, args)`; args are ints, `"s:TEXT"` strings, `"buf"` (a
/// 4096-byte buffer) or null. Each prints one JSON line with its errno (0: it worked).
const HOSTILE: &str = r#"
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
attempts = json.loads(sys.argv[1])
buf = ctypes.create_string_buffer(4096)
def arg(a):
    if a is None: return None
    if a == "buf": return buf
    if isinstance(a, str): return ctypes.c_char_p(a[2:].encode())
    return ctypes.c_long(a)
for name, nr, args in attempts:
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[arg(a) for a in args])
    errno = ctypes.get_errno() if rc == -1 else 0
    print(json.dumps({"attempt": name, "errno": errno, "read": buf.raw[:64].decode("latin-1") if rc > 0 else ""}))
for path in ["/proc/keys", "/proc/key-users"]:
    print(json.dumps({"file": path, "content": open(path).read()}))
print(json.dumps({"waiting": True}), flush=True)
sys.stdin.readline()
print(json.dumps({"done": True}))
"#;

/// An attempt and the errno SECCOMP.md documents for its call.
struct Attempt {
    name: &'static str,
    nr: libc::c_long,
    args: Vec<Value>,
    errno: Errno,
}

fn attempts(secret: i32, secret_desc: &str, user_desc: &str, hostile_desc: &str) -> Vec<Attempt> {
    use serde_json::json;
    let s = |text: &str| json!(format!("s:{text}"));
    let (session, user) = (json!(host::SESSION), json!(host::USER));
    let keyctl = |name, op: u32, args: Vec<Value>| Attempt {
        name,
        nr: libc::SYS_keyctl,
        args: [vec![json!(op)], args].concat(),
        errno: Errno::ENOSYS,
    };
    let buf = || json!("buf");
    let len = || json!(4096);
    let mut list = vec![
        keyctl(
            "find the session keyring",
            libc::KEYCTL_GET_KEYRING_ID,
            vec![session.clone(), json!(0)],
        ),
        keyctl(
            "read the session keyring",
            libc::KEYCTL_READ,
            vec![session.clone(), buf(), len()],
        ),
        keyctl(
            "describe the host's session key",
            libc::KEYCTL_DESCRIBE,
            vec![json!(secret), buf(), len()],
        ),
        keyctl(
            "read the host's session key",
            libc::KEYCTL_READ,
            vec![json!(secret), buf(), len()],
        ),
        keyctl(
            "overwrite the host's session key",
            libc::KEYCTL_UPDATE,
            vec![json!(secret), s("overwritten"), json!(11)],
        ),
        keyctl(
            "read the user keyring",
            libc::KEYCTL_READ,
            vec![user.clone(), buf(), len()],
        ),
        keyctl(
            "search the user keyring for the host's user key",
            libc::KEYCTL_SEARCH,
            vec![user.clone(), s("user"), s(user_desc), json!(0)],
        ),
        keyctl(
            "link the host's session key into the user keyring",
            libc::KEYCTL_LINK,
            vec![json!(secret), user.clone()],
        ),
        keyctl(
            "join a named session keyring",
            libc::KEYCTL_JOIN_SESSION_KEYRING,
            vec![s(hostile_desc)],
        ),
        keyctl(
            "get the uid's persistent keyring",
            libc::KEYCTL_GET_PERSISTENT,
            vec![json!(-1), user.clone()],
        ),
        Attempt {
            name: "add a key to the user keyring",
            nr: libc::SYS_add_key,
            args: vec![
                s("user"),
                s(hostile_desc),
                s("left behind"),
                json!(11),
                user,
            ],
            errno: Errno::ENOSYS,
        },
        Attempt {
            name: "add a key to the session keyring",
            nr: libc::SYS_add_key,
            args: vec![
                s("user"),
                s(hostile_desc),
                s("x"),
                json!(1),
                session.clone(),
            ],
            errno: Errno::ENOSYS,
        },
        Attempt {
            name: "request the host's session key",
            nr: libc::SYS_request_key,
            args: vec![s("user"), s(secret_desc), Value::Null, session],
            errno: Errno::ENOSYS,
        },
    ];
    // Beyond keys: a few of the other refused interfaces, with their documented errno.
    let other = |name, nr, args: Vec<Value>, errno| Attempt {
        name,
        nr,
        args,
        errno,
    };
    list.extend([
        other(
            "unshare a user namespace",
            libc::SYS_unshare,
            vec![json!(libc::CLONE_NEWUSER)],
            Errno::EPERM,
        ),
        other(
            "clone3",
            libc::SYS_clone3,
            vec![Value::Null, json!(0)],
            Errno::ENOSYS,
        ),
        other(
            "io_uring_setup",
            libc::SYS_io_uring_setup,
            vec![json!(1), Value::Null],
            Errno::ENOSYS,
        ),
        other(
            "bpf",
            libc::SYS_bpf,
            vec![json!(0), Value::Null, json!(0)],
            Errno::EPERM,
        ),
        other(
            "userfaultfd",
            libc::SYS_userfaultfd,
            vec![json!(0)],
            Errno::EPERM,
        ),
        other(
            "ptrace(PTRACE_TRACEME)",
            libc::SYS_ptrace,
            vec![json!(0), json!(0), json!(0), json!(0)],
            Errno::EPERM,
        ),
    ]);
    list
}

/// A run of the hostile program from a session of the test's own, as `run_as` (whose uid is
/// `uid`).
async fn hostile_run(test: &str, run_as: RunAs, uid: u32) {
    let nonce = nonce();
    let (secret_desc, secret_payload) = (format!("vac-secret-{nonce}"), format!("s3cret-{nonce}"));
    let (user_desc, hostile_desc) = (format!("vac-user-{nonce}"), format!("vac-hostile-{nonce}"));
    let session = host::join_session(&format!("vac-test-{test}-{nonce}"));
    assert_eq!(host::session_id(), session);
    let keys = HostKeys {
        secret: host::add(&secret_desc, &secret_payload, host::SESSION),
        user_key: host::add(&user_desc, "user payload", host::USER),
    };
    let user_keyring_before = host::keyring_serials(host::USER);
    let session_before = host::keyring_serials(host::SESSION);

    let attempts = attempts(keys.secret, &secret_desc, &user_desc, &hostile_desc);
    let plan: Vec<Value> = attempts
        .iter()
        .map(|a| serde_json::json!([a.name, a.nr, a.args]))
        .collect();
    let plan = serde_json::to_string(&plan).unwrap();
    let sandbox = Sandbox::builder(["python3", "-c", HOSTILE, &plan])
        .run_as(run_as)
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut stdin = running.take_stdin();
    let stderr = tokio::spawn(read_all(running.take_stderr()));
    let mut stdout = BufReader::new(running.take_stdout().unwrap()).lines();
    let run_keyring = running
        .session_keyring()
        .expect("this kernel has keyrings: the program must get a session keyring of its own");
    let mut out = String::new();
    let mut live_keyring = None;
    while let Some(line) = stdout.next_line().await.unwrap() {
        if line.contains("waiting") {
            // The program holds it while it runs: a keyring of its own, made as its uid.
            live_keyring = Some(host::describe(run_keyring));
            drop(stdin.take());
        }
        out += &line;
        out.push('\n');
    }
    running.wait().await;
    let stopped = running.stop().expect("teardown");
    let err = stderr.await.unwrap();
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "stdout {out:?} stderr {err:?}"
    );
    drop(stopped);
    assert_ne!(
        run_keyring, session,
        "the program ran in the test's session"
    );
    assert!(
        !session_before.contains(&run_keyring) && !user_keyring_before.contains(&run_keyring),
        "the run's keyring {run_keyring} is one the host already had"
    );
    match live_keyring.expect("the program reached its wait") {
        // As root the test may describe a uid-0 keyring; another uid's is not its to view.
        Ok(description) => assert!(
            uid == 0 && description.starts_with(&format!("keyring;{uid};")),
            "{description}"
        ),
        Err(errno) => assert!(
            uid != 0 && errno == Errno::EACCES,
            "the run's keyring {run_keyring} was not there while it ran: {errno}"
        ),
    }
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l:?}\n{err}")))
        .collect();
    assert!(lines.iter().any(|l| l["done"] == true), "{out}\n{err}");

    for attempt in &attempts {
        let line = lines
            .iter()
            .find(|l| l["attempt"] == attempt.name)
            .unwrap_or_else(|| panic!("no result for {:?}: {out}", attempt.name));
        assert_eq!(
            line["errno"], attempt.errno as i32,
            "{:?} did not fail with {}: {line}",
            attempt.name, attempt.errno
        );
        assert!(!line["read"].as_str().unwrap().contains("s3cret"), "{line}");
    }
    for file in ["/proc/keys", "/proc/key-users"] {
        let line = lines.iter().find(|l| l["file"] == file).unwrap();
        assert_eq!(line["content"], "", "{file} shows the host's keys: {line}");
    }

    assert_eq!(
        host::read(keys.secret).expect("the session key is still there"),
        secret_payload.as_bytes(),
        "the host's session key was changed"
    );
    assert_eq!(
        host::keyring_serials(host::USER),
        user_keyring_before,
        "the run changed the uid's user keyring"
    );
    assert_eq!(
        host::proc_keys_with(&hostile_desc),
        Vec::<String>::new(),
        "a key the program made outlived the run"
    );
    assert_eq!(
        host::keyring_serials(host::SESSION),
        session_before,
        "the run changed the session it was started from"
    );
    drop(keys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_program_cannot_read_overwrite_or_add_to_the_hosts_keyrings() {
    let test = "a_root_program_cannot_read_overwrite_or_add_to_the_hosts_keyrings";
    if !privileged(test) {
        return;
    }
    hostile_run("root", RunAs::RootWithoutCapabilities, 0).await;
}

/// A uid no other test runs as.
const QUIET_UID: u32 = 61_017;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unprivileged_program_leaves_no_key_behind_for_its_uid() {
    let test = "an_unprivileged_program_leaves_no_key_behind_for_its_uid";
    if !privileged(test) {
        return;
    }
    let run_as = RunAs::User {
        uid: QUIET_UID,
        gid: QUIET_UID,
    };
    hostile_run("quiet-uid", run_as, QUIET_UID).await;
}

const PYTHON_ORDINARY: &str = r#"
import concurrent.futures, os, subprocess, threading
print(1)
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    assert sum(pool.map(lambda n: n * n, range(100))) == 328350
threading.Thread(target=print, args=("thread",)).start()
subprocess.run(["sh", "-c", "true"], check=True)
assert subprocess.run(["sh", "-c", "echo sub"], capture_output=True, check=True).stdout == b"sub\n"
pid = os.fork()
if pid == 0:
    os._exit(7)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
print("python ok")
"#;

const NODE_ORDINARY: &str = r#"
const { Worker } = require('worker_threads');
const { execFileSync, spawnSync } = require('child_process');
console.log(1);
execFileSync('sh', ['-c', 'true']);
if (spawnSync('sh', ['-c', 'echo sub']).stdout.toString() !== 'sub\n') throw new Error('spawn');
require('fs').writeFileSync(require('os').tmpdir() + '/node-fs.txt', 'fs');
const worker = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
worker.on('message', (m) => { if (m !== 42) throw new Error('worker'); console.log('node ok'); });
"#;

async fn ordinary(command: &[&str], expect: &str) {
    let sandbox = Sandbox::builder(command).build().unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "{command:?}: stdout {out:?} stderr {err:?}"
    );
    assert!(
        out.contains(expect),
        "{command:?}: stdout {out:?} stderr {err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_threads_forks_and_subprocesses_run_under_the_refusals() {
    if !privileged("python_threads_forks_and_subprocesses_run_under_the_refusals") {
        return;
    }
    ordinary(&["python3", "-c", "print(1)"], "1").await;
    ordinary(&["python3", "-c", PYTHON_ORDINARY], "python ok").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_workers_and_child_processes_run_under_the_refusals() {
    if !privileged("node_workers_and_child_processes_run_under_the_refusals") {
        return;
    }
    ordinary(&["node", "-e", "console.log(1)"], "1").await;
    ordinary(&["node", "-e", NODE_ORDINARY], "node ok").await;
}
