#!/usr/bin/env python3
"""CRIU vs pickle: hibernating an idle Python interpreter holding ~10 MB of state.

Standard library only. Run as root:   python3 measure.py [REPS]
Env: CRIU=/path/to/criu (default: ./criu-src/criu/criu if built, else `criu`),
     PY=/path/to/python3 for the target (default /usr/bin/python3).
Prints markdown tables; raw numbers go to results.json.
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
REPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
PY = os.environ.get("PY") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
_built = os.path.join(HERE, "criu-src", "criu", "criu")
CRIU = os.environ.get("CRIU") or (_built if os.path.exists(_built) else shutil.which("criu") or "criu")
TARGET = os.path.join(HERE, "target.py")
NOBODY = 65534
INNER = len(sys.argv) > 1 and sys.argv[1] == "--inner"
if INNER:
    REPS = int(sys.argv[2])

# Become a child subreaper so `criu restore -d` children get re-parented to us
# (and can be reaped) instead of to pid 1.
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def query(sock, cmd, timeout=30.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        s.sendall(cmd.encode())
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks).decode()
    finally:
        s.close()


def wait_ping(sock, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if query(sock, "ping", timeout=5) == "pong":
                return True
        except OSError:
            time.sleep(0.0005)
    return False


def smaps(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Rss", "Pss", "Pss_Anon", "Pss_File"):
                out[k] = int(v.split()[0])  # kB
    return out


def du_b(path):
    tot = 0
    for root, _, files in os.walk(path):
        for fn in files:
            tot += os.lstat(os.path.join(root, fn)).st_size
    return tot


def reap(pid, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            r, _ = os.waitpid(pid, os.WNOHANG)
            if r == pid:
                return
        except ChildProcessError:  # not our child: wait for /proc entry to vanish
            if not os.path.exists(f"/proc/{pid}"):
                return
        time.sleep(0.005)


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    reap(pid)


def start_target(sock, prefix=()):
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    # stdio on a regular file (not /dev/null): an fd on a mount that is not visible
    # in criu's mount namespace makes dump fail ("Can't lookup mount=...").
    out = os.path.join(os.path.dirname(sock), "target.out")
    with open(out, "a") as fo:
        try:
            os.chmod(out, 0o666)
        except PermissionError:
            pass
        p = subprocess.Popen(list(prefix) + [PY, TARGET, sock], stdin=subprocess.DEVNULL if not INNER else fo,
                             stdout=fo, stderr=fo, start_new_session=True, cwd="/")
    if not wait_ping(sock, 60):
        p.kill()
        raise RuntimeError(f"target did not come up: {prefix}")
    pid = int(query(sock, "pid"))
    return p, pid


def errors_of(log):
    try:
        with open(log, errors="replace") as f:
            return [l.rstrip() for l in f if "Error" in l
                    and "RLIMIT_NOFILE" not in l and "exited, status" not in l]
    except FileNotFoundError:
        return ["(no log)"]


def criu_cycle(sock, imgdir, tag, prefix=(), criu_prefix=(), extra=()):
    """start target -> dump (kills it) -> restore -d -> ping -> checksum. Returns dict."""
    r = {"tag": tag}
    p, pid = start_target(sock, prefix)
    r["sum_before"] = query(sock, "sum").split()[0]
    r["mem_before"] = smaps(pid)
    shutil.rmtree(imgdir, ignore_errors=True)
    os.makedirs(imgdir)
    os.chmod(imgdir, 0o777)
    dlog, rlog = imgdir + ".dump.log", imgdir + ".restore.log"
    t0 = time.perf_counter()
    d = subprocess.run(list(criu_prefix) + [CRIU, "dump", "-t", str(pid), "-D", imgdir, "-o", dlog, *extra],
                       capture_output=True, text=True)
    r["dump_s"] = time.perf_counter() - t0
    r["dump_rc"] = d.returncode
    if d.returncode != 0:
        r["dump_err"] = errors_of(dlog) + (d.stdout + d.stderr).strip().splitlines()
        kill(pid)
        p.wait()
        return r
    p.wait()  # dump killed the task; reap it so its pid is free for restore
    r["img_bytes"] = du_b(imgdir)
    r["pages_bytes"] = sum(os.path.getsize(os.path.join(imgdir, f))
                           for f in os.listdir(imgdir) if f.startswith("pages-"))
    t0 = time.perf_counter()
    rs = subprocess.run(list(criu_prefix) + [CRIU, "restore", "-d", "-D", imgdir, "-o", rlog, *extra],
                        capture_output=True, text=True)
    r["restore_cmd_s"] = time.perf_counter() - t0
    r["restore_rc"] = rs.returncode
    if rs.returncode != 0:
        r["restore_err"] = errors_of(rlog) + (rs.stdout + rs.stderr).strip().splitlines()
        return r
    ok = wait_ping(sock, 30)
    r["restore_ready_s"] = time.perf_counter() - t0
    if not ok:
        r["restore_err"] = ["restored process never answered ping"]
        return r
    r["sum_after"] = query(sock, "sum").split()[0]
    r["state_ok"] = r["sum_after"] == r["sum_before"]
    r["mem_after"] = smaps(pid)
    kill(pid)
    return r


LOADER = r"""
import sys, time
t0 = time.perf_counter()
import pickle
sys.path.insert(0, sys.argv[2])
import state
with open(sys.argv[1], 'rb') as f:
    S = pickle.load(f)
