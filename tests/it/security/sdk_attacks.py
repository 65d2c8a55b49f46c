"""Attacks on the host through the Python SDK: each scenario does what a
hostile cell (or a hostile principal of `cellbox serve`) would, and checks
that it fails: nothing appears outside the workspace, no secret or canary
comes back, nothing hangs.

    sdk_attacks.py SCENARIO WORK OUTSIDE CANARY [API_URL TOKEN [OTHER_TOKEN]]

WORK is the sandbox's folder (local) or the principal's folder (remote);
OUTSIDE a folder outside it that must stay empty; CANARY a string that is in
the secret (`$HOME/.ssh/id_rsa`) and in the engine's environment and must
never come back. With API_URL the sandbox is a remote one on that server.
Prints "ok SCENARIO" when every attack failed as it should; raises otherwise.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))

from cellbox import Sandbox  # noqa: E402
from cellbox.exceptions import SandboxException  # noqa: E402

SCENARIO, WORK, OUTSIDE, CANARY = sys.argv[1:5]
REMOTE = sys.argv[5:7] if len(sys.argv) > 6 else None
OTHER_TOKEN = sys.argv[7] if len(sys.argv) > 7 else None
HOME = os.environ["HOME"]


def sandbox(token=None, **options):
    if REMOTE:
        url, own = REMOTE
        return Sandbox(api_url=url, api_key=token or own, **options)
    return Sandbox(cwd=WORK, **options)


def refused(call, what):
    """`call` must raise the SDK's exception, promptly, with no canary in it."""
    started = time.monotonic()
    try:
        answer = call()
    except SandboxException as error:
        assert CANARY not in str(error), "%s: the refusal carries the canary: %s" % (what, error)
        return str(error)
    raise AssertionError("%s was not refused: %r" % (what, answer if not isinstance(answer, (bytes, bytearray)) else answer[:200]))


def untouched():
    left = os.listdir(OUTSIDE)
    assert left == [], "written outside the workspace: %r" % left
    with open(os.path.join(HOME, ".ssh", "id_rsa")) as key:
        assert CANARY in key.read(), "the secret changed"
    assert not os.path.exists(os.path.join(HOME, ".ssh", "authorized_keys")), "authorized_keys was written"


def run(box, code):
    execution = box.run_code(code)
    assert execution.error is None, "%s\n%s" % (code, execution.error)
    return execution


def stdout(execution):
    return "".join(execution.logs.stdout)


def scenario_system_files(box):
    """The server's own environment, memory and devices are not files of the sandbox."""
    for path in ["/proc/self/environ", "/proc/self/maps", "/proc/self/mem", "/proc/1/environ", "/proc/self/cmdline",
                 "/dev/zero", "/dev/urandom", "/sys/kernel/notes"]:
        refused(lambda: box.files.read(path, format="bytes"), "files.read " + path)
    for path in ["/proc", "/dev", "/sys/class"]:
        refused(lambda: box.files.list(path), "files.list " + path)
    # The same through links a cell planted.
    run(box, "import os\nfor name, target in [('environ', '/proc/self/environ'), ('zero', '/dev/zero'), "
             "('mem', '/proc/self/mem')]:\n    os.symlink(target, 'sys-' + name)")
    for name in ["environ", "zero", "mem"]:
        refused(lambda: box.files.read("sys-" + name, format="bytes"), "files.read through a link to " + name)


