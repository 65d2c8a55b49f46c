//! The proxies' accept loops, wherever their two listeners were made: in the
//! kernel's own network namespace and handed over (Linux, [`super::handoff`]),
//! or on the host's loopback at ports the system picks, which the kernel's
//! Seatbelt profile alone may reach (macOS, [`Proxy::on_loopback`]).

use std::future::Future;
use std::sync::Arc;

use super::{Judge, NetworkLog, Proxy, Refusal, Setup};

/// Connections one kernel's proxies carry at once; more are closed at once.
const MAX_CONNECTIONS: usize = 256;
/// Name lookups one kernel's proxies make at once (each blocks a thread of the shared pool).
const MAX_LOOKUPS: usize = 8;

impl Proxy {
    /// Serve the HTTP and SOCKS5 listeners `listeners` gives (nothing, when it
    /// gives none) with `setup`'s rules, until the returned value is dropped.
    pub(in crate::sandbox) fn serve<F>(listeners: F, setup: Setup) -> Proxy
    where
        F: Future<Output = Option<[std::net::TcpListener; 2]>> + Send + 'static,
    {
        let log = Arc::new(NetworkLog::default());
        #[cfg(feature = "tls")]
        let authority = setup.authority.clone();
        let judge = Arc::new(Judge {
            rules: setup.rules,
            hosts: setup.hosts,
            log: log.clone(),
            local: super::local_addresses(),
            resolving: tokio::sync::Semaphore::new(MAX_LOOKUPS),
            carrying: Default::default(),
            secrets: setup.secrets,
            #[cfg(feature = "tls")]
            authority: setup.authority,
        });
        let (stop, stopped) = tokio::sync::watch::channel(());
        super::spawn(async move {
            let Some([http, socks]) = listeners.await else { return };
            let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
            let serve = |listener, socks: bool| {
                let (judge, mut stopped, permits) = (judge.clone(), stopped.clone(), permits.clone());
                tokio::spawn(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    loop {
                        tokio::select! {
                            _ = stopped.changed() => break,
                            accepted = listener.accept() => {
                                let Ok((stream, _)) = accepted else { continue };
                                // A kernel holds at most this many connections through its proxies:
                                // each is two of the host's file descriptors.
                                let Ok(permit) = permits.clone().try_acquire_owned() else {
                                    judge.log.refused(&Refusal {
                                        host: "(any)".into(),
                                        reason: format!("more than {MAX_CONNECTIONS} connections open at once"),
                                    });
                                    continue;
                                };
                                let (judge, mut stopped) = (judge.clone(), stopped.clone());
                                // Each connection ends with the kernel's proxies, whatever its far end does.
                                tokio::spawn(async move {
                                    let _permit = permit;
                                    let serving = async {
                                        if socks { super::socks::serve(stream, judge).await } else { super::http::serve(stream, judge).await }
                                    };
                                    tokio::select! {
                                        _ = serving => {}
                                        _ = stopped.changed() => {}
                                    }
                                });
                            }
                        }
                    }
                })
            };
            let _ = tokio::join!(serve(http, false), serve(socks, true));
        });
        Proxy {
            log,
            #[cfg(feature = "tls")]
            authority,
            _stop: stop,
        }
    }

    /// The proxies on the host's loopback, at two ports the system picks
    /// (HTTP, then SOCKS5), for a kernel that has no network namespace of its
    /// own to hold them (macOS): its sandbox must let it reach those two ports
    /// and nothing else. Other programs of this machine can reach them too,
    /// which gives them nothing they lack (they have the network), so a
    /// kernel here gets no secrets ([`super::super::Unenforceable::SecretsNeedPrivateProxy`]).
    // Started by macOS's sandbox only; the tests below run it on every OS.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    pub(in crate::sandbox) fn on_loopback(setup: Setup) -> std::io::Result<(Proxy, [u16; 2])> {
        let bind = || -> std::io::Result<(std::net::TcpListener, u16)> {
            let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
            listener.set_nonblocking(true)?;
            let port = listener.local_addr()?.port();
            Ok((listener, port))
        };
        let ((http, http_port), (socks, socks_port)) = (bind()?, bind()?);
        let proxy = Proxy::serve(async move { Some([http, socks]) }, setup);
        Ok((proxy, [http_port, socks_port]))
    }
}

