package textpages

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Drop drops the resident pages of the executable's private read-only
// mappings, but for the blocks mapped as huge pages, and returns the
// mappings, with the bytes they held and kept. It is meant to run once,
// when the server turns ready.
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
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, fmt.Errorf("textpages: %w", err)
	}
	defer pagemap.Close()
	for i, r := range ranges {
		var keep []uintptr
		if r.pmdMapped {
			if keep, err = hugeBlocks(pagemap, r.Start, r.End); err != nil {
				return nil, fmt.Errorf("textpages: reading /proc/self/pagemap: %w", err)
			}
		}
		ranges[i].Kept = int64(len(keep)) * hugePage
		for _, span := range without(r.Start, r.End, keep) {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, span[0], span[1]-span[0], syscall.MADV_DONTNEED); errno != 0 {
				return nil, fmt.Errorf("textpages: madvise %#x-%#x: %w", span[0], span[1], errno)
			}
		}
	}
	return ranges, nil
}

const (
	pageSize = 4096
	hugePage = 2 << 20
)

// hugeBlocks returns the start of each 2 MiB-aligned block of [start, end)
// that may be mapped by one huge page-table entry: every page present
// and, where pagemap shows frame numbers (to privileged processes), the
// frames one aligned run. Dropping such a block would be paid for while
// serving: the zapped range keeps its page table, so the pages fault back
// one by one (4 KiB TLB entries for the hottest code, the runtime's, which
// sits at the start of the text) instead of as one 2 MiB entry.
func hugeBlocks(pagemap io.ReaderAt, start, end uintptr) ([]uintptr, error) {
	var out []uintptr
	buf := make([]byte, hugePage/pageSize*8)
	for b := (start + hugePage - 1) &^ (hugePage - 1); b+hugePage <= end; b += hugePage {
		if _, err := pagemap.ReadAt(buf, int64(b/pageSize*8)); err != nil {
			return nil, err
		}
		if wholeHugePage(buf) {
			out = append(out, b)
		}
	}
	return out, nil
}

// wholeHugePage reports whether the pagemap entries of one 2 MiB block
// are all present and, when frame numbers are shown, one aligned run.
func wholeHugePage(entries []byte) bool {
	const present, pfnMask = 1 << 63, 1<<55 - 1
	first := binary.LittleEndian.Uint64(entries) & pfnMask
	if first%(hugePage/pageSize) != 0 {
		return false
	}
	for i := 0; i < len(entries)/8; i++ {
		e := binary.LittleEndian.Uint64(entries[i*8:])
		if e&present == 0 {
			return false
		}
		if pfn := e & pfnMask; first != 0 && pfn != first+uint64(i) {
			return false
		}
	}
	return true
}

// without returns [start, end) minus the 2 MiB blocks starting at keep
// (sorted, inside the range), as spans of [from, to).
func without(start, end uintptr, keep []uintptr) [][2]uintptr {
	var out [][2]uintptr
	from := start
	for _, k := range keep {
		if k > from {
			out = append(out, [2]uintptr{from, k})
		}
		from = k + hugePage
	}
	if from < end {
		out = append(out, [2]uintptr{from, end})
	}
	return out
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
		case "FilePmdMapped:":
			cur.pmdMapped = fields[1] != "0"
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
