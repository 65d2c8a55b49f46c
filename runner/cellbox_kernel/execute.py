"""Running one cell: compile, execute, show the last expression, report errors.

Cells are parsed with `ast`. If the last statement is an expression, it is
evaluated separately and its value becomes the cell's `result` (unless it is
None or the line ends with `;`). Top-level `await` works. Tracebacks point at
the cell's own source lines and leave out the runner's frames.
"""
import ast
import json
import os
import sys

from . import display, frames, mpl, prelude, usermain  # noqa: F401 - frames registers its renderer on import
from .transform import transform_cell

_TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
_CO_COROUTINE = 0x0080
_RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))
_NOTHING = compile("", "<nothing>", "exec")


class CellOutcome:
    __slots__ = ("status", "cancelled")

    def __init__(self, status, cancelled=False):
        self.status = status
        self.cancelled = cancelled


class Executor:
    """Holds the user namespace and runs cells in it."""

    def __init__(self, gate, emit_error, capture):
        self.main_module = usermain.install()
        self.namespace = self.main_module.__dict__
        self.execution_count = 0
        self._gate = gate
        self._emit_error = emit_error
        self._capture = capture
        self._sync_output = capture.sync
        self._sources = {}  # cell filename -> source, for tracebacks and warnings
        self._unregistered = []  # filenames not yet in linecache
        self._internal_count = 0
        self._fragment_count = 0
        # Set per request: a list or dict value also goes as application/json.
        self.json_results = False
        self._loop = None
        # The shell (shell.py) sets this: history, events, traceback style.
        self.hooks = None

    # services for magics -------------------------------------------------

    def hidden_names(self):
        """Names %who does not list: the prelude's helpers."""
        return set(prelude.__all__) | set(getattr(self.hooks, "hidden", ()))

    def reset_namespace(self):
        """Forget every user name, then put the prelude back (`%reset`)."""
        usermain.clear(self.main_module)
        prelude.install(self.namespace)

    def run_fragment(self, code, global_ns, local_ns, label):
        """Run code on behalf of a magic (a cell magic's body, %time, %load) in
        the caller's namespace; return the value of its last expression."""
        self._fragment_count += 1
        filename = "<%s-%d>" % (label.strip("<>"), self._fragment_count)
        self._remember_source(filename, code)
        exec_code, eval_code = self._compile(code, filename, show_last=True)
        self._run_code(exec_code, global_ns, local_ns)
        return self._run_code(eval_code, global_ns, local_ns) if eval_code is not None else None

    def diverted(self, on_text, on_display):
        """A context in which output goes to on_text / on_display first."""
        return _Diversion(self._capture, on_text, on_display)

    def print_error(self, error):
        """Print an error's traceback (without runner frames) to stderr."""
        import traceback

        tb = self._user_traceback(error.__traceback__)
        sys.stderr.write("".join(traceback.format_exception(type(error), error, tb)))

    def run(self, code, silent, store_history):
        """Run one request's code; the shell's hooks see it before and after."""
        counted = store_history and not silent
        hooks = self.hooks
        if hooks is None:
            return self._run_cell(code, silent, store_history)[0]
        self._call_hook(hooks.before_cell, code, silent, self.execution_count + 1 if counted else None)
        outcome, error, before_exec = self._run_cell(code, silent, store_history)
        self._call_hook(hooks.after_cell, error, before_exec, silent, counted)
        return outcome

    def _call_hook(self, hook, *args):
        # A failing hook (a user's event callback, a history note) is shown
        # in the cell's stderr; it must never take the kernel down.
        try:
            hook(*args)
        except Exception as error:
            self.print_error(error)

    def _run_cell(self, code, silent, store_history):
        if store_history and not silent:
            self.execution_count += 1
            filename = "<cell-%d>" % self.execution_count
        else:
            self._internal_count += 1
            filename = "<cellbox-internal-%d>" % self._internal_count
        self._remember_source(filename, code)
        try:
            exec_code, eval_code = self._compile(code, filename, show_last=not silent)
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as error:
            self._report(error)
            return CellOutcome("error"), error, True
        try:
            self._gate.arm()
            try:
                self._run_code(exec_code)
                value = self._run_code(eval_code) if eval_code is not None else None
            finally:
                self._gate.disarm()
        except KeyboardInterrupt as error:
            self._report(error)
            mpl.after_cell()
            return CellOutcome("error", cancelled=self._gate.received), error, False
        except BaseException as error:  # SystemExit, MemoryError, ... keep the kernel alive
            self._report(error)
            mpl.after_cell()
            return CellOutcome("error"), error, False
        if value is not None:
            if self.hooks is not None:
                self._call_hook(self.hooks.cell_value, value, store_history)
            elif store_history:
                self.namespace["_"] = value
            self._publish_result(value)
        mpl.after_cell()
        return CellOutcome("ok"), None, False

    def _publish_result(self, value):
        try:
            data, metadata = display.mime_bundle(value)
        except BaseException as error:
            self._report(error)
            return
        if self.json_results and type(value) in (list, dict) and "application/json" not in data:
            strict = _strict_json(value)
            if strict is not None:
                data["application/json"] = strict
        display.publish("result", data, metadata)

    def _compile(self, code, filename, show_last):
        flags = _TOP_LEVEL_AWAIT
        if show_last and "\n" not in code.strip() and "%" not in code and "!" not in code:
            # One line: try it as an expression first, skipping the AST round.
            try:
                return _NOTHING, compile(code.strip(), filename, "eval", flags, dont_inherit=True)
            except SyntaxError:
                pass
        code = transform_cell(code)
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
        eval_code = None
        if show_last and tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body.pop()
            if not _ends_with_semicolon(code, last):
                expression = ast.Expression(last.value)
                eval_code = compile(expression, filename, "eval", flags, dont_inherit=True)
            else:
                tree.body.append(last)
        exec_code = compile(tree, filename, "exec", flags, dont_inherit=True)
        return exec_code, eval_code

    def _run_code(self, code, global_ns=None, local_ns=None):
        if global_ns is None:
            global_ns = self.namespace
        result = eval(code, global_ns, local_ns if local_ns is not None else global_ns)
        if code.co_flags & _CO_COROUTINE:
            result = self._run_coroutine(result)
        return result

    def _run_coroutine(self, coroutine):
        import asyncio

        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        task = self._loop.create_task(coroutine)
        try:
            return self._loop.run_until_complete(task)
        except BaseException:
            if not task.done():
                task.cancel()
            raise

    def _remember_source(self, filename, code):
        self._sources[filename] = code
        self._unregistered.append(filename)
        linecache = sys.modules.get("linecache")
        if linecache is not None:
            self._register_sources(linecache)

    def _register_sources(self, linecache):
        # Until linecache is imported (by the first traceback or warning) the
        # sources wait here, costing no start-up time.
        for filename in self._unregistered:
            code = self._sources[filename]
            linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        self._unregistered = []

    def _report(self, error):
        import linecache
        import traceback

        self._register_sources(linecache)
        if usermain.is_usage_error(error, _RUNNER_DIR):
            self._sync_output()
            message = usermain.usage_message(error)
            self._emit_error("UsageError", message, ["UsageError: %s\n" % message])
            return
        compile_error = isinstance(error, SyntaxError) and usermain.raised_in(error.__traceback__, _RUNNER_DIR)
        # A compile error (in a cell, %time, %run, a cell magic's body): the
        # code's own lines say everything.
        tb = None if compile_error else self._user_traceback(error.__traceback__)
        try:
            lines = self.hooks.format_error(error, tb) if self.hooks is not None else None
            if lines is None:
                lines = traceback.format_exception(type(error), error, tb)
        except BaseException:
            lines = ["%s: <traceback could not be formatted>\n" % type(error).__name__]
        try:
            evalue = str(error)
        except BaseException:
            evalue = "<unprintable %s>" % type(error).__name__
        limit = os.environ.get("CELLBOX_MEMORY_RLIMIT") if isinstance(error, MemoryError) else None
        if limit:
            # The sandbox's memory limit is an address-space rlimit here: say
            # that the limit, not the machine, ran out.
            note = "memory limit exceeded (%s)" % limit
            evalue = "%s; %s" % (evalue, note) if evalue else note
            lines = list(lines) + ["[cellbox: %s; the kernel is kept]\n" % note]
        self._sync_output()
        self._emit_error(type(error).__name__, evalue, lines)

    def _user_traceback(self, tb):
        """The traceback without the runner's own frames (and without
        asyncio's in front of the first cell frame)."""
        first = tb
        while first is not None and first.tb_frame.f_code.co_filename not in self._sources:
            first = first.tb_next
        if first is None:
            first = tb
        kept = []
        node = first
        while node is not None:
            if not node.tb_frame.f_code.co_filename.startswith(_RUNNER_DIR):
                kept.append(node)
            node = node.tb_next
        if not kept:
            return None
        for current, following in zip(kept, kept[1:]):
            current.tb_next = following
        kept[-1].tb_next = None
        return kept[0]


class _Diversion:
    def __init__(self, capture, on_text, on_display):
        self._capture = capture
        self._on_text = on_text
        self._on_display = on_display

    def __enter__(self):
        self._capture.set_divert(self._on_text)
        display.push_diversion(self._on_display)
        return self

    def __exit__(self, *exc_info):
        self._capture.set_divert(None)
        display.pop_diversion()
        return False


def _ends_with_semicolon(code, node):
    """True when the source after the last expression starts with `;`
    (IPython's rule for suppressing the displayed value)."""
    lines = code.splitlines()
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None or end_line > len(lines):
        return False
    # col offsets are in UTF-8 bytes
    rest = lines[end_line - 1].encode("utf-8")[end_col:].decode("utf-8", "replace")
    rest = rest + "\n" + "\n".join(lines[end_line:])
    return rest.lstrip().startswith(";")


def _strict_json(value):
    """`value` as JSON reads it back, or None when JSON cannot hold it as it is
    (a tuple key, an object, NaN, a cycle): a lossy `Result.json` would
    mislead more than a missing one, and the text is there either way."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None
