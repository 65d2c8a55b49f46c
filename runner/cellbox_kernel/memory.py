"""Give the memory a cell freed back to the system once the cell is done,
so an idle kernel holds what its variables hold, not its peak.

CPython unmaps its small-object arenas when they empty, but objects over
512 bytes come from malloc, and glibc keeps freed heap memory for reuse: a
cell that made and dropped 100 MB of 1 kB `bytes` left its kernel at 116 MiB
resident, and `malloc_trim` brought it back to 15 MiB in 16 ms.

Looked at after every cell: a kernel under 48 MiB resident is left alone
(and never imports ctypes); above that, `mallinfo2` says how much of the
heap is free (10 µs; 2 ms in a heap cut into 50 000 free pieces), and a trim
runs when that grew by 16 MiB over the least seen since the last trim, or
when 16 MiB are free and the kernel grew by 16 MiB since that trim. Free
memory whose pages a trim gave back stays counted as free, so the level
alone would trim a kernel holding such a heap after every cell; and a cell
that takes those pieces again and frees them leaves the count as it was,
which the growth of the kernel shows. Linux with glibc 2.33 or later;
elsewhere nothing happens.
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
        resident = _resident()
        if resident < _LOOK_ABOVE:
            return
        if _heap is None:
            _heap = _Heap.open() or False
            if _heap is False:
                return
        _heap.trim_if_grown(resident)
    except (OSError, ValueError, IndexError, AttributeError):  # /proc unreadable in this sandbox, an odd libc
        _heap = False
    except Exception:  # anything else (a cell's signal handler raising meanwhile): next time
        pass


_statm = None  # (fd, st_dev, st_ino) of /proc/self/statm, kept open: one pread per cell


def _resident():
    global _statm
    if _statm is None:
        _statm = _open_statm()
    try:
        pages = int(os.pread(_statm[0], 256, 0).split()[1])
    except (OSError, ValueError, IndexError):
        # A cell closed the fd, and another file may have its number now: that
        # one is left alone (never closed: it may be the cell's).
        _forget_statm()
        _statm = _open_statm()
        pages = int(os.pread(_statm[0], 256, 0).split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _open_statm():
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    info = os.fstat(fd)
    return fd, info.st_dev, info.st_ino


def _forget_statm():
    """Close the kept statm if its fd still holds it, and forget it. After a
    fork the child does this: the file names the process that opened it."""
    global _statm
    if _statm is None:
        return
    fd, dev, ino = _statm
    _statm = None
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) == (dev, ino):
            os.close(fd)
    except OSError:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm)


class _Heap:
    def __init__(self, info, trim):
        self.info = info
        self.trim = trim
        self.low = 0  # the least free heap seen since the last trim
        self.trimmed_at = 0  # resident bytes right after the last trim

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

    def trim_if_grown(self, resident):
        free = self.free()
        churned = free >= _TRIM_AFTER and resident - self.trimmed_at >= _TRIM_AFTER
        if free - self.low >= _TRIM_AFTER or churned:
            self.trim(0)
            self.low = self.free()
            self.trimmed_at = _resident()
        else:
            self.low = min(self.low, free)