// Linux only: the check that the listeners closed reads /proc.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::{Read, Write};

    use super::super::{HostRules, Proxy, Setup};

    /// An HTTP server on the host's loopback that answers `hello` to anything.
    fn server() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().map_while(Result::ok) {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
            }
        });
        port
    }

    /// What `request` sent to `port` gets back, whole.
    fn ask(port: u16, request: &[u8]) -> Vec<u8> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(request).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        answer
    }

    /// The macOS way (the proxies on the host's loopback), run here without the
    /// Seatbelt profile that keeps everything else from the kernel: the same
    /// judging on both ports, and nothing listening once the proxy is dropped.
    #[test]
    fn proxies_on_the_hosts_loopback_judge_as_in_a_namespace_and_stop_with_their_guard() {
        let upstream = server();
        let hosts = [("allowed.test".to_string(), vec!["127.0.0.1".parse().unwrap()])].into();
        let setup = Setup {
            rules: HostRules::parse("allow:allowed.test").unwrap(),
            hosts,
            secrets: Vec::new(),
            #[cfg(feature = "tls")]
            authority: None,
        };
        let (proxy, [http, socks]) = Proxy::on_loopback(setup).unwrap();
        assert_ne!(http, socks);
        let get = |host: &str| format!("GET http://{host}:{upstream}/ HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes();
        let allowed = String::from_utf8(ask(http, &get("allowed.test"))).unwrap();
        assert!(allowed.starts_with("HTTP/1.1 200") && allowed.ends_with("hello"), "{allowed}");
        let refused = String::from_utf8(ask(http, &get("other.test"))).unwrap();
        assert!(refused.starts_with("HTTP/1.1 403") && refused.contains("--network allow:"), "{refused}");
        let loopback = String::from_utf8(ask(http, &get("127.0.0.1"))).unwrap();
        assert!(loopback.starts_with("HTTP/1.1 403"), "the host's loopback is not the kernel's: {loopback}");
        // SOCKS5: no authentication, then CONNECT by name (0x03); the reply's second byte is 0 on success.
        let socks_to = |host: &str| {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", socks)).unwrap();
            stream.write_all(&[5, 1, 0]).unwrap();
            let mut chosen = [0u8; 2];
            stream.read_exact(&mut chosen).unwrap();
            let mut request = vec![5, 1, 0, 3, host.len() as u8];
            request.extend(host.as_bytes());
            request.extend(upstream.to_be_bytes());
            stream.write_all(&request).unwrap();
            let mut reply = [0u8; 10];
            stream.read_exact(&mut reply).unwrap();
            if reply[1] != 0 {
                return format!("refused {}", reply[1]);
            }
            stream.write_all(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n").unwrap();
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            answer
        };
        assert!(socks_to("allowed.test").ends_with("hello"));
        assert!(socks_to("other.test").starts_with("refused"));
        let refusals: Vec<String> = proxy.log.take_refusals().into_iter().map(|refusal| refusal.host).collect();
        assert_eq!(refusals, ["other.test", "127.0.0.1"], "once per host");
        // The listeners close with the proxy (its thread sees the stop and ends): this process
        // holds no socket listening on either port any more. (Connecting would not tell: another
        // test may have been given a freed port.)
        let held = [listening_inode(http), listening_inode(socks)];
        assert!(held.iter().all(|inode| inode.is_some_and(is_ours)), "{held:?}");
        drop(proxy);
        let closed = (0..6000).any(|_| {
            let gone = !held.iter().flatten().any(|inode| is_ours(*inode));
            if !gone {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            gone
        });
        assert!(closed, "the proxies still listen after their guard was dropped");
    }

    /// The inode of the socket listening on 127.0.0.1:`port`, from `/proc/net/tcp`.
    fn listening_inode(port: u16) -> Option<u64> {
        let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
        // The address as the kernel prints it: its bytes (in network order) read as a native number.
        let local = format!("{:08X}:{port:04X}", u32::from_ne_bytes([127, 0, 0, 1]));
        table.lines().skip(1).find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A"))
                .then(|| fields.get(9)?.parse().ok())
                .flatten()
        })
    }

    /// Whether a descriptor of this process is the socket `inode`.
    fn is_ours(inode: u64) -> bool {
        let socket = format!("socket:[{inode}]");
        std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.to_string_lossy() == socket))
    }
}
