package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// groupCPUSeconds is the user + system CPU time of every live process in process group
// pgid (the suite starts each server in its own session, so its workers are in it too).
func groupCPUSeconds(pgid int) float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	var ticks int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(raw)
		paren := strings.LastIndexByte(s, ')')
		if paren < 0 || paren+2 > len(s) {
			continue
		}
		fields := strings.Fields(s[paren+2:])
		if len(fields) < 13 {
			continue
		}
		if group, _ := strconv.Atoi(fields[2]); group != pgid {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		ticks += utime + stime
	}
	return float64(ticks) / clockTicks
}

// selfCPUSeconds is this process's own user + system CPU time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
