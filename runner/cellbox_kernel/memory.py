"""Give the memory a cell freed back to the system once the cell is done,
so an idle kernel holds what its variables hold, not its peak.

CPython unmaps its small-object arenas when they empty, but objects over
512 bytes come from malloc, and glibc keeps freed heap memory for reuse: a
cell that made and dropped 100 MB of 1 kB `bytes` left its kernel at 116 MiB
resident, and `malloc_trim` brought it back to 15 MiB in 16 ms.

Looked at after every cell, cheaply: a kernel under 48 MiB resident is left
alone (and never imports ctypes); above that, `mallinfo2` says how much of
the heap is free, and a trim runs when that grew by 16 MiB since the last
look. Growth, not the level: freed memory scattered between live objects
stays counted as free after a trim returns its pages, and a kernel holding
such a heap would otherwise be trimmed after every cell. Linux with glibc
2.33 or later; elsewhere nothing happens.
"""
import os
import sys

_LOOK_ABOVE = 48 << 20  # resident bytes under which nothing is looked at
_TRIM_AFTER = 16 << 20  # free heap bytes more than at the last look

_heap = None if sys.platform.startswith("linux") else False  # None: not opened yet; False: unavailable


def after_cell():
    """Trim the heap if a cell left enough of it free; never raises."""
    global _heap
    if _heap is False:
        return
    try:
        if _resident() < _LOOK_ABOVE:
            return
        if _heap is None:
            _heap = _Heap.open() or False
            if _heap is False:
                return
        _heap.trim_if_grown()
    except Exception:  # /proc unreadable in this sandbox, or an odd libc
        _heap = False


def _resident():
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        pages = int(os.read(fd, 256).split()[1])
    finally:
        os.close(fd)
    return pages * os.sysconf("SC_PAGE_SIZE")


class _Heap:
    def __init__(self, info, trim):
        self.info = info
        self.trim = trim
        self.low = 0  # the least free heap seen since the last trim

    @classmethod
    def open(cls):
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            info, trim = libc.mallinfo2, libc.malloc_trim
        except (ImportError, OSError, AttributeError):  # not glibc, or older than 2.33
            return None
        fields = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
        info.restype = type("mallinfo2", (ctypes.Structure,), {"_fields_": [(f, ctypes.c_size_t) for f in fields.split()]})
        info.argtypes = []
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return cls(info, trim)

    def free(self):
        return self.info().fordblks

    def trim_if_grown(self):
        free = self.free()
        if free - self.low > _TRIM_AFTER:
            self.trim(0)
            self.low = self.free()
        else:
            self.low = min(self.low, free)
