//! The steps a forked child takes before `exec`, for its sandbox: only
//! async-signal-safe system calls on memory prepared before the fork.

/// In a new mount namespace: stop mounts from propagating to the host (or
/// from it), before any mount is made. Async-signal-safe.
pub(super) unsafe fn make_mounts_private() -> std::io::Result<()> {
    let none = std::ptr::null();
    // SAFETY: a NUL-terminated literal; no memory of the caller is touched.
    let rc = unsafe { libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, none.cast()) };
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// In a new mount namespace whose mounts are private: a fresh tmpfs on
/// `/dev/shm`. Async-signal-safe.
pub(super) unsafe fn mount_shm() -> std::io::Result<()> {
    // SAFETY: NUL-terminated literals; no memory of the caller is touched.
    let rc = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/shm".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=1777".as_ptr().cast(),
        )
    };
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// Both steps above, as the probe tries them. Async-signal-safe.
pub(super) unsafe fn mount_private_shm() -> std::io::Result<()> {
    // SAFETY: see the two steps.
    unsafe {
        make_mounts_private()?;
        mount_shm()
    }
}

/// Add a rule granting `rights` beneath the (new) `/dev/shm` to the Landlock
/// ruleset `ruleset`, before the kernel restricts itself with it. Async-signal-safe.
pub(super) unsafe fn grant_private_shm(ruleset: libc::c_int, rights: u64) -> std::io::Result<()> {
    /// The kernel's `struct landlock_path_beneath_attr`.
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const RULE_PATH_BENEATH: libc::c_int = 1;
    // SAFETY: an O_PATH open, a rule struct on the stack, a close.
    unsafe {
        let fd = libc::open(c"/dev/shm".as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let rule = PathBeneath { allowed_access: rights, parent_fd: fd };
        let rc = libc::syscall(libc::SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &rule, 0u32);
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if rc < 0 { Err(error) } else { Ok(()) }
    }
}

/// open + write + close, async-signal-safe.
pub(super) unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if written < 0 { Err(error) } else { Ok(()) }
    }
}

/// Bring up `lo` in the (new) network namespace, async-signal-safe.
pub(super) unsafe fn loopback_up() -> std::io::Result<()> {
    // SAFETY: an ifreq on the stack, a socket closed before returning.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            rc = libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
        }
        let error = std::io::Error::last_os_error();
        libc::close(sock);
        if rc < 0 { Err(error) } else { Ok(()) }
    }
}

/// Bind each of the `writable` paths onto itself (its mounts below come
/// along with their own flags), so that it is a mount apart from the one it
/// lies in. Best effort, async-signal-safe.
pub(super) unsafe fn bind_onto_themselves(writable: &[std::ffi::CString]) {
    let none = std::ptr::null();
    for path in writable {
        // SAFETY: a NUL-terminated path prepared before the fork.
        unsafe {
            libc::mount(path.as_ptr(), path.as_ptr(), none, libc::MS_BIND | libc::MS_REC, none.cast());
        }
    }
}

/// Make each of the `mounts` read-only, itself only (not what is mounted
/// below it). Best effort, async-signal-safe: on a kernel without
/// `mount_setattr` (before 5.12) they stay as they were, and Landlock alone
/// keeps writes in the writable places.
pub(super) unsafe fn read_only(mounts: &[std::ffi::CString]) {
    // SAFETY: as `read_only_each`.
    unsafe { read_only_each(mounts.iter()) }
}

/// [`read_only`] for the mounts an iterator over prepared paths gives (it
/// must not allocate). Async-signal-safe.
pub(super) unsafe fn read_only_each<'a>(mounts: impl Iterator<Item = &'a std::ffi::CString>) {
    /// The kernel's `struct mount_attr`.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    let read_only = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    for mount in mounts {
        // SAFETY: a NUL-terminated path prepared before the fork and a struct on the stack.
        unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                mount.as_ptr(),
                0 as libc::c_uint,
                &read_only as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            );
        }
    }
}
