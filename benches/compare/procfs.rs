//! What a process costs, read from `/proc`: its resident memory and its CPU time.

use std::{process::Command, time::Duration};

use anyhow::Context;

pub(super) fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("no VmRSS value")?
        .parse()?)
}

/// User plus system CPU time of a process, in clock ticks (fields 14 and 15 of
/// `/proc/<pid>/stat`, counted after the parenthesised command name).
pub(super) fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').context("odd stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

pub(super) fn ticks_to_duration(ticks: u64) -> anyhow::Result<Duration> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    let per_second: u64 = String::from_utf8(out.stdout)?.trim().parse()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// CPU time of a process to the nanosecond: the time on CPU of each of its threads (the first
/// field of `/proc/<pid>/task/<tid>/schedstat`), summed. Finer than [`cpu_ticks`]' clock ticks
/// of (usually) 10 ms, for measures over a few ticks; a thread that ended takes its time with it,
/// so the process's threads should outlive the measure (a server's workers do).
pub(super) fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let mut nanos: u64 = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = task?.path().join("schedstat");
        // A thread that ended since the listing has nothing to add.
        let Ok(stat) = std::fs::read_to_string(&path) else {
            continue;
        };
        let on_cpu = stat.split_whitespace().next().context("odd schedstat")?;
        nanos += on_cpu.parse::<u64>()?;
    }
    Ok(Duration::from_nanos(nanos))
}