print('loaded', time.perf_counter() - t0, flush=True)
m = {}
for line in open('/proc/self/smaps_rollup'):
    k, _, v = line.partition(':')
    if k in ('Rss', 'Pss'):
        m[k] = int(v.split()[0])
print(m['Rss'], m['Pss'], flush=True)
print(state.checksum(S), flush=True)
"""


def pickle_reps(n):
    sock = os.path.join(RUN, "pk.sock")
    p, pid = start_target(sock)
    ref = query(sock, "sum").split()[0]
    out = []
    for i in range(n):
        path = os.path.join(RUN, f"state-{i}.pkl")
        r = {}
        t0 = time.perf_counter()
        r["dump_internal_s"] = float(query(sock, f"pickle {path}"))
        r["dump_s"] = time.perf_counter() - t0
        r["file_bytes"] = os.path.getsize(path)
        t0 = time.perf_counter()
        lp = subprocess.Popen([PY, "-c", LOADER, path, HERE], stdout=subprocess.PIPE, text=True)
        first = lp.stdout.readline().split()
        r["load_ready_s"] = time.perf_counter() - t0  # fresh interpreter up + state loaded
        r["load_internal_s"] = float(first[1])
        rss, pss = map(int, lp.stdout.readline().split())
        r["mem_after"] = {"Rss": rss, "Pss": pss}
        r["state_ok"] = lp.stdout.readline().strip() == ref
        lp.wait()
        out.append(r)
    kill(pid)
    p.wait()
    # bare interpreter start for reference
    starts = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", "pass"])
        starts.append(time.perf_counter() - t0)
    return out, starts


def stats(xs, fmt="{:.3f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a", "n/a", "n/a", 0
    return fmt.format(statistics.median(xs)), fmt.format(min(xs)), fmt.format(max(xs)), len(xs)


def row(name, xs, fmt="{:.3f}"):
    med, lo, hi, n = stats(xs, fmt)
    print(f"| {name} | {med} | {lo} | {hi} | {n} |")


def userns_variants():
    """Step 5: target inside an unprivileged user namespace + own netns."""
    d = os.path.join(RUN, "userns")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    uns = ["unshare", "--user", "--map-root-user", "--net"]
    caps = ["--inh-caps=+checkpoint_restore,+sys_ptrace", "--ambient-caps=+checkpoint_restore,+sys_ptrace"]
    variants = [
        ("A: root runs `unshare -U -r -n python3`; criu as root", uns, ()),
        ("B: uid 65534 runs `unshare -U -r -n python3`; criu as root", nobody + uns, ()),
        ("C: as B; criu as uid 65534, no caps, --unprivileged", nobody + uns,
         tuple(nobody)),
        ("D: as B; criu as uid 65534 + ambient CAP_CHECKPOINT_RESTORE,CAP_SYS_PTRACE, --unprivileged",
         nobody + uns, tuple(nobody + caps)),
    ]
    res = []
    for i, (name, prefix, cprefix) in enumerate(variants):
        extra = ("--unprivileged",) if cprefix else ()
        try:
            r = criu_cycle(os.path.join(d, f"u{i}.sock"), os.path.join(d, f"img{i}"), name,
                           prefix=prefix, criu_prefix=cprefix, extra=extra)
        except Exception as e:  # noqa: BLE001
            r = {"tag": name, "exception": repr(e)}
        res.append(r)
    # E: the whole sandbox (target AND criu) inside uid 65534's own user+pid+net+mount
    # namespaces; criu runs as the namespace's root with --unprivileged, no host caps.
    e = subprocess.run(nobody + ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork",
                                 "--mount-proc", PY, os.path.abspath(__file__), "--inner", str(REPS)],
                       capture_output=True, text=True, timeout=600)
    try:
        inner = json.loads(e.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        inner = [{"exception": f"inner rc={e.returncode}: {e.stdout[-500:]} {e.stderr[-1500:]}"}]
    for r in inner:
        r["tag"] = "E: uid 65534 runs `unshare -U -r -n -p -f --mount-proc`; target and criu --unprivileged both inside"
    res.extend(inner)
    return res


def inner_main():
    d = os.path.join(RUN, "userns")
    subprocess.run(["ip", "link", "set", "lo", "up"])  # criu's kerndat probes TCP repair on lo
    out = [criu_cycle(os.path.join(d, "inner.sock"), os.path.join(d, f"inner-img{i}"), f"inner{i}",
                      extra=("--unprivileged",)) for i in range(REPS)]
    print(json.dumps(out))


def main():
    os.makedirs(RUN, exist_ok=True)
    ver = subprocess.run([CRIU, "--version"], capture_output=True, text=True).stdout.split()
    print(f"criu: {CRIU} ({' '.join(ver[:2])}); python: {PY}; kernel: {os.uname().release}; reps: {REPS}\n")
    crius = [criu_cycle(os.path.join(RUN, "t.sock"), os.path.join(RUN, f"img-{i}"), f"rep{i}")
             for i in range(REPS)]
    pk, starts = pickle_reps(REPS)
    uns = userns_variants()
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump({"criu": CRIU, "criu_reps": crius, "pickle_reps": pk, "py_start": starts,
                   "userns": uns}, f, indent=1)

    good = [r for r in crius if r.get("state_ok")]
    print(f"CRIU: {len(good)}/{len(crius)} cycles restored with identical checksum")
    for r in crius:
        if not r.get("state_ok"):
            print("  failed:", r["tag"], r.get("dump_err") or r.get("restore_err"))
    print(f"pickle: {sum(r['state_ok'] for r in pk)}/{len(pk)} loads with identical checksum\n")
    print("| figure | median | min | max | n |\n|---|---|---|---|---|")
    row("CRIU dump wall (s)", [r.get("dump_s") for r in good])
    row("CRIU restore -d cmd wall (s)", [r.get("restore_cmd_s") for r in good])
    row("CRIU restore -> answering ping (s)", [r.get("restore_ready_s") for r in good])
    row("CRIU image dir (MB)", [r.get("img_bytes", 0) / 1e6 for r in good], "{:.2f}")
    row("CRIU pages-*.img (MB)", [r.get("pages_bytes", 0) / 1e6 for r in good], "{:.2f}")
    row("RSS before dump (MB)", [r["mem_before"]["Rss"] / 1024 for r in good], "{:.1f}")
    row("PSS before dump (MB)", [r["mem_before"]["Pss"] / 1024 for r in good], "{:.1f}")
    row("RSS after restore (MB)", [r["mem_after"]["Rss"] / 1024 for r in good], "{:.1f}")
    row("PSS after restore (MB)", [r["mem_after"]["Pss"] / 1024 for r in good], "{:.1f}")
    row("pickle.dump in live process (s)", [r["dump_internal_s"] for r in pk])
    row("pickle.dump request round trip (s)", [r["dump_s"] for r in pk])
    row("pickle file (MB)", [r["file_bytes"] / 1e6 for r in pk], "{:.2f}")
    row("fresh python3 -c + pickle.load -> loaded (s)", [r["load_ready_s"] for r in pk])
    row("  of which pickle.load+imports inside (s)", [r["load_internal_s"] for r in pk])
    row("bare `python3 -c pass` (s)", starts)
    row("RSS after pickle.load (MB)", [r["mem_after"]["Rss"] / 1024 for r in pk], "{:.1f}")
    row("PSS after pickle.load (MB)", [r["mem_after"]["Pss"] / 1024 for r in pk], "{:.1f}")

    print("\n| userns/netns variant | dump ok | restore+state ok | dump s (median) | restore->ping s (median) | errors |\n|---|---|---|---|---|---|")
    tags = []
    for r in uns:
        if r.get("tag") not in tags:
            tags.append(r.get("tag"))
    for t in tags:
        rs = [r for r in uns if r.get("tag") == t]
        errs = []
        for r in rs:
            for e in (r.get("dump_err") or r.get("restore_err") or ([r["exception"]] if "exception" in r else [])):
                if e not in errs and "FAILED" not in e:
                    errs.append(e)
        dok = [r for r in rs if r.get("dump_rc") == 0]
        sok = [r for r in rs if r.get("state_ok")]
        med = lambda xs: "{:.3f}".format(statistics.median(xs)) if xs else "-"
        print(f"| {t} | {len(dok)}/{len(rs)} | {len(sok)}/{len(rs)} | {med([r['dump_s'] for r in dok])} | "
              f"{med([r['restore_ready_s'] for r in sok])} | {' / '.join(errs[:3]).replace('|', '/')} |")


if __name__ == "__main__":
    inner_main() if INNER else main()
