//! The saver's tests: small artifacts written after their call, in packs.

use super::super::{ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES};
use super::SMALL_BYTES;

/// A session's first artifact is written during its call (proving its
/// folder can be written); the writer after it may defer.
fn proven_store(dir: &std::path::Path, session: &str) -> ArtifactStore {
    let store = ArtifactStore::new(dir, DEFAULT_MAX_ARTIFACT_BYTES);
    let mut first = store.create(session);
    first.write("first\n");
    first.finish();
    assert!(first.failure().is_none());
    store
}

/// A store whose `session` folder became a file after its first artifact: nothing more can be saved there.
fn unwritable_store(dir: &std::path::Path, session: &str) -> ArtifactStore {
    let store = proven_store(dir, session);
    let folder = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::write(&folder, "not a folder").unwrap();
    store
}

/// One call's output, `text`, in `session`: its artifact's id.
fn call(store: &ArtifactStore, session: &str, text: &str) -> String {
    let mut writer = store.create(session);
    writer.write(text);
    writer.finish();
    writer.id().to_string()
}

/// The one session folder under `dir`, and the `.pack` in it.
fn folder_and_pack(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let folder = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path();
    let pack = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .unwrap();
    (folder, pack)
}

#[test]
fn small_output_saved_after_its_call_is_read_listed_and_kept_when_the_store_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let mut ids = Vec::new();
    for i in 0..50 {
        let mut writer = store.create("s");
        writer.write(&format!("call {i}\n"));
        writer.finish();
        assert!(writer.exists() && writer.failure().is_none());
        ids.push(writer.id().to_string());
    }
    let (text, size) = store.read(&ids[49], 0, 100).unwrap();
    assert_eq!((text.as_str(), size), ("call 49\n", 8));
    assert_eq!(store.list("s").len(), 51);
    let last = call(&store, "s", "the last\n");
    drop(store);
    let again = ArtifactStore::new(dir.path(), DEFAULT_MAX_ARTIFACT_BYTES);
    assert_eq!(again.read(&last, 0, 100).unwrap().0, "the last\n");
}

#[test]
fn records_of_calls_that_end_close_together_are_appended_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let appends = || store.saver.state.lock().unwrap().appends;
    let before = appends();
    let ids: Vec<String> = (0..200).map(|i| call(&store, "s", &format!("call {i}\n"))).collect();
    store.settle();
    let appended = appends() - before;
    // Each append but the first waits a few milliseconds for more: 200 calls in a row take fewer.
    assert!(appended < 200, "{appended} appends for 200 records");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(store.read(id, 0, 100).unwrap().0, format!("call {i}\n"));
    }
}

#[test]
fn sessions_taking_turns_get_one_append_each_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "a");
    let mut first = store.create("b");
    first.write("first\n");
    first.finish();
    let appends = || store.saver.state.lock().unwrap().appends;
    let before = appends();
    let ids: Vec<(usize, String)> =
        (0..100).map(|i| (i, call(&store, if i % 2 == 0 { "a" } else { "b" }, &format!("call {i}\n")))).collect();
    store.settle();
    // Taken one by one, records of two sessions in turn would each need an append of their own.
    let appended = appends() - before;
    assert!(appended < 100, "{appended} appends for 100 records of two sessions in turn");
    for (i, id) in &ids {
        assert_eq!(store.read(id, 0, 100).unwrap().0, format!("call {i}\n"));
    }
}

