//! Which hosts a kernel may reach under `--network allow:…` / `deny:…`: the
//! rules as written, their presets, and the two checks the proxy makes on
//! every connection (the name a client asked for, then each address that
//! name resolves to).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::super::policy::PolicyError;

/// Names a preset stands for (`allow:pypi`), so that a common need is one word.
pub const PRESETS: &[(&str, &[&str])] = &[
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    ("npm", &["registry.npmjs.org"]),
    (
        "github",
        &["github.com", "*.github.com", "githubusercontent.com", "*.githubusercontent.com", "ghcr.io", "*.ghcr.io"],
    ),
    ("huggingface", &["huggingface.co", "*.huggingface.co", "hf.co", "*.hf.co"]),
    ("conda", &["conda.anaconda.org", "repo.anaconda.com", "*.anaconda.org", "*.anaconda.com"]),
];

/// One entry of a list: a host name, every name below a domain (`*.example.com`,
/// not `example.com` itself), an address, or a range of addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    Name(String),
    Below(String),
    Address(IpAddr),
    Range(IpAddr, u8),
}

/// `allow:` and `deny:` lists. With an allow list only what it names is
/// reached (minus the deny list); with a deny list alone, everything public but what it names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostRules {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// How a name was let through: only a name written out in full (or an
/// address range) reaches private and loopback addresses, never a wildcard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMatch {
    Exact,
    Wildcard,
    /// No allow list: every name not denied.
    Open,
}

/// Why a connection was refused, in words an agent can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.host, self.reason)
    }
}

impl FromStr for HostPattern {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, PolicyError> {
        let text = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let bad = || PolicyError::BadHost(text.clone());
        if let Some((address, bits)) = text.split_once('/') {
            let address: IpAddr = address.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
            let bits: u8 = bits.parse().map_err(|_| bad())?;
            // `::ffff:10.0.0.0/104` is `10.0.0.0/8`: ranges are compared as IPv4 where they are.
            let mapped = match address {
                IpAddr::V6(v6) => v6.to_ipv4_mapped(),
                IpAddr::V4(_) => None,
            };
            return match (address, mapped) {
                (_, Some(v4)) if (96..=128).contains(&bits) => Ok(HostPattern::Range(IpAddr::V4(v4), bits - 96)),
                (_, Some(_)) => Err(bad()),
                (IpAddr::V4(_), None) if bits <= 32 => Ok(HostPattern::Range(address, bits)),
                (IpAddr::V6(_), None) if bits <= 128 => Ok(HostPattern::Range(address, bits)),
                _ => Err(bad()),
            };
        }
        if let Ok(address) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(HostPattern::Address(address));
        }
        let (below, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, text.clone()),
        };
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
        };
        if name.len() > 253 || !name.split('.').all(label_ok) || (below && !name.contains('.')) {
            return Err(bad());
        }
        Ok(if below { HostPattern::Below(name) } else { HostPattern::Name(name) })
    }
}

impl HostPattern {
    fn matches_name(&self, host: &str) -> Option<NameMatch> {
        match self {
            HostPattern::Name(name) if name == host => Some(NameMatch::Exact),
            HostPattern::Below(domain)
                if host.len() > domain.len()
                    && host.ends_with(domain.as_str())
                    && host.as_bytes()[host.len() - domain.len() - 1] == b'.' =>
            {
                Some(NameMatch::Wildcard)
            }
            _ => None,
        }
    }

    /// Whether `address`, as written or as the IPv4 address it carries, is this one.
    fn matches_address(&self, address: IpAddr) -> bool {
        let forms = [address, canonical(address)];
        match *self {
            HostPattern::Address(own) => forms.iter().any(|form| *form == own || *form == canonical(own)),
            HostPattern::Range(base, bits) => forms.iter().any(|form| in_range(*form, base, bits)),
            _ => false,
        }
    }
}

/// An IPv4 address written as IPv6 is that IPv4 address: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`,
/// `64:ff9b:1::/48`) and 6to4 (`2002:AABB:CCDD::`) alike, so that no spelling
/// reaches an IPv4 address its rules refuse.
fn canonical(address: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = address else { return address };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let s = v6.segments();
    let low = std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0, _, _] if !v6.is_unspecified() && !v6.is_loopback() => IpAddr::V4(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => IpAddr::V4(low),
        [0x64, 0xff9b, 1, ..] => IpAddr::V4(low),
        [0x2002, high, middle, ..] => {
            IpAddr::V4(std::net::Ipv4Addr::new((high >> 8) as u8, high as u8, (middle >> 8) as u8, middle as u8))
        }
        _ => address,
    }
}

fn in_range(address: IpAddr, base: IpAddr, bits: u8) -> bool {
    match (address, base) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits)) };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// What kind of place an address is, for the rules that do not depend on the lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    /// Reached when the name is allowed.
    Public,
    /// Loopback, private, shared (CGNAT) or unique-local: reached only when
    /// named in full or by an allowed range.
    Private,
    /// Link-local (a cloud's metadata service at 169.254.169.254 among them),
    /// unspecified, multicast, broadcast: never reached.
    Never,
}

