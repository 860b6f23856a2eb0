//! A small tmpfs of the trial's own, to fill: the disk-full (`ENOSPC`)
//! faults. Mounted over an empty directory and unmounted (lazily, so a
//! process still inside cannot keep it) when the trial ends. Needs root.

use std::path::{Path, PathBuf};

/// A mounted tmpfs; dropping it unmounts it.
#[derive(Debug)]
pub(crate) struct Tmpfs {
    dir: PathBuf,
    filler: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `kib` KiB at `dir` (created).
    ///
    /// # Errors
    ///
    /// When it cannot be mounted (not root, no tmpfs).
    pub(crate) fn mount(dir: &Path, kib: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={kib}k,mode=0755"))
            .arg("tmpfs")
            .arg(dir)
            .output()
            .map_err(|e| format!("failed to run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "failed to mount a tmpfs at {} (the disk-full faults need root): {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            dir: dir.to_owned(),
            filler: dir.join(".filler"),
        })
    }

    /// Fills it: every write after this fails with `ENOSPC`.
    pub(crate) fn fill(&self) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.filler)
        {
            let block = [0u8; 4096];
            while f.write_all(&block).is_ok() {}
        }
    }

    /// Frees what [`Tmpfs::fill`] took.
    pub(crate) fn free(&self) {
        // OK to ignore: there may be nothing to free.
        let _ = std::fs::remove_file(&self.filler);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // OK to ignore: a trial's directory goes anyway.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .output();
    }
}
