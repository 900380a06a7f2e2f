package textpages

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Drop drops the resident pages of the executable's private read-only
// mappings and returns them, with the bytes they held. It is meant to run
// once, when the server turns ready.
func Drop() ([]Range, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil, fmt.Errorf("textpages: stat executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("textpages: %w", err)
	}
	ranges, err := readOnlyRanges(f, major(st.Dev), minor(st.Dev), st.Ino)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("textpages: reading /proc/self/smaps: %w", err)
	}
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.Start, r.End-r.Start, syscall.MADV_DONTNEED); errno != 0 {
			return nil, fmt.Errorf("textpages: madvise %#x-%#x: %w", r.Start, r.End, errno)
		}
	}
	return ranges, nil
}

// readOnlyRanges reads smaps and returns the mappings of the file (dev
// major:minor, inode ino) that are private, not writable and hold no
// anonymous (copied-on-write) pages.
func readOnlyRanges(smaps io.Reader, devMajor, devMinor uint32, ino uint64) ([]Range, error) {
	var (
		out  []Range
		cur  *Range // the current mapping when it is one of the file's read-only ones
		anon int64
	)
	flush := func() {
		if cur != nil && anon == 0 {
			out = append(out, *cur)
		}
		cur, anon = nil, 0
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header line
			flush()
			if r, ok := headerRange(fields, devMajor, devMinor, ino); ok {
				cur = &r
			}
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "Rss:":
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			cur.Rss = kb << 10
		case "Anonymous:":
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			anon = kb
		}
	}
	flush()
	return out, sc.Err()
}

// headerRange parses a mapping's header ("start-end perms offset maj:min
// inode path") and reports whether it is a private, non-writable mapping
// of the file.
func headerRange(fields []string, devMajor, devMinor uint32, ino uint64) (Range, bool) {
	if len(fields) < 5 {
		return Range{}, false
	}
	perms := fields[1]
	if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return Range{}, false
	}
	if n, err := strconv.ParseUint(fields[4], 10, 64); err != nil || n != ino {
		return Range{}, false
	}
	maj, min, ok := strings.Cut(fields[3], ":")
	if !ok {
		return Range{}, false
	}
	if v, err := strconv.ParseUint(maj, 16, 32); err != nil || uint32(v) != devMajor {
		return Range{}, false
	}
	if v, err := strconv.ParseUint(min, 16, 32); err != nil || uint32(v) != devMinor {
		return Range{}, false
	}
	start, end, ok := strings.Cut(fields[0], "-")
	if !ok {
		return Range{}, false
	}
	s, err1 := strconv.ParseUint(start, 16, 64)
	e, err2 := strconv.ParseUint(end, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return Range{}, false
	}
	return Range{Start: uintptr(s), End: uintptr(e), Perms: perms}, true
}

// major and minor split a Linux dev_t as glibc's gnu_dev_major and
// gnu_dev_minor do.
func major(dev uint64) uint32 {
	return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
}

func minor(dev uint64) uint32 {
	return uint32(dev&0xff) | uint32((dev>>12)&^0xff)
}
