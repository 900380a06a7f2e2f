package webhook

import (
	"bytes"
	"io"
	"testing"
)

// TestPartsReader reads parts through buffers of every size from one to
// past the whole, twice from the same parts, as a request sent again
// would.
func TestPartsReader(t *testing.T) {
	parts := [][]byte{[]byte("ab"), nil, []byte("cde"), []byte(""), []byte("f")}
	for size := 1; size <= 8; size++ {
		for range 2 {
			r := &partsReader{parts: parts}
			var got []byte
			buf := make([]byte, size)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil || n == 0 {
					t.Fatalf("size %d: Read = %d, %v", size, n, err)
				}
			}
			if string(got) != "abcdef" {
				t.Errorf("size %d: read %q", size, got)
			}
		}
	}
	if !bytes.Equal(bytes.Join(parts, nil), []byte("abcdef")) || len(parts[0]) != 2 {
		t.Error("reading changed the parts")
	}
	if n, err := (&partsReader{parts: parts}).Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
}