#[test]
fn small_outputs_share_packs_that_roll_over_and_prune_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let mut ids = Vec::new();
    for i in 0..300 {
        ids.push(call(&store, "s", &format!("call {i:03} {}\n", "y".repeat(90))));
    }
    store.settle();
    let folder = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
    let mut packs: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    assert!(packs.len() >= 5, "300 records of ~110 bytes fill several 4 KiB packs: {packs:?}");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), packs.len() + 1, "one file of its own: the first");
    for (i, id) in ids.iter().enumerate() {
        let (text, size) = store.read(id, 5, 3).unwrap();
        assert_eq!((text.as_str(), size), (format!("{i:03}").as_str(), 100), "{id}");
    }
    assert_eq!(store.read(&ids[7], 99, 10).unwrap().0, "\n", "a read stops at its record's end");
    assert_eq!(store.read(&ids[7], 500, 10).unwrap().0, "", "and past it reads nothing");
    let listed = store.list("s");
    assert_eq!(listed.len(), 301);
    assert_eq!(listed[0].0, ids[299], "newest first");
    assert!(listed[..300].iter().all(|(_, size)| *size == 100), "a record's size is its own");

    // The oldest pack goes whole when pruned, and only its records with it.
    packs.sort_by_key(|p| super::super::pack::parse_name(p.file_stem().unwrap().to_str().unwrap()).unwrap());
    let week_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(8 * 24 * 3600);
    std::fs::File::options().append(true).open(&packs[0]).unwrap().set_modified(week_ago).unwrap();
    assert_eq!(store.prune(super::super::DEFAULT_RETENTION), 1);
    assert!(store.read(&ids[0], 0, 10).is_err(), "the first packed record went with its pack");
    assert!(store.read(&ids[299], 0, 10).is_ok());
    let mut after = store.create("s");
    after.write("after the prune\n");
    after.finish();
    assert_eq!(store.read(after.id(), 0, 100).unwrap().0, "after the prune\n");
}

#[test]
fn after_a_failed_write_the_next_record_starts_a_new_pack() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let save = |text: &str| {
        let id = call(&store, "s", text);
        store.settle();
        id
    };
    let before = save("before\n");
    let (folder, pack) = folder_and_pack(dir.path());
    // The pack can no longer be written: a folder now stands in its place.
    std::fs::rename(&pack, folder.join("kept")).unwrap();
    std::fs::create_dir(&pack).unwrap();
    let lost = save("lost\n");
    let after = save("after\n");
    assert_eq!(store.read(&after, 0, 100).unwrap().0, "after\n", "written to a new pack");
    assert!(store.read(&lost, 0, 100).is_err());
    let mut next = store.create("s");
    let [failure] = &next.take_earlier_failures()[..] else { panic!("one failure") };
    assert!(failure.contains(&lost), "{failure}");
    std::fs::remove_dir(&pack).unwrap();
    std::fs::rename(folder.join("kept"), &pack).unwrap();
    assert_eq!(store.read(&before, 0, 100).unwrap().0, "before\n");
}

#[test]
fn every_failed_write_is_told_even_past_the_named_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = unwritable_store(dir.path(), "s");
    // Every writer is made first (a writer takes what failed before it), then all fail together.
    let mut writers: Vec<_> = (0..150).map(|_| store.create("s")).collect();
    for (i, writer) in writers.iter_mut().enumerate() {
        assert!(writer.take_earlier_failures().is_empty());
        writer.write(&format!("lost {i}\n"));
        writer.finish();
    }
    store.settle();
    let told = store.create("s").take_earlier_failures();
    assert_eq!(told.len(), super::NAMED_FAILURES + 1, "{told:#?}");
    let more = format!("The full output of {} more earlier calls could not be saved either.", 150 - told.len() + 1);
    assert_eq!(told.last(), Some(&more));
    assert!(
        told[..told.len() - 1].iter().all(|line| line.contains("artifact://") && line.contains("could not be saved"))
    );
    assert!(store.create("s").take_earlier_failures().is_empty(), "told once");
    // A call dropped before its result gives back what it took; later failures join them, still 16 by name.
    let fail = |count: usize| {
        let mut writers: Vec<_> = (0..count).map(|_| store.create("s")).collect();
        for writer in &mut writers {
            writer.write("lost\n");
            writer.finish();
        }
        store.settle();
    };
    fail(20);
    drop(store.create("s"));
    fail(30);
    let told = store.create("s").take_earlier_failures();
    assert_eq!(told.len(), super::NAMED_FAILURES + 1, "{told:#?}");
    assert_eq!(told.last().unwrap(), "The full output of 34 more earlier calls could not be saved either.");
}

#[test]
fn a_writer_dropped_before_its_call_ended_still_leaves_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let mut writer = store.create("s");
    writer.write("cancelled half way\n");
    let id = writer.id().to_string();
    drop(writer);
    assert_eq!(store.read(&id, 0, 100).unwrap().0, "cancelled half way\n");
}

