//! What memory the server can really get: the smaller of the machine's
//! physical memory and the memory limit of the cgroup the server runs in
//! (v1 or v2), so the memory guard holds in a container as on bare metal.
//!
//! The parsing is pure (text in, numbers out) and unit-tested with the
//! files of real systems; [`detect`] reads them from `/proc` and `/sys`.

use std::path::{Path, PathBuf};

/// Limits at or above this are "no limit" (cgroup v1 writes
/// 9223372036854771712, the largest page-aligned i64).
const UNLIMITED: u64 = 1 << 60;

/// Where the limit comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSource {
    PhysicalMemory,
    CgroupV1,
    CgroupV2,
}

impl LimitSource {
    pub fn name(self) -> &'static str {
        match self {
            LimitSource::PhysicalMemory => "physical-memory",
            LimitSource::CgroupV1 => "cgroup-v1",
            LimitSource::CgroupV2 => "cgroup-v2",
        }
    }

    /// How an error message names it.
    pub fn describe(self) -> &'static str {
        match self {
            LimitSource::PhysicalMemory => "the machine's physical memory",
            LimitSource::CgroupV1 | LimitSource::CgroupV2 => "the cgroup memory limit",
        }
    }
}

/// The memory the server process can get, and where that number comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    pub source: LimitSource,
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
pub fn physical_memory(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// A limit file's value: a number of bytes, or `max` / a huge number for
/// none.
fn parse_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse::<u64>().ok().filter(|&v| v < UNLIMITED)
}

/// One line of `/proc/self/mountinfo`: the root of the mount inside its
/// hierarchy, where it is mounted, its file system type and super options.
struct Mount<'a> {
    root: &'a str,
    point: &'a str,
    fstype: &'a str,
    super_options: &'a str,
}

fn mounts(mountinfo: &str) -> impl Iterator<Item = Mount<'_>> {
    mountinfo.lines().filter_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut rest = after.split(' ');
        let fstype = rest.next()?;
        let _source = rest.next()?;
        Some(Mount {
            root: fields.get(3)?,
            point: fields.get(4)?,
            fstype,
            super_options: rest.next().unwrap_or(""),
        })
    })
}

/// The directory of the cgroup at `path` (as `/proc/self/cgroup` names it)
/// under a mount of its hierarchy, or None when the mount does not show it.
fn cgroup_dir(mount: &Mount<'_>, path: &str) -> Option<PathBuf> {
    let relative = if mount.root == "/" {
        path
    } else {
        path.strip_prefix(mount.root)?
    };
    let relative = relative.trim_start_matches('/');
    Some(Path::new(mount.point).join(relative))
}

