"""E2B's types that a local sandbox reads or accepts, under E2B's names
(code written for `e2b_code_interpreter` imports them from `cellbox`).

- **Names with a local meaning**: `ALL_TRAFFIC` and the network options
  (`network_setting` reads them: the kernels' `--network`),
  the files API's `WriteData`, `Username`, `SandboxState`.
- **Shapes**: E2B's TypedDicts, data classes (`SandboxInfo`, …) and type
  aliases, for annotations and for building option dicts; a local sandbox
  accepts such options and, except for the network's, ignores them.

The cloud's services are in `_cloud`.
"""

import datetime
import enum
from dataclasses import dataclass, field
from typing import IO, Any, AsyncIterable, Callable, Dict, Iterable, List, Literal, Optional, TypedDict, Union

from .exceptions import InvalidArgumentException

__all__ = [
    # Local meaning.
    "ALL_TRAFFIC",
    "WriteData",
    "AsyncWriteData",
    "Username",
    "SandboxState",
    "SandboxInfo",
    "SandboxQuery",
    "SandboxListOrder",
    "SandboxMetrics",
    "SandboxNetworkSelectorContext",
    "SandboxNetworkTransformContext",
    # Shapes.
    "ApiParams",
    "E2BClientParams",
    "VolumeApiParams",
    "HttpVersion",
    "ProxyTypes",
    "SnapshotMode",
    "SandboxOnResume",
    "SandboxOnTimeout",
    "SandboxLifecycle",
    "SandboxInfoLifecycle",
    "SandboxNetworkOpts",
    "SandboxNetworkUpdate",
    "SandboxNetworkInfo",
    "SandboxNetworkRule",
    "SandboxNetworkRuleInfo",
    "SandboxNetworkRules",
    "SandboxNetworkSelector",
    "SandboxNetworkTransform",
    "SandboxNetworkTransformResolver",
    "SandboxEgressProxyOpts",
    "SandboxEgressProxyInfo",
    "SandboxEgressProxyTLSOpts",
    "SandboxEgressProxyTLSInfo",
    "SandboxIamOpts",
    "SandboxIamToken",
    "SandboxIamTokenType",
    "McpServer",
    "GitHubMcpServer",
    "GitHubMcpServerConfig",
    "GitResetMode",
    "LogEntryLevel",
    "CopyItem",
    "TemplateClass",
]

# -- names with a local meaning ----------------------------------------------

#: Every address: `network={"deny_out": [ALL_TRAFFIC]}` turns the kernels'
#: network off, or with `allow_out` makes those hosts an allowlist.
ALL_TRAFFIC = "0.0.0.0/0"

#: What `sandbox.files.write` takes: text, bytes, a file object or chunks.
WriteData = Union[str, bytes, IO, Iterable[bytes]]
#: What `AsyncSandbox.files.write` takes (chunks may also come from an async iterable).
AsyncWriteData = Union[str, bytes, IO, AsyncIterable[bytes]]
#: The `user=` of the files and commands APIs; a local sandbox runs as the
#: user running the program, whatever is given.
Username = str


class SandboxState(str, enum.Enum):
    """A sandbox's state; a local one is running until it is killed."""

    RUNNING = "running"
    PAUSED = "paused"


# -- E2B's records of its sandboxes (a local sandbox makes none) -------------


@dataclass
class SandboxInfo:
    """What E2B reports of a sandbox; the fields are E2B's."""

    sandbox_id: str
    sandbox_domain: Optional[str]
    template_id: str
    name: Optional[str]
    metadata: Dict[str, str]
    started_at: datetime.datetime
    end_at: datetime.datetime
    state: SandboxState
    cpu_count: int
    memory_mb: int
    envd_version: str
    allow_internet_access: Optional[bool] = None
    network: Optional[Dict[str, Any]] = None
    lifecycle: Optional[Dict[str, Any]] = None
    volume_mounts: List[Dict[str, str]] = field(default_factory=list)
    envd_unresponsive_at_pause: Optional[bool] = None


@dataclass
class SandboxQuery:
    """The filter of E2B's `Sandbox.list` (fields as E2B's)."""

    metadata: Optional[Dict[str, str]] = None
    state: Optional[List[SandboxState]] = None
    started_after: Optional[datetime.datetime] = None
    template: Optional[str] = None


