//! Relays between the host's ZeroMQ sockets and a kernel's, which check the
//! kernel's side of the wire on the way.
//!
//! The `zeromq` crate reserves memory for whatever frame length a peer
//! announces: a kernel claiming a 64 TiB frame would abort the host, and
//! every other session with it. So the host's sockets never meet the
//! kernel's: each connects to a relay listening in a folder only the host can
//! reach, and the relay connects to the kernel's socket and copies bytes both
//! ways. What comes from the kernel is read as ZMTP 3 framing (a 64-byte
//! greeting, then frames: a flags byte, a 1- or 8-byte length, the body):
//! a frame over [`MAX_FRAME`], a message over [`MAX_MESSAGE`] or
//! [`MAX_FRAMES`] frames, or a greeting that is not ZMTP 3 ends the
//! connection, and the kernel with it ([`super::kernel`]).

#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(unix)]
use tokio::io::{AsyncReadExt, AsyncWriteExt};
#[cfg(unix)]
use tokio::net::{UnixListener, UnixStream};

/// The largest frame a kernel may send. Its JSON parts are parsed into
/// values, which can take many times their size (`[0,0,…]`): the bound is
/// what one message may cost the host, not what a display may hold (a cell's
/// large output belongs in a file, or in stream messages, which kernels cut).
pub const MAX_FRAME: u64 = 64 << 20;
/// The largest message (all its frames).
pub const MAX_MESSAGE: u64 = 128 << 20;
/// The most frames one message may have (identities, the delimiter, the
/// signature, four JSON parts and the binary buffers).
pub const MAX_FRAMES: u32 = 4096;

const GREETING: usize = 64;
const FLAG_MORE: u8 = 0b001;
const FLAG_LONG: u8 = 0b010;
const FLAG_COMMAND: u8 = 0b100;

/// Where the reader of a kernel's bytes is in its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// So many bytes of the greeting still to come.
    Greeting(usize),
    /// The flags byte of the next frame.
    Flags,
    /// The length: `have` of its `of` bytes read so far.
    Length { flags: u8, value: u64, have: u8, of: u8 },
    /// So many bytes of the frame's body still to come.
    Body { left: u64 },
}

/// A check of one direction of ZMTP 3 bytes against the limits.
#[derive(Debug, Clone)]
pub struct FrameCheck {
    state: State,
    /// Bytes and frames of the message being read, when its frames are not commands.
    message_bytes: u64,
    message_frames: u32,
    /// Whether the frame being read continues its message.
    more: bool,
    command: bool,
}

impl Default for FrameCheck {
    fn default() -> Self {
        FrameCheck {
            state: State::Greeting(GREETING),
            message_bytes: 0,
            message_frames: 0,
            more: false,
            command: false,
        }
    }
}

impl FrameCheck {
    /// Take the next bytes; the reason the stream breaks the limits, if it does.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            match self.state {
                State::Greeting(left) => {
                    let seen = GREETING - left;
                    let take = left.min(data.len());
                    // The signature's first byte, and the major version (byte 10): ZMTP 3.
                    for (offset, byte) in data[..take].iter().enumerate() {
                        let at = seen + offset;
                        if (at == 0 && *byte != 0xff) || (at == 10 && *byte < 3) {
                            return Err("the kernel's socket does not speak ZMTP 3".into());
                        }
                    }
                    data = &data[take..];
                    self.state = if left == take { State::Flags } else { State::Greeting(left - take) };
                }
                State::Flags => {
                    let flags = data[0];
                    data = &data[1..];
                    let of = if flags & FLAG_LONG != 0 { 8 } else { 1 };
                    self.state = State::Length { flags, value: 0, have: 0, of };
                }
                State::Length { flags, mut value, mut have, of } => {
                    while have < of && !data.is_empty() {
                        value = value << 8 | u64::from(data[0]);
                        data = &data[1..];
                        have += 1;
                    }
                    if have < of {
                        self.state = State::Length { flags, value, have, of };
                        continue;
                    }
                    self.start_frame(flags, value)?;
                }
                State::Body { left } => {
                    let take = left.min(data.len() as u64);
                    data = &data[take as usize..];
                    self.state = if take == left { self.end_frame() } else { State::Body { left: left - take } };
                }
            }
        }
        Ok(())
    }

    fn start_frame(&mut self, flags: u8, length: u64) -> Result<(), String> {
        if length > MAX_FRAME {
            return Err(format!("the kernel sent a frame of {length} bytes (at most {MAX_FRAME} are taken)"));
        }
        self.command = flags & FLAG_COMMAND != 0;
        self.more = flags & FLAG_MORE != 0 && !self.command;
        if !self.command {
            self.message_bytes += length;
            self.message_frames += 1;
            if self.message_bytes > MAX_MESSAGE {
                return Err(format!("the kernel sent a message of more than {MAX_MESSAGE} bytes"));
            }
            if self.message_frames > MAX_FRAMES {
                return Err(format!("the kernel sent a message of more than {MAX_FRAMES} frames"));
            }
        }
        self.state = if length == 0 { self.end_frame() } else { State::Body { left: length } };
        Ok(())
    }

    fn end_frame(&mut self) -> State {
        if !self.command && !self.more {
            self.message_bytes = 0;
            self.message_frames = 0;
        }
        State::Flags
    }
}

