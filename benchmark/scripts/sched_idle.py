#!/usr/bin/env python3
"""Idle CPUs against runnable threads, from a `perf sched` trace.

Record and convert (inside a benchmark's window; COMM is the benchmark
binary's name, as `perf script` prints it):

    perf sched record -a -o sched.data -- sleep 1.5
    perf script -i sched.data > sched.txt
    python3 sched_idle.py sched.txt COMM

It prints how long the CPUs sat idle in all, how much of that idle time
another CPU had a runnable thread of COMM queued (woken, preempted or
migrated there, and not yet running), and how long woken COMM threads
waited to run, with the share of the long waits' time during which another
CPU was idle.

Some traces hold no event of a CPU's idle task (perf recorded none on one
CPU of a 2-vCPU KVM guest). An idle stretch therefore also ends at the next
event of any other task on that CPU (which overstates that CPU's idle time
by the few microseconds before it), and a thread counts as running from its
first event of its own. An idle stretch still open when the trace ends is
not counted.
"""
import re
import sys

LINE = re.compile(r"\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+)\s+(.*)")
WAKING = re.compile(r"comm=(\S+) pid=(\d+) .*target_cpu=(\d+)")
MIGRATE = re.compile(r"comm=(\S+) pid=(\d+) .*dest_cpu=(\d+)")
SWITCH = re.compile(
    r"prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)"
)


def pct(sorted_values, q):
    return sorted_values[int((len(sorted_values) - 1) * q)]


def main(path, comm):
    waiting = {}  # tid -> CPU whose run queue it waits on
    idle_since = {}  # cpu -> time it went idle
    cpus = set()
    stretches = []  # (cpu, seconds, seconds with a COMM thread queued elsewhere)
    queued_time = {}  # cpu -> seconds, within the current stretch
    woken = {}  # tid -> [wake time, seconds another CPU was idle]
    waits = []  # (seconds, seconds another CPU was idle)
    first = last = None

    def queued_elsewhere(cpu):
        return any(c != cpu for c in waiting.values())

    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        name, tid, cpu, t, event, rest = m.groups()
        tid, cpu, t = int(tid), int(cpu), float(t)
        cpus.add(cpu)
        if first is None:
            first = t
        dt = t - last if last is not None else 0.0
        last = t
        # Charge the time since the last event.
        for c in idle_since:
            if queued_elsewhere(c):
                queued_time[c] = queued_time.get(c, 0.0) + dt
        for w in woken.values():
            if any(c != w[2] for c in idle_since):
                w[1] += dt
        if tid != 0:
            waiting.pop(tid, None)
            if tid in woken:
                w = woken.pop(tid)
                waits.append((t - w[0], w[1]))
            if cpu in idle_since:
                stretches.append((cpu, t - idle_since.pop(cpu), queued_time.pop(cpu, 0.0)))
        if event.startswith("sched:sched_waking"):
            w = WAKING.search(rest)
            if w and w.group(1).startswith(comm):
                waiting[int(w.group(2))] = int(w.group(3))
                woken[int(w.group(2))] = [t, 0.0, int(w.group(3))]
        elif event.startswith("sched:sched_migrate_task"):
            w = MIGRATE.search(rest)
            if w and int(w.group(2)) in waiting:
                waiting[int(w.group(2))] = int(w.group(3))
                if int(w.group(2)) in woken:
                    woken[int(w.group(2))][2] = int(w.group(3))
        elif event.startswith("sched:sched_switch"):
            w = SWITCH.search(rest)
            if not w:
                continue
            prev, prev_pid, state, _, next_pid = w.groups()
            prev_pid, next_pid = int(prev_pid), int(next_pid)
            if prev.startswith(comm) and state.startswith("R"):
                waiting[prev_pid] = cpu
            waiting.pop(next_pid, None)
            if next_pid in woken:
                w = woken.pop(next_pid)
                waits.append((t - w[0], w[1]))
            if next_pid == 0:
                idle_since[cpu] = t
                queued_time[cpu] = 0.0
            elif prev_pid == 0 and cpu in idle_since:
                stretches.append((cpu, t - idle_since.pop(cpu), queued_time.pop(cpu, 0.0)))

    window = last - first
    idle = sum(s[1] for s in stretches)
    print(f"window {window:.2f} s on {len(cpus)} CPUs; idle {idle:.3f} CPU-s")
    long = [s for s in stretches if s[1] >= 1e-3]
    long_idle = sum(s[1] for s in long)
    if idle:
        print(
            f"idle stretches: {len(stretches)}; of the idle time, {100 * long_idle / idle:.0f} % "
            f"in stretches of 1 ms or more"
        )
    if long_idle:
        queued = sum(s[2] for s in long)
        print(
            f"  of that, {100 * queued / long_idle:.0f} % with a runnable {comm} thread "
            f"queued on another CPU"
        )
    if waits:
        lat = sorted(w[0] * 1e6 for w in waits)
        total = sum(w[0] for w in waits)
        slow = [w for w in waits if w[0] >= 1e-3]
        slow_total = sum(w[0] for w in slow)
        print(
            f"wake-ups of {comm} threads: {len(lat)}; wake-to-run median {pct(lat, 0.5):.0f} us, "
            f"p90 {pct(lat, 0.9):.0f}, p99 {pct(lat, 0.99):.0f}"
        )
        if slow_total:
            print(
                f"  {len(slow)} waited 1 ms or more: {100 * slow_total / total:.0f} % of all "
                f"wake-to-run time; another CPU was idle for "
                f"{100 * sum(w[1] for w in slow) / slow_total:.0f} % of it"
            )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