SandboxListOrder = Literal["asc", "desc"]


@dataclass
class SandboxMetrics:
    """One sample of E2B's `get_metrics` (fields as E2B's)."""

    cpu_count: int
    cpu_used_pct: float
    disk_total: int
    disk_used: int
    mem_total: int
    mem_used: int
    mem_cache: int
    timestamp: datetime.datetime


# -- the network options, read by `network_setting` --------------------------


@dataclass
class SandboxNetworkSelectorContext:
    """What a callable `allow_out`/`deny_out` is given: `all_traffic` is
    `ALL_TRAFFIC`, `rules` the network's `rules` option."""

    all_traffic: str
    rules: Dict[str, Any]


@dataclass
class SandboxNetworkTransformContext:
    """What a callable network transform is given in E2B (`iam`: its tokens)."""

    iam: Any


def network_setting(allow_internet_access: Optional[bool], network: Any) -> Optional[str]:
    """The kernels' `--network` for E2B's network options, or None for the
    engine's own. `network` may also be a cellbox setting itself
    (`"allow:pypi,example.com"`, `"off"`).

    E2B's `allow_out` are exceptions to `deny_out`: with `deny_out` holding
    `ALL_TRAFFIC` they are an allowlist (hosts by name, `*.domain`, addresses
    or ranges), without it they change nothing; `deny_out` alone is a denylist.
    What cannot be kept is an error rather than a rule silently not kept:
    exceptions to a denylist of some addresses only.
    """
    if allow_internet_access is False:
        return "off"
    if isinstance(network, str):
        return network
    options = network or {}
    rules = options.get("rules") or {}
    deny = _selected(options.get("deny_out"), rules)
    allow = _selected(options.get("allow_out"), rules)
    if not deny:
        return None
    if ALL_TRAFFIC in deny:
        return "allow:" + ",".join(allow) if allow else "off"
    if allow:
        raise InvalidArgumentException(
            "network allow_out=%r with deny_out=%r: a local sandbox cannot let addresses through a denylist; deny "
            "everything (deny_out=[ALL_TRAFFIC]) and allow what is needed, or leave allow_out out" % (allow, deny)
        )
    return "deny:" + ",".join(deny)


def _selected(selector: Any, rules: Dict[str, Any]) -> List[str]:
    """The addresses of an `allow_out`/`deny_out` selector: a list, or a
    callable given the selector context."""
    if selector is None:
        return []
    if callable(selector):
        selector = selector(SandboxNetworkSelectorContext(ALL_TRAFFIC, rules))
    if isinstance(selector, str) or not isinstance(selector, (list, tuple)):
        raise InvalidArgumentException(
            "network selectors are lists of addresses (or callables returning one), not %r" % (selector,)
        )
    return [str(address) for address in selector]


# -- shapes: accepted, not acted on (the network's are read above) -----------


class ApiParams(TypedDict, total=False):
    """E2B's connection options (`api_key`, `domain`, …); a local sandbox reads `api_url`/`api_key` only."""

    request_timeout: Optional[float]
    retries: Optional[int]
    headers: Optional[Dict[str, str]]
    api_headers: Optional[Dict[str, str]]
    api_key: Optional[str]
    validate_api_key: Optional[bool]
    domain: Optional[str]
    api_url: Optional[str]
    debug: Optional[bool]
    proxy: Any
    sandbox_url: Optional[str]
    http_version: Any


E2BClientParams = ApiParams


class VolumeApiParams(TypedDict, total=False):
    """E2B's volume connection options."""

    domain: Optional[str]
    debug: Optional[bool]
    request_timeout: Optional[float]
    headers: Optional[Dict[str, str]]
    token: Optional[str]
    api_url: Optional[str]
    proxy: Any
    http_version: Any
    logger: Any


HttpVersion = Literal["1.1", "2"]
ProxyTypes = Any
SnapshotMode = Literal["full", "filesystem"]
SandboxOnResume = Literal["restore", "reboot"]
SandboxOnTimeout = Union[Literal["pause", "kill"], Dict[str, Any]]


