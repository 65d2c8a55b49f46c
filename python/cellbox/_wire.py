"""The SDK's JSON-RPC wire: method names and error codes.

Generated from crates/protocol/src/sdk/; do not edit. Regenerate with
`cargo run -p cellbox-protocol --example write-schema`.
"""

# Methods.
#: Start the sandbox: which languages it runs (fails when it cannot run Python).
INITIALIZE = "initialize"
#: Run one cell in a context, streaming `output` notifications.
RUN_CODE = "run_code"
#: Stop a `run_code` or `commands.wait` whose caller stopped waiting.
CANCEL = "cancel"
#: Make a code context (or find the named one again).
CREATE_CONTEXT = "create_context"
#: The code contexts.
LIST_CONTEXTS = "list_contexts"
#: Restart a context's kernel.
RESTART_CONTEXT = "restart_context"
#: Remove a context and stop its kernel.
REMOVE_CONTEXT = "remove_context"
#: The sandbox's idle lifetime.
SET_TIMEOUT = "set_timeout"
#: Stop the sandbox's kernels; the last call of a connection.
SHUTDOWN = "shutdown"
#: A copy of a Python context's kernel as a new context.
FORK_CONTEXT = "fork_context"
#: Back to the checkpoint before a `run_code(..., checkpoint=True)`.
UNDO = "undo"
#: A Python context's variables to a file.
SNAPSHOT = "snapshot"
#: A Python context's variables from a snapshot file.
RESTORE = "restore"
#: A file's content (base64), or a range of it.
FILES_READ = "files.read"
#: Write (or append to) files; parent folders are made.
FILES_WRITE = "files.write"
#: A folder's entries, to a depth.
FILES_LIST = "files.list"
#: Whether a path exists.
FILES_EXISTS = "files.exists"
#: A path's entry.
FILES_GET_INFO = "files.get_info"
#: Remove a file or folder (a missing path is no error).
FILES_REMOVE = "files.remove"
#: Rename a file or folder.
FILES_RENAME = "files.rename"
#: Make a folder; false when it was there.
FILES_MAKE_DIR = "files.make_dir"
#: Start watching a folder.
FILES_WATCH = "files.watch"
#: A watcher's events since its last look.
FILES_WATCH_EVENTS = "files.watch_events"
#: Stop a watcher; false when there was none.
FILES_UNWATCH = "files.unwatch"
#: Start a shell command; answers once it runs.
COMMANDS_START = "commands.start"
#: A command's output as `output` notifications, then its result.
COMMANDS_WAIT = "commands.wait"
#: Kill a running command; false when none runs by that id or pid.
COMMANDS_KILL = "commands.kill"
#: The running commands.
COMMANDS_LIST = "commands.list"

#: Every method the engine answers.
METHODS = frozenset([
    INITIALIZE,
    RUN_CODE,
    CANCEL,
    CREATE_CONTEXT,
    LIST_CONTEXTS,
    RESTART_CONTEXT,
    REMOVE_CONTEXT,
    SET_TIMEOUT,
    SHUTDOWN,
    FORK_CONTEXT,
    UNDO,
    SNAPSHOT,
    RESTORE,
    FILES_READ,
    FILES_WRITE,
    FILES_LIST,
    FILES_EXISTS,
    FILES_GET_INFO,
    FILES_REMOVE,
    FILES_RENAME,
    FILES_MAKE_DIR,
    FILES_WATCH,
    FILES_WATCH_EVENTS,
    FILES_UNWATCH,
    COMMANDS_START,
    COMMANDS_WAIT,
    COMMANDS_KILL,
    COMMANDS_LIST,
])

# Notifications.
OUTPUT = "output"

# Error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
NOT_FOUND = -32001
FAILED = -32002
DENIED = -32003

#: Each error code's name.
ERROR_NAMES = {
    PARSE_ERROR: "PARSE_ERROR",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INVALID_PARAMS: "INVALID_PARAMS",
    NOT_FOUND: "NOT_FOUND",
    FAILED: "FAILED",
    DENIED: "DENIED",
}
