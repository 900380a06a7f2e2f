// Package textpages gives back, once start-up is over, the resident pages
// of the executable's read-only mappings (its code, read-only data and
// pclntab).
//
// Package initialisation and start-up run code spread over the whole
// binary: the init functions of some 900 linked packages, the first
// decoding of every schema, the bootstrap RBAC policy. The kernel maps file
// pages around each fault (64 KiB at a time), so by the time the server is
// ready most of the 50 MB of code and read-only data is mapped and counted
// in RSS, although an idle or serving server runs a fraction of it.
//
// Dropping them is sound because these mappings are private, read-only and
// never written: every resident page is the file's own page in the page
// cache, shared and clean, so MADV_DONTNEED only removes the process's
// page-table entries. A page used again re-faults from the page cache (a
// minor fault, no disk read unless memory pressure evicted it meanwhile),
// with the same contents. A mapping holding anonymous pages (a
// copy-on-write copy, as relocations or a debugger's breakpoints make) is
// left alone, since dropping would revert those pages to the file's.
//
// Blocks mapped as 2 MiB huge pages are dropped too. How much of the
// binary the page cache holds in 2 MiB folios depends on the machine's
// history, not on us (16 MiB of them kept once held an idle server at
// 53 MB). Zapping such a block clears its huge page-table entry, so the
// first touch of a block still in use maps it whole again: serving code
// keeps its huge pages and the blocks only start-up used stay out.
package textpages

// Range is one mapping of the executable whose pages are dropped.
type Range struct {
	Start, End uintptr
	Perms      string // as /proc/self/maps shows them, e.g. "r-xp"
	Rss        int64  // resident bytes before the drop
}