class SandboxLifecycle(TypedDict, total=False):
    """E2B's `lifecycle=`: what happens when the sandbox times out (ignored; see `timeout=`)."""

    on_timeout: SandboxOnTimeout
    auto_resume: bool


class SandboxInfoLifecycle(TypedDict, total=False):
    """The lifecycle part of E2B's `SandboxInfo`."""

    on_timeout: Literal["pause", "kill"]
    auto_resume: bool


SandboxNetworkSelector = Union[List[str], Callable[[SandboxNetworkSelectorContext], List[str]]]


class SandboxNetworkTransform(TypedDict, total=False):
    """A header rewrite of E2B's egress proxy."""

    headers: Dict[str, str]


SandboxNetworkTransformResolver = Callable[[SandboxNetworkTransformContext], SandboxNetworkTransform]


class SandboxNetworkRule(TypedDict, total=False):
    """One of E2B's per-host network rules."""

    transform: Union[SandboxNetworkTransform, SandboxNetworkTransformResolver]


class SandboxNetworkRuleInfo(TypedDict, total=False):
    """A network rule as E2B reports it."""

    transform: SandboxNetworkTransform


SandboxNetworkRules = Dict[str, List[SandboxNetworkRule]]


class SandboxEgressProxyTLSOpts(TypedDict, total=False):
    """TLS settings of E2B's egress proxy."""

    server_name: str
    ca_cert: str


class SandboxEgressProxyTLSInfo(TypedDict, total=False):
    """TLS settings of E2B's egress proxy, as reported."""

    server_name: str


class SandboxEgressProxyOpts(TypedDict, total=False):
    """E2B's egress proxy."""

    address: str
    username: str
    password: str
    tls: Union[bool, SandboxEgressProxyTLSOpts]


class SandboxEgressProxyInfo(TypedDict, total=False):
    """E2B's egress proxy, as reported."""

    address: str
    username: str
    tls: SandboxEgressProxyTLSInfo


class SandboxNetworkOpts(TypedDict, total=False):
    """E2B's `network=`: `deny_out=[ALL_TRAFFIC]` turns the kernels' network
    off or to hosts by name (see `network_setting`); the rest is ignored."""

    allow_out: SandboxNetworkSelector
    deny_out: SandboxNetworkSelector
    rules: SandboxNetworkRules
    egress_proxy: SandboxEgressProxyOpts
    dns_servers: List[str]
    allow_public_traffic: bool
    mask_request_host: str
    https_ports: List[int]


class SandboxNetworkUpdate(TypedDict, total=False):
    """A change of E2B's network options."""

    allow_out: SandboxNetworkSelector
    deny_out: SandboxNetworkSelector
    rules: SandboxNetworkRules
    egress_proxy: SandboxEgressProxyOpts
    dns_servers: List[str]
    allow_internet_access: bool


class SandboxNetworkInfo(TypedDict, total=False):
    """E2B's network options, as reported."""

    allow_out: List[str]
    deny_out: List[str]
    rules: Dict[str, List[SandboxNetworkRuleInfo]]
    egress_proxy: SandboxEgressProxyInfo
    dns_servers: List[str]
    allow_public_traffic: bool
    mask_request_host: str
    https_ports: List[int]


SandboxIamTokenType = str


class SandboxIamToken(TypedDict, total=False):
    """A workload-identity token of E2B's cloud."""

    audience: str
    token_type: SandboxIamTokenType


class SandboxIamOpts(TypedDict, total=False):
    """E2B's `iam=` (ignored)."""

    tokens: Dict[str, SandboxIamToken]


class GitHubMcpServerConfig(TypedDict, total=False):
    """An MCP server E2B starts inside its sandbox (ignored)."""

    run_cmd: str
    install_cmd: str
    envs: Dict[str, str]


GitHubMcpServer = Dict[str, Union[GitHubMcpServerConfig, Any]]
McpServer = Dict[str, Any]
GitResetMode = Literal["soft", "mixed", "hard", "merge", "keep"]
LogEntryLevel = Literal["debug", "info", "warn", "error"]


class CopyItem(TypedDict, total=False):
    """A file copied into an E2B template."""

    src: Any
    dest: str
    forceUpload: Any
    user: str
    mode: int
    resolveSymlinks: bool
    gzip: bool


TemplateClass = Any