def scenario_planted_links(box):
    """Links, FIFOs and folders a cell planted never take a change of the files API outside."""
    run(box, "import os\n"
             "os.symlink(%r, 'dangling')\n"
             "os.symlink(%r, 'out')\n"
             "os.symlink(%r, 'key')\n"
             "os.symlink(%r, 'ssh')\n"
             "os.mkfifo('fifo')\n"
             "open('mine.txt', 'w').write('mine')\n" % (
                 os.path.join(OUTSIDE, "marker"), OUTSIDE, os.path.join(HOME, ".ssh", "id_rsa"),
                 os.path.join(HOME, ".ssh")))
    refused(lambda: box.files.write("dangling", "x"), "a write through a dangling link")
    refused(lambda: box.files.write("out/marker", "x"), "a write through a linked folder")
    refused(lambda: box.files.write("ssh/authorized_keys", "ssh-ed25519 AAAA"), "a write into ~/.ssh through a link")
    refused(lambda: box.files.write_files([{"path": "ok.txt", "data": "x"}, {"path": "out/m2", "data": "x"}]),
            "a batch with one write through a link")
    refused(lambda: box.files.make_dir("out/made"), "a folder made through a link")
    refused(lambda: box.files.rename("mine.txt", "out/moved"), "a rename through a link")
    refused(lambda: box.files.read("key"), "a read of the secret through a link")
    refused(lambda: box.files.read(os.path.join(HOME, ".ssh", "id_rsa")), "a read of the secret")
    error = refused(lambda: box.commands.run("ls", cwd="ssh"), "a command in ~/.ssh through a link")
    assert "secret locations" in error, error
    refused(lambda: box.files.write("../escape-marker", "x"), "a write to ..")
    refused(lambda: box.files.write(os.path.join(OUTSIDE, "abs"), "x"), "a write to an absolute path outside")
    started = time.monotonic()
    refused(lambda: box.files.read("fifo"), "a read of a FIFO")
    assert time.monotonic() - started < 30, "the FIFO held the read"
    listed = [entry.path for entry in box.files.list(".", depth=4)]
    assert not any(path.startswith(os.path.join(WORK, "out") + "/") for path in listed), listed
    box.files.remove("out")  # the link goes, not the folder it leads to
    assert os.path.isdir(OUTSIDE)
    untouched()


def scenario_race(box):
    """A cell swaps a folder for a link out of the workspace as fast as it can while the files API changes it."""
    run(box, "import os, threading\n"
             "stop = threading.Event()\n"
             "def swap():\n"
             "    while not stop.is_set():\n"
             "        try:\n"
             "            os.symlink(%r, 'd.link'); os.rename('d.link', 'd')\n"
             "        except OSError: pass\n"
             "        try:\n"
             "            os.replace('d', 'd.old')\n"
             "            if os.path.islink('d.old'): os.unlink('d.old')\n"
             "            else: os.rename('d.old', 'd.dir')\n"
             "            os.makedirs('d.dir', exist_ok=True); os.rename('d.dir', 'd')\n"
             "        except OSError: pass\n"
             "swapper = threading.Thread(target=swap, daemon=True)\n"
             "swapper.start()\n" % OUTSIDE)
    for i in range(300):
        for call in (lambda: box.files.write("d/marker-%d" % i, "x"), lambda: box.files.make_dir("d/sub"),
                     lambda: box.files.rename("d/sub", "d/sub2"), lambda: box.files.remove("d/sub2"),
                     lambda: box.files.read("d/marker-%d" % i)):
            try:
                call()
            except SandboxException:
                pass
    run(box, "stop.set(); swapper.join()")
    untouched()


def scenario_watch_everything(box):
    """A watch cannot walk the whole disk, nor other principals' folders."""
    started = time.monotonic()
    refused(lambda: box.files.watch_dir("/", recursive=True), "a recursive watch of /")
    assert time.monotonic() - started < 60, "the refusal took a whole-disk walk"
    box.files.write("watched/a.txt", "x")
    handle = box.files.watch_dir("watched")
    box.files.write("watched/b.txt", "y")
    assert [event.name for event in handle.get_new_events()][-1] == "b.txt"
    handle.stop()