/// The relays of one kernel: one listener per channel, in a folder of the
/// host's own. Dropping it stops them and removes the folder.
pub struct Relays {
    /// The endpoints the host's sockets connect to, in the order of the targets.
    pub endpoints: Vec<String>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _folder: tempfile::TempDir,
}

impl Drop for Relays {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Why a relay ended a connection: the first broken limit.
pub type Broken = Arc<std::sync::Mutex<Option<String>>>;

/// One of the kernel's sockets, as a relay reaches it.
#[derive(Debug, Clone)]
pub enum Target {
    /// A Unix socket (its path: on Linux, a `/proc/self/fd/N` the host holds).
    Unix(PathBuf),
    /// A loopback port, checked to be the kernel's ([`super::tcp`]).
    #[cfg(target_os = "linux")]
    Tcp(super::tcp::TcpTarget),
}

impl Relays {
    /// A relay to each of `targets` (the kernel's sockets); a broken limit is
    /// written into `broken`, and `on_broken` is called.
    #[cfg(unix)]
    pub fn start(
        targets: &[Target],
        broken: Broken,
        on_broken: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<Relays> {
        let folder = private_folder()?;
        let mut endpoints = Vec::new();
        let mut tasks = Vec::new();
        for (index, target) in targets.iter().enumerate() {
            let path = folder.path().join(format!("r{index}"));
            let listener = UnixListener::bind(&path)?;
            endpoints.push(format!("ipc://{}", path.display()));
            let (target, broken, on_broken) = (target.clone(), broken.clone(), on_broken.clone());
            tasks.push(tokio::spawn(serve(listener, target, broken, on_broken)));
        }
        Ok(Relays { endpoints, tasks, _folder: folder })
    }

    /// Unix sockets only: Jupyter kernels from kernelspecs run on Linux and macOS.
    #[cfg(not(unix))]
    pub fn start(
        _targets: &[Target],
        _broken: Broken,
        _on_broken: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<Relays> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "Jupyter kernels run on Linux and macOS only"))
    }
}

/// A folder only this user can reach, with a path short enough for a socket's.
#[cfg(unix)]
fn private_folder() -> std::io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("cellbox-relay-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    let folder = builder.tempdir()?;
    if folder.path().join("r4").as_os_str().len() <= super::sockets::MAX_SOCKET_PATH {
        return Ok(folder);
    }
    builder.tempdir_in(Path::new("/tmp"))
}

#[cfg(unix)]
async fn serve(listener: UnixListener, target: Target, broken: Broken, on_broken: Arc<dyn Fn() + Send + Sync>) {
    while let Ok((host, _)) = listener.accept().await {
        let (broken, on_broken) = (broken.clone(), on_broken.clone());
        match &target {
            Target::Unix(path) => {
                let Ok(kernel) = UnixStream::connect(path).await else { continue };
                tokio::spawn(async move {
                    if pipe(host, kernel, &broken).await.is_err() {
                        on_broken();
                    }
                });
            }
            #[cfg(target_os = "linux")]
            Target::Tcp(target) => {
                let target = target.clone();
                tokio::spawn(async move {
                    use super::tcp::{EXIT_GRACE, Unopened, ends_within, open};
                    let ended = match open(&target).await {
                        Ok(kernel) => pipe(host, kernel, &broken).await,
                        // The host's side is held meanwhile, so it does not spend the
                        // kernel's connections asking again.
                        Err(Unopened::Gone(_)) if ends_within(&target, EXIT_GRACE).await => Ok(()),
                        Err(Unopened::Gone(reason) | Unopened::Broke(reason)) => {
                            broken.lock().unwrap().get_or_insert(reason);
                            Err(())
                        }
                    };
                    if ended.is_err() {
                        on_broken();
                    }
                });
            }
        }
    }
}

