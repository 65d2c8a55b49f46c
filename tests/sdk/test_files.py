"""`sandbox.files` against the real engine (see test_sandbox.py for how it
runs): round trips, listing and entry details, the other calls, watching,
not-found errors, bad input, and the sandbox policy (writes outside the
workspace and reads of a secret planted in a temp HOME are refused).
"""
import io
import os
import pathlib
import pwd
import stat
import unittest

from fixture import PYTHON, Workspace, unique

from cellbox import (
    EntryInfo,
    FileNotFoundException,
    FilesystemEventType,
    FileType,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    SandboxException,
    WriteEntry,
    WriteInfo,
)

#: The sandboxes' folder; HOME (with a planted secret) and OUTSIDE are temp dirs beside it.
SPACE = None
WORK = HOME = OUTSIDE = ""
SECRET = "not for the sandbox\n"


def setUpModule():
    global SPACE, WORK, HOME, OUTSIDE
    SPACE = Workspace("files", SECRET)
    WORK, HOME, OUTSIDE = SPACE.work, SPACE.home, SPACE.outside


def tearDownModule():
    SPACE.remove()


def new_sandbox(**options):
    """A sandbox in WORK whose kernels (and files API) take HOME as the home folder."""
    options.setdefault("python", PYTHON)
    options.setdefault("spares", 0)
    return Sandbox(cwd=WORK, envs={"HOME": HOME}, **options)


class SharedSandbox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.box = new_sandbox()
        cls.files = cls.box.files

    @classmethod
    def tearDownClass(cls):
        cls.box.kill()


class RoundTripTests(SharedSandbox):
    def test_text_round_trip(self):
        name = unique("text") + ".txt"
        content = "Hello, wörld! ✓\nline two\n"
        info = self.files.write(name, content)
        self.assertEqual(info, WriteInfo(name=name, type=FileType.FILE, path=os.path.join(WORK, name)))
        self.assertEqual(self.files.read(name), content)
        self.assertEqual(self.files.get_info(name).size, len(content.encode("utf-8")))
        with open(os.path.join(WORK, name), encoding="utf-8") as written:
            self.assertEqual(written.read(), content)

    def test_bytes_round_trip(self):
        name = unique("bytes") + ".bin"
        content = bytes(range(256)) * 3
        self.files.write(name, content)
        read = self.files.read(name, format="bytes")
        self.assertIsInstance(read, bytearray)
        self.assertEqual(bytes(read), content)
        # Undecodable bytes read as text are replaced, not raised.
        self.files.write(name, b"ok \xff")
        self.assertEqual(self.files.read(name), "ok \ufffd")

    def test_file_like_and_chunked_data_and_a_stream_longer_than_one_chunk(self):
        name = unique("big") + ".bin"
        content = os.urandom(1 << 16) * 150  # 9.4 MiB: more than one 4 MiB request each way
        self.files.write(name, io.BytesIO(content))
        self.assertEqual(bytes(self.files.read(name, format="bytes")), content)
        with self.files.read(name, format="stream") as stream:
            chunks = list(stream)
        self.assertGreater(len(chunks), 1)
        self.assertEqual(b"".join(chunks), content)
        self.files.write(name, io.StringIO("from a text file object"))
        self.assertEqual(self.files.read(name), "from a text file object")
        self.files.write(name, iter([b"one ", b"two ", bytearray(b"three")]))
        self.assertEqual(self.files.read(name), "one two three")

    def test_a_stream_can_be_left_early(self):
        name = unique("stream") + ".txt"
        self.files.write(name, "x" * 100)
        stream = self.files.read(name, format="stream")
        self.assertEqual(next(iter(stream)), b"x" * 100)
        stream.close()
        self.assertEqual(list(stream), [])

    def test_empty_files(self):
        name = unique("empty")
        self.files.write(name, "")
        self.assertEqual(self.files.read(name), "")
        self.assertEqual(list(self.files.read(name, format="stream")), [])

    def test_many_files_at_once(self):
        folder = unique("many")
        entries = [WriteEntry(path="%s/f%d.txt" % (folder, i), data="content %d" % i) for i in range(3)]
        entries.append(WriteEntry(path=folder + "/deep/er/f.bin", data=b"\x00\x01"))
        infos = self.files.write_files(entries)
        self.assertEqual([info.path for info in infos], [os.path.join(WORK, entry["path"]) for entry in entries])
        for i in range(3):
            self.assertEqual(self.files.read("%s/f%d.txt" % (folder, i)), "content %d" % i)
        self.assertEqual(bytes(self.files.read(folder + "/deep/er/f.bin", format="bytes")), b"\x00\x01")
        self.assertEqual(self.files.write_files([]), [])
        mixed = self.files.write_files([{"path": folder + "/a", "data": io.BytesIO(b"A")}, {"path": folder + "/b", "data": "B"}])
        self.assertEqual([info.name for info in mixed], ["a", "b"])
        self.assertEqual((self.files.read(folder + "/a"), self.files.read(folder + "/b")), ("A", "B"))

    def test_a_write_replaces_the_file_and_paths_may_be_absolute_or_pathlike(self):
        name = unique("replace")
        self.files.write(name, "a longer first version")
        self.files.write(pathlib.Path(WORK) / name, "short")
        self.assertEqual(self.files.read(os.path.join(WORK, name)), "short")


