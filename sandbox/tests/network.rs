//! Privileged suite: the network sensor. A program tries to reach the network in every usual
//! way; each attempt is logged by the sinkhole or its capture, and nothing leaves the
//! sandbox's namespace. Needs root; skips visibly elsewhere, fails under CI.

mod common;

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::time::Duration;

use common::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use vac_sandbox::{
    LogLimits, NetSelfTest, NetworkLog, Sandbox, SinkholeOptions, Termination, Transport,
};

const EGRESS: &str = r#"
import socket, ssl, subprocess, sys
host_tcp, host_udp = int(sys.argv[1]), int(sys.argv[2])

def attempt(label, f):
    try:
        print(label, f())
    except Exception as e:
        print(label, 'failed', type(e).__name__, e)

def http(addr, host, path):
    s = socket.create_connection(addr, timeout=10)
    s.sendall(f'GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n'.encode())
    reply = s.recv(100)
    s.close()
    return reply[:12]

def send(addr, data):
    s = socket.create_connection(addr, timeout=10)
    s.sendall(data)
    s.close()
    return 'sent'

def udp(addr, data):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(data, addr)
    return 'sent'

def raw():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.sendto(b'\x08\x00\xf7\xff\x00\x00\x00\x00', ('198.51.100.7', 0))
    return 'RAW-SENT'

def tls():
    s = socket.create_connection(('198.51.100.20', 443), timeout=10)
    ssl.create_default_context().wrap_socket(s, server_hostname='tls.vac-test.example')

def rows(table):
    return [line.split() for line in open('/proc/net/' + table).read().splitlines()[1:]]
def loopback(local):
    address = local.split(':')[0]
    return (len(address) == 8 and address.endswith('7F')) or address == '0' * 24 + '01000000'