/// Copy both ways until either side ends; the kernel's bytes are checked. A
/// broken limit is written into `broken` before the host's side is closed (so
/// a reader that sees the close finds why).
#[cfg(unix)]
async fn pipe<K>(host: UnixStream, kernel: K, broken: &Broken) -> Result<(), ()>
where
    K: tokio::io::AsyncRead + tokio::io::AsyncWrite,
{
    let (mut host_read, mut host_write) = host.into_split();
    let (mut kernel_read, mut kernel_write) = tokio::io::split(kernel);
    let to_kernel = async {
        let _ = tokio::io::copy(&mut host_read, &mut kernel_write).await;
        Ok(())
    };
    let from_kernel = async {
        let mut check = FrameCheck::default();
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let read = match kernel_read.read(&mut buffer).await {
                Ok(0) | Err(_) => return Ok(()),
                Ok(read) => read,
            };
            if let Err(reason) = check.feed(&buffer[..read]) {
                broken.lock().unwrap().get_or_insert(reason);
                return Err(());
            }
            if host_write.write_all(&buffer[..read]).await.is_err() {
                return Ok(());
            }
        }
    };
    tokio::select! {
        ended = to_kernel => ended,
        ended = from_kernel => ended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greeting() -> Vec<u8> {
        let mut greeting = vec![0u8; GREETING];
        greeting[0] = 0xff;
        greeting[9] = 0x7f;
        greeting[10] = 3;
        greeting
    }

    #[test]
    fn well_formed_frames_pass_in_any_pieces() {
        let mut bytes = greeting();
        bytes.extend([FLAG_COMMAND, 5]);
        bytes.extend(b"READY");
        bytes.extend([FLAG_MORE, 3]);
        bytes.extend(b"abc");
        bytes.extend([FLAG_LONG]);
        bytes.extend(300u64.to_be_bytes());
        bytes.extend(vec![7u8; 300]);
        bytes.extend([0, 0]);
        for piece in [1, 2, 7, 64, 1000] {
            let mut check = FrameCheck::default();
            for chunk in bytes.chunks(piece) {
                check.feed(chunk).unwrap();
            }
            assert_eq!(check.state, State::Flags, "pieces of {piece}");
            assert_eq!(check.message_frames, 0);
        }
    }

    #[test]
    fn a_huge_frame_or_message_or_a_foreign_greeting_is_refused() {
        let mut check = FrameCheck::default();
        let mut bytes = greeting();
        bytes.push(FLAG_LONG);
        bytes.extend((1u64 << 46).to_be_bytes());
        assert!(check.feed(&bytes).unwrap_err().contains("a frame of 70368744177664 bytes"));

        let mut check = FrameCheck::default();
        check.feed(&greeting()).unwrap();
        let mut error = None;
        for _ in 0..=MAX_FRAMES {
            if let Err(e) = check.feed(&[FLAG_MORE, 0]) {
                error = Some(e);
                break;
            }
        }
        assert!(error.unwrap().contains("more than 4096 frames"));

        let mut check = FrameCheck { state: State::Flags, message_bytes: MAX_MESSAGE - 10, ..Default::default() };
        let mut frame = vec![FLAG_MORE | FLAG_LONG];
        frame.extend(20u64.to_be_bytes());
        assert!(check.feed(&frame).unwrap_err().contains("a message of more than"));

        let mut foreign = greeting();
        foreign[10] = 2;
        assert!(FrameCheck::default().feed(&foreign).is_err());
        assert!(FrameCheck::default().feed(b"GET / HTTP/1.1\r\n").is_err());
    }
}