class ListAndInfoTests(SharedSandbox):
    def test_list_goes_depth_first_in_name_order(self):
        parent = unique("tree")
        for folder in ("subdir1/subdir1_1", "subdir1/subdir1_2", "subdir2/subdir2_1", "subdir2/subdir2_2"):
            self.files.make_dir("%s/%s" % (parent, folder))
        self.files.write(parent + "/file1.txt", "Hello, world!")
        top = ["file1.txt", "subdir1", "subdir2"]
        for depth in (None, 1):
            entries = self.files.list(parent, depth=depth)
            self.assertEqual([entry.name for entry in entries], top)
            self.assertEqual([entry.type for entry in entries], [FileType.FILE, FileType.DIR, FileType.DIR])
            self.assertEqual([entry.path for entry in entries], [os.path.join(WORK, parent, name) for name in top])
        nested = ["file1.txt", "subdir1", "subdir1/subdir1_1", "subdir1/subdir1_2", "subdir2", "subdir2/subdir2_1", "subdir2/subdir2_2"]
        for depth in (2, 3):
            paths = [entry.path for entry in self.files.list(parent, depth=depth)]
            self.assertEqual(paths, [os.path.join(WORK, parent, name) for name in nested])
        for depth in (0, -1):
            with self.assertRaisesRegex(InvalidArgumentException, "depth should be at least 1"):
                self.files.list(parent, depth=depth)

    def test_entries_carry_e2b_s_fields(self):
        folder = unique("details")
        self.files.make_dir(folder + "/subdir")
        self.files.write(folder + "/test.txt", "Hello, World!")
        entries = {entry.name: entry for entry in self.files.list(folder)}
        for name, kind in (("test.txt", FileType.FILE), ("subdir", FileType.DIR)):
            entry = entries[name]
            on_disk = os.stat(os.path.join(WORK, folder, name))
            self.assertIsInstance(entry, EntryInfo)
            self.assertEqual(entry.type, kind)
            self.assertEqual(entry.mode, stat.S_IMODE(on_disk.st_mode))
            self.assertEqual(entry.permissions, stat.filemode(on_disk.st_mode))
            self.assertEqual(entry.owner, pwd.getpwuid(on_disk.st_uid).pw_name)
            self.assertIsNotNone(entry.modified_time.tzinfo)
            self.assertAlmostEqual(entry.modified_time.timestamp(), on_disk.st_mtime, places=3)
            self.assertIsNone(entry.symlink_target)
        self.assertEqual(entries["test.txt"].size, len("Hello, World!"))
        self.assertTrue(entries["subdir"].permissions.startswith("d"))
        self.assertEqual(self.files.get_info(folder + "/test.txt"), entries["test.txt"])

    def test_a_symlink_is_described_by_its_target(self):
        folder = unique("links")
        self.files.write(folder + "/target.txt", "Hello")
        os.symlink("target.txt", os.path.join(WORK, folder, "link.txt"))
        os.symlink("missing.txt", os.path.join(WORK, folder, "broken.txt"))
        link = self.files.get_info(folder + "/link.txt")
        self.assertEqual((link.type, link.name), (FileType.FILE, "link.txt"))
        self.assertEqual(link.symlink_target, os.path.realpath(os.path.join(WORK, folder, "target.txt")))
        self.assertEqual(self.files.get_info(folder + "/broken.txt").type, FileType.SYMLINK)
        self.assertEqual(self.files.read(folder + "/link.txt"), "Hello")

    def test_exists_make_dir_rename_and_remove(self):
        folder = unique("ops")
        self.assertFalse(self.files.exists(folder))
        self.assertTrue(self.files.make_dir(folder + "/nested/deeper"))
        self.assertFalse(self.files.make_dir(folder + "/nested/deeper"))
        self.assertTrue(self.files.exists(folder + "/nested/deeper"))
        self.files.write(folder + "/old.txt", "moved")
        info = self.files.rename(folder + "/old.txt", folder + "/new.txt")
        self.assertEqual((info.name, info.path, info.type), ("new.txt", os.path.join(WORK, folder, "new.txt"), FileType.FILE))
        self.assertFalse(self.files.exists(folder + "/old.txt"))
        self.assertEqual(self.files.read(folder + "/new.txt"), "moved")
        self.files.remove(folder + "/new.txt")
        self.assertFalse(self.files.exists(folder + "/new.txt"))
        self.files.remove(folder)  # a folder goes with everything in it
        self.assertFalse(os.path.exists(os.path.join(WORK, folder)))
        self.files.remove(folder)  # a missing path is no error
        with self.assertRaises(SandboxException):
            self.files.make_dir(self.files.write(unique("plain"), "a file").name)


