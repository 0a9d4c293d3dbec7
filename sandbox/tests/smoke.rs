mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    if !privileged("smoke") { return; }
    let sandbox = shell("echo hello; id; hostname; ls /; echo data > /etc/vac-smoke; cat /proc/self/status | grep Cap").build().unwrap();
    let running = sandbox.spawn().unwrap();
    let (out, err, stopped) = run_to_end(running).await;
    println!("OUT:\n{out}\nERR:\n{err}");
    let report = stopped.witness().collect().unwrap();
    println!("{}\n{:?}", render(&report), report.self_test);
}
