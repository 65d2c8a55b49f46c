//! TCP for kernels that cannot bind Unix sockets (Linux only).
//!
//! Kernels on the JVM (JeroMQ has no Unix sockets: its `ipc` is TCP within
//! one process) and Deno's take only `tcp` connection files. Such a kernel
//! always runs in a network namespace of its own: on the host's loopback
//! every local process could connect to its ports and read what it
//! publishes (cell code and output). The host reaches it there with sockets
//! the kernel's process made in that namespace before `exec` and handed over
//! ([`crate::sandbox::command_like_a_tcp_kernel`]): a socket stays in the
//! namespace it was made in, and a non-root host may not enter it. Each
//! channel gets [`CONNECTIONS_PER_CHANNEL`] of them, so a kernel that keeps
//! closing its connections runs out, and is then stopped.
//!
//! Before a byte is carried, the host also finds the kernel's end of each new
//! connection in its namespace's TCP table and checks that the kernel's
//! process, or one of its process group or session, holds it, while the
//! kernel is not yet reaped (so its pid is still its own).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::kernel::process::ExitInfo;

/// Connections the host may open to each of a kernel's ports in its life.
pub(super) const CONNECTIONS_PER_CHANNEL: usize = 4;
/// How long a connection, and then the kernel's `accept`, may take.
const CONNECT_WAIT: Duration = Duration::from_secs(10);
const ACCEPT_WAIT: Duration = Duration::from_secs(30);
/// How long a kernel whose port went away has to end by itself before it is
/// stopped (JJava's launcher outlives the JVM it runs the kernel in).
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(10);
/// TCP states in `/proc/net/tcp`.
const ESTABLISHED: u8 = 0x01;
const LISTEN: u8 = 0x0A;

/// `count` distinct loopback ports free on the host now (in the kernel's
/// fresh namespace every port is free; these also stay clear of its proxies').
pub(super) fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let listeners: Vec<std::net::TcpListener> =
        (0..count).map(|_| std::net::TcpListener::bind("127.0.0.1:0")).collect::<Result<_, _>>()?;
    listeners.iter().map(|listener| listener.local_addr().map(|address| address.port())).collect()
}

/// Whether process `pid` is in another network namespace than the host.
pub(super) fn in_own_namespace(pid: u32) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (ours, theirs) = (std::fs::metadata("/proc/self/ns/net")?, std::fs::metadata(format!("/proc/{pid}/ns/net"))?);
    Ok((ours.dev(), ours.ino()) != (theirs.dev(), theirs.ino()))
}

/// One of the kernel's ports, the sockets left to reach it with, and how to
/// check who answers on it.
#[derive(Debug, Clone)]
pub struct TcpTarget {
    pub(super) port: u16,
    /// The kernel's process (its group and session are the kernel's).
    pub(super) pid: u32,
    /// Unconnected sockets of the kernel's namespace; each connection takes one.
    pub(super) sockets: Arc<Mutex<Vec<std::net::TcpStream>>>,
    pub(super) exit: watch::Receiver<Option<ExitInfo>>,
}

/// Wait until something listens on every one of `ports` in the kernel's
/// namespace (or the kernel exited).
pub(super) async fn wait_listening(
    pid: u32,
    ports: &[u16],
    mut exit: watch::Receiver<Option<ExitInfo>>,
) -> Result<(), String> {
    let mut delay = Duration::from_millis(5);
    loop {
        let table = tokio::task::spawn_blocking(move || tcp_table(pid)).await.map_err(|e| e.to_string())?;
        if ports.iter().all(|port| table.iter().any(|entry| entry.state == LISTEN && entry.local_port == *port)) {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = exit.wait_for(Option::is_some) => return Err("it exited".into()),
        }
        delay = (delay * 2).min(Duration::from_millis(100));
    }
}

/// Why no connection to a kernel's port was made.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unopened {
    /// A limit was broken (its connections spent, its port answered by
    /// another process): the kernel is stopped for it at once.
    Broke(String),
    /// Its port is not there, or not answering: most often the kernel is on its
    /// way out, and how its process ends is what the cell is told.
    Gone(String),
}

/// A connection to `target`'s port, once the kernel's own process has
/// accepted it; why not otherwise.
pub(super) async fn open(target: &TcpTarget) -> Result<TcpStream, Unopened> {
    let port = target.port;
    // A kernel that has ended is not asked again: each try would spend one of its sockets.
    if target.exit.borrow().is_some() {
        return Err(Unopened::Gone("it exited".into()));
    }
    let socket = target.sockets.lock().unwrap().pop().ok_or_else(|| {
        Unopened::Broke(format!(
            "its port {port} ended its connection {CONNECTIONS_PER_CHANNEL} times; cellbox reconnects no more"
        ))
    })?;
    let connect = async {
        socket.set_nonblocking(true)?;
        tokio::net::TcpSocket::from_std_stream(socket).connect(([127, 0, 0, 1], port).into()).await
    };
    let stream = match tokio::time::timeout(CONNECT_WAIT, connect).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => return Err(Unopened::Gone(format!("could not reach its port {port}: {error}"))),
        Err(_) => {
            return Err(Unopened::Gone(format!("its port {port} did not answer within {}s", CONNECT_WAIT.as_secs())));
        }
    };
    let ours = stream.local_addr().map_err(|e| Unopened::Gone(e.to_string()))?.port();
    let pid = target.pid;
    let deadline = tokio::time::Instant::now() + ACCEPT_WAIT;
    let mut delay = Duration::from_millis(1);
    loop {
        let holder = tokio::task::spawn_blocking(move || accepted_by_kernel(pid, port, ours))
            .await
            .map_err(|e| Unopened::Broke(e.to_string()))?;
        // Reaped, its pid may be another process's: nothing it held counts.
        if target.exit.borrow().is_some() {
            return Err(Unopened::Gone("it exited".into()));
        }
        match holder {
            Accepted::ByKernel => return Ok(stream),
            Accepted::BySomethingElse => {
                return Err(Unopened::Broke(format!(
                    "its port {port} was answered by a process that is not the kernel's; the connection was closed \
                     unused"
                )));
            }
            Accepted::NotYet if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(50));
            }
            Accepted::NotYet => return Err(Unopened::Gone(format!("its port {port} did not accept a connection"))),
        }
    }
}

