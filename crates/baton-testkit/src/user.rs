//! A piece of a test run as another user: a thread of its own whose
//! credentials (user, group, supplementary groups) are changed for that
//! thread alone, as Linux allows (the raw `setresuid`, `setresgid` and
//! `setgroups` calls are per thread; the C library's wrappers would change
//! the whole process). Whatever that thread does, the kernel checks and
//! reports as that user's: file permissions on `connect`, and the peer
//! credentials (`SO_PEERCRED`, `SO_PEERGROUPS`) a server reads.
//!
//! It needs root; the thread never gets its credentials back, and ends
//! with the closure.

/// Who a thread becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The real, effective and saved user id.
    pub uid: u32,
    /// The real, effective and saved group id.
    pub gid: u32,
    /// The supplementary groups.
    pub groups: Vec<u32>,
}

impl User {
    /// `nobody` (from `/etc/passwd`, else 65534), in its own group and no
    /// other.
    pub fn nobody() -> Self {
        let line = std::fs::read_to_string("/etc/passwd")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("nobody:"))
            .map(str::to_owned)
            .unwrap_or_default();
        let mut f = line.split(':').skip(2);
        let uid = f.next().and_then(|v| v.parse().ok()).unwrap_or(65534);
        let gid = f.next().and_then(|v| v.parse().ok()).unwrap_or(65534);
        Self {
            uid,
            gid,
            groups: Vec::new(),
        }
    }

    /// This user with `groups` as its supplementary groups.
    pub fn with_groups(mut self, groups: &[u32]) -> Self {
        self.groups = groups.to_vec();
        self
    }

    /// This user with `gid` as its group.
    pub fn with_gid(mut self, gid: u32) -> Self {
        self.gid = gid;
        self
    }

    /// Runs `f` in a thread that is this user, and returns what it returns.
    ///
    /// # Panics
    ///
    /// When the credentials cannot be changed (not root), or `f` panics.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        use rustix::process::{Gid, Uid};
        use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};
        let me = self.clone();
        std::thread::spawn(move || {
            let groups: Vec<Gid> = me.groups.iter().map(|&g| Gid::from_raw(g)).collect();
            // Groups first, then the group, then the user: once the user is
            // not root, nothing else can be changed.
            set_thread_groups(&groups).expect("setgroups (tests of other users need root)");
            let gid = Gid::from_raw(me.gid);
            set_thread_res_gid(gid, gid, gid).expect("setresgid");
            let uid = Uid::from_raw(me.uid);
            set_thread_res_uid(uid, uid, uid).expect("setresuid");
            f()
        })
        .join()
        .expect("the thread run as another user panicked")
    }
}
