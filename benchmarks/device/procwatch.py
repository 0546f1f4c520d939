#!/usr/bin/env python3
"""Run a command and say what the machine did meanwhile, to tell a slow process from a busy machine.

    procwatch.py SUMMARY_FILE -- COMMAND...

The command's stdout and stderr pass through; its exit status is returned. SUMMARY_FILE gets one line: the
command's user and system CPU seconds, minor and major page faults, voluntary and involuntary context switches
(from wait4), the most page-locked memory (VmPin + VmLck, MB), resident memory, memory in transparent huge pages and threads it had (sampled every 50 ms), how its
running threads were spread (at each sample, the running threads and the distinct cores they were on: the median and
greatest of each; threads crowded onto fewer cores than they number show as fewer cores), the CPU affinity lists its
threads had, and the machine's CPU time shares over the command's life from /proc/stat (user, system, idle, steal: steal is the time
a virtual machine's hypervisor gave its cores to someone else).
"""
import os
import sys
import time


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return {"user": v[0] + v[1], "system": v[2] + v[5] + v[6], "idle": v[3] + v[4], "steal": v[7] if len(v) > 7 else 0}


def status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmPin", "VmLck", "Threads", "VmRSS"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def huge_kb(pid):
    """Its anonymous memory in transparent huge pages now, in kB."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def running_threads(pid):
    """(running threads, distinct cores they are on) now, and the set of affinity lists of its threads."""
    running, cores, allowed = 0, set(), set()
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0, 0, allowed
    for t in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                st = f.read().rsplit(")", 1)[1].split()
            if st[0] == "R":
                running += 1
                cores.add(int(st[36]))  # field 39, "processor": the core it last ran on
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list"):
                        allowed.add(line.split(":", 1)[1].strip())
        except (OSError, IndexError, ValueError):
            pass
    return running, len(cores), allowed


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: procwatch.py SUMMARY_FILE -- COMMAND...")
    summary, cmd = sys.argv[1], sys.argv[3:]
    before = cpu_times()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    pinned_kb = threads = rss_kb = thp_kb = 0
    spread, allowed = [], set()
    while True:
        done, st, ru = os.wait4(pid, os.WNOHANG)
        if done:
            break
        s = status(pid)
        pinned_kb = max(pinned_kb, s.get("VmPin", 0) + s.get("VmLck", 0))
        threads = max(threads, s.get("Threads", 0))
        rss_kb = max(rss_kb, s.get("VmRSS", 0))
        thp_kb = max(thp_kb, huge_kb(pid))
        running, cores, a = running_threads(pid)
        allowed |= a
        if running > 1:
            spread.append((running, cores))
        time.sleep(0.05)
    wall = time.monotonic() - t0
    after = cpu_times()
    d = {k: after[k] - before[k] for k in after}
    total = sum(d.values()) or 1
    med = lambda v: sorted(v)[len(v) // 2] if v else 0
    run_n, core_n = [r for r, _ in spread], [c for _, c in spread]
    with open(summary, "w") as f:
        f.write("wall %.1fs user %.1fs sys %.1fs minflt %d majflt %d vcsw %d ivcsw %d pinned %dMB rss %dMB huge %dMB threads %d "
                "running %d/%d on cores %d/%d affinity %s | machine user %.0f%% sys %.0f%% idle %.0f%% steal %.1f%%\n" %
                (wall, ru.ru_utime, ru.ru_stime, ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw,
                 pinned_kb // 1024, rss_kb // 1024, thp_kb // 1024, threads, med(run_n), max(run_n, default=0), med(core_n),
                 max(core_n, default=0), ",".join(sorted(allowed)) or "-", 100 * d["user"] / total, 100 * d["system"] / total,
                 100 * d["idle"] / total, 100 * d["steal"] / total))
    sys.exit(os.waitstatus_to_exitcode(st))


if __name__ == "__main__":
    main()
