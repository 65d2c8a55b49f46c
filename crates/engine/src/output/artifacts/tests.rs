//! The store and its writers: ids, caps, pruning, bulk output on the writer thread.

use super::*;

#[test]
fn writes_and_reads_back_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), DEFAULT_MAX_ARTIFACT_BYTES);
    let mut writer = store.create("session-a");
    assert!(!writer.exists());
    writer.write("hello ");
    writer.write("world\n");
    writer.finish();
    let (text, size) = store.read(&writer.uri(), 0, 1 << 20).unwrap();
    assert_eq!(text, "hello world\n");
    assert_eq!(size, 12);
    let (page, _) = store.read(writer.id(), 6, 5).unwrap();
    assert_eq!(page, "world");
}

#[test]
fn ids_cannot_escape_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), 100);
    for bad in [
        "../../etc/passwd",
        "artifact://../x",
        "0123abcd-1-../../x",
        "0123abcd-1-1/../../x",
        "0123ABCD-1-1",
        "0123abc-1-1",
        "",
        "0123abcd--1",
        "0123abcd-1-1\0",
    ] {
        assert!(matches!(store.locate(bad), Err(ArtifactError::InvalidId(_))), "{bad:?} accepted");
    }
    assert!(matches!(store.locate("0123abcd-1-1"), Err(ArtifactError::NotFound(..))));
}

#[test]
fn prune_removes_only_old_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), 100);
    let mut old = store.create("s");
    old.write("old");
    old.finish();
    let mut new = store.create("s");
    new.write("new");
    new.finish();
    let stray = dir.path().join("not-ours.txt");
    std::fs::write(&stray, "x").unwrap();
    let week_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(8 * 24 * 3600);
    let Ok(Location::File(path)) = store.locate(old.id()) else { panic!("a session's first artifact is a file") };
    let file = std::fs::File::options().append(true).open(path).unwrap();
    file.set_modified(week_ago).unwrap();
    assert_eq!(store.prune(DEFAULT_RETENTION), 1);
    assert!(store.locate(old.id()).is_err());
    assert!(store.locate(new.id()).is_ok());
    assert!(stray.exists(), "files that are not artifacts are left alone");
}

#[test]
fn a_store_that_cannot_be_written_says_why() {
    let store = ArtifactStore::new("/dev/null/artifacts", DEFAULT_MAX_ARTIFACT_BYTES);
    let mut writer = store.create("s");
    writer.write("lost");
    writer.finish();
    let failure = writer.failure().expect("the file cannot be created");
    let ArtifactError::Create { path, source } = failure else { panic!("{failure:?}") };
    assert_eq!(failure.to_string(), format!("cannot create {}: {source}", path.display()));
}

#[test]
fn bulk_output_written_by_the_writer_thread_is_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), DEFAULT_MAX_ARTIFACT_BYTES);
    let mut writer = store.create("s");
    let mut expected = String::new();
    for i in 0..4000 {
        let piece = format!("{i:05} {}\n", "é".repeat(i % 700));
        writer.write(&piece);
        expected.push_str(&piece);
    }
    assert!(expected.len() as u64 > 2 * BACKGROUND_AFTER, "the test reaches the writer thread");
    writer.finish();
    assert!(writer.failure().is_none());
    assert_eq!(writer.bytes_written(), expected.len() as u64);
    let (text, size) = store.read(writer.id(), 0, expected.len() + 1).unwrap();
    assert_eq!(size, expected.len() as u64);
    assert!(text == expected, "the artifact differs");
}

#[test]
fn the_cap_applies_past_the_hand_over_to_the_writer_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), 3 * BACKGROUND_AFTER);
    let mut writer = store.create("s");
    let piece = "z".repeat(100_000);
    for _ in 0..40 {
        writer.write(&piece);
    }
    writer.finish();
    assert!(writer.was_capped());
    let (text, size) = store.read(writer.id(), 3 * BACKGROUND_AFTER, 1000).unwrap();
    assert!(text.starts_with("\n[cellbox: artifact capped at"), "{text}");
    assert!(size > 3 * BACKGROUND_AFTER && size < 3 * BACKGROUND_AFTER + 200);
}

#[test]
fn the_cap_keeps_the_start_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), 10);
    let mut writer = store.create("s");
    writer.write("0123456789abcdef");
    writer.write("more");
    writer.finish();
    assert!(writer.was_capped());
    let (text, _) = store.read(writer.id(), 0, 1000).unwrap();
    assert!(text.starts_with("0123456789\n[cellbox: artifact capped at 10 bytes"), "{text}");
}

#[test]
fn bulk_output_of_a_writer_dropped_before_finish_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path(), DEFAULT_MAX_ARTIFACT_BYTES);
    let mut writer = store.create("s");
    let piece = format!("{}\n", "w".repeat(999));
    let pieces = 3 * BACKGROUND_AFTER as usize / piece.len() + 50; // ends mid-batch
    for _ in 0..pieces {
        writer.write(&piece);
    }
    let (id, expected) = (writer.id().to_string(), (pieces * piece.len()) as u64);
    drop(writer);
    // The writer thread finishes on its own: wait for it, not for a guess of its time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while store.read(&id, 0, 0).unwrap().1 < expected && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(store.read(&id, 0, 0).unwrap().1, expected, "the last batch was kept");
}