# The sinkhole's sockets are not in the program's namespace: no listener, and no resolver
# beyond a loopback stub.
print('listeners', [r[1] for t in ('tcp', 'tcp6') for r in rows(t) if r[3] == '0A'])
print('resolvers', [r[1] for t in ('udp', 'udp6') for r in rows(t) if r[1].endswith(':0035') and not loopback(r[1])])
attempt('public', lambda: http(('93.184.216.34', 80), 'public.vac-test.example', '/public'))
attempt('private', lambda: send(('10.1.2.3', 5432), b'PGSQL-STARTUP'))
attempt('getent', lambda: subprocess.run(['getent', 'hosts', 'example.com'], capture_output=True, text=True).stdout.strip())
attempt('byname', lambda: http(('example.com', 80), 'example.com', '/byname'))
attempt('raw', raw)
attempt('udp-dns', lambda: udp(('8.8.8.8', 53), b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06direct\x04test\x00\x00\x01\x00\x01'))
attempt('udp-other', lambda: udp(('203.0.113.9', 9999), b'hello-udp'))
attempt('unlisted', lambda: send(('10.9.9.9', 4444), b'x'))
attempt('tls', tls)
attempt('host-tcp', lambda: send(('127.0.0.1', host_tcp), b'ESCAPED'))
attempt('host-udp', lambda: udp(('127.0.0.1', host_udp), b'ESCAPED'))
print('done')
"#;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn tcp_to(log: &NetworkLog, dst: SocketAddr) -> Vec<&vac_sandbox::TcpAttempt> {
    log.tcp.iter().filter(|a| a.dst == dst).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_egress_attempt_is_logged_and_none_leaves_the_namespace() {
    if !privileged("every_egress_attempt_is_logged_and_none_leaves_the_namespace") {
        return;
    }
    // Host-side witnesses, on the host's loopback only: they must receive nothing.
    let host_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let host_udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    host_tcp.set_nonblocking(true).unwrap();
    host_udp.set_nonblocking(true).unwrap();
    let (tcp_port, udp_port) = (
        host_tcp.local_addr().unwrap().port(),
        host_udp.local_addr().unwrap().port(),
    );
    let sandbox = Sandbox::builder([
        "python3".to_string(),
        "-c".into(),
        EGRESS.into(),
        tcp_port.to_string(),
        udp_port.to_string(),
    ])
    .build()
    .unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "{out}\n{err}"
    );
    assert!(out.contains("done"), "{out}\n{err}");
    let log = stopped.network_log().expect("the sensor ran");
    let context = format!("stdout:\n{out}\nlog: {log:#?}");
    assert_eq!(stopped.net_self_test(), NetSelfTest::Live, "{context}");

    // Nothing of the sinkhole is in the program's own socket tables.
    assert!(out.contains("listeners []\nresolvers []\n"), "{context}");

    // A public address and a private one: accepted, first bytes kept.
    let public = tcp_to(log, addr("93.184.216.34:80"));
    let http = public[0].http.as_ref().expect("an HTTP request");
    assert_eq!(http.request_line, "GET /public HTTP/1.1", "{context}");
    assert_eq!(http.host.as_deref(), Some("public.vac-test.example"));
    assert!(out.contains("public b'HTTP/1.1 200'"), "{context}");
    let private = tcp_to(log, addr("10.1.2.3:5432"));
    assert_eq!(private[0].first_bytes, b"PGSQL-STARTUP", "{context}");

    // A name: the resolver (through the host's resolv.conf) logged it, and the request went
    // to the sinkhole address with the name as Host.
    assert!(
        out.contains("getent ") && !out.contains("getent failed"),
        "{context}"
    );
    assert!(
        log.dns.iter().any(|q| q.name == "example.com."),
        "{context}"
    );
    assert!(
        log.tcp.iter().any(|a| a
            .http
            .as_ref()
            .is_some_and(|h| h.request_line == "GET /byname HTTP/1.1"
                && h.host.as_deref() == Some("example.com"))),
        "{context}"
    );

    // A raw socket needs a capability the program does not have; if it had one, the capture
    // would have logged the packet.
    let raw_denied = out.contains("raw failed PermissionError");
    let raw_logged = log
        .other
        .iter()
        .any(|p| p.dst == IpAddr::from([198, 51, 100, 7]));
    assert!(raw_denied || raw_logged, "{context}");

    // UDP anywhere and TCP to a port nobody listens on: the capture saw them.
    let udp_to = |dst: SocketAddr| log.udp.iter().find(|d| d.dst == dst);
    assert!(udp_to(addr("8.8.8.8:53")).is_some(), "{context}");
    assert!(
        log.dns.iter().any(|q| q.name == "direct.test."),
        "{context}"
    );
    assert_eq!(
        udp_to(addr("203.0.113.9:9999")).map(|d| d.bytes.as_slice()),
        Some(&b"hello-udp"[..]),
        "{context}"
    );
    let unlisted = tcp_to(log, addr("10.9.9.9:4444"));
    assert!(!unlisted.is_empty() && !unlisted[0].accepted, "{context}");
    assert!(
        out.contains("unlisted failed ConnectionRefusedError"),
        "{context}"
    );

    // TLS: the server name of the ClientHello.
    let tls = tcp_to(log, addr("198.51.100.20:443"));
    assert_eq!(
        tls[0].sni.as_deref(),
        Some("tls.vac-test.example"),
        "{context}"
    );

    // The sandbox's 127.0.0.1 is its own loopback: the host's listeners got nothing.
    assert!(
        tcp_to(log, SocketAddr::from(([127, 0, 0, 1], tcp_port))).len() == 1,
        "{context}"
    );
    assert!(
        udp_to(SocketAddr::from(([127, 0, 0, 1], udp_port))).is_some(),
        "{context}"
    );
    assert_eq!(
        host_tcp.accept().map(|_| ()).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    let mut buffer = [0u8; 64];
    assert_eq!(
        host_udp.recv_from(&mut buffer).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(!log.dropped.any(), "{:?}", log.dropped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_test_is_live_and_a_disabled_sensor_says_so() {
    if !privileged("the_self_test_is_live_and_a_disabled_sensor_says_so") {
        return;
    }
    let (_, _, stopped) = run_to_end(shell("true").build().unwrap().spawn().unwrap()).await;
    assert_eq!(stopped.net_self_test(), NetSelfTest::Live);
    let log = stopped.network_log().unwrap();
    let started = log.program_started.expect("the program start is marked");
    assert!(log.dns.iter().all(|q| q.since_start <= started), "{log:#?}");

    let off = shell("true").network_sensor(false).build().unwrap();
    let (_, _, stopped) = run_to_end(off.spawn().unwrap()).await;
    assert!(stopped.network_log().is_none());
    assert!(
        matches!(stopped.net_self_test(), NetSelfTest::Absent { reason } if reason.contains("disabled"))
    );
}

const FLOOD: &str = r#"
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
answered = 0
for i in range(20000):
    name = f'flood-{i}.example'.encode()
    q = i.to_bytes(2, 'big') + b'\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00'
    q += b''.join(len(l).to_bytes(1, 'big') + l for l in name.split(b'.')) + b'\x00\x00\x01\x00\x01'
    s.sendto(q, ('198.51.100.53', 53))
    try:
        s.recv(512)
        answered += 1
    except socket.timeout:
        pass
connected = 0
for i in range(2000):
    c = socket.socket()
    c.settimeout(5)
    try:
        c.connect(('10.0.0.1', 80 if i % 2 else 4444))
        connected += 1
    except OSError:
        pass
    c.close()
print('answered', answered, 'connected', connected)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_and_connect_floods_give_bounded_logs_with_drop_counts() {
    if !privileged("dns_and_connect_floods_give_bounded_logs_with_drop_counts") {
        return;
    }
    let options = SinkholeOptions::default().limits(LogLimits {
        max_entries: 1000,
        max_bytes: 256,
    });
    let sandbox = Sandbox::builder(["python3", "-c", FLOOD])
        .sinkhole_options(options)
        .build()
        .unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(300),
        run_to_end(sandbox.spawn().unwrap()),
    );
    let (out, err, stopped) = run.await.expect("the flood run ends");
    assert!(
        out.contains("answered 20000 connected 1000"),
        "{out}\n{err}"
    );
    let log = stopped.network_log().unwrap();
    assert!(log.dns.len() <= 1000 && log.tcp.len() <= 1000 && log.udp.len() <= 1000);
    assert!(log.dropped.dns >= 19_000, "{:?}", log.dropped);
    // Attempts reusing a source port merge with an earlier entry, so the count of TCP drops
    // depends on the kernel's port choice; that some were dropped at the cap does not.
    assert!(log.dropped.tcp > 0, "{:?}", log.dropped);
    assert!(log.dropped.udp > 0, "{:?}", log.dropped);
    assert_eq!(stopped.net_self_test(), NetSelfTest::Live);
}

const LISTEN: &str = r#"
import socket, sys
s = socket.socket()
s.bind(('0.0.0.0', 7777))
s.listen()
print('listening', flush=True)
sys.stdin.read()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sock_diag_sees_a_listening_socket_of_the_program_with_its_pid() {
    if !privileged("sock_diag_sees_a_listening_socket_of_the_program_with_its_pid") {
        return;
    }
    let sandbox = Sandbox::builder(["python3", "-c", LISTEN]).build().unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut stdout = BufReader::new(running.take_stdout().unwrap());
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
        .await
        .expect("the program reports it listens")
        .unwrap();
    assert_eq!(line.trim(), "listening");
    let sockets = running.network().unwrap().sockets().unwrap();
    let listening = sockets
        .iter()
        .find(|s| s.local.port() == 7777)
        .unwrap_or_else(|| panic!("{sockets:#?}"));
    assert!(listening.is_listening() && listening.transport == Transport::Tcp);
    let owner = listening.owner.expect("traced to a process");
    assert_eq!(
        owner.sandbox_pid,
        Some(running.program_pid()),
        "{sockets:#?}"
    );
    assert!(
        sockets
            .iter()
            // The self-test's closed connection may linger in TIME_WAIT, without an inode.
            .all(|s| s.inode == 0 || (s.local.port() != 53 && s.local.port() != 80)),
        "the sinkhole's own sockets are left out: {sockets:#?}"
    );
    // The listening-only dump gives the same listeners, owners included.
    let listeners = running.network().unwrap().listeners().unwrap();
    let expected: Vec<_> = sockets.iter().filter(|s| s.is_listening()).collect();
    assert_eq!(listeners.iter().collect::<Vec<_>>(), expected);
    let mut stdin = running.take_stdin().unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    running.wait().await;
    let stopped = running.stop().unwrap();
    assert_eq!(stopped.termination(), Some(Termination::Exited(0)));
}

const SERVE_LOOPBACK: &str = r#"
import socket, sys
s = socket.socket()
s.bind(('127.0.0.1', 7778))
s.listen()
print('listening', flush=True)
c, _ = s.accept()
c.sendall(b'inside\n')
c.close()
sys.stdin.read()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialer_reaches_a_server_on_the_sandboxes_own_loopback() {
    if !privileged("the_dialer_reaches_a_server_on_the_sandboxes_own_loopback") {
        return;
    }
    let addr: SocketAddr = "127.0.0.1:7778".parse().unwrap();
    // Nothing listens there on the host: only the namespace's loopback has the server.
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err());
    let sandbox = Sandbox::builder(["python3", "-c", SERVE_LOOPBACK])
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut stdout = BufReader::new(running.take_stdout().unwrap());
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
        .await
        .expect("the program reports it listens")
        .unwrap();
    assert_eq!(line.trim(), "listening");
    let dialer = running.dialer().unwrap();
    let stream = dialer.connect(addr, Duration::from_secs(5)).unwrap();
    let mut reply = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stream), &mut reply).unwrap();
    assert_eq!(reply, "inside\n");
    let mut stdin = running.take_stdin().unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    running.wait().await;
    let stopped = running.stop().unwrap();
    assert_eq!(stopped.termination(), Some(Termination::Exited(0)));
}

const HOLD: &str = r#"
import socket, sys
s = socket.create_connection(('10.1.2.3', 5432), timeout=60)
print('connected', flush=True)
sys.stdin.readline()
s.close()
print('closed', flush=True)
sys.stdin.read()
"#;

/// A connection the sinkhole is still reading keeps the network sensor pending: the
/// program may act again once it is answered or closed, so the run is not quiet yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_still_open_at_the_sinkhole_keeps_the_sensor_pending() {
    if !privileged("a_connection_still_open_at_the_sinkhole_keeps_the_sensor_pending") {
        return;
    }
    let mut options = SinkholeOptions::default();
    options.idle = Duration::from_secs(120);
    let sandbox = Sandbox::builder(["python3", "-c", HOLD])
        .sinkhole_options(options)
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut talk = Talk::to(&mut running);
    assert_eq!(talk.line().await, "connected");
    let network = running.network().unwrap();
    let target = addr("10.1.2.3:5432");
    // Once the listener has accepted it, the connection is read until the idle timeout
    // (two minutes here), and sent nothing: pending all along.
    let accepted = wait_until(|| {
        let log = network.log();
        tcp_to(&log, target).iter().any(|t| t.accepted)
    });
    assert!(accepted.await, "the sinkhole accepted the connection");
    assert!(network.pending(), "an open connection is pending");
    talk.say("close").await;
    assert_eq!(talk.line().await, "closed");
    // The listener reads the close and lets the connection go.
    assert!(
        wait_until(|| !network.pending()).await,
        "a closed connection is no longer pending"
    );
    talk.end(running).await;
}
