//! The macOS backend's rules: a Seatbelt profile (the language `sandbox-exec
//! -p` reads) made from the same [`FileAccess`] and network mode as the Linux
//! rules. It is plain text, so it is built and tested on every OS.
//!
//! Seatbelt applies the last rule that matches an operation. The profile
//! therefore starts from "allow everything" (Landlock, too, only confines
//! files), takes every write away, gives writes back under the writable
//! paths, and ends with the secret locations, unreadable and unwritable
//! wherever they are. With the network off, IP traffic in and out is denied
//! while UNIX sockets stay, as on Linux. Filtered by name, it is denied as
//! well but for the two ports of the host's loopback where the kernel's own
//! proxies listen, and the system's name resolver is closed (the proxies
//! resolve names; a lookup of its own would let a cell send data out in names).

use std::fmt::Write as _;
use std::path::Path;

use super::Unenforceable;
use super::access::FileAccess;
use super::policy::{NetworkMode, SandboxMode};

/// Where macOS keeps the tool that starts a program under a profile.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Where macOS's name resolver (mDNSResponder) takes lookups.
const RESOLVER_SOCKET: &str = "/private/var/run/mDNSResponder";

/// The profile for filesystem `mode` (`access` is what it allows; `None` when
/// the mode is `off`) and `network`; `proxies` are the ports of the kernel's
/// HTTP and SOCKS5 proxies on the host's loopback, which a filtered network
/// needs. `localhost` is refused: Linux gives the kernel a loopback of its
/// own, and Seatbelt could only open the host's, which is a different
/// (weaker) promise under the same name.
pub fn profile(
    mode: SandboxMode,
    access: Option<&FileAccess>,
    network: NetworkMode,
    proxies: Option<[u16; 2]>,
) -> Result<String, Unenforceable> {
    let mut out = format!("(version 1)\n; cellbox sandbox {mode}, network {network}\n(allow default)\n");
    if let Some(access) = access.filter(|_| mode != SandboxMode::Off) {
        out.push_str("(deny file-write*)\n");
        rule(&mut out, "(allow file-write*", &access.writable);
        rule(&mut out, "(deny file-read* file-write*", &access.denied);
    }
    match network {
        NetworkMode::On => {}
        NetworkMode::Off => no_ip(&mut out),
        NetworkMode::Localhost => return Err(Unenforceable::NoPrivateLoopback),
        NetworkMode::Filtered => {
            let Some(ports) = proxies else { return Err(Unenforceable::NoNetworkFilter) };
            no_ip(&mut out);
            // Seatbelt names an address as `localhost:PORT` (or `*:PORT`), never by number.
            for port in ports {
                let _ = writeln!(out, "(allow network-outbound (remote ip \"localhost:{port}\"))");
            }
            let _ = writeln!(
                out,
                "(deny network-outbound (remote unix-socket (path-literal {})))",
                quoted(Path::new(RESOLVER_SOCKET))
            );
        }
    }
    Ok(out)
}

/// IP traffic denied in and out, and listening on IP ports.
fn no_ip(out: &mut String) {
    out.push_str("(deny network-outbound (remote ip))\n(deny network-inbound (local ip))\n");
    out.push_str("(deny network-bind (local ip))\n");
}

/// `head` applied to each of `paths` and everything beneath it, one path per line.
fn rule(out: &mut String, head: &str, paths: &[std::path::PathBuf]) {
    if paths.is_empty() {
        return;
    }
    out.push_str(head);
    for path in paths {
        let _ = write!(out, "\n    (subpath {})", quoted(path));
    }
    out.push_str(")\n");
}

