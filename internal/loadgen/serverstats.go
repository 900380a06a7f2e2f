package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ServerUsage is what the server process spent during one workload, read
// from /proc when Config.ServerPIDs name it (Linux, same machine); for
// several processes, their sums.
type ServerUsage struct {
	// CPU is the user and system time the server used.
	CPU time.Duration
	// RSSBefore, RSSPeak and RSSAfter are its resident set size in bytes
	// when the workload started, the most sampled while it ran (every
	// rssSampleEvery), and when it ended.
	RSSBefore, RSSPeak, RSSAfter int64
}

// rssSampleEvery is how often a workload samples the server's RSS.
const rssSampleEvery = 20 * time.Millisecond

// clockTicks is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux platform Go supports.
const clockTicks = 100

// procStats reads a process's CPU time (user+system) and RSS. The time is
// its threads' run time in nanoseconds (taskCPU) where /proc has it:
// /proc/PID/stat counts in clock ticks of 10 ms, which over a short
// workload of a few hundred operations is tens of microseconds per
// operation.
func procStats(pid int) (cpu time.Duration, rss int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15, rss
	// (in pages) field 24.
	if len(f) < 22 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	pages, err3 := strconv.ParseInt(string(f[21]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unreadable times or rss", pid)
	}
	cpu = time.Duration(utime+stime) * time.Second / clockTicks
	if precise, ok := taskCPU(pid); ok {
		cpu = precise
	}
	return cpu, pages * int64(os.Getpagesize()), nil
}

// taskCPU sums the run time of pid's threads from
// /proc/PID/task/TID/schedstat (its first field, in nanoseconds). Threads
// that exited no longer count, which a Go server rarely has: the runtime
// keeps its threads. ok is false where schedstat is missing (kernels
// without CONFIG_SCHED_INFO).
func taskCPU(pid int) (cpu time.Duration, ok bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // the thread exited since ReadDir
			}
			return 0, false
		}
		f, _, _ := bytes.Cut(b, []byte(" "))
		ns, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		cpu += time.Duration(ns)
	}
	return cpu, true
}

// watchServers samples the servers' usage from now until the returned
// function is called, which returns what they spent in between, summed.
// No pids measures nothing; so does a pid that cannot be read (the error
// says why).
func watchServers(pids []int) (stop func() (*ServerUsage, error)) {
	if len(pids) == 0 {
		return func() (*ServerUsage, error) { return nil, nil }
	}
	cpu0, rss0, err := sumStats(pids)
	if err != nil {
		return func() (*ServerUsage, error) { return nil, err }
	}
	u := &ServerUsage{RSSBefore: rss0, RSSPeak: rss0}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, rss, err := sumStats(pids); err == nil {
					u.RSSPeak = max(u.RSSPeak, rss)
				}
			}
		}
	}()
	return func() (*ServerUsage, error) {
		close(done)
		wg.Wait()
		cpu1, rss1, err := sumStats(pids)
		if err != nil {
			return nil, err
		}
		u.CPU = cpu1 - cpu0
		u.RSSAfter = rss1
		u.RSSPeak = max(u.RSSPeak, rss1)
		return u, nil
	}
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perOp is d shared among n operations, rounded to the millisecond; 0
// when there were none.
func perOp(d time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return (d / time.Duration(n)).Round(time.Millisecond)
}

// sumStats is procStats summed over pids.
func sumStats(pids []int) (cpu time.Duration, rss int64, err error) {
	for _, pid := range pids {
		c, r, err := procStats(pid)
		if err != nil {
			return 0, 0, err
		}
		cpu, rss = cpu+c, rss+r
	}
	return cpu, rss, nil
}