class ErrorTests(SharedSandbox):
    def test_missing_paths_raise_file_not_found(self):
        missing = unique("missing")
        calls = [
            lambda: self.files.read(missing),
            lambda: self.files.read(missing, format="bytes"),
            lambda: self.files.read(missing, format="stream"),
            lambda: self.files.get_info(missing),
            lambda: self.files.list(missing),
            lambda: self.files.rename(missing, missing + "-new"),
            lambda: self.files.watch_dir(missing),
        ]
        for call in calls:
            with self.assertRaises(FileNotFoundException) as raised:
                call()
            self.assertIsInstance(raised.exception, NotFoundException)
            self.assertIn(missing, str(raised.exception))

    def test_bad_input_gets_a_clear_exception(self):
        name = self.files.write(unique("input"), "x").name
        cases = [
            (lambda: self.files.read(name, format="xml"), 'format must be "text", "bytes" or "stream"'),
            (lambda: self.files.read(42), "path must be a str"),
            (lambda: self.files.read(b"bytes-path"), "path must be a str"),
            (lambda: self.files.write(name, 3.5), "unsupported data type"),
            (lambda: self.files.write(name, [1, 2]), "holds a int"),
            (lambda: self.files.write_files(["x"]), "WriteEntry"),
            (lambda: self.files.write_files({"path": "x", "data": "y"}), "list of WriteEntry"),
            (lambda: self.files.write(name, "x", metadata={"k": "v"}), "metadata"),
            (lambda: self.files.list(".", depth="2"), "depth must be an int"),
            (lambda: self.files.rename(name, None), "new_path must be a str"),
            (lambda: self.files.read("."), "is a folder"),
            (lambda: self.files.list(name), "not a folder"),
            (lambda: self.files.watch_dir(name), "only folders can be watched"),
        ]
        for call, words in cases:
            with self.subTest(words), self.assertRaises(InvalidArgumentException) as raised:
                call()
            self.assertIn(words, str(raised.exception))
        self.assertEqual(self.files.read(name), "x")


class WatchTests(SharedSandbox):
    def events(self, handle):
        return [(event.type, event.name) for event in handle.get_new_events()]

    def test_changes_since_the_last_look(self):
        folder = unique("watched")
        self.files.write(folder + "/kept.txt", "aaaa")
        self.files.write(folder + "/gone.txt", "x")
        self.files.write(folder + "/before.txt", "x")
        handle = self.files.watch_dir(folder)
        self.assertEqual(handle.get_new_events(), [])
        # The same size again: the files API's own writes are always seen.
        self.files.write(folder + "/kept.txt", "bbbb")
        self.assertEqual(self.events(handle), [(FilesystemEventType.WRITE, "kept.txt")])
        # Changes made by anyone else are seen too.
        path = os.path.join(WORK, folder)
        with open(os.path.join(path, "new.txt"), "w") as new:
            new.write("content")
        os.remove(os.path.join(path, "gone.txt"))
        os.rename(os.path.join(path, "before.txt"), os.path.join(path, "after.txt"))
        os.chmod(os.path.join(path, "kept.txt"), 0o600)
        self.assertEqual(
            sorted(self.events(handle), key=lambda e: (e[1], e[0].value)),
            [
                (FilesystemEventType.CREATE, "after.txt"),
                (FilesystemEventType.RENAME, "before.txt"),
                (FilesystemEventType.REMOVE, "gone.txt"),
                (FilesystemEventType.CHMOD, "kept.txt"),
                (FilesystemEventType.CREATE, "new.txt"),
                (FilesystemEventType.WRITE, "new.txt"),
            ],
        )
        self.assertEqual(handle.get_new_events(), [])
        handle.stop()
        with self.assertRaises(SandboxException):
            handle.get_new_events()

    def test_recursive_watches_see_nested_changes_with_their_entries(self):
        folder = unique("tree-watch")
        self.files.make_dir(folder + "/nested")
        flat = self.files.watch_dir(folder)
        deep = self.files.watch_dir(folder, recursive=True, include_entry=True)
        self.files.write(folder + "/nested/file.txt", "hello")
        self.assertEqual(flat.get_new_events(), [])
        events = deep.get_new_events()
        self.assertEqual([(e.type, e.name) for e in events], [(FilesystemEventType.CREATE, "nested/file.txt"), (FilesystemEventType.WRITE, "nested/file.txt")])
        self.assertEqual(events[1].entry.path, os.path.join(WORK, folder, "nested", "file.txt"))
        self.assertEqual(events[1].entry.type, FileType.FILE)
        flat.stop()
        deep.stop()


