"""E2B's cloud services under E2B's names, so code written for
`e2b_code_interpreter` that names them still imports.

`Template`, `Volume`, `Secret`, `Git`, the paginators of `Sandbox.list` and
their records (`BuildInfo`, …) exist for imports, annotations and
`isinstance`; making one or using it raises `NotLocalException` (a
`SandboxException`) saying what to use instead. So does reaching a member of
E2B's sandboxes that only its cloud serves (`SandboxMembersElsewhere`:
`Sandbox.list()`, `sandbox.get_info()`, …).
"""

from typing import Any, Callable

from .exceptions import NotLocalException

__all__ = [
    "ApiClient",
    "ConnectionConfig",
    "VolumeConnectionConfig",
    "E2B",
    "SandboxPaginator",
    "AsyncSandboxPaginator",
    "SnapshotPaginator",
    "AsyncSnapshotPaginator",
    "AsyncCommandInputHandle",
    "Git",
    "GitBranches",
    "GitFileStatus",
    "GitStatus",
    "Secret",
    "AsyncSecret",
    "SecretInfo",
    "SecretPaginator",
    "AsyncSecretPaginator",
    "Template",
    "AsyncTemplate",
    "TemplateBase",
    "TemplateBuildStatus",
    "TemplateBuildStatusResponse",
    "TemplateTag",
    "TemplateTagInfo",
    "BuildInfo",
    "BuildStatusReason",
    "ReadyCmd",
    "LogEntry",
    "LogEntryStart",
    "LogEntryEnd",
    "Volume",
    "AsyncVolume",
    "VolumeInfo",
    "VolumeAndToken",
    "VolumeEntryStat",
    "VolumeFileType",
    "default_build_logger",
    "get_signature",
    "wait_for_file",
    "wait_for_port",
    "wait_for_process",
    "wait_for_timeout",
    "wait_for_url",
]

# -- cloud services: there to import, refused when used -----------------------


def _refusal(name: str, what: str) -> NotLocalException:
    service, instead = what.split(": ", 1)
    return NotLocalException(
        "%s belongs to E2B's service (%s) and has no counterpart in a local cellbox sandbox: %s. "
        "'Coming from E2B' in docs/python-sdk.md maps the rest" % (name, service, instead)
    )


class _CloudOnly(type):
    """The metaclass of the cloud services: making an instance or reaching a
    public attribute of the class raises; naming the class does not."""

    #: "the service: what to use instead", for the error.
    _what = ""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise _refusal(cls.__name__, cls._what)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError("type object %r has no attribute %r" % (cls.__name__, name))
        raise _refusal("%s.%s" % (cls.__name__, name), cls._what)