def scenario_probe(box):
    """A cell plants an interpreter where discovery looks; running a cell there must not run it outside the sandbox."""
    real = stdout(run(box, "import sys; print(sys.executable)")).strip()
    marker = os.path.join(OUTSIDE, "probe-marker")
    script = "#!/bin/sh\necho pwned > %s\nenv > \"$(dirname \"$0\")/../../probe-env.txt\"\nexec %s \"$@\"\n" % (
        marker, real)
    run(box, "import os\nos.makedirs('sub/.venv/bin', exist_ok=True)\n"
             "open('sub/.venv/bin/python', 'w').write(%r)\nos.chmod('sub/.venv/bin/python', 0o755)\n"
             "open('sub/.venv/pyvenv.cfg', 'w').write('home = /usr/bin\\n')" % script)
    context = box.create_code_context(cwd="sub")
    box.run_code("import os; os.getcwd()", context=context)
    assert not os.path.exists(marker), "the planted interpreter ran outside the sandbox"
    env_file = os.path.join(WORK, "sub", "probe-env.txt")
    assert os.path.exists(env_file), "discovery did not probe the planted file: the attack was not made"
    with open(env_file) as dumped:
        seen = dumped.read()
    assert CANARY not in seen, "the planted interpreter saw the host's environment"
    untouched()


def scenario_other_principal(box):
    """A second principal's kernel and files API reach nothing of the first's."""
    assert OTHER_TOKEN, "needs a second principal"
    other = sandbox(OTHER_TOKEN)
    own = json.loads(stdout(run(other, "import json, os, tempfile\n"
                                       "open('/dev/shm/cellbox-other-' + str(os.getpid()), 'w').write(%r)\n"
                                       "open('secret.txt', 'w').write(%r)\n"
                                       "os.makedirs(os.environ['CELLBOX_STORE_DIR'], exist_ok=True)\n"
                                       "print(json.dumps({'tmp': tempfile.gettempdir(), 'cwd': os.getcwd(), "
                                       "'store': os.environ['CELLBOX_STORE_DIR'], "
                                       "'shm': sorted(os.listdir('/dev/shm'))}))" % (CANARY, CANARY))))
    for path in [own["tmp"], own["cwd"], own["store"], os.path.join(own["cwd"], "secret.txt")]:
        refused(lambda: box.files.read(path), "files.read of the other principal's " + path)
        refused(lambda: box.files.list(path), "files.list of the other principal's " + path)
        refused(lambda: box.files.write(os.path.join(path, "planted"), "x"), "a write into " + path)
    # Refused before it runs, by the rule (not by a command that failed in there).
    error = refused(lambda: box.commands.run("ls", cwd=own["cwd"]), "a command in the other principal's folder")
    assert "only your own entry" in error, error
    report = json.loads(stdout(run(box, "import json, os\n"
                                 "out = {}\n"
                                 "for name, path in %r.items():\n"
                                 "    try:\n"
                                 "        out[name] = sorted(os.listdir(path))\n"
                                 "    except OSError as e:\n"
                                 "        out[name] = e.errno\n"
                                 "try:\n"
                                 "    os.makedirs(os.path.join(%r, 'planted'), exist_ok=True)\n"
                                 "    out['planted'] = True\n"
                                 "except OSError as e:\n"
                                 "    out['planted'] = e.errno\n"
                                 "try:\n"
                                 "    out['shm'] = sorted(os.listdir('/dev/shm'))\n"
                                 "except OSError:\n"
                                 "    out['shm'] = []\n"
                                 "print(json.dumps(out))" % ({"tmp": own["tmp"], "cwd": own["cwd"],
                                                             "store": own["store"]}, own["store"]))))
    for name in ["tmp", "cwd", "store"]:
        assert isinstance(report[name], int), "the other principal's %s was listed: %r" % (name, report[name])
    assert report["planted"] is not True, "a pickle could be planted in the other principal's %store"
    assert not set(own["shm"]) & set(report["shm"]), "the principals share /dev/shm: %r" % report["shm"]
    other.kill()


def main():
    # The probe attack plants an interpreter where discovery looks: a local sandbox runs its
    # kernels on this program's Python unless asked to discover one.
    options = {"python": "discover"} if SCENARIO == "probe" and not REMOTE else {}
    with sandbox(**options) as box:
        globals()["scenario_" + SCENARIO](box)
    untouched()
    print("ok", SCENARIO)


if __name__ == "__main__":
    main()