/// The smallest limit found in `file` from `dir` up to the mount point: a
/// parent's limit binds its children.
fn smallest_up_to_mount(
    dir: &Path,
    mount_point: &Path,
    file: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<u64> {
    let mut smallest: Option<u64> = None;
    let mut current = Some(dir);
    while let Some(d) = current {
        if let Some(limit) = read(&d.join(file)).as_deref().and_then(parse_limit) {
            smallest = Some(smallest.map_or(limit, |s| s.min(limit)));
        }
        if d == mount_point {
            break;
        }
        current = d.parent().filter(|p| p.starts_with(mount_point));
    }
    smallest
}

/// The memory limit of the process' cgroup, from the texts of
/// `/proc/self/cgroup` and `/proc/self/mountinfo` and a reader for the
/// cgroup files. None when no limit applies.
pub fn cgroup_limit(
    proc_cgroup: &str,
    mountinfo: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<(u64, LimitSource)> {
    let mut found: Vec<(u64, LimitSource)> = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            // cgroup v2: memory.max at each level.
            for mount in mounts(mountinfo).filter(|m| m.fstype == "cgroup2") {
                if let Some(dir) = cgroup_dir(&mount, path) {
                    let point = Path::new(mount.point);
                    if let Some(limit) = smallest_up_to_mount(&dir, point, "memory.max", read) {
                        found.push((limit, LimitSource::CgroupV2));
                    }
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            // cgroup v1: memory.limit_in_bytes at each level, and the
            // effective limit the kernel reports in memory.stat.
            for mount in mounts(mountinfo).filter(|m| {
                m.fstype == "cgroup" && m.super_options.split(',').any(|o| o == "memory")
            }) {
                if let Some(dir) = cgroup_dir(&mount, path) {
                    let point = Path::new(mount.point);
                    let walked = smallest_up_to_mount(&dir, point, "memory.limit_in_bytes", read);
                    let hierarchical = read(&dir.join("memory.stat")).and_then(|stat| {
                        stat.lines()
                            .find_map(|l| l.strip_prefix("hierarchical_memory_limit "))
                            .and_then(parse_limit)
                    });
                    if let Some(limit) = [walked, hierarchical].into_iter().flatten().min() {
                        found.push((limit, LimitSource::CgroupV1));
                    }
                }
            }
        }
    }
    found.into_iter().min_by_key(|&(limit, _)| limit)
}

/// The limit from the given texts: the cgroup's when it is below the
/// physical memory.
pub fn limit_from(
    meminfo: &str,
    proc_cgroup: &str,
    mountinfo: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<MemoryLimit> {
    let physical = physical_memory(meminfo).map(|bytes| MemoryLimit {
        bytes,
        source: LimitSource::PhysicalMemory,
    });
    let cgroup = cgroup_limit(proc_cgroup, mountinfo, read)
        .map(|(bytes, source)| MemoryLimit { bytes, source });
    match (physical, cgroup) {
        (Some(p), Some(c)) if c.bytes < p.bytes => Some(c),
        (Some(p), _) => Some(p),
        (None, c) => c,
    }
}

/// Reads the limit of this process now.
pub fn detect() -> Option<MemoryLimit> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    limit_from(
        &read(Path::new("/proc/meminfo")).unwrap_or_default(),
        &read(Path::new("/proc/self/cgroup")).unwrap_or_default(),
        &read(Path::new("/proc/self/mountinfo")).unwrap_or_default(),
        &read,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const MEMINFO: &str = "MemTotal:       24683792 kB\nMemFree:        23623492 kB\n";

    fn reader(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        move |p: &Path| map.get(p).cloned()
    }

    #[test]
    fn physical_memory_reads_memtotal_in_kib() {
        assert_eq!(physical_memory(MEMINFO), Some(24_683_792 * 1024));
        assert_eq!(physical_memory("MemFree: 1 kB\n"), None);
        assert_eq!(physical_memory("MemTotal: x kB\n"), None);
    }

    #[test]
    fn limit_values() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("2147483648\n"), Some(2 << 30));
        assert_eq!(parse_limit(""), None);
    }

    /// A Docker-style cgroup v2 host: the container sees its own cgroup as
    /// the root of the mount.
    #[test]
    fn cgroup_v2_namespaced() {
        let cgroup = "0::/\n";
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let read = reader(&[("/sys/fs/cgroup/memory.max", "1073741824\n")]);
        assert_eq!(
            cgroup_limit(cgroup, mountinfo, &read),
            Some((1 << 30, LimitSource::CgroupV2))
        );
        let limit = limit_from(MEMINFO, cgroup, mountinfo, &read).unwrap();
        assert_eq!(limit.bytes, 1 << 30);
        assert_eq!(limit.source, LimitSource::CgroupV2);
    }

    /// A systemd service on a cgroup v2 host: the slice above the service
    /// has the smaller limit.
    #[test]
    fn cgroup_v2_parent_limit_binds() {
        let cgroup = "0::/system.slice/redis.service\n";
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let read = reader(&[
            (
                "/sys/fs/cgroup/system.slice/redis.service/memory.max",
                "max\n",
            ),
            ("/sys/fs/cgroup/system.slice/memory.max", "536870912\n"),
        ]);
        assert_eq!(
            cgroup_limit(cgroup, mountinfo, &read),
            Some((512 << 20, LimitSource::CgroupV2))
        );
    }

    #[test]
    fn cgroup_v2_without_limit() {
        let cgroup = "0::/user.slice\n";
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let read = reader(&[("/sys/fs/cgroup/user.slice/memory.max", "max\n")]);
        assert_eq!(cgroup_limit(cgroup, mountinfo, &read), None);
        let limit = limit_from(MEMINFO, cgroup, mountinfo, &read).unwrap();
        assert_eq!(limit.source, LimitSource::PhysicalMemory);
    }

    /// cgroup v1 with the hierarchy mounted from its root (as on this
    /// project's CI machines) and a limit set on the process' group.
    #[test]
    fn cgroup_v1_hybrid() {
        let cgroup = "9:name=systemd:/\n4:memory:/process_api/f974\n0::/\n";
        let mountinfo = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let read = reader(&[
            (
                "/sys/fs/cgroup/memory/process_api/f974/memory.limit_in_bytes",
                "4294967296\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        assert_eq!(
            cgroup_limit(cgroup, mountinfo, &read),
            Some((4 << 30, LimitSource::CgroupV1))
        );
    }

    /// cgroup v1 mounted at the group itself (a container): the mount root
    /// is the group's path; memory.stat gives the effective limit.
    #[test]
    fn cgroup_v1_container_uses_hierarchical_limit() {
        let cgroup = "5:memory,cpuacct:/docker/abc\n";
        let mountinfo =
            "40 31 0:35 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,cpuacct,memory\n";
        let read = reader(&[
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.stat",
                "cache 0\nhierarchical_memory_limit 2147483648\n",
            ),
        ]);
        assert_eq!(
            cgroup_limit(cgroup, mountinfo, &read),
            Some((2 << 30, LimitSource::CgroupV1))
        );
    }

    #[test]
    fn cgroup_larger_than_memory_is_not_the_limit() {
        let cgroup = "0::/\n";
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let read = reader(&[("/sys/fs/cgroup/memory.max", "107374182400\n")]);
        let limit = limit_from(MEMINFO, cgroup, mountinfo, &read).unwrap();
        assert_eq!(limit.source, LimitSource::PhysicalMemory);
        assert_eq!(limit.bytes, 24_683_792 * 1024);
    }

    #[test]
    fn a_mount_that_does_not_show_the_group_is_ignored() {
        let cgroup = "4:memory:/elsewhere\n";
        let mountinfo =
            "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let read = reader(&[("/sys/fs/cgroup/memory/memory.limit_in_bytes", "1024\n")]);
        assert_eq!(cgroup_limit(cgroup, mountinfo, &read), None);
    }

    #[test]
    fn this_machine_has_a_limit() {
        let limit = detect().expect("a Linux machine has /proc/meminfo");
        assert!(limit.bytes > 0);
    }
}