def _cloud_function(name: str, what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _refusal(name, what)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = "E2B's (%s): raises `NotLocalException` here." % what.split(": ")[0]
    return refuse


_API = "its HTTP API: a local sandbox needs no client; Sandbox() starts one"
_GIT = "git inside its VMs: run git with sandbox.commands.run"
_PAGES = "listing the sandboxes of an account: Sandbox.connect(sandbox_id) finds a sandbox of this process"
_SECRETS = "secrets kept in its cloud: pass them to the sandbox in envs="
_STDIN = "a command's stdin: a local sandbox's commands take none; write a file and read it instead"
_TEMPLATES = "VM templates: a local sandbox runs this machine's Python; choose it with python= and preload="
_VOLUMES = "volumes: a local sandbox's files are this machine's, under its cwd="
_SIGNING = "signed file URLs: use sandbox.files.read and write"


# E2B's classes, one each under its own name: `_what` is what the class is
# there and what to use here instead.


class ApiClient(metaclass=_CloudOnly):
    _what = _API


class ConnectionConfig(metaclass=_CloudOnly):
    _what = _API


class VolumeConnectionConfig(metaclass=_CloudOnly):
    _what = _VOLUMES


class E2B(metaclass=_CloudOnly):
    _what = _API


class SandboxPaginator(metaclass=_CloudOnly):
    _what = _PAGES


class AsyncSandboxPaginator(metaclass=_CloudOnly):
    _what = _PAGES


class SnapshotPaginator(metaclass=_CloudOnly):
    _what = _PAGES


class AsyncSnapshotPaginator(metaclass=_CloudOnly):
    _what = _PAGES


class AsyncCommandInputHandle(metaclass=_CloudOnly):
    _what = _STDIN


class Git(metaclass=_CloudOnly):
    _what = _GIT


class GitBranches(metaclass=_CloudOnly):
    _what = _GIT


class GitFileStatus(metaclass=_CloudOnly):
    _what = _GIT


class GitStatus(metaclass=_CloudOnly):
    _what = _GIT


class Secret(metaclass=_CloudOnly):
    _what = _SECRETS


class AsyncSecret(metaclass=_CloudOnly):
    _what = _SECRETS


class SecretInfo(metaclass=_CloudOnly):
    _what = _SECRETS


class SecretPaginator(metaclass=_CloudOnly):
    _what = _SECRETS


class AsyncSecretPaginator(metaclass=_CloudOnly):
    _what = _SECRETS


class Template(metaclass=_CloudOnly):
    _what = _TEMPLATES


class AsyncTemplate(metaclass=_CloudOnly):
    _what = _TEMPLATES


class TemplateBase(metaclass=_CloudOnly):
    _what = _TEMPLATES


class TemplateBuildStatus(metaclass=_CloudOnly):
    _what = _TEMPLATES


class TemplateBuildStatusResponse(metaclass=_CloudOnly):
    _what = _TEMPLATES


class TemplateTag(metaclass=_CloudOnly):
    _what = _TEMPLATES


class TemplateTagInfo(metaclass=_CloudOnly):
    _what = _TEMPLATES


class BuildInfo(metaclass=_CloudOnly):
    _what = _TEMPLATES


class BuildStatusReason(metaclass=_CloudOnly):
    _what = _TEMPLATES


class ReadyCmd(metaclass=_CloudOnly):
    _what = _TEMPLATES


class LogEntry(metaclass=_CloudOnly):
    _what = _TEMPLATES


class LogEntryStart(LogEntry):
    pass


class LogEntryEnd(LogEntry):
    pass


class Volume(metaclass=_CloudOnly):
    _what = _VOLUMES


class AsyncVolume(metaclass=_CloudOnly):
    _what = _VOLUMES


class VolumeInfo(metaclass=_CloudOnly):
    _what = _VOLUMES


class VolumeAndToken(metaclass=_CloudOnly):
    _what = _VOLUMES


class VolumeEntryStat(metaclass=_CloudOnly):
    _what = _VOLUMES


class VolumeFileType(metaclass=_CloudOnly):
    _what = _VOLUMES


default_build_logger = _cloud_function("default_build_logger", _TEMPLATES)
get_signature = _cloud_function("get_signature", _SIGNING)
wait_for_file = _cloud_function("wait_for_file", _TEMPLATES)
wait_for_port = _cloud_function("wait_for_port", _TEMPLATES)
wait_for_process = _cloud_function("wait_for_process", _TEMPLATES)
wait_for_timeout = _cloud_function("wait_for_timeout", _TEMPLATES)
wait_for_url = _cloud_function("wait_for_url", _TEMPLATES)


_VM_SNAPSHOTS = "snapshots of its VMs: snapshot() and restore() save and load a context's variables"
_PAUSE = "pausing VMs: a local sandbox runs until kill() or its idle timeout"
_MCP = "an MCP gateway in its VMs: `cellbox mcp` is cellbox's own MCP server"

#: Members of E2B's `Sandbox`/`AsyncSandbox` that only its cloud has, and
#: what to use instead; `SandboxMembersElsewhere` raises for them.
_SANDBOX_MEMBERS = {
    "list": _PAGES,
    "get_info": "the records of its VMs: sandbox_id, metadata and is_running() are on the sandbox",
    "get_metrics": "metrics of its VMs: the kernels are processes of this machine",
    "pause": _PAUSE,
    "beta_pause": _PAUSE,
    "fork": "forking VMs: fork_code_context() forks one context's kernel",
    "create_snapshot": _VM_SNAPSHOTS,
    "list_snapshots": _VM_SNAPSHOTS,
    "delete_snapshot": _VM_SNAPSHOTS,
    "update_network": "changing a running VM's network: pass allow_internet_access= or network= to Sandbox()",
    "git": _GIT,
    "pty": "terminals: run commands with sandbox.commands.run (no PTY)",
    "get_host": "public hosts of its VMs' ports: a server a cell starts listens on this machine",
    "download_url": _SIGNING,
    "upload_url": _SIGNING,
    "get_mcp_url": _MCP,
    "get_mcp_token": _MCP,
    "mcp_port": _MCP,
    "default_mcp_template": _MCP,
    "traffic_access_token": _API,
    "envd_api_url": _API,
    "envd_direct_url": _API,
    "connection_config": _API,
    "sandbox_domain": _API,
    "default_sandbox_timeout": "a VM's lifetime from creation: a local sandbox has no limit unless timeout= gives one",
}


def _member_refusal(cls: type, name: str, unknown: str) -> AttributeError:
    what = _SANDBOX_MEMBERS.get(name)
    if what is None:
        return AttributeError(unknown % (cls.__name__, name))
    return _refusal("%s.%s" % (cls.__name__, name), what)


class SandboxMembersElsewhere(type):
    """The metaclass of `Sandbox` and `AsyncSandbox`: reaching a member of
    E2B's sandboxes that only its cloud has (`Sandbox.list()`,
    `sandbox.get_info()`, …) raises `NotLocalException` saying what to use
    instead, on the class and (with `MembersElsewhere`) on a sandbox."""

    def __getattr__(cls, name: str) -> Any:
        raise _member_refusal(cls, name, "type object %r has no attribute %r")


class MembersElsewhere:
    """A sandbox's side of `SandboxMembersElsewhere`."""

    def __getattr__(self, name: str) -> Any:
        raise _member_refusal(type(self), name, "%r object has no attribute %r")