/// `path` as a profile string: in double quotes, with `\` and `"` escaped.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn access() -> FileAccess {
        FileAccess {
            writable: vec![PathBuf::from("/private/var/folders/t/cellbox-kernel-1"), PathBuf::from("/Users/ann/proj")],
            denied: vec![PathBuf::from("/Users/ann/.ssh"), PathBuf::from("/Users/ann/odd \"name\\")],
            private: Vec::new(),
        }
    }

    #[test]
    fn workspace_write_denies_writes_outside_and_secrets_last() {
        let text = profile(SandboxMode::WorkspaceWrite, Some(&access()), NetworkMode::On, None).unwrap();
        assert_eq!(
            text,
            "(version 1)\n\
             ; cellbox sandbox workspace-write, network on\n\
             (allow default)\n\
             (deny file-write*)\n\
             (allow file-write*\n    (subpath \"/private/var/folders/t/cellbox-kernel-1\")\n    (subpath \"/Users/ann/proj\"))\n\
             (deny file-read* file-write*\n    (subpath \"/Users/ann/.ssh\")\n    (subpath \"/Users/ann/odd \\\"name\\\\\"))\n"
        );
    }

    #[test]
    fn read_only_writes_only_the_temp_dir_and_the_network_can_be_off() {
        let only_tmp = FileAccess { writable: access().writable[..1].to_vec(), ..access() };
        let text = profile(SandboxMode::ReadOnly, Some(&only_tmp), NetworkMode::Off, None).unwrap();
        assert!(text.starts_with("(version 1)\n; cellbox sandbox read-only, network off\n(allow default)\n"), "{text}");
        assert!(text.contains("(allow file-write*\n    (subpath \"/private/var/folders/t/cellbox-kernel-1\"))\n"));
        assert!(!text.contains("/Users/ann/proj"), "{text}");
        assert!(text.ends_with(
            "(deny network-outbound (remote ip))\n(deny network-inbound (local ip))\n(deny network-bind (local ip))\n"
        ));
    }

    #[test]
    fn the_network_alone_leaves_files_open_and_localhost_is_refused() {
        let text = profile(SandboxMode::Off, None, NetworkMode::Off, None).unwrap();
        assert!(!text.contains("file-"), "{text}");
        assert!(text.contains("(deny network-outbound (remote ip))"), "{text}");
        let error = profile(SandboxMode::WorkspaceWrite, Some(&access()), NetworkMode::Localhost, None).unwrap_err();
        assert!(matches!(error, Unenforceable::NoPrivateLoopback), "{error}");
    }

    #[test]
    fn filtered_by_name_reaches_only_its_proxies_ports_and_no_resolver() {
        let text =
            profile(SandboxMode::WorkspaceWrite, Some(&access()), NetworkMode::Filtered, Some([50111, 50112])).unwrap();
        let network = &text[text.find("(deny network-outbound (remote ip))").expect("IP denied")..];
        assert_eq!(
            network,
            "(deny network-outbound (remote ip))\n(deny network-inbound (local ip))\n(deny network-bind (local ip))\n\
             (allow network-outbound (remote ip \"localhost:50111\"))\n\
             (allow network-outbound (remote ip \"localhost:50112\"))\n\
             (deny network-outbound (remote unix-socket (path-literal \"/private/var/run/mDNSResponder\")))\n",
            "the two ports come after the denial (Seatbelt's last match wins), and nothing else is allowed"
        );
        assert!(text.find("(deny file-read* file-write*").unwrap() < text.find("network-outbound").unwrap());
        let error = profile(SandboxMode::Off, None, NetworkMode::Filtered, None).unwrap_err();
        assert!(matches!(error, Unenforceable::NoNetworkFilter), "{error}");
    }

    #[test]
    fn the_rules_come_from_the_same_file_access_as_linux() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let caches = tempfile::tempdir().unwrap();
        let policy =
            crate::sandbox::SandboxPolicy { kernel_files: Some(caches.path().to_path_buf()), ..Default::default() };
        let access = super::super::file_access(&policy, policy.mode, work.path(), home.path(), Some(tmp.path()));
        let text = profile(policy.mode, Some(&access), policy.network, None).unwrap();
        let real = |p: &Path| format!("(subpath {})", quoted(&p.canonicalize().unwrap()));
        assert!(text.contains(&real(work.path())) && text.contains(&real(tmp.path())), "{text}");
        assert!(text.contains(&real(caches.path())), "the kernels' own caches: {text}");
        assert!(!text.contains(".cache/pip"), "never the user's caches: {text}");
        let secret = format!("(subpath {})", quoted(&home.path().canonicalize().unwrap().join(".ssh")));
        let deny = text.find("(deny file-read* file-write*").unwrap();
        assert!(text[deny..].contains(&secret), "secrets are denied after every allow: {text}");
    }
}
