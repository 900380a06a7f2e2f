package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// idleRSSLimit is issue 13's target: an idle crdserver serving every
// built-in on embedded etcd keeps at most 50 MB resident.
const idleRSSLimit = 50 << 20

// TestIdleRSS checks that a ready, idle server's RSS falls to the target
// (the binary's start-up code pages are given back once it is ready) and
// that it serves on afterwards from the pages it faults back in.
func TestIdleRSS(t *testing.T) {
	srv := startServer(t, t.TempDir())
	pid := srv.cmd.Process.Pid
	var last procMemory
	deadline := time.Now().Add(15 * time.Second)
	for {
		last = readProcMemory(t, pid)
		if last.rss <= idleRSSLimit || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if last.rss > idleRSSLimit {
		t.Errorf("idle RSS %s, want at most %d MiB", last, idleRSSLimit>>20)
	}
	t.Logf("idle RSS %s", last)

	ctx := testContext(t, time.Minute)
	if _, err := srv.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list namespaces after the idle period: %v", err)
	}
	if _, err := srv.Client.RbacV1().ClusterRoles().Get(context.Background(), "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Fatalf("get cluster-admin after the idle period: %v", err)
	}
}

// procMemory is a process's resident set, in bytes, from /proc/PID/status.
type procMemory struct{ rss, anon, file int64 }

func (m procMemory) String() string {
	return fmt.Sprintf("%.1f MiB (anonymous %.1f, file-backed %.1f)",
		float64(m.rss)/(1<<20), float64(m.anon)/(1<<20), float64(m.file)/(1<<20))
}

func readProcMemory(t *testing.T, pid int) procMemory {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var m procMemory
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.Fields(val)[0], 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status: %q: %v", pid, line, err)
		}
		*dst = kb << 10
	}
	return m
}
