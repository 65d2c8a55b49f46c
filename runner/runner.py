"""evalkit kernel: a long-lived Python process driven over NDJSON pipes.

The host starts this file as `python -u runner.py`. Everything lives in the
`evalkit_kernel` package beside it, so that Python caches the compiled modules
(a main script is recompiled on every start; imported modules are not).

The guard matters: multiprocessing's spawn and forkserver children re-import
the main script (as `__mp_main__`), and must not start a second kernel.
"""
import sys

if __name__ == "__main__":
    from evalkit_kernel.main import main

    # Our folder must not shadow the user's own modules (`import main`, ...).
    del sys.path[0]

    main()