/// Whether the kernel's process ends within `grace` (a kernel whose port
/// went away is given that long to end by itself, so that its own exit is
/// what the cell is told).
pub(super) async fn ends_within(target: &TcpTarget, grace: Duration) -> bool {
    let mut exit = target.exit.clone();
    tokio::time::timeout(grace, exit.wait_for(Option::is_some)).await.is_ok_and(|ended| ended.is_ok())
}

#[derive(Debug, PartialEq, Eq)]
enum Accepted {
    ByKernel,
    BySomethingElse,
    NotYet,
}

/// Who holds the far end of our connection from local port `ours` to `port`.
fn accepted_by_kernel(pid: u32, port: u16, ours: u16) -> Accepted {
    let far_end = tcp_table(pid)
        .into_iter()
        .find(|entry| entry.state == ESTABLISHED && entry.local_port == port && entry.remote_port == ours);
    // Before `accept`, the far end belongs to no file (inode 0).
    let Some(inode) = far_end.map(|entry| entry.inode).filter(|inode| *inode != 0) else { return Accepted::NotYet };
    if held_by_group_of(pid, inode) {
        return Accepted::ByKernel;
    }
    // A kernel that accepted and then ended (its port closing as it dies) holds
    // nothing any more, and neither does anyone else: its end is gone from the table.
    if tcp_table(pid).iter().any(|entry| entry.inode == inode) { Accepted::BySomethingElse } else { Accepted::NotYet }
}

/// Whether `pid`, or a process whose group or session is `pid`'s, holds socket `inode`.
fn held_by_group_of(pid: u32, inode: u64) -> bool {
    let wanted = format!("socket:[{inode}]");
    let Ok(processes) = std::fs::read_dir("/proc") else { return false };
    for process in processes.flatten() {
        let Some(other) = process.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{other}/stat")) else { continue };
        // After the command name (which may hold spaces and parentheses): state, ppid, pgrp, session.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(group), Some(session)) = (fields.get(2), fields.get(3)) else { continue };
        if other != pid && *group != pid.to_string() && *session != pid.to_string() {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{other}/fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link.as_os_str() == wanted.as_str())) {
            return true;
        }
    }
    false
}

/// One row of a TCP table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    local_port: u16,
    remote_port: u16,
    state: u8,
    inode: u64,
}

/// The TCP sockets (IPv4 and IPv6) of the namespace `pid` is in.
fn tcp_table(pid: u32) -> Vec<Entry> {
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).ok())
        .flat_map(|text| text.lines().skip(1).filter_map(parse_row).collect::<Vec<_>>())
        .collect()
}

/// `sl local_address rem_address st … inode …`, addresses as `HEXIP:HEXPORT`.
fn parse_row(line: &str) -> Option<Entry> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let port = |address: &str| u16::from_str_radix(address.rsplit_once(':')?.1, 16).ok();
    Some(Entry {
        local_port: port(fields.get(1)?)?,
        remote_port: port(fields.get(2)?)?,
        state: u8::from_str_radix(fields.get(3)?, 16).ok()?,
        inode: fields.get(9)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_the_tables_are_read() {
        let row = "   3: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 424242 1 \
                   0000000000000000 20 4 30 10 -1";
        assert_eq!(parse_row(row), Some(Entry { local_port: 8080, remote_port: 50000, state: 1, inode: 424242 }));
        let v6 = "   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 \
                  00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0";
        assert_eq!(parse_row(v6), Some(Entry { local_port: 80, remote_port: 0, state: LISTEN, inode: 77 }));
        assert_eq!(parse_row("  sl  local_address rem_address   st"), None);
    }

    /// A listener of this process, reached as a kernel would be: accepted by
    /// this process's own group it passes; named as another group's, it is
    /// refused, and before `accept` nobody holds it.
    #[tokio::test]
    async fn only_the_kernels_own_process_passes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let me = std::process::id();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let ours = client.local_addr().unwrap().port();
        assert_eq!(accepted_by_kernel(me, port, ours), Accepted::NotYet, "queued, not yet accepted");
        let (_accepted, _) = listener.accept().unwrap();
        assert_eq!(accepted_by_kernel(me, port, ours), Accepted::ByKernel);
        // Checked as another kernel's (a pid no process has, so no group or session either), it is refused.
        let stranger = u32::MAX - 1;
        let far =
            tcp_table(me).into_iter().find(|e| e.state == ESTABLISHED && e.local_port == port && e.remote_port == ours);
        assert!(!held_by_group_of(stranger, far.unwrap().inode));
    }

    #[test]
    fn free_ports_differ() {
        let ports = free_ports(5).unwrap();
        let mut unique = ports.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 5, "{ports:?}");
    }
}
