#pragma once
// A server thread's own CPU priority and name. Linux keeps a nice value per thread (setpriority(2) on the thread's
// ID), so one thread can be served before or after the others of the process when the cores are short.
//
// Two of the server's threads are not like the rest: the writer (writer.h) is the one thread every change, every
// admission and every heartbeat that reports something waits for, and job listings (read_seats.h) are the reads
// that can wait. Under CPU pressure (10,000 agents' heartbeats on two cores: bench/RESULTS.md, "the writer first")
// the writer was runnable but waiting for a core two thirds of the time, behind hundreds of request threads; a
// writer at a higher priority is served first (`allot server --writer-priority`), listings last (--listing-nice).
#include <string_view>

namespace allot::server {

// Changes the calling thread's nice value by `delta` (positive: a lower priority, always allowed; negative: a higher
// one, which needs CAP_SYS_NICE or an RLIMIT_NICE that allows it, e.g. systemd's LimitNICE=). Returns the change
// the kernel granted (`delta` within nice's bounds of -20..19), or 0 when it refused: said in the log as a warning
// naming `what` (the threads it was for); the thread then runs at the process's own priority.
int adjust_thread_nice(int delta, std::string_view what);

// The calling thread's nice value.
int thread_nice();

// How many nice levels adjust_thread_nice has raised the calling thread by, net (negative when it lowered it). A
// thread (or process) started from it inherits its nice value: the writer's helpers (the snapshot thread, the
// thread that drops an old view, the provisioner's command) go back to the process's priority with
// `back_to_process_priority(raised)`, the value read on the starting thread, so that their work is not served first.
int thread_raised();
void back_to_process_priority(int raised, std::string_view what);
// The same in a child just forked from such a thread, before exec: only system calls, no allocation or log.
void back_to_process_priority_after_fork(int raised);

// Names the calling thread as top -H, ps -L and /proc/PID/task/TID/comm show it (15 characters at most; longer is
// cut).
void name_thread(std::string_view name);

}  // namespace allot::server