class PolicyTests(SharedSandbox):
    """The default policy, workspace-write: what the kernels may touch, the files API may."""

    def assert_refused(self, call, *words):
        with self.assertRaises(SandboxException) as raised:
            call()
        for word in words:
            self.assertIn(word, str(raised.exception))

    def test_writes_outside_the_workspace_are_refused(self):
        outside = os.path.join(OUTSIDE, unique("refused"))
        how_to = ("workspace-write", "CELLBOX_ALLOW_WRITE", 'sandbox="off"')
        self.assert_refused(lambda: self.files.write(outside, "no"), outside, *how_to)
        first = unique("in")
        self.assert_refused(lambda: self.files.write_files([{"path": first, "data": "a"}, {"path": outside, "data": "b"}]), *how_to)
        self.assertFalse(os.path.exists(os.path.join(WORK, first)), "a refused batch wrote its first file")
        self.assert_refused(lambda: self.files.make_dir(outside), *how_to)
        inside = self.files.write(unique("inside"), "stays").name
        self.assert_refused(lambda: self.files.rename(inside, outside), *how_to)
        self.assertFalse(os.path.exists(outside))
        self.assertEqual(self.files.read(inside), "stays")
        # A file outside may be read, not removed; the workspace itself is not removed.
        with open(outside, "w") as there:
            there.write("readable")
        self.assertEqual(self.files.read(outside), "readable")
        self.assert_refused(lambda: self.files.remove(outside), *how_to)
        self.assert_refused(lambda: self.files.remove("."), "writable folder itself")
        self.assertTrue(os.path.isdir(WORK))

    def test_a_symlink_out_of_the_workspace_is_followed_for_writes_not_removals(self):
        link = unique("link-out")
        os.symlink(OUTSIDE, os.path.join(WORK, link))
        self.assert_refused(lambda: self.files.write(link + "/through.txt", "no"), "workspace-write")
        self.assertFalse(os.path.exists(os.path.join(OUTSIDE, "through.txt")))
        self.files.remove(link)
        self.assertTrue(os.path.isdir(OUTSIDE))

    def test_a_secret_cannot_be_read_listed_or_written(self):
        ssh = os.path.join(HOME, ".ssh")
        secret = os.path.join(ssh, "id_rsa")
        for call in (
            lambda: self.files.read(secret),
            lambda: self.files.get_info(secret),
            lambda: self.files.list(ssh),
            lambda: self.files.watch_dir(ssh),
        ):
            self.assert_refused(call, os.path.realpath(ssh), 'sandbox="off"')
        for call in (
            lambda: self.files.write(os.path.join(ssh, "authorized_keys"), "no"),
            lambda: self.files.remove(secret),
        ):
            self.assert_refused(call, os.path.realpath(ssh))
        # A link a kernel plants in the workspace leads nowhere either.
        link = unique("key-link")
        os.symlink(secret, os.path.join(WORK, link))
        self.assert_refused(lambda: self.files.read(link), os.path.realpath(ssh))
        # The folders on the way to a secret cannot be listed by kernels, so not by the files API
        # either where the OS enforces it; where it lists them, the secret's entries stay out.
        try:
            listed = [entry.path for entry in self.files.list(HOME, depth=3)]
        except SandboxException as refused:
            self.assertIn("Permission denied", str(refused))
        else:
            self.assertNotIn(secret, listed)
        with open(os.path.join(HOME, ".ssh", "id_rsa")) as key:
            self.assertEqual(key.read(), SECRET)


class OtherPolicyTests(unittest.TestCase):
    def test_sandbox_off_reaches_everything(self):
        with new_sandbox(sandbox="off") as box:
            self.assertEqual(box.files.read(os.path.join(HOME, ".ssh", "id_rsa")), SECRET)
            outside = os.path.join(OUTSIDE, unique("allowed"))
            box.files.write(outside, "written")
            with open(outside) as written:
                self.assertEqual(written.read(), "written")

    def test_read_only_refuses_every_write(self):
        with new_sandbox(sandbox="read-only") as box:
            name = unique("read-only")
            with self.assertRaisesRegex(SandboxException, "read-only"):
                box.files.write(name, "no")
            self.assertFalse(os.path.exists(os.path.join(WORK, name)))
            self.assertTrue(box.files.exists(HOME))


if __name__ == "__main__":
    unittest.main()
