package textpages

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

const smapsFixture = `00400000-01d03000 r-xp 00000000 fe:00 10002525                           /usr/bin/crdserver
Size:              25612 kB
Rss:               22508 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
01d03000-038b9000 r--p 01903000 fe:00 10002525                           /usr/bin/crdserver
Size:              28376 kB
Rss:               22804 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
038b9000-03a3b000 rw-p 034b9000 fe:00 10002525                           /usr/bin/crdserver
Rss:                 776 kB
Anonymous:           120 kB
03a3b000-03a3c000 r--p 0363b000 fe:00 10002525                           /usr/bin/crdserver
Rss:                   4 kB
Anonymous:             4 kB
7f8b2718c000-7f8b272e2000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 912 kB
Anonymous:             0 kB
7f8888000000-7f8ac8000000 r--s 00000000 fe:00 10002525                    /usr/bin/crdserver
Rss:                 100 kB
Anonymous:             0 kB
7f8888000000-7f8ac8000000 r-xp 00000000 fe:01 10002525                    /other/fs/same-inode
Rss:                 100 kB
Anonymous:             0 kB
2ce9ee400000-2ce9ef800000 rw-p 00000000 00:00 0 
Rss:               14068 kB
Anonymous:         14068 kB
`

// Only the executable's private mappings that are not writable and hold
// nothing copied-on-write are dropped: its data, a page a relocation
// wrote, another file, a shared mapping and the heap keep their pages.
func TestReadOnlyRanges(t *testing.T) {
	got, err := readOnlyRanges(strings.NewReader(smapsFixture), 0xfe, 0, 10002525)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{
		{Start: 0x00400000, End: 0x01d03000, Perms: "r-xp", Rss: 22508 << 10},
		{Start: 0x01d03000, End: 0x038b9000, Perms: "r--p", Rss: 22804 << 10},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ranges\n got %v\nwant %v", got, want)
	}
}

func TestDevNumbers(t *testing.T) {
	for _, c := range []struct {
		dev          uint64
		major, minor uint32
	}{
		{0xfe00, 0xfe, 0},
		{0x0803, 8, 3},
		{0x1000_0010_0005, 0x1000, 0x105}, // the high bits of both
	} {
		if major(c.dev) != c.major || minor(c.dev) != c.minor {
			t.Errorf("dev %#x: %d:%d, want %d:%d", c.dev, major(c.dev), minor(c.dev), c.major, c.minor)
		}
	}
}

// The test binary's own code pages are dropped, and the code keeps
// running (it re-faults from the page cache).
func TestDropReleasesResidentCode(t *testing.T) {
	before := rssFile(t)
	ranges, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	var code bool
	for _, r := range ranges {
		if r.Perms == "r-xp" && r.Rss > 0 {
			code = true
		}
	}
	if !code {
		t.Fatalf("no resident code mapping dropped: %v", ranges)
	}
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before the drop, %d kB after", before, after)
	}
	// Code and read-only data (sha256's constants) come back from the
	// file unchanged.
	if s := fmt.Sprintf("%x", sha256.Sum256([]byte("abc"))); s != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("sha256 after the drop: %s", s)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