pub fn kind_of(address: IpAddr) -> AddressKind {
    match canonical(address) {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            if v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || a == 0
                || a >= 240
                || v4 == AZURE_WIRESERVER
            {
                AddressKind::Never
            } else if v4.is_loopback()
                || v4.is_private()
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (18..20).contains(&b))
            {
                AddressKind::Private
            } else {
                AddressKind::Public
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_unspecified() || v6.is_multicast() || (first & 0xffc0) == 0xfe80 || v6 == METADATA_V6 {
                AddressKind::Never
            } else if v6.is_loopback() || (first & 0xfe00) == 0xfc00 {
                AddressKind::Private
            } else {
                AddressKind::Public
            }
        }
    }
}

/// Azure's host service (WireServer), which a VM's guest reaches like a metadata service.
const AZURE_WIRESERVER: std::net::Ipv4Addr = std::net::Ipv4Addr::new(168, 63, 129, 16);

/// The metadata service's IPv6 address on AWS (`fd00:ec2::254`): unique-local, but never reached.
const METADATA_V6: std::net::Ipv6Addr = std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

impl HostRules {
    /// `allow:a,b;deny:c` (the part after `--network`), presets expanded.
    pub fn parse(text: &str) -> Result<HostRules, PolicyError> {
        let mut rules = HostRules::default();
        for part in text.split(';').map(str::trim).filter(|part| !part.is_empty()) {
            let (list, entries) = match part.split_once(':') {
                Some(("allow", entries)) => (&mut rules.allow, entries),
                Some(("deny", entries)) => (&mut rules.deny, entries),
                _ => return Err(PolicyError::UnknownNetwork(part.to_string())),
            };
            for entry in entries.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
                let entry = entry.to_ascii_lowercase();
                match PRESETS.iter().find(|(name, _)| *name == entry) {
                    Some((_, names)) => list.extend(names.iter().map(|name| name.to_string())),
                    None if !entry.contains(['.', ':', '/']) && entry != "localhost" => {
                        return Err(PolicyError::UnknownPreset(entry));
                    }
                    None => {
                        entry.parse::<HostPattern>()?;
                        list.push(entry);
                    }
                }
            }
        }
        if rules.allow.is_empty() && rules.deny.is_empty() {
            return Err(PolicyError::UnknownNetwork(text.to_string()));
        }
        for list in [&mut rules.allow, &mut rules.deny] {
            let mut seen = std::collections::HashSet::new();
            list.retain(|entry| seen.insert(entry.clone()));
        }
        Ok(rules)
    }

    fn patterns(list: &[String]) -> impl Iterator<Item = HostPattern> + '_ {
        list.iter().filter_map(|entry| entry.parse().ok())
    }

    /// Whether the name (or literal address) a client asked for may be
    /// tried at all, and how it matched.
    pub fn check_name(&self, host: &str) -> Result<NameMatch, Refusal> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let refuse = |reason: String| Refusal { host: host.clone(), reason };
        if let Ok(address) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
            if Self::patterns(&self.deny).any(|p| p.matches_address(address)) {
                return Err(refuse("denied by the network policy".into()));
            }
            return if Self::patterns(&self.allow).any(|p| p.matches_address(address)) {
                Ok(NameMatch::Exact)
            } else {
                Err(refuse("a literal address is reached only when that address is allowed".into()))
            };
        }
        if let Some(pattern) = Self::patterns(&self.deny).find(|p| p.matches_name(&host).is_some()) {
            let _ = pattern;
            return Err(refuse("denied by the network policy".into()));
        }
        if self.allow.is_empty() {
            return Ok(NameMatch::Open);
        }
        let best =
            Self::patterns(&self.allow).filter_map(|p| p.matches_name(&host)).min_by_key(|m| *m != NameMatch::Exact);
        best.ok_or_else(|| refuse("not in the allowlist".into()))
    }

    /// Whether `address`, which `host` resolved to, may be connected to;
    /// `local` are this machine's own addresses, judged as loopback is (a
    /// service listening on all of them is the host's).
    pub fn check_address(
        &self,
        host: &str,
        matched: NameMatch,
        address: IpAddr,
        local: &[IpAddr],
    ) -> Result<(), Refusal> {
        let refuse = |reason: String| Refusal { host: host.to_string(), reason };
        if Self::patterns(&self.deny).any(|p| p.matches_address(address)) {
            return Err(refuse(format!("resolves to {address}, which the network policy denies")));
        }
        let kind = match kind_of(address) {
            AddressKind::Public if local.iter().any(|own| canonical(*own) == canonical(address)) => {
                AddressKind::Private
            }
            kind => kind,
        };
        match kind {
            AddressKind::Never => Err(refuse(format!(
                "resolves to {address}, a link-local, metadata or broadcast address, which is never reached"
            ))),
            AddressKind::Private
                if matched != NameMatch::Exact && !Self::patterns(&self.allow).any(|p| p.matches_address(address)) =>
            {
                Err(refuse(format!(
                    "resolves to {address}, a private or loopback address, reached only when the name is allowed \
                     in full (not by a wildcard) or its address range is"
                )))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for HostRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.allow.is_empty() {
            parts.push(format!("allow:{}", self.allow.join(",")));
        }
        if !self.deny.is_empty() {
            parts.push(format!("deny:{}", self.deny.join(",")));
        }
        f.write_str(&parts.join(";"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> HostRules {
        HostRules::parse(text).unwrap()
    }

    #[test]
    fn presets_expand_and_lists_combine() {
        let parsed = rules("allow:pypi,example.com;deny:evil.example.com");
        assert_eq!(parsed.allow, ["pypi.org", "files.pythonhosted.org", "example.com"]);
        assert_eq!(parsed.deny, ["evil.example.com"]);
        assert_eq!(parsed.to_string(), "allow:pypi.org,files.pythonhosted.org,example.com;deny:evil.example.com");
        assert_eq!(HostRules::parse(&parsed.to_string()).unwrap(), parsed);
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        for bad in [
            "allow:",
            "allow:pypy",
            "allow:exa mple.com",
            "permit:x.com",
            "allow:*",
            "allow:10.0.0.0/33",
            "allow:*.com",
        ] {
            assert!(HostRules::parse(bad).is_err(), "{bad}");
        }
        assert!(matches!(HostRules::parse("allow:pypy"), Err(PolicyError::UnknownPreset(_))));
    }

    #[test]
    fn names_match_in_full_or_below_a_wildcard() {
        let r = rules("allow:example.com,*.github.com;deny:gist.github.com");
        assert_eq!(r.check_name("example.com"), Ok(NameMatch::Exact));
        assert_eq!(r.check_name("EXAMPLE.com."), Ok(NameMatch::Exact));
        assert_eq!(r.check_name("api.github.com"), Ok(NameMatch::Wildcard));
        assert!(r.check_name("github.com").is_err(), "a wildcard is below the domain only");
        assert!(r.check_name("evilgithub.com").is_err());
        assert!(r.check_name("gist.github.com").is_err(), "deny wins");
        assert!(r.check_name("sub.example.com").is_err());
        assert!(r.check_name("93.184.216.34").is_err(), "a literal address needs its own rule");
        let open = rules("deny:example.com");
        assert_eq!(open.check_name("other.org"), Ok(NameMatch::Open));
        assert!(open.check_name("example.com").is_err());
        assert!(open.check_name("1.1.1.1").is_err());
    }

    #[test]
    fn addresses_are_judged_whatever_the_name() {
        let r = rules("allow:example.com,*.example.org,10.1.0.0/16");
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(r.check_address("x", NameMatch::Exact, ip("93.184.216.34"), &[]).is_ok());
        for never in [
            "169.254.169.254",
            "169.254.1.1",
            "0.0.0.0",
            "224.0.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(r.check_address("x", NameMatch::Exact, ip(never), &[]).is_err(), "{never}");
        }
        assert!(r.check_address("x", NameMatch::Exact, ip("127.0.0.2"), &[]).is_ok(), "named in full");
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("127.0.0.2"), &[]).is_err(), "a wildcard");
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("192.168.1.1"), &[]).is_err());
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("100.64.0.1"), &[]).is_err());
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("10.1.2.3"), &[]).is_ok(), "an allowed range");
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("::ffff:10.1.2.3"), &[]).is_ok());
        assert!(r.check_address("a.example.org", NameMatch::Open, ip("fc00::1"), &[]).is_err());
        assert_eq!(r.check_name("10.1.9.9"), Ok(NameMatch::Exact));
        // This machine's own addresses are the host's, as loopback is.
        let own = [ip("203.0.113.7")];
        assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip("203.0.113.7"), &own).is_err());
        assert!(r.check_address("example.com", NameMatch::Exact, ip("203.0.113.7"), &own).is_ok());
        for private in ["192.0.0.8", "198.18.0.1", "64:ff9b::a00:1"] {
            assert!(r.check_address("a.example.org", NameMatch::Wildcard, ip(private), &[]).is_err(), "{private}");
        }
        // A range written as IPv6 of IPv4 addresses is that IPv4 range.
        let mapped = rules("deny:[::ffff:10.0.0.0]/104");
        assert!(mapped.check_address("x", NameMatch::Open, ip("10.9.9.9"), &[]).is_err());
        assert!(HostRules::parse("deny:[::ffff:10.0.0.0]/8").is_err());
        let nat64 = rules("deny:64:ff9b::/96");
        assert!(
            nat64.check_address("x", NameMatch::Open, ip("64:ff9b::808:808"), &[]).is_err(),
            "the range as written"
        );
    }
}
