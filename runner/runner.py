"""cellbox kernel: a long-lived Python process driven over NDJSON pipes.

The host starts this file as `python -u runner.py`. Everything lives in the
`cellbox_kernel` package beside it, so that Python caches the compiled modules
(a main script is recompiled on every start; imported modules are not).

Started with `--zygote` it is the fork server instead (see `zygote.py`):
it preloads modules and forks kernels that then run the same `main()`.

The guard matters: multiprocessing's spawn and forkserver children re-import
the main script (as `__mp_main__`), and must not start a second kernel.
"""
import sys

if __name__ == "__main__":
    # Our folder must not shadow the user's own modules (`import main`, ...).
    if "--zygote" in sys.argv:
        # The fork server: its children run `main()` with this same `__main__`.
        from cellbox_kernel.zygote import serve

        del sys.path[0]
        serve(sys.argv)
    else:
        from cellbox_kernel.main import main

        del sys.path[0]
        main()