#[test]
fn once_the_host_stops_deferring_a_call_writes_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    store.stop_deferring();
    let mut writer = store.create("s");
    writer.write("late\n");
    writer.finish();
    let folder = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
    assert_eq!(std::fs::read_dir(folder).unwrap().count(), 2, "written before finish returned");
}

#[test]
fn output_that_outgrows_memory_goes_to_its_file_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = proven_store(dir.path(), "s");
    let mut writer = store.create("s");
    let mut expected = String::new();
    for i in 0..3 * SMALL_BYTES / 1000 {
        let piece = format!("{i:06} {}\n", "x".repeat(992));
        writer.write(&piece);
        expected.push_str(&piece);
    }
    writer.finish();
    assert!(writer.failure().is_none());
    let (text, size) = store.read(writer.id(), 0, expected.len() + 1).unwrap();
    assert_eq!(size, expected.len() as u64);
    assert!(text == expected, "the artifact differs");
}

#[test]
fn a_file_that_could_not_be_saved_after_its_call_is_named_in_the_sessions_next_result() {
    let dir = tempfile::tempdir().unwrap();
    let store = unwritable_store(dir.path(), "s");
    let mut lost = store.create("s");
    lost.write("lost\n");
    lost.finish();
    store.settle();
    let mut other = store.create("another session");
    assert!(other.take_earlier_failures().is_empty(), "only its own session is told");
    drop(store.create("s")); // a call dropped before its result: the note waits for the next
    let mut next = store.create("s");
    let [failure] = &next.take_earlier_failures()[..] else { panic!("one failure") };
    assert!(failure.contains(&format!("artifact://{}", lost.id())) && failure.contains("could not be saved"));
    assert!(store.create("s").take_earlier_failures().is_empty(), "told once");
}

/// A FIFO at a pack's name would hold the saver's thread (and every reader
/// waiting on it) for ever; a symlink there would take records elsewhere.
/// Either is refused: the call's failure is told, and the next record starts a
/// new pack. (Run on a thread of its own: a regression hangs rather than fails.)
#[cfg(unix)]
#[test]
fn a_fifo_or_a_symlink_at_a_packs_name_is_never_written_through() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        plant_a_fifo_then_a_symlink_at_a_packs_name();
        let _ = done.send(());
    });
    match finished.recv_timeout(std::time::Duration::from_secs(300)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the saver waited on what stood at a pack's name"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the test's thread failed (above)"),
    }
}

#[cfg(unix)]
fn plant_a_fifo_then_a_symlink_at_a_packs_name() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target");
    std::fs::write(&target, "untouched").unwrap();
    let store = proven_store(dir.path(), "s");
    let save = |text: &str| {
        let id = call(&store, "s", text);
        store.settle();
        id
    };
    for what in ["fifo", "symlink"] {
        save(&format!("before the {what}\n"));
        let (folder, pack) = folder_and_pack(dir.path());
        std::fs::rename(&pack, folder.join(format!("kept-{what}"))).unwrap();
        match what {
            "fifo" => nix::unistd::mkfifo(&pack, nix::sys::stat::Mode::S_IRWXU).unwrap(),
            _ => std::os::unix::fs::symlink(&target, &pack).unwrap(),
        }
        let lost = save(&format!("through the {what}\n"));
        assert!(store.read(&lost, 0, 100).is_err(), "{what}");
        let mut next = store.create("s");
        let [failure] = &next.take_earlier_failures()[..] else { panic!("one failure for the {what}") };
        assert!(failure.contains(&lost), "{failure}");
        next.finish();
        let after = save(&format!("after the {what}\n"));
        assert_eq!(store.read(&after, 0, 100).unwrap().0, format!("after the {what}\n"), "a new pack");
        std::fs::remove_file(&pack).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    let (folder, _) = folder_and_pack(dir.path());
    // Nor is a link at an artifact file's name read through: the record is read from its pack.
    let id = save("the real record\n");
    let (_, name) = id.trim_start_matches("artifact://").split_once('-').unwrap();
    std::os::unix::fs::symlink(&target, folder.join(format!("{name}.log"))).unwrap();
    assert_eq!(store.read(&id, 0, 100).unwrap().0, "the real record\n");
}
