package handler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// The frame written by hand is the one the generated WatchEvent marshals,
// for every event type, an object of any size, and none.
func TestAppendWatchEventFrame(t *testing.T) {
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", ""} {
		for _, obj := range [][]byte{nil, {}, []byte("k8s\x00abc"), bytes.Repeat([]byte("x"), 300), bytes.Repeat([]byte("y"), 70000)} {
			we := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
			b, err := we.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want := append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
			var buf bytes.Buffer
			buf.WriteString("before")
			appendWatchEventFrame(&buf, typ, obj)
			if got := buf.Bytes()[len("before"):]; !bytes.Equal(got, want) {
				t.Errorf("%s with %d bytes (nil: %v): frame\n%q\nwant\n%q", typ, len(obj), obj == nil, trim(got), trim(want))
			}
		}
	}
}

func trim(b []byte) []byte { return b[:min(len(b), 40)] }

// The recent objects are kept up to their bounds, the oldest going first,
// and one too large is not kept at all.
func TestRecentObjects(t *testing.T) {
	var r recentObjects
	items := make([]*watchcache.Item, recentEntries+10)
	for i := range items {
		items[i] = &watchcache.Item{Key: fmt.Sprint(i)}
		r.put(recentKey{item: items[i]}, []byte(items[i].Key))
	}
	if _, ok := r.get(recentKey{item: items[9]}); ok {
		t.Error("the 10th oldest of one too many is still kept")
	}
	for _, i := range []int{10, len(items) - 1} {
		if b, ok := r.get(recentKey{item: items[i]}); !ok || string(b) != items[i].Key {
			t.Errorf("item %d: %q, %v", i, b, ok)
		}
	}
	if _, ok := r.get(recentKey{item: items[10], as: "PartialObjectMetadata"}); ok {
		t.Error("kept for another form")
	}
	if len(r.m) != recentEntries || len(r.order)-r.head != recentEntries {
		t.Errorf("%d kept, %d in order, want %d", len(r.m), len(r.order)-r.head, recentEntries)
	}

	var big recentObjects
	huge := &watchcache.Item{Key: "huge"}
	big.put(recentKey{item: huge}, make([]byte, recentLargest+1))
	if _, ok := big.get(recentKey{item: huge}); ok {
		t.Error("an object over recentLargest was kept")
	}
	size := recentLargest
	n := recentBytes/size + 3
	for i := range n {
		big.put(recentKey{item: &watchcache.Item{Key: fmt.Sprint(i)}}, []byte(strings.Repeat("z", size)))
	}
	if big.size > recentBytes || len(big.m) != recentBytes/size {
		t.Errorf("%d bytes in %d objects kept, want at most %d bytes, %d objects", big.size, len(big.m), recentBytes, recentBytes/size)
	}
}
