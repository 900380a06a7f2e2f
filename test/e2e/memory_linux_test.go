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
		t.Errorf("idle RSS %s, want at most %d MiB; the binary's mappings:\n%s", last, idleRSSLimit>>20, binaryMappings(t, pid))
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

// binaryMappings returns, for each mapping of the process's executable in
// /proc/PID/smaps, its header and its resident and huge-page-mapped sizes:
// what tells start-up pages never dropped from pages faulted back.
func binaryMappings(t *testing.T, pid int) string {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ours := false
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header line
			ours = fields[len(fields)-1] == exe
			if ours {
				fmt.Fprintf(&out, "%s %s", fields[0], fields[1])
			}
			continue
		}
		if ours && (fields[0] == "Rss:" || fields[0] == "FilePmdMapped:") {
			fmt.Fprintf(&out, " %s %s kB", fields[0], fields[1])
			if fields[0] == "FilePmdMapped:" {
				out.WriteString("\n")
			}
		}
	}
	return out.String()
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
